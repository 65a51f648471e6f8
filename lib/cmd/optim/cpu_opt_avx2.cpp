// AVX2 + FMA loops of the fp32 optimiser updates (compiled with -mavx2 -mfma
// -mf16c; called only after the CPU check): every tensor is read once and
// written once, eight elements at a time, with the scalar formula of
// optim.hpp for the tail.
#include <immintrin.h>

#include "cmd/optim/optim.hpp"

namespace nnc::optim {

void sgd_f32_avx2(const Coef& c, const float* g, const float* a, const float* m, float* b, float* n, size_t count) {
  const __m256 scale = _mm256_set1_ps(float(c.scale));
  const __m256 decay = _mm256_set1_ps(float(c.decay));
  const __m256 mom = _mm256_set1_ps(float(c.momentum));
  const __m256 damp = _mm256_set1_ps(float(1 - c.dampening));
  const __m256 neg_rate = _mm256_set1_ps(-float(c.rate));
  const bool plain = c.momentum == 0;
  const bool nesterov = c.nesterov;
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 av = _mm256_loadu_ps(a + i);
    const __m256 grad = _mm256_fmadd_ps(scale, _mm256_loadu_ps(g + i), _mm256_mul_ps(decay, av));
    __m256 nm, upd;
    if (plain) {
      nm = upd = grad;
    } else {
      nm = _mm256_fmadd_ps(mom, _mm256_loadu_ps(m + i), _mm256_mul_ps(damp, grad));
      upd = nesterov ? _mm256_fmadd_ps(mom, nm, grad) : nm;
    }
    _mm256_storeu_ps(n + i, nm);
    _mm256_storeu_ps(b + i, _mm256_fmadd_ps(neg_rate, upd, av));
  }
  for (; i < count; i++) sgd_step<float>(c, g[i], a[i], m[i], b[i], n[i]);
}

void adam_f32_avx2(const Coef& c, const float* g, const float* a, const float* m, const float* v, const float* vm,
                   float* b, float* n, float* u, float* um, size_t count) {
  const bool decoupled = c.kind == Kind::kAdamW;
  const __m256 scale = _mm256_set1_ps(float(c.scale));
  const __m256 decay = _mm256_set1_ps(decoupled ? 0.f : float(c.decay));
  const __m256 b1 = _mm256_set1_ps(float(c.beta1));
  const __m256 one_b1 = _mm256_set1_ps(float(1 - c.beta1));
  const __m256 b2 = _mm256_set1_ps(float(c.beta2));
  const __m256 one_b2 = _mm256_set1_ps(float(1 - c.beta2));
  const __m256 isb2 = _mm256_set1_ps(float(c.inv_sqrt_bc2));
  const __m256 eps = _mm256_set1_ps(float(c.epsilon));
  const __m256 keep = _mm256_set1_ps(float(c.weight_keep));
  const __m256 neg_step = _mm256_set1_ps(-float(c.step_size));
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 av = _mm256_loadu_ps(a + i);
    const __m256 grad = _mm256_fmadd_ps(scale, _mm256_loadu_ps(g + i), _mm256_mul_ps(decay, av));
    const __m256 nm = _mm256_fmadd_ps(b1, _mm256_loadu_ps(m + i), _mm256_mul_ps(one_b1, grad));
    const __m256 nv = _mm256_fmadd_ps(b2, _mm256_loadu_ps(v + i), _mm256_mul_ps(one_b2, _mm256_mul_ps(grad, grad)));
    __m256 d = nv;
    if (vm) {
      d = _mm256_max_ps(_mm256_loadu_ps(vm + i), nv);
      _mm256_storeu_ps(um + i, d);
    }
    const __m256 denom = _mm256_fmadd_ps(_mm256_sqrt_ps(d), isb2, eps);
    _mm256_storeu_ps(n + i, nm);
    _mm256_storeu_ps(u + i, nv);
    _mm256_storeu_ps(b + i, _mm256_fmadd_ps(neg_step, _mm256_div_ps(nm, denom), _mm256_mul_ps(keep, av)));
  }
  float dummy = 0;
  for (; i < count; i++)
    adam_step<float>(c, g[i], a[i], m[i], v[i], vm ? vm[i] : 0.f, b[i], n[i], u[i], um ? um[i] : dummy);
}

}  // namespace nnc::optim
