// Communicators (ccv_nnc_comm_t): a group of processes that run collectives
// together, over MPI. NNC has no network layer of its own.
//
// All MPI calls of a communicator go through its engine, one at a time:
// collectives are jobs run in the order they were queued (every process
// queues the same jobs in the same order, as MPI requires). With a thread
// level of at least MPI_THREAD_SERIALIZED the engine has a worker thread, so
// a job can be queued and waited for later (data parallelism overlaps the
// averaging of gradients with the backward pass this way); otherwise a job
// runs on the thread that waits for it.
//
// The worker makes MPI's blocking calls (MPI_Allreduce, MPI_Bcast, ...:
// Open MPI's tuned algorithms, twice as fast as its non-blocking ones for
// 1-4 MiB) and whoever waits keeps the clock: a job still running when the
// communicator's timeout has passed since it started fails, the
// communicator is marked broken, and every later job fails at once with the
// same message. The worker may stay blocked inside MPI for good (a lost
// process); it is then left behind at free. MPI cannot cancel a collective,
// so the buffers of the failed job may still be written by MPI if the
// missing process turns up: a broken communicator is for reporting, then
// exiting. Without a worker, jobs run non-blocking on the waiting thread,
// polled under the same timeout.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "nnc/ccv_nnc.h"

namespace nnc::comm {

enum class Collective { Allreduce, Broadcast, Reduce, Allgather, Barrier };

// One collective over one contiguous buffer of `count` elements of
// `datatype` (CCV_32F, CCV_64F, CCV_16F, CCV_16BF, CCV_32S, or CCV_8U for raw
// bytes). In place when `send` is null; Allgather reads `count` elements at
// `send` and writes size x count at `recv`. Reduce and Broadcast use `root`.
struct Job {
  Collective op = Collective::Allreduce;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  int datatype = CCV_32F;
  int root = 0;
  const char* what = "collective";  // named in messages
  // Set by the engine.
  std::mutex mutex;
  std::condition_variable cv;
  int state = 0;  // 0 queued, 2 running, 1 done, -1 failed
  std::chrono::steady_clock::time_point started;  // when it began running
  std::string error;
  double seconds = 0;  // from its start in MPI to its completion
};

struct Engine;  // comm.cpp's MPI state

}  // namespace nnc::comm

struct ccv_nnc_comm_s {
  int rank = 0;
  int size = 1;
  std::unique_ptr<nnc::comm::Engine> engine;
  // GPU tensors across processes (gpu_across.hpp), under gpu_mutex: the
  // device communicators the CUDA module made, by device, and the pinned
  // host buffer GPU pairs are staged through.
  std::mutex gpu_mutex;
  std::map<int, void*> device_states;
  ccv_nnc_tensor_t* staging = nullptr;
  ~ccv_nnc_comm_s();
};

namespace nnc::comm {

// The communicator a COMM_ command was given (ccv_nnc_cmd_set_comm), or null:
// cmd.data is a live communicator only if one was made and not freed.
ccv_nnc_comm_t* comm_of(const ccv_nnc_cmd_t& cmd);
// Whether `comm` is a communicator made and not yet freed.
bool is_live(const ccv_nnc_comm_t* comm);

// Queue `job` behind the communicator's earlier jobs. The job must stay alive
// until wait returns.
void submit(ccv_nnc_comm_t* comm, Job* job);
// Block until `job` ends; throws Error (CCV_NNC_EXEC_INVALID) with its
// message when it failed or timed out.
void wait(ccv_nnc_comm_t* comm, Job* job);
// submit, then wait.
void run(ccv_nnc_comm_t* comm, Job* job);

// Whether queued jobs run while the caller goes on (a worker thread).
bool overlaps(const ccv_nnc_comm_t* comm);

}  // namespace nnc::comm
