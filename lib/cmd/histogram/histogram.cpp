// HISTOGRAM: counts of a tensor's values in bins, and optionally its
// statistics. Every count is overwritten (nothing accumulates across calls).
//   Forward inputs |x| or |x|edges| (edges read only in the explicit-bins
//     mode), outputs |h| or
//     |h|stats|: x any shape or view, a floating-point type; h is 32S [m];
//     stats is x's type, [4]: min, max, sum and sum of squares of x's values
//     that are not NaN (min and max NaN, the sums 0, when there are none).
//     The modes (histogram.type), each with NaNs counted in h's last entry:
//     EVEN (bins, min < max): m = bins + 3; h[0] counts x < min, h[1 + i]
//       min + i w <= x < min + (i + 1) w with w = (max - min) / bins (edges
//       computed in double), h[bins + 1] x >= max.
//     LOGARITHMIC (0 < min < max, rate > 1): with U = ceil(log(max / min) /
//       log(rate)) magnitude bins, bin k holding min rate^k <= |x| < min
//       rate^(k + 1) (the last one unbounded above), m = 2U + 2: h[U - 1 - k]
//       counts the negative x of bin k, h[U] the |x| < min (zero included),
//       h[U + 1 + k] the positive x of bin k; h is in ascending order of value.
//     BINS (edges: n ascending values of any floating-point type): m = n + 2;
//       h[0] counts x < edges[0], h[i] edges[i - 1] <= x < edges[i], h[n]
//       x >= edges[n - 1].
//   The backward exists as an identifier only (no pattern of tensors runs it).
// Shapes and bitmasks are libnnc's: h is 32S [m] as above, stats x's type [4];
// the forward needs x (and may take edges), h and possibly stats.
#include "cmd/histogram/histogram.hpp"

#include <climits>
#include <cmath>
#include <cstring>

#include "core/error.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"

namespace nnc {

namespace histogram {

int log_range(const ccv_nnc_cmd_param_t& params) {
  // In single precision after a double division, as libnnc writes it, so the
  // shapes agree with libnnc's to the last rounding.
  const float log_base = static_cast<float>(1.0 / logf(params.histogram.rate));
  return static_cast<int>(ceilf(logf(params.histogram.max / params.histogram.min) * log_base));
}

namespace {

const char* dt(const ccv_nnc_tensor_t* t) { return datatype_name(CCV_GET_DATA_TYPE(t->info.datatype)); }

size_t count_of(const ccv_nnc_tensor_t* t) {
  size_t n = 1;
  for (int i = 0; i < kMaxDim && t->info.dim[i]; i++) n *= static_cast<size_t>(t->info.dim[i]);
  return n;
}

void validate_forward(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs,
                      int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* name = "HISTOGRAM_FORWARD";
  const auto& p = cmd.info.histogram;
  const bool bins_mode = p.type == CCV_NNC_HISTOGRAM_BINS;
  NNC_CHECK(p.type == CCV_NNC_HISTOGRAM_EVEN || p.type == CCV_NNC_HISTOGRAM_LOGARITHMIC || bins_mode,
            "%s: histogram.type is %d; it takes CCV_NNC_HISTOGRAM_EVEN, _LOGARITHMIC or _BINS", name, p.type);
  NNC_CHECK(input_size == 1 || input_size == 2, "%s: takes inputs |x| or |x|edges| (got %d inputs)", name,
            input_size);
  NNC_CHECK(output_size == 1 || output_size == 2, "%s: takes outputs |h| or |h|stats| (got %d outputs)", name,
            output_size);
  NNC_CHECK(inputs[0] && outputs[0], "%s: x (input 0) and h (output 0) are required", name);
  const ccv_nnc_tensor_t *x = inputs[0], *h = outputs[0];
  NNC_CHECK(CCV_GET_DATA_TYPE(x->info.datatype) & types::kFloat, "%s: x is %s; it takes 16F, 16BF, 32F and 64F", name,
            dt(x));
  NNC_CHECK(count_of(x) <= static_cast<size_t>(INT32_MAX), "%s: x holds %zu values; 32S counts hold at most %d",
            name, count_of(x), INT32_MAX);
  NNC_CHECK(CCV_GET_DATA_TYPE(h->info.datatype) == CCV_32S, "%s: h is %s; it is 32S", name, dt(h));
  size_t m = 0;
  switch (p.type) {
    case CCV_NNC_HISTOGRAM_EVEN:
      NNC_CHECK(p.bins >= 1 && std::isfinite(p.min) && std::isfinite(p.max) && p.min < p.max,
                "%s: the even mode needs bins >= 1 and finite min < max (bins %d, min %g, max %g)", name, p.bins,
                p.min, p.max);
      m = static_cast<size_t>(p.bins) + 3;
      break;
    case CCV_NNC_HISTOGRAM_LOGARITHMIC: {
      NNC_CHECK(p.min > 0 && std::isfinite(p.max) && p.max > p.min && p.rate > 1 && std::isfinite(p.rate),
                "%s: the logarithmic mode needs 0 < min < max and rate > 1, all finite (min %g, max %g, rate %g)",
                name, p.min, p.max, p.rate);
      const int u = log_range(cmd.info);
      NNC_CHECK(u >= 1 && u <= (1 << 24), "%s: min %g, max %g and rate %g make %d magnitude bins", name, p.min, p.max,
                p.rate, u);
      m = 2 * static_cast<size_t>(u) + 2;
      break;
    }
    default: {
      NNC_CHECK(input_size == 2 && inputs[1], "%s: the bins mode needs the edges (input 1)", name);
      NNC_CHECK(CCV_GET_DATA_TYPE(inputs[1]->info.datatype) & types::kFloat,
                "%s: edges is %s; it takes a floating-point type", name, dt(inputs[1]));
      m = count_of(inputs[1]) + 2;
    }
  }
  NNC_CHECK(nd_of(h->info.dim) == 1 && static_cast<size_t>(h->info.dim[0]) == m,
            "%s: this mode makes %zu counts, so h must be [%zu] (it is %s)", name, m, m,
            shape_string(h->info.dim).c_str());
  if (output_size == 2 && outputs[1]) {
    const ccv_nnc_tensor_t* s = outputs[1];
    NNC_CHECK(nd_of(s->info.dim) == 1 && s->info.dim[0] == 4,
              "%s: stats is %s; it holds min, max, sum and sum of squares: [4]", name,
              shape_string(s->info.dim).c_str());
    NNC_CHECK(CCV_GET_DATA_TYPE(s->info.datatype) == CCV_GET_DATA_TYPE(x->info.datatype), "%s: stats is %s but x is %s",
              name, dt(s), dt(x));
  }
}

void validate_backward(const ccv_nnc_cmd_t&, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const*, int,
                       ccv_nnc_tensor_t* const*, int) {
  fail(CCV_NNC_EXEC_INVALID, "HISTOGRAM_BACKWARD: a histogram has no gradient; the backward never runs");
}

void forward_auto(const ccv_nnc_cmd_param_t& params, const ccv_nnc_tensor_param_t* inputs, int input_size,
                  const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (input_size < 1 || output_size < 1) return;
  outputs[0] = inputs[0];
  outputs[0].datatype = CCV_32S;
  std::memset(outputs[0].dim, 0, sizeof(outputs[0].dim));
  switch (params.histogram.type) {
    case CCV_NNC_HISTOGRAM_BINS:
      if (input_size >= 2) {
        size_t n = 1;
        for (int i = 0; i < kMaxDim && inputs[1].dim[i]; i++) n *= static_cast<size_t>(inputs[1].dim[i]);
        outputs[0].dim[0] = static_cast<int>(n + 2);
      }
      break;
    case CCV_NNC_HISTOGRAM_EVEN:
      outputs[0].dim[0] = params.histogram.bins + 3;
      break;
    case CCV_NNC_HISTOGRAM_LOGARITHMIC:
      outputs[0].dim[0] = log_range(params) * 2 + 2;
      break;
  }
  if (output_size >= 2) {
    outputs[1] = inputs[0];
    std::memset(outputs[1].dim, 0, sizeof(outputs[1].dim));
    outputs[1].dim[0] = 4;
  }
}

// x (edges optional); h, or h and stats.
bool forward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int isz, const uint64_t* outputs,
                     int osz) {
  const uint64_t out = word0(outputs, osz);
  return (word0(inputs, isz) & 1u) == 1u && (out == 1u || out == 3u);
}

bool backward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t*, int, const uint64_t*, int) {
  return false;
}

void backward_auto(const ccv_nnc_cmd_param_t&, const ccv_nnc_tensor_param_t*, int, const ccv_nnc_hint_t&,
                   ccv_nnc_tensor_param_t*, int) {}

}  // namespace

}  // namespace histogram

void register_histogram(Registry& r) {
  using namespace histogram;
  r.add_command({.cmd = CCV_NNC_HISTOGRAM_FORWARD, .tensor_auto = forward_auto, .bitmask = forward_bitmask, .validate = validate_forward});
  r.add_command({.cmd = CCV_NNC_HISTOGRAM_BACKWARD, .tensor_auto = backward_auto, .bitmask = backward_bitmask, .validate = validate_backward});
  r.add_kernels(cpu_ref(types::kFloat | CCV_32S), {{CCV_NNC_HISTOGRAM_FORWARD, forward_ref}});
}

}  // namespace nnc
