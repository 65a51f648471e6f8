// GPU_CUDNN's convolutions through cuDNN's graph (backend) API; see
// cudnn_graph.hpp for the contract and cmd/common/cudnn_graph_plan.hpp for the
// numbers (tested on the CPU).
//
// One call: the operation's three tensor descriptors (4-d, dims and strides
// in (n, c, h, w) order, unique ids kUidX / kUidW / kUidY, the byte alignment
// of the call's pointers), a convolution descriptor (fp32 compute,
// cross-correlation, 2 spatial dims), the operation (alpha 1, beta 0), an
// operation graph of that one operation, cuDNN's heuristics (mode A, then
// FALLBACK) and their engine configurations in order: the first that the
// numerical-note rule allows (cudnn_graph_plan::engine_allowed: fp32 without
// TF32 unless NNC_CUDNN_ALLOW_TF32=1), that finalizes into an execution plan
// and whose workspace fits kWorkspaceLimit is kept, with every descriptor it
// came from, in a cache per shape (cudnn_graph_plan::key) and per handle: a
// GPU stream context's cache is attached to the stream (made after its cuDNN
// handle, so released before it), synchronous calls share one per device (as
// they share the device's handle). A shape with no plan is remembered (per
// device, handle-independent) with the reason. Execution: a variant pack of
// the three pointers and a workspace from the caching allocator on the call's
// stream; cudnnBackendExecute on the Lease's handle, already bound to it.
#include "cuda/cudnn_graph.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cmd/common/cudnn_graph_plan.hpp"
#include "core/declined.hpp"
#include "core/error.hpp"
#include "cuda/cuda.hpp"
#include "cuda/stream.hpp"

namespace nnc::cuda::cudnn_graph {

namespace {

namespace gp = cudnn_graph_plan;
using cudnn_plan::Tensor4;

// cudnn.cpp's limit on a convolution's workspace (its kWorkspaceLimit).
constexpr int64_t kWorkspaceLimit = int64_t{1} << 30;

// Why the graph API gave no plan: thrown while building, caught by find_plan.
struct NoPlan {
  std::string why;
};

std::string status_text(cudnnStatus_t s, const char* call) {
  return format("%s: %s (cuDNN status %d)", call, cudnnGetErrorString(s), static_cast<int>(s));
}

void need(cudnnStatus_t s, const char* call) {
  if (s != CUDNN_STATUS_SUCCESS) throw NoPlan{status_text(s, call)};
}

// An owned backend descriptor (destroyed with the object; errors at
// destruction ignored, as the legacy descriptors').
class Backend {
 public:
  Backend(cudnnBackendDescriptorType_t type, const char* name) {
    need(cudnnBackendCreateDescriptor(type, &d_), name);
  }
  ~Backend() {
    if (d_) cudnnBackendDestroyDescriptor(d_);
  }
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;
  Backend(Backend&& o) noexcept : d_(o.d_) { o.d_ = nullptr; }
  Backend& operator=(Backend&& o) noexcept {
    std::swap(d_, o.d_);
    return *this;
  }
  cudnnBackendDescriptor_t get() const { return d_; }
  // cudnnBackendSetAttribute: `count` elements of `type` at `values`.
  void set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count, const void* values,
           const char* attr) const {
    need(cudnnBackendSetAttribute(d_, name, type, count, values), attr);
  }
  // One backend descriptor as an attribute's value (the API takes an array of them).
  void set_desc(cudnnBackendAttributeName_t name, const Backend& value, const char* attr) const {
    cudnnBackendDescriptor_t v = value.get();
    set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v, attr);
  }
  void finalize(const char* name) const { need(cudnnBackendFinalize(d_), name); }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

cudnnDataType_t storage_type(int datatype) {
  return datatype == CCV_16F ? CUDNN_DATA_HALF : datatype == CCV_16BF ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}

Backend make_tensor(const gp::GraphTensor& t, int64_t uid, cudnnDataType_t type, int64_t alignment) {
  Backend d(CUDNN_BACKEND_TENSOR_DESCRIPTOR, "cudnnBackendCreateDescriptor(TENSOR)");
  d.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type, "CUDNN_ATTR_TENSOR_DATA_TYPE");
  d.set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, t.dim, "CUDNN_ATTR_TENSOR_DIMENSIONS");
  d.set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, t.stride, "CUDNN_ATTR_TENSOR_STRIDES");
  d.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, "CUDNN_ATTR_TENSOR_UNIQUE_ID");
  d.set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment, "CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT");
  d.finalize("cudnnBackendFinalize(TENSOR)");
  return d;
}

Backend make_convolution(const gp::GraphConv& g) {
  Backend d(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, "cudnnBackendCreateDescriptor(CONVOLUTION)");
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;  // 16-bit data accumulates in fp32 too
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const int64_t spatial = 2;
  d.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute, "CUDNN_ATTR_CONVOLUTION_COMP_TYPE");
  d.set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode, "CUDNN_ATTR_CONVOLUTION_CONV_MODE");
  d.set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial, "CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS");
  d.set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, g.dilation, "CUDNN_ATTR_CONVOLUTION_DILATIONS");
  d.set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, g.stride, "CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES");
  d.set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, g.pad, "CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS");
  d.set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, g.pad, "CUDNN_ATTR_CONVOLUTION_POST_PADDINGS");
  d.finalize("cudnnBackendFinalize(CONVOLUTION)");
  return d;
}

// The operation's descriptor and attribute names, by kind.
struct OpNames {
  cudnnBackendDescriptorType_t type;
  cudnnBackendAttributeName_t alpha, beta, conv, x, w, y;  // x / w / y by role (x or dx, w or dw, y or dy)
  const char* name;
};
OpNames op_names(gp::Op op) {
  switch (op) {
    case gp::Op::kForward:
      return {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
              "OPERATION_CONVOLUTION_FORWARD"};
    case gp::Op::kBackwardData:
      return {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
              "OPERATION_CONVOLUTION_BACKWARD_DATA"};
    case gp::Op::kBackwardFilter:
    default:
      return {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
              "OPERATION_CONVOLUTION_BACKWARD_FILTER"};
  }
}

// A finalized execution plan and every descriptor it was built from
// (declared in the order they are made, so destroyed plan first).
struct Plan {
  std::vector<Backend> parts;  // tensors, convolution, operation, graph, heuristics, configurations, engine
  std::unique_ptr<Backend> plan;
  int64_t workspace = 0;
  std::string engine;  // "mode A, configuration i" (for messages)
  Plan() { parts.reserve(32); }
  ~Plan() {
    plan.reset();
    while (!parts.empty()) parts.pop_back();  // the last made first
  }
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
};

// An environment switch as cudnn.cpp reads its own (NNC_CUDNN_ALLOW_TF32,
// NNC_CUDNN_TRACE): on when set and starting with '1'.
bool env_on(const char* name) {
  const char* e = std::getenv(name);
  return e && e[0] == '1';
}

// The engine configurations of `heur` (finalized), in cuDNN's order.
std::vector<Backend> configurations(const Backend& heur) {
  int64_t count = 0;
  need(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                                nullptr),
       "cudnnBackendGetAttribute(CUDNN_ATTR_ENGINEHEUR_RESULTS, count)");
  std::vector<Backend> cfgs;
  if (count <= 0) return cfgs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; i++) {
    cfgs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "cudnnBackendCreateDescriptor(ENGINECFG)");
    raw.push_back(cfgs.back().get());
  }
  int64_t got = 0;
  need(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got,
                                raw.data()),
       "cudnnBackendGetAttribute(CUDNN_ATTR_ENGINEHEUR_RESULTS)");
  if (got < count) cfgs.erase(cfgs.begin() + (got < 0 ? 0 : got), cfgs.end());
  return cfgs;
}

// Whether the engine of configuration `cfg` may run this call (its numerical
// notes); *engine: its global index and notes, for messages.
bool allowed(const Backend& cfg, int datatype, bool allow_tf32, std::string* why, std::string* engine_text) {
  Backend engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR, "cudnnBackendCreateDescriptor(ENGINE)");
  cudnnBackendDescriptor_t e = engine.get();
  int64_t n = 0;
  need(cudnnBackendGetAttribute(cfg.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &e),
       "cudnnBackendGetAttribute(CUDNN_ATTR_ENGINECFG_ENGINE)");
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  int64_t count = 0;
  need(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &count, notes),
       "cudnnBackendGetAttribute(CUDNN_ATTR_ENGINE_NUMERICAL_NOTE)");
  bool tensor_core = false, down_convert = false, reduced = false;
  for (int64_t i = 0; i < count && i < CUDNN_NUMERICAL_NOTE_TYPE_COUNT; i++) {
    tensor_core |= notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE;
    down_convert |= notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS;
    reduced |= notes[i] == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION;
  }
  int64_t index = -1;
  if (cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &index) !=
      CUDNN_STATUS_SUCCESS)
    index = -1;
  *engine_text = format("engine %lld%s%s%s", static_cast<long long>(index), tensor_core ? ", tensor cores" : "",
                        down_convert ? ", down-converts inputs" : "", reduced ? ", reduced-precision reduction" : "");
  if (gp::engine_allowed(datatype, allow_tf32, tensor_core, down_convert, reduced)) return true;
  *why = reduced ? "reduced-precision reduction" : "TF32 (tensor cores on fp32 data)";
  return false;
}

// The first usable plan for g, or NoPlan with what went wrong.
std::shared_ptr<Plan> find_plan(cudnnHandle_t h, const gp::GraphConv& g, const int64_t alignment[3], bool allow_tf32,
                                bool reject) {
  auto p = std::make_shared<Plan>();  // parts.reserve: the references below stay valid
  const cudnnDataType_t type = storage_type(g.datatype);
  p->parts.push_back(make_tensor(g.x, gp::kUidX, type, alignment[0]));
  const size_t tx = p->parts.size() - 1;
  p->parts.push_back(make_tensor(g.w, gp::kUidW, type, alignment[1]));
  const size_t tw = p->parts.size() - 1;
  p->parts.push_back(make_tensor(g.y, gp::kUidY, type, alignment[2]));
  const size_t ty = p->parts.size() - 1;
  p->parts.push_back(make_convolution(g));
  const size_t tc = p->parts.size() - 1;
  const OpNames names = op_names(g.op);
  p->parts.emplace_back(names.type, names.name);
  const Backend& op = p->parts.back();
  const float one = 1, zero = 0;  // CUDNN_TYPE_FLOAT: the compute type is fp32
  op.set(names.alpha, CUDNN_TYPE_FLOAT, 1, &one, "the operation's ALPHA");
  op.set(names.beta, CUDNN_TYPE_FLOAT, 1, &zero, "the operation's BETA");
  op.set_desc(names.conv, p->parts[tc], "the operation's CONV_DESC");
  op.set_desc(names.x, p->parts[tx], "the operation's X / DX");
  op.set_desc(names.w, p->parts[tw], "the operation's W / DW");
  op.set_desc(names.y, p->parts[ty], "the operation's Y / DY");
  op.finalize(names.name);
  const size_t to = p->parts.size() - 1;
  p->parts.emplace_back(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "cudnnBackendCreateDescriptor(OPERATIONGRAPH)");
  const Backend& graph = p->parts.back();
  {
    cudnnBackendDescriptor_t ops[1] = {p->parts[to].get()};
    graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, ops, "CUDNN_ATTR_OPERATIONGRAPH_OPS");
    graph.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h, "CUDNN_ATTR_OPERATIONGRAPH_HANDLE");
    graph.finalize("cudnnBackendFinalize(OPERATIONGRAPH)");
  }
  const size_t tg = p->parts.size() - 1;
  // Why each configuration was passed over: the first reason and the last
  // are kept (with the count) for the message.
  std::string first, last = "no engine configuration";
  int passed_over = 0;
  auto note = [&](std::string reason) {
    if (passed_over++ == 0) first = reason;
    last = std::move(reason);
  };
  for (const cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    const char* mode_name = mode == CUDNN_HEUR_MODE_A ? "mode A" : "mode FALLBACK";
    Backend heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "cudnnBackendCreateDescriptor(ENGINEHEUR)");
    std::vector<Backend> cfgs;
    try {
      heur.set_desc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, p->parts[tg], "CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH");
      heur.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, "CUDNN_ATTR_ENGINEHEUR_MODE");
      heur.finalize("cudnnBackendFinalize(ENGINEHEUR)");
      cfgs = configurations(heur);
      if (cfgs.empty()) note(format("heuristics %s: no engine configuration", mode_name));
    } catch (const NoPlan& e) {
      note(format("heuristics %s: %s", mode_name, e.why.c_str()));
      continue;
    }
    for (size_t i = 0; i < cfgs.size(); i++) {
      try {
        if (reject) {
          note("every engine configuration rejected (NNC_CUDNN_GRAPH_REJECT=1)");
          continue;
        }
        std::string why, engine;
        if (!allowed(cfgs[i], g.datatype, allow_tf32, &why, &engine)) {
          note(format("%s configuration %zu (%s): %s", mode_name, i, engine.c_str(), why.c_str()));
          continue;
        }
        auto plan = std::make_unique<Backend>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR,
                                              "cudnnBackendCreateDescriptor(EXECUTION_PLAN)");
        plan->set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h, "CUDNN_ATTR_EXECUTION_PLAN_HANDLE");
        plan->set_desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, cfgs[i], "CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG");
        plan->finalize("cudnnBackendFinalize(EXECUTION_PLAN)");
        int64_t ws = 0, n = 0;
        need(cudnnBackendGetAttribute(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n,
                                      &ws),
             "cudnnBackendGetAttribute(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE)");
        if (ws < 0 || ws > kWorkspaceLimit) {
          note(format("%s configuration %zu (%s): workspace of %lld bytes", mode_name, i, engine.c_str(),
                      static_cast<long long>(ws)));
          continue;
        }
        p->workspace = ws;
        p->engine = format("%s configuration %zu (%s)", mode_name, i, engine.c_str());
        p->plan = std::move(plan);
        p->parts.push_back(std::move(heur));
        for (Backend& c : cfgs) p->parts.push_back(std::move(c));
        return p;
      } catch (const NoPlan& e) {
        note(format("%s configuration %zu: %s", mode_name, i, e.why.c_str()));
      }
    }
  }
  if (passed_over <= 1) throw NoPlan{last};
  throw NoPlan{format("%d passed over; first %s; last %s", passed_over, first.c_str(), last.c_str())};
}

// The plans finalized with one handle, by key.
struct Cache {
  std::mutex mutex;
  std::map<std::vector<int64_t>, std::shared_ptr<Plan>> plans;
};

// Synchronous calls: one cache per device (they share the device's handle).
std::mutex g_mutex;
std::map<int, std::unique_ptr<Cache>> g_device_caches;
// Shapes without a plan (handle-independent), with the reason.
std::map<std::vector<int64_t>, std::string> g_no_plan;

Cache* cache_for(ccv_nnc_stream_context_t* stream, int device) {
  static const char key = 0;
  if (void* own = stream_attachment(
          stream, &key, [](int, cudaStream_t) -> void* { return new Cache; },
          [](void* c) { delete static_cast<Cache*>(c); }))
    return static_cast<Cache*>(own);
  const std::lock_guard<std::mutex> lock(g_mutex);
  std::unique_ptr<Cache>& c = g_device_caches[device];
  if (!c) c = std::make_unique<Cache>();
  return c.get();
}

// NNC_CUDNN_GRAPH_VERBOSE=1: one line on stderr for each shape planned (the
// engine chosen, its workspace) or found to have no plan (why).
std::string describe(const gp::GraphConv& g) {
  static const char* ops[] = {"forward", "backward data", "backward filter"};
  auto t = [](const gp::GraphTensor& d) {
    return format("[%lld,%lld,%lld,%lld]/[%lld,%lld,%lld,%lld]", static_cast<long long>(d.dim[0]),
                  static_cast<long long>(d.dim[1]), static_cast<long long>(d.dim[2]), static_cast<long long>(d.dim[3]),
                  static_cast<long long>(d.stride[0]), static_cast<long long>(d.stride[1]),
                  static_cast<long long>(d.stride[2]), static_cast<long long>(d.stride[3]));
  };
  return format("%s %s x %s w %s y %s pad %lld,%lld stride %lld,%lld dilation %lld,%lld", ops[static_cast<int>(g.op)],
                g.datatype == CCV_32F ? "32F" : g.datatype == CCV_16F ? "16F" : "16BF", t(g.x).c_str(), t(g.w).c_str(),
                t(g.y).c_str(), static_cast<long long>(g.pad[0]), static_cast<long long>(g.pad[1]),
                static_cast<long long>(g.stride[0]), static_cast<long long>(g.stride[1]),
                static_cast<long long>(g.dilation[0]), static_cast<long long>(g.dilation[1]));
}
void verbose(const gp::GraphConv& g, const std::string& what) {
  if (env_on("NNC_CUDNN_GRAPH_VERBOSE"))
    std::fprintf(stderr, "cuDNN graph API: %s: %s\n", describe(g).c_str(), what.c_str());
}

[[noreturn]] void refuse_no_plan(const char* what, const std::string& why) {
  throw Declined(format("%s: cuDNN's graph API has no plan for this convolution (NNC_CUDNN_GRAPH=2): %s", what,
                        why.c_str()));
}

// The whole call: true when the graph API ran it.
bool run(cudnnHandle_t h, ccv_nnc_stream_context_t* stream, int device, cudaStream_t s, const cudnn_plan::Conv& p,
         gp::Op op, const Tensor4& x_desc, const Tensor4& y_desc, const void* x, const void* w, const void* y,
         const char* what) {
  const gp::Mode mode = gp::mode_from(std::getenv("NNC_CUDNN_GRAPH"));
  if (mode == gp::Mode::kOff) return false;
  const gp::GraphConv g = gp::make(op, p, x_desc, y_desc);
  std::string why;
  if (!gp::consistent(g, p.groups, &why)) {
    if (mode == gp::Mode::kOnly) refuse_no_plan(what, why);
    return false;
  }
  const bool allow_tf32 = env_on("NNC_CUDNN_ALLOW_TF32");
  const bool reject = env_on("NNC_CUDNN_GRAPH_REJECT");
  const int64_t alignment[3] = {gp::byte_alignment(reinterpret_cast<uintptr_t>(x)),
                                gp::byte_alignment(reinterpret_cast<uintptr_t>(w)),
                                gp::byte_alignment(reinterpret_cast<uintptr_t>(y))};
  std::vector<int64_t> key = gp::key(g, device, allow_tf32, alignment);
  key.push_back(reject ? 1 : 0);
  {
    const std::lock_guard<std::mutex> lock(g_mutex);
    const auto it = g_no_plan.find(key);
    if (it != g_no_plan.end()) {
      if (mode == gp::Mode::kOnly) refuse_no_plan(what, it->second + " (as an earlier call of this shape found)");
      return false;
    }
  }
  Cache* cache = cache_for(stream, device);
  std::shared_ptr<Plan> plan;
  {
    const std::lock_guard<std::mutex> lock(cache->mutex);
    const auto it = cache->plans.find(key);
    if (it != cache->plans.end()) {
      plan = it->second;
    } else {
      try {
        plan = find_plan(h, g, alignment, allow_tf32, reject);
      } catch (const NoPlan& e) {
        {
          const std::lock_guard<std::mutex> no_plan_lock(g_mutex);
          g_no_plan[key] = e.why;
        }
        verbose(g, "no plan: " + e.why);
        if (mode == gp::Mode::kOnly) refuse_no_plan(what, e.why);
        return false;
      }
      cache->plans[key] = plan;
      verbose(g, format("%s, workspace %lld bytes", plan->engine.c_str(), static_cast<long long>(plan->workspace)));
    }
  }
  // Nothing is written before cudnnBackendExecute succeeds: a refusal up to
  // there hands the call to the legacy path (graph-only: to the next
  // backend), now and for the next calls of this shape.
  auto give_up = [&](const std::string& reason) {
    {
      const std::lock_guard<std::mutex> lock(cache->mutex);
      cache->plans.erase(key);
    }
    {
      const std::lock_guard<std::mutex> lock(g_mutex);
      g_no_plan[key] = reason;
    }
    if (mode == gp::Mode::kOnly) refuse_no_plan(what, reason);
    return false;
  };
  StreamBlock ws(static_cast<size_t>(plan->workspace), s, what);
  int64_t uids[3] = {gp::kUidX, gp::kUidW, gp::kUidY};
  void* ptrs[3] = {const_cast<void*>(x), const_cast<void*>(w), const_cast<void*>(y)};
  void* workspace = ws.get();
  std::unique_ptr<Backend> pack;
  try {
    pack = std::make_unique<Backend>(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR,
                                     "cudnnBackendCreateDescriptor(VARIANT_PACK)");
    pack->set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids, "CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS");
    pack->set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs,
              "CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS");
    pack->set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace,
              "CUDNN_ATTR_VARIANT_PACK_WORKSPACE");
    pack->finalize("cudnnBackendFinalize(VARIANT_PACK)");
  } catch (const NoPlan& e) {
    return give_up(plan->engine + ": " + e.why);
  }
  const cudnnStatus_t st = cudnnBackendExecute(h, plan->plan->get(), pack->get());
  if (st == CUDNN_STATUS_SUCCESS) {
    if (env_on("NNC_CUDNN_TRACE"))  // as the legacy calls' trace: each call, what ran it
      std::fprintf(stderr, "%s: cuDNN graph API, %s: %s\n", what, describe(g).c_str(), plan->engine.c_str());
    return true;
  }
  const std::string call = status_text(st, "cudnnBackendExecute");
  // NOT_SUPPORTED / BAD_PARAM: this plan does not take these operands after all; nothing was written.
  if (CUDNN_STATUS_CATEGORY(st) == CUDNN_STATUS_NOT_SUPPORTED || CUDNN_STATUS_CATEGORY(st) == CUDNN_STATUS_BAD_PARAM) {
    verbose(g, "execution refused: " + plan->engine + ": " + call);
    return give_up(plan->engine + ": " + call);
  }
  const bool oom = st == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
                   st == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED;
  fail(oom ? CCV_NNC_EXEC_OOM : CCV_NNC_EXEC_INVALID, "%s: cuDNN graph API (%s) failed: %s", what,
       plan->engine.c_str(), call.c_str());
}

}  // namespace

bool conv_forward(cudnnHandle_t h, ccv_nnc_stream_context_t* stream, int device, cudaStream_t s,
                  const cudnn_plan::Conv& p, const Tensor4& x_desc, const Tensor4& y_desc, const void* x,
                  const void* w, void* y, const char* what) {
  return run(h, stream, device, s, p, gp::Op::kForward, x_desc, y_desc, x, w, y, what);
}

bool conv_backward_data(cudnnHandle_t h, ccv_nnc_stream_context_t* stream, int device, cudaStream_t s,
                        const cudnn_plan::Conv& p, const Tensor4& dx_desc, const Tensor4& dy_desc, const void* w,
                        const void* dy, void* dx, const char* what) {
  return run(h, stream, device, s, p, gp::Op::kBackwardData, dx_desc, dy_desc, dx, w, dy, what);
}

bool conv_backward_filter(cudnnHandle_t h, ccv_nnc_stream_context_t* stream, int device, cudaStream_t s,
                          const cudnn_plan::Conv& p, const Tensor4& x_desc, const Tensor4& dy_desc, const void* x,
                          const void* dy, void* dw, const char* what) {
  return run(h, stream, device, s, p, gp::Op::kBackwardFilter, x_desc, dy_desc, x, dw, dy, what);
}

}  // namespace nnc::cuda::cudnn_graph
