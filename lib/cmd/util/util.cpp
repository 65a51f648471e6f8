// The util family: SET, DATA_TRANSFER, FORMAT_TRANSFORM and
// DATATYPE_CONVERSION, forward and backward (TRANSPOSE is described in
// transpose.cpp and registered from here).
//
// Conventions shared by the three copying commands (libnnc's): they work on n
// pairs, output i made from input i. Their backward commands do the same
// thing to gradients (g_i -> dx_i), with any extra inputs (the forward
// tensors) ignored, so one kernel serves both directions. A NULL output skips
// its pair.
#include <cmath>
#include <cstring>
#include <string>

#include "cmd/common/checks.hpp"
#include "cmd/util/convert.hpp"
#include "cmd/util/transpose.hpp"
#include "cmd/util/util.hpp"
#include "core/cmd.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"

namespace nnc {

namespace util {

namespace {

const char* name_of(const ccv_nnc_cmd_t& cmd) {
  const char* n = cmd_name(cmd.cmd);
  return n ? n : "command";
}

size_t count_of(const ccv_nnc_tensor_param_t& p) {
  const int nd = nd_of(p.dim);
  size_t c = 1;
  for (int i = 0; i < nd; i++) c *= static_cast<size_t>(p.dim[i]);
  return c;
}

// Roles of an image-shaped tensor's dimensions, as ccv_nnc_tensor_get_n / _get_c
// read them: kN, kC, or the index of a spatial dimension (0, 1, ...).
constexpr int kN = -1, kC = -2;
bool roles_of(int format, int nd, int* role) {
  if (nd < 1) return false;
  switch (format) {
    case CCV_TENSOR_FORMAT_NHWC:
    case CCV_TENSOR_FORMAT_NCHW: {
      const bool nhwc = format == CCV_TENSOR_FORMAT_NHWC;
      if (nd == 1) {
        role[0] = kC;
        return true;
      }
      // A 3-d tensor has no batch dimension; otherwise dim[0] is N.
      const int first = nd == 3 ? 0 : 1;
      if (first) role[0] = kN;
      if (nhwc) {
        for (int i = first; i < nd - 1; i++) role[i] = i - first;
        role[nd - 1] = kC;
      } else {
        role[first] = kC;
        for (int i = first + 1; i < nd; i++) role[i] = i - first - 1;
      }
      return true;
    }
    case CCV_TENSOR_FORMAT_CHWN:
      if (nd != 4) return false;
      role[0] = kC;
      role[1] = 0;
      role[2] = 1;
      role[3] = kN;
      return true;
  }
  return false;
}

// "32F" etc. for messages.
const char* dt(const ccv_nnc_tensor_t* t) { return datatype_name(CCV_GET_DATA_TYPE(t->info.datatype)); }
std::string dims_of(const ccv_nnc_tensor_t* t) { return shape_string(t->info.dim); }

// Checks common to the pairwise commands: counts and presence.
void check_pairs(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                 int output_size) {
  NNC_CHECK(output_size >= 1, "%s: needs at least one output (got %d)", name_of(cmd), output_size);
  NNC_CHECK(input_size >= output_size, "%s: %d outputs but only %d inputs; output i is made from input i", name_of(cmd),
            output_size, input_size);
  for (int i = 0; i < output_size; i++)
    NNC_CHECK(!outputs[i] || inputs[i], "%s: output %d is given but input %d is NULL", name_of(cmd), i, i);
}

// --- validation ---------------------------------------------------------

void validate_set(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const*, int, ccv_nnc_tensor_t* const*,
                  int output_size) {
  NNC_CHECK(output_size >= 1, "%s: needs at least one output to fill (got %d)", name_of(cmd), output_size);
}

void validate_transfer(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                       ccv_nnc_tensor_t* const* outputs, int output_size) {
  check_pairs(cmd, inputs, input_size, outputs, output_size);
  for (int i = 0; i < output_size; i++) {
    const ccv_nnc_tensor_t* a = inputs[i];
    const ccv_nnc_tensor_t* b = outputs[i];
    if (!b) continue;
    NNC_CHECK(CCV_GET_DATA_TYPE(a->info.datatype) == CCV_GET_DATA_TYPE(b->info.datatype),
              "%s: input %d is %s but output %d is %s; use DATATYPE_CONVERSION to change types", name_of(cmd), i, dt(a), i,
              dt(b));
    if (same_shape(a->info, b->info)) continue;
    // Different shapes with the same number of elements are a reshaping copy,
    // which only makes sense when both sides are packed.
    NNC_CHECK(count_of(a->info) == count_of(b->info),
              "%s: input %d is %s but output %d is %s; the shapes must match", name_of(cmd), i, dims_of(a).c_str(), i,
              dims_of(b).c_str());
    NNC_CHECK(CCV_IS_TENSOR_CONTIGUOUS(a) && CCV_IS_TENSOR_CONTIGUOUS(b),
              "%s: input %d is %s but output %d is %s; shapes may differ only when both are packed", name_of(cmd), i,
              dims_of(a).c_str(), i, dims_of(b).c_str());
  }
}

void validate_format(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                     ccv_nnc_tensor_t* const* outputs, int output_size) {
  check_pairs(cmd, inputs, input_size, outputs, output_size);
  for (int i = 0; i < output_size; i++) {
    const ccv_nnc_tensor_t* a = inputs[i];
    const ccv_nnc_tensor_t* b = outputs[i];
    if (!b) continue;
    NNC_CHECK(CCV_GET_DATA_TYPE(a->info.datatype) == CCV_GET_DATA_TYPE(b->info.datatype),
              "%s: input %d is %s but output %d is %s; use DATATYPE_CONVERSION to change types", name_of(cmd), i, dt(a), i,
              dt(b));
    const int nd = nd_of(a->info.dim);
    NNC_CHECK(nd == nd_of(b->info.dim), "%s: input %d is %s (%s) but output %d is %s (%s); they need the same rank",
              name_of(cmd), i, dims_of(a).c_str(), format_name(a->info.format), i, dims_of(b).c_str(),
              format_name(b->info.format));
    int perm[kMaxDim];
    NNC_CHECK(format_permutation(a->info.format, b->info.format, nd, perm),
              "%s: cannot rewrite a %d-d %s tensor (%s) as %s; CHWN needs 4-d tensors", name_of(cmd), nd,
              format_name(a->info.format), dims_of(a).c_str(), format_name(b->info.format));
    bool ok = true;
    for (int j = 0; j < nd; j++) ok = ok && b->info.dim[j] == a->info.dim[perm[j]];
    if (!ok) {
      int expect[kMaxDim] = {};
      for (int j = 0; j < nd; j++) expect[j] = a->info.dim[perm[j]];
      fail(CCV_NNC_EXEC_INVALID, "%s: input %d is %s %s, so output %d in %s should be %s, but it is %s", name_of(cmd), i,
           format_name(a->info.format), dims_of(a).c_str(), i, format_name(b->info.format), shape_string(expect).c_str(),
           dims_of(b).c_str());
    }
  }
}

void validate_convert(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                      ccv_nnc_tensor_t* const* outputs, int output_size) {
  check_pairs(cmd, inputs, input_size, outputs, output_size);
  for (int i = 0; i < output_size; i++) {
    const ccv_nnc_tensor_t* a = inputs[i];
    const ccv_nnc_tensor_t* b = outputs[i];
    if (!b) continue;
    NNC_CHECK(same_shape(a->info, b->info), "%s: input %d is %s but output %d is %s; the shapes must match", name_of(cmd),
              i, dims_of(a).c_str(), i, dims_of(b).c_str());
    NNC_CHECK(conversion_supported(CCV_GET_DATA_TYPE(a->info.datatype), CCV_GET_DATA_TYPE(b->info.datatype)),
              "%s: cannot convert %s to %s (pair %d); it converts between 16F, 16BF, 32F and 64F, or copies a type to "
              "itself",
              name_of(cmd), dt(a), dt(b), i);
  }
}

// --- shapes -------------------------------------------------------------

// FORMAT_TRANSFORM and DATATYPE_CONVERSION infer shapes as libnnc does
// (forward from inputs: output i is input i). What the caller's outputs hold
// is not read: libnnc programs pass uninitialised parameters in, and the
// target format or type is the output tensor's own, given at execution.

// --- bitmasks -----------------------------------------------------------

// libnnc's patterns. SET: every output, as a run from the first; inputs
// are ignored.
bool set_bitmask(const ccv_nnc_cmd_param_t&, int, int output_size, const uint64_t*, int, const uint64_t* outputs,
                 int output_bitmask_size) {
  int count = 0;
  return ones_prefix(outputs, output_bitmask_size, &count) && count == output_size;
}

}  // namespace

bool pairs_forward_bitmask(const ccv_nnc_cmd_param_t&, int input_size, int output_size, const uint64_t* inputs,
                           int input_bitmask_size, const uint64_t* outputs, int output_bitmask_size) {
  int in = 0, out = 0;
  return ones_prefix(inputs, input_bitmask_size, &in) && ones_prefix(outputs, output_bitmask_size, &out) &&
         in == out && input_size == output_size && input_size == in;
}

bool pairs_backward_bitmask(const ccv_nnc_cmd_param_t&, int, int output_size, const uint64_t* inputs,
                            int input_bitmask_size, const uint64_t* outputs, int output_bitmask_size) {
  int in = 0, out = 0;
  return ones_prefix(inputs, input_bitmask_size, &in) && ones_prefix(outputs, output_bitmask_size, &out) &&
         out <= in && out == output_size;
}

namespace {

void add(Registry& r, uint32_t cmd, TensorAutoFn tensor_auto, BitmaskFn bitmask, InplaceFn inplace, ValidateFn validate,
         ccv_nnc_cmd_exec_f ref, ccv_nnc_cmd_exec_f opt) {
  r.add_command({.cmd = cmd, .tensor_auto = tensor_auto, .bitmask = bitmask, .allow_inplace = inplace, .validate = validate});
  r.add_kernels(cpu_ref(types::kAll), {{cmd, ref}});
  r.add_kernels(cpu_opt(types::kAll), {{cmd, opt}});
}

}  // namespace

bool format_permutation(int in_format, int out_format, int nd, int* perm) {
  int rin[kMaxDim], rout[kMaxDim];
  if (nd < 1 || nd > kMaxDim) return false;
  if (in_format == out_format) {
    for (int j = 0; j < nd; j++) perm[j] = j;
    return true;
  }
  if (!roles_of(in_format, nd, rin) || !roles_of(out_format, nd, rout)) return false;
  for (int j = 0; j < nd; j++) {
    perm[j] = -1;
    for (int i = 0; i < nd; i++)
      if (rin[i] == rout[j]) perm[j] = i;
    if (perm[j] < 0) return false;
  }
  return true;
}

bool conversion_supported(int from, int to) {
  if (from == to) return datatype_supported(from);
  return (from & types::kFloat) && (to & types::kFloat) && datatype_supported(from) && datatype_supported(to);
}

void fill_pattern(double v, int datatype, unsigned char out[8]) {
  std::memset(out, 0, 8);
  // Integers: round to nearest (ties to even), saturate, NaN -> 0.
  auto integer = [&](double lo, double hi) {
    if (std::isnan(v)) return 0.0;
    return std::nearbyint(v < lo ? lo : (v > hi ? hi : v));
  };
  switch (datatype) {
    case CCV_32F: {
      const float f = static_cast<float>(v);
      std::memcpy(out, &f, 4);
      break;
    }
    case CCV_64F: std::memcpy(out, &v, 8); break;
    case CCV_16F: {
      const uint16_t h = to_half(v);
      std::memcpy(out, &h, 2);
      break;
    }
    case CCV_16BF: {
      const uint16_t h = to_bf16(v);
      std::memcpy(out, &h, 2);
      break;
    }
    case CCV_8U: out[0] = static_cast<unsigned char>(integer(0, 255)); break;
    case CCV_32S: {
      const int32_t x = static_cast<int32_t>(integer(-2147483648.0, 2147483647.0));
      std::memcpy(out, &x, 4);
      break;
    }
    case CCV_64S: {
      // 2^63 itself does not fit; the largest double below it does.
      const double x = integer(-9223372036854775808.0, 9223372036854774784.0);
      const int64_t y = v >= 9223372036854775808.0 ? INT64_MAX : static_cast<int64_t>(x);
      std::memcpy(out, &y, 8);
      break;
    }
  }
}

void convert_strided(const unsigned char* src, int from, int64_t ss, unsigned char* dst, int to, int64_t ds, size_t n) {
  const int64_t sb = ss * static_cast<int64_t>(datatype_size(from));
  const int64_t db = ds * static_cast<int64_t>(datatype_size(to));
  for (size_t i = 0; i < n; i++, src += sb, dst += db) {
    double v = 0;
    switch (from) {
      case CCV_32F: {
        float f;
        std::memcpy(&f, src, 4);
        v = f;
        break;
      }
      case CCV_64F: std::memcpy(&v, src, 8); break;
      case CCV_16F: {
        uint16_t h;
        std::memcpy(&h, src, 2);
        v = from_half(h);
        break;
      }
      case CCV_16BF: {
        uint16_t h;
        std::memcpy(&h, src, 2);
        v = from_bf16(h);
        break;
      }
    }
    switch (to) {
      case CCV_32F: {
        const float f = static_cast<float>(v);
        std::memcpy(dst, &f, 4);
        break;
      }
      case CCV_64F: std::memcpy(dst, &v, 8); break;
      case CCV_16F: {
        const uint16_t h = to_half(v);
        std::memcpy(dst, &h, 2);
        break;
      }
      case CCV_16BF: {
        const uint16_t h = to_bf16(v);
        std::memcpy(dst, &h, 2);
        break;
      }
    }
  }
}

}  // namespace util

void register_util(Registry& r) {
  using namespace util;
  // libnnc declares no in-place pair for any of these.
  add(r, CCV_NNC_SET_FORWARD, shape::same_as_input_i, set_bitmask, nullptr, validate_set, set_ref, set_opt);
  add(r, CCV_NNC_SET_BACKWARD, shape::same_as_input_i, set_bitmask, nullptr, validate_set, set_ref, set_opt);
  add(r, CCV_NNC_DATA_TRANSFER_FORWARD, shape::same_as_input_i, pairs_forward_bitmask, nullptr, validate_transfer,
      transfer_ref, transfer_opt);
  add(r, CCV_NNC_DATA_TRANSFER_BACKWARD, shape::same_as_input_i, pairs_backward_bitmask, nullptr, validate_transfer,
      transfer_ref, transfer_opt);
  add(r, CCV_NNC_FORMAT_TRANSFORM_FORWARD, shape::same_as_input_i, pairs_forward_bitmask, nullptr, validate_format, format_ref,
      format_opt);
  add(r, CCV_NNC_FORMAT_TRANSFORM_BACKWARD, shape::same_as_input_i, pairs_backward_bitmask, nullptr, validate_format, format_ref,
      format_opt);
  add(r, CCV_NNC_DATATYPE_CONVERSION_FORWARD, shape::same_as_input_i, pairs_forward_bitmask, nullptr, validate_convert, convert_ref,
      convert_opt);
  add(r, CCV_NNC_DATATYPE_CONVERSION_BACKWARD, shape::same_as_input_i, pairs_backward_bitmask, nullptr, validate_convert, convert_ref,
      convert_opt);
  register_transpose(r);
}

}  // namespace nnc
