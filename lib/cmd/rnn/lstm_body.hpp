// The fused element-wise parts of an LSTM step (fp32), written once against
// the vector type V of core/vmath.hpp and compiled per instruction set:
// cpu_opt.cpp (Scalar), cpu_opt_avx2.cpp and cpu_opt_avx512.cpp include this
// inside their own namespace (lstm.hpp declares the functions). One pass over
// the four gate blocks of hidden units [u0, u1) of each row: the activations,
// the cell update and o tanh(c) (forward), or the gates' pre-activation
// gradients and the cell gradient carried back (backward).

void forward_cell(int H, int u0, int u1, size_t b0, size_t b1, const unsigned char* valid, float* pre, const float* gh,
                  int ldg, int gstride, const float* c_prev, float* c_out, float* m_out, const float* h_prev) {
  using R = typename V::R;
  for (size_t b = b0; b < b1; b++) {
    float* const gi = pre + b * 4 * H;
    const float* const cp = c_prev + b * H;
    float* const cn = c_out + b * H;
    float* const m = m_out + b * H;
    if (valid && !valid[b]) {
      for (int g = 0; g < 4; g++)
        for (int j = u0; j < u1; j++) gi[g * H + j] = 0;
      for (int j = u0; j < u1; j++) cn[j] = cp[j], m[j] = h_prev ? h_prev[b * H + j] : 0;
      continue;
    }
    const float* const a = gh ? gh + b * ldg - u0 : nullptr;  // gate g of unit j at a[g * gstride + j]
    for (int j = u0; j < u1; j += V::N) {
      const int k = u1 - j < V::N ? u1 - j : V::N;
      auto ld = [&](const float* p) { return k == V::N ? V::load(p) : V::load_tail(p, k); };
      auto st = [&](float* p, R v) {
        if (k == V::N)
          V::store(p, v);
        else
          V::store_tail(p, v, k);
      };
      R pi = ld(gi + j), pf = ld(gi + H + j), pg = ld(gi + 2 * H + j), po = ld(gi + 3 * H + j);
      if (a) {
        pi = V::add(pi, ld(a + j));
        pf = V::add(pf, ld(a + gstride + j));
        pg = V::add(pg, ld(a + 2 * gstride + j));
        po = V::add(po, ld(a + 3 * gstride + j));
      }
      const R i = vmath::sigmoid<V>(pi), f = vmath::sigmoid<V>(pf), g = vmath::tanh<V>(pg), o = vmath::sigmoid<V>(po);
      const R c = V::fmadd(f, ld(cp + j), V::mul(i, g));
      st(gi + j, i), st(gi + H + j, f), st(gi + 2 * H + j, g), st(gi + 3 * H + j, o);
      st(cn + j, c);
      st(m + j, V::mul(o, vmath::tanh<V>(c)));
    }
  }
}

void backward_cell(int H, int u0, int u1, size_t b0, size_t b1, const unsigned char* valid, const float* gates,
                   const float* c_prev, const float* c_now, const float* dm_in, float* dc_io, float* dpre_out) {
  using R = typename V::R;
  const R one = V::set1(1.0f);
  for (size_t b = b0; b < b1; b++) {
    float* const dp = dpre_out + b * 4 * H;
    if (valid && !valid[b]) {
      for (int g = 0; g < 4; g++)
        for (int j = u0; j < u1; j++) dp[g * H + j] = 0;
      continue;
    }
    const float* const gt = gates + b * 4 * H;
    const float* const cp = c_prev + b * H;
    const float* const cn = c_now + b * H;
    const float* const dm = dm_in + b * H;
    float* const dc = dc_io + b * H;
    for (int j = u0; j < u1; j += V::N) {
      const int k = u1 - j < V::N ? u1 - j : V::N;
      auto ld = [&](const float* p) { return k == V::N ? V::load(p) : V::load_tail(p, k); };
      auto st = [&](float* p, R v) {
        if (k == V::N)
          V::store(p, v);
        else
          V::store_tail(p, v, k);
      };
      const R i = ld(gt + j), f = ld(gt + H + j), g = ld(gt + 2 * H + j), o = ld(gt + 3 * H + j);
      const R tc = vmath::tanh<V>(ld(cn + j));
      const R d = ld(dm + j);
      // dc + dm o (1 - tanh(c)^2)
      const R dcv = V::fmadd(V::mul(d, o), V::fnmadd(tc, tc, one), ld(dc + j));
      st(dp + j, V::mul(V::mul(dcv, g), V::mul(i, V::sub(one, i))));
      st(dp + H + j, V::mul(V::mul(dcv, ld(cp + j)), V::mul(f, V::sub(one, f))));
      st(dp + 2 * H + j, V::mul(V::mul(dcv, i), V::fnmadd(g, g, one)));
      st(dp + 3 * H + j, V::mul(V::mul(d, tc), V::mul(o, V::sub(one, o))));
      st(dc + j, V::mul(dcv, f));
    }
  }
}
