// The probability losses' fp32 row loops, written once against a vmath vector
// type V and included by each instruction-set file *inside its own namespace*
// after `using V = ...;` (rows_avx2.cpp, rows_avx512.cpp, and cpu_opt.cpp with
// vmath::Scalar). Defines one `const RowLoops kRowTable` (loss.hpp says what
// each loop computes). Whole vectors go through V, the last n % V::N
// elements through vmath::Scalar: the same algorithms, so a row's values do
// not depend on where it is cut. Sums are kept in float lanes and added up in
// double at the end of the row.

using S = vmath::Scalar;

// log(p) read as at least -100 (loss.hpp's kLogFloor); NaN stays NaN.
template <class W>
inline typename W::R clog(typename W::R p) {
  return W::max(W::set1(static_cast<float>(kLogFloor)), vmath::log<W>(p));
}

// v, or 0 where the weight t is exactly zero (the reference skips those
// terms: 0 times a NaN or an infinite log stays out of the sum).
template <class W>
inline typename W::R unless_zero(typename W::R t, typename W::R v) {
  return W::select(W::lt(W::abs(t), W::set1(std::numeric_limits<float>::min())), W::set1(0.0f), v);
}

// log(1 + e) for e in [0, 1] to a few ulp: log(u) e / (u - 1) with u = 1 + e
// (exact where u rounds to 1: the result is e).
template <class W>
inline typename W::R log1p_unit(typename W::R e) {
  const typename W::R one = W::set1(1.0f), u = W::add(one, e);
  return W::select(W::gt(u, one), W::mul(vmath::log<W>(u), W::div(e, W::sub(u, one))), e);
}

// The sum of a vector's lanes, in double.
template <class W>
inline double lane_sum(typename W::R v) {
  alignas(64) float lanes[W::N];
  W::store(lanes, v);
  double s = 0;
  for (int i = 0; i < W::N; i++) s += lanes[i];
  return s;
}

// Calls f.template operator()<W>(j) for every block of one row: W = V over
// whole vectors, then W = S one element at a time.
template <class F>
inline void blocks(int n, const F& f) {
  int j = 0;
  for (; j + V::N <= n; j += V::N) f.template operator()<V>(j);
  for (; j < n; j++) f.template operator()<S>(j);
}

// sum_j f(j) over a row; f returns a W::R of terms.
template <class F>
inline double row_sum(int n, const F& f) {
  typename V::R acc = V::set1(0.0f);
  double tail = 0;
  blocks(n, [&]<class W>(int j) {
    if constexpr (W::N == V::N && V::N > 1)
      acc = V::add(acc, f.template operator()<V>(j));
    else
      tail += f.template operator()<S>(j);
  });
  return lane_sum<V>(acc) + tail;
}

double bce_forward(const float* x, const float* y, int n, float w) {
  return -row_sum(n, [&]<class W>(int j) {
    const typename W::R xv = W::load(x + j), yv = W::load(y + j), one = W::set1(1.0f);
    const typename W::R omy = W::sub(one, yv);
    const typename W::R a = unless_zero<W>(yv, W::mul(W::mul(W::set1(w), yv), clog<W>(xv)));
    const typename W::R b = unless_zero<W>(omy, W::mul(omy, clog<W>(W::sub(one, xv))));
    return W::add(a, b);
  });
}

void bce_backward(const float* x, const float* y, float* dx, float* dy, int n, float g, float w) {
  blocks(n, [&]<class W>(int j) {
    const typename W::R xv = W::load(x + j), yv = W::load(y + j), one = W::set1(1.0f), wv = W::set1(w),
                        gv = W::set1(g), floor = W::set1(static_cast<float>(kDivFloor));
    const typename W::R omx = W::sub(one, xv);
    if (dx) {
      const typename W::R pos = W::div(W::mul(wv, yv), W::max(floor, xv));
      const typename W::R neg = W::div(W::sub(one, yv), W::max(floor, omx));
      W::store(dx + j, W::mul(gv, W::sub(neg, pos)));
    }
    if (dy) W::store(dy + j, W::mul(gv, W::sub(clog<W>(omx), W::mul(wv, clog<W>(xv)))));
  });
}

// e = exp(-|z|), shared by softplus(±z) = max(±z, 0) + log1p(e) and the sigmoid.
template <class W>
struct Logit {
  typename W::R z, e, l;  // l = log1p(e)
  explicit Logit(typename W::R zv) : z(zv) {
    e = vmath::exp<W>(W::sub(W::set1(0.0f), W::abs(z)));
    l = log1p_unit<W>(e);
  }
  typename W::R softplus() const { return W::add(W::max(z, W::set1(0.0f)), l); }
  typename W::R softplus_neg() const { return W::add(W::max(W::sub(W::set1(0.0f), z), W::set1(0.0f)), l); }
  typename W::R sigmoid() const {
    const typename W::R one = W::set1(1.0f);
    return W::div(W::select(W::lt(z, W::set1(0.0f)), e, one), W::add(one, e));
  }
};

double sbce_forward(const float* z, const float* y, float* s, int n, float w) {
  return row_sum(n, [&]<class W>(int j) {
    const Logit<W> t(W::load(z + j));
    const typename W::R yv = W::load(y + j);
    if (s) W::store(s + j, t.sigmoid());
    const typename W::R pos = W::mul(W::mul(W::set1(w), yv), t.softplus_neg());
    return W::fmadd(W::sub(W::set1(1.0f), yv), t.softplus(), pos);
  });
}

void sbce_backward(const float* z, const float* s, const float* y, const float* gs, float* dz, float* dy, int n,
                   float g, float w) {
  blocks(n, [&]<class W>(int j) {
    const typename W::R yv = W::load(y + j), one = W::set1(1.0f), wv = W::set1(w), gv = W::set1(g);
    if (z) {
      const Logit<W> t(W::load(z + j));
      if (dz) {
        const typename W::R sv = t.sigmoid(), wy = W::mul(wv, yv);
        typename W::R d = W::mul(gv, W::sub(W::mul(sv, W::sub(W::add(wy, one), yv)), wy));
        if (gs) d = W::fmadd(W::load(gs + j), W::mul(sv, W::sub(one, sv)), d);
        W::store(dz + j, d);
      }
      if (dy) W::store(dy + j, W::mul(gv, W::sub(W::mul(wv, t.softplus_neg()), t.softplus())));
      return;
    }
    const typename W::R sv = W::load(s + j), wy = W::mul(wv, yv);
    typename W::R d = W::mul(gv, W::sub(W::mul(sv, W::sub(W::add(wy, one), yv)), wy));
    if (gs) d = W::fmadd(W::load(gs + j), W::mul(sv, W::sub(one, sv)), d);
    W::store(dz + j, d);
  });
}

// The targets t_j: trim0 + (trim1 - trim0) l_j from dense labels, or trim0
// everywhere without them (the caller handles the labelled class).
template <class W>
inline typename W::R targets(const float* l, int j, float trim0, float trim1) {
  return l ? W::fmadd(W::set1(trim1 - trim0), W::load(l + j), W::set1(trim0)) : W::set1(trim0);
}

double cce_forward(const float* p, const float* l, int n, float trim0, float trim1) {
  return -row_sum(n, [&]<class W>(int j) {
    const typename W::R t = targets<W>(l, j, trim0, trim1);
    return unless_zero<W>(t, W::mul(t, clog<W>(W::load(p + j))));
  });
}

void cce_backward(const float* p, const float* l, float* dp, float* dl, int n, float g, float trim0, float trim1) {
  blocks(n, [&]<class W>(int j) {
    const typename W::R pv = W::load(p + j);
    if (dp) {
      const typename W::R t = targets<W>(l, j, trim0, trim1);
      W::store(dp + j, W::div(W::mul(W::set1(-g), t), W::max(W::set1(static_cast<float>(kDivFloor)), pv)));
    }
    if (dl) W::store(dl + j, W::mul(W::set1(-g * (trim1 - trim0)), clog<W>(pv)));
  });
}

const RowLoops kRowTable{bce_forward, bce_backward, sbce_forward, sbce_backward, cce_forward, cce_backward};
