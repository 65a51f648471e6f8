// Our own single-precision GEMM for CPUs with AVX-512, and for CPUs with
// AVX2 and FMA only (the *_avx2 functions, same contracts), used by GEMM's
// CPU_OPT backend in place of OpenBLAS where it is faster (OpenBLAS runs its
// AVX2 kernels on some AVX-512 CPUs, at half their FMA peak).
//
//   C = beta · C + A · B      A: m x k, B: k x n, C: m x n
//
// A(i, p) is a[i * ars + p * acs] and B(p, j) is b[p * brs + j * bcs], so
// either operand may be transposed or strided; C's rows are ldc apart and its
// columns adjacent. The blocked scheme of sgemm_avx512.cpp: B is packed into
// zero-padded panels of 16 to 64 columns (8 or 16 in sgemm_avx2.cpp), A is
// read in place, and a register-blocked kernel computes each 6-row tile of C.
// The product splits over the pool (parallel_for), so call it under the
// compute lock.
//
// Example (y = x · wᵀ for x [64, 3136] and w [256, 3136]):
//
//     nnc::gemm::Sgemm g;
//     g.m = 64, g.n = 256, g.k = 3136;
//     g.a = x, g.ars = 3136, g.acs = 1;
//     g.b = w, g.brs = 1, g.bcs = 3136;
//     g.c = y, g.ldc = 256;
//     nnc::gemm::sgemm_avx512(g);
#pragma once

#include <cstdint>

namespace nnc::gemm {

struct Sgemm {
  int m = 0, n = 0, k = 0;
  const float* a = nullptr;
  int64_t ars = 0, acs = 0;
  const float* b = nullptr;
  int64_t brs = 0, bcs = 0;
  float beta = 0;  // 0: C is overwritten (never read); 1: the product is added to C
  float* c = nullptr;
  int64_t ldc = 0;
};

// Runs on AVX-512F CPUs only (check nnc::cpu_features() first). Throws
// std::bad_alloc when out of memory for its (per-thread, reused) packing block.
void sgemm_avx512(const Sgemm& g);
// The same on the calling thread only (for callers that split work
// themselves, on pool threads): never throws, false when out of memory.
[[nodiscard]] bool sgemm_avx512_serial(const Sgemm& g);

// Products of 1 to 5 rows (sgemm_small_avx512.cpp): B read in place once,
// no packing, threads over C's columns. Takes B with adjacent rows
// (bcs = 1), or with adjacent columns (brs = 1) when A's rows are adjacent
// too (acs = 1); returns false, doing nothing, for other shapes and strides.
[[nodiscard]] bool sgemm_small_avx512(const Sgemm& g);

// For callers that multiply many A by one B (Winograd's transformed
// weights): B (g.k x g.n, from g.b / g.brs / g.bcs) packed once into
// sgemm_packed_floats(k, n) floats at `packed` (64-byte aligned), then
// C = A · B on the calling thread for a row-major A (m x k, rows lda apart)
// and C (rows ldc apart), C overwritten. sgemm_packed_floats is enough for
// either instruction set's packing (AVX2's panels are narrower and never
// need more), but a B packed by one set is read only by the same set.
int64_t sgemm_packed_floats(int k, int n);
void sgemm_pack_avx512(const Sgemm& g, float* packed);
void sgemm_packed_avx512(int m, int n, int k, const float* a, int64_t lda, const float* packed, float* c, int64_t ldc);

// The same for CPUs with AVX2, FMA and F16C (nnc::cpu_features().avx2):
// sgemm_avx2.cpp and sgemm_small_avx2.cpp.
void sgemm_avx2(const Sgemm& g);
[[nodiscard]] bool sgemm_avx2_serial(const Sgemm& g);
[[nodiscard]] bool sgemm_small_avx2(const Sgemm& g);
void sgemm_pack_avx2(const Sgemm& g, float* packed);
void sgemm_packed_avx2(int m, int n, int k, const float* a, int64_t lda, const float* packed, float* c, int64_t ldc);

}  // namespace nnc::gemm
