// CPU_OPT kernels of the reductions, fp32 and fp64.
//
// Forward: a view is first packed into the workspace; the shape is merged into
// runs of reduced / kept axes, and each reduced run is folded away in its own
// pass, innermost first, as a reduction of an O x R x I block over R: rows
// (I = 1) vectorised along R, columns (I > 1) vectorised along I. Passes split
// over the pool by O and I, and along R into partial results when O x I is too
// small to keep the threads busy (REDUCE_SUM over the batch, bias gradients).
// The workspace is taken once per call; nothing allocates.
// Backward: one strided walk over dx with g (and y) broadcast along the reduced
// axes through zero strides.
// ARGMAX / ARGMIN: a packed x as O x R x I over its axis R, rows (I = 1) or
// blocks of columns per task, the indices written through y's layout; a view
// x goes to CPU_REF's loop.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "cmd/common/copy.hpp"
#include "cmd/common/reduce_loops.hpp"
#include "cmd/common/strided.hpp"
#include "cmd/reduce/reduce.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/stream.hpp"
#include "core/tensor.hpp"

namespace nnc::red {

namespace {

// Below this many input elements a pass runs on the calling thread.
constexpr size_t kParallelFrom = size_t{1} << 15;
// Most partial results one pass splits R into.
constexpr size_t kMaxParts = 16;
// Columns one task reduces, at most.
constexpr size_t kColumnBlock = 1024;

// Width of the column blocks of an O x R x I pass: small enough that every
// thread gets an equal share of blocks, a multiple of 16 (whole vectors).
size_t column_block(size_t O, size_t I) {
  const size_t threads = thread_count();
  if (threads <= 1 || O >= 4 * threads) return kColumnBlock;
  const size_t share = (I + 2 * threads - 1) / (2 * threads);
  return std::clamp<size_t>((share + 15) / 16 * 16, 64, kColumnBlock);
}

struct Pass {
  size_t outer, r, inner;
  int op;
  size_t parts;  // > 1: R split into parts partial results
};

template <class T>
void combine_into(int op, T* y, const T* p, size_t n) {
  for (size_t j = 0; j < n; j++) {
    if (op == kMax)
      y[j] = p[j] > y[j] ? p[j] : y[j];
    else if (op == kMin)
      y[j] = p[j] < y[j] ? p[j] : y[j];
    else
      y[j] += p[j];
  }
}

template <class T>
void run_pass(const Loops<T>& L, const Pass& p, const T* src, T* dst, T* partial) {
  const size_t O = p.outer, R = p.r, I = p.inner;
  const int op = p.op;
  const bool parallel = O * R * I >= kParallelFrom && thread_count() > 1;
  if (p.parts > 1) {
    // Each part reduces a slice of R for every (o, i) into partial[part]; then the parts combine.
    const size_t parts = p.parts, slice = (R + parts - 1) / parts;
    const int first_op = op;
    range_parallel(parts, 0, 1, [&](size_t b, size_t e) {
      for (size_t q = b; q < e; q++) {
        const size_t r0 = q * slice, r1 = std::min(R, r0 + slice);
        T* out = partial + q * O * I;
        for (size_t o = 0; o < O; o++) {
          const T* s = src + o * R * I + r0 * I;
          if (r1 <= r0) {
            // An empty slice (R not divisible): a neutral copy of slice 0's start keeps combine simple.
            if (I == 1)
              out[o] = L.row_reduce(first_op, src + o * R, 1);
            else
              L.col_reduce(first_op, src + o * R * I, 1, static_cast<int64_t>(I), I, out + o * I, true);
            if (first_op == kSum || first_op == kSumSq)
              for (size_t j = 0; j < I; j++) out[o * I + j] = 0;
            continue;
          }
          if (I == 1)
            out[o] = L.row_reduce(first_op, s, r1 - r0);
          else
            L.col_reduce(first_op, s, r1 - r0, static_cast<int64_t>(I), I, out + o * I, true);
        }
      }
    });
    const int cop = op == kSumSq ? kSum : op;
    std::memcpy(dst, partial, sizeof(T) * O * I);
    for (size_t q = 1; q < parts; q++) combine_into(cop, dst, partial + q * O * I, O * I);
    return;
  }
  if (I == 1) {
    range_parallel(O, parallel ? 0 : O + 1, std::max<size_t>(1, 4096 / std::max<size_t>(R, 1)),
                   [&](size_t b, size_t e) {
                     for (size_t o = b; o < e; o++) dst[o] = L.row_reduce(op, src + o * R, R);
                   });
    return;
  }
  const size_t cb = column_block(O, I);
  const size_t blocks = (I + cb - 1) / cb;
  range_parallel(O * blocks, parallel ? 0 : O * blocks + 1, 1, [&](size_t b, size_t e) {
    for (size_t t = b; t < e; t++) {
      const size_t o = t / blocks, j0 = (t % blocks) * cb, j1 = std::min(I, j0 + cb);
      L.col_reduce(op, src + o * R * I + j0, R, static_cast<int64_t>(I), j1 - j0, dst + o * I + j0, true);
    }
  });
}

// How many parts to split R into so that a pass with few independent outputs still uses every thread.
size_t parts_for(size_t O, size_t R, size_t I) {
  const size_t threads = thread_count();
  if (threads <= 1 || O * R * I < kParallelFrom) return 1;
  const size_t tasks = I == 1 ? O : O * ((I + column_block(O, I) - 1) / column_block(O, I));
  if (tasks >= 2 * threads) return 1;
  return std::min<size_t>({kMaxParts, 4 * threads, std::max<size_t>(1, R / 64)});
}

template <class T>
int forward(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* xt, ccv_nnc_tensor_t* yt, ccv_nnc_stream_context_t* stream) {
  const Loops<T>& L = loops<T>();
  const int nd = nd_of(xt->info.dim);
  const unsigned mask = axis_mask("reduction", cmd.info.reduce.axis, cmd.info.reduce.count, nd);
  size_t extent[kMaxDim];
  bool reduced[kMaxDim];
  int n = runs_of(xt->info.dim, nd, mask, extent, reduced);
  size_t total = 1, count = 1;
  for (int i = 0; i < nd; i++) {
    total *= static_cast<size_t>(xt->info.dim[i]);
    if ((mask >> i) & 1u) count *= static_cast<size_t>(xt->info.dim[i]);
  }
  const size_t out_count = total / std::max<size_t>(count, 1);
  const int op = cmd.cmd == CCV_NNC_REDUCE_MAX_FORWARD     ? kMax
                 : cmd.cmd == CCV_NNC_REDUCE_MIN_FORWARD   ? kMin
                 : cmd.cmd == CCV_NNC_REDUCE_NORM2_FORWARD ? kSumSq
                                                           : kSum;
  // Plan the passes (innermost reduced run first).
  Pass passes[kMaxDim];
  int np = 0;
  size_t buffer = 0, partial = 0;
  if (n == 0 || (n == 1 && !reduced[0])) {
    passes[np++] = {1, 1, total, op, 1};  // nothing to fold: an element-wise pass
  } else {
    size_t cur = total;
    bool first = true;
    while (true) {
      int r = -1;
      for (int i = n - 1; i >= 0; i--)
        if (reduced[i]) {
          r = i;
          break;
        }
      if (r < 0) break;
      size_t O = 1, I = 1;
      for (int i = 0; i < r; i++) O *= extent[i];
      for (int i = r + 1; i < n; i++) I *= extent[i];
      Pass p{O, extent[r], I, first ? op : (op == kSumSq ? kSum : op), parts_for(O, extent[r], I)};
      passes[np++] = p;
      if (p.parts > 1) partial = std::max(partial, p.parts * O * I);
      cur /= extent[r];
      buffer = std::max(buffer, cur);
      first = false;
      // Drop run r; its kept neighbours become one run.
      for (int i = r; i + 1 < n; i++) extent[i] = extent[i + 1], reduced[i] = reduced[i + 1];
      n--;
      if (r > 0 && r < n && !reduced[r - 1] && !reduced[r]) {
        extent[r - 1] *= extent[r];
        for (int i = r; i + 1 < n; i++) extent[i] = extent[i + 1], reduced[i] = reduced[i + 1];
        n--;
      }
    }
  }
  const bool x_packed = is_packed(xt), y_packed = is_packed(yt);
  // Workspace: [packed x][ping][pong][partials].
  const size_t ws = (x_packed ? 0 : total) + 2 * std::max(buffer, out_count) + partial;
  T* base = static_cast<T*>(workspace(stream, std::max<size_t>(ws, 1) * sizeof(T)));
  const T* src = reinterpret_cast<const T*>(xt->data.u8);
  T* w = base;
  if (!x_packed) {
    ccv_nnc_tensor_param_t pp = xt->info;
    ccv_nnc_tensor_t packed = tensor_value(w, pp, 0);
    util::opt_copy(xt, &packed);
    src = w;
    w += total;
  }
  T* ping = w;
  T* pong = w + std::max(buffer, out_count);
  T* parts = pong + std::max(buffer, out_count);
  T* y = reinterpret_cast<T*>(yt->data.u8);
  for (int i = 0; i < np; i++) {
    const bool last = i == np - 1;
    T* dst = last && y_packed ? y : (i % 2 == 0 ? ping : pong);
    run_pass(L, passes[i], src, dst, parts);
    src = dst;
  }
  // Finish: mean and norm, then into a strided output when the output is a view.
  const bool mean = cmd.cmd == CCV_NNC_REDUCE_MEAN_FORWARD, norm = op == kSumSq;
  T* result = const_cast<T*>(src);
  if (mean || norm) {
    const T scale = static_cast<T>(1.0 / static_cast<double>(count));
    range_parallel(out_count, kParallelFrom, 4096, [&](size_t b, size_t e) {
      for (size_t k = b; k < e; k++) result[k] = mean ? result[k] * scale : std::sqrt(result[k]);
    });
  }
  if (!y_packed) {
    const Layout yl = layout_of(yt, "reduction output");
    for (size_t k = 0; k < out_count; k++) *reinterpret_cast<T*>(at_linear(yl, k)) = result[k];
  }
  return CCV_NNC_EXEC_SUCCESS;
}

template <class T>
int backward(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, ccv_nnc_tensor_t* dxt) {
  const Layout dx = layout_of(dxt, "reduction dx");
  const unsigned mask = axis_mask("reduction", cmd.info.reduce.axis, cmd.info.reduce.count, dx.nd);
  const Layout g = layout_of(inputs[0], "reduction gradient");
  const bool xy = cmd.cmd != CCV_NNC_REDUCE_SUM_BACKWARD && cmd.cmd != CCV_NNC_REDUCE_MEAN_BACKWARD;
  Layout x, y;
  int64_t gs[kMaxDim], ys[kMaxDim];
  for (int i = 0; i < dx.nd; i++) gs[i] = (mask >> i) & 1u ? 0 : g.stride[i];
  if (xy) {
    x = layout_of(inputs[1], "reduction x");
    y = layout_of(inputs[2], "reduction y");
    for (int i = 0; i < dx.nd; i++) ys[i] = (mask >> i) & 1u ? 0 : y.stride[i];
  } else {
    x = dx;  // unused operand slots
    for (int i = 0; i < dx.nd; i++) ys[i] = gs[i];
  }
  size_t count = 1;
  for (int i = 0; i < dx.nd; i++)
    if ((mask >> i) & 1u) count *= static_cast<size_t>(dx.dim[i]);
  const int64_t* strides[4] = {dx.stride.data(), gs, xy ? x.stride.data() : dx.stride.data(), ys};
  Walk w;
  make_walk(w, dx.dim.data(), dx.nd, 4, strides);
  T* dxp = reinterpret_cast<T*>(dx.data);
  const T* gp = reinterpret_cast<const T*>(g.data);
  const T* xp = reinterpret_cast<const T*>(x.data);
  const T* yp = xy ? reinterpret_cast<const T*>(y.data) : gp;
  const T scale = cmd.cmd == CCV_NNC_REDUCE_MEAN_BACKWARD ? static_cast<T>(1.0 / static_cast<double>(count)) : T(1);
  const uint32_t id = cmd.cmd;
  const int64_t s0 = w.inner_stride(0), s1 = w.inner_stride(1), s2 = w.inner_stride(2), s3 = w.inner_stride(3);
  walk_parallel(w, kParallelFrom, [&](const int64_t* off, size_t n) {
    T* d = dxp + off[0];
    const T* gg = gp + off[1];
    const T* xx = xp + off[2];
    const T* yy = yp + off[3];
    const int64_t m = static_cast<int64_t>(n);
    if (id == CCV_NNC_REDUCE_SUM_BACKWARD || id == CCV_NNC_REDUCE_MEAN_BACKWARD) {
      if (s1 == 0) {
        const T v = gg[0] * scale;
        if (s0 == 1)
          for (int64_t i = 0; i < m; i++) d[i] = v;
        else
          for (int64_t i = 0; i < m; i++) d[i * s0] = v;
      } else if (s0 == 1 && s1 == 1) {
        for (int64_t i = 0; i < m; i++) d[i] = gg[i] * scale;
      } else {
        for (int64_t i = 0; i < m; i++) d[i * s0] = gg[i * s1] * scale;
      }
    } else if (id == CCV_NNC_REDUCE_NORM2_BACKWARD) {
      for (int64_t i = 0; i < m; i++) {
        const T yv = yy[i * s3];
        d[i * s0] = yv == 0 ? T(0) : gg[i * s1] * xx[i * s2] / yv;
      }
    } else {
      for (int64_t i = 0; i < m; i++) d[i * s0] = xx[i * s2] == yy[i * s3] ? gg[i * s1] : T(0);
    }
  });
  return CCV_NNC_EXEC_SUCCESS;
}

template <class T>
void arg_forward(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* xt, ccv_nnc_tensor_t* yt) {
  const Layout x = layout_of(xt, "ARGMAX/ARGMIN input");
  const Layout y = layout_of(yt, "ARGMAX/ARGMIN output");
  const int axis = cmd.info.reduce.axis[0];
  size_t O = 1, I = 1;
  for (int d = 0; d < axis; d++) O *= static_cast<size_t>(x.dim[d]);
  for (int d = axis + 1; d < x.nd; d++) I *= static_cast<size_t>(x.dim[d]);
  const size_t R = static_cast<size_t>(x.dim[axis]);
  if (O * R * I == 0) return;
  const bool max = cmd.cmd == CCV_NNC_ARGMAX_FORWARD;
  const Loops<T>& L = loops<T>();
  const T* xp = reinterpret_cast<const T*>(x.data);
  // Packed indices (the usual case) by their position; a view through its layout.
  int32_t* const yp = is_packed(yt) ? reinterpret_cast<int32_t*>(y.data) : nullptr;
  auto put = [&](size_t linear, int32_t v) {
    if (yp)
      yp[linear] = v;
    else
      std::memcpy(at_linear(y, linear), &v, 4);
  };
  const size_t grain = std::max<size_t>(1, kParallelFrom / std::max<size_t>(1, R * std::min(I, kColumnBlock)));
  if (I == 1) {
    range_parallel(O, O * R >= kParallelFrom ? 0 : O + 1, grain, [&](size_t b, size_t e) {
      for (size_t o = b; o < e; o++) put(o, L.row_arg(xp + o * R, R, max));
    });
    return;
  }
  const size_t blocks = (I + kColumnBlock - 1) / kColumnBlock;
  range_parallel(O * blocks, O * R * I >= kParallelFrom ? 0 : O * blocks + 1, grain, [&](size_t b, size_t e) {
    T best[kColumnBlock];
    int32_t at[kColumnBlock];
    for (size_t t = b; t < e; t++) {
      const size_t o = t / blocks, i0 = (t % blocks) * kColumnBlock, n = std::min(kColumnBlock, I - i0);
      L.col_arg(xp + o * R * I + i0, R, static_cast<int64_t>(I), n, max, best, at);
      for (size_t j = 0; j < n; j++) put(o * I + i0 + j, at[j]);
    }
  });
}

}  // namespace

NNC_KERNEL(reduce_forward_opt) {
  if (CCV_GET_DATA_TYPE(inputs[0]->info.datatype) == CCV_64F)
    return forward<double>(cmd, inputs[0], outputs[0], stream_context);
  return forward<float>(cmd, inputs[0], outputs[0], stream_context);
}

NNC_KERNEL(arg_forward_opt) {
  const int dt = CCV_GET_DATA_TYPE(inputs[0]->info.datatype);
  if (!is_packed(inputs[0]) || (dt != CCV_32F && dt != CCV_64F))
    return arg_forward_ref(cmd, hint, flags, inputs, input_size, outputs, output_size, stream_context);
  if (dt == CCV_64F)
    arg_forward<double>(cmd, inputs[0], outputs[0]);
  else
    arg_forward<float>(cmd, inputs[0], outputs[0]);
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(reduce_backward_opt) {
  if (CCV_GET_DATA_TYPE(outputs[0]->info.datatype) == CCV_64F) return backward<double>(cmd, inputs, outputs[0]);
  return backward<float>(cmd, inputs, outputs[0]);
}

}  // namespace nnc::red
