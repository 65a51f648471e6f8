// SCALED_DOT_PRODUCT_ATTENTION on CPU_REF: the definition in attention.cpp as
// loops in double over any strides and every float type. The backward
// recomputes the probabilities and the attention result itself (it reads
// neither the saved lse nor o).
#include <cmath>
#include <limits>
#include <vector>

#include "cmd/attention/attention.hpp"
#include "core/tensor.hpp"

namespace nnc::attn {

namespace {

double get(const View4& v, int b, int s, int h, int d) {
  return load_double(v.data + v.off(b, s, h, d) * static_cast<int64_t>(datatype_size(v.datatype)), v.datatype);
}
void put(const View4& v, int b, int s, int h, int d, double x) {
  store_double(v.data + v.off(b, s, h, d) * static_cast<int64_t>(datatype_size(v.datatype)), v.datatype, x);
}

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// Probabilities of row i of head h in batch b: p[j] (0 for hidden keys);
// returns the log-sum-exp (-inf if no key is visible).
double probabilities(const Problem& p, int b, int h, int i, std::vector<double>& pr) {
  const int hk = h / (p.H / p.Hk);
  double mx = kNegInf;
  for (int j = 0; j < p.Sk; j++) {
    double s = kNegInf;
    if (visible(p, i, j)) {
      s = 0;
      for (int d = 0; d < p.D; d++) s += get(p.q, b, i, h, d) * get(p.k, b, j, hk, d);
      s *= p.scale;
      if (p.mask.data) {
        // The mask's strides are zero along broadcast axes; (b, h, i, j) maps to sb, sh, ss, sd.
        s += load_double(p.mask.data + (b * p.mask.sb + h * p.mask.sh + i * p.mask.ss + j * p.mask.sd) *
                                           static_cast<int64_t>(datatype_size(p.mask.datatype)),
                         p.mask.datatype);
      }
    }
    pr[j] = s;
    mx = std::max(mx, s);
  }
  if (mx == kNegInf) {
    for (int j = 0; j < p.Sk; j++) pr[j] = 0;
    return kNegInf;
  }
  double l = 0;
  for (int j = 0; j < p.Sk; j++) l += pr[j] = std::exp(pr[j] - mx);
  for (int j = 0; j < p.Sk; j++) pr[j] /= l;
  return mx + std::log(l);
}

// The attention result for all rows, [B][Sq][H][Dv] in double.
std::vector<double> attention(const Problem& p, std::vector<double>* lse) {
  std::vector<double> o(static_cast<size_t>(p.B) * p.Sq * p.H * p.Dv, 0.0), pr(p.Sk);
  if (lse) lse->assign(static_cast<size_t>(p.B) * p.H * p.Sq, 0.0);
  for (int b = 0; b < p.B; b++)
    for (int h = 0; h < p.H; h++) {
      const int hk = h / (p.H / p.Hk);
      for (int i = 0; i < p.Sq; i++) {
        const double l = probabilities(p, b, h, i, pr);
        if (lse) (*lse)[(static_cast<size_t>(b) * p.H + h) * p.Sq + i] = l;
        double* out = &o[((static_cast<size_t>(b) * p.Sq + i) * p.H + h) * p.Dv];
        for (int j = 0; j < p.Sk; j++)
          if (pr[j] != 0)
            for (int d = 0; d < p.Dv; d++) out[d] += pr[j] * get(p.v, b, j, hk, d);
      }
    }
  return o;
}

double wget(const ccv_nnc_tensor_t* w, int n, int c) {
  const Layout l = layout_of(w);
  int idx[2] = {n, c};
  return load_double(l.at(idx), l.datatype);
}

}  // namespace

NNC_KERNEL(forward_ref) {
  const Problem p =
      problem(cmd, inputs, input_size, outputs, output_size, false, "SCALED_DOT_PRODUCT_ATTENTION_FORWARD");
  std::vector<double> lse;
  const std::vector<double> o = attention(p, p.lse.data ? &lse : nullptr);
  // Every input is read by now, so output 0 may be q itself.
  if (p.lse.data)
    for (int b = 0; b < p.B; b++)
      for (int h = 0; h < p.H; h++)
        for (int i = 0; i < p.Sq; i++) put(p.lse, b, i, h, 0, lse[(static_cast<size_t>(b) * p.H + h) * p.Sq + i]);
  if (p.o.data)
    for (int b = 0; b < p.B; b++)
      for (int i = 0; i < p.Sq; i++)
        for (int h = 0; h < p.H; h++)
          for (int d = 0; d < p.Dv; d++)
            put(p.o, b, i, h, d, o[((static_cast<size_t>(b) * p.Sq + i) * p.H + h) * p.Dv + d]);
  if (p.fused) {
    const ccv_nnc_tensor_t* w = inputs[4];
    const int HDv = p.H * p.Dv;
    const size_t es = datatype_size(p.datatype);
    for (int b = 0; b < p.B; b++)
      for (int i = 0; i < p.Sq; i++) {
        const double* row = &o[(static_cast<size_t>(b) * p.Sq + i) * HDv];
        for (int n = 0; n < p.Nout; n++) {
          double s = p.bias ? load_double(p.bias + n * p.bias_stride * static_cast<int64_t>(es), p.datatype) : 0.0;
          for (int c = 0; c < HDv; c++) s += row[c] * wget(w, n, c);
          put(p.y3, b, i, 0, n, s);
        }
      }
  }
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(backward_ref) {
  const Problem p =
      problem(cmd, inputs, input_size, outputs, output_size, true, "SCALED_DOT_PRODUCT_ATTENTION_BACKWARD");
  const int HDv = p.H * p.Dv;
  const size_t rows = static_cast<size_t>(p.B) * p.Sq;
  const std::vector<double> o = attention(p, nullptr);
  // dO: g itself, or through the projection g · w.
  std::vector<double> dO(rows * HDv, 0.0);
  const ccv_nnc_tensor_t* w = p.fused ? inputs[7] : nullptr;
  const size_t es = datatype_size(p.datatype);
  std::vector<double> dw(p.fused ? static_cast<size_t>(p.Nout) * HDv : 0, 0.0), db(p.Nout, 0.0);
  for (int b = 0; b < p.B; b++)
    for (int i = 0; i < p.Sq; i++) {
      double* drow = &dO[(static_cast<size_t>(b) * p.Sq + i) * HDv];
      if (!p.fused) {
        for (int h = 0; h < p.H; h++)
          for (int d = 0; d < p.Dv; d++) drow[h * p.Dv + d] = get(p.g, b, i, h, d);
        continue;
      }
      const double* orow = &o[(static_cast<size_t>(b) * p.Sq + i) * HDv];
      for (int n = 0; n < p.Nout; n++) {
        const double gv = get(p.g, b, i, 0, n);
        db[n] += gv;
        for (int c = 0; c < HDv; c++) {
          drow[c] += gv * wget(w, n, c);
          dw[static_cast<size_t>(n) * HDv + c] += gv * orow[c];
        }
      }
    }
  std::vector<double> dq(static_cast<size_t>(p.B) * p.Sq * p.H * p.D, 0.0);
  std::vector<double> dk(static_cast<size_t>(p.B) * p.Sk * p.Hk * p.D, 0.0);
  std::vector<double> dv(static_cast<size_t>(p.B) * p.Sk * p.Hk * p.Dv, 0.0);
  std::vector<double> pr(p.Sk), dp(p.Sk);
  for (int b = 0; b < p.B; b++)
    for (int h = 0; h < p.H; h++) {
      const int hk = h / (p.H / p.Hk);
      for (int i = 0; i < p.Sq; i++) {
        probabilities(p, b, h, i, pr);
        const double* dOi = &dO[((static_cast<size_t>(b) * p.Sq + i) * p.H + h) * p.Dv];
        const double* Oi = &o[((static_cast<size_t>(b) * p.Sq + i) * p.H + h) * p.Dv];
        double di = 0;
        for (int d = 0; d < p.Dv; d++) di += dOi[d] * Oi[d];
        for (int j = 0; j < p.Sk; j++) {
          if (pr[j] == 0) continue;
          double s = 0;
          for (int d = 0; d < p.Dv; d++) {
            s += dOi[d] * get(p.v, b, j, hk, d);
            dv[((static_cast<size_t>(b) * p.Sk + j) * p.Hk + hk) * p.Dv + d] += pr[j] * dOi[d];
          }
          const double ds = pr[j] * (s - di) * p.scale;
          for (int d = 0; d < p.D; d++) {
            dq[((static_cast<size_t>(b) * p.Sq + i) * p.H + h) * p.D + d] += ds * get(p.k, b, j, hk, d);
            dk[((static_cast<size_t>(b) * p.Sk + j) * p.Hk + hk) * p.D + d] += ds * get(p.q, b, i, h, d);
          }
        }
      }
    }
  if (p.dq.data)
    for (int b = 0; b < p.B; b++)
      for (int i = 0; i < p.Sq; i++)
        for (int h = 0; h < p.H; h++)
          for (int d = 0; d < p.D; d++)
            put(p.dq, b, i, h, d, dq[((static_cast<size_t>(b) * p.Sq + i) * p.H + h) * p.D + d]);
  for (int b = 0; b < p.B; b++)
    for (int j = 0; j < p.Sk; j++)
      for (int h = 0; h < p.Hk; h++) {
        if (p.dk.data)
          for (int d = 0; d < p.D; d++)
            put(p.dk, b, j, h, d, dk[((static_cast<size_t>(b) * p.Sk + j) * p.Hk + h) * p.D + d]);
        if (p.dv.data)
          for (int d = 0; d < p.Dv; d++)
            put(p.dv, b, j, h, d, dv[((static_cast<size_t>(b) * p.Sk + j) * p.Hk + h) * p.Dv + d]);
      }
  if (p.fused && outputs[4]) {
    const Layout l = layout_of(outputs[4]);
    for (int n = 0; n < p.Nout; n++)
      for (int c = 0; c < HDv; c++) {
        int idx[2] = {n, c};
        store_double(l.at(idx), l.datatype, dw[static_cast<size_t>(n) * HDv + c]);
      }
  }
  if (p.dbias)
    for (int n = 0; n < p.Nout; n++)
      store_double(p.dbias + n * p.dbias_stride * static_cast<int64_t>(es), p.datatype, db[n]);
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::attn
