// Vector math for fp32 kernels: exp, log, tanh, sigmoid, erf and the normal
// CDF, written once against a small vector type V and instantiated per
// instruction set. Usage (in a file compiled for AVX2, after the CPU check):
//
//   #include "core/vmath_avx2.hpp"   // nnc::vmath::Avx2
//   using V = nnc::vmath::Avx2;
//   V::store(y, nnc::vmath::exp<V>(V::load(x)));
//
// vmath_avx2.hpp / vmath_avx512.hpp define Avx2 / Avx512 and must be included
// only from sources compiled with those instruction sets (files ending
// _avx2.cpp / _avx512.cpp under lib/cmd). vmath_scalar.hpp defines Scalar
// (one float per "vector", any compiler flags) with the same algorithms, so a
// scalar fallback gives the same values as the vector paths.
//
// What V provides (every function static; R a register of N floats, M a lane
// mask):
//   load / store (unaligned), stream (a non-temporal store to an address
//   aligned to the register size; nnc::store_fence orders them), set1, add, sub, mul, div, fmadd(a, b, c) = a*b +
//   c, fnmadd(a, b, c) = c - a*b, min / max (with a NaN, the second operand comes back), abs, round (to nearest even),
//   lt / gt (ordered compares), isnan, select(m, a, b) = m ? a : b, opaque(v) = v kept from being folded into
//   a masked load, copysign(mag, sign), pow2n(n) = 2^n for whole n in
//   [-126, 127], scalef(p, n) = p 2^n for whole n in [-150, 128] rounded once (inf on overflow), scale_unit(p, n) =
//   scalef(p, n) for p in [0.5, 2) (cheaper where the CPU has no scalef instruction), scale_down(p, k, kb) =
//   p 2^-k for p in [0.5, 2), whole k in [0, 152] and kb = 1.5 * 2^23 + k (k in kb's low mantissa bits), recip(x) = 1 / x to
//   within 2^-22 relative (an estimate refined by a Newton step; not rounded exactly), exponent(x) / mantissa(x): x =
//   mantissa * 2^exponent, mantissa in [0.5, 1), for positive normal x.
//
// Accuracy (measured over wide ranges against double in
// test/unit/cmd_activation/vmath_test.cpp, every 8191st float of each sign
// and dense windows around the branch points): exp and log within 1 ulp of
// the exact value (measured 0.88, 0.76), erf within 1.5 (1.06), tanh and
// sigmoid within 2 (1.27, 1.82), ncdf within 4 (3.13); subnormal results in
// units of the subnormal step. Special values
// are as in C: exp(-inf) = 0, exp(+inf) = +inf, log(0) = -inf, log(x < 0) =
// NaN, log(+inf) = +inf, tanh / erf(+-inf) = +-1, sigmoid / ncdf(-inf) = 0,
// (+inf) = 1; NaN in gives NaN out. Subnormal inputs are treated as the values
// they are (the kernels never set flush-to-zero).
#pragma once

namespace nnc::vmath {

namespace detail {

// Horner's scheme over coefficients given highest degree first.
template <class V, int K>
inline typename V::R horner(typename V::R x, const float (&c)[K]) {
  typename V::R p = V::set1(c[0]);
  for (int i = 1; i < K; i++) p = V::fmadd(p, x, V::set1(c[i]));
  return p;
}

// exp(x) for x already clamped to [-105, 89] (NaN-free): x = n ln2 + r with
// |r| <= ln2 / 2 (Cody-Waite, ln2 in two parts, exact for |n| <= 2^8), exp(r)
// by its degree-7 Taylor polynomial (truncation 5e-9 relative), then 2^n
// applied by scale_unit, so results that overflow become +inf and results below
// FLT_MIN come out as (correctly rounded) subnormals.
template <class V>
inline typename V::R exp_clamped(typename V::R x) {
  using R = typename V::R;
  const R n = V::round(V::mul(x, V::set1(1.44269504088896341f)));
  R r = V::fnmadd(n, V::set1(0.693359375f), x);
  r = V::fnmadd(n, V::set1(-2.12194440e-4f), r);
  static constexpr float kExp[] = {1.0f / 5040, 1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f, 1.0f, 1.0f};
  const R p = horner<V>(r, kExp);
  return V::scale_unit(p, n);
}

// e^-u for u >= 0 (sigmoid's exp): exp_clamped's algorithm on -u (as
// accurate; the same bits but where u / ln2 lies within a rounding of a half
// integer) in fewer instructions: one clamp (105, where e^-u is 0 in float),
// k = round(u / ln2) from one fma with the 1.5 * 2^23 shift, e^(-r) by exp's
// polynomial with its odd coefficients negated (exactly), 2^-k by
// scale_down. A NaN u gives NaN.
// kShort: a degree-6 polynomial fitted in double (1.9e-8 relative on
// |r| <= ln2 / 2 + 0.002) instead, one fma fewer, for sigmoid_fast.
template <class V, bool kShort = false>
inline typename V::R exp_neg(typename V::R u) {
  using R = typename V::R;
  static constexpr float kExpNeg[] = {-1.0f / 5040, 1.0f / 720, -1.0f / 120, 1.0f / 24, -1.0f / 6, 0.5f, -1.0f, 1.0f};
  static constexpr float kExpNeg6[] = {0.0013836236f, -0.0083752936f, 0.0416682623f, -0.1666641384f,
                                       0.4999999106f, -1.0f,          1.0f};
  const R shift = V::set1(12582912.0f);
  const R uc = V::min(V::set1(105.0f), u);  // min gives u back for a NaN
  const R kb = V::fmadd(uc, V::set1(1.44269504088896341f), shift);
  const R k = V::sub(kb, shift);
  R r = V::fnmadd(k, V::set1(0.693359375f), uc);
  r = V::fnmadd(k, V::set1(-2.12194440e-4f), r);
  if constexpr (kShort) return V::scale_down(horner<V>(r, kExpNeg6), k, kb);
  return V::scale_down(horner<V>(r, kExpNeg), k, kb);
}

// erfc(z) for z >= 0: with t = 1 / (1 + z / 2), erfc(z) = t exp(Q(t) - z^2),
// Q fitted in double to within 8.3e-9 on z in [0, 10.5] (t in [0.16, 1]);
// beyond 10.5 the result underflows to 0. The square is carried as
// hi - lo (lo from an fma, plus z2lo = z^2 - (true argument)^2 from a caller
// whose argument is z plus a small remainder) and Q - hi as a two-sum, so the
// exponent's rounding does not grow with z.
template <class V>
inline typename V::R erfc_tail(typename V::R z, typename V::R z2lo) {
  using R = typename V::R;
  static constexpr float kQ[] = {-0.14061733260727821f,  0.14879117872682518f,   0.13685478390660388f,
                                 -0.2484813999901502f,   -0.046748277464506875f, 0.2961713296552097f,
                                 -0.039629890265856567f, -0.40690098930438739f,  0.094763432923113317f,
                                 1.3681188413018799f,    -0.5631568112769153f};
  constexpr float kTc = 0.5799999833106995f;  // Q is a polynomial in t - kTc (better conditioned)
  const R one = V::set1(1.0f);
  // t = 1 / d, d = 1 + z / 2 = dh + dl exactly (two-sum; z / 2 is exact).
  const R hz = V::mul(z, V::set1(0.5f));
  const R dh = V::add(one, hz);
  const R bb = V::sub(dh, one);
  const R dl = V::add(V::sub(one, V::sub(dh, bb)), V::sub(hz, bb));
  const R t = V::recip(dh);
  // The true t is t (1 + dt) (dt from the exact residual of t dh, so t's
  // estimate needs no exact rounding); the result moves by dt (1 + t Q'(t)), and
  // 1 + t Q'(t) = 0.981 + 1.354 t to 3.5% on the interval (fitted in double):
  // without this, t's error would cost up to 4 ulp.
  const R dt = V::fnmadd(dl, t, V::fnmadd(t, dh, one));
  const R dq = V::mul(dt, V::fmadd(t, V::set1(1.3542640f), V::set1(0.98095554f)));
  const R q = horner<V>(V::sub(t, V::set1(kTc)), kQ);
  const R hi = V::mul(z, z);
  // lo = hi - (true square): the fma gives hi - z*z exactly, z2lo the rest.
  const R lo = V::add(V::fnmadd(z, z, hi), z2lo);
  const R s = V::sub(q, hi);
  // Two-sum of q and -hi: s + e == q - hi exactly.
  const R bv = V::sub(s, q);
  const R e = V::add(V::sub(q, V::sub(s, bv)), V::sub(V::sub(V::set1(0.0f), hi), bv));
  const R arg = V::min(V::max(s, V::set1(-105.0f)), V::set1(89.0f));
  // exp(q - square) = exp(s + e + lo) = exp(s) (1 + e + lo) to first order (|e + lo| < 1e-5).
  const R corr = V::add(one, V::add(V::add(e, lo), dq));
  return V::mul(V::mul(t, exp_clamped<V>(arg)), corr);
}

// e^(-a^2 / 2) for a in [0, 14.5] (NaN-free), to 1.2e-7 relative: a^2 is
// carried as aa - lo (lo from an fma, so exactly), k = round(aa / (2 ln2))
// comes from one fma with the 1.5 * 2^23 shift, aa - 2k ln2 is exact for
// the whole k (k 2ln2 in two parts), and e^(-r / 2), |r| <= ln2, is a
// degree-6 polynomial fitted in double (1.9e-8 relative); 2^-k by scale_down
// (k > 125 only for a > 13.1, where the result is below 1e-37).
template <class V>
inline typename V::R exp_neg_half_square(typename V::R a) {
  using R = typename V::R;
  // e^s's fitted coefficients times (-1/2)^degree.
  static constexpr float kExpNegHalf[] = {2.161911834264174e-05f, -0.0002617279242258519f, 0.002604266395792365f,
                                          -0.02083301730453968f,  0.12499997764825821f,    -0.5f,
                                          1.0f};
  const R shift = V::set1(12582912.0f);  // 1.5 * 2^23: adding it rounds to a whole number
  const R aa = V::mul(a, a);
  const R lo = V::fnmadd(a, a, aa);  // aa - a^2, exactly
  const R kb = V::fmadd(aa, V::set1(0.7213475108146667f), shift);
  const R k = V::sub(kb, shift);
  R r = V::fnmadd(k, V::set1(1.38671875f), aa);  // exact (|result| < 1.4 and k < 2^8)
  r = V::fnmadd(k, V::set1(-4.2438888e-4f), r);
  r = V::sub(r, lo);
  return V::scale_down(horner<V>(r, kExpNegHalf), k, kb);
}

// erfc(a / sqrt 2) / 2 = 1 - Phi(a) for a in [0, 14.5] (NaN-free), GELU's
// cheap tail: with t = 1 / (1 + p a), p = 0.26, the result is
// t R(t) e^(-a^2 / 2), R a degree-8 polynomial in t - 0.6048 fitted in double
// to 5.5e-8 relative on t in [0.2096, 1] (a in [0, 14.5]) with its
// coefficients rounded to float. One division, no refinement of t (its
// rounding costs up to 2.4e-7 relative). Results below FLT_MIN (a > 13.1)
// are within a few subnormal steps.
template <class V>
inline typename V::R half_erfc_fast(typename V::R a) {
  using R = typename V::R;
  static constexpr float kR[] = {0.030230779200792313f, -0.005222763400524855f, -0.08301810175180435f,
                                 -0.03438106179237366f, 0.18670150637626648f,   0.4235413670539856f,
                                 0.5017648339271545f,   0.4020709693431854f,    0.23269782960414886f};
  const R one = V::set1(1.0f);
  const R t = V::div(one, V::fmadd(a, V::set1(0.26f), one));
  const R poly = horner<V>(V::sub(t, V::set1(0.6048218011856079f)), kR);
  return V::mul(V::mul(t, poly), exp_neg_half_square<V>(a));
}

}  // namespace detail

// e^x.
template <class V>
inline typename V::R exp(typename V::R x) {
  const typename V::R xc = V::min(V::set1(89.0f), V::max(V::set1(-105.0f), x));
  return V::select(V::isnan(x), x, detail::exp_clamped<V>(xc));
}

// Natural logarithm: x = m 2^e with m in [sqrt(1/2), sqrt(2)); log(1 + f) for
// f = m - 1 as f - f^2 / 2 + f^3 P(f), P fitted in double (1.8e-9 absolute on
// the interval); e ln2 added in two parts. Subnormal x is scaled by 2^24 first.
template <class V>
inline typename V::R log(typename V::R x) {
  using R = typename V::R;
  static constexpr float kLog[] = {0.07149753891280014f,  -0.11571200728267382f, 0.1166151106826727f,
                                   -0.12411050683855496f, 0.14249936532899063f,  -0.16668480239506672f,
                                   0.20000707478394136f,  -0.24999989048734916f, 0.33333331190848126f};
  const R one = V::set1(1.0f);
  const auto tiny = V::lt(x, V::set1(1.17549435e-38f));
  const R xs = V::select(tiny, V::mul(x, V::set1(16777216.0f)), x);
  R e = V::sub(V::exponent(xs), V::select(tiny, V::set1(24.0f), V::set1(0.0f)));
  R m = V::mantissa(xs);
  const auto small = V::lt(m, V::set1(0.707106781186547524f));
  m = V::select(small, V::add(m, m), m);
  e = V::select(small, V::sub(e, one), e);
  const R f = V::sub(m, one);
  const R f2 = V::mul(f, f);
  R y = V::mul(V::mul(detail::horner<V>(f, kLog), f2), f);
  y = V::fmadd(e, V::set1(-2.12194440e-4f), y);
  y = V::fnmadd(f2, V::set1(0.5f), y);
  R r = V::add(f, y);
  r = V::fmadd(e, V::set1(0.693359375f), r);
  // Special values: x < 0 or NaN -> NaN, 0 -> -inf, +inf -> +inf.
  const R inf = V::set1(__builtin_inff());
  r = V::select(V::lt(x, V::set1(0.0f)), V::set1(__builtin_nanf("")), r);
  r = V::select(V::lt(V::abs(x), V::set1(1e-45f)), V::set1(-__builtin_inff()), r);
  r = V::select(V::gt(x, V::set1(3.40282347e38f)), inf, r);
  return V::select(V::isnan(x), x, r);
}

// Hyperbolic tangent: |x| < 0.625 by x + x^3 P(x^2) (P fitted in double,
// 6e-10 relative), otherwise 1 - 2 / (e^{2|x|} + 1) with the sign of x.
template <class V>
inline typename V::R tanh(typename V::R x) {
  using R = typename V::R;
  static constexpr float kTanh[] = {0.002295841259772223f,  -0.008346980492273521f, 0.02176996091673385f,
                                    -0.053959405908310124f, 0.13333304277861743f,   -0.3333333317785048f};
  const R ax = V::abs(x);
  const R x2 = V::mul(x, x);
  const R small = V::fmadd(V::mul(detail::horner<V>(x2, kTanh), x2), x, x);
  const R one = V::set1(1.0f);
  const R e = exp<V>(V::add(ax, ax));
  const R big = V::copysign(V::sub(one, V::div(V::set1(2.0f), V::add(e, one))), x);
  return V::select(V::lt(ax, V::set1(0.625f)), small, big);
}

// Logistic sigmoid 1 / (1 + e^-x), as e / (1 + e) with e = e^-|x| for x < 0 so
// that small results keep their relative accuracy (one division either way).
template <class V>
inline typename V::R sigmoid(typename V::R x) {
  using R = typename V::R;
  const R one = V::set1(1.0f);
  const R e = detail::exp_neg<V>(V::abs(x));
  return V::div(V::select(V::lt(x, V::set1(0.0f)), e, one), V::add(one, e));
}

// sigmoid with exp_neg's degree-6 polynomial, one fma fewer: 1.96 ulp at
// worst over VmathTest's sample where sigmoid reaches 1.82 (too near its
// 2-ulp bound to take it), for SWISH, whose x sigmoid(x) SwishFastBound holds
// to 4e-7 relative.
template <class V>
inline typename V::R sigmoid_fast(typename V::R x) {
  using R = typename V::R;
  const R one = V::set1(1.0f);
  const R e = detail::exp_neg<V, true>(V::abs(x));
  return V::div(V::select(V::lt(x, V::set1(0.0f)), e, one), V::add(one, e));
}

// Error function: |x| < 1 by x P(x^2) (P fitted in double, 1.4e-9 relative),
// its constant term in two floats so that the result is rounded about once;
// otherwise 1 - erfc(|x|) with the sign of x.
template <class V>
inline typename V::R erf(typename V::R x) {
  using R = typename V::R;
  static constexpr float kErfTail[] = {7.882497118974455e-05f, -0.0008018854995455118f, 0.005189311942990856f,
                                       -0.02685432879623289f,  0.11283597463492244f,    -0.3761262690358075f};
  constexpr float kC0 = 1.1283791658815026f;
  constexpr float kC0lo = static_cast<float>(1.1283791658815026 - static_cast<double>(kC0));
  const R ax = V::abs(x);
  const R x2 = V::mul(x, x);
  const R corr = V::fmadd(detail::horner<V>(x2, kErfTail), x2, V::set1(kC0lo));
  const R small = V::fmadd(x, V::set1(kC0), V::mul(x, corr));
  const R tail = detail::erfc_tail<V>(V::min(ax, V::set1(10.5f)), V::set1(0.0f));
  const R big = V::copysign(V::sub(V::set1(1.0f), tail), x);
  return V::select(V::lt(ax, V::set1(1.0f)), small, V::select(V::isnan(x), x, big));
}

// Standard normal CDF Phi(x) = (1 + erf(x / sqrt 2)) / 2, without the
// cancellation of that formula for negative x: with z = x / sqrt 2 (carried
// in two parts), Phi = erfc(-z) / 2 for z < 0 and 1 - erfc(z) / 2 otherwise,
// one branch-free path for every x.
template <class V>
inline typename V::R ncdf(typename V::R x) {
  using R = typename V::R;
  const R c = V::set1(0.707106769084930419921875f);  // 1/sqrt(2) rounded to float
  const R clo = V::set1(1.2101617104478969e-08f);    // 1/sqrt(2) - c
  const R z = V::mul(x, c);
  const R zlo = V::fmadd(x, clo, V::fmadd(x, c, V::sub(V::set1(0.0f), z)));  // x / sqrt 2 - z
  const R az = V::abs(z);
  // |z + zlo|^2 = az^2 + 2 z zlo to first order (0 where z is infinite).
  const R lim = V::set1(10.5f);
  const R z2lo = V::select(V::lt(az, lim), V::mul(V::mul(V::set1(-2.0f), z), zlo), V::set1(0.0f));
  const R tail = V::mul(V::set1(0.5f), detail::erfc_tail<V>(V::min(az, lim), z2lo));
  const R r = V::select(V::lt(z, V::set1(0.0f)), tail, V::sub(V::set1(1.0f), tail));
  return V::select(V::isnan(x), x, r);
}

// GELU's exact form x Phi(x) by the cheaper tail above, for GELU's CPU_OPT
// loops (vmath::ncdf stays held to 4 ulp): Phi = 1 - e for x >= 0, e for
// x < 0, e = erfc(|x| / sqrt 2) / 2 (0 in float beyond |x| = 14.5). Within
// 6e-7 relative of the exact x Phi(x) wherever that is at least 1e-37, and
// 30 subnormal steps (4.2e-44) below (GeluFastBound in vmath_test.cpp
// measures both over the whole float range). As x Phi(x) in any precision:
// GELU(-inf) = -inf * 0 = NaN (CPU_REF's and PyTorch's value too), +inf for
// +inf, NaN for NaN, -0 for -0.
template <class V>
inline typename V::R gelu_fast(typename V::R x) {
  using R = typename V::R;
  const R e = detail::half_erfc_fast<V>(V::min(V::abs(x), V::set1(14.5f)));  // a NaN: a = 14.5
  return V::mul(x, V::select(V::lt(x, V::set1(0.0f)), e, V::sub(V::set1(1.0f), e)));
}

// Phi(x) the same way, for GELU's backward (NaN in: an unspecified value).
template <class V>
inline typename V::R ncdf_fast(typename V::R x) {
  const typename V::R e = detail::half_erfc_fast<V>(V::min(V::abs(x), V::set1(14.5f)));
  return V::select(V::lt(x, V::set1(0.0f)), e, V::sub(V::set1(1.0f), e));
}

// The standard normal density e^(-x^2 / 2) / sqrt(2 pi) to 2e-7 relative
// (0 beyond |x| = 14.5, and for a NaN).
template <class V>
inline typename V::R npdf_fast(typename V::R x) {
  return V::mul(detail::exp_neg_half_square<V>(V::min(V::abs(x), V::set1(14.5f))),
                V::set1(0.398942280401432678f));
}

}  // namespace nnc::vmath
