// Helpers for the autodiff suites: build a fp64 symbolic graph, differentiate
// it with ccv_nnc_symbolic_graph_backward, compile and run it, and compare
// every gradient element with a central finite difference of the same
// compiled graph's forward values.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace adtest {

inline ccv_nnc_tensor_param_t param(std::vector<int> dims, int datatype = CCV_64F, int format = CCV_TENSOR_FORMAT_NHWC) {
  ccv_nnc_tensor_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.type = CCV_TENSOR_CPU_MEMORY;
  p.format = format;
  p.datatype = datatype;
  for (size_t i = 0; i < dims.size(); i++) p.dim[i] = dims[i];
  return p;
}

inline ccv_nnc_cmd_t cmd(uint32_t id) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  return ccv_nnc_cmd(id, nullptr, p, 0);
}

inline ccv_nnc_tensor_symbol_t sym(ccv_nnc_symbolic_graph_t* g, std::vector<int> dims, const char* name = nullptr,
                                   int datatype = CCV_64F) {
  return ccv_nnc_tensor_symbol_new(g, param(dims, datatype), name);
}

// One exec: outputs made with no shape take the inferred one.
inline ccv_nnc_graph_exec_symbol_t exec(ccv_nnc_symbolic_graph_t* g, const ccv_nnc_cmd_t& c, std::vector<ccv_nnc_tensor_symbol_t> in,
                                        std::vector<ccv_nnc_tensor_symbol_t> out) {
  const ccv_nnc_graph_exec_symbol_t e = ccv_nnc_graph_exec_symbol_new(g, c, in.data(), static_cast<int>(in.size()), out.data(),
                                                                      static_cast<int>(out.size()), nullptr);
  EXPECT_GE(e.d, 0) << ccv_nnc_error_message();
  return e;
}

// y = op(inputs), y a new symbol of inferred shape.
inline ccv_nnc_tensor_symbol_t apply(ccv_nnc_symbolic_graph_t* g, const ccv_nnc_cmd_t& c, std::vector<ccv_nnc_tensor_symbol_t> in,
                                     int datatype = CCV_64F) {
  ccv_nnc_tensor_symbol_t y = ccv_nnc_tensor_symbol_new(g, param({}, datatype), nullptr);
  exec(g, c, in, {y});
  return y;
}

inline size_t count(const ccv_nnc_tensor_param_t& p) {
  size_t n = 1;
  for (int i = 0; i < CCV_NNC_MAX_DIM_ALLOC && p.dim[i]; i++) n *= static_cast<size_t>(p.dim[i]);
  return n;
}

// An input of the function under test.
struct Input {
  Input(std::vector<int> d) : dims(std::move(d)) {}  // NOLINT: implicit, for {{dims}} lists
  std::vector<int> dims;
  bool wrt = true;
  double lo = -1, hi = 1;
  // Keep values at least this far from 0 (kinks of RELU, |x|, ...).
  double away = 0;
  // Fixed values (labels): used instead of random ones when not empty.
  std::vector<double> values;
};

using Build = std::function<ccv_nnc_tensor_symbol_t(ccv_nnc_symbolic_graph_t*, const std::vector<ccv_nnc_tensor_symbol_t>&)>;

// A compiled graph with its symbols, freed on destruction.
struct Program {
  ccv_nnc_symbolic_graph_t* sg = ccv_nnc_symbolic_graph_new();
  ccv_nnc_graph_t* g = nullptr;
  ccv_nnc_tensor_arena_t* ta = nullptr;
  ccv_nnc_graph_exec_arena_t* ea = nullptr;
  std::vector<ccv_nnc_tensor_t*> owned;
  Program() = default;
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  ~Program() {
    ccv_nnc_graph_free(g);
    ccv_nnc_tensor_arena_free(ta);
    ccv_nnc_graph_exec_arena_free(ea);
    ccv_nnc_symbolic_graph_free(sg);
    for (ccv_nnc_tensor_t* t : owned) ccv_nnc_tensor_free(t);
  }
  ccv_nnc_tensor_t* tensor(const ccv_nnc_tensor_param_t& p) {
    owned.push_back(ccv_nnc_tensor_new(nullptr, p, 0));
    return owned.back();
  }
  bool compile(const std::vector<ccv_nnc_tensor_bind_t>& binds, const std::vector<ccv_nnc_tensor_symbol_t>& outputs) {
    ccv_nnc_symbolic_graph_compile(sg, ccv_nnc_default_compile_params, binds.data(), static_cast<int>(binds.size()),
                                   outputs.data(), static_cast<int>(outputs.size()), ccv_nnc_symbolic_graph_sources(sg),
                                   ccv_nnc_symbolic_graph_source_size(sg), ccv_nnc_symbolic_graph_destinations(sg),
                                   ccv_nnc_symbolic_graph_destination_size(sg), &g, &ta, &ea);
    return g && ta && ea;
  }
  int run() { return ccv_nnc_graph_run(g, 0, nullptr, 0, nullptr, 0, nullptr, nullptr); }
  ccv_nnc_tensor_t* of(ccv_nnc_tensor_symbol_t s) const { return ccv_nnc_tensor_from_symbol(ta, s); }
};

// Element i of a (possibly strided) fp64 tensor or view.
inline double& at(ccv_nnc_tensor_t* t, size_t i) {
  if (!CCV_IS_TENSOR_VIEW(t)) return t->data.f64[i];
  const ccv_nnc_tensor_view_t* v = reinterpret_cast<const ccv_nnc_tensor_view_t*>(t);
  int nd = 0;
  while (nd < CCV_NNC_MAX_DIM_ALLOC && t->info.dim[nd]) nd++;
  size_t off = 0;
  for (int k = nd - 1; k >= 0; k--) {
    off += (i % static_cast<size_t>(t->info.dim[k])) * static_cast<size_t>(v->stride[k]);
    i /= static_cast<size_t>(t->info.dim[k]);
  }
  return t->data.f64[off];
}

// Differentiate f = build(inputs) with respect to the wrt inputs, and check
// every gradient element against (L(x + h) - L(x - h)) / 2h, where L is f for
// a scalar f and <R, f> for a random R (the seed the test writes) otherwise.
// With `simplify`, every ccv_nnc_symbolic_graph_simplify pass runs on the
// training graph (keeping f and the gradients) before it is compiled.
inline void check_gradients(const std::vector<Input>& inputs, const Build& build, unsigned seed, double tol = 1e-6,
                            double h = 1e-5, const char* what = "", bool simplify = false) {
  SCOPED_TRACE(std::string("gradient check ") + what + " seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  Program p;
  std::vector<ccv_nnc_tensor_symbol_t> xs, wrt;
  for (size_t i = 0; i < inputs.size(); i++) xs.push_back(sym(p.sg, inputs[i].dims, ("x" + std::to_string(i)).c_str()));
  const ccv_nnc_tensor_symbol_t f = build(p.sg, xs);
  ASSERT_GE(f.d, 0) << ccv_nnc_error_message();
  ccv_nnc_graph_exec_symbol_autogen(p.sg, nullptr, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
  for (size_t i = 0; i < inputs.size(); i++)
    if (inputs[i].wrt) wrt.push_back(xs[i]);
  ccv_nnc_symbolic_graph_backward(p.sg, &f, 1, wrt.data(), static_cast<int>(wrt.size()), ccv_nnc_symbolic_graph_sources(p.sg),
                                  ccv_nnc_symbolic_graph_source_size(p.sg), ccv_nnc_symbolic_graph_destinations(p.sg),
                                  ccv_nnc_symbolic_graph_destination_size(p.sg));
  std::vector<ccv_nnc_tensor_symbol_t> grads;
  for (const auto& w : wrt) {
    grads.push_back(ccv_nnc_tensor_symbol_for_backward(p.sg, w));
    ASSERT_GE(grads.back().d, 0) << ccv_nnc_error_message();
  }
  const ccv_nnc_tensor_symbol_t df = ccv_nnc_tensor_symbol_for_backward(p.sg, f);
  ASSERT_GE(df.d, 0) << ccv_nnc_error_message();
  const ccv_nnc_tensor_param_t fp = ccv_nnc_tensor_symbol_params(p.sg, f);
  const size_t fn = count(fp);
  std::vector<ccv_nnc_tensor_bind_t> binds;
  std::vector<ccv_nnc_tensor_t*> xt;
  for (size_t i = 0; i < inputs.size(); i++) {
    ccv_nnc_tensor_t* t = p.tensor(param(inputs[i].dims));
    const size_t n = count(t->info);
    std::uniform_real_distribution<double> u(inputs[i].lo, inputs[i].hi);
    for (size_t k = 0; k < n; k++) {
      if (!inputs[i].values.empty()) {
        t->data.f64[k] = inputs[i].values[k % inputs[i].values.size()];
        continue;
      }
      double v = u(rng);
      if (inputs[i].away > 0 && std::fabs(v) < inputs[i].away) v = v < 0 ? v - inputs[i].away : v + inputs[i].away;
      t->data.f64[k] = v;
    }
    xt.push_back(t);
    binds.push_back({xs[i], t});
  }
  std::vector<double> r(fn, 1);
  if (fn > 1) {
    ccv_nnc_tensor_t* rt = p.tensor(fp);
    std::uniform_real_distribution<double> u(-1, 1);
    for (size_t k = 0; k < fn; k++) rt->data.f64[k] = r[k] = u(rng);
    binds.push_back({df, rt});
  }
  std::vector<ccv_nnc_tensor_symbol_t> outputs{f};
  outputs.insert(outputs.end(), grads.begin(), grads.end());
  if (simplify) {
    const int passes[] = {CCV_NNC_SIMPLIFY_COMMON_SUBEXPRESSION_ELIMINATION, CCV_NNC_SIMPLIFY_USELESS_WORK,
                          CCV_NNC_SIMPLIFY_CONSTANT_FOLDING,                 CCV_NNC_SIMPLIFY_DATA_TRANSFER_OPT,
                          CCV_NNC_SIMPLIFY_OPS_FUSION,                       CCV_NNC_SIMPLIFY_GRAPH_PRUNING};
    std::vector<ccv_nnc_tensor_symbol_t> bound;
    for (const auto& b : binds) bound.push_back(b.symbol);
    ccv_nnc_symbolic_graph_simplify(p.sg, passes, 6, bound.data(), static_cast<int>(bound.size()), outputs.data(),
                                    static_cast<int>(outputs.size()), ccv_nnc_symbolic_graph_sources(p.sg),
                                    ccv_nnc_symbolic_graph_source_size(p.sg), ccv_nnc_symbolic_graph_destinations(p.sg),
                                    ccv_nnc_symbolic_graph_destination_size(p.sg));
    EXPECT_STREQ(ccv_nnc_error_message(), "") << "simplify";
  }
  ASSERT_TRUE(p.compile(binds, outputs)) << ccv_nnc_error_message();
  ASSERT_EQ(p.run(), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
  std::vector<std::vector<double>> analytic;
  for (const auto& gs : grads) {
    ccv_nnc_tensor_t* t = p.of(gs);
    ASSERT_NE(t, nullptr);
    std::vector<double> v(count(t->info));
    for (size_t k = 0; k < v.size(); k++) v[k] = at(t, k);
    analytic.push_back(v);
  }
  auto loss = [&]() {
    EXPECT_EQ(p.run(), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
    ccv_nnc_tensor_t* t = p.of(f);
    double l = 0;
    for (size_t k = 0; k < fn; k++) l += r[k] * at(t, k);
    return l;
  };
  size_t w = 0;
  for (size_t i = 0; i < inputs.size(); i++) {
    if (!inputs[i].wrt) continue;
    ccv_nnc_tensor_t* t = xt[i];
    const size_t n = count(t->info);
    ASSERT_EQ(analytic[w].size(), n);
    for (size_t k = 0; k < n; k++) {
      const double x0 = t->data.f64[k];
      t->data.f64[k] = x0 + h;
      const double lp = loss();
      t->data.f64[k] = x0 - h;
      const double lm = loss();
      t->data.f64[k] = x0;
      const double numeric = (lp - lm) / (2 * h);
      EXPECT_NEAR(analytic[w][k], numeric, tol * std::max(1.0, std::fabs(numeric)))
          << "input " << i << " element " << k;
    }
    w++;
  }
}

// For loops: the while expression "counter < *data" (an int64_t limit).
inline int count_below(ccv_nnc_tensor_t* const* inputs, int, const void* data) {
  return inputs[0]->data.i64[0] < *static_cast<const int64_t*>(data);
}

// GEMM of a with W transposed: a W^T.
inline ccv_nnc_cmd_t gemm_wt() {
  ccv_nnc_cmd_t c = cmd(CCV_NNC_GEMM_FORWARD);
  c.info.blas.a[0] = 1;
  c.info.blas.a[1] = 1;
  c.info.blas.transpose_b[0] = 0;
  c.info.blas.transpose_b[1] = 1;
  return c;
}

// REDUCE_SUM over the first `axes` axes.
inline ccv_nnc_cmd_t reduce_all(int axes) {
  ccv_nnc_cmd_t c = cmd(CCV_NNC_REDUCE_SUM_FORWARD);
  for (int i = 0; i < axes; i++) c.info.reduce.axis[i] = i;
  c.info.reduce.count = axes;
  return c;
}

}  // namespace adtest
