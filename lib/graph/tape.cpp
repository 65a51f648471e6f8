// The tensor tape and multi-view tensors.
//
// The tape keys everything by (graph, node, rounds of the enclosing loops):
// how many rounds a loop ran, which branch a case..of took, and the contents
// of tensors flagged with ccv_nnc_graph_exec_set_io_flags at each round —
// what the backward pass of a loop or a branch needs to replay it.
#include <cstring>

#include "core/error.hpp"
#include "core/tensor.hpp"
#include "graph/schedule.hpp"

namespace nnc::graph {

void tape_record_number(ccv_nnc_tensor_tape_t* tape, const Graph* g, int exec, const std::vector<int64_t>& rounds,
                        uint64_t number) {
  std::lock_guard<std::mutex> lock(tape->mutex);
  tape->numbering[ccv_nnc_tensor_tape_s::Key{g, exec, rounds}] = number;
}

bool tape_number(const ccv_nnc_tensor_tape_t* tape, const Graph* g, int exec, const std::vector<int64_t>& rounds,
                 uint64_t* number) {
  auto* t = const_cast<ccv_nnc_tensor_tape_t*>(tape);
  std::lock_guard<std::mutex> lock(t->mutex);
  auto it = t->numbering.find(ccv_nnc_tensor_tape_s::Key{g, exec, rounds});
  if (it == t->numbering.end()) return false;
  *number = it->second;
  return true;
}

void tape_set_current(ccv_nnc_tensor_tape_t* tape, const Graph* g, const std::vector<int64_t>& rounds) {
  std::lock_guard<std::mutex> lock(tape->mutex);
  tape->current[g] = rounds;
}

void tape_keep(ccv_nnc_tensor_tape_t* tape, const ccv_nnc_tensor_t* key, const ccv_nnc_tensor_t* contents,
               const std::vector<int64_t>& rounds) {
  const Layout l = layout_of(contents, "ccv_nnc_tensor_tape_io: tensor");
  std::vector<uint8_t> bytes(l.count() * l.element_size);
  if (!bytes.empty()) pack(l, bytes.data());
  std::lock_guard<std::mutex> lock(tape->mutex);
  tape->kept[{key, rounds}] = std::move(bytes);
}

const std::vector<uint8_t>* tape_kept(const ccv_nnc_tensor_tape_t* tape, const ccv_nnc_tensor_t* tensor,
                                      const std::vector<int64_t>& rounds) {
  auto* t = const_cast<ccv_nnc_tensor_tape_t*>(tape);
  std::lock_guard<std::mutex> lock(t->mutex);
  auto it = t->kept.find({tensor, rounds});
  return it == t->kept.end() ? nullptr : &it->second;
}

}  // namespace nnc::graph
