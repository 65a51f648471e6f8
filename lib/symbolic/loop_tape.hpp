// The tape of a differentiated while loop (Level 3.5): what the backward
// loop reads of the forward loop's rounds.
//
// ccv_nnc_symbolic_graph_backward through a while loop adds two custom
// commands. In the forward body, a push (inputs: the loop counter, then the
// values a round of the body reads from outside the round: carried-in
// values and body constants) keeps a copy of those values per round. The
// backward loop's body starts with a read (input: its own counter; outputs:
// a go flag, the forward round it stands for, then the same values): its
// round j gets the forward round R - 1 - j back, so the backward body can
// recompute that round and differentiate it. Only those values are kept;
// everything else a round computes is recomputed from them, so the tape
// holds one round's inputs per round, not its intermediates.
//
// The storage lives in a LoopTape that the two commands share through
// cmd.data. The symbolic graph owns one per differentiated loop (its
// `owned` list); every compile gives its concrete graph a fresh copy
// (instantiate), so two graphs compiled from one symbolic graph never share
// a tape.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "nnc/ccv_nnc.h"

namespace nnc::symbolic {

struct LoopTape {
  // rounds[r][i]: the bytes of value i at forward round r (packed).
  std::vector<std::vector<std::vector<uint8_t>>> rounds;
  size_t recorded = 0;  // rounds kept by the current forward run
  size_t values = 0;    // values per round
};

// The custom commands (their vtabs tell them apart from the caller's).
ccv_nnc_cmd_t loop_tape_push(LoopTape* tape);
ccv_nnc_cmd_t loop_tape_read(LoopTape* tape);
bool is_loop_tape_cmd(const ccv_nnc_cmd_t& cmd);

// The backward loop's expression: its input is the read's go flag.
int loop_tape_go(ccv_nnc_tensor_t* const* inputs, int input_size, const void* data);

// For compile: `cmd` with its tape replaced by this compile's copy (made
// once per original tape, kept alive by `owned`); other commands unchanged.
struct TapeInstances {
  std::vector<std::pair<const LoopTape*, std::shared_ptr<LoopTape>>> made;
  // The data-parallel buckets' copies (data_parallel.hpp), made the same way.
  std::vector<std::pair<const void*, std::shared_ptr<void>>> buckets;
};
ccv_nnc_cmd_t instantiate(const ccv_nnc_cmd_t& cmd, TapeInstances& instances);

}  // namespace nnc::symbolic
