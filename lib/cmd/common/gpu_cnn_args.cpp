// Host side of the GPU_REF convolution, pooling and batch norm kernels
// (gpu_cnn_args.hpp).
#include "cmd/common/gpu_cnn_args.hpp"

#include "cmd/common/axes.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

namespace nnc::gpu {

int cnn_type(int datatype) {
  switch (CCV_GET_DATA_TYPE(datatype)) {
    case CCV_16F:
      return kCnnF16;
    case CCV_16BF:
      return kCnnBF16;
    case CCV_64F:
      return kCnnF64;
    default:
      return kCnnF32;
  }
}

CnnImage cnn_image(const Image& im) {
  CnnImage a;
  a.p = im.data;
  a.type = cnn_type(im.datatype);
  a.n = im.n, a.h = im.h, a.w = im.w, a.c = im.c;
  a.sn = im.sn, a.sh = im.sh, a.sw = im.sw, a.sc = im.sc;
  return a;
}

CnnWeights cnn_weights(const conv::Weights& w) {
  CnnWeights a;
  a.p = w.data;
  a.type = cnn_type(w.datatype);
  a.k = w.k, a.kh = w.kh, a.kw = w.kw, a.c = w.c;
  a.sk = w.sk, a.skh = w.skh, a.skw = w.skw, a.sc = w.sc;
  return a;
}

PoolGeom pool_geom(const pool::Geometry& g, bool max) {
  PoolGeom p;
  p.H = g.H, p.W = g.W, p.OH = g.OH, p.OW = g.OW, p.C = g.C;
  p.KH = g.KH, p.KW = g.KW, p.SH = g.SH, p.SW = g.SW, p.PT = g.PT, p.PL = g.PL;
  p.max = max;
  return p;
}

ConvGeom conv_geom(const conv::Geometry& g) {
  ConvGeom p;
  p.N = g.N, p.H = g.H, p.W = g.W, p.C = g.C, p.K = g.K, p.OH = g.OH, p.OW = g.OW;
  p.KH = g.KH, p.KW = g.KW, p.SH = g.SH, p.SW = g.SW, p.PT = g.PT, p.PL = g.PL, p.DH = g.DH, p.DW = g.DW;
  p.Cg = g.Cg, p.Kg = g.Kg;
  return p;
}

int64_t k_stride(const ccv_nnc_tensor_t* t, int K) {
  const Layout b = layout_of(t, "bias");
  int64_t stride = 1;
  for (int i = 0; i < b.nd; i++)
    if (b.dim[i] == K) stride = b.stride[i];
  return stride;
}

namespace {

struct BnBuild {
  BnArgs a;
  Layout x;
  unsigned mask = 0;
  const char* what;

  BnBuild(const ccv_nnc_cmd_t& cmd, const ccv_nnc_tensor_t* xt, const char* w) : what(w) {
    x = layout_of(xt, what);
    NNC_CHECK(x.nd <= kCnnDims, "%s: x has %d axes", what, x.nd);
    mask = axis_mask(what, cmd.info.bnorm.axis, cmd.info.bnorm.count, x.nd);
    a.type = cnn_type(x.datatype);
    a.nd = x.nd;
    a.mask = mask;
    for (int i = 0; i < x.nd; i++) a.dim[i] = x.dim[i];
    a.channels = 1, a.per_channel = 1;
    for (int i = 0; i < x.nd; i++) {
      if ((mask >> i) & 1u) {
        a.rdim[a.nr++] = x.dim[i];
        a.per_channel *= x.dim[i];
      } else {
        a.kdim[a.nk++] = x.dim[i];
        a.channels *= x.dim[i];
      }
    }
    a.epsilon = cmd.info.bnorm.epsilon;
    a.momentum = cmd.info.bnorm.momentum;
    a.is_test = cmd.info.bnorm.is_test;
  }
  void big(int op, const ccv_nnc_tensor_t* t) {
    if (!t) return;
    const Layout l = layout_of(t, what);
    NNC_CHECK(l.nd == x.nd && l.datatype == x.datatype && same_shape(t->info.dim, x.dim.data()),
              "%s: a tensor is %s %s but x is %s %s", what, datatype_name(l.datatype),
              shape_string(t->info.dim).c_str(), datatype_name(x.datatype), shape_string(x.dim.data()).c_str());
    BnBig& b = a.big[op];
    b.p = l.data;
    for (int i = 0, k = 0, r = 0; i < x.nd; i++) {
      if ((mask >> i) & 1u)
        b.rs[r++] = l.stride[i];
      else
        b.ks[k++] = l.stride[i];
    }
  }
  void small(int op, const ccv_nnc_tensor_t* t) {
    if (!t) return;
    const Layout l = layout_of(t, what);
    NNC_CHECK(l.datatype == x.datatype && static_cast<int64_t>(l.count()) == a.channels && l.nd <= kCnnDims,
              "%s: a per-channel tensor is %s %s but x is %s with %lld channels", what, datatype_name(l.datatype),
              shape_string(t->info.dim).c_str(), datatype_name(x.datatype), static_cast<long long>(a.channels));
    BnSmall& s = a.small[op];
    s.p = l.data;
    s.nd = l.nd;
    for (int i = 0; i < l.nd; i++) s.dim[i] = l.dim[i], s.stride[i] = l.stride[i];
  }
};

}  // namespace

BnArgs bn_args(const ccv_nnc_cmd_t& cmd, const norm::BatchNormIo& io, bool forward, const char* what) {
  BnBuild b(cmd, io.x, what);
  const bool test = cmd.info.bnorm.is_test;
  b.big(kBnX, io.x);
  b.small(kBnScale, io.scale);
  if (forward) {
    b.big(kBnY, io.y);
    b.small(kBnBias, io.bias);
    b.small(kBnMean, io.mean);
    b.small(kBnVar, io.var);
    if (!test) {  // inference writes outputs 1..4 not at all (CPU_REF)
      b.small(kBnOutMean, io.out_mean);
      b.small(kBnOutVar, io.out_var);
      b.small(kBnSavedMean, io.saved_mean);
      b.small(kBnSavedInv, io.saved_inv_std);
    }
    return b.a;
  }
  b.big(kBnG, io.g);
  b.big(kBnDx, io.dx);
  if (test) {
    b.small(kBnMean, io.mean);
    b.small(kBnVar, io.var);
  } else {
    b.small(kBnSavedMean, io.saved_mean);
    b.small(kBnSavedInv, io.saved_inv_std);
  }
  b.small(kBnDscale, io.dscale);
  b.small(kBnDbias, io.dbias);
  b.small(kBnDmean, io.dmean);
  b.small(kBnDvar, io.dvar);
  return b.a;
}

}  // namespace nnc::gpu
