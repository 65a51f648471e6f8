// The communicator's engine over MPI, and its C API (ccv_nnc_comm_*).
// Without MPI (NNC_MPI=OFF or not found) the engine does not exist and
// ccv_nnc_comm_new_mpi refuses with a message; every other call then only
// ever sees NULL.
#include "cmd/comm/communicator.hpp"
#include "cmd/comm/gpu_across.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <deque>
#include <thread>
#include <unordered_set>

#include "core/error.hpp"
#include "core/export.hpp"
#include "core/tensor.hpp"

#if NNC_HAVE_MPI
// The C API only: MPI's deprecated C++ bindings would need their own library.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace nnc::comm {

namespace {

// Live communicators, so that comm_of can tell one from any other cmd.data.
std::mutex& live_mutex() {
  static std::mutex m;
  return m;
}
std::unordered_set<const ccv_nnc_comm_t*>& live() {
  static std::unordered_set<const ccv_nnc_comm_t*> s;
  return s;
}

double default_timeout() {
  if (const char* env = std::getenv("NNC_COMM_TIMEOUT")) {
    char* end = nullptr;
    const double v = std::strtod(env, &end);
    if (end != env && v > 0) return v;
  }
  return 60;
}

const char* collective_name(Collective op) {
  switch (op) {
    case Collective::Allreduce: return "allreduce";
    case Collective::Broadcast: return "broadcast";
    case Collective::Reduce: return "reduce";
    case Collective::Allgather: return "allgather";
    case Collective::Barrier: return "barrier";
  }
  return "collective";
}

void finish(Job* job, int state, std::string error) {
  {
    std::lock_guard<std::mutex> lock(job->mutex);
    job->state = state;
    job->error = std::move(error);
  }
  job->cv.notify_all();
}

}  // namespace

#if NNC_HAVE_MPI

namespace {

// Sums of 16-bit floats, each addition in float and rounded back.
void sum_half(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; i++) b[i] = float_to_half(half_to_float(a[i]) + half_to_float(b[i]));
}
void sum_bf16(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; i++) b[i] = float_to_bf16(bf16_to_float(a[i]) + bf16_to_float(b[i]));
}

// Process-wide MPI state: who initialised it, the 16-bit ops, how many
// communicators are alive (the last one finalises what it initialised).
struct Mpi {
  std::mutex mutex;
  int communicators = 0;
  bool initialised_here = false;
  bool any_broken = false;
  int thread_level = 0;
  MPI_Op half_op = MPI_OP_NULL, bf16_op = MPI_OP_NULL;
};
Mpi& mpi() {
  static Mpi m;
  return m;
}

std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return format("MPI error %d", code);
  return std::string(text, static_cast<size_t>(len));
}

}  // namespace

struct Engine {
  MPI_Comm comm = MPI_COMM_NULL;
  double timeout = 60;
  bool threaded = false;
  std::mutex mutex;  // the queue, `broken`, `stop`
  std::condition_variable cv;
  std::deque<Job*> queue;
  bool stop = false;
  std::string broken;  // the first failure's message; empty while usable
  std::thread worker;
  bool busy = false;  // the worker is inside a job (under `mutex`)
  int rank = 0, size = 1;

  // Runs one job to its end (the caller holds no lock).
  void execute(Job* job) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!broken.empty()) {
        finish(job, -1, format("%s: the communicator failed earlier (%s)", job->what, broken.c_str()));
        return;
      }
    }
    MPI_Datatype type = MPI_BYTE;
    MPI_Op op = MPI_SUM;
    switch (job->datatype) {
      case CCV_32F: type = MPI_FLOAT; break;
      case CCV_64F: type = MPI_DOUBLE; break;
      case CCV_32S: type = MPI_INT; break;
      case CCV_16F: type = MPI_UINT16_T; op = mpi().half_op; break;
      case CCV_16BF: type = MPI_UINT16_T; op = mpi().bf16_op; break;
      default: type = MPI_BYTE; break;
    }
    if (job->count > static_cast<size_t>(INT32_MAX)) {
      finish(job, -1, format("%s: %zu elements in one message; MPI takes at most %d", job->what, job->count, INT32_MAX));
      return;
    }
    const int count = static_cast<int>(job->count);
    const void* send = job->send ? job->send : MPI_IN_PLACE;
    if (threaded) {
      // On the worker: blocking calls; the waiter keeps the clock.
      {
        std::lock_guard<std::mutex> lock(job->mutex);
        job->started = std::chrono::steady_clock::now();
        job->state = 2;
      }
      job->cv.notify_all();
      int code = MPI_SUCCESS;
      switch (job->op) {
        case Collective::Allreduce: code = MPI_Allreduce(send, job->recv, count, type, op, comm); break;
        case Collective::Broadcast:
          if (job->send && rank == job->root && job->send != job->recv)
            std::memcpy(job->recv, job->send, job->count * datatype_size(job->datatype));
          code = MPI_Bcast(job->recv, count, type, job->root, comm);
          break;
        case Collective::Reduce:
          if (rank == job->root) code = MPI_Reduce(send, job->recv, count, type, op, job->root, comm);
          else code = MPI_Reduce(job->send ? job->send : job->recv, nullptr, count, type, op, job->root, comm);
          break;
        case Collective::Allgather: code = MPI_Allgather(job->send, count, type, job->recv, count, type, comm); break;
        case Collective::Barrier: code = MPI_Barrier(comm); break;
      }
      if (code != MPI_SUCCESS) {
        fail_job(job, format("%s: MPI %s failed: %s", job->what, collective_name(job->op), mpi_error(code).c_str()));
        return;
      }
      job->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - job->started).count();
      finish(job, 1, {});
      return;
    }
    MPI_Request request = MPI_REQUEST_NULL;
    int code = MPI_SUCCESS;
    switch (job->op) {
      case Collective::Allreduce: code = MPI_Iallreduce(send, job->recv, count, type, op, comm, &request); break;
      case Collective::Broadcast:
        if (job->send && rank == job->root && job->send != job->recv)
          std::memcpy(job->recv, job->send, job->count * datatype_size(job->datatype));
        code = MPI_Ibcast(job->recv, count, type, job->root, comm, &request);
        break;
      case Collective::Reduce:
        if (rank == job->root) code = MPI_Ireduce(send, job->recv, count, type, op, job->root, comm, &request);
        else code = MPI_Ireduce(job->send ? job->send : job->recv, nullptr, count, type, op, job->root, comm, &request);
        break;
      case Collective::Allgather: code = MPI_Iallgather(job->send, count, type, job->recv, count, type, comm, &request); break;
      case Collective::Barrier: code = MPI_Ibarrier(comm, &request); break;
    }
    if (code != MPI_SUCCESS) {
      fail_job(job, format("%s: MPI %s failed: %s", job->what, collective_name(job->op), mpi_error(code).c_str()));
      return;
    }
    // Poll: MPI progresses non-blocking collectives inside MPI_Test. Spin a
    // little, then back off to short sleeps so a waiting process leaves its
    // core to the compute threads.
    const auto start = std::chrono::steady_clock::now();
    const auto deadline = start + std::chrono::duration<double>(timeout);
    int spins = 0;
    for (;;) {
      int flag = 0;
      code = MPI_Test(&request, &flag, MPI_STATUS_IGNORE);
      if (code != MPI_SUCCESS) {
        fail_job(job, format("%s: MPI %s failed: %s", job->what, collective_name(job->op), mpi_error(code).c_str()));
        return;
      }
      if (flag) break;
      const auto now = std::chrono::steady_clock::now();
      if (now > deadline) {
        fail_job(job, format("%s: not every process joined the %s within %.3g s (this is rank %d of %d): a process "
                             "has stopped, or the processes do not run the same collectives in the same order",
                             job->what, collective_name(job->op), timeout, rank, size));
        return;
      }
      if (++spins < 200) std::this_thread::yield();
      else std::this_thread::sleep_for(std::chrono::microseconds(spins < 2000 ? 20 : 200));
    }
    job->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    finish(job, 1, {});
  }

  void fail_job(Job* job, std::string message) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (broken.empty()) broken = message;
    }
    {
      std::lock_guard<std::mutex> lock(mpi().mutex);
      mpi().any_broken = true;
    }
    finish(job, -1, std::move(message));
  }

  void loop() {
    for (;;) {
      Job* job = nullptr;
      {
        std::unique_lock<std::mutex> lock(mutex);
        cv.wait(lock, [&] { return stop || !queue.empty(); });
        if (queue.empty()) return;  // stop, and nothing left
        job = queue.front();
        queue.pop_front();
        busy = true;
      }
      execute(job);
      std::lock_guard<std::mutex> lock(mutex);
      busy = false;
    }
  }
};

ccv_nnc_comm_t* new_mpi(const void* mpi_comm) {
  Mpi& m = mpi();
  std::lock_guard<std::mutex> lock(m.mutex);
  int finalized = 0;
  MPI_Finalized(&finalized);
  NNC_CHECK(!finalized, "ccv_nnc_comm_new_mpi: MPI was finalised already");
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    int provided = 0;
    const int code = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    NNC_CHECK(code == MPI_SUCCESS, "ccv_nnc_comm_new_mpi: MPI_Init_thread failed (%d)", code);
    m.initialised_here = true;
  }
  MPI_Query_thread(&m.thread_level);
  if (m.half_op == MPI_OP_NULL) {
    MPI_Op_create(sum_half, 1, &m.half_op);
    MPI_Op_create(sum_bf16, 1, &m.bf16_op);
  }
  auto engine = std::make_unique<Engine>();
  const MPI_Comm from = mpi_comm ? *static_cast<const MPI_Comm*>(mpi_comm) : MPI_COMM_WORLD;
  NNC_CHECK(from != MPI_COMM_NULL, "ccv_nnc_comm_new_mpi: the MPI communicator is MPI_COMM_NULL");
  // Our own copy: our collectives never match the program's own messages.
  int code = MPI_Comm_dup(from, &engine->comm);
  NNC_CHECK(code == MPI_SUCCESS, "ccv_nnc_comm_new_mpi: MPI_Comm_dup failed: %s", mpi_error(code).c_str());
  MPI_Comm_set_errhandler(engine->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(engine->comm, &engine->rank);
  MPI_Comm_size(engine->comm, &engine->size);
  engine->timeout = default_timeout();
  engine->threaded = m.thread_level >= MPI_THREAD_SERIALIZED;
  auto comm = std::make_unique<ccv_nnc_comm_t>();
  comm->rank = engine->rank;
  comm->size = engine->size;
  comm->engine = std::move(engine);
  if (comm->engine->threaded) {
    Engine* e = comm->engine.get();
    e->worker = std::thread([e] { e->loop(); });
  }
  m.communicators++;
  return comm.release();
}

// Returns false when the engine must be left alive: its worker is blocked
// inside MPI for a lost process.
bool free_engine(Engine* e) {
  if (e->worker.joinable()) {
    bool stuck = false;
    {
      std::lock_guard<std::mutex> lock(e->mutex);
      e->stop = true;
      stuck = e->busy && !e->broken.empty();
    }
    e->cv.notify_all();
    if (stuck) {
      e->worker.detach();
      std::lock_guard<std::mutex> lock(mpi().mutex);
      mpi().communicators--;
      return false;
    }
    e->worker.join();
  }
  Mpi& m = mpi();
  std::lock_guard<std::mutex> lock(m.mutex);
  const bool broken = !e->broken.empty() || m.any_broken;
  // A broken communicator may have a collective pending forever: freeing it
  // (or finalising) would wait for the lost process.
  if (!broken && e->comm != MPI_COMM_NULL) MPI_Comm_free(&e->comm);
  if (--m.communicators == 0 && m.initialised_here && !broken) {
    if (m.half_op != MPI_OP_NULL) {
      MPI_Op_free(&m.half_op);
      MPI_Op_free(&m.bf16_op);
    }
    MPI_Finalize();
    m.initialised_here = false;
  }
  return true;
}

#else  // no MPI

struct Engine {
  void execute(Job* job) { finish(job, -1, format("%s: NNC was built without MPI", job->what)); }
  bool threaded = false;
  double timeout = 60;
  std::string broken;
  std::mutex mutex;
};

ccv_nnc_comm_t* new_mpi(const void*) {
  fail(CCV_NNC_EXEC_NO_KERNEL,
       "ccv_nnc_comm_new_mpi: this NNC was built without MPI (configure with NNC_MPI=ON after installing libopenmpi-dev)");
}

bool free_engine(Engine*) { return true; }

#endif

ccv_nnc_comm_t* comm_of(const ccv_nnc_cmd_t& cmd) {
  if (!cmd.data) return nullptr;
  std::lock_guard<std::mutex> lock(live_mutex());
  auto* c = static_cast<ccv_nnc_comm_t*>(cmd.data);
  return live().count(c) ? c : nullptr;
}

bool is_live(const ccv_nnc_comm_t* comm) {
  std::lock_guard<std::mutex> lock(live_mutex());
  return comm && live().count(comm);
}

void submit(ccv_nnc_comm_t* comm, Job* job) {
  NNC_CHECK(comm && comm->engine, "%s: no communicator", job->what);
  job->state = 0;
  job->error.clear();
#if NNC_HAVE_MPI
  Engine* e = comm->engine.get();
  if (e->threaded) {
    {
      std::lock_guard<std::mutex> lock(e->mutex);
      e->queue.push_back(job);
    }
    e->cv.notify_one();
    return;
  }
#endif
  // No worker: the job runs now, on this thread.
  comm->engine->execute(job);
}

void wait(ccv_nnc_comm_t* comm, Job* job) {
  Engine* e = comm->engine.get();
  std::unique_lock<std::mutex> lock(job->mutex);
  for (;;) {
    if (job->state == 1) return;
    if (job->state < 0) fail(CCV_NNC_EXEC_INVALID, "%s", job->error.c_str());
    std::string broken;
    double timeout = 0;
    {
      std::lock_guard<std::mutex> engine_lock(e->mutex);
      broken = e->broken;
      timeout = e->timeout;
    }
    if (job->state == 0 && !broken.empty())  // queued behind a job that failed
      fail(CCV_NNC_EXEC_INVALID, "%s: the communicator failed earlier (%s)", job->what, broken.c_str());
    if (job->state == 2 && std::chrono::steady_clock::now() - job->started > std::chrono::duration<double>(timeout)) {
      const std::string message =
          format("%s: not every process joined the %s within %.3g s (this is rank %d of %d): a process has stopped, or the "
                 "processes do not run the same collectives in the same order",
                 job->what, collective_name(job->op), timeout, comm->rank, comm->size);
      {
        std::lock_guard<std::mutex> engine_lock(e->mutex);
        if (e->broken.empty()) e->broken = message;
      }
#if NNC_HAVE_MPI
      {
        std::lock_guard<std::mutex> mpi_lock(mpi().mutex);
        mpi().any_broken = true;
      }
#endif
      fail(CCV_NNC_EXEC_INVALID, "%s", message.c_str());
    }
    job->cv.wait_for(lock, std::chrono::milliseconds(20));
  }
}

void run(ccv_nnc_comm_t* comm, Job* job) {
  submit(comm, job);
  wait(comm, job);
}

bool overlaps(const ccv_nnc_comm_t* comm) { return comm && comm->engine && comm->engine->threaded; }

}  // namespace nnc::comm

ccv_nnc_comm_s::~ccv_nnc_comm_s() {
  {
    const bool broken = engine && ccv_nnc_comm_is_broken(this);
    const nnc::comm::GpuAcrossHooks* hooks = nnc::comm::gpu_across_hooks();
    for (auto& [device, state] : device_states)
      if (state && hooks && hooks->destroy) hooks->destroy(state, broken);
    device_states.clear();
    if (staging) ccv_nnc_tensor_free(staging);
    staging = nullptr;
  }
  if (engine && !nnc::comm::free_engine(engine.get())) (void)engine.release();  // its worker still uses it
}

using nnc::guard;
using nnc::guard_code;
using nnc::guard_void;

NNC_API int ccv_nnc_comm_mpi_available(void) {
#if NNC_HAVE_MPI
  return 1;
#else
  return 0;
#endif
}

NNC_API ccv_nnc_comm_t* ccv_nnc_comm_new_mpi(const void* const mpi_comm) {
  return guard(static_cast<ccv_nnc_comm_t*>(nullptr), [&] {
    ccv_nnc_comm_t* c = nnc::comm::new_mpi(mpi_comm);
    std::lock_guard<std::mutex> lock(nnc::comm::live_mutex());
    nnc::comm::live().insert(c);
    return c;
  });
}

NNC_API int ccv_nnc_comm_rank(const ccv_nnc_comm_t* const comm) { return comm ? comm->rank : -1; }

NNC_API int ccv_nnc_comm_size(const ccv_nnc_comm_t* const comm) { return comm ? comm->size : -1; }

NNC_API void ccv_nnc_comm_set_timeout(ccv_nnc_comm_t* const comm, const double seconds) {
  guard_void([&] {
    NNC_CHECK(comm, "ccv_nnc_comm_set_timeout: comm is NULL");
    NNC_CHECK(seconds > 0 && seconds < 1e9, "ccv_nnc_comm_set_timeout: %g seconds; it takes a positive number", seconds);
    std::lock_guard<std::mutex> lock(comm->engine->mutex);
    comm->engine->timeout = seconds;
  });
}

NNC_API int ccv_nnc_comm_barrier(ccv_nnc_comm_t* const comm) {
  return guard_code([&] {
    NNC_CHECK(comm, "ccv_nnc_comm_barrier: comm is NULL");
    nnc::comm::Job job;
    job.op = nnc::comm::Collective::Barrier;
    job.what = "ccv_nnc_comm_barrier";
    nnc::comm::run(comm, &job);
    return CCV_NNC_EXEC_SUCCESS;
  });
}

NNC_API int ccv_nnc_comm_is_broken(const ccv_nnc_comm_t* const comm) {
  if (!comm || !comm->engine) return 0;
  std::lock_guard<std::mutex> lock(comm->engine->mutex);
  return comm->engine->broken.empty() ? 0 : 1;
}

NNC_API void ccv_nnc_comm_free(ccv_nnc_comm_t* const comm) {
  guard_void([&] {
    if (!comm) return;
    {
      std::lock_guard<std::mutex> lock(nnc::comm::live_mutex());
      NNC_CHECK(nnc::comm::live().erase(comm), "ccv_nnc_comm_free: not a live communicator (freed twice?)");
    }
    delete comm;
  });
}

NNC_API ccv_nnc_cmd_t ccv_nnc_cmd_set_comm(const ccv_nnc_cmd_t cmd, ccv_nnc_comm_t* const comm) {
  ccv_nnc_cmd_t c = cmd;
  guard_void([&] {
    if (!comm) return;
    const uint32_t base = cmd.cmd & ~1u;
    NNC_CHECK(base == CCV_NNC_COMM_ALLREDUCE_FORWARD || base == CCV_NNC_COMM_BROADCAST_FORWARD ||
                  base == CCV_NNC_COMM_REDUCE_FORWARD,
              "ccv_nnc_cmd_set_comm: %s is not a COMM_ command", ccv_nnc_cmd_name(cmd.cmd));
    {
      std::lock_guard<std::mutex> lock(nnc::comm::live_mutex());
      NNC_CHECK(nnc::comm::live().count(comm), "ccv_nnc_cmd_set_comm: not a live communicator");
    }
    c.data = comm;
  });
  return c;
}
