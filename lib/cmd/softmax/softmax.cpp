// The softmax family: SOFTMAX and SOFTMAX_CROSSENTROPY, forward and backward.
//
// Every tensor is a stack of rows along its last dimension (all earlier
// dimensions are batch dimensions, whatever the tensor format says); a 1-d
// tensor is one row.
//
// SOFTMAX_FORWARD: |x| -> |y|, y = exp(x - max) / sum exp(x - max) per row;
// same shape and type. y may be x (in place).
// SOFTMAX_BACKWARD: |g|x|y| -> |dx|, dx = y * (g - <g, y>) per row. It needs
// y; x may be NULL, and a NULL g reads as ones of dx's shape (NULL_IS_ONES).
// dx may share g's memory; dx takes g's shape.
//
// SOFTMAX_CROSSENTROPY_FORWARD: |logits|labels| -> |loss|softmax|.
//   labels: either one class index per row (32S or a float type holding
//   whole numbers; shaped like the logits without their last dimension, or
//   with it set to 1, or 1-d with one entry per row), or dense rows of the
//   logits' shape and type (one-hot or probabilities).
//   Label smoothing (label_smoothing.trim0 / trim1, as
//   CMD_SOFTMAX_CROSSENTROPY_FORWARD(trim0, trim1) sets them; the default is
//   0 / 1, no smoothing): the target of a row is t_j = trim1 for the labelled
//   class and trim0 for the others; a dense label value v becomes
//   trim0 + (trim1 - trim0) * v (so 0 -> trim0, 1 -> trim1).
//   loss (per row; the logits' shape with the last dimension 1) =
//   -sum_j t_j log softmax_j, formed as sum_j t_j (max - z_j + log sum exp(z - max))
//   so that no logit overflows; softmax is the logits' shape. Either output
//   may be NULL, not both.
//   An index outside [0, classes) or a non-integer float index fails with
//   CCV_NNC_EXEC_INVALID.
// SOFTMAX_CROSSENTROPY_BACKWARD: |g|g_softmax|logits|labels|loss|softmax| ->
//   |d logits|d labels|, the libnnc backward layout (output gradients,
//   forward inputs, forward outputs). It needs labels and the saved softmax;
//   g (per row, the loss's shape) may be NULL and then reads as ones;
//   g_softmax may be NULL (no gradient arriving through the softmax output);
//   logits and loss are not read. With T = sum_j t_j:
//   d logits_j = g (softmax_j T - t_j) + softmax_j (gs_j - <gs, softmax>).
//   The gradient with respect to the labels is not computed (d labels must
//   be NULL). d logits may share the memory of g_softmax, the logits or the
//   softmax (libnnc's in-place pairs); the forward's softmax may share the
//   logits'. Shapes (ccv_nnc_hint_tensor_auto) follow libnnc: the loss takes
//   the labels' shape with the channel entry 1; d logits the softmax's, d
//   labels the labels'.
#include "cmd/softmax/softmax.hpp"

#include <string>

#include "cmd/common/null_is_ones.hpp"
#include "cmd/common/rows.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"

namespace nnc {

namespace softmax {

namespace {

const char* dt(const ccv_nnc_tensor_t* t) { return datatype_name(CCV_GET_DATA_TYPE(t->info.datatype)); }
std::string dims_of(const ccv_nnc_tensor_t* t) { return shape_string(t->info.dim); }
int type_of(const ccv_nnc_tensor_t* t) { return CCV_GET_DATA_TYPE(t->info.datatype); }

void check_float(const char* cmd, const char* what, const ccv_nnc_tensor_t* t) {
  NNC_CHECK(rows::is_float(type_of(t)), "%s: %s is %s; it takes 16F, 16BF, 32F or 64F", cmd, what, dt(t));
}
void check_like(const char* cmd, const char* what, const ccv_nnc_tensor_t* t, const char* what_ref,
                const ccv_nnc_tensor_t* ref) {
  NNC_CHECK(type_of(t) == type_of(ref), "%s: %s is %s but %s is %s", cmd, what, dt(t), what_ref, dt(ref));
  NNC_CHECK(same_shape(t->info, ref->info), "%s: %s is %s but %s is %s; they must match", cmd, what,
            dims_of(t).c_str(), what_ref, dims_of(ref).c_str());
}
// A per-row tensor (loss, its gradient): one item per row of `x`, x's type.
void check_per_row(const char* cmd, const char* what, const ccv_nnc_tensor_t* t, const char* what_ref,
                   const ccv_nnc_tensor_t* x) {
  NNC_CHECK(type_of(t) == type_of(x), "%s: %s is %s but %s is %s", cmd, what, dt(t), what_ref, dt(x));
  NNC_CHECK(rows::item_count(t->info.dim) == rows::row_count(x->info.dim),
            "%s: %s is %s but %s is %s; it needs one entry per row (%lld)", cmd, what, dims_of(t).c_str(), what_ref,
            dims_of(x).c_str(), static_cast<long long>(rows::row_count(x->info.dim)));
}
void check_labels(const char* cmd, const ccv_nnc_tensor_t* labels, const ccv_nnc_tensor_t* x) {
  const rows::LabelKind k = rows::label_kind(x->info, labels->info);
  NNC_CHECK(k != rows::LabelKind::kBad,
            "%s: labels are %s %s for logits %s %s; they must be one class index per row (32S or float, %lld entries) "
            "or dense rows of the logits' shape",
            cmd, dt(labels), dims_of(labels).c_str(), dt(x), dims_of(x).c_str(),
            static_cast<long long>(rows::row_count(x->info.dim)));
  if (k == rows::LabelKind::kDense)
    NNC_CHECK(type_of(labels) == type_of(x), "%s: dense labels are %s but the logits are %s", cmd, dt(labels), dt(x));
}

void validate_softmax_forward(const ccv_nnc_cmd_t&, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs,
                              int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* c = "SOFTMAX_FORWARD";
  NNC_CHECK(input_size == 1, "%s: takes one input x (got %d)", c, input_size);
  NNC_CHECK(output_size == 1, "%s: takes one output y (got %d)", c, output_size);
  NNC_CHECK(inputs[0] && outputs[0], "%s: x and y must not be NULL", c);
  check_float(c, "x", inputs[0]);
  check_like(c, "y", outputs[0], "x", inputs[0]);
}

void validate_softmax_backward(const ccv_nnc_cmd_t&, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs,
                               int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* c = "SOFTMAX_BACKWARD";
  NNC_CHECK(input_size == 3, "%s: takes inputs |g|x|y| (got %d inputs)", c, input_size);
  NNC_CHECK(output_size == 1, "%s: takes one output dx (got %d)", c, output_size);
  NNC_CHECK(inputs[2], "%s: the forward output y (input 2) is NULL; the backward needs it", c);
  NNC_CHECK(outputs[0], "%s: dx is NULL", c);
  // A NULL g reads as ones of dx's shape (CCV_NNC_CMD_ATTR_NULL_IS_ONES).
  const ccv_nnc_tensor_t* g = inputs[0] ? inputs[0] : outputs[0];
  const char* gname = inputs[0] ? "g" : "dx";
  check_float(c, gname, g);
  check_like(c, "y", inputs[2], gname, g);
  if (inputs[1]) check_like(c, "x", inputs[1], gname, g);
  if (inputs[0]) check_like(c, "dx", outputs[0], "g", g);
}

void validate_ce_forward(const ccv_nnc_cmd_t&, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                         ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* c = "SOFTMAX_CROSSENTROPY_FORWARD";
  NNC_CHECK(input_size == 2, "%s: takes inputs |logits|labels| (got %d inputs)", c, input_size);
  NNC_CHECK(output_size >= 1 && output_size <= 2, "%s: takes outputs |loss|softmax| (got %d outputs)", c, output_size);
  NNC_CHECK(inputs[0] && inputs[1], "%s: logits and labels must not be NULL", c);
  const ccv_nnc_tensor_t* x = inputs[0];
  check_float(c, "logits", x);
  check_labels(c, inputs[1], x);
  const ccv_nnc_tensor_t* loss = outputs[0];
  const ccv_nnc_tensor_t* s = output_size > 1 ? outputs[1] : nullptr;
  NNC_CHECK(loss || s, "%s: both outputs are NULL", c);
  if (loss) check_per_row(c, "loss", loss, "logits", x);
  if (s) check_like(c, "softmax", s, "logits", x);
}

void validate_ce_backward(const ccv_nnc_cmd_t&, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                          ccv_nnc_tensor_t* const* outputs, int output_size) {
  const char* c = "SOFTMAX_CROSSENTROPY_BACKWARD";
  NNC_CHECK(input_size == 6, "%s: takes inputs |g|g_softmax|logits|labels|loss|softmax| (got %d inputs)", c,
            input_size);
  NNC_CHECK(output_size >= 1 && output_size <= 2, "%s: takes outputs |d logits|d labels| (got %d outputs)", c,
            output_size);
  NNC_CHECK(inputs[3], "%s: the labels (input 3) are NULL; the backward needs them", c);
  NNC_CHECK(inputs[5], "%s: the softmax (input 5) is NULL; the backward needs the forward's softmax output", c);
  NNC_CHECK(outputs[0], "%s: d logits (output 0) is NULL", c);
  NNC_CHECK(output_size < 2 || !outputs[1],
            "%s: the gradient with respect to the labels is not supported (output 1 must be NULL)", c);
  const ccv_nnc_tensor_t* s = inputs[5];
  check_float(c, "softmax", s);
  check_labels(c, inputs[3], s);
  check_like(c, "d logits", outputs[0], "softmax", s);
  if (inputs[0]) check_per_row(c, "g", inputs[0], "softmax", s);
  if (inputs[1]) check_like(c, "g_softmax", inputs[1], "softmax", s);
  if (inputs[2]) check_like(c, "logits", inputs[2], "softmax", s);
  if (inputs[4]) check_per_row(c, "loss", inputs[4], "softmax", s);
}

// libnnc's loss shape: the labels' dimensions in the logits' type and
// format, with the channel entry (ccv_nnc_tensor_get_c) set to 1 when there
// is more than one dimension; so class-index labels [N] give a loss of [N],
// [N, 1] or dense [N, C] labels [N, 1]. The softmax output is the logits'.
void ce_forward_shapes(const ccv_nnc_cmd_param_t&, const ccv_nnc_tensor_param_t* inputs, int input_size,
                       const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (input_size < 2 || output_size < 1) return;
  rows::loss_params(inputs[0], inputs[1], true, outputs[0]);
  if (output_size > 1) outputs[1] = inputs[0];
}

// libnnc's backward shapes: d logits like the saved softmax (input 5), d labels
// like the labels (input 3).
void ce_backward_shapes(const ccv_nnc_cmd_param_t&, const ccv_nnc_tensor_param_t* inputs, int input_size,
                        const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (input_size < 6 || output_size < 1) return;
  outputs[0] = inputs[5];
  if (output_size > 1) outputs[1] = inputs[3];
}

// The bitmasks are libnnc's predicates on the first word: which slots a
// graph must fill for the command to run (autodiff prunes by them).

bool softmax_forward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int ib,
                             const uint64_t* outputs, int ob) {
  return (word0(inputs, ib) & 1u) == 1u && word0(outputs, ob) == 1u;
}
// |g|x|y|: g and y, never x.
bool softmax_backward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int ib,
                              const uint64_t* outputs, int ob) {
  return (word0(inputs, ib) & 5u) == 5u && word0(outputs, ob) == 1u;
}
// |logits|labels| -> |loss|softmax|: the softmax is always produced, the loss optional.
bool ce_forward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int ib, const uint64_t* outputs,
                        int ob) {
  const uint64_t out = word0(outputs, ob);
  return (word0(inputs, ib) & 3u) == 3u && (out == 3u || out == 2u);
}
// |g|g_softmax|logits|labels|loss|softmax|: labels and softmax; d logits required.
bool ce_backward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int ib, const uint64_t* outputs,
                         int ob) {
  return (word0(inputs, ib) & 40u) == 40u && (word0(outputs, ob) & 1u) == 1u;
}

// SOFTMAX_FORWARD works row by row from a copy of the row's maximum and sum,
// so y may be x.
bool always(const ccv_nnc_cmd_param_t&, int, int, int, int) { return true; }
// Each row's <g, y> is formed before any dx of the row is written, and then
// dx_j reads only g_j and y_j: dx may overwrite g (libnnc's rule; it does not
// list y).
bool softmax_backward_inplace(const ccv_nnc_cmd_param_t&, int input_idx, int, int output_idx, int) {
  return output_idx == 0 && input_idx == 0;
}
// The softmax output may be written over the logits.
bool ce_forward_inplace(const ccv_nnc_cmd_param_t&, int input_idx, int, int output_idx, int) {
  return input_idx == 0 && output_idx == 1;
}
// d logits over g_softmax (its row dot product comes first), the logits (never
// read) or the softmax.
bool ce_backward_inplace(const ccv_nnc_cmd_param_t&, int input_idx, int, int output_idx, int) {
  return output_idx == 0 && (input_idx == 1 || input_idx == 2 || input_idx == 5);
}

}  // namespace

}  // namespace softmax

void register_softmax(Registry& r) {
  using namespace softmax;
  CommandInfo info;
  info.cmd = CCV_NNC_SOFTMAX_FORWARD;
  info.tensor_auto = shape::same_as_first_input;
  info.bitmask = softmax_forward_bitmask;
  info.allow_inplace = always;
  info.validate = validate_softmax_forward;
  r.add_command(info);

  info = CommandInfo{};
  info.cmd = CCV_NNC_SOFTMAX_BACKWARD;
  info.attributes = CCV_NNC_CMD_ATTR_NULL_IS_ONES;
  info.tensor_auto = shape::same_as_first_input;
  info.bitmask = softmax_backward_bitmask;
  info.allow_inplace = softmax_backward_inplace;
  info.validate = validate_softmax_backward;
  r.add_command(info);

  info = CommandInfo{};
  info.cmd = CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD;
  info.tensor_auto = ce_forward_shapes;
  info.bitmask = ce_forward_bitmask;
  info.allow_inplace = ce_forward_inplace;
  info.validate = validate_ce_forward;
  r.add_command(info);

  info = CommandInfo{};
  info.cmd = CCV_NNC_SOFTMAX_CROSSENTROPY_BACKWARD;
  info.attributes = CCV_NNC_CMD_ATTR_NULL_IS_ONES;
  info.tensor_auto = ce_backward_shapes;
  info.bitmask = ce_backward_bitmask;
  info.allow_inplace = ce_backward_inplace;
  info.validate = validate_ce_backward;
  r.add_command(info);

  // Class-index labels may be 32S next to float logits.
  r.add_kernels(cpu_ref(types::kFloat | CCV_32S),
                {{CCV_NNC_SOFTMAX_FORWARD, softmax_forward_ref},
                 {CCV_NNC_SOFTMAX_BACKWARD, null_is_ones<softmax_backward_ref, shape_of_first_output>},
                 {CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD, crossentropy_forward_ref},
                 {CCV_NNC_SOFTMAX_CROSSENTROPY_BACKWARD, crossentropy_backward_ref}});
  r.add_kernels(cpu_opt(CCV_32F | CCV_32S).accepting(opt_accept),
                {{CCV_NNC_SOFTMAX_FORWARD, softmax_forward_opt},
                 {CCV_NNC_SOFTMAX_BACKWARD, null_is_ones<softmax_backward_opt, shape_of_first_output>},
                 {CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD, crossentropy_forward_opt},
                 {CCV_NNC_SOFTMAX_CROSSENTROPY_BACKWARD, crossentropy_backward_opt}});
}

}  // namespace nnc
