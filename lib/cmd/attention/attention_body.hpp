// The CPU_OPT blocks of SCALED_DOT_PRODUCT_ATTENTION, written once against a
// vector type V (core/vmath.hpp) and a serial sgemm, and included by
// cpu_opt_avx512.cpp and cpu_opt_avx2.cpp inside their own namespaces (which
// define V, kSgemm). fp32 throughout; q, k, v, o, g may have any strides
// (the blocks copy what the products need into packed scratch).
//
// Forward, FlashAttention's scheme for one (b, h) and a block of at most kBq
// query rows: the rows of q (times scale) are copied once; for each block of
// kBk keys, S = Q Kᵀ (one sgemm), the mask added and hidden keys set to
// -inf, each row's running maximum m and sum l updated, the row of the
// accumulator rescaled by exp(m_old - m_new), and acc += exp(S - m) V (one
// sgemm). o = acc / l, lse = m + log l. Nothing of size Sq x Sk is stored.
// Backward, per (b, kv head) (query heads that share it run in turn, so dk
// and dv have one writer): with P = exp(scale Q Kᵀ + mask - lse) recomputed
// block by block, dV += Pᵀ dO, dP = dO Vᵀ, dS = P (dP - rowsum(dO o)) scale,
// dQ += dS K, dK += dSᵀ Q — six sgemms per block pair.

constexpr int kBq = kQueryRows;
constexpr int kBk = 128;

inline float hmax(const float* x, int n) {
  using R = typename V::R;
  int j = 0;
  float m = -INFINITY;
  if (n >= V::N) {
    R acc = V::load(x);
    for (j = V::N; j + V::N <= n; j += V::N) acc = V::max(V::load(x + j), acc);
    alignas(64) float t[V::N];
    V::store(t, acc);
    for (int i = 0; i < V::N; i++) m = std::max(m, t[i]);
  }
  for (; j < n; j++) m = std::max(m, x[j]);
  return m;
}

// x[j] = exp(x[j] - m), returns the sum.
inline float exp_sum(float* x, int n, float m) {
  using R = typename V::R;
  const R mm = V::set1(m);
  R acc = V::set1(0.0f);
  int j = 0;
  for (; j + V::N <= n; j += V::N) {
    const R e = vmath::exp<V>(V::sub(V::load(x + j), mm));
    V::store(x + j, e);
    acc = V::add(acc, e);
  }
  alignas(64) float t[V::N];
  V::store(t, acc);
  float s = 0;
  for (int i = 0; i < V::N; i++) s += t[i];
  for (; j < n; j++) s += x[j] = std::exp(x[j] - m);
  return s;
}

inline void scale_row(float* x, int n, float a) {
  using R = typename V::R;
  const R aa = V::set1(a);
  int j = 0;
  for (; j + V::N <= n; j += V::N) V::store(x + j, V::mul(V::load(x + j), aa));
  for (; j < n; j++) x[j] *= a;
}

inline const float* fp(const View4& v) { return reinterpret_cast<const float*>(v.data); }
inline float* fpw(const View4& v) { return reinterpret_cast<float*>(v.data); }

// Rows [i0, i1) of (b, h) of `src` (d extent n) into dst (rows n apart), times a.
inline void gather_rows(const View4& src, int b, int h, int i0, int i1, int n, float a, float* dst) {
  const float* base = fp(src);
  for (int i = i0; i < i1; i++) {
    const float* s = base + src.off(b, i, h, 0);
    float* d = dst + static_cast<size_t>(i - i0) * n;
    if (src.sd == 1)
      for (int x = 0; x < n; x++) d[x] = s[x] * a;
    else
      for (int x = 0; x < n; x++) d[x] = s[x * src.sd] * a;
  }
}

// S rows [i0, i1) x keys [j0, j0 + kn): add the mask, hide keys causality hides.
inline void mask_block(const Problem& p, int b, int h, int i0, int i1, int j0, int kn, float* S) {
  for (int i = i0; i < i1; i++) {
    float* row = S + static_cast<size_t>(i - i0) * kBk;
    if (p.mask.data) {
      const float* m = fp(p.mask) + b * p.mask.sb + h * p.mask.sh + i * p.mask.ss + j0 * p.mask.sd;
      if (p.mask.sd == 1)
        for (int j = 0; j < kn; j++) row[j] += m[j];
      else
        for (int j = 0; j < kn; j++) row[j] += m[j * p.mask.sd];
    }
    if (p.causal) {
      const int last = i + p.Sk - p.Sq;  // the last visible key
      for (int j = std::max(0, last + 1 - j0); j < kn; j++) row[j] = -INFINITY;
    }
  }
}

// The keys a block of query rows ending before i1 can see.
inline int key_end(const Problem& p, int i1) {
  return p.causal ? std::max(0, std::min(p.Sk, i1 - 1 + p.Sk - p.Sq + 1)) : p.Sk;
}

inline size_t forward_scratch(const Problem& p) {
  return static_cast<size_t>(kBq) * (p.D + kBk + p.Dv + 2) + 64;
}

inline bool forward(const Problem& p, int b, int h, int i0, int i1, float* scratch) {
  const int hk = h / (p.H / p.Hk);
  const int rq = i1 - i0;
  float* Q = scratch;
  float* S = Q + static_cast<size_t>(kBq) * p.D;
  float* acc = S + static_cast<size_t>(kBq) * kBk;
  float* m = acc + static_cast<size_t>(kBq) * p.Dv;
  float* l = m + kBq;
  gather_rows(p.q, b, h, i0, i1, p.D, p.scale, Q);
  std::fill(acc, acc + static_cast<size_t>(rq) * p.Dv, 0.0f);
  std::fill(m, m + rq, -INFINITY);
  std::fill(l, l + rq, 0.0f);
  const int kend = key_end(p, i1);
  for (int j0 = 0; j0 < kend; j0 += kBk) {
    const int kn = std::min(kBk, kend - j0);
    gemm::Sgemm s;
    s.m = rq, s.n = kn, s.k = p.D;
    s.a = Q, s.ars = p.D, s.acs = 1;
    s.b = fp(p.k) + p.k.off(b, j0, hk, 0), s.brs = p.k.sd, s.bcs = p.k.ss;
    s.c = S, s.ldc = kBk;
    if (!kSgemm(s)) return false;
    mask_block(p, b, h, i0, i1, j0, kn, S);
    for (int r = 0; r < rq; r++) {
      float* row = S + static_cast<size_t>(r) * kBk;
      const float mx = std::max(m[r], hmax(row, kn));
      if (mx == -INFINITY) {  // nothing visible yet
        std::fill(row, row + kn, 0.0f);
        continue;
      }
      const float alpha = std::exp(m[r] - mx);
      l[r] = l[r] * alpha + exp_sum(row, kn, mx);
      if (alpha != 1.0f) scale_row(acc + static_cast<size_t>(r) * p.Dv, p.Dv, alpha);
      m[r] = mx;
    }
    gemm::Sgemm pv;
    pv.m = rq, pv.n = p.Dv, pv.k = kn;
    pv.a = S, pv.ars = kBk, pv.acs = 1;
    pv.b = fp(p.v) + p.v.off(b, j0, hk, 0), pv.brs = p.v.ss, pv.bcs = p.v.sd;
    pv.beta = 1;
    pv.c = acc, pv.ldc = p.Dv;
    if (!kSgemm(pv)) return false;
  }
  for (int r = 0; r < rq; r++) {
    const float inv = l[r] > 0 ? 1.0f / l[r] : 0.0f;
    const float* a = acc + static_cast<size_t>(r) * p.Dv;
    if (p.o.data) {
      float* o = fpw(p.o) + p.o.off(b, i0 + r, h, 0);
      for (int d = 0; d < p.Dv; d++) o[d * p.o.sd] = a[d] * inv;
    }
    if (p.lse.data) {
      const float v = l[r] > 0 ? m[r] + std::log(l[r]) : -INFINITY;
      float* t = fpw(p.lse) + p.lse.sb * b + p.lse.sh * h + p.lse.ss * (i0 + r);
      *t = v;
    }
  }
  return true;
}

inline size_t backward_scratch(const Problem& p) {
  return static_cast<size_t>(p.Sk) * (p.D + p.Dv) +
         static_cast<size_t>(kBq) * (p.D + p.Dv + p.D + 2 * kBk + 2) + 64;
}

inline bool backward(const Problem& p, const View4& g, int b, int hk, float* scratch) {
  float* dK = scratch;
  float* dV = dK + static_cast<size_t>(p.Sk) * p.D;
  float* Q = dV + static_cast<size_t>(p.Sk) * p.Dv;
  float* dO = Q + static_cast<size_t>(kBq) * p.D;
  float* dQ = dO + static_cast<size_t>(kBq) * p.Dv;
  float* P = dQ + static_cast<size_t>(kBq) * p.D;
  float* dP = P + static_cast<size_t>(kBq) * kBk;
  float* lse = dP + static_cast<size_t>(kBq) * kBk;
  float* di = lse + kBq;
  std::fill(dK, dK + static_cast<size_t>(p.Sk) * p.D, 0.0f);
  std::fill(dV, dV + static_cast<size_t>(p.Sk) * p.Dv, 0.0f);
  const int group = p.H / p.Hk;
  for (int h = hk * group; h < (hk + 1) * group; h++)
    for (int i0 = 0; i0 < p.Sq; i0 += kBq) {
      const int i1 = std::min(p.Sq, i0 + kBq), rq = i1 - i0;
      gather_rows(p.q, b, h, i0, i1, p.D, 1.0f, Q);
      gather_rows(g, b, h, i0, i1, p.Dv, 1.0f, dO);
      std::fill(dQ, dQ + static_cast<size_t>(rq) * p.D, 0.0f);
      for (int r = 0; r < rq; r++) {
        lse[r] = fp(p.lse)[p.lse.sb * b + p.lse.sh * h + p.lse.ss * (i0 + r)];
        const float* o = fp(p.o) + p.o.off(b, i0 + r, h, 0);
        const float* d = dO + static_cast<size_t>(r) * p.Dv;
        float s = 0;
        for (int x = 0; x < p.Dv; x++) s += d[x] * o[x * p.o.sd];
        di[r] = s;
      }
      const int kend = key_end(p, i1);
      for (int j0 = 0; j0 < kend; j0 += kBk) {
        const int kn = std::min(kBk, kend - j0);
        const float* K = fp(p.k) + p.k.off(b, j0, hk, 0);
        const float* Vv = fp(p.v) + p.v.off(b, j0, hk, 0);
        gemm::Sgemm s;  // P = Q Kᵀ (scaled below)
        s.m = rq, s.n = kn, s.k = p.D;
        s.a = Q, s.ars = p.D, s.acs = 1;
        s.b = K, s.brs = p.k.sd, s.bcs = p.k.ss;
        s.c = P, s.ldc = kBk;
        if (!kSgemm(s)) return false;
        for (int r = 0; r < rq; r++) scale_row(P + static_cast<size_t>(r) * kBk, kn, p.scale);
        mask_block(p, b, h, i0, i1, j0, kn, P);
        for (int r = 0; r < rq; r++) {
          float* row = P + static_cast<size_t>(r) * kBk;
          if (lse[r] == -INFINITY)
            std::fill(row, row + kn, 0.0f);
          else
            exp_sum(row, kn, lse[r]);
        }
        gemm::Sgemm a;  // dP = dO Vᵀ
        a.m = rq, a.n = kn, a.k = p.Dv;
        a.a = dO, a.ars = p.Dv, a.acs = 1;
        a.b = Vv, a.brs = p.v.sd, a.bcs = p.v.ss;
        a.c = dP, a.ldc = kBk;
        if (!kSgemm(a)) return false;
        gemm::Sgemm c;  // dV += Pᵀ dO
        c.m = kn, c.n = p.Dv, c.k = rq;
        c.a = P, c.ars = 1, c.acs = kBk;
        c.b = dO, c.brs = p.Dv, c.bcs = 1;
        c.beta = 1;
        c.c = dV + static_cast<size_t>(j0) * p.Dv, c.ldc = p.Dv;
        if (!kSgemm(c)) return false;
        for (int r = 0; r < rq; r++) {  // dS = P (dP - di) scale, into dP
          float* d = dP + static_cast<size_t>(r) * kBk;
          const float* pr = P + static_cast<size_t>(r) * kBk;
          using R = typename V::R;
          const R dd = V::set1(di[r]), sc = V::set1(p.scale);
          int j = 0;
          for (; j + V::N <= kn; j += V::N)
            V::store(d + j, V::mul(V::mul(V::load(pr + j), V::sub(V::load(d + j), dd)), sc));
          for (; j < kn; j++) d[j] = pr[j] * (d[j] - di[r]) * p.scale;
        }
        gemm::Sgemm e;  // dQ += dS K
        e.m = rq, e.n = p.D, e.k = kn;
        e.a = dP, e.ars = kBk, e.acs = 1;
        e.b = K, e.brs = p.k.ss, e.bcs = p.k.sd;
        e.beta = 1;
        e.c = dQ, e.ldc = p.D;
        if (!kSgemm(e)) return false;
        gemm::Sgemm f;  // dK += dSᵀ Q
        f.m = kn, f.n = p.D, f.k = rq;
        f.a = dP, f.ars = 1, f.acs = kBk;
        f.b = Q, f.brs = p.D, f.bcs = 1;
        f.beta = 1;
        f.c = dK + static_cast<size_t>(j0) * p.D, f.ldc = p.D;
        if (!kSgemm(f)) return false;
      }
      if (p.dq.data)
        for (int r = 0; r < rq; r++) {
          float* t = fpw(p.dq) + p.dq.off(b, i0 + r, h, 0);
          const float* s = dQ + static_cast<size_t>(r) * p.D;
          for (int d = 0; d < p.D; d++) t[d * p.dq.sd] = s[d];
        }
    }
  for (int j = 0; j < p.Sk; j++) {
    if (p.dk.data) {
      float* t = fpw(p.dk) + p.dk.off(b, j, hk, 0);
      for (int d = 0; d < p.D; d++) t[d * p.dk.sd] = dK[static_cast<size_t>(j) * p.D + d];
    }
    if (p.dv.data) {
      float* t = fpw(p.dv) + p.dv.off(b, j, hk, 0);
      for (int d = 0; d < p.Dv; d++) t[d * p.dv.sd] = dV[static_cast<size_t>(j) * p.Dv + d];
    }
  }
  return true;
}

inline const Body kBody = {forward, forward_scratch, backward, backward_scratch};
