// GPU_CUBLAS GEMM's calls, worked out on the host (see gemm_plan.hpp).
#include "cmd/common/gemm_plan.hpp"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <set>

#include "cmd/blas/gemm.hpp"
#include "core/tensor.hpp"

namespace nnc::gemm_plan {

namespace {

constexpr int kA = 0, kB = 1, kC = 2, kBias = 3;

// A run of batch dimensions that steps evenly in every operand.
struct Group {
  int64_t count = 1;
  int64_t s[4] = {0, 0, 0, 0};  // A, B, C, bias
};

std::vector<Group> groups_of(const gemm::Product& p, const int64_t* bias_bstride) {
  std::vector<Group> out;
  for (int d = 0; d < p.batch.nd; d++) {
    if (p.batch.dim[d] == 1) continue;
    Group x;
    x.count = p.batch.dim[d];
    x.s[kA] = p.A.bstride[d], x.s[kB] = p.B.bstride[d], x.s[kC] = p.C.bstride[d];
    x.s[kBias] = bias_bstride ? bias_bstride[d] : 0;
    if (!out.empty()) {
      Group& outer = out.back();
      bool even = true;
      for (int k = 0; k < 4; k++) even = even && outer.s[k] == x.s[k] * x.count;
      if (even) {
        outer.count *= x.count;
        for (int k = 0; k < 4; k++) outer.s[k] = x.s[k];
        continue;
      }
    }
    out.push_back(x);
  }
  return out;
}

// A row-major view of a matrix: r x c, element (i, j) at i * rs + j * cs.
struct Mat {
  int64_t rs, cs;
  int64_t r, c;
};

// x as a column-major cuBLAS operand: op(Y) = x for Y at the same address
// with leading dimension *ld. op N needs unit steps down x's columns, op T
// along its rows; a dimension of extent 1 has no step to check.
bool place(const Mat& x, bool allow_trans, bool* trans, int64_t* ld) {
  if (x.rs == 1 || x.r == 1) {
    const int64_t l = x.c == 1 ? std::max<int64_t>(x.r, 1) : x.cs;
    if (l >= std::max<int64_t>(x.r, 1)) {
      *trans = false, *ld = l;
      return true;
    }
  }
  if (allow_trans && (x.cs == 1 || x.c == 1)) {
    const int64_t l = x.r == 1 ? std::max<int64_t>(x.c, 1) : x.rs;
    if (l >= std::max<int64_t>(x.c, 1)) {
      *trans = true, *ld = l;
      return true;
    }
  }
  return false;
}

Mat mat(const gemm::Factor& f, int64_t rows, int64_t cols) { return Mat{f.rs, f.cs, rows, cols}; }
Mat transposed(const Mat& x) { return Mat{x.cs, x.rs, x.c, x.r}; }

std::string stride_words(const char* name, const Mat& x) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "%s (%lldx%lld, row stride %lld, column stride %lld)", name,
                static_cast<long long>(x.r), static_cast<long long>(x.c), static_cast<long long>(x.rs),
                static_cast<long long>(x.cs));
  return buf;
}

bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

// One product as calls. names: of A, B, C for messages.
bool plan_product(gemm::Product p, const int64_t* bias_bstride, bool need_swapped, bool fold, bool base_accumulate,
                  const char* const names[3], Call* call, std::string* why) {
  Call c;
  if (p.M == 0 || p.N == 0 || p.batch.count() == 0) {
    *call = c;
    return true;
  }
  std::vector<Group> groups = groups_of(p, bias_bstride);
  int64_t M = p.M, N = p.N, K = p.K;
  if (fold && groups.size() == 1) {
    const Group& g = groups[0];
    if (g.s[kB] == 0 && g.s[kC] != 0 && g.s[kBias] == 0 && g.s[kA] == M * p.A.rs && g.s[kC] == M * p.C.rs) {
      M *= g.count;  // a run of A's (and C's) rows times one B
      groups.clear();
    } else if (g.s[kC] == 0 && g.s[kA] == K * p.A.cs && g.s[kB] == K * p.B.rs) {
      K *= g.count;  // the sum of products is one product over longer inner rows
      groups.clear();
    } else if (g.s[kA] == 0 && g.s[kC] != 0 && g.s[kB] == N * p.B.cs && g.s[kC] == N * p.C.cs &&
               g.s[kBias] == (bias_bstride ? N * 1 : 0)) {
      N *= g.count;  // one A times a run of B's columns
      groups.clear();
    }
  }
  const Mat A = mat(p.A, M, K), B = mat(p.B, K, N), C = mat(p.C, M, N);
  // Orientation: C' = C^T = B^T A^T (row-major data as cuBLAS sees it), or C' = C.
  bool ok = false;
  for (int swapped = 1; swapped >= 0 && !ok; swapped--) {
    if (!swapped && need_swapped) break;
    const Mat Cp = swapped ? transposed(C) : C;
    const Mat Ap = swapped ? transposed(B) : A;
    const Mat Bp = swapped ? transposed(A) : B;
    bool tc = false;
    if (!place(Cp, false, &tc, &c.ldc)) continue;
    if (!place(Ap, true, &c.trans_a, &c.lda)) continue;
    if (!place(Bp, true, &c.trans_b, &c.ldb)) continue;
    c.swapped = swapped;
    c.m = static_cast<int>(std::min<int64_t>(Cp.r, INT_MAX));
    c.n = static_cast<int>(std::min<int64_t>(Cp.c, INT_MAX));
    c.k = static_cast<int>(std::min<int64_t>(K, INT_MAX));
    if (!fits_int(Cp.r) || !fits_int(Cp.c) || !fits_int(K)) {
      *why = "a matrix dimension exceeds cuBLAS's int range";
      return false;
    }
    ok = true;
  }
  if (!ok) {
    const Mat both[3] = {A, B, C};
    for (int i = 0; i < 3; i++) {
      bool t;
      int64_t ld;
      const bool fits = i == 2 ? (place(C, false, &t, &ld) || (!need_swapped && place(transposed(C), false, &t, &ld)))
                               : place(both[i], true, &t, &ld);
      if (!fits) {
        *why = stride_words(names[i], both[i]) +
               " has neither unit-stride rows nor unit-stride columns with a leading dimension cuBLAS can take";
        return false;
      }
    }
    *why = std::string("cuBLAS cannot take ") + names[2] + " in the orientation its operands need" +
           (need_swapped ? " (the bias epilogue needs the row-major orientation)" : "");
    return false;
  }
  if (!fits_int(c.lda) || !fits_int(c.ldb) || !fits_int(c.ldc)) {
    *why = "a leading dimension exceeds cuBLAS's int range";
    return false;
  }
  c.a = c.swapped ? p.B.data : p.A.data;
  c.b = c.swapped ? p.A.data : p.B.data;
  c.c = p.C.data;
  const int ia = c.swapped ? kB : kA, ib = c.swapped ? kA : kB;
  // The strided batch: the largest group whose C matrices are distinct.
  int chosen = -1;
  for (size_t i = 0; i < groups.size(); i++)
    if (groups[i].s[kC] != 0 && groups[i].count <= INT_MAX && (chosen < 0 || groups[i].count > groups[chosen].count))
      chosen = static_cast<int>(i);
  if (chosen >= 0) {
    const Group& g = groups[chosen];
    c.batch = static_cast<int>(g.count);
    c.stride_a = g.s[ia], c.stride_b = g.s[ib], c.stride_c = g.s[kC], c.stride_bias = g.s[kBias];
  }
  // Every other group loops, outermost first (the CPU reference's order).
  std::vector<const Group*> outer;
  for (size_t i = 0; i < groups.size(); i++)
    if (static_cast<int>(i) != chosen) outer.push_back(&groups[i]);
  std::vector<int64_t> idx(outer.size(), 0);
  std::set<int64_t> written;
  for (;;) {
    Base b;
    for (size_t i = 0; i < outer.size(); i++) {
      b.a += idx[i] * outer[i]->s[ia];
      b.b += idx[i] * outer[i]->s[ib];
      b.c += idx[i] * outer[i]->s[kC];
      b.bias += idx[i] * outer[i]->s[kBias];
    }
    b.accumulate = base_accumulate || !written.insert(b.c).second;
    c.bases.push_back(b);
    int d = static_cast<int>(outer.size()) - 1;
    for (; d >= 0; d--) {
      if (++idx[d] < outer[d]->count) break;
      idx[d] = 0;
    }
    if (d < 0) break;
  }
  *call = std::move(c);
  return true;
}

bool plan_product(const gemm::Product& p, const int64_t* bias_bstride, bool need_swapped, const Options& opt,
                  bool base_accumulate, const char* const names[3], Call* call, std::string* why) {
  if (opt.fold && plan_product(p, bias_bstride, need_swapped, true, base_accumulate, names, call, why)) return true;
  return plan_product(p, bias_bstride, need_swapped, false, base_accumulate, names, call, why);
}

int strides_of(const ccv_nnc_tensor_t* t, int* dim, int64_t* stride) {
  const int nd = nd_of(t->info.dim);
  for (int i = 0; i < nd; i++) dim[i] = t->info.dim[i];
  if (CCV_IS_TENSOR_VIEW(t)) {
    const auto* v = reinterpret_cast<const ccv_nnc_tensor_view_t*>(t);
    for (int i = 0; i < nd; i++) stride[i] = v->stride[i];
  } else {
    gpu::packed_strides(dim, nd, stride);
  }
  return nd;
}

}  // namespace

bool forward(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
             ccv_nnc_tensor_t* const* outputs, int output_size, Forward* out, std::string* why, const Options& opt) {
  if (input_size < 2 || output_size < 1 || !inputs[0] || !inputs[1] || !outputs[0]) {
    *why = "GEMM_FORWARD needs a, w and b";
    return false;
  }
  const ccv_nnc_tensor_t* bias = input_size > 2 ? inputs[2] : nullptr;
  const gemm::Product p = gemm::forward_product(cmd.info, inputs[0], inputs[1], outputs[0]);
  static const char* const names[3] = {"a", "w", "b"};
  Forward f;
  if (bias) {
    // The fill plan is made whatever the mode: it is also the fallback when
    // cuBLASLt has no algorithm for the epilogue.
    int bdim[CCV_NNC_MAX_DIM_ALLOC], xdim[CCV_NNC_MAX_DIM_ALLOC];
    int64_t bs[CCV_NNC_MAX_DIM_ALLOC], xs[CCV_NNC_MAX_DIM_ALLOC], xb[CCV_NNC_MAX_DIM_ALLOC];
    const int bnd = strides_of(outputs[0], bdim, bs);
    const int xnd = strides_of(bias, xdim, xs);
    // Leading 1s beyond b's rank broadcast to nothing.
    int skip = 0;
    while (xnd - skip > bnd && xdim[skip] == 1) skip++;
    if (!gpu::broadcast_strides(xdim + skip, xs + skip, xnd - skip, bdim, bnd, xb)) {
      *why = "the bias does not broadcast to b";
      return false;
    }
    const int64_t* s[2] = {bs, xb};
    gpu::make_plan(f.fill, bdim, bnd, 2, s);
    f.bias_data = static_cast<const unsigned char*>(bias->data.ptr);
    if (opt.epilogue) {
      const gemm::BiasMap m = gemm::bias_map(bias, p);
      std::string ignored;
      if (m.rs == 0 && (m.cs == 1 || p.N == 1) &&
          plan_product(p, m.bstride, true, opt, false, names, &f.gemm, &ignored)) {
        f.bias = BiasMode::epilogue;
        *out = std::move(f);
        return true;
      }
    }
    f.bias = BiasMode::fill;
  }
  if (!plan_product(p, nullptr, false, opt, bias != nullptr, names, &f.gemm, why)) return false;
  *out = std::move(f);
  return true;
}

bool backward(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
              ccv_nnc_tensor_t* const* outputs, int output_size, Backward* out, std::string* why, const Options& opt) {
  const gemm::BackwardArgs t = gemm::backward_args(inputs, input_size, outputs, output_size);
  if (!t.g || (!t.da && !t.dw && !t.dbias) || (t.da && !t.w) || (t.dw && !t.a)) {
    *why = "GEMM_BACKWARD needs g, and w for da, a for dw";
    return false;
  }
  Backward b;
  if (t.da) {
    static const char* const names[3] = {"the product's first factor (g or w)", "its second factor (w or g)", "da"};
    if (!plan_product(gemm::da_product(cmd.info, t.g, t.w, t.da), nullptr, false, opt, false, names, &b.da_gemm, why))
      return false;
    b.da = true;
  }
  if (t.dw) {
    static const char* const names[3] = {"the product's first factor (a or g)", "its second factor (g or a)", "dw"};
    if (!plan_product(gemm::dw_product(cmd.info, t.g, t.a, t.dw), nullptr, false, opt, false, names, &b.dw_gemm, why))
      return false;
    b.dw = true;
  }
  if (t.dbias) {
    int gdim[CCV_NNC_MAX_DIM_ALLOC], ddim[CCV_NNC_MAX_DIM_ALLOC];
    int64_t gs[CCV_NNC_MAX_DIM_ALLOC], ds[CCV_NNC_MAX_DIM_ALLOC];
    const int gnd = strides_of(t.g, gdim, gs);
    const int dnd = strides_of(t.dbias, ddim, ds);
    int skip = 0;
    while (dnd - skip > gnd && ddim[skip] == 1) skip++;
    const int64_t* in[1] = {gs};
    if (!gpu::make_reduce_plan(b.reduce, gdim, gnd, ddim + skip, ds + skip, dnd - skip, 1, in)) {
      *why = "dbias does not take a shape g reduces to";
      return false;
    }
    b.dbias = true;
    b.dbias_data = static_cast<unsigned char*>(t.dbias->data.ptr);
    b.g_data = static_cast<const unsigned char*>(t.g->data.ptr);
  }
  *out = std::move(b);
  return true;
}

bool has_partial_sums(const Call& c) {
  for (const Base& b : c.bases)
    if (b.accumulate) return true;
  return false;
}

ScratchSums scratch_sums(const Call& c) {
  ScratchSums r;
  const int64_t mat = static_cast<int64_t>(c.m) * c.n;
  r.per_slot = mat * c.batch;
  for (const Base& b : c.bases) {
    int64_t slot = -1;
    for (const auto& [off, sl] : r.outputs)
      if (off == b.c) slot = sl;
    if (slot < 0) {
      slot = static_cast<int64_t>(r.outputs.size());
      r.outputs.emplace_back(b.c, slot);
    }
    r.slot.push_back(slot);
  }
  // [batch, n, m]: the output with its strides, the slot packed column-major.
  const int dims[3] = {c.batch, c.n, c.m};
  const int64_t out_strides[3] = {c.stride_c, c.ldc, 1}, slot_strides[3] = {mat, c.m, 1};
  const int64_t* strides[2] = {out_strides, slot_strides};
  gpu::make_plan(r.store, dims, 3, 2, strides);
  return r;
}

Compute compute_of(int flags, int datatype) {
  switch (datatype) {
    case CCV_64F:
      return Compute::f64;
    case CCV_32F:
      return (flags & CCV_NNC_GEMM_32TF) ? Compute::f32_tf32 : Compute::f32;
    case CCV_16F:
      return (flags & CCV_NNC_GEMM_16F) ? Compute::f16 : Compute::f32;
    default:
      return Compute::f32;
  }
}

}  // namespace nnc::gemm_plan
