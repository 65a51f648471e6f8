// Weight palettes: per block, the palette (exact for few distinct values, a
// 1-d k-means otherwise) and the packed indices. Lloyd's iterations run on
// the block's sorted values with prefix sums, so an iteration costs
// O(2^qbits log n) whatever the block size.
#include "core/palettize.hpp"

#include <algorithm>
#include <atomic>
#include <new>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/tensor.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc {

namespace {

constexpr int kMaxLloyd = 32;

size_t element_size(int datatype) { return datatype == CCV_16F ? 2 : datatype == CCV_32F ? 4 : 8; }

void check_params(const char* name, int datatype, int memory_type, int qbits, int number_in_blocks) {
  NNC_CHECK(datatype == CCV_16F || datatype == CCV_32F || datatype == CCV_64F,
            "%s: datatype is %s; it takes 16F, 32F or 64F", name, datatype_name(datatype));
  NNC_CHECK(memory_type == CCV_TENSOR_CPU_MEMORY, "%s: memory_type 0x%x; only CPU memory is supported", name,
            memory_type);
  NNC_CHECK(qbits >= 4 && qbits <= 8, "%s: qbits is %d; it takes 4 to 8", name, qbits);
  NNC_CHECK(number_in_blocks >= 1 && (static_cast<int64_t>(number_in_blocks) * qbits) % 8 == 0,
            "%s: number_in_blocks is %d; it must be at least 1 with number_in_blocks * qbits (%d) a multiple of 8",
            name, number_in_blocks, qbits);
}

double load(const unsigned char* p, int datatype) {
  switch (datatype) {
    case CCV_16F: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return half_to_float(h);
    }
    case CCV_32F: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    default: {
      double d;
      std::memcpy(&d, p, 8);
      return d;
    }
  }
}

void store(unsigned char* p, int datatype, double v) {
  switch (datatype) {
    case CCV_16F: {
      const uint16_t h = float_to_half(static_cast<float>(v));
      std::memcpy(p, &h, 2);
      break;
    }
    case CCV_32F: {
      const float f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
      break;
    }
    default:
      std::memcpy(p, &v, 8);
  }
}

// The value `v` becomes in `datatype`.
double rounded(double v, int datatype) {
  unsigned char b[8];
  store(b, datatype, v);
  return load(b, datatype);
}

// Index of the entry of the ascending `palette` nearest to v (the lower on a tie).
int nearest(const std::vector<double>& palette, double v) {
  const auto it = std::lower_bound(palette.begin(), palette.end(), v);
  if (it == palette.begin()) return 0;
  if (it == palette.end()) return static_cast<int>(palette.size()) - 1;
  const int hi = static_cast<int>(it - palette.begin()), lo = hi - 1;
  return v - palette[lo] <= palette[hi] - v ? lo : hi;
}

// Squared error of the sorted values against an ascending palette.
double sse(const std::vector<double>& sorted, const std::vector<double>& palette) {
  double e = 0;
  for (double v : sorted) {
    const double d = v - palette[nearest(palette, v)];
    e += d * d;
  }
  return e;
}

// Lloyd's iterations on sorted values from `c` (ascending); returns the
// centroids rounded to the datatype, ascending.
std::vector<double> lloyd(const std::vector<double>& sorted, const std::vector<double>& prefix, std::vector<double> c,
                          int datatype) {
  const size_t k = c.size(), n = sorted.size();
  std::vector<size_t> ends(k), last(k, SIZE_MAX);
  for (int it = 0; it < kMaxLloyd; it++) {
    // Cluster j: the values up to the midpoint with c[j + 1] (inclusive: ties go to the lower).
    for (size_t j = 0; j < k; j++) {
      if (j + 1 == k) {
        ends[j] = n;
        break;
      }
      const double mid = c[j] + (c[j + 1] - c[j]) / 2;
      ends[j] = static_cast<size_t>(std::upper_bound(sorted.begin(), sorted.end(), mid) - sorted.begin());
    }
    if (ends == last) break;
    last = ends;
    size_t begin = 0;
    for (size_t j = 0; j < k; j++) {
      const size_t end = std::max(ends[j], begin);
      if (end > begin) c[j] = (prefix[end] - prefix[begin]) / static_cast<double>(end - begin);
      begin = end;
    }
    std::sort(c.begin(), c.end());
  }
  for (double& v : c) v = rounded(v, datatype);
  std::sort(c.begin(), c.end());
  return c;
}

// The palette of one block (2^qbits entries, ascending).
std::vector<double> palette_of(std::vector<double> sorted, size_t k, int datatype) {
  std::sort(sorted.begin(), sorted.end());
  std::vector<double> distinct;
  for (double v : sorted)
    if (distinct.empty() || distinct.back() != v) distinct.push_back(v);
  if (distinct.size() <= k) {
    distinct.resize(k, distinct.back());
    return distinct;
  }
  const size_t n = sorted.size();
  std::vector<double> prefix(n + 1, 0.0);
  for (size_t i = 0; i < n; i++) prefix[i + 1] = prefix[i] + sorted[i];
  const double lo = sorted.front(), hi = sorted.back();
  std::vector<double> grid(k), quantiles(k);
  for (size_t j = 0; j < k; j++) {
    grid[j] = lo + (hi - lo) * static_cast<double>(j) / static_cast<double>(k - 1);
    quantiles[j] = sorted[std::min(n - 1, static_cast<size_t>((j + 0.5) * static_cast<double>(n) / k))];
  }
  std::vector<double> a = lloyd(sorted, prefix, grid, datatype), b = lloyd(sorted, prefix, quantiles, datatype);
  return sse(sorted, a) <= sse(sorted, b) ? a : b;
}

}  // namespace

size_t palettized_size(int datatype, size_t count, int qbits, int number_in_blocks) {
  const size_t blocks = (count + number_in_blocks - 1) / static_cast<size_t>(number_in_blocks);
  return (size_t{1} << qbits) * element_size(datatype) * blocks + (count * qbits + 7) / 8;
}

size_t palettize(const void* input, int datatype, int memory_type, size_t input_length, int qbits,
                 int number_in_blocks, void* output, size_t output_length) {
  const char* name = "ccv_nnc_palettize";
  check_params(name, datatype, memory_type, qbits, number_in_blocks);
  NNC_CHECK(input_length == 0 || (input && output), "%s: input or output is NULL", name);
  NNC_CHECK(input_length <= (std::numeric_limits<size_t>::max() - 7) / 8, "%s: input_length %zu is too large", name,
            input_length);
  const size_t need = palettized_size(datatype, input_length, qbits, number_in_blocks);
  NNC_CHECK(output_length >= need, "%s: %zu elements in blocks of %d at %d bits take %zu bytes; output_length is %zu",
            name, input_length, number_in_blocks, qbits, need, output_length);
  const size_t es = element_size(datatype), k = size_t{1} << qbits;
  const auto* in = static_cast<const unsigned char*>(input);
  std::vector<double> values;
  values.reserve(input_length);
  for (size_t i = 0; i < input_length; i++) {
    values.push_back(load(in + i * es, datatype));
    NNC_CHECK(std::isfinite(values.back()), "%s: element %zu is %g; the values must be finite", name, i,
              values.back());
  }
  // Blocks are independent and each has a fixed place in the output: in
  // parallel, over the pool (under the compute lock, DESIGN: one pool).
  auto* out = static_cast<unsigned char*>(output);
  const size_t nb = static_cast<size_t>(number_in_blocks), blocks = (input_length + nb - 1) / nb;
  const size_t block_bytes = k * es + nb * qbits / 8;
  std::atomic<bool> failed{false};
  auto body = [&](size_t first, size_t last) {
    try {
      for (size_t b = first; b < last; b++) {
        const size_t begin = b * nb, end = std::min(input_length, begin + nb);
        unsigned char* o = out + b * block_bytes;
        const std::vector<double> block(values.begin() + static_cast<ptrdiff_t>(begin),
                                        values.begin() + static_cast<ptrdiff_t>(end));
        const std::vector<double> palette = palette_of(block, k, datatype);
        for (size_t j = 0; j < k; j++) store(o + j * es, datatype, palette[j]);
        o += k * es;
        std::memset(o, 0, ((end - begin) * qbits + 7) / 8);
        for (size_t j = 0; j < block.size(); j++) {
          const unsigned idx = static_cast<unsigned>(nearest(palette, block[j]));
          for (int bit = 0; bit < qbits; bit++) {
            const size_t at = j * qbits + bit;
            if ((idx >> bit) & 1u) o[at / 8] |= static_cast<unsigned char>(1u << (at % 8));
          }
        }
      }
    } catch (...) {  // only bad_alloc can get here; the pool's body must not throw
      failed = true;
    }
  };
  {
    const auto lock = compute_lock();
    parallel_for(blocks, std::max<size_t>(1, 4096 / nb), body);
  }
  if (failed) throw std::bad_alloc();
  return need;
}

void depalettize(const void* input, int datatype, int memory_type, size_t input_length, int qbits,
                 int number_in_blocks, void* output, size_t output_length) {
  const char* name = "ccv_nnc_depalettize";
  check_params(name, datatype, memory_type, qbits, number_in_blocks);
  NNC_CHECK(output_length == 0 || (input && output), "%s: input or output is NULL", name);
  NNC_CHECK(output_length <= (std::numeric_limits<size_t>::max() - 7) / 8, "%s: output_length %zu is too large",
            name, output_length);
  const size_t need = palettized_size(datatype, output_length, qbits, number_in_blocks);
  NNC_CHECK(input_length >= need, "%s: %zu elements in blocks of %d at %d bits take %zu bytes; input_length is %zu",
            name, output_length, number_in_blocks, qbits, need, input_length);
  const size_t es = element_size(datatype), k = size_t{1} << qbits;
  const auto* in = static_cast<const unsigned char*>(input);
  auto* out = static_cast<unsigned char*>(output);
  for (size_t begin = 0; begin < output_length; begin += static_cast<size_t>(number_in_blocks)) {
    const size_t end = std::min(output_length, begin + static_cast<size_t>(number_in_blocks));
    const unsigned char* palette = in;
    const unsigned char* bits = in + k * es;
    for (size_t j = 0; j < end - begin; j++) {
      // The index starts in byte bit / 8 and may run into the next one (not
      // past the block's index bytes: the index ends inside them).
      const size_t bit = j * qbits, byte = bit / 8;
      unsigned word = bits[byte];
      if ((bit % 8) + qbits > 8) word |= static_cast<unsigned>(bits[byte + 1]) << 8;
      const unsigned idx = (word >> (bit % 8)) & ((1u << qbits) - 1);
      std::memcpy(out + (begin + j) * es, palette + idx * es, es);
    }
    in = bits + ((end - begin) * qbits + 7) / 8;
  }
}

}  // namespace nnc
