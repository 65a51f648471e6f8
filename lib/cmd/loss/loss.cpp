// The loss family: CATEGORICAL_CROSSENTROPY, BINARY_CROSSENTROPY,
// SIGMOID_BINARY_CROSSENTROPY, MSE and SMOOTH_L1, forward and backward.
//
// Every tensor is a stack of rows along its last dimension (all earlier
// dimensions are batch dimensions); every loss is one value per row, in any
// shape holding one entry per row. ccv_nnc_hint_tensor_auto gives libnnc's:
// the labels' (second input's) shape with its channel entry 1, so [N, C]
// inputs give [N, 1] and class-index labels [N] give [N]. Backward commands take the libnnc layout: |g|forward inputs|
// forward outputs| -> |gradients of the forward inputs|, where g is the
// gradient of the per-row loss (NULL reads as ones) and NULL outputs are
// skipped; the trailing forward outputs may be left off the input list.
// Backends: CPU_REF for all (double inside, any float type, any layout);
// CPU_OPT for every loss on fp32 tensors with a unit-stride last dimension
// (class-index labels 32S or 32F). Types: 16F, 16BF, 32F, 64F, all tensors of
// one command in one type (class-index labels may be 32S or any float type).
//
// CATEGORICAL_CROSSENTROPY_FORWARD: |p|labels| -> |loss|, p probabilities;
//   labels class indices (one per row) or dense rows of p's shape, with label
//   smoothing exactly as SOFTMAX_CROSSENTROPY (t_j = trim1 for the labelled
//   class, trim0 otherwise; dense v -> trim0 + (trim1 - trim0) v).
//   loss = -sum_j t_j max(log p_j, -100).
// CATEGORICAL_CROSSENTROPY_BACKWARD: |g|p|labels|loss| -> |dp|d labels|:
//   dp_j = -g t_j / max(p_j, 1e-12); d labels (dense labels only) =
//   -g (trim1 - trim0) max(log p_j, -100). Needs p and labels.
// BINARY_CROSSENTROPY_FORWARD: |x|y| -> |loss|, x probabilities, y targets
//   of x's shape; with w = binary_crossentropy.pos_weight,
//   loss = -sum_j (w y_j max(log x_j, -100) + (1 - y_j) max(log(1 - x_j), -100)).
// BINARY_CROSSENTROPY_BACKWARD: |g|x|y|loss| -> |dx|dy|:
//   dx = g (-w y / max(x, 1e-12) + (1 - y) / max(1 - x, 1e-12)),
//   dy = -g (w max(log x, -100) - max(log(1 - x), -100)). Needs x and y.
// SIGMOID_BINARY_CROSSENTROPY_FORWARD: |z|y| -> |loss|sigmoid|, z logits:
//   loss = sum_j (w y_j softplus(-z_j) + (1 - y_j) softplus(z_j)), the same as
//   BINARY_CROSSENTROPY on sigmoid(z) but without its rounding or clamps
//   (softplus(z) = max(z, 0) + log1p(exp(-|z|)) never overflows);
//   sigmoid = 1 / (1 + exp(-z)). Either output may be NULL, not both.
// SIGMOID_BINARY_CROSSENTROPY_BACKWARD: |g|g_sigmoid|z|y|loss|sigmoid| ->
//   |dz|dy|: dz = g (sigmoid (w y + 1 - y) - w y) + g_sigmoid sigmoid (1 - sigmoid),
//   dy = g (w softplus(-z) - softplus(z)). Needs y, and z or the saved
//   sigmoid (z is preferred when both are given; dy needs z).
// MSE_FORWARD: |a|b| -> |loss|, loss = sum_j (a_j - b_j)^2, divided by the
//   row length when mse.reduce_op is CCV_NNC_MSE_REDUCE_MEAN (the default, 0).
// MSE_BACKWARD: |g|a|b|loss| -> |da|db|: da = 2 g (a - b) / k (k the row
//   length for MEAN, 1 for SUM), db = -da. Needs a and b.
// SMOOTH_L1_FORWARD: |a|b| -> |loss|, with d = a - b and beta =
//   smooth_l1.beta: loss = sum_j (|d_j| < beta ? d_j^2 / (2 beta) : |d_j| - beta / 2)
//   (the row's sum; beta <= 0 is plain L1).
// SMOOTH_L1_BACKWARD: |g|a|b|loss| -> |da|db|: da = g (|d| < beta ? d / beta
//   : sign(d)), db = -da. Needs a and b.
#include "cmd/loss/loss.hpp"

#include <string>

#include "cmd/common/rows.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"

namespace nnc {

namespace loss {

namespace {

const char* dt(const ccv_nnc_tensor_t* t) { return datatype_name(CCV_GET_DATA_TYPE(t->info.datatype)); }
std::string dims_of(const ccv_nnc_tensor_t* t) { return shape_string(t->info.dim); }
int type_of(const ccv_nnc_tensor_t* t) { return CCV_GET_DATA_TYPE(t->info.datatype); }

// What a command's second input is.
enum class Second { kLabels, kSameShape };

struct Spec {
  const char* name;  // "MSE"
  const char* in0;   // "a"
  const char* in1;   // "b"
  Second second;
  int forward_outputs;  // 1, or 2 with the activation (SIGMOID_BINARY_CROSSENTROPY)
  bool labels_diff;     // whether the backward gives d in1
};

constexpr Spec kCategorical{"CATEGORICAL_CROSSENTROPY", "p", "labels", Second::kLabels, 1, true};
constexpr Spec kBinary{"BINARY_CROSSENTROPY", "x", "y", Second::kSameShape, 1, true};
constexpr Spec kSigmoidBinary{"SIGMOID_BINARY_CROSSENTROPY", "z", "y", Second::kSameShape, 2, true};
constexpr Spec kMse{"MSE", "a", "b", Second::kSameShape, 1, true};
constexpr Spec kSmoothL1{"SMOOTH_L1", "a", "b", Second::kSameShape, 1, true};

void check_float(const std::string& c, const char* what, const ccv_nnc_tensor_t* t) {
  NNC_CHECK(rows::is_float(type_of(t)), "%s: %s is %s; it takes 16F, 16BF, 32F or 64F", c.c_str(), what, dt(t));
}
void check_like(const std::string& c, const char* what, const ccv_nnc_tensor_t* t, const char* what_ref,
                const ccv_nnc_tensor_t* ref) {
  NNC_CHECK(type_of(t) == type_of(ref), "%s: %s is %s but %s is %s", c.c_str(), what, dt(t), what_ref, dt(ref));
  NNC_CHECK(same_shape(t->info, ref->info), "%s: %s is %s but %s is %s; they must match", c.c_str(), what,
            dims_of(t).c_str(), what_ref, dims_of(ref).c_str());
}
void check_per_row(const std::string& c, const char* what, const ccv_nnc_tensor_t* t, const char* what_ref,
                   const ccv_nnc_tensor_t* x) {
  NNC_CHECK(type_of(t) == type_of(x), "%s: %s is %s but %s is %s", c.c_str(), what, dt(t), what_ref, dt(x));
  NNC_CHECK(rows::item_count(t->info.dim) == rows::row_count(x->info.dim),
            "%s: %s is %s but %s is %s; it needs one entry per row (%lld)", c.c_str(), what, dims_of(t).c_str(),
            what_ref, dims_of(x).c_str(), static_cast<long long>(rows::row_count(x->info.dim)));
}
void check_second(const Spec& s, const std::string& c, const ccv_nnc_tensor_t* second, const ccv_nnc_tensor_t* x) {
  if (s.second == Second::kSameShape) {
    check_like(c, s.in1, second, s.in0, x);
    return;
  }
  const rows::LabelKind k = rows::label_kind(x->info, second->info);
  NNC_CHECK(k != rows::LabelKind::kBad,
            "%s: labels are %s %s for %s %s %s; they must be one class index per row (32S or float, %lld entries) "
            "or dense rows of the same shape",
            c.c_str(), dt(second), dims_of(second).c_str(), s.in0, dt(x), dims_of(x).c_str(),
            static_cast<long long>(rows::row_count(x->info.dim)));
  if (k == rows::LabelKind::kDense)
    NNC_CHECK(type_of(second) == type_of(x), "%s: dense labels are %s but %s is %s", c.c_str(), dt(second), s.in0,
              dt(x));
}

template <const Spec& S>
void validate_forward(const ccv_nnc_cmd_t&, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                      ccv_nnc_tensor_t* const* outputs, int output_size) {
  const std::string c = std::string(S.name) + "_FORWARD";
  NNC_CHECK(input_size == 2, "%s: takes inputs |%s|%s| (got %d inputs)", c.c_str(), S.in0, S.in1, input_size);
  NNC_CHECK(output_size >= 1 && output_size <= S.forward_outputs, "%s: takes %s (got %d outputs)", c.c_str(),
            S.forward_outputs == 2 ? "outputs |loss|sigmoid|" : "one output |loss|", output_size);
  NNC_CHECK(inputs[0] && inputs[1], "%s: %s and %s must not be NULL", c.c_str(), S.in0, S.in1);
  const ccv_nnc_tensor_t* x = inputs[0];
  check_float(c, S.in0, x);
  check_second(S, c, inputs[1], x);
  const ccv_nnc_tensor_t* act = output_size > 1 ? outputs[1] : nullptr;
  NNC_CHECK(outputs[0] || act, "%s: the loss output is NULL", c.c_str());
  if (outputs[0]) check_per_row(c, "loss", outputs[0], S.in0, x);
  if (act) check_like(c, "sigmoid", act, S.in0, x);
}

template <const Spec& S>
void validate_backward(const ccv_nnc_cmd_t&, const ccv_nnc_hint_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                       ccv_nnc_tensor_t* const* outputs, int output_size) {
  const std::string c = std::string(S.name) + "_BACKWARD";
  const int m = S.forward_outputs;
  // The forward outputs at the end may be left off (only the sigmoid is ever read).
  const int least = m + 2, most = 2 * m + 2;
  const char* layout = m == 2 ? "|g|g_sigmoid|z|y|loss|sigmoid|" : nullptr;
  const std::string plain = std::string("|g|") + S.in0 + "|" + S.in1 + "|loss|";
  NNC_CHECK(input_size >= least && input_size <= most, "%s: takes inputs %s (got %d inputs)", c.c_str(),
            layout ? layout : plain.c_str(), input_size);
  NNC_CHECK(output_size >= 1 && output_size <= 2, "%s: takes outputs |d %s|d %s| (got %d outputs)", c.c_str(), S.in0,
            S.in1, output_size);
  const ccv_nnc_tensor_t* x = inputs[m];
  const ccv_nnc_tensor_t* second = inputs[m + 1];
  const ccv_nnc_tensor_t* act = m == 2 && input_size > 5 ? inputs[5] : nullptr;
  NNC_CHECK(second, "%s: %s (input %d) is NULL; the backward needs it", c.c_str(), S.in1, m + 1);
  const ccv_nnc_tensor_t* ref = x ? x : act;
  if (m == 2)
    NNC_CHECK(ref, "%s: both the logits (input 2) and the saved sigmoid (input 5) are NULL; it needs one", c.c_str());
  else
    NNC_CHECK(x, "%s: %s (input %d) is NULL; the backward needs it", c.c_str(), S.in0, m);
  check_float(c, x ? S.in0 : "sigmoid", ref);
  check_second(S, c, second, ref);
  if (x && act) check_like(c, "sigmoid", act, S.in0, x);
  if (inputs[0]) check_per_row(c, "g", inputs[0], S.in0, ref);
  if (m == 2 && inputs[1]) check_like(c, "g_sigmoid", inputs[1], S.in0, ref);
  if (input_size > m + 2 && inputs[m + 2]) check_per_row(c, "loss", inputs[m + 2], S.in0, ref);
  NNC_CHECK(outputs[0] || (output_size > 1 && outputs[1]), "%s: every output is NULL", c.c_str());
  if (outputs[0]) check_like(c, "the first output gradient", outputs[0], S.in0, ref);
  if (output_size > 1 && outputs[1]) {
    if (S.second == Second::kLabels)
      NNC_CHECK(rows::label_kind(ref->info, second->info) == rows::LabelKind::kDense,
                "%s: a gradient with respect to class-index labels does not exist (output 1 must be NULL)", c.c_str());
    if (m == 2) NNC_CHECK(x, "%s: the gradient of y needs the logits z (input 2)", c.c_str());
    check_like(c, "the second output gradient", outputs[1], S.in1, second);
  }
}

// libnnc's loss shape (rows::loss_params): from the labels / targets, with
// the channel entry 1; MSE reduces a 1-d target to [1] as well.
template <const Spec& S>
void forward_shapes(const ccv_nnc_cmd_param_t&, const ccv_nnc_tensor_param_t* inputs, int input_size,
                    const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (input_size < 2 || output_size < 1) return;
  rows::loss_params(inputs[0], inputs[1], &S != &kMse, outputs[0]);
  if (output_size > 1) outputs[1] = inputs[0];
}

// libnnc's backward shapes: the first output like the forward's first input
// (the saved sigmoid, input 5, for SIGMOID_BINARY_CROSSENTROPY), the second
// like its second input.
template <const Spec& S>
void backward_shapes(const ccv_nnc_cmd_param_t&, const ccv_nnc_tensor_param_t* inputs, int input_size,
                     const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  const int m = S.forward_outputs;
  const int first = m == 2 ? 5 : 1;
  if (output_size < 1 || input_size <= first || input_size <= m + 1) return;
  outputs[0] = inputs[first];
  if (output_size > 1) outputs[1] = inputs[m + 1];
}

// libnnc's bitmasks (predicates on the first word). Forward: both inputs and
// the loss; SIGMOID_BINARY_CROSSENTROPY always produces the sigmoid, the loss
// optional.
template <const Spec& S>
bool forward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int ib, const uint64_t* outputs,
                     int ob) {
  const uint64_t out = word0(outputs, ob);
  if ((word0(inputs, ib) & 3u) != 3u) return false;
  return S.forward_outputs == 2 ? out == 3u || out == 2u : out == 1u;
}

// Backward, |g|forward inputs|forward outputs|: the slots each loss needs
// (CATEGORICAL: g, p, labels; BINARY: x, y; MSE: g, a, b; SMOOTH_L1: a, b,
// loss; SIGMOID_BINARY: y and the saved sigmoid) and the first output (MSE:
// either output).
template <const Spec& S>
bool backward_bitmask(const ccv_nnc_cmd_param_t&, int, int, const uint64_t* inputs, int ib, const uint64_t* outputs,
                      int ob) {
  const uint64_t in = word0(inputs, ib), out = word0(outputs, ob);
  uint64_t need = 7u;
  if (&S == &kBinary) need = 6u;
  if (&S == &kSmoothL1) need = 14u;
  if (&S == &kSigmoidBinary) need = 40u;
  if ((in & need) != need) return false;
  return &S == &kMse ? (out & 3u) != 0 : (out & 1u) == 1u;
}

// SIGMOID_BINARY_CROSSENTROPY (libnnc's rule): the sigmoid may be written over
// the logits; dz over g_sigmoid, z or the saved sigmoid (each read only at its
// own element after the row's scalars are formed).
bool sbce_forward_inplace(const ccv_nnc_cmd_param_t&, int input_idx, int, int output_idx, int) {
  return input_idx == 0 && output_idx == 1;
}
bool sbce_backward_inplace(const ccv_nnc_cmd_param_t&, int input_idx, int, int output_idx, int) {
  return output_idx == 0 && (input_idx == 1 || input_idx == 2 || input_idx == 5);
}

template <const Spec& S>
void add(Registry& r, uint32_t forward, uint32_t backward, ccv_nnc_cmd_exec_f fexec, ccv_nnc_cmd_exec_f bexec,
         ccv_nnc_cmd_exec_f fopt = nullptr, ccv_nnc_cmd_exec_f bopt = nullptr) {
  CommandInfo info;
  info.cmd = forward;
  info.tensor_auto = forward_shapes<S>;
  info.bitmask = forward_bitmask<S>;
  if (&S == &kSigmoidBinary) info.allow_inplace = sbce_forward_inplace;
  info.validate = validate_forward<S>;
  r.add_command(info);
  info = CommandInfo{};
  info.cmd = backward;
  info.attributes = CCV_NNC_CMD_ATTR_NULL_IS_ONES;
  info.tensor_auto = backward_shapes<S>;
  info.bitmask = backward_bitmask<S>;
  if (&S == &kSigmoidBinary) info.allow_inplace = sbce_backward_inplace;
  info.validate = validate_backward<S>;
  r.add_command(info);

  const int labels = S.second == Second::kLabels ? CCV_32S : 0;
  r.add_kernels(cpu_ref(types::kFloat | labels), {{forward, fexec}, {backward, bexec}});
  if (fopt) r.add_kernels(cpu_opt(CCV_32F | labels).accepting(opt_accept), {{forward, fopt}, {backward, bopt}});
}

}  // namespace

}  // namespace loss

void register_loss(Registry& r) {
  using namespace loss;
  add<kCategorical>(r, CCV_NNC_CATEGORICAL_CROSSENTROPY_FORWARD, CCV_NNC_CATEGORICAL_CROSSENTROPY_BACKWARD,
                    categorical_forward_ref, categorical_backward_ref, categorical_forward_opt,
                    categorical_backward_opt);
  add<kBinary>(r, CCV_NNC_BINARY_CROSSENTROPY_FORWARD, CCV_NNC_BINARY_CROSSENTROPY_BACKWARD, binary_forward_ref,
               binary_backward_ref, binary_forward_opt, binary_backward_opt);
  add<kSigmoidBinary>(r, CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_FORWARD, CCV_NNC_SIGMOID_BINARY_CROSSENTROPY_BACKWARD,
                      sigmoid_binary_forward_ref, sigmoid_binary_backward_ref, sigmoid_binary_forward_opt,
                      sigmoid_binary_backward_opt);
  add<kMse>(r, CCV_NNC_MSE_FORWARD, CCV_NNC_MSE_BACKWARD, mse_forward_ref, mse_backward_ref, mse_forward_opt,
            mse_backward_opt);
  add<kSmoothL1>(r, CCV_NNC_SMOOTH_L1_FORWARD, CCV_NNC_SMOOTH_L1_BACKWARD, smooth_l1_forward_ref,
                 smooth_l1_backward_ref, smooth_l1_forward_opt, smooth_l1_backward_opt);
}

}  // namespace nnc
