// The activation family's contiguous fp32 loops, written once against a
// vmath vector type V and included by each ISA file *inside its own
// namespace* after `using V = ...;` (cpu_opt_avx2.cpp, cpu_opt_avx512.cpp,
// and cpu_opt.cpp with vmath::Scalar). Defines one `const Loops kTable`.
// Tails go through masked loads and stores, so any length is one loop.

// Runs of at least this many elements whose output is not also an input write
// it with non-temporal stores: a large output is not read back soon, and
// streaming it saves the read of each line before its write (a quarter to a
// third of the traffic of these memory-bound loops).
constexpr size_t kStreamFrom = nnc::kStreamFloorBytes / sizeof(float);

// Every loop below is flattened: map_out calls its element function from six
// places, and GCC then keeps a large one (sigmoid, tanh, ncdf passed by
// pointer) out of line, a call per register that reloads every constant
// (SIGMOID forward on AVX2 spent two thirds of its time in that call).
#ifndef NNC_ACT_LOOP
#define NNC_ACT_LOOP __attribute__((flatten))
#endif

// out[i] = f(i) for i in [0, n): vectors of N with masked tails; when `stream`,
// the first lanes up to out's register alignment go through a masked store
// and the aligned body through streamed stores.
template <class F>
inline void map_out(float* out, size_t n, bool stream, F f) {
  size_t i = 0;
  if (stream) {
    const size_t align = sizeof(float) * V::N;
    const size_t mis = reinterpret_cast<uintptr_t>(out) % align;
    if (mis % sizeof(float) == 0 && mis != 0) {
      const size_t head = std::min(n, (align - mis) / sizeof(float));
      V::store_tail(out, f(size_t{0}, static_cast<int>(head)), static_cast<int>(head));
      i = head;
    }
    if (reinterpret_cast<uintptr_t>(out + i) % align == 0) {
      // Both halves of a 64-byte line (AVX2) go out back to back: with a long
      // computation between them, the line's write-combining buffer may be
      // flushed half full, and a partial line costs the memory a read. (SWISH
      // forward, 3.2M floats, one thread: 1.072 -> 1.050 ms.)
      if (V::N * sizeof(float) < 64 && reinterpret_cast<uintptr_t>(out + i) % 64 != 0 && i + V::N <= n) {
        V::stream(out + i, f(i, V::N));
        i += V::N;
      }
      for (; i + 2 * V::N <= n; i += 2 * V::N) {
        const V::R a = f(i, V::N), b = f(i + V::N, V::N);
        V::stream(out + i, a);
        V::stream(out + i + V::N, b);
      }
      for (; i + V::N <= n; i += V::N) V::stream(out + i, f(i, V::N));
    }
  }
  for (; i + 2 * V::N <= n; i += 2 * V::N) {
    const V::R a = f(i, V::N), b = f(i + V::N, V::N);
    V::store(out + i, a);
    V::store(out + i + V::N, b);
  }
  for (; i + V::N <= n; i += V::N) V::store(out + i, f(i, V::N));
  if (i < n) {
    const int k = static_cast<int>(n - i);
    V::store_tail(out + i, f(i, k), k);
  }
}

// Lanes [i, i + k) of p (k <= N; the rest 0).
inline V::R lanes(const float* p, size_t i, int k) { return k == V::N ? V::load(p + i) : V::load_tail(p + i, k, 0.0f); }

template <class F>
inline void map1(const float* x, float* y, size_t n, F f) {
  map_out(y, n, n >= kStreamFrom && y != x, [&](size_t i, int k) { return f(lanes(x, i, k)); });
}

template <class F>
inline void map2(const float* g, const float* t, float* dx, size_t n, F f) {
  map_out(dx, n, n >= kStreamFrom && dx != g && dx != t,
          [&](size_t i, int k) { return f(lanes(g, i, k), lanes(t, i, k)); });
}

template <class F>
inline void map3(const float* g, const float* x, const float* y, float* dx, size_t n, F f) {
  map_out(dx, n, n >= kStreamFrom && dx != g && dx != x && dx != y,
          [&](size_t i, int k) { return f(lanes(g, i, k), lanes(x, i, k), lanes(y, i, k)); });
}

inline V::R zero() { return V::set1(0.0f); }
inline V::R one() { return V::set1(1.0f); }

// max(x, 0) with NaN kept (max gives its second operand for a NaN).
NNC_ACT_LOOP void relu_f(const float* x, float* y, size_t n, float) {
  map1(x, y, n, [](V::R v) { return V::max(zero(), v); });
}
NNC_ACT_LOOP void relu_b(const float* g, const float* t, float* dx, size_t n, float) {
  map2(g, t, dx, n, [](V::R gv, V::R tv) { return V::select(V::gt(tv, zero()), V::opaque(gv), zero()); });
}
NNC_ACT_LOOP void leaky_f(const float* x, float* y, size_t n, float a) {
  const V::R s = V::set1(a);
  map1(x, y, n, [s](V::R v) { return V::select(V::gt(v, zero()), v, V::mul(v, s)); });
}
NNC_ACT_LOOP void leaky_b(const float* g, const float* t, float* dx, size_t n, float a) {
  const V::R s = V::set1(a);
  map2(g, t, dx, n, [s](V::R gv, V::R tv) { return V::select(V::gt(tv, zero()), gv, V::mul(gv, s)); });
}
NNC_ACT_LOOP void sigmoid_f(const float* x, float* y, size_t n, float) { map1(x, y, n, vmath::sigmoid<V>); }
NNC_ACT_LOOP void sigmoid_b(const float* g, const float* t, float* dx, size_t n, float) {
  map2(g, t, dx, n, [](V::R gv, V::R yv) { return V::mul(V::mul(gv, yv), V::sub(one(), yv)); });
}
NNC_ACT_LOOP void tanh_f(const float* x, float* y, size_t n, float) { map1(x, y, n, vmath::tanh<V>); }
NNC_ACT_LOOP void tanh_b(const float* g, const float* t, float* dx, size_t n, float) {
  map2(g, t, dx, n, [](V::R gv, V::R yv) { return V::mul(gv, V::mul(V::sub(one(), yv), V::add(one(), yv))); });
}
// x Phi(x), by GELU's own cheaper Phi (vmath::gelu_fast: 6e-7 relative, where
// vmath::ncdf is held to 4 ulp, at under half the cost).
NNC_ACT_LOOP void gelu_f(const float* x, float* y, size_t n, float) { map1(x, y, n, vmath::gelu_fast<V>); }
// Phi(x) + x phi(x), phi(x) = exp(-x^2 / 2) / sqrt(2 pi). A NaN x gives NaN
// through x phi; x = +-inf gives inf * 0 = NaN, as CPU_REF does.
NNC_ACT_LOOP void gelu_b(const float* g, const float* t, float* dx, size_t n, float) {
  map2(g, t, dx, n, [](V::R gv, V::R xv) {
    return V::mul(gv, V::fmadd(xv, vmath::npdf_fast<V>(xv), vmath::ncdf_fast<V>(xv)));
  });
}
// 0.5 x (1 + tanh u) = x sigmoid(2u), u = k0 (x + k1 x^3): no cancellation for negative u.
inline V::R gelu_tanh_2u(V::R x) {
  const V::R x2 = V::mul(x, x);
  return V::mul(V::mul(x, V::set1(static_cast<float>(2 * kGeluK0))),
                V::fmadd(x2, V::set1(static_cast<float>(kGeluK1)), one()));
}
NNC_ACT_LOOP void gelu_tanh_f(const float* x, float* y, size_t n, float) {
  map1(x, y, n, [](V::R v) { return V::mul(v, vmath::sigmoid<V>(gelu_tanh_2u(v))); });
}
// s + 2 x s (1 - s) du/dx, s = sigmoid(2u), du/dx = k0 (1 + 3 k1 x^2). Beyond
// |x| = 20 the derivative is s (0 or 1) to the last bit; clamping there keeps
// x^2 finite (NaN passes through the clamp).
NNC_ACT_LOOP void gelu_tanh_b(const float* g, const float* t, float* dx, size_t n, float) {
  map2(g, t, dx, n, [](V::R gv, V::R x) {
    const V::R xv = V::min(V::set1(20.0f), V::max(V::set1(-20.0f), x));
    const V::R s = vmath::sigmoid<V>(gelu_tanh_2u(xv));
    const V::R du2 = V::mul(V::set1(static_cast<float>(2 * kGeluK0)),
                            V::fmadd(V::mul(xv, xv), V::set1(static_cast<float>(3 * kGeluK1)), one()));
    return V::mul(gv, V::fmadd(V::mul(V::mul(xv, s), V::sub(one(), s)), du2, s));
  });
}
NNC_ACT_LOOP void swish_f(const float* x, float* y, size_t n, float) {
  map1(x, y, n, [](V::R v) { return V::mul(v, vmath::sigmoid_fast<V>(v)); });
}
// s (1 + x (1 - s)).
NNC_ACT_LOOP void swish_b(const float* g, const float* t, float* dx, size_t n, float) {
  map2(g, t, dx, n, [](V::R gv, V::R xv) {
    const V::R s = vmath::sigmoid<V>(xv);
    return V::mul(gv, V::mul(s, V::fmadd(xv, V::sub(one(), s), one())));
  });
}

// The backward of GELU and SWISH from x and their forward output y = x F(x),
// F = Phi (GELU), sigmoid(2u) (GELU tanh form), sigmoid (SWISH): F = y / x
// costs a division where recomputing it costs an exp and a division (and,
// for Phi, a polynomial more). Where the quotient is unreliable, F is exact
// anyway: 1/2 for |x| < 1e-30 (F(0) = 1/2 to float precision there), 0 or 1
// for |x| > 1e30 and infinities.
// For a NaN x the quotient is NaN, and so is every caller's result (as it
// must be): no lane needs setting aside for it.
inline V::R ratio(V::R x, V::R y) {
  const V::R ax = V::abs(x);
  const V::R big = V::select(V::gt(x, zero()), one(), zero());
  V::R f = V::select(V::lt(ax, V::set1(1e-30f)), V::set1(0.5f), V::div(y, x));
  return V::select(V::gt(ax, V::set1(1e30f)), big, f);
}
NNC_ACT_LOOP void gelu_bxy(const float* g, const float* x, const float* y, float* dx, size_t n, float) {
  map3(g, x, y, dx, n, [](V::R gv, V::R xv, V::R yv) {
    return V::mul(gv, V::fmadd(xv, vmath::npdf_fast<V>(xv), ratio(xv, yv)));
  });
}
NNC_ACT_LOOP void gelu_tanh_bxy(const float* g, const float* x, const float* y, float* dx, size_t n, float) {
  map3(g, x, y, dx, n, [](V::R gv, V::R xin, V::R yv) {
    const V::R s = ratio(xin, yv);
    const V::R xv = V::min(V::set1(20.0f), V::max(V::set1(-20.0f), xin));
    const V::R du2 = V::mul(V::set1(static_cast<float>(2 * kGeluK0)),
                            V::fmadd(V::mul(xv, xv), V::set1(static_cast<float>(3 * kGeluK1)), one()));
    return V::mul(gv, V::fmadd(V::mul(V::mul(xv, s), V::sub(one(), s)), du2, s));
  });
}
NNC_ACT_LOOP void swish_bxy(const float* g, const float* x, const float* y, float* dx, size_t n, float) {
  map3(g, x, y, dx, n, [](V::R gv, V::R xv, V::R yv) {
    const V::R s = ratio(xv, yv);
    return V::mul(gv, V::mul(s, V::fmadd(xv, V::sub(one(), s), one())));
  });
}

NNC_ACT_LOOP void exp_a(const float* x, float* y, size_t n) { map1(x, y, n, vmath::exp<V>); }
NNC_ACT_LOOP void log_a(const float* x, float* y, size_t n) { map1(x, y, n, vmath::log<V>); }
NNC_ACT_LOOP void tanh_a(const float* x, float* y, size_t n) { map1(x, y, n, vmath::tanh<V>); }
NNC_ACT_LOOP void sigmoid_a(const float* x, float* y, size_t n) { map1(x, y, n, vmath::sigmoid<V>); }
NNC_ACT_LOOP void erf_a(const float* x, float* y, size_t n) { map1(x, y, n, vmath::erf<V>); }
NNC_ACT_LOOP void ncdf_a(const float* x, float* y, size_t n) { map1(x, y, n, vmath::ncdf<V>); }

constexpr Loops kTable = {
    kTableName,
    {relu_f, leaky_f, sigmoid_f, tanh_f, gelu_f, gelu_tanh_f, swish_f},
    {relu_b, leaky_b, sigmoid_b, tanh_b, gelu_b, gelu_tanh_b, swish_b},
    {nullptr, nullptr, nullptr, nullptr, gelu_bxy, gelu_tanh_bxy, swish_bxy},
    {exp_a, log_a, tanh_a, sigmoid_a, erf_a, ncdf_a},
};
