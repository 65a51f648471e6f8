// Data parallelism across processes (Level 3.5): the averaging of gradients
// over a communicator, inserted into a symbolic graph
// (ccv_nnc_symbolic_graph_data_parallel_comm).
//
// The gradients are grouped in buckets (one datatype each, about
// bucket_bytes, in the order the graph computes them). Each bucket is two
// custom commands sharing a Bucket through cmd.data:
//   start |g_1 .. g_k| -> |token|   packs the gradients into the bucket's
//                                   staging buffer and queues its allreduce on
//                                   the communicator's worker; returns at once
//   wait  |token| -> |a_1 .. a_k|   waits for the allreduce, writes each
//                                   average (sum / size) into a_i
// The start is ordered before the backward work that follows its last
// gradient, so it runs as soon as the bucket is complete; the wait runs where
// an average is first read (the minimisers, after the backward). In between,
// the allreduce runs on the worker while the backward goes on. The staging
// buffer lives outside the arena; the gradients die at the start.
//
// The symbolic graph owns one Bucket per bucket; every compile gives its
// concrete graph a fresh copy (instantiate_bucket, like the loop tape's).
#pragma once

#include <memory>
#include <vector>

#include "cmd/comm/communicator.hpp"
#include "nnc/ccv_nnc.h"
#include "symbolic/graph.hpp"

namespace nnc::symbolic {

struct Bucket {
  ccv_nnc_comm_t* comm = nullptr;
  int datatype = CCV_32F;
  std::vector<size_t> counts;  // elements of each gradient, in slot order
  size_t total = 0;
  std::vector<unsigned char> staging;
  std::unique_ptr<comm::Job> job = std::make_unique<comm::Job>();
  bool pending = false;  // started, not yet waited for
  // Totals over runs, for reports: seconds the allreduce took, seconds the
  // wait blocked, runs.
  double comm_seconds = 0, blocked_seconds = 0;
  long runs = 0;
};

bool is_bucket_cmd(const ccv_nnc_cmd_t& cmd);
// `cmd` with its bucket replaced by this compile's copy (made once per
// original, kept in `made`); other commands unchanged.
ccv_nnc_cmd_t instantiate_bucket(const ccv_nnc_cmd_t& cmd, std::vector<std::pair<const void*, std::shared_ptr<void>>>& made);

// The pass itself (see ccv_nnc.h); `averaged` may be null.
void data_parallel_comm(Graph* g, ccv_nnc_comm_t* comm, const ccv_nnc_tensor_symbol_t* gradients, int gradient_size,
                        ccv_nnc_tensor_symbol_t* averaged, size_t bucket_bytes);

// Across the GPUs of one process (data_parallel_devices.cpp): parallel > 1.
void data_parallel_devices(Graph* g, int parallel, const ccv_nnc_tensor_symbol_t* broadcasts, int broadcast_size,
                           const ccv_nnc_tensor_symbol_t* allreducers, int allreducer_size,
                           ccv_nnc_tensor_symbol_t* allreducer_outs, const ccv_nnc_tensor_symbol_t* reducers,
                           int reducer_size, ccv_nnc_tensor_symbol_t* reducer_outs,
                           const ccv_nnc_graph_exec_symbol_t* sources, int source_size,
                           const ccv_nnc_graph_exec_symbol_t* destinations, int destination_size);

// The buckets of a concrete graph (for reports): their totals summed.
struct BucketTotals {
  double comm_seconds = 0, blocked_seconds = 0;
  long runs = 0;
  int buckets = 0;
};
BucketTotals bucket_totals(const ccv_nnc_graph_t* graph);

}  // namespace nnc::symbolic
