// The graph the graph fuzzer's seeds come from: a small convolutional network
// with hints, a reshape alias, a freed symbol, two bound tensors, a while
// loop and a case..of, so that every part of the record format appears in the seed.
#pragma once

#include <cstring>
#include <vector>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace nnc_fuzz {

inline ccv_nnc_tensor_param_t f32(std::vector<int> dims) {
  ccv_nnc_tensor_param_t p{};
  p.type = CCV_TENSOR_CPU_MEMORY;
  p.format = CCV_TENSOR_FORMAT_NHWC;
  p.datatype = CCV_32F;
  for (size_t i = 0; i < dims.size(); i++) p.dim[i] = dims[i];
  return p;
}

inline ccv_nnc_cmd_t command(uint32_t id) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  return ccv_nnc_cmd(id, nullptr, p, 0);
}

// Writes the graph and its binds to `path`; returns false on failure.
inline bool write_seed_graph(const char* path) {
  ccv_nnc_symbolic_graph_t* sg = ccv_nnc_symbolic_graph_new();
  const ccv_nnc_tensor_symbol_t x = ccv_nnc_tensor_symbol_new(sg, f32({2, 6, 6, 1}), "x");
  const ccv_nnc_tensor_symbol_t w = ccv_nnc_tensor_symbol_new(sg, f32({2, 3, 3, 1}), "w");
  const ccv_nnc_tensor_symbol_t b = ccv_nnc_tensor_symbol_new(sg, f32({2}), "b");
  const ccv_nnc_tensor_symbol_t freed = ccv_nnc_tensor_symbol_new(sg, f32({1}), "freed");
  const ccv_nnc_tensor_symbol_t c = ccv_nnc_tensor_symbol_new(sg, f32({2, 6, 6, 2}), "c");
  const ccv_nnc_tensor_symbol_t r = ccv_nnc_tensor_symbol_new(sg, f32({2, 6, 6, 2}), "r");
  const ccv_nnc_tensor_symbol_t flat =
      ccv_nnc_tensor_symbol_alias_new(sg, r, ccv_nnc_no_ofs, nullptr, f32({2, 72}), "flat");
  const ccv_nnc_tensor_symbol_t y = ccv_nnc_tensor_symbol_new(sg, ccv_nnc_tensor_auto, "y");
  ccv_nnc_tensor_symbol_free(sg, freed);
  ccv_nnc_cmd_t conv = command(CCV_NNC_CONVOLUTION_FORWARD);
  conv.info.size.dim[0] = conv.info.size.dim[1] = 3;
  conv.info.size.dim[2] = 1;
  conv.info.convolution.count = 2;
  conv.info.convolution.groups = 1;
  const ccv_nnc_tensor_symbol_t ci[] = {x, w, b};
  const ccv_nnc_graph_exec_symbol_t e = ccv_nnc_graph_exec_symbol_new(sg, conv, ci, 3, &c, 1, "conv");
  ccv_nnc_hint_t hint;
  std::memset(&hint, 0, sizeof(hint));
  hint.stride.dim[0] = hint.stride.dim[1] = 1;
  hint.border.begin[0] = hint.border.begin[1] = hint.border.end[0] = hint.border.end[1] = 1;
  ccv_nnc_graph_exec_symbol_set_hint(sg, e, hint);
  ccv_nnc_graph_exec_symbol_new(sg, command(CCV_NNC_RELU_FORWARD), &c, 1, &r, 1, "relu");
  ccv_nnc_graph_exec_symbol_new(sg, command(CCV_NNC_SOFTMAX_FORWARD), &flat, 1, &y, 1, "softmax");
  // A while loop: acc <- acc + b, acc hooked up from acc0 and out to acc_out, b through a stand-in.
  const ccv_nnc_tensor_symbol_t acc0 = ccv_nnc_tensor_symbol_new(sg, f32({2}), "acc0");
  const ccv_nnc_tensor_symbol_t acc_out = ccv_nnc_tensor_symbol_new(sg, f32({2}), "acc_out");
  ccv_nnc_symbolic_graph_t* body = ccv_nnc_symbolic_graph_new();
  ccv_nnc_symbolic_graph_while(sg, CCV_NNC_GRAPH_FORWARD, body, "loop");
  const ccv_nnc_tensor_symbol_t acc = ccv_nnc_tensor_symbol_new(body, f32({2}), "acc");
  ccv_nnc_tensor_symbol_hookup(sg, body, acc0, acc);
  const ccv_nnc_tensor_symbol_t next = ccv_nnc_tensor_symbol_new(body, f32({2}), "next");
  const ccv_nnc_tensor_symbol_t si[] = {acc, b};
  ccv_nnc_graph_exec_symbol_new(body, command(CCV_NNC_EWSUM_FORWARD), si, 2, &next, 1, "add");
  ccv_nnc_tensor_symbol_hookup(sg, body, acc_out, next);
  ccv_nnc_graph_exec_symbol_autogen(body, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  const ccv_nnc_tensor_symbol_map_t carry = {next, acc};
  ccv_nnc_symbolic_graph_set_carry_overs(body, &carry, 1);
  // A case..of: picked = case acc_out of relu(acc_out) | acc_out (the bypass).
  const ccv_nnc_tensor_symbol_t picked = ccv_nnc_tensor_symbol_new(sg, f32({2}), "picked");
  const ccv_nnc_tensor_symbol_map_t bypass = {acc_out, picked};
  const ccv_nnc_graph_exec_symbol_t cs =
      ccv_nnc_symbolic_graph_case_of_new(sg, CCV_NNC_GRAPH_FORWARD, &acc_out, 1, &bypass, 1, "case");
  ccv_nnc_symbolic_graph_t* branch = ccv_nnc_symbolic_graph_new();
  const ccv_nnc_tensor_symbol_t rb = ccv_nnc_tensor_symbol_new(branch, f32({2}), "relu_out");
  const ccv_nnc_tensor_symbol_map_t out = {rb, picked};
  ccv_nnc_symbolic_graph_set_case_of(sg, cs, branch, 0, &out, 1);
  ccv_nnc_graph_exec_symbol_new(branch, command(CCV_NNC_RELU_FORWARD), &acc_out, 1, &rb, 1, "relu");
  ccv_nnc_graph_exec_symbol_autogen(branch, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  ccv_nnc_graph_exec_symbol_autogen(sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  ccv_nnc_tensor_t* wt = ccv_nnc_tensor_new(nullptr, f32({2, 3, 3, 1}), 0);
  ccv_nnc_tensor_t* bt = ccv_nnc_tensor_new(nullptr, f32({2}), 0);
  for (int i = 0; i < 18; i++) wt->data.f32[i] = 0.1f * static_cast<float>(i);
  bt->data.f32[0] = bt->data.f32[1] = 0.5f;
  const ccv_nnc_tensor_bind_t binds[] = {{w, wt}, {b, bt}};
  ccv_nnc_symbolic_graph_write(sg, binds, 2, path);
  const bool ok = ccv_nnc_error_message()[0] == '\0';
  ccv_nnc_tensor_free(wt);
  ccv_nnc_tensor_free(bt);
  ccv_nnc_symbolic_graph_free(sg);
  return ok;
}

}  // namespace nnc_fuzz
