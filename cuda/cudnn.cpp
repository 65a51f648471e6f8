// GPU_CUDNN: convolution (forward; backward with any subset of dx, dw,
// dbias), CONVOLUTION_TRANSPOSE forward and backward (cuDNN's
// data gradient run forward, see cudnn_plan::ConvTranspose), MAX_POOL /
// AVERAGE_POOL forward and backward, SOFTMAX forward and backward, BATCH_NORM
// forward (training and inference) and backward, LAYER_NORM forward and
// backward on cuDNN 9's descriptor API (cudnn_cnn.h / cudnn_ops.h, deprecated
// in 9 but present). 32F, 16F and 16BF tensors (every tensor of a call one
// type; LAYER_NORM 32F only) in device memory, NHWC or NCHW, views where cuDNN
// takes strides (images and softmax rows; filters must be packed). 16-bit
// data is cuDNN's HALF / BFLOAT16 with fp32 compute.
//
// What each call hands cuDNN (dims, strides, pads, groups, modes) comes from
// cmd/common/cudnn_plan.hpp, host code tested on the CPU; a call the plan
// declines (asymmetric padding that changes the extent, weights in another
// format than x, other types) is not accepted, so the next backend runs it.
//
// Precision: fp32 convolutions run with CUDNN_FMA_MATH: no TF32 tensor-core
// kernels (which cuDNN's default math allows on Ampere and Hopper, with a
// 10-bit mantissa), so results agree with CPU_REF to fp32 rounding. Setting
// NNC_CUDNN_ALLOW_TF32=1 in the environment switches to CUDNN_DEFAULT_MATH.
//
// Algorithms: the one ccv_nnc_cmd_autotune picked (cuDNN's Find, timed runs;
// cmd.algorithm, cudnn_plan.hpp's numbering) first, then cuDNN's heuristics
// (the *_v7 queries) in their order of preference, skipping tensor-op entries
// under FMA math and any whose workspace passes kWorkspaceLimit; a call that
// cuDNN answers NOT_SUPPORTED goes on to the next algorithm, then to every
// other one.
#include <cudnn.h>

#include <algorithm>
#include <array>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cmd/common/conv_rules.hpp"
#include "cmd/common/cudnn_plan.hpp"
#include "cmd/norm/norm.hpp"
#include "core/declined.hpp"
#include "core/kernel.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"
#include "cuda/cuda.hpp"
#include "cuda/cudnn_graph.hpp"
#include "cuda/ewgpu.hpp"
#include "cuda/kern.hpp"
#include "cuda/stream.hpp"

namespace nnc::cuda {

namespace {

using cudnn_plan::Tensor4;

// Refusals at run time (core/declined.hpp). A call cuDNN answers
// NOT_SUPPORTED (this cuDNN, GPU or configuration cannot run what the plan
// allowed), and a plan that only the hint, known at exec, rules out, throw
// Declined: ccv_nnc_cmd_exec and graph runs then hand the call to the next
// backend (GPU_REF) instead of failing. That is sound while the kernel has
// changed none of its inputs, so a kernel that updates an input in place over
// several calls (running statistics; an output that may be the input, written
// before the last call) holds a Committed from that point on: a refusal after
// it is an error, as any other cuDNN failure.
thread_local bool t_committed = false;
class Committed {
 public:
  Committed() : previous_(t_committed) { t_committed = true; }
  ~Committed() { t_committed = previous_; }
  Committed(const Committed&) = delete;
  Committed& operator=(const Committed&) = delete;

 private:
  bool previous_;
};

[[noreturn, gnu::format(printf, 1, 2)]] void refuse(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string message = vformat(fmt, args);
  va_end(args);
  throw Declined(std::move(message));
}

void check_cudnn(cudnnStatus_t s, const char* what, const char* call) {
  if (s == CUDNN_STATUS_SUCCESS) return;
  if (!t_committed && CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_NOT_SUPPORTED)
    refuse("%s: cuDNN refused %s: %s (cuDNN status %d)", what, call, cudnnGetErrorString(s), static_cast<int>(s));
  const bool oom = s == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
                   s == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED;
  fail(oom ? CCV_NNC_EXEC_OOM : CCV_NNC_EXEC_INVALID, "%s: %s failed: %s (cuDNN status %d)", what, call,
       cudnnGetErrorString(s), static_cast<int>(s));
}
#define NNC_CUDNN_CHECK(call, what) check_cudnn((call), (what), #call)

bool not_supported(cudnnStatus_t s) { return CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_NOT_SUPPORTED; }

constexpr size_t kWorkspaceLimit = size_t{1} << 30;

// For synchronous calls: one cuDNN handle per device, made on first use,
// destroyed at exit (errors ignored there: the runtime may be going away
// too). A handle carries its stream, so each call holds the device's lease
// while it binds the stream and queues its work (two threads queueing on one
// device take turns). Calls on a GPU stream context use the stream's own.
std::mutex g_mutex;
struct Handles {
  std::vector<cudnnHandle_t> v;
  std::vector<std::unique_ptr<std::mutex>> locks;
  ~Handles() {
    for (cudnnHandle_t h : v)
      if (h) cudnnDestroy(h);
  }
};
Handles g_handles;

// The cuDNN handle for one call on stream s. On a GPU stream context: the
// stream's own handle (stream_attachment, made on first use, bound to the
// stream once, freed with the stream), as cuBLAS's. Otherwise the device's
// shared handle, bound to s and held (locked) for the scope of the call.
class Lease {
 public:
  Lease(ccv_nnc_stream_context_t* stream, int device, cudaStream_t s, const char* what) {
    static const char key = 0;
    if (void* own = stream_attachment(
            stream, &key,
            [](int dev, cudaStream_t st) -> void* {
              cudnnHandle_t h = nullptr;
              NNC_CUDA_CHECK(cudaSetDevice(dev), "cuDNN");
              NNC_CUDNN_CHECK(cudnnCreate(&h), "cuDNN");
              if (cudnnSetStream(h, st) != CUDNN_STATUS_SUCCESS) {
                cudnnDestroy(h);
                fail(CCV_NNC_EXEC_INVALID, "cuDNN: cannot bind a handle to its stream");
              }
              return h;
            },
            [](void* h) { cudnnDestroy(static_cast<cudnnHandle_t>(h)); })) {
      h_ = static_cast<cudnnHandle_t>(own);
      return;
    }
    std::mutex* m;
    {
      const std::lock_guard<std::mutex> lock(g_mutex);
      const size_t d = static_cast<size_t>(device);
      if (d >= g_handles.v.size()) {
        g_handles.v.resize(d + 1, nullptr);
        g_handles.locks.resize(d + 1);
      }
      if (!g_handles.locks[d]) g_handles.locks[d] = std::make_unique<std::mutex>();
      if (!g_handles.v[d]) NNC_CUDNN_CHECK(cudnnCreate(&g_handles.v[d]), what);
      h_ = g_handles.v[d];
      m = g_handles.locks[d].get();
    }
    lock_ = std::unique_lock<std::mutex>(*m);
    NNC_CUDNN_CHECK(cudnnSetStream(h_, s), what);
  }
  operator cudnnHandle_t() const { return h_; }

 private:
  cudnnHandle_t h_ = nullptr;
  std::unique_lock<std::mutex> lock_;
};

// Scratch device memory for one call (cuDNN's workspace, temporaries): a
// block of the module's caching allocator ordered on the call's stream.
using Scratch = StreamBlock;

// RAII cuDNN descriptors, kept for reuse: a destroyed one goes to the
// thread's pool of its kind (up to kPooled of them) and the next one of that
// kind comes from there, so a call does not make and free a descriptor per
// operand (op and reduce descriptors; tensor, filter, convolution and
// pooling descriptors are kept set per shape instead: tensor_desc,
// ConvDescs, pool_desc).
// Every user sets a descriptor whole before use (the convolution's: its
// geometry, group count and math type), so nothing of its last use remains.
template <class T, cudnnStatus_t (*Create)(T*), cudnnStatus_t (*Destroy)(T)>
class Desc {
 public:
  explicit Desc(const char* what) {
    std::vector<T>& free = pool();
    if (!free.empty()) {
      d_ = free.back();
      free.pop_back();
      return;
    }
    NNC_CUDNN_CHECK(Create(&d_), what);
  }
  ~Desc() {
    if (!d_) return;
    std::vector<T>& free = pool();
    if (free.size() < kPooled)
      free.push_back(d_);
    else
      Destroy(d_);
  }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
  operator T() const { return d_; }

 private:
  static constexpr size_t kPooled = 32;
  struct Pool {
    std::vector<T> free;
    ~Pool() {
      for (T d : free) Destroy(d);
    }
  };
  static std::vector<T>& pool() {
    thread_local Pool p;
    return p.free;
  }
  T d_ = nullptr;
};

// cuDNN's storage type of a plan's datatype: 16F as HALF, 16BF as BFLOAT16,
// 32F as FLOAT (the plans take no other).
cudnnDataType_t cudnn_type(int datatype) {
  return datatype == CCV_16F ? CUDNN_DATA_HALF : datatype == CCV_16BF ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}
size_t element_size(int datatype) { return datatype == CCV_32F ? 4 : 2; }

// A status that means "not this configuration" (an algorithm, a type): the
// caller may try another way.
bool declined(cudnnStatus_t st) { return not_supported(st) || CUDNN_STATUS_CATEGORY(st) == CUDNN_STATUS_BAD_PARAM; }

// Descriptors set once per shape and kept, per thread (one is never set by
// two threads at once), so that a step repeating its shapes sets none (a
// training step of the reference network set 23 tensor descriptors and 5
// convolutions' before). Two generations of kShapes entries: when the
// current one is full it becomes the old one and the old one's descriptors
// are destroyed, never one a call still holds (a call holds a few, fetched
// since the last turnover).
template <class Key, class Entry>
class ShapeCache {
 public:
  // k's entry; make(entry) sets a new one up on a miss (and may throw).
  template <class Make>
  const Entry& get(const Key& k, Make&& make) {
    // The last few found first: a step asks for the same shapes in turn.
    for (const Recent& r : recent_)
      if (r.entry && r.key == k) return *r.entry;
    const Entry* e = nullptr;
    if (auto it = now_.find(k); it != now_.end()) {
      e = &it->second;
    } else if (auto jt = old_.find(k); jt != old_.end()) {
      e = &now_.insert(old_.extract(jt)).position->second;  // the node, and so the entry, stays where it is
    } else {
      Entry made;
      make(made);
      if (now_.size() >= kShapes) {
        old_.clear();
        std::swap(old_, now_);
        recent_ = {};  // some of them were destroyed with the old generation
      }
      e = &now_.emplace(k, std::move(made)).first->second;
    }
    recent_[next_] = Recent{k, e};
    next_ = (next_ + 1) % recent_.size();
    return *e;
  }

 private:
  static constexpr size_t kShapes = 256;
  struct Recent {
    Key key{};
    const Entry* entry = nullptr;
  };
  std::map<Key, Entry> now_, old_;
  std::array<Recent, 8> recent_{};
  size_t next_ = 0;
};

// One owned descriptor of a kind (moved, never copied).
template <class T, cudnnStatus_t (*Destroy)(T)>
struct Owned {
  T d = nullptr;
  Owned() = default;
  Owned(Owned&& o) noexcept : d(o.d) { o.d = nullptr; }
  Owned& operator=(Owned&&) = delete;
  ~Owned() {
    if (d) Destroy(d);
  }
};

// t's tensor descriptor in `type`, set once per thread and shape.
cudnnTensorDescriptor_t tensor_desc(const Tensor4& t, cudnnDataType_t type, const char* what) {
  thread_local ShapeCache<std::array<int, 9>, Owned<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor>> cache;
  const std::array<int, 9> key = {static_cast<int>(type), t.dim[0], t.dim[1], t.dim[2], t.dim[3],
                                  t.stride[0], t.stride[1], t.stride[2], t.stride[3]};
  return cache
      .get(key,
           [&](auto& e) {
             NNC_CUDNN_CHECK(cudnnCreateTensorDescriptor(&e.d), what);
             NNC_CUDNN_CHECK(cudnnSetTensorNdDescriptor(e.d, type, 4, t.dim, t.stride), what);
           })
      .d;
}

bool allow_tf32() {
  const char* e = std::getenv("NNC_CUDNN_ALLOW_TF32");
  return e && e[0] == '1';
}

// The descriptors of one convolution, set once per thread and shape.
struct ConvDescs {
  cudnnTensorDescriptor_t x, y;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
  cudnnMathType_t math;
  ConvDescs(const cudnn_plan::Conv& p, const char* what) {
    // 16F / 16BF data computes in fp32 (cuDNN's PSEUDO_HALF /
    // PSEUDO_BFLOAT16 configurations: fp32 compute type) and may use tensor
    // cores, which accumulate in fp32.
    const cudnnDataType_t type = cudnn_type(p.datatype);
    math = type != CUDNN_DATA_FLOAT ? CUDNN_TENSOR_OP_MATH : allow_tf32() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
    x = tensor_desc(p.x, type, what);
    y = tensor_desc(p.y, type, what);
    struct Entry {
      Owned<cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor> w;
      Owned<cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor> conv;
    };
    thread_local ShapeCache<std::array<int, 14>, Entry> cache;
    const std::array<int, 14> key = {static_cast<int>(type), static_cast<int>(math), p.w.nhwc ? 1 : 0, p.w.dim[0],
                                     p.w.dim[1],  p.w.dim[2], p.w.dim[3], p.pad[0], p.pad[1], p.stride[0],
                                     p.stride[1], p.dilation[0], p.dilation[1], p.groups};
    const Entry& e = cache.get(key, [&](Entry& n) {
      NNC_CUDNN_CHECK(cudnnCreateFilterDescriptor(&n.w.d), what);
      NNC_CUDNN_CHECK(
          cudnnSetFilterNdDescriptor(n.w.d, type, p.w.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, 4, p.w.dim), what);
      NNC_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&n.conv.d), what);
      NNC_CUDNN_CHECK(cudnnSetConvolutionNdDescriptor(n.conv.d, 2, p.pad, p.stride, p.dilation,
                                                      CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                      what);
      NNC_CUDNN_CHECK(cudnnSetConvolutionGroupCount(n.conv.d, p.groups), what);
      NNC_CUDNN_CHECK(cudnnSetConvolutionMathType(n.conv.d, math), what);
    });
    w = e.w.d;
    conv = e.conv.d;
  }
};

// The algorithm that last ran a convolution of this description, per device:
// the next call of the same shape tries it before asking the heuristics.
// kNoAlgorithm: none ran it, so the next call is refused at once (the search
// tries every algorithm, each with a workspace query).
using AlgoKey = std::vector<int>;
AlgoKey algo_key(int op, int device, cudnnMathType_t math, const cudnn_plan::Conv& p, const Tensor4* dx) {
  AlgoKey k = {op, device, static_cast<int>(math), p.w.nhwc ? 1 : 0, p.groups, p.datatype};
  for (const Tensor4* t : {&p.x, &p.y, dx})
    for (int i = 0; t && i < 4; i++) k.push_back(t->dim[i]), k.push_back(t->stride[i]);
  for (int i = 0; i < 4; i++) k.push_back(p.w.dim[i]);
  for (int i = 0; i < 2; i++) k.push_back(p.pad[i]), k.push_back(p.stride[i]), k.push_back(p.dilation[i]);
  return k;
}
constexpr int kNoAlgorithm = -2;
std::mutex g_algo_mutex;
struct CachedAlgo {
  int algo;
  size_t workspace;  // its workspace size query's answer (the same for every later call of the shape)
};
std::map<AlgoKey, CachedAlgo> g_algos;
int cached_algo(const AlgoKey& k) {
  const std::lock_guard<std::mutex> lock(g_algo_mutex);
  const auto it = g_algos.find(k);
  return it == g_algos.end() ? -1 : it->second.algo;
}
// The workspace of algorithm a for k, when a is the one cached for k.
bool cached_workspace(const AlgoKey& k, int a, size_t* bytes) {
  const std::lock_guard<std::mutex> lock(g_algo_mutex);
  const auto it = g_algos.find(k);
  if (it == g_algos.end() || it->second.algo != a || a < 0) return false;
  *bytes = it->second.workspace;
  return true;
}
void remember_algo(const AlgoKey& k, int a, size_t workspace = 0) {
  const std::lock_guard<std::mutex> lock(g_algo_mutex);
  g_algos[k] = CachedAlgo{a, workspace};
}

// The transform algorithms: FFT, FFT tiling and the non-fused Winograd
// compute through transforms whose rounding grows with the tile, not the
// sums of products an fp32 user expects. The first GPU run (H200, cuDNN 9.19)
// gave a 5x5 fp32 filter gradient up to 2% off where fp32 sums err by 1e-5;
// under FMA math (fp32 that means fp32, the default) these are skipped, and
// NNC_CUDNN_ALLOW_TF32=1 allows them with TF32.
bool reduced_precision(cudnnConvolutionFwdAlgo_t a) {
  return a == CUDNN_CONVOLUTION_FWD_ALGO_FFT || a == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}
bool reduced_precision(cudnnConvolutionBwdDataAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT || a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
}
bool reduced_precision(cudnnConvolutionBwdFilterAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT || a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
}

// NNC_CUDNN_TRACE=1: each convolution call prints the algorithm that ran it
// to stderr (for reading a GPU run's log).
bool trace_algorithms() {
  static const bool on = [] {
    const char* e = std::getenv("NNC_CUDNN_TRACE");
    return e && e[0] == '1';
  }();
  return on;
}

// Runs `run(algo, workspace, bytes)` with `preferred` (autotune's pick, or
// -1) and the algorithm that last ran this shape, then, asking
// `heuristics()` for cuDNN's list, the algorithms in its order of preference,
// then every other one, until one is supported. `size(algo, &bytes)`: the
// workspace query.
template <class Algo, class HeuristicsFn, class SizeFn, class RunFn>
void run_with_algorithms(const AlgoKey& key, int preferred, HeuristicsFn heuristics, int algo_count,
                         cudnnMathType_t math, cudaStream_t s, SizeFn size, RunFn run, const char* what) {
  // An algorithm that does not fit the problem answers NOT_SUPPORTED (some
  // BAD_PARAM): try the next. Anything else is an error at once.
  auto skippable = [](cudnnStatus_t st) {
    return not_supported(st) || CUDNN_STATUS_CATEGORY(st) == CUDNN_STATUS_BAD_PARAM;
  };
  if (preferred < 0 && cached_algo(key) == kNoAlgorithm)
    refuse("%s: no cuDNN algorithm runs this convolution (as an earlier call of this shape found)", what);
  cudnnStatus_t last = CUDNN_STATUS_NOT_SUPPORTED;
  std::vector<Algo> tried;
  auto attempt = [&](Algo a) {
    if (std::find(tried.begin(), tried.end(), a) != tried.end()) return false;
    tried.push_back(a);
    if (math == CUDNN_FMA_MATH && reduced_precision(a)) return false;
    size_t bytes = 0;
    if (!cached_workspace(key, static_cast<int>(a), &bytes)) {
      const cudnnStatus_t q = size(a, &bytes);
      if (q != CUDNN_STATUS_SUCCESS) {
        if (!skippable(q)) check_cudnn(q, what, "the workspace size query");
        last = q;
        return false;
      }
    }
    if (bytes > kWorkspaceLimit) return false;
    Scratch ws(bytes, s, what);
    const cudnnStatus_t r = run(a, ws.get(), bytes);
    if (r == CUDNN_STATUS_SUCCESS) {
      if (trace_algorithms())
        std::fprintf(stderr, "%s: cuDNN algorithm %d (math type %d, workspace %zu bytes)\n", what, static_cast<int>(a),
                     static_cast<int>(math), bytes);
      remember_algo(key, static_cast<int>(a), bytes);
      return true;
    }
    if (!skippable(r)) check_cudnn(r, what, "the convolution");
    last = r;
    return false;
  };
  for (int a : {preferred, cached_algo(key)})
    if (a >= 0 && a < algo_count && attempt(static_cast<Algo>(a))) return;
  for (const auto& p : heuristics()) {
    if (p.status != CUDNN_STATUS_SUCCESS) continue;
    if (math == CUDNN_FMA_MATH && p.mathType != CUDNN_FMA_MATH && p.mathType != CUDNN_DEFAULT_MATH) continue;
    if (attempt(p.algo)) return;
  }
  for (int a = 0; a < algo_count; a++)
    if (attempt(static_cast<Algo>(a))) return;
  // Nothing ran: GPU_REF may run it instead, now and for the next calls of this shape.
  remember_algo(key, kNoAlgorithm);
  refuse("%s: no cuDNN algorithm runs this convolution (last status: %s, %d)", what, cudnnGetErrorString(last),
         static_cast<int>(last));
}

int device_of(const ccv_nnc_tensor_t* t) { return CCV_TENSOR_GET_DEVICE_ID(t->info.type); }

bool on_gpu(const ccv_nnc_tensor_t* t) {
  return !t || (!CCV_IS_TENSOR_MULTIVIEW(t) && CCV_TENSOR_GET_MEMORY(t->info.type) == CCV_TENSOR_GPU_MEMORY);
}
bool all_on_gpu(ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
  for (int i = 0; i < input_size; i++)
    if (!on_gpu(inputs[i])) return false;
  for (int i = 0; i < output_size; i++)
    if (!on_gpu(outputs[i])) return false;
  return true;
}

// ---- the convolution's three cuDNN calls (the transposed convolution makes the same ones, roles exchanged) ----
// Each asks the heuristics, then runs through run_with_algorithms. key_op and
// key_dx name the call in the algorithm cache (the convolution's forward 0,
// data 1, filter 2; the transposed convolution's forward 11 (a data gradient),
// dw 12 (a filter gradient), dx 13 (a forward)); algorithm: the caller's
// preferred one (autotune's pick) or -1.

// y (described by y_d) = the convolution of x (described by d.x) with w.
void conv_forward_call(cudnnHandle_t h, const ConvDescs& d, int device, const cudnn_plan::Conv& p, int key_op,
                       const Tensor4* key_dx, int algorithm, const void* x, const void* w, cudnnTensorDescriptor_t y_d,
                       void* y, cudaStream_t s, const char* what) {
  auto heuristics = [&] {
    int max_algos = 0;
    NNC_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max_algos), what);
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<size_t>(std::max(max_algos, 1)));
    int found = 0;
    NNC_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, y_d, max_algos, &found, perf.data()),
                    what);
    perf.resize(static_cast<size_t>(found));
    return perf;
  };
  const float one = 1, zero = 0;
  run_with_algorithms<cudnnConvolutionFwdAlgo_t>(
      algo_key(key_op, device, d.math, p, key_dx), algorithm, heuristics, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, d.math, s,
      [&](cudnnConvolutionFwdAlgo_t a, size_t* bytes) {
        return cudnnGetConvolutionForwardWorkspaceSize(h, d.x, d.w, d.conv, y_d, a, bytes);
      },
      [&](cudnnConvolutionFwdAlgo_t a, void* ws, size_t bytes) {
        return cudnnConvolutionForward(h, &one, d.x, x, d.w, w, d.conv, a, ws, bytes, &zero, y_d, y);
      },
      what);
}

// dx (described by dx_d) = the data gradient of the convolution from dy
// (described by d.y) and w.
void conv_backward_data_call(cudnnHandle_t h, const ConvDescs& d, int device, const cudnn_plan::Conv& p, int key_op,
                             const Tensor4* key_dx, int algorithm, const void* w, const void* dy,
                             cudnnTensorDescriptor_t dx_d, void* dx, cudaStream_t s, const char* what) {
  auto heuristics = [&] {
    int max_algos = 0;
    NNC_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &max_algos), what);
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(static_cast<size_t>(std::max(max_algos, 1)));
    int found = 0;
    NNC_CUDNN_CHECK(
        cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w, d.y, d.conv, dx_d, max_algos, &found, perf.data()), what);
    perf.resize(static_cast<size_t>(found));
    return perf;
  };
  const float one = 1, zero = 0;
  run_with_algorithms<cudnnConvolutionBwdDataAlgo_t>(
      algo_key(key_op, device, d.math, p, key_dx), algorithm, heuristics, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, d.math,
      s,
      [&](cudnnConvolutionBwdDataAlgo_t a, size_t* bytes) {
        return cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.w, d.y, d.conv, dx_d, a, bytes);
      },
      [&](cudnnConvolutionBwdDataAlgo_t a, void* ws, size_t bytes) {
        return cudnnConvolutionBackwardData(h, &one, d.w, w, d.y, dy, d.conv, a, ws, bytes, &zero, dx_d, dx);
      },
      what);
}

// dw (described by d.w) = the filter gradient of the convolution from x
// (described by d.x) and dy (described by d.y).
void conv_backward_filter_call(cudnnHandle_t h, const ConvDescs& d, int device, const cudnn_plan::Conv& p, int key_op,
                               int algorithm, const void* x, const void* dy, void* dw, cudaStream_t s,
                               const char* what) {
  auto heuristics = [&] {
    int max_algos = 0;
    NNC_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &max_algos), what);
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(static_cast<size_t>(std::max(max_algos, 1)));
    int found = 0;
    NNC_CUDNN_CHECK(
        cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x, d.y, d.conv, d.w, max_algos, &found, perf.data()), what);
    perf.resize(static_cast<size_t>(found));
    return perf;
  };
  const float one = 1, zero = 0;
  run_with_algorithms<cudnnConvolutionBwdFilterAlgo_t>(
      algo_key(key_op, device, d.math, p, nullptr), algorithm, heuristics, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
      d.math, s,
      [&](cudnnConvolutionBwdFilterAlgo_t a, size_t* bytes) {
        return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d.x, d.y, d.conv, d.w, a, bytes);
      },
      [&](cudnnConvolutionBwdFilterAlgo_t a, void* ws, size_t bytes) {
        return cudnnConvolutionBackwardFilter(h, &one, d.x, x, d.y, dy, d.conv, a, ws, bytes, &zero, d.w, dw);
      },
      what);
}

// y (described by yt) += the bias p.bias, broadcast (p.datatype's storage
// type). Should cuDNN decline the 16-bit type, GPU_REF's element-wise sum
// (fp32 arithmetic, one rounding) adds it on the same stream.
void add_bias(cudnnHandle_t h, const cudnn_plan::Conv& p, const void* bias, cudnnTensorDescriptor_t y_d,
              const Tensor4& yt, void* y, cudaStream_t s, const char* what) {
  const float one = 1;
  const cudnnTensorDescriptor_t b = tensor_desc(p.bias, cudnn_type(p.datatype), what);
  const cudnnStatus_t st = cudnnAddTensor(h, &one, b, bias, &one, y_d, y);
  if (p.datatype == CCV_32F || !declined(st)) {
    check_cudnn(st, what, "cudnnAddTensor");
    return;
  }
  gpu::EwPlan plan;
  plan.nd = 4;
  plan.operands = 3;
  plan.count = 1;
  for (int i = 0; i < 4; i++) {
    plan.dim[i] = yt.dim[i];
    plan.count *= yt.dim[i];
    plan.stride[0][i] = plan.stride[1][i] = yt.stride[i];
    plan.stride[2][i] = i == 1 ? p.bias.stride[1] : 0;
  }
  EwPtrs ptrs;
  ptrs.p[0] = y;
  ptrs.p[1] = y;
  ptrs.p[2] = const_cast<void*>(bias);
  NNC_CUDA_CHECK(launch_ew(s, gpu_type(p.datatype), plan, ptrs, kEwSum, 2, 1, 0), what);
}

// A packed copy of a tensor described by d (storage `datatype`), in fp32
// (F32Stage: for the cuDNN calls that decline 16-bit data) or in its own type
// (for the calls that refuse strided views): load() copies the tensor in,
// store() the result back (only the elements d describes: views keep their
// surroundings). Scratch from the caching allocator on the call's stream.
class Stage {
 public:
  // nhwc: the copy packed NHWC (as a convolution's NHWC filter needs); else NCHW.
  Stage(const Tensor4& d, int datatype, GpuType staged, cudaStream_t s, const char* what, bool nhwc = false)
      : src_(d),
        packed_(cudnn_plan::packed_as(d, nhwc)),
        type_(gpu_type(datatype)),
        staged_(staged),
        s_(s),
        what_(what),
        buf_(cudnn_plan::extent(packed_) * (staged == kF32 ? 4 : 2), s, what) {}
  void load(const void* from) const { convert(buf_.get(), staged_, packed_, from, type_, src_); }
  void store(void* to) const { convert(to, type_, src_, buf_.get(), staged_, packed_); }
  const Tensor4& desc() const { return packed_; }
  void* data() const { return buf_.get(); }

 private:
  void convert(void* y, GpuType yt, const Tensor4& yd, const void* x, GpuType xt, const Tensor4& xd) const {
    gpu::EwPlan plan;
    plan.nd = 4;
    plan.operands = 2;
    plan.count = 1;
    for (int i = 0; i < 4; i++) {
      plan.dim[i] = yd.dim[i];
      plan.count *= yd.dim[i];
      plan.stride[0][i] = yd.stride[i];
      plan.stride[1][i] = xd.stride[i];
    }
    NNC_CUDA_CHECK(launch_convert(s_, plan, y, yt, x, xt), what_);
  }
  Tensor4 src_, packed_;
  GpuType type_, staged_;
  cudaStream_t s_;
  const char* what_;
  Scratch buf_;
};

class F32Stage : public Stage {
 public:
  F32Stage(const Tensor4& d, int datatype, cudaStream_t s, const char* what) : Stage(d, datatype, kF32, s, what) {}
  float* get() const { return static_cast<float*>(data()); }
};

// An operand as cuDNN gets it: the tensor itself when packed (NHWC or NCHW as
// `nhwc` says: a convolution's filter layout), else a packed copy in its own
// type. cuDNN 9 refuses strided views in its legacy convolutions (on an H200,
// cuDNN 9.19, every algorithm answered NOT_SUPPORTED for NHWC and NCHW views)
// and its softmax ran them wrong, so those calls take views through here. An input is copied in at construction; an output is
// copied out by store() (the view's surroundings stay as they were).
class Packed {
 public:
  Packed(const Tensor4& d, int datatype, void* data, bool input, bool nhwc, cudaStream_t s, const char* what)
      : desc_(d), data_(data) {
    if (!data || cudnn_plan::is_packed(d, nhwc)) return;
    stage_ = std::make_unique<Stage>(d, datatype, gpu_type(datatype), s, what, nhwc);
    desc_ = stage_->desc();
    if (input) stage_->load(data);
  }
  const Tensor4& desc() const { return desc_; }
  void* get() const { return stage_ ? stage_->data() : data_; }
  void store() const {
    if (stage_) stage_->store(data_);
  }

 private:
  Tensor4 desc_;
  void* data_;
  std::unique_ptr<Stage> stage_;
};

// ---- convolution ----

// A backward's three operands as cuDNN gets them (Packed): g (described by
// gd), x (xd; read only for dw) and dx (xd's shape, dxd; written only when
// wanted); each description is replaced by its packed copy's.
struct StagedBackward {
  Packed g, x, dx;
  StagedBackward(Tensor4& gd, Tensor4& xd, Tensor4& dxd, const conv_rules::BackwardIo& io, bool want_dw, bool want_dx,
                 int datatype, bool nhwc, cudaStream_t s, const char* what)
      : g(gd, datatype, io.g->data.ptr, true, nhwc, s, what),
        x(xd, datatype, want_dw ? io.x->data.ptr : nullptr, true, nhwc, s, what),
        dx(dxd, datatype, want_dx ? io.dx->data.ptr : nullptr, false, nhwc, s, what) {
    gd = g.desc(), xd = x.desc(), dxd = dx.desc();
  }
};

// The accept functions of both families: operands on the GPU and the plan's
// checks that need no hint (types, the weights' format and packing). The
// hint is not known here: exec plans with it and fails, with a message, the
// padding cuDNN cannot express.
template <bool (*Tensors)(const ccv_nnc_tensor_t*, const ccv_nnc_tensor_t*, const ccv_nnc_tensor_t*,
                          const ccv_nnc_tensor_t*, std::string*)>
bool accept_forward(const ccv_nnc_cmd_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                    ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (input_size < 2 || output_size < 1 || !inputs[0] || !inputs[1] || !outputs[0]) return false;
  if (!all_on_gpu(inputs, input_size, outputs, output_size)) return false;
  return Tensors(inputs[0], inputs[1], input_size > 2 ? inputs[2] : nullptr, outputs[0], nullptr);
}
template <bool (*Tensors)(ccv_nnc_tensor_t* const*, int, ccv_nnc_tensor_t* const*, int, std::string*)>
bool accept_backward(const ccv_nnc_cmd_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                     ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (input_size < 1 || output_size < 1 || !inputs[0]) return false;
  if (!all_on_gpu(inputs, input_size, outputs, output_size)) return false;
  return Tensors(inputs, input_size, outputs, output_size, nullptr);
}

// db (described by bt: {1, K, 1, 1}) = the sum of g (described by gt) over
// all but its channel dimension: cudnnConvolutionBackwardBias, or where cuDNN
// declines the type (16BF on an H200, cuDNN 9.19, in it and in
// cudnnReduceTensor alike) GPU_REF's reduction kernels (fp32 accumulation,
// one rounding).
void bias_gradient(cudnnHandle_t h, int datatype, const Tensor4& gt, const void* g, const Tensor4& bt, void* db,
                   cudaStream_t s, const char* what) {
  const cudnnDataType_t type = cudnn_type(datatype);
  const cudnnTensorDescriptor_t gd = tensor_desc(gt, type, what);
  const cudnnTensorDescriptor_t bd = tensor_desc(bt, type, what);
  const float one = 1, zero = 0;
  const cudnnStatus_t st = cudnnConvolutionBackwardBias(h, &one, gd, g, &zero, bd, db);
  if (type == CUDNN_DATA_FLOAT || !declined(st)) {
    check_cudnn(st, what, "cudnnConvolutionBackwardBias");
    return;
  }
  int64_t gs[4], bs[4];
  int bdim[4];
  for (int i = 0; i < 4; i++) gs[i] = gt.stride[i], bs[i] = bt.stride[i], bdim[i] = bt.dim[i];
  const int64_t* ins[] = {gs};
  gpu::ReducePlan rp;
  NNC_CHECK(gpu::make_reduce_plan(rp, gt.dim, 4, bdim, bs, 4, 1, ins), "%s: g does not reduce to the bias's shape",
            what);
  const gpu::ReduceLaunch l = gpu::choose_reduce_sliced(rp);
  Scratch scratch(static_cast<size_t>(gpu::reduce_scratch_elements(l, rp)) * sizeof(float), s, what);
  NNC_CUDA_CHECK(launch_reduce_as(s, gpu_type(datatype), rp, l, db, g, nullptr, kRedSum, 1.f,
                                  static_cast<float*>(scratch.get())),
                 what);
}

NNC_KERNEL(conv_forward) {
  static const char* what = "CONVOLUTION_FORWARD (GPU_CUDNN)";
  const ccv_nnc_tensor_t* x = inputs[0];
  const ccv_nnc_tensor_t* w = inputs[1];
  const ccv_nnc_tensor_t* bias = input_size > 2 ? inputs[2] : nullptr;
  ccv_nnc_tensor_t* y = outputs[0];
  cudnn_plan::Conv p;
  std::string why;
  if (!cudnn_plan::conv_forward(cmd, hint, x, w, bias, y, &p, &why))
    refuse("%s: %s", what, why.c_str());
  const int device = device_of(y);
  const cudaStream_t s = stream_of(stream_context, device, what);
  const Lease h(stream_context, device, s, what);
  const Packed xp(p.x, p.datatype, x->data.ptr, true, p.w.nhwc, s, what);
  const Packed yp(p.y, p.datatype, y->data.ptr, false, p.w.nhwc, s, what);
  p.x = xp.desc(), p.y = yp.desc();
  ConvDescs d(p, what);
  if (!cudnn_graph::conv_forward(h, stream_context, device, s, p, p.x, p.y, xp.get(), w->data.ptr, yp.get(), what))
    conv_forward_call(h, d, device, p, 0, nullptr, cmd.algorithm, xp.get(), w->data.ptr, d.y, yp.get(), s, what);
  if (p.has_bias) add_bias(h, p, bias->data.ptr, d.y, p.y, yp.get(), s, what);
  yp.store();
  finish(stream_context, s, what);
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(conv_backward) {
  static const char* what = "CONVOLUTION_BACKWARD (GPU_CUDNN)";
  cudnn_plan::ConvBackward p;
  std::string why;
  if (!cudnn_plan::conv_backward(cmd, hint, inputs, input_size, outputs, output_size, &p, &why))
    refuse("%s: %s", what, why.c_str());
  const conv_rules::BackwardIo io = conv_rules::backward_io(inputs, input_size, outputs, output_size);
  const int device = device_of(io.g);
  const cudaStream_t s = stream_of(stream_context, device, what);
  const Lease h(stream_context, device, s, what);
  const cudnnDataType_t type = cudnn_type(p.conv.datatype);
  const StagedBackward st(p.conv.y, p.conv.x, p.dx_desc, io, !p.bias_only && p.dw, !p.bias_only && p.dx,
                          p.conv.datatype, p.conv.w.nhwc, s, what);
  if (p.dbias) bias_gradient(h, p.conv.datatype, p.conv.y, st.g.get(), p.conv.bias, io.dbias->data.ptr, s, what);
  if (!p.bias_only) {
    ConvDescs d(p.conv, what);
    if (p.dw && !cudnn_graph::conv_backward_filter(h, stream_context, device, s, p.conv, p.conv.x, p.conv.y,
                                                   st.x.get(), st.g.get(), io.dw->data.ptr, what))
      conv_backward_filter_call(h, d, device, p.conv, 2, cudnn_plan::backward_filter_algorithm(cmd.algorithm),
                                st.x.get(), st.g.get(), io.dw->data.ptr, s, what);
    if (p.dx) {
      if (!cudnn_graph::conv_backward_data(h, stream_context, device, s, p.conv, p.dx_desc, p.conv.y, io.w->data.ptr,
                                           st.g.get(), st.dx.get(), what)) {
        const cudnnTensorDescriptor_t dx = tensor_desc(p.dx_desc, type, what);
        conv_backward_data_call(h, d, device, p.conv, 1, &p.dx_desc,
                                cudnn_plan::backward_data_algorithm(cmd.algorithm), io.w->data.ptr, st.g.get(), dx,
                                st.dx.get(), s, what);
      }
      st.dx.store();
    }
  }
  finish(stream_context, s, what);
  return CCV_NNC_EXEC_SUCCESS;
}


// ---- transposed convolution: the convolution's data gradient, roles exchanged ----
// (cudnn_plan::ConvTranspose: conv.x describes NNC's y or g, conv.y NNC's x.)

NNC_KERNEL(convt_forward) {
  static const char* what = "CONVOLUTION_TRANSPOSE_FORWARD (GPU_CUDNN)";
  const ccv_nnc_tensor_t* x = inputs[0];
  const ccv_nnc_tensor_t* w = inputs[1];
  const ccv_nnc_tensor_t* bias = input_size > 2 ? inputs[2] : nullptr;
  ccv_nnc_tensor_t* y = outputs[0];
  cudnn_plan::ConvTranspose p;
  std::string why;
  if (!cudnn_plan::conv_transpose_forward(cmd, hint, x, w, bias, y, &p, &why))
    refuse("%s: %s", what, why.c_str());
  const int device = device_of(y);
  const cudaStream_t s = stream_of(stream_context, device, what);
  const Lease h(stream_context, device, s, what);
  const int dt = p.conv.datatype;
  const Packed xp(p.conv.y, dt, x->data.ptr, true, p.conv.w.nhwc, s, what);
  const Packed yp(p.conv.x, dt, y->data.ptr, false, p.conv.w.nhwc, s, what);
  p.conv.y = xp.desc(), p.conv.x = yp.desc();
  ConvDescs d(p.conv, what);
  // NNC's y is the data gradient of the convolution from dy = NNC's x.
  if (!cudnn_graph::conv_backward_data(h, stream_context, device, s, p.conv, p.conv.x, p.conv.y, w->data.ptr, xp.get(),
                                      yp.get(), what))
    conv_backward_data_call(h, d, device, p.conv, 11, nullptr, cmd.algorithm, w->data.ptr, xp.get(), d.x, yp.get(), s,
                            what);
  if (p.conv.has_bias) add_bias(h, p.conv, bias->data.ptr, d.x, p.conv.x, yp.get(), s, what);
  yp.store();
  finish(stream_context, s, what);
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(convt_backward) {
  static const char* what = "CONVOLUTION_TRANSPOSE_BACKWARD (GPU_CUDNN)";
  cudnn_plan::ConvTranspose p;
  std::string why;
  if (!cudnn_plan::conv_transpose_backward(cmd, hint, inputs, input_size, outputs, output_size, &p, &why))
    refuse("%s: %s", what, why.c_str());
  const conv_rules::BackwardIo io = conv_rules::backward_io(inputs, input_size, outputs, output_size);
  const int device = device_of(io.g);
  const cudaStream_t s = stream_of(stream_context, device, what);
  const Lease h(stream_context, device, s, what);
  const cudnnDataType_t type = cudnn_type(p.conv.datatype);
  // Roles exchanged: NNC's g is cuDNN's x, NNC's x cuDNN's dy.
  const StagedBackward st(p.conv.x, p.conv.y, p.dx_desc, io, !p.bias_only && p.dw, !p.bias_only && p.dx,
                          p.conv.datatype, p.conv.w.nhwc, s, what);
  if (p.dbias) bias_gradient(h, p.conv.datatype, p.conv.x, st.g.get(), p.conv.bias, io.dbias->data.ptr, s, what);
  if (!p.bias_only) {
    ConvDescs d(p.conv, what);
    if (p.dw && !cudnn_graph::conv_backward_filter(h, stream_context, device, s, p.conv, p.conv.x, p.conv.y,
                                                   st.g.get(), st.x.get(), io.dw->data.ptr, what))
      // cuDNN's filter gradient with x = g and dy = NNC's x
      conv_backward_filter_call(h, d, device, p.conv, 12, cudnn_plan::backward_filter_algorithm(cmd.algorithm),
                                st.g.get(), st.x.get(), io.dw->data.ptr, s, what);
    if (p.dx) {  // cuDNN's forward convolution of g into x's shape
      if (!cudnn_graph::conv_forward(h, stream_context, device, s, p.conv, p.conv.x, p.dx_desc, st.g.get(),
                                     io.w->data.ptr, st.dx.get(), what)) {
        const cudnnTensorDescriptor_t dx = tensor_desc(p.dx_desc, type, what);
        conv_forward_call(h, d, device, p.conv, 13, &p.dx_desc, cudnn_plan::backward_data_algorithm(cmd.algorithm),
                          st.g.get(), io.w->data.ptr, dx, st.dx.get(), s, what);
      }
      st.dx.store();
    }
  }
  finish(stream_context, s, what);
  return CCV_NNC_EXEC_SUCCESS;
}

// ---- autotune: cuDNN's Find (timed runs) picks the algorithms ----

// The fastest supported entry of a Find result (under FMA math, no tensor-op
// entry), or -1.
template <class Perf>
int fastest(const Perf* perf, int n, cudnnMathType_t math, size_t limit) {
  for (int i = 0; i < n; i++) {  // Find sorts by time
    if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > limit) continue;
    if (math == CUDNN_FMA_MATH && perf[i].mathType != CUDNN_FMA_MATH && perf[i].mathType != CUDNN_DEFAULT_MATH)
      continue;
    if (math == CUDNN_FMA_MATH && reduced_precision(perf[i].algo)) continue;
    return static_cast<int>(perf[i].algo);
  }
  return -1;
}

size_t tune_limit(size_t max_workspace_size) {
  return max_workspace_size ? std::min(max_workspace_size, kWorkspaceLimit) : kWorkspaceLimit;
}

// Workspace for Find: the limit, or less when the device has less free.
struct TuneScratch {
  size_t bytes;
  std::unique_ptr<Scratch> s;
  TuneScratch(size_t limit, cudaStream_t st, const char* what) : bytes(limit) {
    for (; bytes >= (size_t{1} << 20); bytes /= 2) {
      try {
        s = std::make_unique<Scratch>(bytes, st, what);
        return;
      } catch (const Error&) {
      }
    }
    bytes = 0;
  }
  void* get() const { return s ? s->get() : nullptr; }
};

// Find for each of the three calls (the same operands as conv_forward_call,
// conv_backward_data_call, conv_backward_filter_call; outputs are overwritten):
// the fastest algorithm that fits ws, or -1.
int find_forward(cudnnHandle_t h, const ConvDescs& d, const void* x, const void* w, cudnnTensorDescriptor_t y_d,
                 void* y, const TuneScratch& ws, const char* what) {
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int n = 0;
  NNC_CUDNN_CHECK(
      cudnnFindConvolutionForwardAlgorithmEx(h, d.x, x, d.w, w, d.conv, y_d, y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n,
                                             perf, ws.get(), ws.bytes),
      what);
  return fastest(perf, n, d.math, ws.bytes);
}

int find_backward_data(cudnnHandle_t h, const ConvDescs& d, const void* w, const void* dy, cudnnTensorDescriptor_t dx_d,
                       void* dx, const TuneScratch& ws, const char* what) {
  cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
  int n = 0;
  NNC_CUDNN_CHECK(
      cudnnFindConvolutionBackwardDataAlgorithmEx(h, d.w, w, d.y, dy, d.conv, dx_d, dx,
                                                  CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf, ws.get(), ws.bytes),
      what);
  return fastest(perf, n, d.math, ws.bytes);
}

int find_backward_filter(cudnnHandle_t h, const ConvDescs& d, const void* x, const void* dy, void* dw,
                         const TuneScratch& ws, const char* what) {
  cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
  int n = 0;
  NNC_CUDNN_CHECK(
      cudnnFindConvolutionBackwardFilterAlgorithmEx(
          h, d.x, x, d.y, dy, d.conv, d.w, dw, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, perf, ws.get(), ws.bytes),
      what);
  return fastest(perf, n, d.math, ws.bytes);
}

// What every autotune below shares: on t's device, its stream and cuDNN
// handle (held for the call), the plan's descriptors and Find's workspace;
// pick(h, d, ws) runs the Find calls and returns the choice. Errors throw (the
// callers answer -1: the heuristics then).
template <class Pick>
int tune(ccv_nnc_stream_context_t* stream_context, const ccv_nnc_tensor_t* t, const cudnn_plan::Conv& p,
         size_t max_workspace_size, const char* what, Pick pick) {
  const int device = device_of(t);
  const cudaStream_t s = stream_of(stream_context, device, what);
  const Lease h(stream_context, device, s, what);
  ConvDescs d(p, what);
  TuneScratch ws(tune_limit(max_workspace_size), s, what);
  const int algo = pick(h, d, ws);
  finish(stream_context, s, what);
  return algo;
}

int conv_forward_autotune(const ccv_nnc_cmd_t cmd, const size_t max_workspace_size, const ccv_nnc_hint_t hint,
                          const int, ccv_nnc_tensor_t* const* const inputs, const int input_size,
                          ccv_nnc_tensor_t* const* const outputs, const int output_size,
                          ccv_nnc_stream_context_t* const stream_context) {
  static const char* what = "CONVOLUTION_FORWARD autotune (GPU_CUDNN)";
  try {
    if (input_size < 2 || output_size < 1) return -1;
    const ccv_nnc_tensor_t* x = inputs[0];
    const ccv_nnc_tensor_t* w = inputs[1];
    ccv_nnc_tensor_t* y = outputs[0];
    cudnn_plan::Conv p;
    if (!cudnn_plan::conv_forward(cmd, hint, x, w, input_size > 2 ? inputs[2] : nullptr, y, &p, nullptr)) return -1;
    return tune(stream_context, y, p, max_workspace_size, what,
                [&](cudnnHandle_t h, const ConvDescs& d, const TuneScratch& ws) {
                  return find_forward(h, d, x->data.ptr, w->data.ptr, d.y, y->data.ptr, ws, what);
                });
  } catch (...) {
    return -1;  // the heuristics then
  }
}

int conv_backward_autotune(const ccv_nnc_cmd_t cmd, const size_t max_workspace_size, const ccv_nnc_hint_t hint,
                           const int, ccv_nnc_tensor_t* const* const inputs, const int input_size,
                           ccv_nnc_tensor_t* const* const outputs, const int output_size,
                           ccv_nnc_stream_context_t* const stream_context) {
  static const char* what = "CONVOLUTION_BACKWARD autotune (GPU_CUDNN)";
  try {
    cudnn_plan::ConvBackward p;
    if (!cudnn_plan::conv_backward(cmd, hint, inputs, input_size, outputs, output_size, &p, nullptr) || p.bias_only)
      return -1;
    const conv_rules::BackwardIo io = conv_rules::backward_io(inputs, input_size, outputs, output_size);
    return tune(stream_context, io.g, p.conv, max_workspace_size, what,
                [&](cudnnHandle_t h, const ConvDescs& d, const TuneScratch& ws) {
                  int data = -1, filter = -1;
                  if (p.dx) {
                    const cudnnTensorDescriptor_t dx = tensor_desc(p.dx_desc, cudnn_type(p.conv.datatype), what);
                    data = find_backward_data(h, d, io.w->data.ptr, io.g->data.ptr, dx, io.dx->data.ptr, ws, what);
                  }
                  if (p.dw)
                    filter = find_backward_filter(h, d, io.x->data.ptr, io.g->data.ptr, io.dw->data.ptr, ws, what);
                  return cudnn_plan::pack_backward_algorithms(data, filter);
                });
  } catch (...) {
    return -1;
  }
}

// CONVOLUTION_TRANSPOSE: the same Find calls with the roles exchanged (the
// forward's pick is a backward-data algorithm; the backward packs dx's
// forward algorithm as the "data" part and dw's filter algorithm).
int convt_forward_autotune(const ccv_nnc_cmd_t cmd, const size_t max_workspace_size, const ccv_nnc_hint_t hint,
                           const int, ccv_nnc_tensor_t* const* const inputs, const int input_size,
                           ccv_nnc_tensor_t* const* const outputs, const int output_size,
                           ccv_nnc_stream_context_t* const stream_context) {
  static const char* what = "CONVOLUTION_TRANSPOSE_FORWARD autotune (GPU_CUDNN)";
  try {
    if (input_size < 2 || output_size < 1) return -1;
    const ccv_nnc_tensor_t* x = inputs[0];
    const ccv_nnc_tensor_t* w = inputs[1];
    ccv_nnc_tensor_t* y = outputs[0];
    cudnn_plan::ConvTranspose p;
    if (!cudnn_plan::conv_transpose_forward(cmd, hint, x, w, input_size > 2 ? inputs[2] : nullptr, y, &p, nullptr))
      return -1;
    return tune(stream_context, y, p.conv, max_workspace_size, what,
                [&](cudnnHandle_t h, const ConvDescs& d, const TuneScratch& ws) {
                  return find_backward_data(h, d, w->data.ptr, x->data.ptr, d.x, y->data.ptr, ws, what);
                });
  } catch (...) {
    return -1;
  }
}

int convt_backward_autotune(const ccv_nnc_cmd_t cmd, const size_t max_workspace_size, const ccv_nnc_hint_t hint,
                            const int, ccv_nnc_tensor_t* const* const inputs, const int input_size,
                            ccv_nnc_tensor_t* const* const outputs, const int output_size,
                            ccv_nnc_stream_context_t* const stream_context) {
  static const char* what = "CONVOLUTION_TRANSPOSE_BACKWARD autotune (GPU_CUDNN)";
  try {
    cudnn_plan::ConvTranspose p;
    if (!cudnn_plan::conv_transpose_backward(cmd, hint, inputs, input_size, outputs, output_size, &p, nullptr) ||
        p.bias_only)
      return -1;
    const conv_rules::BackwardIo io = conv_rules::backward_io(inputs, input_size, outputs, output_size);
    return tune(stream_context, io.g, p.conv, max_workspace_size, what,
                [&](cudnnHandle_t h, const ConvDescs& d, const TuneScratch& ws) {
                  int data = -1, filter = -1;
                  if (p.dx) {
                    const cudnnTensorDescriptor_t dx = tensor_desc(p.dx_desc, cudnn_type(p.conv.datatype), what);
                    data = find_forward(h, d, io.g->data.ptr, io.w->data.ptr, dx, io.dx->data.ptr, ws, what);
                  }
                  if (p.dw)
                    filter = find_backward_filter(h, d, io.g->data.ptr, io.x->data.ptr, io.dw->data.ptr, ws, what);
                  return cudnn_plan::pack_backward_algorithms(data, filter);
                });
  } catch (...) {
    return -1;
  }
}

// ---- pooling ----

// p's pooling descriptor, set once per thread and shape.
cudnnPoolingDescriptor_t pool_desc(const cudnn_plan::Pool& p, const char* what) {
  const cudnnPoolingMode_t mode =
      p.mode == cudnn_plan::PoolMode::kMax ? CUDNN_POOLING_MAX : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
  thread_local ShapeCache<std::array<int, 7>, Owned<cudnnPoolingDescriptor_t, cudnnDestroyPoolingDescriptor>> cache;
  const std::array<int, 7> key = {static_cast<int>(mode), p.window[0], p.window[1], p.pad[0],
                                  p.pad[1],               p.stride[0], p.stride[1]};
  return cache
      .get(key,
           [&](auto& e) {
             NNC_CUDNN_CHECK(cudnnCreatePoolingDescriptor(&e.d), what);
             // NaN wins in NNC's max pool (pool.cpp): propagate it.
             NNC_CUDNN_CHECK(cudnnSetPoolingNdDescriptor(e.d, mode, CUDNN_PROPAGATE_NAN, 2, p.window, p.pad, p.stride),
                             what);
           })
      .d;
}

bool accept_pool_forward(const ccv_nnc_cmd_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                         ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (input_size < 1 || output_size < 1 || !inputs[0] || !outputs[0]) return false;
  if (!all_on_gpu(inputs, input_size, outputs, output_size)) return false;
  return cudnn_plan::pool_tensors(inputs[0], outputs[0], nullptr);
}

NNC_KERNEL(pool_forward) {
  static const char* what = "pooling forward (GPU_CUDNN)";
  cudnn_plan::Pool p;
  std::string why;
  if (!cudnn_plan::pool(cmd, hint, inputs[0], outputs[0], &p, &why))
    refuse("%s: %s", what, why.c_str());
  const int device = device_of(outputs[0]);
  const cudaStream_t s = stream_of(stream_context, device, what);
  const Lease h(stream_context, device, s, what);
  const cudnnPoolingDescriptor_t pd = pool_desc(p, what);
  const float one = 1, zero = 0;
  auto run = [&](cudnnDataType_t type, const Tensor4& xt, const void* x, const Tensor4& yt, void* y) {
    const cudnnTensorDescriptor_t xd = tensor_desc(xt, type, what);
    const cudnnTensorDescriptor_t yd = tensor_desc(yt, type, what);
    return cudnnPoolingForward(h, pd, &one, xd, x, &zero, yd, y);
  };
  const cudnnStatus_t st = run(cudnn_type(p.datatype), p.x, inputs[0]->data.ptr, p.y, outputs[0]->data.ptr);
  if (p.datatype != CCV_32F && declined(st)) {
    // This cuDNN declines the 16-bit type here: pool fp32 copies (the
    // maximum and the average of rounded inputs, rounded once on the way back).
    const F32Stage xs(p.x, p.datatype, s, what), ys(p.y, p.datatype, s, what);
    xs.load(inputs[0]->data.ptr);
    check_cudnn(run(CUDNN_DATA_FLOAT, xs.desc(), xs.get(), ys.desc(), ys.get()), what, "cudnnPoolingForward (fp32)");
    ys.store(outputs[0]->data.ptr);
  } else {
    check_cudnn(st, what, "cudnnPoolingForward");
  }
  finish(stream_context, s, what);
  return CCV_NNC_EXEC_SUCCESS;
}

// |g|x|y| -> |dx|: MAX needs x (y is computed when absent); AVERAGE reads g only.
bool accept_pool_backward(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                          ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (input_size < 1 || output_size < 1 || !inputs[0] || !outputs[0]) return false;
  if (cmd.cmd == CCV_NNC_MAX_POOL_BACKWARD &&
      (input_size < 2 || !inputs[1] || !cudnn_plan::same_strides(inputs[1], outputs[0])))
    return false;
  if (!all_on_gpu(inputs, input_size, outputs, output_size)) return false;
  return cudnn_plan::pool_tensors(outputs[0], inputs[0], nullptr);
}

NNC_KERNEL(pool_backward) {
  static const char* what = "pooling backward (GPU_CUDNN)";
  const bool max = cmd.cmd == CCV_NNC_MAX_POOL_BACKWARD;
  const ccv_nnc_tensor_t* g = inputs[0];
  const ccv_nnc_tensor_t* x = input_size > 1 ? inputs[1] : nullptr;
  const ccv_nnc_tensor_t* y = input_size > 2 ? inputs[2] : nullptr;
  ccv_nnc_tensor_t* dx = outputs[0];
  NNC_CHECK(!max || x, "%s: MAX_POOL_BACKWARD needs x (input 1)", what);
  cudnn_plan::Pool p;
  std::string why;
  if (!cudnn_plan::pool(cmd, hint, dx, g, &p, &why)) refuse("%s: %s", what, why.c_str());
  // cuDNN wants x laid out like dx and y like g (cudnnPoolingBackward's
  // BAD_PARAM conditions). The average reads neither: dx and g stand in.
  // The max reads x (accept saw its strides match dx's) and y: one laid out
  // like g is used as it is, otherwise (absent, or a view unlike g) y is
  // pooled again from x into scratch laid out like g.
  if (max) {
    NNC_CHECK(same_shape(x->info, dx->info) && x->info.format == dx->info.format,
              "%s: x is %s but dx is %s; they must match", what, shape_string(x->info.dim).c_str(),
              shape_string(dx->info.dim).c_str());
    if (!cudnn_plan::same_strides(x, dx)) refuse("%s: x and dx are laid out differently", what);
  }
  const bool y_as_is =
      max && y && same_shape(y->info, g->info) && y->info.format == g->info.format && cudnn_plan::same_strides(y, g);
  const int device = device_of(dx);
  const cudaStream_t s = stream_of(stream_context, device, what);
  const Lease h(stream_context, device, s, what);
  const cudnnPoolingDescriptor_t pd = pool_desc(p, what);
  const float one = 1, zero = 0;
  // One backward in storage `type` with x / dx described by xt and g / y by
  // gt; y NULL: the max pool's y is pooled again from x into scratch.
  auto run = [&](cudnnDataType_t type, const Tensor4& xt, const Tensor4& gt, const void* xdata, const void* gdata,
                 const void* ydata, void* dxdata) {
    const cudnnTensorDescriptor_t gd = tensor_desc(gt, type, what);
    const cudnnTensorDescriptor_t xd = tensor_desc(xt, type, what);
    Scratch scratch(ydata ? 0 : cudnn_plan::extent(gt) * (type == CUDNN_DATA_FLOAT ? 4 : 2), s, what);
    if (!ydata) {
      const cudnnStatus_t f = cudnnPoolingForward(h, pd, &one, xd, xdata, &zero, gd, scratch.get());
      if (f != CUDNN_STATUS_SUCCESS) return f;
      ydata = scratch.get();
    }
    return cudnnPoolingBackward(h, pd, &one, gd, ydata, gd, gdata, xd, xdata, &zero, xd, dxdata);
  };
  // The average reads neither x nor y: dx and g stand in.
  const cudnnStatus_t st = run(cudnn_type(p.datatype), p.x, p.y, max ? x->data.ptr : dx->data.ptr, g->data.ptr,
                               !max ? g->data.ptr : y_as_is ? y->data.ptr : nullptr, dx->data.ptr);
  if (p.datatype != CCV_32F && declined(st)) {
    // This cuDNN declines the 16-bit type here: fp32 copies of g, x (max),
    // y (max, when given as is) and dx.
    const F32Stage gs(p.y, p.datatype, s, what), dxs(p.x, p.datatype, s, what);
    std::unique_ptr<F32Stage> xs, ys;
    gs.load(g->data.ptr);
    if (max) {
      xs = std::make_unique<F32Stage>(p.x, p.datatype, s, what);
      xs->load(x->data.ptr);
    }
    if (y_as_is) {
      ys = std::make_unique<F32Stage>(p.y, p.datatype, s, what);
      ys->load(y->data.ptr);
    }
    check_cudnn(run(CUDNN_DATA_FLOAT, dxs.desc(), gs.desc(), max ? xs->get() : dxs.get(), gs.get(),
                    !max ? gs.get() : ys ? ys->get() : nullptr, dxs.get()),
                what, "cudnnPoolingBackward (fp32)");
    dxs.store(dx->data.ptr);
  } else {
    check_cudnn(st, what, "cudnnPoolingBackward");
  }
  finish(stream_context, s, what);
  return CCV_NNC_EXEC_SUCCESS;
}

// ---- softmax ----

bool accept_softmax_forward(const ccv_nnc_cmd_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                            ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (input_size < 1 || output_size < 1 || !inputs[0] || !outputs[0]) return false;
  if (!all_on_gpu(inputs, input_size, outputs, output_size)) return false;
  try {
    Tensor4 a, b;
    return cudnn_plan::one_type({inputs[0], outputs[0]}, nullptr) &&
           cudnn_plan::softmax_rows(inputs[0], &a, nullptr) && cudnn_plan::softmax_rows(outputs[0], &b, nullptr) &&
           a.dim[0] == b.dim[0] && a.dim[1] == b.dim[1];
  } catch (...) {
    return false;
  }
}

NNC_KERNEL(softmax_forward) {
  static const char* what = "SOFTMAX_FORWARD (GPU_CUDNN)";
  Tensor4 xa, ya;
  std::string why;
  if (!cudnn_plan::one_type({inputs[0], outputs[0]}, &why) || !cudnn_plan::softmax_rows(inputs[0], &xa, &why) ||
      !cudnn_plan::softmax_rows(outputs[0], &ya, &why))
    refuse("%s: %s", what, why.c_str());
  const int datatype = CCV_GET_DATA_TYPE(inputs[0]->info.datatype);
  NNC_CHECK(xa.dim[0] == ya.dim[0] && xa.dim[1] == ya.dim[1], "%s: x is %s but y is %s; they must hold the same rows",
            what, shape_string(inputs[0]->info.dim).c_str(), shape_string(outputs[0]->info.dim).c_str());
  const int device = device_of(outputs[0]);
  const cudaStream_t s = stream_of(stream_context, device, what);
  const Lease h(stream_context, device, s, what);
  const float one = 1, zero = 0;
  auto run = [&](cudnnDataType_t type, const Tensor4& xt, const void* x, const Tensor4& yt, void* y) {
    const cudnnTensorDescriptor_t xd = tensor_desc(xt, type, what);
    const cudnnTensorDescriptor_t yd = tensor_desc(yt, type, what);
    return cudnnSoftmaxForward(h, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &one, xd, x, &zero, yd, y);
  };
  // Views through packed copies (Packed: cuDNN 9.19 ran strided rows wrong).
  const Packed xp(xa, datatype, inputs[0]->data.ptr, true, false, s, what);
  const Packed yp(ya, datatype, outputs[0]->data.ptr, false, false, s, what);
  const cudnnStatus_t st = run(cudnn_type(datatype), xp.desc(), xp.get(), yp.desc(), yp.get());
  if (datatype != CCV_32F && declined(st)) {
    // This cuDNN declines the 16-bit type: fp32 copies (in place stays in
    // place: x is read into its copy before y is written).
    const F32Stage xs(xp.desc(), datatype, s, what), ys(yp.desc(), datatype, s, what);
    xs.load(xp.get());
    check_cudnn(run(CUDNN_DATA_FLOAT, xs.desc(), xs.get(), ys.desc(), ys.get()), what, "cudnnSoftmaxForward (fp32)");
    ys.store(yp.get());
  } else {
    check_cudnn(st, what, "cudnnSoftmaxForward");
  }
  yp.store();
  finish(stream_context, s, what);
  return CCV_NNC_EXEC_SUCCESS;
}

// |g|x|y| -> |dx|: g and y are needed (a NULL g, read as ones, is left to
// another backend), laid out alike.
bool accept_softmax_backward(const ccv_nnc_cmd_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                             ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (input_size < 3 || output_size < 1 || !inputs[0] || !inputs[2] || !outputs[0]) return false;
  if (!all_on_gpu(inputs, input_size, outputs, output_size)) return false;
  try {
    Tensor4 g, y, dx;
    // cuDNN wants y and dy laid out alike (cudnnSoftmaxBackward's BAD_PARAM conditions).
    return cudnn_plan::one_type({inputs[0], inputs[2], outputs[0], input_size > 1 ? inputs[1] : nullptr}, nullptr) &&
           cudnn_plan::softmax_rows(inputs[0], &g, nullptr) && cudnn_plan::softmax_rows(inputs[2], &y, nullptr) &&
           cudnn_plan::softmax_rows(outputs[0], &dx, nullptr) && cudnn_plan::same_desc(g, y) && dx.dim[0] == y.dim[0] &&
           dx.dim[1] == y.dim[1];
  } catch (...) {
    return false;
  }
}

NNC_KERNEL(softmax_backward) {
  static const char* what = "SOFTMAX_BACKWARD (GPU_CUDNN)";
  Tensor4 ga, ya, da;
  std::string why;
  if (!cudnn_plan::one_type({inputs[0], inputs[2], outputs[0]}, &why) ||
      !cudnn_plan::softmax_rows(inputs[0], &ga, &why) || !cudnn_plan::softmax_rows(inputs[2], &ya, &why) ||
      !cudnn_plan::softmax_rows(outputs[0], &da, &why))
    refuse("%s: %s", what, why.c_str());
  const int datatype = CCV_GET_DATA_TYPE(inputs[0]->info.datatype);
  NNC_CHECK(ga.dim[0] == ya.dim[0] && ga.dim[1] == ya.dim[1] && da.dim[0] == ya.dim[0] && da.dim[1] == ya.dim[1],
            "%s: g %s, y %s and dx %s must hold the same rows", what, shape_string(inputs[0]->info.dim).c_str(),
            shape_string(inputs[2]->info.dim).c_str(), shape_string(outputs[0]->info.dim).c_str());
  const int device = device_of(outputs[0]);
  const cudaStream_t s = stream_of(stream_context, device, what);
  const Lease h(stream_context, device, s, what);
  const float one = 1, zero = 0;
  auto run = [&](cudnnDataType_t type, const Tensor4& gt, const void* g, const Tensor4& yt, const void* y,
                 const Tensor4& dt, void* dx) {
    const cudnnTensorDescriptor_t gd = tensor_desc(gt, type, what);
    const cudnnTensorDescriptor_t yd = tensor_desc(yt, type, what);
    const cudnnTensorDescriptor_t dd = tensor_desc(dt, type, what);
    return cudnnSoftmaxBackward(h, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &one, yd, y, gd, g, &zero, dd,
                                dx);
  };
  const Packed gp(ga, datatype, inputs[0]->data.ptr, true, false, s, what);
  const Packed yp(ya, datatype, inputs[2]->data.ptr, true, false, s, what);
  const Packed dp(da, datatype, outputs[0]->data.ptr, false, false, s, what);
  const cudnnStatus_t st = run(cudnn_type(datatype), gp.desc(), gp.get(), yp.desc(), yp.get(), dp.desc(), dp.get());
  if (datatype != CCV_32F && declined(st)) {
    const F32Stage gs(gp.desc(), datatype, s, what), ys(yp.desc(), datatype, s, what), ds(dp.desc(), datatype, s, what);
    gs.load(gp.get());
    ys.load(yp.get());
    check_cudnn(run(CUDNN_DATA_FLOAT, gs.desc(), gs.get(), ys.desc(), ys.get(), ds.desc(), ds.get()), what,
                "cudnnSoftmaxBackward (fp32)");
    ds.store(dp.get());
  } else {
    check_cudnn(st, what, "cudnnSoftmaxBackward");
  }
  dp.store();
  finish(stream_context, s, what);
  return CCV_NNC_EXEC_SUCCESS;
}

// ---- batch norm ----

// The norms' accept: everything on the GPU and a plan `planner` makes.
template <class Plan, bool (*planner)(const ccv_nnc_cmd_t&, ccv_nnc_tensor_t* const*, int, ccv_nnc_tensor_t* const*, int, Plan*,
                                      std::string*)>
bool accept_planned(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
                    int output_size) {
  if (!all_on_gpu(inputs, input_size, outputs, output_size)) return false;
  try {
    Plan p;
    return planner(cmd, inputs, input_size, outputs, output_size, &p, nullptr);
  } catch (...) {
    return false;
  }
}

// LAYER_NORM: what the plan takes, but for the calls GPU_REF's row kernels
// run (layer_norm_takes_rows: those are several times faster there).
template <bool (*planner)(const ccv_nnc_cmd_t&, ccv_nnc_tensor_t* const*, int, ccv_nnc_tensor_t* const*, int,
                          cudnn_plan::LayerNorm*, std::string*)>
bool accept_layer_norm(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                       ccv_nnc_tensor_t* const* outputs, int output_size) {
  return accept_planned<cudnn_plan::LayerNorm, planner>(cmd, inputs, input_size, outputs, output_size) &&
         !layer_norm_takes_rows(cmd, inputs, input_size, outputs, output_size);
}

// A device copy of n floats on s (nothing when from == to).
void copy_floats(float* to, const float* from, size_t n, cudaStream_t s, const char* what) {
  if (to != from) NNC_CUDA_CHECK(cudaMemcpyAsync(to, from, n * sizeof(float), cudaMemcpyDeviceToDevice, s), what);
}

// Float views of batch norm's per-channel tensors. cuDNN wants them in fp32
// beside 16-bit x (its derived parameter descriptor is FLOAT for HALF and
// BFLOAT16 data), while NNC keeps them in x's type: for a 16-bit call, in()
// converts one into a float slot of scratch (from the caching allocator, on
// the call's stream) and out() hands a float slot that store() converts into
// the tensor at the end. 32F tensors are used as they are.
class ParamFloats {
 public:
  ParamFloats(int datatype, size_t C, int slots, cudaStream_t s, const char* what)
      : half_(datatype != CCV_32F),
        type_(gpu_type(datatype)),
        C_(C),
        s_(s),
        what_(what),
        buf_(half_ ? static_cast<size_t>(slots) * C * sizeof(float) : 0, s, what),
        slots_(half_ ? slots : 0) {}
  const float* in(const ccv_nnc_tensor_t* t) {
    if (!t) return nullptr;
    if (!half_) return t->data.f32;
    float* f = slot();
    convert(f, kF32, t->data.ptr, type_);
    return f;
  }
  float* out(ccv_nnc_tensor_t* t) {
    if (!t) return nullptr;
    if (!half_) return t->data.f32;
    float* f = slot();
    pending_.push_back({t, f});
    return f;
  }
  void store() {
    for (const auto& [t, f] : pending_) convert(t->data.ptr, type_, f, kF32);
    pending_.clear();
  }

 private:
  float* slot() {
    NNC_CHECK(used_ < slots_, "%s: internal: too few parameter slots", what_);
    return static_cast<float*>(buf_.get()) + C_ * static_cast<size_t>(used_++);
  }
  void convert(void* y, GpuType yt, const void* x, GpuType xt) const {
    gpu::EwPlan plan;
    plan.nd = 1;
    plan.operands = 2;
    plan.count = static_cast<int64_t>(C_);
    plan.dim[0] = static_cast<int64_t>(C_);
    plan.stride[0][0] = plan.stride[1][0] = 1;
    NNC_CUDA_CHECK(launch_convert(s_, plan, y, yt, x, xt), what_);
  }
  bool half_;
  GpuType type_;
  size_t C_;
  cudaStream_t s_;
  const char* what_;
  Scratch buf_;
  int slots_, used_ = 0;
  std::vector<std::pair<ccv_nnc_tensor_t*, float*>> pending_;
};

// Training: y from the batch statistics; saved_mean / saved_inv_std straight
// from cuDNN (scratch when not asked for). The running statistics: NNC's rule
// is out = in * momentum + batch * (1 - momentum) with the biased batch
// variance; cuDNN's running variance takes the unbiased one. So cuDNN writes
// the batch mean and unbiased variance (factor 1) into zeroed scratch, and
// two cudnnAddTensor calls blend them in with the plan's factors
// (cudnn_plan::BatchNorm: keep, take_mean, take_var). 16F / 16BF x and y are
// cuDNN's HALF / BFLOAT16 (statistics in fp32); the per-channel tensors go
// through ParamFloats. Should cuDNN decline the 16-bit type, x and y go
// through fp32 copies (F32Stage) instead.
NNC_KERNEL(bnorm_forward) {
  static const char* what = "BATCH_NORM_FORWARD (GPU_CUDNN)";
  cudnn_plan::BatchNorm p;
  std::string why;
  if (!cudnn_plan::batch_norm_forward(cmd, inputs, input_size, outputs, output_size, &p, &why))
    refuse("%s: %s", what, why.c_str());
  const norm::BatchNormIo io = norm::batch_norm_forward_io(inputs, input_size, outputs, output_size);
  const int device = device_of(io.y);
  const cudaStream_t s = stream_of(stream_context, device, what);
  const Lease h(stream_context, device, s, what);
  const cudnnTensorDescriptor_t pd = tensor_desc(p.param, CUDNN_DATA_FLOAT, what);
  const float one = 1, zero = 0;
  const size_t C = static_cast<size_t>(p.channels);
  ParamFloats f(p.datatype, C, 8, s, what);
  const float* scale = f.in(io.scale);
  const float* bias = f.in(io.bias);
  // One cuDNN call over x and y in storage `type` (described by xt).
  auto run = [&](cudnnDataType_t type, const Tensor4& xt, const void* x, void* y, auto&& call) {
    const cudnnTensorDescriptor_t xd = tensor_desc(xt, type, what);
    return call(static_cast<cudnnTensorDescriptor_t>(xd), x, y);
  };
  auto with_fallback = [&](auto&& call, const char* name) {
    const cudnnStatus_t st = run(cudnn_type(p.datatype), p.x, io.x->data.ptr, io.y->data.ptr, call);
    if (p.datatype == CCV_32F || !declined(st)) {
      check_cudnn(st, what, name);
      return;
    }
    const F32Stage xs(p.x, p.datatype, s, what), ys(p.x, p.datatype, s, what);
    xs.load(io.x->data.ptr);
    check_cudnn(run(CUDNN_DATA_FLOAT, xs.desc(), xs.get(), ys.get(), call), what, name);
    ys.store(io.y->data.ptr);
  };
  if (!p.training) {
    const float* mean = f.in(io.mean);
    const float* var = f.in(io.var);
    with_fallback(
        [&](cudnnTensorDescriptor_t xd, const void* x, void* y) {
          return cudnnBatchNormalizationForwardInference(h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, xd, x, xd, y, pd,
                                                         scale, bias, mean, var, p.epsilon);
        },
        "cudnnBatchNormalizationForwardInference");
    finish(stream_context, s, what);
    return CCV_NNC_EXEC_SUCCESS;
  }
  const bool running = io.out_mean || io.out_var;
  // Running statistics in (converted before anything is written: outputs may be the inputs).
  const float* mean_in = io.out_mean ? f.in(io.mean) : nullptr;
  const float* var_in = io.out_var ? f.in(io.var) : nullptr;
  // Scratch: [batch mean | batch unbiased var | saved mean | saved inv std].
  Scratch scratch(4 * C * sizeof(float), s, what);
  float* base = static_cast<float*>(scratch.get());
  float* batch_mean = base;
  float* batch_var = base + C;
  float* saved_mean = io.saved_mean ? f.out(io.saved_mean) : base + 2 * C;
  float* saved_inv_std = io.saved_inv_std ? f.out(io.saved_inv_std) : base + 3 * C;
  with_fallback(
      [&](cudnnTensorDescriptor_t xd, const void* x, void* y) {
        if (running)  // factor 1 still reads them (times 0)
          NNC_CUDA_CHECK(cudaMemsetAsync(base, 0, 2 * C * sizeof(float), s), what);
        return cudnnBatchNormalizationForwardTraining(h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, xd, x, xd, y, pd, scale,
                                                      bias, 1.0, running ? batch_mean : nullptr,
                                                      running ? batch_var : nullptr, p.epsilon, saved_mean,
                                                      saved_inv_std);
      },
      "cudnnBatchNormalizationForwardTraining");
  const Committed committed;  // y may be x; the running statistics are updated in place below
  if (io.out_mean) {
    float* out = f.out(io.out_mean);
    copy_floats(out, mean_in, C, s, what);
    NNC_CUDNN_CHECK(cudnnAddTensor(h, &p.take_mean, pd, batch_mean, &p.keep, pd, out), what);
  }
  if (io.out_var) {
    float* out = f.out(io.out_var);
    copy_floats(out, var_in, C, s, what);
    NNC_CUDNN_CHECK(cudnnAddTensor(h, &p.take_var, pd, batch_var, &p.keep, pd, out), what);
  }
  f.store();
  finish(stream_context, s, what);
  return CCV_NNC_EXEC_SUCCESS;
}

// Training backward from the saved statistics. cuDNN writes dx, dscale and
// dbias always: scratch stands in for those not asked for. 16-bit calls as
// the forward: per-channel tensors through ParamFloats, x / g / dx through
// fp32 copies should cuDNN decline the type.
NNC_KERNEL(bnorm_backward) {
  static const char* what = "BATCH_NORM_BACKWARD (GPU_CUDNN)";
  cudnn_plan::BatchNorm p;
  std::string why;
  if (!cudnn_plan::batch_norm_backward(cmd, inputs, input_size, outputs, output_size, &p, &why))
    refuse("%s: %s", what, why.c_str());
  const norm::BatchNormIo io = norm::batch_norm_backward_io(inputs, input_size, outputs, output_size);
  const int device = device_of(io.x);
  const cudaStream_t s = stream_of(stream_context, device, what);
  const Lease h(stream_context, device, s, what);
  const cudnnTensorDescriptor_t pd = tensor_desc(p.param, CUDNN_DATA_FLOAT, what);
  const size_t C = static_cast<size_t>(p.channels);
  const size_t esize = element_size(p.datatype);
  const size_t dx_bytes = io.dx ? 0 : cudnn_plan::extent(p.x) * esize;
  ParamFloats f(p.datatype, C, 5, s, what);
  const float* saved_mean = f.in(io.saved_mean);
  const float* saved_inv_std = f.in(io.saved_inv_std);
  const float* scale_in = f.in(io.scale);
  // Scratch: [dscale | dbias | scale (unread without dx) | dx].
  Scratch scratch(3 * C * sizeof(float) + dx_bytes, s, what);
  float* base = static_cast<float*>(scratch.get());
  float* dscale = io.dscale ? f.out(io.dscale) : base;
  float* dbias = io.dbias ? f.out(io.dbias) : base + C;
  const float* scale = scale_in ? scale_in : base + 2 * C;
  void* dx = io.dx ? io.dx->data.ptr : static_cast<void*>(base + 3 * C);
  if (!io.scale) NNC_CUDA_CHECK(cudaMemsetAsync(base + 2 * C, 0, C * sizeof(float), s), what);
  const float one = 1, zero = 0;
  auto run = [&](cudnnDataType_t type, const Tensor4& xt, const void* x, const void* g, void* d) {
    const cudnnTensorDescriptor_t xd = tensor_desc(xt, type, what);
    return cudnnBatchNormalizationBackward(h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero, xd, x, xd, g, xd, d,
                                           pd, scale, dscale, dbias, p.epsilon, saved_mean, saved_inv_std);
  };
  const cudnnStatus_t st = run(cudnn_type(p.datatype), p.x, io.x->data.ptr, io.g->data.ptr, dx);
  if (p.datatype != CCV_32F && declined(st)) {
    const F32Stage xs(p.x, p.datatype, s, what), gs(p.x, p.datatype, s, what), ds(p.x, p.datatype, s, what);
    xs.load(io.x->data.ptr);
    gs.load(io.g->data.ptr);
    check_cudnn(run(CUDNN_DATA_FLOAT, xs.desc(), xs.get(), gs.get(), ds.get()), what,
                "cudnnBatchNormalizationBackward (fp32)");
    if (io.dx) ds.store(io.dx->data.ptr);
  } else {
    check_cudnn(st, what, "cudnnBatchNormalizationBackward");
  }
  f.store();
  finish(stream_context, s, what);
  return CCV_NNC_EXEC_SUCCESS;
}

// ---- layer norm ----

using OpDesc = Desc<cudnnOpTensorDescriptor_t, cudnnCreateOpTensorDescriptor, cudnnDestroyOpTensorDescriptor>;
using ReduceDesc =
    Desc<cudnnReduceTensorDescriptor_t, cudnnCreateReduceTensorDescriptor, cudnnDestroyReduceTensorDescriptor>;

// c = a (op) b, b broadcast where its extents are 1 (c never aliases a or b here).
void op_tensor(cudnnHandle_t h, cudnnOpTensorOp_t op, float alpha_b, cudnnTensorDescriptor_t ad, const void* a,
               cudnnTensorDescriptor_t bd, const void* b, cudnnTensorDescriptor_t cd, void* c, const char* what) {
  OpDesc d(what);
  NNC_CUDNN_CHECK(cudnnSetOpTensorDescriptor(d, op, CUDNN_DATA_FLOAT, CUDNN_PROPAGATE_NAN), what);
  const float one = 1, zero = 0;
  NNC_CUDNN_CHECK(cudnnOpTensor(h, d, &one, ad, a, &alpha_b, bd, b, &zero, cd, c), what);
}

// c = the sum of a over the dimensions where c has extent 1.
void reduce_sum(cudnnHandle_t h, cudnnTensorDescriptor_t ad, const void* a, cudnnTensorDescriptor_t cd, void* c,
                cudaStream_t s, const char* what) {
  ReduceDesc d(what);
  NNC_CUDNN_CHECK(cudnnSetReduceTensorDescriptor(d, CUDNN_REDUCE_TENSOR_ADD, CUDNN_DATA_FLOAT, CUDNN_PROPAGATE_NAN,
                                                 CUDNN_REDUCE_TENSOR_NO_INDICES, CUDNN_32BIT_INDICES),
                  what);
  size_t bytes = 0;
  NNC_CUDNN_CHECK(cudnnGetReductionWorkspaceSize(h, d, ad, cd, &bytes), what);
  Scratch ws(bytes, s, what);
  const float one = 1, zero = 0;
  NNC_CUDNN_CHECK(cudnnReduceTensor(h, d, nullptr, 0, ws.get(), bytes, &one, ad, a, &zero, cd, c), what);
}

// cuDNN's batch norm over the rows (scale 1, bias 0 per row) normalises; the
// per-element scale and bias follow (cudnnOpTensor, cudnnAddTensor).
NNC_KERNEL(lnorm_forward) {
  static const char* what = "LAYER_NORM_FORWARD (GPU_CUDNN)";
  cudnn_plan::LayerNorm p;
  std::string why;
  if (!cudnn_plan::layer_norm_forward(cmd, inputs, input_size, outputs, output_size, &p, &why))
    refuse("%s: %s", what, why.c_str());
  const norm::LayerNormIo io = norm::layer_norm_forward_io(cmd, inputs, input_size, outputs, output_size);
  const int device = device_of(io.y);
  const cudaStream_t s = stream_of(stream_context, device, what);
  const Lease h(stream_context, device, s, what);
  const cudnnTensorDescriptor_t xd = tensor_desc(p.x, CUDNN_DATA_FLOAT, what);
  const cudnnTensorDescriptor_t rd = tensor_desc(p.row_param, CUDNN_DATA_FLOAT, what);
  const cudnnTensorDescriptor_t fd = tensor_desc(p.feature, CUDNN_DATA_FLOAT, what);
  const size_t R = static_cast<size_t>(p.rows);
  const size_t normalised = io.scale ? cudnn_plan::extent(p.x) : 0;  // y before the scale
  // Scratch: [ones | zeros | saved mean | saved inv std | normalised x].
  Scratch scratch((4 * R + normalised) * sizeof(float), s, what);
  float* base = static_cast<float*>(scratch.get());
  const float one = 1, zero = 0;
  NNC_CUDNN_CHECK(cudnnSetTensor(h, rd, base, &one), what);
  NNC_CUDNN_CHECK(cudnnSetTensor(h, rd, base + R, &zero), what);
  float* saved_mean = io.saved_mean ? io.saved_mean->data.f32 : base + 2 * R;
  float* saved_inv_std = io.saved_inv_std ? io.saved_inv_std->data.f32 : base + 3 * R;
  float* target = io.scale ? base + 4 * R : io.y->data.f32;
  NNC_CUDNN_CHECK(cudnnBatchNormalizationForwardTraining(h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, xd, io.x->data.f32,
                                                         xd, target, rd, base, base + R, 1.0, nullptr, nullptr,
                                                         p.epsilon, saved_mean, saved_inv_std),
                  what);
  const Committed committed;  // y may be x: scaled and shifted in place below
  if (io.scale) op_tensor(h, CUDNN_OP_TENSOR_MUL, 1, xd, target, fd, io.scale->data.f32, xd, io.y->data.f32, what);
  if (io.bias) NNC_CUDNN_CHECK(cudnnAddTensor(h, &one, fd, io.bias->data.f32, &one, xd, io.y->data.f32), what);
  finish(stream_context, s, what);
  return CCV_NNC_EXEC_SUCCESS;
}

// dx: cuDNN's batch-norm backward over the rows with dy = g * scale (h), which
// is NNC's inv_std (h - mean h - xhat mean(h xhat)). dscale = the sum over rows
// of g * xhat (xhat = (x - saved_mean) * saved_inv_std), dbias = the sum of g:
// cudnnOpTensor and cudnnReduceTensor.
NNC_KERNEL(lnorm_backward) {
  static const char* what = "LAYER_NORM_BACKWARD (GPU_CUDNN)";
  cudnn_plan::LayerNorm p;
  std::string why;
  if (!cudnn_plan::layer_norm_backward(cmd, inputs, input_size, outputs, output_size, &p, &why))
    refuse("%s: %s", what, why.c_str());
  const norm::LayerNormIo io = norm::layer_norm_backward_io(cmd, inputs, input_size, outputs, output_size);
  const int device = device_of(io.x);
  const cudaStream_t s = stream_of(stream_context, device, what);
  const Lease h(stream_context, device, s, what);
  const cudnnTensorDescriptor_t xd = tensor_desc(p.x, CUDNN_DATA_FLOAT, what);
  const cudnnTensorDescriptor_t rd = tensor_desc(p.row_param, CUDNN_DATA_FLOAT, what);
  const cudnnTensorDescriptor_t fd = tensor_desc(p.feature, CUDNN_DATA_FLOAT, what);
  const size_t R = static_cast<size_t>(p.rows), X = cudnn_plan::extent(p.x);
  // Scratch: [ones | d row-scale | d row-bias | h | xhat | g xhat], the big parts only when needed.
  const size_t hx = io.scale ? X : 0, sx = io.dscale ? 2 * X : 0;
  Scratch scratch((3 * R + hx + sx) * sizeof(float), s, what);
  float* base = static_cast<float*>(scratch.get());
  float* hbuf = base + 3 * R;
  float* xhat = hbuf + hx;
  float* gxhat = xhat + X;
  const float one = 1, zero = 0;
  NNC_CUDNN_CHECK(cudnnSetTensor(h, rd, base, &one), what);
  const float* dy = io.g->data.f32;
  if (io.scale) {
    op_tensor(h, CUDNN_OP_TENSOR_MUL, 1, xd, io.g->data.f32, fd, io.scale->data.f32, xd, hbuf, what);
    dy = hbuf;
  }
  if (io.dx)
    NNC_CUDNN_CHECK(
        cudnnBatchNormalizationBackward(h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero, xd, io.x->data.f32, xd,
                                        dy, xd, io.dx->data.f32, rd, base, base + R, base + 2 * R, p.epsilon,
                                        io.saved_mean->data.f32, io.saved_inv_std->data.f32),
        what);
  const Committed committed;  // dx may be g, read below
  if (io.dscale) {
    op_tensor(h, CUDNN_OP_TENSOR_ADD, -1, xd, io.x->data.f32, rd, io.saved_mean->data.f32, xd, gxhat,
              what);                                                                                  // x - mean
    op_tensor(h, CUDNN_OP_TENSOR_MUL, 1, xd, gxhat, rd, io.saved_inv_std->data.f32, xd, xhat, what);  // xhat
    op_tensor(h, CUDNN_OP_TENSOR_MUL, 1, xd, xhat, xd, io.g->data.f32, xd, gxhat, what);              // g xhat
    reduce_sum(h, xd, gxhat, fd, io.dscale->data.f32, s, what);
  }
  if (io.dbias) reduce_sum(h, xd, io.g->data.f32, fd, io.dbias->data.f32, s, what);
  finish(stream_context, s, what);
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace

void register_cudnn(Registry& r) {
  KernelTraits t;
  t.backend = CCV_NNC_BACKEND_GPU_CUDNN;
  // 32F, 16F and 16BF, every tensor of a call one type (cudnn_plan refuses
  // mixed types, saying so); LAYER_NORM stays 32F (GPU_REF runs 16-bit ones).
  t.datatypes = CCV_32F | CCV_16F | CCV_16BF;
  t.memory = CCV_TENSOR_GPU_MEMORY;
  t.formats = formats::kImage;
  // One "algorithm" each for autotune, whose pick (the autotune function:
  // cuDNN's Find) the kernel tries first.
  r.add_kernels(t.accepting(accept_forward<cudnn_plan::conv_forward_tensors>).with_algorithms(1, conv_forward_autotune),
                {{CCV_NNC_CONVOLUTION_FORWARD, conv_forward}});
  r.add_kernels(
      t.accepting(accept_backward<cudnn_plan::conv_backward_tensors>).with_algorithms(1, conv_backward_autotune),
      {{CCV_NNC_CONVOLUTION_BACKWARD, conv_backward}});
  r.add_kernels(t.accepting(accept_forward<cudnn_plan::conv_transpose_forward_tensors>)
                    .with_algorithms(1, convt_forward_autotune),
                {{CCV_NNC_CONVOLUTION_TRANSPOSE_FORWARD, convt_forward}});
  r.add_kernels(t.accepting(accept_backward<cudnn_plan::conv_transpose_backward_tensors>)
                    .with_algorithms(1, convt_backward_autotune),
                {{CCV_NNC_CONVOLUTION_TRANSPOSE_BACKWARD, convt_backward}});
  r.add_kernels(t.accepting(accept_pool_forward),
                {{CCV_NNC_MAX_POOL_FORWARD, pool_forward}, {CCV_NNC_AVERAGE_POOL_FORWARD, pool_forward}});
  r.add_kernels(t.accepting(accept_pool_backward),
                {{CCV_NNC_MAX_POOL_BACKWARD, pool_backward}, {CCV_NNC_AVERAGE_POOL_BACKWARD, pool_backward}});
  KernelTraits any = t;
  any.formats = formats::kAll;
  r.add_kernels(any.accepting(accept_softmax_forward), {{CCV_NNC_SOFTMAX_FORWARD, softmax_forward}});
  r.add_kernels(any.accepting(accept_softmax_backward), {{CCV_NNC_SOFTMAX_BACKWARD, softmax_backward}});
  r.add_kernels(any.accepting(accept_planned<cudnn_plan::BatchNorm, cudnn_plan::batch_norm_forward>), {{CCV_NNC_BATCH_NORM_FORWARD, bnorm_forward}});
  r.add_kernels(any.accepting(accept_planned<cudnn_plan::BatchNorm, cudnn_plan::batch_norm_backward>), {{CCV_NNC_BATCH_NORM_BACKWARD, bnorm_backward}});
  KernelTraits f32 = any;  // LAYER_NORM: 32F
  f32.datatypes = CCV_32F;
  r.add_kernels(f32.accepting(accept_layer_norm<cudnn_plan::layer_norm_forward>), {{CCV_NNC_LAYER_NORM_FORWARD, lnorm_forward}});
  r.add_kernels(f32.accepting(accept_layer_norm<cudnn_plan::layer_norm_backward>), {{CCV_NNC_LAYER_NORM_BACKWARD, lnorm_backward}});
}

}  // namespace nnc::cuda
