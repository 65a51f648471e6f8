// CPU_REF kernels of COMPRESSION_LSSC: one 4 x 4 block of one channel at a
// time, in double; the format is described in lssc.cpp.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "cmd/common/image.hpp"
#include "cmd/compression/lssc.hpp"
#include "core/tensor.hpp"

namespace nnc::lssc {

namespace {

uint16_t* at(const Image& im, int n, int y, int x, int c) {
  return reinterpret_cast<uint16_t*>(im.data) + (n * im.sn + y * im.sh + x * im.sw + c * im.sc);
}

// Levels 0 and 3 are lo and hi themselves (also when hi - lo is infinite).
double level(double lo, double hi, int k) { return k == 0 ? lo : k == 3 ? hi : lo + (hi - lo) * k / 3.0; }

void compress(const Image& x, const Image& out) {
  for (int n = 0; n < x.n; n++)
    for (int c = 0; c < x.c; c++)
      for (int by = 0; by < out.h; by++)
        for (int bx = 0; bx < out.w / 4; bx++) {
          double v[16];
          bool inside[16];
          double lo = NAN, hi = NAN;
          for (int i = 0; i < 16; i++) {
            const int y = 4 * by + i / 4, xx = 4 * bx + i % 4;
            inside[i] = y < x.h && xx < x.w;
            v[i] = inside[i] ? half_to_float(*at(x, n, y, xx, c)) : NAN;
            if (std::isnan(v[i])) continue;
            lo = std::isnan(lo) ? v[i] : std::min(lo, v[i]);
            hi = std::isnan(hi) ? v[i] : std::max(hi, v[i]);
          }
          if (std::isnan(lo)) lo = hi = 0;
          uint32_t bits = 0;
          for (int i = 0; i < 16; i++) {
            if (std::isnan(v[i]) || !(hi > lo)) continue;
            const double t = (v[i] - lo) / (hi - lo) * 3;
            int k = v[i] == hi ? 3 : 0;
            if (v[i] != hi && v[i] != lo && std::isfinite(t)) k = static_cast<int>(std::clamp(std::ceil(t - 0.5), 0.0, 3.0));
            bits |= static_cast<uint32_t>(k) << (2 * i);
          }
          // lo and hi are values of x: exact in 16F.
          *at(out, n, by, 4 * bx, c) = float_to_half(static_cast<float>(lo));
          *at(out, n, by, 4 * bx + 1, c) = float_to_half(static_cast<float>(hi));
          *at(out, n, by, 4 * bx + 2, c) = static_cast<uint16_t>(bits & 0xffffu);
          *at(out, n, by, 4 * bx + 3, c) = static_cast<uint16_t>(bits >> 16);
        }
}

void decompress(const Image& in, const Image& y) {
  for (int n = 0; n < y.n; n++)
    for (int c = 0; c < y.c; c++)
      for (int by = 0; by < in.h; by++)
        for (int bx = 0; bx < in.w / 4; bx++) {
          const double lo = half_to_float(*at(in, n, by, 4 * bx, c)), hi = half_to_float(*at(in, n, by, 4 * bx + 1, c));
          const uint32_t bits = *at(in, n, by, 4 * bx + 2, c) | static_cast<uint32_t>(*at(in, n, by, 4 * bx + 3, c)) << 16;
          for (int i = 0; i < 16; i++) {
            const int yy = 4 * by + i / 4, xx = 4 * bx + i % 4;
            if (yy >= y.h || xx >= y.w) continue;
            store_double(at(y, n, yy, xx, c), CCV_16F, level(lo, hi, (bits >> (2 * i)) & 3u));
          }
        }
}

}  // namespace

NNC_KERNEL(forward_ref) {
  for (int i = 0; i < output_size; i++) compress(image_of(inputs[i]), image_of(outputs[i]));
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(backward_ref) {
  for (int i = 0; i < output_size; i++) decompress(image_of(inputs[i]), image_of(outputs[i]));
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::lssc
