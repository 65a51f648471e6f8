// The channels-inner (NHWC) batch-norm loops of norm_avx2.hpp and
// norm_avx512.hpp, written once against a vmath vector type V and included by
// each ISA file (cpu_opt_avx2.cpp, cpu_opt_avx512.cpp) *inside its own
// namespace* after it defines, by its register budget:
//
//   V             the vector type (core/vmath_*.hpp), V::N floats a register
//   kMaxVectors   the most registers of channels the sums keep (K / V::N)
//   kAffineRegK   the most channels whose coefficients col_affine_stream keeps
//   kAxpbypcRegK  in registers across rows (col_axpbypc_stream the same)
//
// Defines the four functions of norm_loops_decl.hpp.

namespace {

// f.template operator()<NV>() for K = V::N · NV channels (NV from 1 to
// kMaxVectors; anything wider takes kMaxVectors).
template <int NV = 1, class F>
void by_vectors(size_t K, F f) {
  if constexpr (NV < kMaxVectors) {
    if (K / V::N == NV) return f.template operator()<NV>();
    return by_vectors<NV + 1>(K, f);
  } else {
    return f.template operator()<NV>();
  }
}

// The stream loops with a row's per-channel coefficients held in registers
// instead of reloaded for every row.
template <int NV>
void affine_rows(const float* x, float* y, size_t rows, const float* c, const float* a, const float* b) {
  constexpr int N = V::N;
  typename V::R cv[NV], av[NV], bv[NV];
  for (int v = 0; v < NV; v++) cv[v] = V::load(c + N * v), av[v] = V::load(a + N * v), bv[v] = V::load(b + N * v);
  for (size_t r = 0; r < rows; r++, x += N * NV, y += N * NV)
    for (int v = 0; v < NV; v++) V::stream(y + N * v, V::fmadd(V::sub(V::load(x + N * v), cv[v]), av[v], bv[v]));
}

template <int NV>
void axpbypc_rows(const float* g, const float* x, float* dx, size_t rows, const float* m, const float* a,
                  const float* b, const float* c) {
  constexpr int N = V::N;
  typename V::R mv[NV], av[NV], bv[NV], cv[NV];
  for (int v = 0; v < NV; v++) {
    mv[v] = V::load(m + N * v), av[v] = V::load(a + N * v);
    bv[v] = V::load(b + N * v), cv[v] = V::load(c + N * v);
  }
  for (size_t r = 0; r < rows; r++, g += N * NV, x += N * NV, dx += N * NV)
    for (int v = 0; v < NV; v++) {
      const typename V::R t = V::fmadd(av[v], V::load(g + N * v), cv[v]);
      V::stream(dx + N * v, V::fmadd(bv[v], V::sub(V::load(x + N * v), mv[v]), t));
    }
}

// Sums of NV registers of channels over `rows` rows K apart, the accumulators
// in registers from start to end.
template <int NV>
void sqdev(const float* x, size_t rows, size_t K, const float* c, float* acc, float* dev) {
  constexpr int N = V::N;
  typename V::R m[NV], s2[NV], s1[NV];
  for (int v = 0; v < NV; v++) {
    m[v] = V::load(c + N * v);
    s2[v] = V::load(acc + N * v);
    s1[v] = V::load(dev + N * v);
  }
  for (size_t r = 0; r < rows; r++) {
    const float* xr = x + r * K;
    for (int v = 0; v < NV; v++) {
      const typename V::R d = V::sub(V::load(xr + N * v), m[v]);
      s2[v] = V::fmadd(d, d, s2[v]);
      s1[v] = V::add(s1[v], d);
    }
  }
  for (int v = 0; v < NV; v++) {
    V::store(acc + N * v, s2[v]);
    V::store(dev + N * v, s1[v]);
  }
}

template <int NV>
void dot2(const float* g, const float* x, size_t rows, size_t K, const float* c, float* sg, float* sgx) {
  constexpr int N = V::N;
  typename V::R m[NV], a[NV], b[NV];
  for (int v = 0; v < NV; v++) {
    m[v] = V::load(c + N * v);
    a[v] = V::load(sg + N * v);
    b[v] = V::load(sgx + N * v);
  }
  for (size_t r = 0; r < rows; r++) {
    const float *gr = g + r * K, *xr = x + r * K;
    for (int v = 0; v < NV; v++) {
      const typename V::R gv = V::load(gr + N * v);
      a[v] = V::add(a[v], gv);
      b[v] = V::fmadd(gv, V::sub(V::load(xr + N * v), m[v]), b[v]);
    }
  }
  for (int v = 0; v < NV; v++) {
    V::store(sg + N * v, a[v]);
    V::store(sgx + N * v, b[v]);
  }
}

}  // namespace

// The formulas of red::Loops' col_affine and col_axpbypc, with fused
// multiply-adds (results differ from those loops' by rounding only).
void col_affine_stream(const float* x, float* y, size_t rows, size_t K, const float* c, const float* a,
                       const float* b) {
  if (K <= kAffineRegK) return by_vectors(K, [&]<int NV>() {
      if constexpr (NV * V::N <= kAffineRegK) affine_rows<NV>(x, y, rows, c, a, b);
    });
  for (size_t r = 0; r < rows; r++) {
    const float* xr = x + r * K;
    float* yr = y + r * K;
    for (size_t j = 0; j < K; j += V::N) {
      const typename V::R d = V::sub(V::load(xr + j), V::load(c + j));
      V::stream(yr + j, V::fmadd(d, V::load(a + j), V::load(b + j)));
    }
  }
}

void col_axpbypc_stream(const float* g, const float* x, float* dx, size_t rows, size_t K, const float* m,
                        const float* a, const float* b, const float* c) {
  if (K <= kAxpbypcRegK) return by_vectors(K, [&]<int NV>() {
      if constexpr (NV * V::N <= kAxpbypcRegK) axpbypc_rows<NV>(g, x, dx, rows, m, a, b, c);
    });
  for (size_t r = 0; r < rows; r++) {
    const float *gr = g + r * K, *xr = x + r * K;
    float* dr = dx + r * K;
    for (size_t j = 0; j < K; j += V::N) {
      const typename V::R d = V::sub(V::load(xr + j), V::load(m + j));
      const typename V::R t = V::fmadd(V::load(a + j), V::load(gr + j), V::load(c + j));
      V::stream(dr + j, V::fmadd(V::load(b + j), d, t));
    }
  }
}

void col_sqdev_regs(const float* x, size_t rows, size_t K, const float* c, float* acc, float* dev) {
  by_vectors(K, [&]<int NV>() { sqdev<NV>(x, rows, K, c, acc, dev); });
}

void col_dot2_regs(const float* g, const float* x, size_t rows, size_t K, const float* c, float* sg, float* sgx) {
  by_vectors(K, [&]<int NV>() { dot2<NV>(g, x, rows, K, c, sg, sgx); });
}
