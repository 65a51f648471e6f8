// The wide graph the schedule tests run (pretend GPU and real GPU): six
// chains of three element-wise nodes on x (SCALAR_MUL by c_b = 0.5 + 0.1 b,
// EWEXP, ADD with -x), a tree of ADDs joining them into
// w = Σ_b (exp(c_b x) - x), and y = w · W by GEMM. Every intermediate has a
// tensor of its own, so a node that runs before its inputs are written reads
// another run's numbers. `make(dims, device)` makes a GPU tensor the caller
// owns; with `gemm_device` other than x's device, w moves there by a
// transfer node and the GEMM runs there (W and y must be on that device).
#pragma once

#include <cstring>
#include <vector>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace nnc_test_wide {

constexpr int kBranches = 6;

inline ccv_nnc_cmd_t cmd(uint32_t id, float a0 = 1, float a1 = 1) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.blas.a[0] = a0;
  p.blas.a[1] = a1;
  p.blas.a[2] = 1;
  return ccv_nnc_cmd(id, nullptr, p, 0);
}

inline ccv_nnc_graph_exec_t node(ccv_nnc_graph_t* g, ccv_nnc_cmd_t c, std::vector<ccv_nnc_tensor_t*> in,
                                 std::vector<ccv_nnc_tensor_t*> out) {
  return ccv_nnc_graph_exec_new(g, c, ccv_nnc_no_hint, in.data(), static_cast<int>(in.size()), out.data(),
                                static_cast<int>(out.size()));
}

// Adds the nodes to g; returns the GEMM node.
template <class Make>
ccv_nnc_graph_exec_t build(ccv_nnc_graph_t* g, ccv_nnc_tensor_t* x, ccv_nnc_tensor_t* W, ccv_nnc_tensor_t* y, int gemm_device,
                           Make make) {
  const int rows = x->info.dim[0], cols = x->info.dim[1];
  const int device = CCV_TENSOR_GET_DEVICE_ID(x->info.type);
  std::vector<ccv_nnc_graph_exec_t> ends;
  std::vector<ccv_nnc_tensor_t*> sums;
  for (int b = 0; b < kBranches; b++) {
    ccv_nnc_tensor_t* s = make(std::vector<int>{rows, cols}, device);
    ccv_nnc_tensor_t* e = make(std::vector<int>{rows, cols}, device);
    ccv_nnc_tensor_t* d = make(std::vector<int>{rows, cols}, device);
    const auto n1 = node(g, cmd(CCV_NNC_SCALAR_MUL_FORWARD, 0.5f + 0.1f * b), {x}, {s});
    const auto n2 = node(g, cmd(CCV_NNC_EWEXP_FORWARD), {s}, {e});
    const auto n3 = node(g, cmd(CCV_NNC_ADD_FORWARD, 1, -1), {e, x}, {d});
    ccv_nnc_graph_exec_concat(g, n1, n2);
    ccv_nnc_graph_exec_concat(g, n2, n3);
    ends.push_back(n3);
    sums.push_back(d);
  }
  while (ends.size() > 1) {  // pairwise until one is left
    std::vector<ccv_nnc_graph_exec_t> next_ends;
    std::vector<ccv_nnc_tensor_t*> next_sums;
    for (size_t i = 0; i + 1 < ends.size(); i += 2) {
      ccv_nnc_tensor_t* u = make(std::vector<int>{rows, cols}, device);
      const auto n = node(g, cmd(CCV_NNC_ADD_FORWARD), {sums[i], sums[i + 1]}, {u});
      ccv_nnc_graph_exec_concat(g, ends[i], n);
      ccv_nnc_graph_exec_concat(g, ends[i + 1], n);
      next_ends.push_back(n);
      next_sums.push_back(u);
    }
    if (ends.size() % 2) {
      next_ends.push_back(ends.back());
      next_sums.push_back(sums.back());
    }
    ends.swap(next_ends);
    sums.swap(next_sums);
  }
  ccv_nnc_tensor_t* w = sums[0];
  ccv_nnc_graph_exec_t last = ends[0];
  if (gemm_device != device) {
    ccv_nnc_tensor_t* moved = make(std::vector<int>{rows, cols}, gemm_device);
    const auto n = node(g, cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {w}, {moved});
    ccv_nnc_graph_exec_concat(g, last, n);
    last = n;
    w = moved;
  }
  const auto gemm = node(g, cmd(CCV_NNC_GEMM_FORWARD), {w, W}, {y});
  ccv_nnc_graph_exec_concat(g, last, gemm);
  return gemm;
}

}  // namespace nnc_test_wide
