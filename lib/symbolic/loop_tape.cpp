// The tape of a differentiated while loop; see loop_tape.hpp.
#include "symbolic/loop_tape.hpp"

#include <cstring>

#include "core/error.hpp"
#include "core/tensor.hpp"
#include "symbolic/data_parallel.hpp"

namespace nnc::symbolic {

namespace {

// Packed bytes of a tensor or view into `bytes` (capacity kept across runs).
void keep(std::vector<uint8_t>& bytes, const ccv_nnc_tensor_t* t) {
  const Layout l = layout_of(t, "the loop tape: a value");
  bytes.resize(l.count() * l.element_size);
  if (!bytes.empty()) pack(l, bytes.data());
}

void give_back(const std::vector<uint8_t>& bytes, ccv_nnc_tensor_t* t) {
  const Layout l = layout_of(t, "the loop tape: a value");
  NNC_CHECK(bytes.size() == l.count() * l.element_size, "the loop tape: a kept value has %zu bytes, its tensor %zu", bytes.size(),
            l.count() * l.element_size);
  if (!bytes.empty()) unpack(bytes.data(), l);
}

int64_t counter(const ccv_nnc_tensor_t* t) {
  NNC_CHECK(t && CCV_GET_DATA_TYPE(t->info.datatype) == CCV_64S, "the loop tape: the loop counter is missing");
  return t->data.i64[0];
}

int push_exec(const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t, const int, ccv_nnc_tensor_t* const* inputs, const int input_size,
              ccv_nnc_tensor_t* const*, const int, ccv_nnc_stream_context_t* const) {
  try {
    auto* tape = static_cast<LoopTape*>(cmd.data);
    NNC_CHECK(tape && input_size == static_cast<int>(tape->values) + 1, "the loop tape: push has %d inputs for %zu values",
              input_size, tape ? tape->values : 0);
    const int64_t r = counter(inputs[0]);
    NNC_CHECK(r >= 0 && static_cast<size_t>(r) <= tape->recorded, "the loop tape: round %lld pushed after %zu rounds",
              static_cast<long long>(r), tape->recorded);
    if (r == 0) tape->recorded = 0;  // a new forward run
    if (tape->rounds.size() <= static_cast<size_t>(r)) tape->rounds.resize(static_cast<size_t>(r) + 1);
    auto& round = tape->rounds[static_cast<size_t>(r)];
    round.resize(tape->values);
    for (size_t i = 0; i < tape->values; i++) keep(round[i], inputs[i + 1]);
    tape->recorded = static_cast<size_t>(r) + 1;
    return CCV_NNC_EXEC_SUCCESS;
  } catch (const Error& e) {
    set_error_message(e.what());
    return e.code();
  } catch (const std::bad_alloc&) {
    set_error_message("the loop tape: out of memory");
    return CCV_NNC_EXEC_OOM;
  }
}

int read_exec(const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t, const int, ccv_nnc_tensor_t* const* inputs, const int input_size,
              ccv_nnc_tensor_t* const* outputs, const int output_size, ccv_nnc_stream_context_t* const) {
  try {
    auto* tape = static_cast<LoopTape*>(cmd.data);
    NNC_CHECK(tape && input_size >= 1 && output_size == static_cast<int>(tape->values) + 2,
              "the loop tape: read has %d outputs for %zu values", output_size, tape ? tape->values : 0);
    const int64_t j = counter(inputs[0]);
    const bool go = j >= 0 && static_cast<size_t>(j) < tape->recorded;
    if (outputs[0]) outputs[0]->data.i64[0] = go;
    if (!go) return CCV_NNC_EXEC_SUCCESS;  // the round that stops the backward loop
    const size_t r = tape->recorded - 1 - static_cast<size_t>(j);
    if (outputs[1]) outputs[1]->data.i64[0] = static_cast<int64_t>(r);
    for (size_t i = 0; i < tape->values; i++)
      if (outputs[i + 2]) give_back(tape->rounds[r][i], outputs[i + 2]);
    return CCV_NNC_EXEC_SUCCESS;
  } catch (const Error& e) {
    set_error_message(e.what());
    return e.code();
  }
}

ccv_nnc_cmd_vtab_t push_vtab = {push_exec, nullptr};
ccv_nnc_cmd_vtab_t read_vtab = {read_exec, nullptr};

ccv_nnc_cmd_t custom(ccv_nnc_cmd_vtab_t* isa, LoopTape* tape) {
  ccv_nnc_cmd_t c = ccv_nnc_cmd(CCV_NNC_CUSTOM_FORWARD, isa, ccv_nnc_cmd_auto, 0);
  c.data = tape;
  return c;
}

}  // namespace

ccv_nnc_cmd_t loop_tape_push(LoopTape* tape) { return custom(&push_vtab, tape); }
ccv_nnc_cmd_t loop_tape_read(LoopTape* tape) { return custom(&read_vtab, tape); }
bool is_loop_tape_cmd(const ccv_nnc_cmd_t& cmd) {
  return cmd.cmd == CCV_NNC_CUSTOM_FORWARD && (cmd.isa == &push_vtab || cmd.isa == &read_vtab);
}

int loop_tape_go(ccv_nnc_tensor_t* const* inputs, int input_size, const void*) {
  return input_size >= 1 && inputs[0] && inputs[0]->data.i64[0] != 0;
}

ccv_nnc_cmd_t instantiate(const ccv_nnc_cmd_t& cmd, TapeInstances& instances) {
  if (is_bucket_cmd(cmd)) return instantiate_bucket(cmd, instances.buckets);
  if (!is_loop_tape_cmd(cmd)) return cmd;
  const auto* original = static_cast<const LoopTape*>(cmd.data);
  ccv_nnc_cmd_t c = cmd;
  for (const auto& [from, to] : instances.made)
    if (from == original) {
      c.data = to.get();
      return c;
    }
  auto made = std::make_shared<LoopTape>();
  made->values = original->values;
  instances.made.emplace_back(original, made);
  c.data = made.get();
  return c;
}

}  // namespace nnc::symbolic
