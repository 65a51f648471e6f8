// CPU_OPT kernels of UPSAMPLE for fp32 / fp64: tap tables for every output
// row and column computed once (tap() in double, weights rounded to the
// element type), then rows of the packed B x H x W x C tensors in one block
// per thread, by the widest loops this CPU runs (upsample_body.hpp). Views are packed
// into the workspace first and unpacked after; the workspace holds every
// temporary.
#include <cstring>

#include "cmd/common/axes.hpp"
#include "cmd/common/copy.hpp"
#include "cmd/common/strided.hpp"
#include "cmd/upsample/upsample.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/stream.hpp"
#include "core/tensor.hpp"

namespace nnc::upsample {

namespace generic {
#include "cmd/upsample/upsample_body.hpp"
}  // namespace generic

namespace {

constexpr size_t kParallelFrom = size_t{1} << 14;

size_t round64(size_t n) { return (n + 63) / 64 * 64; }

size_t count_of(const ccv_nnc_tensor_t* t) {
  size_t n = 1;
  for (int i = 0; i < kMaxDim && t->info.dim[i]; i++) n *= static_cast<size_t>(t->info.dim[i]);
  return n;
}

// Workspace: the tables, then packed copies of the input and output views.
template <class T>
struct Work {
  Tables<T> t;
  const T* in = nullptr;
  T* out = nullptr;
  T* rows = nullptr;  // scratch rows, `row` elements each, one per task
  size_t row = 0;
};

// Rows split into this many blocks, each a task with its own scratch row.
size_t tasks_of(size_t rows) {
  const size_t threads = thread_count();
  return threads <= 1 ? 1 : (rows < threads ? rows : threads);
}

// `small` is x (forward) or dx (backward), `big` y or g.
template <class T>
Work<T> prepare(const ccv_nnc_cmd_t& cmd, const ccv_nnc_tensor_t* small, const ccv_nnc_tensor_t* big,
                const ccv_nnc_tensor_t* in, const ccv_nnc_tensor_t* out, ccv_nnc_stream_context_t* stream) {
  const Geometry gs = geometry(small->info), gb = geometry(big->info);
  const int type = cmd.info.upsample.type;
  const bool align = cmd.info.upsample.align_corners;
  const size_t OH = static_cast<size_t>(gb.H), OW = static_cast<size_t>(gb.W), H = static_cast<size_t>(gs.H),
               W = static_cast<size_t>(gs.W);
  const size_t ints = round64((2 * OH + 2 * OW + 2 * H + 2 * W) * sizeof(int));
  // Scratch rows, one per task (see run_rows).
  const size_t row = (OW > W ? OW : W) * gs.C;
  const size_t reals = round64((OH + OW) * sizeof(T)) + round64(tasks_of(gs.B * (OH > H ? OH : H)) * row * sizeof(T));
  const size_t stage_in = is_packed(in) ? 0 : round64(count_of(in) * sizeof(T));
  const size_t stage_out = is_packed(out) ? 0 : round64(count_of(out) * sizeof(T));
  unsigned char* w = static_cast<unsigned char*>(workspace(stream, ints + reals + stage_in + stage_out));
  int* iv = reinterpret_cast<int*>(w);
  T* rv = reinterpret_cast<T*>(w + ints);
  int *h0 = iv, *h1 = h0 + OH, *w0 = h1 + OH, *w1 = w0 + OW, *lo = w1 + OW, *hi = lo + H, *wlo = hi + H,
      *whi = wlo + W;
  T *hl = rv, *wl = rv + OH;
  for (size_t i = 0; i < OH; i++) {
    const Tap a = tap(type, align, static_cast<int>(i), gs.H, gb.H);
    h0[i] = a.i0, h1[i] = a.i1, hl[i] = static_cast<T>(a.l);
  }
  for (size_t i = 0; i < OW; i++) {
    const Tap a = tap(type, align, static_cast<int>(i), gs.W, gb.W);
    w0[i] = a.i0, w1[i] = a.i1, wl[i] = static_cast<T>(a.l);
  }
  // Output rows reading input row iy: from the first whose upper tap reaches
  // iy to the first whose lower tap passes it (both taps never decrease).
  // The same for columns.
  auto readers = [](const int* t0, const int* t1, size_t out, size_t in, int* first, int* end) {
    size_t a = 0, b = 0;
    for (size_t i = 0; i < in; i++) {
      while (a < out && static_cast<size_t>(t1[a]) < i) a++;
      while (b < out && static_cast<size_t>(t0[b]) <= i) b++;
      first[i] = static_cast<int>(a);
      end[i] = static_cast<int>(b < a ? a : b);
    }
  };
  readers(h0, h1, OH, H, lo, hi);
  readers(w0, w1, OW, W, wlo, whi);
  Work<T> k;
  k.t.B = gs.B, k.t.C = gs.C, k.t.H = gs.H, k.t.W = gs.W, k.t.OH = gb.H, k.t.OW = gb.W;
  k.t.nearest = type == CCV_NNC_UPSAMPLE_NEAREST;
  k.t.half_pixel_2x = !k.t.nearest && !align && gb.W == 2 * gs.W;
  k.t.nearest_2x = k.t.nearest && !align && gb.W == 2 * gs.W;
  k.t.h0 = h0, k.t.h1 = h1, k.t.w0 = w0, k.t.w1 = w1, k.t.lo = lo, k.t.hi = hi, k.t.wlo = wlo, k.t.whi = whi;
  k.t.hl = hl, k.t.wl = wl;
  k.rows = rv + round64((OH + OW) * sizeof(T)) / sizeof(T);
  k.row = row;
  if (stage_in) {
    T* buf = reinterpret_cast<T*>(w + ints + reals);
    ccv_nnc_tensor_t p = tensor_value(buf, in->info, 0);
    util::opt_copy(in, &p);
    k.in = buf;
  } else {
    k.in = reinterpret_cast<const T*>(in->data.u8);
  }
  k.out = stage_out ? reinterpret_cast<T*>(w + ints + reals + stage_in) : reinterpret_cast<T*>(out->data.u8);
  return k;
}

template <class T>
void finish(ccv_nnc_tensor_t* out, const T* data) {
  if (is_packed(out)) return;
  const ccv_nnc_tensor_t p = tensor_value(data, out->info, 0);
  util::opt_copy(&p, out);
}

// `rows` rows in tasks_of(rows) blocks (one when small), each with its scratch row.
template <class T>
void run_rows(bool forward, const Work<T>& k, size_t rows, size_t row_elements) {
  const auto& f = cpu_features();
  const size_t tasks = rows * row_elements >= kParallelFrom ? tasks_of(rows) : 1;
  range_parallel(tasks, tasks > 1 ? 0 : 2, 1, [&](size_t q0, size_t q1) {
    for (size_t q = q0; q < q1; q++) {
      const size_t r0 = rows * q / tasks, r1 = rows * (q + 1) / tasks;
      T* tmp = k.rows + q * k.row;
      if (f.avx512)
        forward ? avx512::forward_rows(k.t, k.in, k.out, r0, r1, tmp)
                : avx512::backward_rows(k.t, k.in, k.out, r0, r1, tmp);
      else if (f.avx2)
        forward ? avx2::forward_rows(k.t, k.in, k.out, r0, r1, tmp)
                : avx2::backward_rows(k.t, k.in, k.out, r0, r1, tmp);
      else
        forward ? generic::forward_rows(k.t, k.in, k.out, r0, r1, tmp)
                : generic::backward_rows(k.t, k.in, k.out, r0, r1, tmp);
    }
  });
}

template <class T>
int forward(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* x, ccv_nnc_tensor_t* y, ccv_nnc_stream_context_t* stream) {
  const Work<T> k = prepare<T>(cmd, x, y, x, y, stream);
  run_rows(true, k, k.t.B * static_cast<size_t>(k.t.OH), static_cast<size_t>(k.t.OW) * k.t.C);
  finish(y, k.out);
  return CCV_NNC_EXEC_SUCCESS;
}

template <class T>
int backward(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* g, ccv_nnc_tensor_t* dx, ccv_nnc_stream_context_t* stream) {
  const Work<T> k = prepare<T>(cmd, dx, g, g, dx, stream);
  // A row's cost is the output rows it gathers: about OH / H of them, OW * C each.
  const size_t per_row = static_cast<size_t>(k.t.OW) * k.t.C * (static_cast<size_t>(k.t.OH) / k.t.H + 1);
  run_rows(false, k, k.t.B * static_cast<size_t>(k.t.H), per_row);
  finish(dx, k.out);
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace

NNC_KERNEL(forward_opt) {
  if (CCV_GET_DATA_TYPE(inputs[0]->info.datatype) == CCV_64F)
    return forward<double>(cmd, inputs[0], outputs[0], stream_context);
  return forward<float>(cmd, inputs[0], outputs[0], stream_context);
}

NNC_KERNEL(backward_opt) {
  if (CCV_GET_DATA_TYPE(inputs[0]->info.datatype) == CCV_64F)
    return backward<double>(cmd, inputs[0], outputs[0], stream_context);
  return backward<float>(cmd, inputs[0], outputs[0], stream_context);
}

}  // namespace nnc::upsample
