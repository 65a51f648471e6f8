// CONVOLUTION on CPU_OPT (fp32, NHWC and NCHW, any strides, groups,
// dilation): implicit GEMM over a zero-padded NHWC copy of the input, with
// the register-blocked micro-kernels of kernels.hpp (AVX-512 or AVX2 + FMA,
// chosen at run time), threaded over output rows on the library's pool under
// the compute lock. All scratch memory is one workspace request per call.
//
// Forward: xpad = x with the padding made explicit (NHWC); weights packed per
// group and block of BW output channels as taps x C/groups x BW (zeros past
// K/groups); each output row is cut into strips of at most max_pix pixels and
// every strip is one micro-kernel call per block: no lowering buffer at all.
// Backward:
//   dx, stride 1 and at least half a block of channels per group: the
//       convolution of g, padded by (KH - 1) * DH - top etc., with the
//       weights flipped in space and transposed (K <-> C), stride 1, same
//       dilation: the forward machinery again, over dx's rows.
//   dx otherwise (a stride above 1, or few channels per group, e.g. a first
//       layer's C = 1): lowering per output row, gcol = g . w (taps x C/groups
//       columns), added into dx; threads take whole images.
//   dw: for each tap and input channel (a row r) and each output channel j,
//       dw[j][r] = sum over pixels of xpad[pixel + tap][c] * g[pixel][j]; the
//       pixels are split into one range per thread with private accumulators,
//       summed at the end. dbias: the sum of g, from the same pass.
// Algorithms (cmd.algorithm; ccv_nnc_cmd_autotune tries them all):
//   0 the default: the widest instruction set, block width by the output
//     channels per group (16 / 32 / 64 floats on AVX-512, 8 / 16 on AVX2);
//   1..3 AVX-512 with blocks of 16, 32, 64 channels; 4..5 AVX2 with 8, 16;
//   6 Winograd (winograd.hpp) for the forward pass, dx and dw wherever it applies
//     (AVX-512 or AVX2 + FMA, stride 1, no dilation, one group, 3 x 3 or 5 x 5).
//     The default takes it too when both sides have at least 16 channels and
//     the output at least 768 pixels (N x OH x OW): 2.5 to 4 times fewer
//     multiply-adds, at a relative error of about 1e-6 instead of 1e-7 (on
//     AVX2, 5x5 C32 fwd 6.1 -> 3.0 ms, 3x3 C64 36 -> 17 ms).
//   The forward of one input channel into channel-major (NCHW) output planes
//     at stride 1 (a first layer) runs plane1.hpp's kernel for algorithms
//     0..5 instead (0 the widest set, 1..3 AVX-512, 4..5 AVX2), which writes
//     the planes directly (forward_plane1); 6 is still Winograd.
//   An algorithm this CPU cannot run falls back to the default.
#include <algorithm>
#include <cstring>
#include <vector>

#include "cmd/common/transpose_avx512.hpp"
#include "cmd/convolution/convolution.hpp"
#include "cmd/convolution/kernels.hpp"
#include "cmd/convolution/plane1.hpp"
#include "cmd/convolution/winograd.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/stream.hpp"

namespace nnc::conv {

const Kernels* kernels() {
  static const Kernels* k = []() -> const Kernels* {
    const CpuFeatures& f = cpu_features();
    if (f.avx512) return kernels_avx512();
    if (f.avx2) return kernels_avx2();
    return nullptr;
  }();
  return k;
}

namespace {

constexpr int kAlgorithms = 7;
constexpr int kWinograd = 6;
constexpr int64_t kWinogradFromPixels = 768;

struct Plan {
  const Kernels* k = nullptr;
  int nz = 1, bw = 8;
};

// Kernel table and block width for `cols` output channels per group.
Plan plan_for(int algorithm, int cols) {
  Plan p;
  p.k = kernels();
  const Kernels* const best = p.k;
  const bool avx512 = best && best->lanes == 16;
  if (algorithm >= 1 && algorithm <= 3 && avx512) {
    p.nz = algorithm == 3 ? 4 : algorithm;
  } else if ((algorithm == 4 || algorithm == 5) && best) {
    p.k = kernels_avx2();
    p.nz = algorithm - 3;
  } else if (best) {
    const int lanes = best->lanes;
    // Narrow outputs waste the least with narrow blocks; from 3 vectors' worth
    // up, the widest block (4 x 16 on AVX-512) measured fastest.
    p.nz = cols <= lanes ? 1 : cols <= 2 * lanes + lanes / 2 ? 2 : best->max_nz;
  }
  if (p.k) p.bw = p.nz * p.k->lanes;
  return p;
}

// Winograd for a stride-1 convolution of `cin` into `cout` channels (see the top).
bool winograd_for(const Geometry& g, int algorithm, int cin, int cout) {
  const Kernels* const k = kernels();
  if (!k || g.G != 1 || g.SH != 1 || g.SW != 1 || g.DH != 1 || g.DW != 1 || g.KH != g.KW ||
      !winograd_tile(g.KH))
    return false;
  // By default only over 768 output pixels or more: the weights' transform
  // and packing cost about as much as a few hundred pixels' products save
  // (3x3, 256 channels at 7 x 7: 8 images 2.8 -> 4.8 ms, 16 about even, 32
  // 10.2 -> 7.7 ms on AVX2; alike on AVX-512), whatever the channel counts.
  return algorithm == kWinograd ||
         (algorithm == 0 && cin >= 16 && cout >= 16 && int64_t{g.N} * g.OH * g.OW >= kWinogradFromPixels);
}

// The Winograd code of the instruction set kernels() chose (its scratch sizes
// belong to it: the two lay their blocks out by their own vector width).
struct WinogradCode {
  size_t (*scratch)(const WinogradRun&);
  void (*run)(const WinogradRun&, float*);
  size_t (*gradient_scratch)(const WinogradGradRun&);
  void (*gradient)(const WinogradGradRun&, float*);
};
const WinogradCode& winograd_code() {
  static const WinogradCode avx512{winograd_scratch_floats, winograd_avx512, winograd_gradient_scratch_floats,
                                   winograd_gradient_avx512};
  static const WinogradCode avx2{winograd_scratch_floats_avx2, winograd_avx2, winograd_gradient_scratch_floats_avx2,
                                 winograd_gradient_avx2};
  return kernels()->lanes == 16 ? avx512 : avx2;
}

// The algorithm a command asks for; ccv_nnc_cmd leaves -1 (none chosen),
// which, like any number past the table, means the default.
int chosen_algorithm(const ccv_nnc_cmd_t& cmd) {
  return cmd.algorithm > 0 && cmd.algorithm < kAlgorithms ? cmd.algorithm : 0;
}

// Bump allocator over one workspace request, 64-byte aligned pieces.
class Arena {
 public:
  void plan(size_t floats) { total_ += (floats * sizeof(float) + 63) / 64 * 64; }
  void start(ccv_nnc_stream_context_t* stream) { base_ = static_cast<unsigned char*>(workspace(stream, total_ + 64)); }
  float* take(size_t floats) {
    float* p = reinterpret_cast<float*>(base_ + used_);
    used_ += (floats * sizeof(float) + 63) / 64 * 64;
    return p;
  }

 private:
  size_t total_ = 0, used_ = 0;
  unsigned char* base_ = nullptr;
};

// Problems below this many multiply-adds run on the calling thread: waking
// the pool costs more than it saves.
constexpr double kThreadedFrom = 1 << 20;

template <class F>
void parallel(size_t n, const F& f, bool threaded = true) {
  if (n == 0) return;
  if (!threaded) {
    f(size_t{0}, n);
    return;
  }
  const F* p = &f;
  parallel_for(n, 1, [p](size_t b, size_t e) { (*p)(b, e); });
}

bool threaded(const Geometry& g) {
  return static_cast<double>(g.N) * g.OH * g.OW * g.K * g.Cg * g.KH * g.KW >= kThreadedFrom;
}

const float* fptr(const unsigned char* p) { return reinterpret_cast<const float*>(p); }

// NCHW <-> NHWC copies by register transposes: 16 x 16 on AVX-512
// (util/transpose_avx512.hpp), 8 x 8 on AVX2 (the kernel table's); NULL
// without either (then the scalar loops below).
using TransposeFn = void (*)(const float* x, int64_t xs, int rows, int cols, float* y, int64_t ys);
TransposeFn fast_transpose() {
  static const TransposeFn f = cpu_features().avx512 ? transpose_f32_avx512
                               : kernels()            ? kernels()->transpose
                                                      : nullptr;
  return f;
}

// dst (NHWC, rows of Wd pixels of C floats) row `row` of image n gets
// src[n, h, w, c] at (h + top, w + left), zeros elsewhere; src is any Image.
// `spread` inserts stride - 1 zero rows / columns between source elements
// (the input gradient's spread g).
struct PadSpec {
  int Hd, Wd;          // destination extent
  int top, left;       // where source (0, 0) lands (may be negative)
  int sh = 1, sw = 1;  // source rows / columns land every sh / sw
};

void pad_rows(const Image& src, float* dst, const PadSpec& s, size_t begin, size_t end) {
  const int C = src.c;
  const float* const base = fptr(src.data);
  for (size_t item = begin; item < end; item++) {
    const int n = static_cast<int>(item / s.Hd), r = static_cast<int>(item % s.Hd);
    float* out = dst + item * static_cast<size_t>(s.Wd) * C;
    const int hr = r - s.top;
    const int h = hr >= 0 && hr % s.sh == 0 ? hr / s.sh : -1;
    if (h < 0 || h >= src.h) {
      std::memset(out, 0, sizeof(float) * static_cast<size_t>(s.Wd) * C);
      continue;
    }
    const float* row = base + n * src.sn + h * src.sh;
    if (src.sw == 1 && s.sw == 1 && (C == 1 || (src.sc != 1 && fast_transpose()))) {
      // Pixels adjacent in the source: zero the edges, then the row is one
      // copy (one channel, NHWC and NCHW alike) or, channel-major (NCHW),
      // its C x W block transposed.
      const int w0 = std::max(0, -s.left), w1 = std::min(src.w, s.Wd - s.left);
      const int first = std::clamp(s.left + w0, 0, s.Wd), last = std::max(first, s.left + w1);
      std::memset(out, 0, sizeof(float) * static_cast<size_t>(first) * C);
      std::memset(out + static_cast<size_t>(last) * C, 0, sizeof(float) * static_cast<size_t>(s.Wd - last) * C);
      if (last == first) continue;
      if (C == 1)
        std::memcpy(out + first, row + w0, sizeof(float) * static_cast<size_t>(w1 - w0));
      else
        fast_transpose()(row + w0, src.sc, C, w1 - w0, out + static_cast<size_t>(first) * C, C);
      continue;
    }
    if (src.sc != 1) {
      // Channel-major source (NCHW): zero the row, then read each channel's
      // row in order and write it across the (L1-sized) destination row.
      std::memset(out, 0, sizeof(float) * static_cast<size_t>(s.Wd) * C);
      for (int c = 0; c < C; c++) {
        const float* in = row + c * src.sc;
        for (int w = 0; w < src.w; w++) {
          const int col = s.left + w * s.sw;
          if (col >= 0 && col < s.Wd) out[static_cast<size_t>(col) * C + c] = in[w * src.sw];
        }
      }
      continue;
    }
    for (int col = 0; col < s.Wd; col++) {
      float* o = out + static_cast<size_t>(col) * C;
      const int wr = col - s.left;
      const int w = wr >= 0 && wr % s.sw == 0 ? wr / s.sw : -1;
      if (w < 0 || w >= src.w) {
        std::memset(o, 0, sizeof(float) * C);
        continue;
      }
      const float* in = row + w * src.sw;
      if (src.sc == 1) {
        std::memcpy(o, in, sizeof(float) * C);
      } else {
        for (int c = 0; c < C; c++) o[c] = in[c * src.sc];
      }
    }
  }
}

// Copy a packed NHWC buffer (N x H x W x C) into an Image of any strides.
void unpack_rows(const float* src, const Image& dst, size_t begin, size_t end) {
  float* const base = reinterpret_cast<float*>(dst.data);
  for (size_t item = begin; item < end; item++) {
    const int n = static_cast<int>(item / dst.h), h = static_cast<int>(item % dst.h);
    const float* in = src + item * static_cast<size_t>(dst.w) * dst.c;
    float* row = base + n * dst.sn + h * dst.sh;
    if (dst.sc == 1) {
      for (int w = 0; w < dst.w; w++)
        std::memcpy(row + w * dst.sw, in + static_cast<size_t>(w) * dst.c, sizeof(float) * dst.c);
    } else if (dst.sw == 1) {  // NCHW: write each channel's row
      for (int c = 0; c < dst.c; c++) {
        float* o = row + c * dst.sc;
        for (int w = 0; w < dst.w; w++) o[w] = in[static_cast<size_t>(w) * dst.c + c];
      }
    } else {
      for (int w = 0; w < dst.w; w++)
        for (int c = 0; c < dst.c; c++) row[w * dst.sw + c * dst.sc] = in[static_cast<size_t>(w) * dst.c + c];
    }
  }
}

// Copy the packed NHWC buffer into `dst`: row by row, or, for a channel-major
// dst (NCHW), plane by plane (sequential writes; the reads stay within one
// image of the buffer).
void unpack(const float* src, const Image& dst, bool threaded_) {
  if (dst.sw == 1 && dst.sc != 1 && fast_transpose()) {  // NCHW: each row's W x C block transposed
    parallel(
        static_cast<size_t>(dst.n) * dst.h,
        [&](size_t b, size_t e) {
          for (size_t item = b; item < e; item++) {
            const int n = static_cast<int>(item / dst.h), h = static_cast<int>(item % dst.h);
            fast_transpose()(src + item * static_cast<size_t>(dst.w) * dst.c, dst.c, dst.w, dst.c,
                             reinterpret_cast<float*>(dst.data) + n * dst.sn + h * dst.sh, dst.sc);
          }
        },
        threaded_);
    return;
  }
  if (dst.sw == 1 && dst.sc != 1) {
    const size_t image = static_cast<size_t>(dst.h) * dst.w * dst.c;
    parallel(
        static_cast<size_t>(dst.n) * dst.c,
        [&](size_t b, size_t e) {
          for (size_t item = b; item < e; item++) {
            const int n = static_cast<int>(item / dst.c), c = static_cast<int>(item % dst.c);
            const float* in = src + n * image + c;
            float* out = reinterpret_cast<float*>(dst.data) + n * dst.sn + c * dst.sc;
            for (int h = 0; h < dst.h; h++) {
              float* o = out + h * dst.sh;
              const float* i = in + static_cast<size_t>(h) * dst.w * dst.c;
              for (int w = 0; w < dst.w; w++) o[w] = i[static_cast<size_t>(w) * dst.c];
            }
          }
        },
        threaded_);
    return;
  }
  parallel(
      static_cast<size_t>(dst.n) * dst.h, [&](size_t b, size_t e) { unpack_rows(src, dst, b, e); }, threaded_);
}

// Longest packed row (pixels x channels, floats) run_strips transposes
// straight into a channel-major output from a buffer on its stack.
constexpr int kRowFloats = 16384;

// Where a kernel writes an NHWC image: straight into the tensor when its
// channels are unit-stride; else, for strip runs (by_rows) into rows of
// unit-stride pixels (NCHW) short enough, one packed row at a time on the
// stack, transposed into the tensor while still in L1 (rows_to); else into a
// packed buffer copied out afterwards (unpack), which costs a write and a
// read of the whole output more (5x5 C1 -> 32, 64 x 28 x 28, NCHW on AVX2:
// 1.07 ms that way, 0.82 by rows).
struct Target {
  float* data;
  int64_t sn, sh, sw;
  bool direct;
  const Image* rows_to = nullptr;
};
Target target_for(const Image& im, Arena* arena, bool reserve, bool by_rows = false) {
  const bool direct = im.sc == 1;
  const bool rows = !direct && by_rows && im.sw == 1 && fast_transpose() &&
                    static_cast<int64_t>(im.w) * im.c <= kRowFloats;
  const int64_t sw = im.c, sh = sw * im.w, sn = sh * im.h;
  if (reserve) {
    if (!direct && !rows) arena->plan(static_cast<size_t>(im.n) * im.h * im.w * im.c);
    return {};
  }
  if (direct) return {reinterpret_cast<float*>(im.data), im.sn, im.sh, im.sw, true};
  if (rows) return {nullptr, sn, sh, sw, false, &im};
  return {arena->take(static_cast<size_t>(im.n) * im.h * im.w * im.c), sn, sh, sw, false};
}

// Strips of one row: `count` pixels cut into near-equal pieces of at most `most`.
template <class F>
void for_strips(int count, int most, const F& f) {
  const int pieces = (count + most - 1) / most;
  const int size = (count + pieces - 1) / pieces;
  for (int s = 0; s < count; s += size) f(s, std::min(size, count - s));
}

// One convolution run through strip(): out rows (n, r) for r < rows, pixels
// q < cols of each, from `in` (NHWC rows of in_w pixels of in_c floats):
//   out[n, r, q, j] = bias[j] + sum_t sum_c in[n, r * rs + .., q * qs + .., c] * wpk
struct StripRun {
  bool threaded;
  const Kernels* k;
  Plan pl;
  const float* in;
  int64_t in_image, in_row;  // floats per image / per row of `in`
  int rs, qs;                // in rows / pixels per out row / pixel
  int in_c;
  const int64_t* tapoff;
  int taps;
  int groups, cin, cols, blocks;  // per group: input channels, output channels, blocks of bw
  const float* wpk;               // [group][block][taps][cin][bw]
  const float* bpk;               // [group][block][bw] or NULL
  Target out;
  int N, rows, pixels;
  int kw = 0;  // see StripArgs::kw
};

void run_strips(const StripRun& s) {
  parallel(
      static_cast<size_t>(s.N) * s.rows,
      [&](size_t b, size_t e) {
        StripArgs a;
        a.tapoff = s.tapoff;
        a.taps = s.taps;
        a.cin = s.cin;
        a.xps = static_cast<int64_t>(s.qs) * s.in_c;
        a.yps = s.out.sw;
        // Streaming stores for large outputs written in place, when every
        // block starts on a cache line (x86's cache line and the 16 lanes).
        const double out_bytes = 4.0 * s.N * s.rows * s.pixels * s.groups * s.cols;
        a.stream = s.k->lanes == 16 && s.out.direct && out_bytes >= static_cast<double>(kStreamBytes) &&
                   reinterpret_cast<uintptr_t>(s.out.data) % 64 == 0 && s.out.sw % 16 == 0 &&
                   s.out.sh % 16 == 0 && s.out.sn % 16 == 0 && (s.groups == 1 || s.cols % 16 == 0);
        int most = s.k->max_pix[s.pl.nz];
        // Row sharing (one input channel) where it keeps strips of 8 or more.
        if (s.kw && s.k->lanes == 16 && rows_pix(s.pl.nz, s.kw) >= 8) {
          a.kw = s.kw;
          most = std::min(most, rows_pix(s.pl.nz, s.kw));
        }
        auto rows_loop = [&](float* row_buffer) {
          for (size_t item = b; item < e; item++) {
            const int n = static_cast<int>(item / s.rows), r = static_cast<int>(item % s.rows);
            const float* in_row = s.in + n * s.in_image + static_cast<int64_t>(r) * s.rs * s.in_row;
            float* out_row = s.out.rows_to ? row_buffer : s.out.data + n * s.out.sn + r * s.out.sh;
            for (int gi = 0; gi < s.groups; gi++)
              for (int kb = 0; kb < s.blocks; kb++) {
                const size_t blk = static_cast<size_t>(gi) * s.blocks + kb;
                a.w = s.wpk + blk * s.taps * s.cin * s.pl.bw;
                a.bias = s.bpk ? s.bpk + blk * s.pl.bw : nullptr;
                a.kvalid = std::min(s.pl.bw, s.cols - kb * s.pl.bw);
                for_strips(s.pixels, most, [&](int q0, int np) {
                  a.x = in_row + static_cast<int64_t>(q0) * a.xps + gi * s.cin;
                  a.y = out_row + q0 * s.out.sw + gi * s.cols + kb * s.pl.bw;
                  a.npix = np;
                  s.k->strip(a, s.pl.nz);
                });
              }
            if (s.out.rows_to) {  // the finished row into the channel-major tensor
              const Image& d = *s.out.rows_to;
              fast_transpose()(row_buffer, s.out.sw, s.pixels, static_cast<int>(s.out.sw),
                               reinterpret_cast<float*>(d.data) + n * d.sn + r * d.sh, d.sc);
            }
          }
        };
        if (s.out.rows_to) {
          alignas(64) float row_buffer[kRowFloats];
          rows_loop(row_buffer);
        } else {
          rows_loop(nullptr);
        }
      },
      s.threaded);
}

// dst = bias + the stride-1 convolution, by Winograd, of src (cin channels)
// placed at (top, left) in a plane of zeros, with the packed weights
// [cout][R][R][cin] that fill_w writes; src and dst of any strides.
template <class FillW>
void winograd_conv(const Image& src, int top, int left, int cout, int R, const FillW& fill_w, const float* bias,
                   int64_t bias_stride, const Image& dst, bool th, ccv_nnc_stream_context_t* stream) {
  WinogradRun r;
  r.N = src.n, r.C = src.c, r.K = cout, r.R = R, r.OH = dst.h, r.OW = dst.w;
  r.in_h = winograd_extent(dst.h, R), r.in_w = winograd_extent(dst.w, R);
  r.threaded = th;
  const size_t in_floats = static_cast<size_t>(r.N) * r.in_h * r.in_w * r.C;
  const size_t w_floats = static_cast<size_t>(cout) * R * R * r.C;
  const size_t scratch_floats = winograd_code().scratch(r);
  Arena arena;
  arena.plan(in_floats), arena.plan(w_floats), arena.plan(static_cast<size_t>(cout)), arena.plan(scratch_floats);
  target_for(dst, &arena, true);
  arena.start(stream);
  float* const in = arena.take(in_floats);
  float* const wk = arena.take(w_floats);
  float* const bk = arena.take(static_cast<size_t>(cout));
  float* const scratch = arena.take(scratch_floats);
  const Target out = target_for(dst, &arena, false);
  fill_w(wk);
  if (bias) {
    for (int k = 0; k < cout; k++) bk[k] = bias[k * bias_stride];
    r.bias = bk;
  }
  r.in = in, r.w = wk;
  r.out = out.data, r.sn = out.sn, r.sh = out.sh, r.sw = out.sw;
  auto lock = compute_lock();
  const PadSpec ps{r.in_h, r.in_w, top, left};
  parallel(
      static_cast<size_t>(r.N) * r.in_h, [&](size_t b, size_t e) { pad_rows(src, in, ps, b, e); }, th);
  winograd_code().run(r, scratch);
  if (!out.direct) unpack(out.data, dst, th);
}

// One input channel into channel-major output planes (NCHW), stride 1, the
// direct algorithms (0..5): plane1.hpp's kernel, which writes the planes directly
// instead of computing NHWC rows and transposing them (5x5 C1 -> 32, 64 x 28
// x 28, padding 2: see the commit log for the figures). The kernel reads
// each image as KW shifted, zero-padded copies (plane1.hpp), made by the
// thread that reaches the image, in its own (L1 / L2-sized) buffer.
// Images whose copies pass 16 MiB (e.g. 7 x 7 over 1024 x 1024: 29 MiB a
// buffer, one per part) keep the row path, whose scratch is one padded input.
constexpr int64_t kPlane1MaxFloats = int64_t{1} << 22;

bool plane1_for(const Geometry& g, int algorithm) {
  return algorithm <= 5 && kernels() && g.C == 1 && g.G == 1 && g.SH == 1 && g.SW == 1 && g.y.sw == 1 &&
         (g.K == 1 || g.y.sc != 1) && int64_t{g.KW} * (g.OH + int64_t{g.KH - 1} * g.DH) * g.OW <= kPlane1MaxFloats;
}

// Like the direct kernels' algorithms: 0 the widest set, 1..3 AVX-512 (where
// the CPU has it), 4..5 AVX2.
void forward_plane1(const Geometry& g, int algorithm, ccv_nnc_stream_context_t* stream) {
  const bool avx512 = kernels()->lanes == 16 && algorithm <= 3;
  const int F = avx512 ? kPlane1FiltersAvx512 : kPlane1FiltersAvx2;
  const int L = avx512 ? kPlane1LanesAvx512 : kPlane1LanesAvx2;
  void (*const kernel)(const Plane1Args&) = avx512 ? plane1_avx512 : plane1_avx2;
  const int taps = g.KH * g.KW, blocks = (g.K + F - 1) / F;
  // Copy j (j < KW) of an image: padded rows r < rows (input row r - PT),
  // columns j * DW .. j * DW + OW - 1 (input column - PL), OW floats a row,
  // then L floats of slack (zeros); the copies one after the other.
  const int rows = g.OH + (g.KH - 1) * g.DH, OW = g.OW;
  const int64_t copy = static_cast<int64_t>(rows) * OW + L, image = copy * g.KW;
  // Threads take runs of (image, block of filters) pairs, a few runs each,
  // and make an image's copies in their own buffer when they reach it.
  const bool th = threaded(g);
  const size_t parts = th ? std::min(static_cast<size_t>(g.N) * blocks, thread_count() * 4) : 1;
  Arena arena;
  arena.plan(parts * image);
  arena.plan(static_cast<size_t>(blocks) * taps * F);
  arena.plan(static_cast<size_t>(blocks) * F);
  arena.plan(static_cast<size_t>(taps) * 2);
  arena.start(stream);
  float* const xs = arena.take(parts * image);
  float* const wpk = arena.take(static_cast<size_t>(blocks) * taps * F);
  float* const bpk = arena.take(static_cast<size_t>(blocks) * F);
  int64_t* const tapoff = reinterpret_cast<int64_t*>(arena.take(static_cast<size_t>(taps) * 2));
  // Weights [block][kh][kw][F], zeros past K; bias [block][F].
  const float* w = fptr(g.w.data);
  for (int kb = 0; kb < blocks; kb++)
    for (int t = 0; t < taps; t++)
      for (int f = 0; f < F; f++) {
        const int k = kb * F + f;
        wpk[(static_cast<size_t>(kb) * taps + t) * F + f] =
            k < g.K ? w[k * g.w.sk + (t / g.KW) * g.w.skh + (t % g.KW) * g.w.skw] : 0.f;
      }
  for (int k = 0; k < blocks * F; k++) bpk[k] = g.bias && k < g.K ? fptr(g.bias)[k * g.bias_stride] : 0.f;
  for (int kh = 0; kh < g.KH; kh++)
    for (int kw = 0; kw < g.KW; kw++) tapoff[kh * g.KW + kw] = kw * copy + static_cast<int64_t>(kh) * g.DH * OW;
  const float* const x = fptr(g.x.data);
  // Image n's copies into buf (see above).
  auto shifted = [&](int n, float* buf) {
    for (int j = 0; j < g.KW; j++) {
      float* out = buf + j * copy;
      // Input columns i landing in 0 .. OW - 1 of this copy: at i + shift.
      const int shift = g.PL - j * g.DW;
      const int i0 = std::clamp(-shift, 0, g.W), i1 = std::clamp(OW - shift, i0, g.W);
      for (int r = 0; r < rows; r++, out += OW) {
        const int h = r - g.PT;
        if (h < 0 || h >= g.H || i1 == i0) {
          std::memset(out, 0, sizeof(float) * OW);
          continue;
        }
        const float* in = x + n * g.x.sn + h * g.x.sh;
        std::memset(out, 0, sizeof(float) * (i0 + shift));
        if (g.x.sw == 1)
          std::memcpy(out + i0 + shift, in + i0, sizeof(float) * (i1 - i0));
        else
          for (int i = i0; i < i1; i++) out[i + shift] = in[i * g.x.sw];
        std::memset(out + i1 + shift, 0, sizeof(float) * (OW - i1 - shift));
      }
      std::memset(out, 0, sizeof(float) * L);
    }
  };
  float* const y = reinterpret_cast<float*>(g.y.data);
  const bool flat = g.y.sh == OW;  // rows of the planes adjacent: one line each
  const size_t items = static_cast<size_t>(g.N) * blocks;
  auto lock = compute_lock();
  parallel(
      parts,
      [&](size_t pb, size_t pe) {
        Plane1Args a;
        a.tapoff = tapoff, a.taps = taps;
        a.ysc = g.y.sc;
        a.lines = flat ? 1 : g.OH, a.len = flat ? g.OH * OW : OW;
        a.xline = OW, a.yline = g.y.sh;
        for (size_t part = pb; part < pe; part++) {
          float* const buf = xs + part * image;
          int have = -1;  // the image in buf
          for (size_t item = items * part / parts; item < items * (part + 1) / parts; item++) {
            const int n = static_cast<int>(item / blocks), kb = static_cast<int>(item % blocks);
            if (n != have) shifted(n, buf), have = n;
            a.x = buf;
            a.w = wpk + static_cast<size_t>(kb) * taps * F;
            a.bias = g.bias ? bpk + kb * F : nullptr;
            a.y = y + n * g.y.sn + static_cast<int64_t>(kb) * F * g.y.sc;
            a.fvalid = std::min(F, g.K - kb * F);
            kernel(a);
          }
        }
      },
      th);
}

NNC_KERNEL(forward_impl) {
  const Geometry g = geometry(cmd, hint, inputs[0], inputs[1], input_size > 2 ? inputs[2] : nullptr, outputs[0],
                              "CONVOLUTION_FORWARD");
  // One input channel with rows of 3 or 5 taps shares broadcasts across a
  // row (StripArgs::kw); by default on AVX-512 its blocks are one vector wide,
  // which leaves room for the longest strips.
  const bool rows = g.C == 1 && g.SW == 1 && g.DW == 1 && (g.KW == 3 || g.KW == 5);
  const bool avx512 = kernels() && kernels()->lanes == 16;
  const int algorithm = chosen_algorithm(cmd);
  if (plane1_for(g, algorithm)) {
    forward_plane1(g, algorithm, stream_context);
    return CCV_NNC_EXEC_SUCCESS;
  }
  const Plan pl = plan_for(algorithm == 0 && rows && avx512 ? 1 : algorithm, g.Kg);
  if (!pl.k) return forward_ref(cmd, hint, flags, inputs, input_size, outputs, output_size, stream_context);
  if (winograd_for(g, algorithm, g.C, g.K)) {
    const float* w = fptr(g.w.data);
    const int R = g.KH;
    winograd_conv(
        g.x, g.PT, g.PL, g.K, R,
        [&](float* wk) {
          for (int k = 0; k < g.K; k++)
            for (int i = 0; i < R; i++)
              for (int j = 0; j < R; j++)
                for (int c = 0; c < g.C; c++)
                  *wk++ = w[k * g.w.sk + i * g.w.skh + j * g.w.skw + c * g.w.sc];
        },
        g.bias ? fptr(g.bias) : nullptr, g.bias_stride, g.y, threaded(g), stream_context);
    return CCV_NNC_EXEC_SUCCESS;
  }
  const int bw = pl.bw, blocks = (g.Kg + bw - 1) / bw, taps = g.KH * g.KW;
  const int Hp = g.H + g.PT + g.PB, Wp = g.W + g.PL + g.PR;
  const bool th = threaded(g);
  Arena arena;
  arena.plan(static_cast<size_t>(g.N) * Hp * Wp * g.C);
  arena.plan(static_cast<size_t>(g.G) * blocks * taps * g.Cg * bw);
  arena.plan(static_cast<size_t>(g.G) * blocks * bw);
  arena.plan(static_cast<size_t>(taps) * 2);
  target_for(g.y, &arena, true, true);
  arena.start(stream_context);
  float* xpad = arena.take(static_cast<size_t>(g.N) * Hp * Wp * g.C);
  float* wpk = arena.take(static_cast<size_t>(g.G) * blocks * taps * g.Cg * bw);
  float* bpk = arena.take(static_cast<size_t>(g.G) * blocks * bw);
  int64_t* tapoff = reinterpret_cast<int64_t*>(arena.take(static_cast<size_t>(taps) * 2));
  const Target out = target_for(g.y, &arena, false, true);
  // Weights: [group][block][kh][kw][c][j], zeros past the group's filters.
  const float* w = fptr(g.w.data);
  for (int gi = 0; gi < g.G; gi++)
    for (int kb = 0; kb < blocks; kb++) {
      float* dst = wpk + (static_cast<size_t>(gi) * blocks + kb) * taps * g.Cg * bw;
      for (int kh = 0; kh < g.KH; kh++)
        for (int kw = 0; kw < g.KW; kw++)
          for (int c = 0; c < g.Cg; c++, dst += bw)
            for (int j = 0; j < bw; j++) {
              const int k = kb * bw + j;
              dst[j] = k < g.Kg ? w[(gi * g.Kg + k) * g.w.sk + kh * g.w.skh + kw * g.w.skw + c * g.w.sc] : 0.f;
            }
      float* bdst = bpk + (static_cast<size_t>(gi) * blocks + kb) * bw;
      for (int j = 0; j < bw; j++) {
        const int k = kb * bw + j;
        bdst[j] = g.bias && k < g.Kg ? fptr(g.bias)[(gi * g.Kg + k) * g.bias_stride] : 0.f;
      }
    }
  for (int kh = 0; kh < g.KH; kh++)
    for (int kw = 0; kw < g.KW; kw++)
      tapoff[kh * g.KW + kw] = (static_cast<int64_t>(kh) * g.DH * Wp + static_cast<int64_t>(kw) * g.DW) * g.C;
  auto lock = compute_lock();
  const PadSpec ps{Hp, Wp, g.PT, g.PL};
  parallel(
      static_cast<size_t>(g.N) * Hp, [&](size_t b, size_t e) { pad_rows(g.x, xpad, ps, b, e); }, th);
  StripRun s;
  s.threaded = th;
  s.k = pl.k, s.pl = pl;
  s.in = xpad, s.in_row = static_cast<int64_t>(Wp) * g.C, s.in_image = s.in_row * Hp;
  s.rs = g.SH, s.qs = g.SW, s.in_c = g.C;
  s.tapoff = tapoff, s.taps = taps;
  s.groups = g.G, s.cin = g.Cg, s.cols = g.Kg, s.blocks = blocks;
  s.wpk = wpk, s.bpk = g.bias ? bpk : nullptr;
  s.out = out;
  s.N = g.N, s.rows = g.OH, s.pixels = g.OW;
  if (rows) s.kw = g.KW;
  run_strips(s);
  if (!out.direct && !out.rows_to) unpack(out.data, g.y, th);
  return CCV_NNC_EXEC_SUCCESS;
}

// dx: see the top of the file.
void input_gradient(const Geometry& g, const Plan& pl, const Image& dx, ccv_nnc_stream_context_t* stream) {
  const int bw = pl.bw, blocks = (g.Cg + bw - 1) / bw, taps = g.KH * g.KW;
  const bool th = threaded(g);
  const int top = (g.KH - 1) * g.DH - g.PT, left = (g.KW - 1) * g.DW - g.PL;
  const int Hs = g.H + (g.KH - 1) * g.DH, Ws = g.W + (g.KW - 1) * g.DW;
  Arena arena;
  arena.plan(static_cast<size_t>(g.N) * Hs * Ws * g.K);
  arena.plan(static_cast<size_t>(g.G) * blocks * taps * g.Kg * bw);
  arena.plan(static_cast<size_t>(taps) * 2);
  target_for(dx, &arena, true, true);
  arena.start(stream);
  float* gpad = arena.take(static_cast<size_t>(g.N) * Hs * Ws * g.K);
  float* wpk = arena.take(static_cast<size_t>(g.G) * blocks * taps * g.Kg * bw);
  int64_t* tapoff = reinterpret_cast<int64_t*>(arena.take(static_cast<size_t>(taps) * 2));
  const Target out = target_for(dx, &arena, false, true);
  // Flipped, transposed weights: [group][block of c][a][b][k][j] = w[k][KH-1-a][KW-1-b][c = block * bw + j].
  const float* w = fptr(g.w.data);
  for (int gi = 0; gi < g.G; gi++)
    for (int cb = 0; cb < blocks; cb++) {
      float* dst = wpk + (static_cast<size_t>(gi) * blocks + cb) * taps * g.Kg * bw;
      for (int a = 0; a < g.KH; a++)
        for (int b = 0; b < g.KW; b++)
          for (int k = 0; k < g.Kg; k++, dst += bw)
            for (int j = 0; j < bw; j++) {
              const int c = cb * bw + j;
              dst[j] =
                  c < g.Cg
                      ? w[(gi * g.Kg + k) * g.w.sk + (g.KH - 1 - a) * g.w.skh + (g.KW - 1 - b) * g.w.skw + c * g.w.sc]
                      : 0.f;
            }
    }
  for (int a = 0; a < g.KH; a++)
    for (int b = 0; b < g.KW; b++)
      tapoff[a * g.KW + b] = (static_cast<int64_t>(a) * g.DH * Ws + static_cast<int64_t>(b) * g.DW) * g.K;
  auto lock = compute_lock();
  PadSpec ps{Hs, Ws, top, left};
  ps.sh = g.SH, ps.sw = g.SW;
  parallel(
      static_cast<size_t>(g.N) * Hs, [&](size_t b, size_t e) { pad_rows(g.y, gpad, ps, b, e); }, th);
  StripRun s;
  s.threaded = th;
  s.k = pl.k, s.pl = pl;
  s.in = gpad, s.in_row = static_cast<int64_t>(Ws) * g.K, s.in_image = s.in_row * Hs;
  s.rs = 1, s.qs = 1, s.in_c = g.K;
  s.tapoff = tapoff, s.taps = taps;
  s.groups = g.G, s.cin = g.Kg, s.cols = g.Cg, s.blocks = blocks;
  s.wpk = wpk, s.bpk = nullptr;
  s.out = out;
  s.N = g.N, s.rows = g.H, s.pixels = g.W;
  run_strips(s);
  if (!out.direct && !out.rows_to) unpack(out.data, dx, th);
}

// dx by lowering: for each output row, gcol[ow][tap, c] = sum_k g[ow][k] *
// w[k][tap][c] (one strip run with a single tap and K/groups inputs), then
// each gcol row is added into the dx pixels its taps came from. Used when
// the transposed convolution would waste most of its lanes (few channels
// per group) or its work on the zeros of a stride above 1. Threads take
// whole images, so no two add into one dx element.
void input_gradient_col2im(const Geometry& g, const Plan& pl, const Image& dx, ccv_nnc_stream_context_t* stream) {
  const int taps = g.KH * g.KW, cols = taps * g.Cg;
  const int bw = pl.bw, blocks = (cols + bw - 1) / bw, colp = blocks * bw;
  const bool th = threaded(g);
  const size_t parts = th ? std::min(static_cast<size_t>(g.N), thread_count()) : 1;
  const bool pack_g = g.y.sc != 1;
  Arena arena;
  arena.plan(static_cast<size_t>(g.G) * blocks * g.Kg * bw);
  arena.plan(parts * g.OW * colp);
  if (pack_g) arena.plan(static_cast<size_t>(g.N) * g.OH * g.OW * g.K);
  arena.plan(2);
  target_for(dx, &arena, true);
  arena.start(stream);
  float* wpk = arena.take(static_cast<size_t>(g.G) * blocks * g.Kg * bw);
  float* gcol = arena.take(parts * g.OW * colp);
  float* gpk = pack_g ? arena.take(static_cast<size_t>(g.N) * g.OH * g.OW * g.K) : nullptr;
  int64_t* tapoff = reinterpret_cast<int64_t*>(arena.take(2));
  tapoff[0] = 0;
  const Target out = target_for(dx, &arena, false);
  // [group][block][k][j] = w[k][tap, c = block * bw + j].
  const float* w = fptr(g.w.data);
  for (int gi = 0; gi < g.G; gi++)
    for (int cb = 0; cb < blocks; cb++) {
      float* dst = wpk + (static_cast<size_t>(gi) * blocks + cb) * g.Kg * bw;
      for (int k = 0; k < g.Kg; k++, dst += bw)
        for (int j = 0; j < bw; j++) {
          const int col = cb * bw + j;
          if (col >= cols) {
            dst[j] = 0.f;
            continue;
          }
          const int t = col / g.Cg, c = col % g.Cg;
          dst[j] = w[(gi * g.Kg + k) * g.w.sk + (t / g.KW) * g.w.skh + (t % g.KW) * g.w.skw + c * g.w.sc];
        }
    }
  auto lock = compute_lock();
  // g with unit-stride channels: as given, or packed NHWC.
  const float* gsrc = fptr(g.y.data);
  int64_t gsn = g.y.sn, gsh = g.y.sh, gsw = g.y.sw;
  if (pack_g) {
    const PadSpec ps{g.OH, g.OW, 0, 0};
    parallel(
        static_cast<size_t>(g.N) * g.OH, [&](size_t b, size_t e) { pad_rows(g.y, gpk, ps, b, e); }, th);
    gsrc = gpk, gsw = g.K, gsh = gsw * g.OW, gsn = gsh * g.OH;
  }
  const int most = pl.k->max_pix[pl.nz];
  const int KH = g.KH, KW = g.KW, Cg = g.Cg, SH = g.SH, DH = g.DH, PT = g.PT, SW = g.SW, DW = g.DW, PL = g.PL;
  const int H = g.H, W = g.W, OW = g.OW;
  const int64_t osh = out.sh, osw = out.sw;
  parallel(
      parts,
      [&](size_t pb, size_t pe) {
        for (size_t part = pb; part < pe; part++) {
          float* row = gcol + part * g.OW * colp;
          const size_t n0 = g.N * part / parts, n1 = g.N * (part + 1) / parts;
          StripArgs a;
          a.tapoff = tapoff;
          a.taps = 1;
          a.cin = g.Kg;
          a.xps = gsw;
          a.yps = colp;
          for (size_t nn = n0; nn < n1; nn++) {
            const int n = static_cast<int>(nn);
            float* img = out.data + n * out.sn;
            for (int h = 0; h < H; h++) {
              if (osw == g.C) {
                std::memset(img + h * osh, 0, sizeof(float) * g.C * W);
                continue;
              }
              for (int x0 = 0; x0 < W; x0++) std::memset(img + h * osh + x0 * osw, 0, sizeof(float) * g.C);
            }
            for (int oh = 0; oh < g.OH; oh++) {
              const float* grow = gsrc + n * gsn + oh * gsh;
              for (int gi = 0; gi < g.G; gi++) {
                for (int cb = 0; cb < blocks; cb++) {
                  a.w = wpk + (static_cast<size_t>(gi) * blocks + cb) * g.Kg * bw;
                  a.bias = nullptr;
                  a.kvalid = bw;
                  for_strips(g.OW, most, [&](int q0, int np) {
                    a.x = grow + q0 * gsw + gi * g.Kg;
                    a.y = row + static_cast<size_t>(q0) * colp + cb * bw;
                    a.npix = np;
                    pl.k->strip(a, pl.nz);
                  });
                }
                // Add gcol into dx, tap row by tap row (locals keep the index
                // arithmetic out of memory: the stores may alias nothing here).
                for (int kh = 0; kh < KH; kh++) {
                  const int ih = oh * SH + kh * DH - PT;
                  if (ih < 0 || ih >= H) continue;
                  float* const drow = img + ih * osh + gi * Cg;
                  for (int ow = 0; ow < OW; ow++) {
                    const float* src = row + static_cast<size_t>(ow) * colp + kh * KW * Cg;
                    const int iw0 = ow * SW - PL;
                    for (int kw = 0; kw < KW; kw++) {
                      const int iw = iw0 + kw * DW;
                      if (iw < 0 || iw >= W) continue;
                      float* d = drow + iw * osw;
                      const float* v = src + kw * Cg;
                      if (Cg == 1)
                        d[0] += v[0];
                      else
                        for (int c = 0; c < Cg; c++) d[c] += v[c];
                    }
                  }
                }
              }
            }
          }
        }
      },
      th);
  if (!out.direct) unpack(out.data, dx, th);
}

// dbias[k] = value(k) for the K elements of db_t, whatever its shape and strides.
template <class F>
void write_bias(ccv_nnc_tensor_t* db_t, int K, const F& value) {
  const Layout b = layout_of(db_t);
  int64_t stride = 1;
  for (int i = 0; i < b.nd; i++)
    if (b.dim[i] == K) stride = b.stride[i];
  float* out = reinterpret_cast<float*>(b.data);
  for (int k = 0; k < K; k++) out[k * stride] = value(k);
}

// dw and dbias: see the top of the file.
void weight_gradient(const Geometry& g, const Plan& pl, ccv_nnc_tensor_t* dw_t, ccv_nnc_tensor_t* db_t,
                     ccv_nnc_stream_context_t* stream) {
  const int bw = pl.bw, blocks = (g.Kg + bw - 1) / bw, taps = g.KH * g.KW;
  const int Kgp = blocks * bw;  // padded filters per group
  const int Hp = g.H + g.PT + g.PB, Wp = g.W + g.PL + g.PR;
  const int rows = taps * g.Cg;
  const size_t items = static_cast<size_t>(g.N) * g.OH;
  const bool th = threaded(g);
  const size_t parts = th ? std::min(items, thread_count()) : 1;
  const bool need_x = dw_t != nullptr;  // dx + dbias: only g is packed and summed
  Arena arena;
  if (need_x) arena.plan(static_cast<size_t>(g.N) * Hp * Wp * g.C);
  // Output rows go to the kernel in runs of up to `chunk` rows of one image,
  // so that each accumulator load / store serves ~100 pixels or more.
  const int chunk = std::clamp(8192 / (g.G * Kgp) / g.OW, 1, g.OH);  // ~32 KB of g: L1
  arena.plan(parts * chunk * g.OW * g.G * Kgp);                      // per part: `chunk` packed rows of g
  arena.plan(parts * g.G * rows * Kgp);                              // per part dw^T accumulators
  arena.plan(parts * g.G * Kgp);                                     // per part dbias
  arena.plan(static_cast<size_t>(g.G) * rows * 2);                   // row offsets
  arena.start(stream);
  float* xpad = need_x ? arena.take(static_cast<size_t>(g.N) * Hp * Wp * g.C) : nullptr;
  float* gpk = arena.take(parts * chunk * g.OW * g.G * Kgp);
  float* acc = arena.take(parts * g.G * rows * Kgp);
  float* dbp = arena.take(parts * g.G * Kgp);
  int64_t* rowoff = reinterpret_cast<int64_t*>(arena.take(static_cast<size_t>(g.G) * rows * 2));
  for (int gi = 0; gi < g.G; gi++)
    for (int kh = 0; kh < g.KH; kh++)
      for (int kw = 0; kw < g.KW; kw++)
        for (int c = 0; c < g.Cg; c++)
          rowoff[(static_cast<size_t>(gi) * taps + kh * g.KW + kw) * g.Cg + c] =
              (static_cast<int64_t>(kh) * g.DH * Wp + static_cast<int64_t>(kw) * g.DW) * g.C + gi * g.Cg + c;
  auto lock = compute_lock();
  if (need_x) {
    const PadSpec ps{Hp, Wp, g.PT, g.PL};
    parallel(
        static_cast<size_t>(g.N) * Hp, [&](size_t b, size_t e) { pad_rows(g.x, xpad, ps, b, e); }, th);
  }
  const int64_t gps = static_cast<int64_t>(g.G) * Kgp;
  const int max_rows = pl.k->max_rows[pl.nz];
  parallel(
      parts,
      [&](size_t pb, size_t pe) {
        for (size_t part = pb; part < pe; part++) {
          const size_t i0 = items * part / parts, i1 = items * (part + 1) / parts;
          float* my_acc = acc + part * g.G * rows * Kgp;
          float* my_db = dbp + part * g.G * Kgp;
          std::memset(my_acc, 0, sizeof(float) * g.G * rows * Kgp);
          std::memset(my_db, 0, sizeof(float) * g.G * Kgp);
          const float* src = fptr(g.y.data);
          for (size_t first = i0; first < i1;) {
            const int n = static_cast<int>(first / g.OH), oh0 = static_cast<int>(first % g.OH);
            const int count = static_cast<int>(
                std::min<size_t>({i1 - first, static_cast<size_t>(g.OH - oh0), static_cast<size_t>(chunk)}));
            float* const gchunk = gpk + part * chunk * g.OW * gps;
            for (int j = 0; j < count; j++) {
              const int oh = oh0 + j;
              // Pack g's row: [ow][group][Kgp], zeros past each group's filters; sum dbias.
              float* grow = gchunk + static_cast<size_t>(j) * g.OW * gps;
              const float* srow = src + n * g.y.sn + oh * g.y.sh;
              if (g.y.sc != 1) {  // channel-major g (NCHW): each channel's row in order
                std::memset(grow, 0, sizeof(float) * g.OW * gps);
                for (int gi = 0; gi < g.G; gi++)
                  for (int k = 0; k < g.Kg; k++) {
                    const float* in = srow + (gi * g.Kg + k) * g.y.sc;
                    float* o = grow + gi * Kgp + k;
                    for (int ow = 0; ow < g.OW; ow++) o[ow * gps] = in[ow * g.y.sw];
                  }
              }
              for (int ow = 0; ow < g.OW; ow++) {
                float* o = grow + ow * gps;
                const float* in = srow + ow * g.y.sw;
                for (int gi = 0; gi < g.G; gi++) {
                  float* og = o + gi * Kgp;
                  if (g.y.sc == 1) {
                    std::memcpy(og, in + gi * g.Kg, sizeof(float) * g.Kg);
                    for (int k = g.Kg; k < Kgp; k++) og[k] = 0.f;
                  }
                  float* db = my_db + gi * Kgp;
                  for (int k = 0; k < g.Kg; k++) db[k] += og[k];
                }
              }
            }
            first += static_cast<size_t>(count);
            if (!need_x) continue;
            WgradArgs a;
            a.x = xpad + ((static_cast<int64_t>(n) * Hp + static_cast<int64_t>(oh0) * g.SH) * Wp) * g.C;
            a.xps = static_cast<int64_t>(g.SW) * g.C;
            a.gps = gps;
            a.npix = g.OW;
            a.ldacc = Kgp;
            a.nrows = count;
            a.xrs = static_cast<int64_t>(g.SH) * Wp * g.C;
            a.grs = static_cast<int64_t>(g.OW) * gps;
            for (int gi = 0; gi < g.G; gi++)
              for (int r0 = 0; r0 < rows; r0 += max_rows) {
                a.rowoff = rowoff + static_cast<size_t>(gi) * rows + r0;
                a.rows = std::min(max_rows, rows - r0);
                for (int kb = 0; kb < blocks; kb++) {
                  a.g = gchunk + gi * Kgp + kb * bw;
                  a.acc = my_acc + (static_cast<size_t>(gi) * rows + r0) * Kgp + kb * bw;
                  pl.k->wgrad(a, pl.nz);
                }
              }
          }
        }
      },
      th);
  // Sum the parts and write dw (transposing rows x filters back) and dbias.
  if (dw_t) {
    const Weights dw = weights_of(dw_t);
    float* out = reinterpret_cast<float*>(dw.data);
    parallel(
        static_cast<size_t>(g.K),
        [&](size_t b, size_t e) {
          for (size_t k = b; k < e; k++) {
            const int gi = static_cast<int>(k) / g.Kg, kk = static_cast<int>(k) % g.Kg;
            for (int kh = 0; kh < g.KH; kh++)
              for (int kw = 0; kw < g.KW; kw++)
                for (int c = 0; c < g.Cg; c++) {
                  const size_t r = static_cast<size_t>(kh * g.KW + kw) * g.Cg + c;
                  float s = 0;
                  for (size_t part = 0; part < parts; part++) s += acc[((part * g.G + gi) * rows + r) * Kgp + kk];
                  out[static_cast<int64_t>(k) * dw.sk + kh * dw.skh + kw * dw.skw + c * dw.sc] = s;
                }
          }
        },
        th);
  }
  if (db_t)
    write_bias(db_t, g.K, [&](int k) {
      float s = 0;
      for (size_t part = 0; part < parts; part++) s += dbp[(part * g.G + k / g.Kg) * Kgp + k % g.Kg];
      return s;
    });
}

// dw (and dbias) by Winograd: see winograd.hpp.
void weight_gradient_winograd(const Geometry& g, ccv_nnc_tensor_t* dw_t, ccv_nnc_tensor_t* db_t,
                              ccv_nnc_stream_context_t* stream) {
  WinogradGradRun r;
  r.N = g.N, r.C = g.C, r.K = g.K, r.R = g.KH, r.OH = g.OH, r.OW = g.OW;
  r.in_h = winograd_extent(g.OH, r.R), r.in_w = winograd_extent(g.OW, r.R);
  r.threaded = threaded(g);
  const bool g_direct = g.y.sc == 1;
  const size_t in_floats = static_cast<size_t>(r.N) * r.in_h * r.in_w * r.C;
  const size_t g_floats = g_direct ? 0 : static_cast<size_t>(r.N) * r.OH * r.OW * r.K;
  const size_t dw_floats = static_cast<size_t>(r.K) * r.R * r.R * r.C;
  const size_t scratch_floats = winograd_code().gradient_scratch(r);
  Arena arena;
  arena.plan(in_floats), arena.plan(g_floats), arena.plan(dw_floats), arena.plan(static_cast<size_t>(r.K));
  arena.plan(scratch_floats);
  arena.start(stream);
  float* const in = arena.take(in_floats);
  float* const gpk = arena.take(g_floats);
  float* const dwk = arena.take(dw_floats);
  float* const dbk = arena.take(static_cast<size_t>(r.K));
  float* const scratch = arena.take(scratch_floats);
  auto lock = compute_lock();
  const PadSpec ps{r.in_h, r.in_w, g.PT, g.PL};
  parallel(
      static_cast<size_t>(r.N) * r.in_h, [&](size_t b, size_t e) { pad_rows(g.x, in, ps, b, e); }, r.threaded);
  if (g_direct) {
    r.g = fptr(g.y.data), r.gsn = g.y.sn, r.gsh = g.y.sh, r.gsw = g.y.sw;
  } else {  // channel-major g: pack it NHWC first
    const PadSpec gs{r.OH, r.OW, 0, 0};
    parallel(
        static_cast<size_t>(r.N) * r.OH, [&](size_t b, size_t e) { pad_rows(g.y, gpk, gs, b, e); }, r.threaded);
    r.g = gpk, r.gsw = r.K, r.gsh = static_cast<int64_t>(r.OW) * r.K, r.gsn = r.gsh * r.OH;
  }
  r.in = in, r.dw = dwk, r.dbias = db_t ? dbk : nullptr;
  winograd_code().gradient(r, scratch);
  if (dw_t) {
    const Weights dw = weights_of(dw_t);
    float* out = reinterpret_cast<float*>(dw.data);
    const float* src = dwk;
    for (int k = 0; k < g.K; k++)
      for (int i = 0; i < r.R; i++)
        for (int j = 0; j < r.R; j++)
          for (int c = 0; c < g.C; c++) out[k * dw.sk + i * dw.skh + j * dw.skw + c * dw.sc] = *src++;
  }
  if (db_t) write_bias(db_t, g.K, [&](int k) { return dbk[k]; });
}

NNC_KERNEL(backward_impl) {
  const BackwardIo io = backward_io(inputs, input_size, outputs, output_size);
  if (!io.dx && !io.dw) {
    bias_gradient_only(io.g, io.dbias);
    return CCV_NNC_EXEC_SUCCESS;
  }
  const Geometry g = geometry(cmd, hint, io.x, io.w, nullptr, io.g, "CONVOLUTION_BACKWARD");
  if (!kernels()) return backward_ref(cmd, hint, flags, inputs, input_size, outputs, output_size, stream_context);
  const int algorithm = chosen_algorithm(cmd);
  if (io.dw && winograd_for(g, algorithm, g.C, g.K))
    weight_gradient_winograd(g, io.dw, io.dbias, stream_context);
  else if (io.dw || io.dbias)
    weight_gradient(g, plan_for(algorithm, g.Kg), io.dw, io.dbias, stream_context);
  if (io.dx) {
    // Few channels per group, or a stride above 1: lower; else the transposed convolution.
    const Plan direct = plan_for(algorithm, g.Cg);
    if (winograd_for(g, algorithm, g.K, g.C)) {
      const float* w = fptr(g.w.data);
      const int R = g.KH;
      winograd_conv(
          g.y, R - 1 - g.PT, R - 1 - g.PL, g.C, R,
          [&](float* wk) {  // flipped in space, K and C swapped
            for (int c = 0; c < g.C; c++)
              for (int a = 0; a < R; a++)
                for (int b = 0; b < R; b++)
                  for (int k = 0; k < g.K; k++)
                    *wk++ = w[k * g.w.sk + (R - 1 - a) * g.w.skh + (R - 1 - b) * g.w.skw + c * g.w.sc];
          },
          nullptr, 0, image_of(io.dx), threaded(g), stream_context);
    } else if (g.Cg * 2 <= direct.bw || g.SH > 1 || g.SW > 1)
      input_gradient_col2im(g, plan_for(algorithm, g.KH * g.KW * g.Cg), image_of(io.dx), stream_context);
    else
      input_gradient(g, direct, image_of(io.dx), stream_context);
  }
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace

void register_cpu_opt(Registry& r) {
  // The pool's every thread, under the compute lock.
  r.add_kernels(cpu_opt(CCV_32F, formats::kImage).with_algorithms(kAlgorithms).exclusive_use(),
                {{CCV_NNC_CONVOLUTION_FORWARD, forward_impl}, {CCV_NNC_CONVOLUTION_BACKWARD, backward_impl}});
}

}  // namespace nnc::conv
