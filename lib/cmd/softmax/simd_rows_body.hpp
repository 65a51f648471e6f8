// The fp32 row loops of the softmax family, written once against a small
// vector type V and included by each ISA file (cpu_opt_avx2.cpp,
// cpu_opt_avx512.cpp) *inside its own namespace* after it defines V:
//
//   V::R, V::N                      the register type and its lanes
//   load / store                    N floats, unaligned
//   load_tail(p, n, fill) / store_tail(p, v, n)   the first n < N lanes
//   set1, add, sub, mul, min, max, fmadd(a, b, c) = a*b + c, fnmadd = c - a*b
//   round (to nearest), pow2n (2^n for whole n in [-126, 127]),
//   zero_below(e, x, lo) (e where x >= lo or x is NaN, else 0), hsum, hmax
//
// This file includes nothing and defines only inline functions and one table,
// so each ISA gets its own copy compiled with its own flags.

// exp(x): x = n ln2 + r with |r| <= ln2 / 2 (Cody-Waite, ln2 in two parts),
// exp(r) by its degree-7 Taylor polynomial (truncation below 1e-8 relative),
// then scaled by 2^n through the exponent bits. Results below FLT_MIN are 0;
// x above 88 is read as 88. NaN stays NaN.
inline V::R vexp(V::R x) {
  const V::R lo = V::set1(-87.3365402f);  // log(FLT_MIN)
  const V::R xc = V::min(V::set1(88.0f), V::max(lo, x));
  const V::R n = V::round(V::mul(xc, V::set1(1.44269504088896341f)));
  V::R r = V::fnmadd(n, V::set1(0.693359375f), xc);
  r = V::fnmadd(n, V::set1(-2.12194440e-4f), r);
  V::R p = V::set1(1.0f / 5040);
  p = V::fmadd(p, r, V::set1(1.0f / 720));
  p = V::fmadd(p, r, V::set1(1.0f / 120));
  p = V::fmadd(p, r, V::set1(1.0f / 24));
  p = V::fmadd(p, r, V::set1(1.0f / 6));
  p = V::fmadd(p, r, V::set1(0.5f));
  p = V::fmadd(p, r, V::set1(1.0f));
  p = V::fmadd(p, r, V::set1(1.0f));
  return V::zero_below(V::mul(p, V::pow2n(n)), x, lo);
}

inline void row_exp(const float* x, float* y, size_t n) {
  size_t i = 0;
  for (; i + V::N <= n; i += V::N) V::store(y + i, vexp(V::load(x + i)));
  if (i < n) {
    const int k = static_cast<int>(n - i);
    V::store_tail(y + i, vexp(V::load_tail(x + i, k, 0.0f)), k);
  }
}

inline float row_max(const float* x, int n) {
  const float ninf = -__builtin_inff();
  V::R a = V::set1(ninf), b = a;
  int i = 0;
  for (; i + 2 * V::N <= n; i += 2 * V::N) {
    a = V::max(a, V::load(x + i));
    b = V::max(b, V::load(x + i + V::N));
  }
  for (; i + V::N <= n; i += V::N) a = V::max(a, V::load(x + i));
  if (i < n) b = V::max(b, V::load_tail(x + i, n - i, ninf));
  return V::hmax(V::max(a, b));
}

inline float row_exp_sum(const float* x, float m, float* y, int n) {
  const V::R mv = V::set1(m);
  V::R a = V::set1(0.0f), b = a;
  int i = 0;
  if (y) {
    for (; i + 2 * V::N <= n; i += 2 * V::N) {
      const V::R e0 = vexp(V::sub(V::load(x + i), mv));
      const V::R e1 = vexp(V::sub(V::load(x + i + V::N), mv));
      V::store(y + i, e0);
      V::store(y + i + V::N, e1);
      a = V::add(a, e0);
      b = V::add(b, e1);
    }
    for (; i + V::N <= n; i += V::N) {
      const V::R e = vexp(V::sub(V::load(x + i), mv));
      V::store(y + i, e);
      a = V::add(a, e);
    }
  } else {
    for (; i + V::N <= n; i += V::N) a = V::add(a, vexp(V::sub(V::load(x + i), mv)));
  }
  if (i < n) {
    // Padding lanes read -inf: their exp is 0.
    const V::R e = vexp(V::sub(V::load_tail(x + i, n - i, -__builtin_inff()), mv));
    if (y) V::store_tail(y + i, e, n - i);
    b = V::add(b, e);
  }
  return V::hsum(V::add(a, b));
}

inline void row_scale(float* y, float s, int n) {
  const V::R sv = V::set1(s);
  int i = 0;
  for (; i + V::N <= n; i += V::N) V::store(y + i, V::mul(V::load(y + i), sv));
  if (i < n) V::store_tail(y + i, V::mul(V::load_tail(y + i, n - i, 0.0f), sv), n - i);
}

inline float row_dot(const float* a, const float* b, int n) {
  V::R s0 = V::set1(0.0f), s1 = s0;
  int i = 0;
  for (; i + 2 * V::N <= n; i += 2 * V::N) {
    s0 = V::fmadd(V::load(a + i), V::load(b + i), s0);
    s1 = V::fmadd(V::load(a + i + V::N), V::load(b + i + V::N), s1);
  }
  for (; i + V::N <= n; i += V::N) s0 = V::fmadd(V::load(a + i), V::load(b + i), s0);
  if (i < n) s1 = V::fmadd(V::load_tail(a + i, n - i, 0.0f), V::load_tail(b + i, n - i, 0.0f), s1);
  return V::hsum(V::add(s0, s1));
}

inline void row_softmax_backward(const float* g, const float* y, float* dx, int n) {
  const V::R d = V::set1(row_dot(g, y, n));
  int i = 0;
  for (; i + V::N <= n; i += V::N) V::store(dx + i, V::mul(V::load(y + i), V::sub(V::load(g + i), d)));
  if (i < n) {
    const int k = n - i;
    V::store_tail(dx + i, V::mul(V::load_tail(y + i, k, 0.0f), V::sub(V::load_tail(g + i, k, 0.0f), d)), k);
  }
}

// dz = s * (a + gs - <gs, s>) - b - c * lab  (gs, lab may be NULL: 0).
inline void row_crossentropy_backward(const float* s, const float* gs, const float* lab, float* dz, int n, float a,
                                      float b, float c) {
  const float d = gs ? row_dot(gs, s, n) : 0.0f;
  const V::R av = V::set1(a - d), bv = V::set1(b), cv = V::set1(c);
  int i = 0;
  for (; i + V::N <= n; i += V::N) {
    V::R k = av;
    if (gs) k = V::add(k, V::load(gs + i));
    V::R r = V::sub(V::mul(V::load(s + i), k), bv);
    if (lab) r = V::fnmadd(cv, V::load(lab + i), r);
    V::store(dz + i, r);
  }
  if (i < n) {
    const int t = n - i;
    V::R k = av;
    if (gs) k = V::add(k, V::load_tail(gs + i, t, 0.0f));
    V::R r = V::sub(V::mul(V::load_tail(s + i, t, 0.0f), k), bv);
    if (lab) r = V::fnmadd(cv, V::load_tail(lab + i, t, 0.0f), r);
    V::store_tail(dz + i, r, t);
  }
}
