// GEMM on CPU_OPT, fp32 and fp64, for tensors and views whose rows are
// unit-stride (the leading dimension is the row stride): fp32 on our AVX-512
// or AVX2 kernels (sgemm.hpp) where the CPU has them (the blocked one from 6
// rows, the unpacked one for 1 to 5), everything else on OpenBLAS (cblas_sgemm /
// cblas_dgemm). Nothing is allocated per call.
//
// A batch whose matrices sit one after another in memory, multiplied by a
// shared w, is one GEMM with M = batch · m (the fully connected layer on a
// batched input); the gradient of a shared w is likewise one GEMM over
// K = batch · m. Other batches loop over GEMM calls. Bias: b is first filled
// with the bias row, then GEMM adds the product (beta = 1).
#include <cblas.h>

#include <climits>
#include <cstring>

#include "cmd/blas/gemm.hpp"
#include "cmd/common/sgemm.hpp"
#include "core/error.hpp"
#include "core/kernel.hpp"
#include "core/parallel.hpp"

namespace nnc::gemm {

namespace {


// fp32 runs on our own kernels where the CPU has AVX-512 (see sgemm.hpp):
// the blocked one from 6 rows (its tile height), the unpacked one below
// (batch-1 and small-batch layers: 3136 -> 256 at batch 1 in 0.05 ms
// against OpenBLAS's 0.27). Keeping OpenBLAS off the common path matters
// beyond its own speed: its idle threads spin for tens of milliseconds after
// each call, taking the cores from the kernels that follow. CPUs with AVX2
// and FMA but no AVX-512 take the AVX2 versions of both (sgemm_avx2.cpp,
// sgemm_small_avx2.cpp; fc 3136 -> 256 at batch 1 in 0.022 ms against
// OpenBLAS Haswell's 0.26).
enum class OwnSgemm { none, avx2, avx512 };
OwnSgemm own_sgemm() {
  const CpuFeatures& f = cpu_features();
  return f.avx512 ? OwnSgemm::avx512 : f.avx2 ? OwnSgemm::avx2 : OwnSgemm::none;
}

void blas(bool ta, bool tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb, float beta, float* c,
          int ldc) {
  const OwnSgemm own = own_sgemm();
  if (own != OwnSgemm::none) {
    Sgemm g;
    g.m = m, g.n = n, g.k = k;
    g.a = a, g.ars = ta ? 1 : lda, g.acs = ta ? lda : 1;
    g.b = b, g.brs = tb ? 1 : ldb, g.bcs = tb ? ldb : 1;
    g.beta = beta, g.c = c, g.ldc = ldc;
    const bool avx512 = own == OwnSgemm::avx512;
    if (m >= 6) {
      if (avx512)
        sgemm_avx512(g);
      else
        sgemm_avx2(g);
      return;
    }
    if (avx512 ? sgemm_small_avx512(g) : sgemm_small_avx2(g)) return;
  }
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a, lda, b,
              ldb, beta, c, ldc);
}
void blas(bool ta, bool tb, int m, int n, int k, const double* a, int lda, const double* b, int ldb, double beta,
          double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0, a, lda, b,
              ldb, beta, c, ldc);
}

// Can BLAS address this tensor's matrices (unit-stride rows, int leading dimension)?
bool blas_ok(const ccv_nnc_tensor_t* t) {
  if (!t) return true;
  const Operand o = operand(t);
  if (o.cols != 1 && o.cs != 1) return false;
  if (o.rows > 1 && o.rs < o.cols) return false;
  return o.rs <= INT_MAX;
}

bool accept_forward(const ccv_nnc_cmd_t&, ccv_nnc_tensor_t* const* inputs, int, ccv_nnc_tensor_t* const* outputs, int) {
  return blas_ok(inputs[0]) && blas_ok(inputs[1]) && blas_ok(outputs[0]);
}

bool accept_backward(const ccv_nnc_cmd_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                     ccv_nnc_tensor_t* const* outputs, int output_size) {
  const BackwardArgs t = backward_args(inputs, input_size, outputs, output_size);
  return blas_ok(t.g) && (!t.dw || blas_ok(t.a)) && (!t.da || blas_ok(t.w)) && blas_ok(t.da) && blas_ok(t.dw);
}

// Do f's matrices follow one another with `rows` rows each over the batch,
// so that the batch is one matrix of rows · count rows?
bool folds(const Factor& f, const Batch& batch, int64_t rows) {
  int64_t expect = rows * f.ld;
  for (int d = batch.nd - 1; d >= 0; d--) {
    if (batch.dim[d] == 1) continue;
    if (f.bstride[d] != expect) return false;
    expect *= batch.dim[d];
  }
  return true;
}

bool shared(const Factor& f, const Batch& batch) {
  for (int d = 0; d < batch.nd; d++)
    if (f.bstride[d] != 0) return false;
  return true;
}

// C (+)= A · B over the batch; beta = 1 keeps what C holds (the bias).
template <class T>
void run(const Product& p, T beta) {
  T* const a = reinterpret_cast<T*>(p.A.data);
  T* const b = reinterpret_cast<T*>(p.B.data);
  T* const c = reinterpret_cast<T*>(p.C.data);
  const int lda = static_cast<int>(p.A.ld), ldb = static_cast<int>(p.B.ld), ldc = static_cast<int>(p.C.ld);
  const size_t count = p.batch.count();
  if (count == 1) {
    blas(p.A.trans, p.B.trans, p.M, p.N, p.K, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  const int64_t mm = static_cast<int64_t>(p.M) * static_cast<int64_t>(count);
  if (!p.reduce && !p.A.trans && shared(p.B, p.batch) && mm <= INT_MAX && folds(p.A, p.batch, p.M) &&
      folds(p.C, p.batch, p.M)) {
    blas(false, p.B.trans, static_cast<int>(mm), p.N, p.K, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  const int64_t kk = static_cast<int64_t>(p.K) * static_cast<int64_t>(count);
  if (p.reduce && shared(p.C, p.batch) && p.A.trans && !p.B.trans && kk <= INT_MAX && folds(p.A, p.batch, p.K) &&
      folds(p.B, p.batch, p.K)) {
    blas(true, false, p.M, p.N, static_cast<int>(kk), a, lda, b, ldb, beta, c, ldc);
    return;
  }
  if (p.reduce && beta == T(0)) {
    // Several products land on each C: clear them all, then accumulate.
    for_each_batch(p, [&](int64_t, int64_t, int64_t oc) {
      for (int i = 0; i < p.M; i++) std::memset(c + oc + i * p.C.ld, 0, sizeof(T) * p.N);
    });
    beta = T(1);
  }
  for_each_batch(p, [&](int64_t oa, int64_t ob, int64_t oc) {
    blas(p.A.trans, p.B.trans, p.M, p.N, p.K, a + oa, lda, b + ob, ldb, beta, c + oc, ldc);
  });
}

// Fill C with the bias broadcast to it (validated to broadcast).
template <class T>
void fill_bias(const Product& p, const ccv_nnc_tensor_t* bias) {
  const BiasMap m = bias_map(bias, p);
  const T* const src = reinterpret_cast<const T*>(m.data);
  T* const c = reinterpret_cast<T*>(p.C.data);
  for_each_bias_batch(p, m, [&](int64_t ob, int64_t oc) {
    for (int i = 0; i < p.M; i++) {
      T* row = c + oc + i * p.C.ld;
      const T* from = src + ob + i * m.rs;
      if (m.cs == 1) {
        std::memcpy(row, from, sizeof(T) * p.N);
      } else {
        for (int j = 0; j < p.N; j++) row[j] = from[j * m.cs];
      }
    }
  });
}

template <class T>
void forward_typed(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                   ccv_nnc_tensor_t* const* outputs) {
  const Product p = forward_product(cmd.info, inputs[0], inputs[1], outputs[0]);
  const ccv_nnc_tensor_t* bias = input_size > 2 ? inputs[2] : nullptr;
  if (bias) fill_bias<T>(p, bias);
  auto lock = compute_lock();
  run<T>(p, bias ? T(1) : T(0));
}

// dbias = g summed over every dimension along which the bias was broadcast
// (a row bias: over every batch and row).
template <class T>
void bias_gradient(const ccv_nnc_tensor_t* g, const ccv_nnc_tensor_t* dbias) {
  const Layout dl = layout_of(dbias, "dbias");
  for_each_index(dl.dim.data(), dl.nd, [&](const int* idx) { *reinterpret_cast<T*>(dl.at(idx)) = T(0); });
  const Product walk = output_walk(g);
  const BiasMap m = bias_map(dbias, walk);
  T* const out = reinterpret_cast<T*>(m.data);
  const T* const src = reinterpret_cast<const T*>(walk.C.data);
  const int64_t grs = walk.C.rs, gcs = walk.C.cs;
  const int n = walk.N;
  for_each_bias_batch(walk, m, [&](int64_t ob, int64_t og) {
    for (int i = 0; i < walk.M; i++) {
      const T* row = src + og + i * grs;
      T* to = out + ob + i * m.rs;
      if (m.cs == 1 && gcs == 1) {
        for (int j = 0; j < n; j++) to[j] += row[j];
      } else if (m.cs == 0) {
        T s = T(0);
        for (int j = 0; j < n; j++) s += row[j * gcs];
        to[0] += s;
      } else {
        for (int j = 0; j < n; j++) to[j * m.cs] += row[j * gcs];
      }
    }
  });
}

template <class T>
void backward_typed(const ccv_nnc_cmd_t& cmd, const BackwardArgs& t) {
  auto lock = compute_lock();
  if (t.da) run<T>(da_product(cmd.info, t.g, t.w, t.da), T(0));
  if (t.dw) run<T>(dw_product(cmd.info, t.g, t.a, t.dw), T(0));
  if (t.dbias) bias_gradient<T>(t.g, t.dbias);
}

NNC_KERNEL(forward) {
  if (CCV_GET_DATA_TYPE(inputs[0]->info.datatype) == CCV_64F)
    forward_typed<double>(cmd, inputs, input_size, outputs);
  else
    forward_typed<float>(cmd, inputs, input_size, outputs);
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(backward) {
  const BackwardArgs t = backward_args(inputs, input_size, outputs, output_size);
  if (CCV_GET_DATA_TYPE(t.g->info.datatype) == CCV_64F)
    backward_typed<double>(cmd, t);
  else
    backward_typed<float>(cmd, t);
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace

void register_cpu_opt(Registry& r) {
  const KernelTraits opt = cpu_opt(types::kWide).exclusive_use();  // OpenBLAS under the compute lock
  r.add_kernels(opt.accepting(accept_forward), {{CCV_NNC_GEMM_FORWARD, forward}});
  r.add_kernels(opt.accepting(accept_backward), {{CCV_NNC_GEMM_BACKWARD, backward}});
}

}  // namespace nnc::gemm
