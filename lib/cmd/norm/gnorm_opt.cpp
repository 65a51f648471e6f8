// CPU_OPT kernels of GROUP_NORM for fp32 / fp64.
//
// The shape is seen as O x M x C x I: O the kept axes before the group axis,
// M reduced axes between them and the group axis, C the channels, I reduced
// axes after it (extents of 1 ignored). NCHW with reduce axes {2, 3} is
// N x 1 x C x HW: a group's channels are one contiguous run of C / G x HW
// elements, summed and written along rows. NHWC with reduce axes {1, 2} is
// N x HW x C x 1: the loops run across channels (red::Loops' column loops,
// vectorised over C), with per-channel sums folded into groups afterwards.
// Other layouts (a kept axis after a reduced one, or after the group axis) go
// to CPU_REF.
//
// With I > 1 and groups small enough to stay in cache (fuse_groups), each
// group's statistics and output run back to back, so x (and g) come from
// memory once.
// As batch and layer norm's kernels (cpu_opt.cpp): one pass over shifted
// data for the statistics (c = the mean of a small sample of the group), the
// output centred on c with the rest of the mean folded into the bias, sums in
// the element type per row or column block and combined in double.
#include <algorithm>
#include <cmath>

#include "cmd/common/reduce_loops.hpp"
#include "cmd/common/strided.hpp"
#include "cmd/norm/norm.hpp"
#include "cmd/norm/stage.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/tensor.hpp"

namespace nnc::norm {

namespace {

constexpr size_t kParallelFrom = size_t{1} << 14;

struct GroupShape {
  size_t O = 1, M = 1, C = 1, I = 1, G = 1, cg = 1;
  size_t count() const { return O * M * C * I; }
  size_t n() const { return M * cg * I; }  // elements per statistics group
};

// The O x M x C x I view of x, or false when the kept and reduced axes do not
// fall into that order (or the command does not describe x).
bool group_shape(const ccv_nnc_cmd_t& cmd, const ccv_nnc_tensor_t* x, GroupShape* s) {
  const int nd = nd_of(x->info.dim);
  const auto& p = cmd.info.gnorm;
  if (p.group_axis < 0 || p.group_axis >= nd || p.groups < 1) return false;
  if (p.reduce_count < 0 || p.reduce_count >= kMaxDim) return false;
  unsigned mask = 0;
  for (int i = 0; i < p.reduce_count; i++) {
    if (p.reduce_axis[i] < 0 || p.reduce_axis[i] >= nd || p.reduce_axis[i] == p.group_axis) return false;
    mask |= 1u << p.reduce_axis[i];
  }
  GroupShape r;
  r.C = static_cast<size_t>(x->info.dim[p.group_axis]);
  r.G = static_cast<size_t>(p.groups);
  if (r.C % r.G) return false;
  r.cg = r.C / r.G;
  bool seen_reduced = false;
  for (int i = 0; i < p.group_axis; i++) {
    const size_t d = static_cast<size_t>(x->info.dim[i]);
    if (d == 1) continue;
    if ((mask >> i) & 1u) {
      seen_reduced = true;
      r.M *= d;
    } else {
      if (seen_reduced) return false;  // a kept axis inside the reduced block
      r.O *= d;
    }
  }
  for (int i = p.group_axis + 1; i < nd; i++) {
    const size_t d = static_cast<size_t>(x->info.dim[i]);
    if (d == 1) continue;
    if (!((mask >> i) & 1u)) return false;  // a kept axis after the channels
    r.I *= d;
  }
  *s = r;
  return true;
}

// Offsets into one workspace block, each rounded to a cache line.
struct Plan {
  size_t bytes = 0;
  size_t add(size_t n) {
    const size_t at = bytes;
    bytes += (n + 63) / 64 * 64;
    return at;
  }
};

// Row blocks of M per o for the channels-inner (I == 1) sums: enough tasks to
// share out, each a run of whole rows.
size_t row_parts(const GroupShape& s) {
  const size_t threads = thread_count();
  if (threads <= 1 || s.count() < kParallelFrom) return 1;
  const size_t want = (4 * threads + s.O - 1) / s.O;
  return std::max<size_t>(1, std::min(s.M, want));
}

// The shift of each (o, group): the mean of a sample of its first elements.
template <class T>
void group_shifts(const GroupShape& s, const T* x, T* shift) {
  const size_t run = s.cg * s.I, rows = std::min<size_t>(s.M, 4), take = std::min<size_t>(run, 64);
  for (size_t o = 0; o < s.O; o++)
    for (size_t g = 0; g < s.G; g++) {
      double a = 0;
      for (size_t m = 0; m < rows; m++) {
        const T* p = x + ((o * s.M + m) * s.C + g * s.cg) * s.I;
        for (size_t i = 0; i < take; i++) a += static_cast<double>(p[i]);
      }
      shift[o * s.G + g] = static_cast<T>(a / static_cast<double>(rows * take));
    }
}

// The sums of channel_sums below for one (o, c), I > 1.
template <class T>
void channel_sum_one(const red::Loops<T>& L, const GroupShape& s, const T* x, const T* g, T centre, size_t o, size_t c,
                     double* r1, double* r2) {
  double a1 = 0, a2 = 0;
  for (size_t m = 0; m < s.M; m++) {
    const size_t off = ((o * s.M + m) * s.C + c) * s.I;
    T s1 = 0, s2 = 0;
    if (g)
      L.row_dot2(g + off, x + off, s.I, centre, &s1, &s2);
    else
      s1 = L.row_sqdev(x + off, s.I, centre, &s2);
    a1 += static_cast<double>(s1), a2 += static_cast<double>(s2);
  }
  *r1 = a1;
  *r2 = a2;
}

// Per (o, c) sums over M x I: with g NULL, sum (x - c)^2 into r1 and sum x - c
// into r2 (c the group's centre); with g, sum g into r1 and g (x - c) into r2.
// `partial` holds 2 * O * parts * C elements (used when I == 1).
template <class T>
void channel_sums(const red::Loops<T>& L, const GroupShape& s, const T* x, const T* g, const T* centre_c, size_t parts,
                  T* partial, double* r1, double* r2) {
  const size_t O = s.O, M = s.M, C = s.C, I = s.I;
  const bool parallel = s.count() >= kParallelFrom;
  if (I == 1) {
    const size_t rows = (M + parts - 1) / parts;
    T* p1 = partial;
    T* p2 = partial + O * parts * C;
    std::fill(partial, partial + 2 * O * parts * C, T(0));
    range_parallel(O * parts, parallel ? 0 : O * parts + 1, 1, [&](size_t b, size_t e) {
      for (size_t t = b; t < e; t++) {
        const size_t o = t / parts, q = t % parts;
        const size_t m0 = q * rows, m1 = std::min(M, m0 + rows);
        if (m1 <= m0) continue;
        const size_t off = (o * M + m0) * C;
        const int64_t ld = static_cast<int64_t>(C);
        if (g)
          L.col_dot2(g + off, x + off, m1 - m0, ld, C, centre_c + o * C, p1 + t * C, p2 + t * C);
        else
          L.col_sqdev(x + off, m1 - m0, ld, C, centre_c + o * C, p1 + t * C, p2 + t * C);
      }
    });
    for (size_t o = 0; o < O; o++)
      for (size_t c = 0; c < C; c++) {
        double a1 = 0, a2 = 0;
        for (size_t q = 0; q < parts; q++) a1 += p1[(o * parts + q) * C + c], a2 += p2[(o * parts + q) * C + c];
        r1[o * C + c] = a1;
        r2[o * C + c] = a2;
      }
    return;
  }
  range_parallel(O * C, parallel ? 0 : O * C + 1, 1, [&](size_t b, size_t e) {
    for (size_t t = b; t < e; t++) channel_sum_one(L, s, x, g, centre_c[t], t / C, t % C, r1 + t, r2 + t);
  });
}

// NCHW-like shapes (I > 1) with enough groups to share out, each small enough
// to stay in cache: the statistics and the output run group by group, reading
// each group from memory once (`streams`: x, or g and x).
constexpr size_t kFuseBytes = size_t{1} << 20;
bool fuse_groups(const GroupShape& s, size_t element, size_t streams) {
  const size_t threads = thread_count();
  return s.I > 1 && (threads <= 1 || s.O * s.G >= 2 * threads) && s.n() * element * streams <= kFuseBytes;
}

// The output of channel_apply for the channels of group gi at o (I > 1).
template <class T>
void group_apply(const red::Loops<T>& L, const GroupShape& s, size_t o, size_t gi, const T* g, const T* x, T* out,
                 const T* m, const T* a, const T* b, const T* c) {
  for (size_t mi = 0; mi < s.M; mi++)
    for (size_t ch = gi * s.cg; ch < (gi + 1) * s.cg; ch++) {
      const size_t k = o * s.C + ch, off = ((o * s.M + mi) * s.C + ch) * s.I;
      if (g)
        L.row_axpbypc(g + off, x + off, out + off, s.I, m[k], a[k], b[k], c[k]);
      else
        L.row_affine(x + off, out + off, s.I, m[k], a[k], b[k]);
    }
}

// out = a * g + b * (x - m) + c per (o, c) (g NULL: out = (x - m) * a + b),
// coefficient arrays of O x C.
template <class T>
void channel_apply(const red::Loops<T>& L, const GroupShape& s, const T* g, const T* x, T* out, const T* m,
                   const T* a, const T* b, const T* c) {
  const size_t O = s.O, M = s.M, C = s.C, I = s.I;
  const bool parallel = s.count() >= kParallelFrom;
  if (I == 1) {
    range_parallel(O * M, parallel ? 0 : O * M + 1, std::max<size_t>(1, 4096 / C), [&](size_t r0, size_t r1) {
      for (size_t r = r0; r < r1;) {
        const size_t o = r / M, end = std::min(r1, (o + 1) * M);
        const size_t off = r * C, k = o * C;
        const int64_t ld = static_cast<int64_t>(C);
        if (g)
          L.col_axpbypc(g + off, x + off, out + off, end - r, ld, C, m + k, a + k, b + k, c + k);
        else
          L.col_affine(x + off, out + off, end - r, ld, C, m + k, a + k, b + k);
        r = end;
      }
    });
    return;
  }
  range_parallel(O * M * C, parallel ? 0 : O * M * C + 1, std::max<size_t>(1, 4096 / I), [&](size_t r0, size_t r1) {
    for (size_t r = r0; r < r1; r++) {
      const size_t k = (r / (M * C)) * C + r % C, off = r * I;
      if (g)
        L.row_axpbypc(g + off, x + off, out + off, I, m[k], a[k], b[k], c[k]);
      else
        L.row_affine(x + off, out + off, I, m[k], a[k], b[k]);
    }
  });
}

template <class T>
int gnorm_forward(const ccv_nnc_cmd_t& cmd, const GroupNormIo& io, ccv_nnc_stream_context_t* stream) {
  const red::Loops<T>& L = red::loops<T>();
  GroupShape s;
  group_shape(cmd, io.x, &s);
  const size_t O = s.O, C = s.C, G = s.G, OG = O * G, OC = O * C;
  const size_t parts = s.I == 1 ? row_parts(s) : 1;
  Plan plan;
  const size_t at_shift = plan.add(OG * sizeof(T)), at_mean = plan.add(OG * sizeof(T)),
               at_inv = plan.add(OG * sizeof(T));
  const size_t at_sc = plan.add(C * sizeof(T)), at_bi = plan.add(C * sizeof(T));
  const size_t at_ctr = plan.add(OC * sizeof(T)), at_a = plan.add(OC * sizeof(T)), at_b = plan.add(OC * sizeof(T));
  const size_t at_r1 = plan.add(OC * sizeof(double)), at_r2 = plan.add(OC * sizeof(double));
  const size_t at_part = plan.add(s.I == 1 ? 2 * O * parts * C * sizeof(T) : 0);
  T* buf;
  unsigned char* w =
      reinterpret_cast<unsigned char*>(scratch<T>(stream, plan.bytes, staged(io.x) + staged(io.y), &buf));
  T* shift = reinterpret_cast<T*>(w + at_shift);
  T* mean = reinterpret_cast<T*>(w + at_mean);
  T* inv = reinterpret_cast<T*>(w + at_inv);
  T* sc = reinterpret_cast<T*>(w + at_sc);
  T* bi = reinterpret_cast<T*>(w + at_bi);
  T* ctr = reinterpret_cast<T*>(w + at_ctr);
  T* a = reinterpret_cast<T*>(w + at_a);
  T* b = reinterpret_cast<T*>(w + at_b);
  double* r1 = reinterpret_cast<double*>(w + at_r1);
  double* r2 = reinterpret_cast<double*>(w + at_r2);
  T* partial = reinterpret_cast<T*>(w + at_part);
  const T* x = stage_in<T>(io.x, &buf);
  T* y = stage_out<T>(io.y, &buf);
  read_small<T>(io.scale, C, T(1), sc);
  read_small<T>(io.bias, C, T(0), bi);
  group_shifts(s, x, shift);
  for (size_t o = 0; o < O; o++)
    for (size_t c = 0; c < C; c++) ctr[o * C + c] = shift[o * G + c / s.cg];
  const double n = static_cast<double>(s.n()), eps = cmd.info.gnorm.epsilon;
  // The statistics of group gi at o from its channels' sums, and its channels' coefficients.
  auto coefficients = [&](size_t o, size_t gi) {
    double sq = 0, dev = 0;
    for (size_t c = gi * s.cg; c < (gi + 1) * s.cg; c++) sq += r1[o * C + c], dev += r2[o * C + c];
    const double r = dev / n, var = std::max(0.0, sq / n - r * r), iv = 1.0 / std::sqrt(var + eps);
    const size_t k = o * G + gi;
    mean[k] = static_cast<T>(static_cast<double>(shift[k]) + r);
    inv[k] = static_cast<T>(iv);
    for (size_t c = gi * s.cg; c < (gi + 1) * s.cg; c++) {
      const double ak = iv * static_cast<double>(sc[c]);
      a[o * C + c] = static_cast<T>(ak);
      b[o * C + c] = static_cast<T>(static_cast<double>(bi[c]) - r * ak);
    }
  };
  const T* none = nullptr;
  if (fuse_groups(s, sizeof(T), 1)) {
    range_parallel(OG, s.count() >= kParallelFrom ? 0 : OG + 1, 1, [&](size_t t0, size_t t1) {
      for (size_t t = t0; t < t1; t++) {
        const size_t o = t / G, gi = t % G;
        for (size_t c = gi * s.cg; c < (gi + 1) * s.cg; c++)
          channel_sum_one(L, s, x, none, ctr[o * C + c], o, c, r1 + o * C + c, r2 + o * C + c);
        coefficients(o, gi);
        group_apply(L, s, o, gi, none, x, y, ctr, a, b, none);
      }
    });
  } else {
    channel_sums(L, s, x, none, ctr, parts, partial, r1, r2);
    for (size_t o = 0; o < O; o++)
      for (size_t gi = 0; gi < G; gi++) coefficients(o, gi);
    channel_apply(L, s, none, x, y, ctr, a, b, none);
  }
  write_small(io.saved_mean, OG, mean);
  write_small(io.saved_inv_std, OG, inv);
  unstage(io.y, y);
  return CCV_NNC_EXEC_SUCCESS;
}

template <class T>
int gnorm_backward(const ccv_nnc_cmd_t& cmd, const GroupNormIo& io, ccv_nnc_stream_context_t* stream) {
  const red::Loops<T>& L = red::loops<T>();
  GroupShape s;
  group_shape(cmd, io.x, &s);
  const size_t O = s.O, C = s.C, G = s.G, OG = O * G, OC = O * C;
  const size_t parts = s.I == 1 ? row_parts(s) : 1;
  Plan plan;
  const size_t at_mean = plan.add(OG * sizeof(T)), at_inv = plan.add(OG * sizeof(T)), at_sc = plan.add(C * sizeof(T));
  const size_t at_m = plan.add(OC * sizeof(T)), at_a = plan.add(OC * sizeof(T)), at_b = plan.add(OC * sizeof(T)),
               at_c = plan.add(OC * sizeof(T)), at_tmp = plan.add(C * sizeof(T));
  const size_t at_r1 = plan.add(OC * sizeof(double)), at_r2 = plan.add(OC * sizeof(double));
  const size_t at_part = plan.add(s.I == 1 ? 2 * O * parts * C * sizeof(T) : 0);
  T* buf;
  unsigned char* w = reinterpret_cast<unsigned char*>(
      scratch<T>(stream, plan.bytes, staged(io.x) + staged(io.g) + staged(io.dx), &buf));
  T* mean = reinterpret_cast<T*>(w + at_mean);
  T* inv = reinterpret_cast<T*>(w + at_inv);
  T* sc = reinterpret_cast<T*>(w + at_sc);
  T* mc = reinterpret_cast<T*>(w + at_m);
  T* A = reinterpret_cast<T*>(w + at_a);
  T* B = reinterpret_cast<T*>(w + at_b);
  T* Cc = reinterpret_cast<T*>(w + at_c);
  T* tmp = reinterpret_cast<T*>(w + at_tmp);
  double* sg = reinterpret_cast<double*>(w + at_r1);
  double* sgx = reinterpret_cast<double*>(w + at_r2);
  T* partial = reinterpret_cast<T*>(w + at_part);
  read_small<T>(io.saved_mean, OG, T(0), mean);
  read_small<T>(io.saved_inv_std, OG, T(1), inv);
  read_small<T>(io.scale, C, T(1), sc);
  const T* x = stage_in<T>(io.x, &buf);
  const T* g = stage_in<T>(io.g, &buf);
  T* dx = stage_out<T>(io.dx, &buf);
  for (size_t o = 0; o < O; o++)
    for (size_t c = 0; c < C; c++) mc[o * C + c] = mean[o * G + c / s.cg];
  // dx = inv (h - mean(h) - xhat mean(h xhat)) with h = g s_c, xhat = (x - mean) inv:
  // A g + B (x - mean) + C per channel, from the channels' sums of group gi at o.
  const double n = static_cast<double>(s.n());
  auto coefficients = [&](size_t o, size_t gi) {
    double sh = 0, shx = 0;
    for (size_t c = gi * s.cg; c < (gi + 1) * s.cg; c++) {
      sh += static_cast<double>(sc[c]) * sg[o * C + c];
      shx += static_cast<double>(sc[c]) * sgx[o * C + c];
    }
    const double iv = static_cast<double>(inv[o * G + gi]);
    // shx is sum h (x - mean); sum h xhat = iv * shx.
    for (size_t c = gi * s.cg; c < (gi + 1) * s.cg; c++) {
      A[o * C + c] = static_cast<T>(iv * static_cast<double>(sc[c]));
      B[o * C + c] = static_cast<T>(-iv * iv * iv * shx / n);
      Cc[o * C + c] = static_cast<T>(-iv * sh / n);
    }
  };
  const bool fused = fuse_groups(s, sizeof(T), 2);
  if (fused) {
    range_parallel(OG, s.count() >= kParallelFrom ? 0 : OG + 1, 1, [&](size_t t0, size_t t1) {
      for (size_t t = t0; t < t1; t++) {
        const size_t o = t / G, gi = t % G;
        for (size_t c = gi * s.cg; c < (gi + 1) * s.cg; c++)
          channel_sum_one(L, s, x, g, mc[o * C + c], o, c, sg + o * C + c, sgx + o * C + c);
        if (!dx) continue;
        coefficients(o, gi);
        group_apply(L, s, o, gi, g, x, dx, mc, A, B, Cc);
      }
    });
  } else {
    channel_sums(L, s, x, g, mc, parts, partial, sg, sgx);
  }
  if (io.dscale) {
    for (size_t c = 0; c < C; c++) {
      double v = 0;
      for (size_t o = 0; o < O; o++) v += sgx[o * C + c] * static_cast<double>(inv[o * G + c / s.cg]);
      tmp[c] = static_cast<T>(v);
    }
    write_small(io.dscale, C, tmp);
  }
  if (io.dbias) {
    for (size_t c = 0; c < C; c++) {
      double v = 0;
      for (size_t o = 0; o < O; o++) v += sg[o * C + c];
      tmp[c] = static_cast<T>(v);
    }
    write_small(io.dbias, C, tmp);
  }
  if (!dx || fused) {
    unstage(io.dx, dx);
    return CCV_NNC_EXEC_SUCCESS;
  }
  for (size_t o = 0; o < O; o++)
    for (size_t gi = 0; gi < G; gi++) coefficients(o, gi);
  channel_apply(L, s, g, x, dx, mc, A, B, Cc);
  unstage(io.dx, dx);
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace

bool gnorm_opt_accepts(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                       ccv_nnc_tensor_t* const* outputs, int output_size) {
  const bool forward = cmd.cmd == CCV_NNC_GROUP_NORM_FORWARD;
  const GroupNormIo io = forward ? group_norm_forward_io(cmd, inputs, input_size, outputs, output_size)
                                 : group_norm_backward_io(cmd, inputs, input_size, outputs, output_size);
  if (!io.x || (forward && !io.y)) return false;
  GroupShape s;
  return group_shape(cmd, io.x, &s);
}

NNC_KERNEL(gnorm_forward_opt) {
  const GroupNormIo io = group_norm_forward_io(cmd, inputs, input_size, outputs, output_size);
  if (CCV_GET_DATA_TYPE(io.x->info.datatype) == CCV_64F) return gnorm_forward<double>(cmd, io, stream_context);
  return gnorm_forward<float>(cmd, io, stream_context);
}

NNC_KERNEL(gnorm_backward_opt) {
  const GroupNormIo io = group_norm_backward_io(cmd, inputs, input_size, outputs, output_size);
  if (CCV_GET_DATA_TYPE(io.x->info.datatype) == CCV_64F) return gnorm_backward<double>(cmd, io, stream_context);
  return gnorm_backward<float>(cmd, io, stream_context);
}

}  // namespace nnc::norm
