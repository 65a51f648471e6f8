// cuDNN's graph (backend) API under CPU emulation (design: CMakeLists.txt
// here), as far as cuda/cudnn_graph.cpp uses it: descriptors as bags of
// attributes, checked when finalized; one convolution operation (forward,
// data or filter gradient) per operation graph; heuristics that name engines;
// execution plans run by cudnnBackendExecute on the convolutions of
// emu_cudnn.cpp (emu::convolve), the operands found by unique id in the
// variant pack.
//
// The engines, by global index, and what they do to the numbers:
//   0  tensor cores (numerical note TENSOR_CORE): fp32 operands rounded to
//      TF32, as an Ampere or Hopper tensor-core engine rounds them;
//   1  none: exact sums;
//   2  tensor cores with a reduced-precision reduction (TENSOR_CORE,
//      REDUCED_PRECISION_REDUCTION): operands rounded to bf16.
// Heuristics mode A lists 2, 0, 1 (the fastest first, as cuDNN may);
// FALLBACK lists 1. So a caller that took an engine without reading its
// notes gets numbers too coarse for fp32 (or for anything, engine 2), and the
// tests that compare against CPU_REF fail. Engine 0 asks for 4 KiB of
// workspace. Errors: CUDNN_STATUS_BAD_PARAM for a missing or inconsistent
// attribute (as cuDNN's finalize), CUDNN_STATUS_NOT_SUPPORTED for what is
// not emulated.
#include <cudnn.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

#include "emu_hooks.hpp"

namespace emu {
cudnnStatus_t convolve(int op, cudnnDataType_t type, const int64_t* xdim, const int64_t* xstride, void* x,
                       const int64_t* wdim, const int64_t* wstride, void* w, const int64_t* ydim, const int64_t* ystride,
                       void* y, const int64_t* pad, const int64_t* stride, const int64_t* dilation, int rounding,
                       float alpha, float beta, cudaStream_t stream);  // emu_cudnn.cpp
}  // namespace emu

namespace {

struct Attr {
  cudnnBackendAttributeType_t type;
  int64_t count;
  std::vector<unsigned char> bytes;
};
struct Desc {
  cudnnBackendDescriptorType_t type;
  bool final = false;
  std::map<int, Attr> attrs;
  int engine = -1;  // ENGINECFG / ENGINE filled by cudnnBackendGetAttribute: the engine's index
  Desc* graph = nullptr;  // ... and its operation graph
};

Desc* as(cudnnBackendDescriptor_t d) { return reinterpret_cast<Desc*>(d); }

size_t element_size(cudnnBackendAttributeType_t t) {
  switch (t) {
    case CUDNN_TYPE_HANDLE:
      return sizeof(cudnnHandle_t);
    case CUDNN_TYPE_BOOLEAN:
      return sizeof(bool);
    case CUDNN_TYPE_INT64:
      return sizeof(int64_t);
    case CUDNN_TYPE_FLOAT:
      return sizeof(float);
    case CUDNN_TYPE_DOUBLE:
      return sizeof(double);
    case CUDNN_TYPE_VOID_PTR:
      return sizeof(void*);
    case CUDNN_TYPE_BACKEND_DESCRIPTOR:
      return sizeof(cudnnBackendDescriptor_t);
    case CUDNN_TYPE_CHAR:
      return 1;
    default:
      return sizeof(int);  // the enumerations
  }
}

// Attribute `name` of d as `count` values of T (false if absent, of another
// type or count).
template <class T>
bool get(const Desc& d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count, T* out) {
  const auto it = d.attrs.find(name);
  if (it == d.attrs.end() || it->second.type != type || it->second.count != count) return false;
  std::memcpy(out, it->second.bytes.data(), sizeof(T) * static_cast<size_t>(count));
  return true;
}
const Desc* get_desc(const Desc& d, cudnnBackendAttributeName_t name, cudnnBackendDescriptorType_t type) {
  cudnnBackendDescriptor_t v = nullptr;
  if (!get(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v) || !v) return nullptr;
  const Desc* r = as(v);
  return r->type == type && r->final ? r : nullptr;
}

struct Tensor {
  cudnnDataType_t type;
  int64_t dim[4], stride[4], uid;
};
bool tensor_of(const Desc* d, Tensor* t) {
  if (!d || d->type != CUDNN_BACKEND_TENSOR_DESCRIPTOR || !d->final) return false;
  return get(*d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &t->type) &&
         get(*d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, t->dim) &&
         get(*d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, t->stride) &&
         get(*d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &t->uid);
}

// One operation's kind (0 forward, 1 data gradient, 2 filter gradient) and
// its attribute names in x / w / y roles.
struct OpKind {
  int op;
  cudnnBackendAttributeName_t alpha, beta, conv, x, w, y;
};
bool op_kind(cudnnBackendDescriptorType_t t, OpKind* k) {
  switch (t) {
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
      *k = {0, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
            CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
            CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y};
      return true;
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
      *k = {1, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY};
      return true;
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
      *k = {2, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA,
            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY};
      return true;
    default:
      return false;
  }
}

// A convolution operation, read whole.
struct Conv {
  int op;
  float alpha, beta;
  Tensor x, w, y;
  int64_t pad[2], stride[2], dilation[2];
};
cudnnStatus_t read_conv(const Desc& d, Conv* c) {
  OpKind k;
  if (!op_kind(d.type, &k)) return CUDNN_STATUS_NOT_SUPPORTED;
  c->op = k.op;
  const Desc* cd = get_desc(d, k.conv, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  if (!get(d, k.alpha, CUDNN_TYPE_FLOAT, 1, &c->alpha) || !get(d, k.beta, CUDNN_TYPE_FLOAT, 1, &c->beta) || !cd)
    return CUDNN_STATUS_BAD_PARAM;
  cudnnBackendDescriptor_t x = nullptr, w = nullptr, y = nullptr;
  if (!get(d, k.x, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x) || !get(d, k.w, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w) ||
      !get(d, k.y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y) || !tensor_of(as(x), &c->x) || !tensor_of(as(w), &c->w) ||
      !tensor_of(as(y), &c->y))
    return CUDNN_STATUS_BAD_PARAM;
  int64_t post[2];
  if (!get(*cd, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, c->pad) ||
      !get(*cd, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, post) ||
      !get(*cd, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, c->stride) ||
      !get(*cd, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, c->dilation))
    return CUDNN_STATUS_BAD_PARAM;
  if (post[0] != c->pad[0] || post[1] != c->pad[1]) return CUDNN_STATUS_NOT_SUPPORTED;  // asymmetric: not emulated
  // The shapes agree: y's extents from x's, the filter's and the geometry;
  // x's channels a multiple of w's (groups); one type.
  if (c->x.type != c->w.type || c->x.type != c->y.type || c->x.dim[0] != c->y.dim[0] ||
      c->w.dim[0] != c->y.dim[1] || c->w.dim[1] <= 0 || c->x.dim[1] % c->w.dim[1] ||
      c->w.dim[0] % (c->x.dim[1] / c->w.dim[1]))
    return CUDNN_STATUS_BAD_PARAM;
  for (int i = 0; i < 2; i++) {
    if (c->stride[i] <= 0 || c->dilation[i] <= 0 || c->pad[i] < 0) return CUDNN_STATUS_BAD_PARAM;
    const int64_t extent = (c->x.dim[2 + i] + 2 * c->pad[i] - ((c->w.dim[2 + i] - 1) * c->dilation[i] + 1)) / c->stride[i] + 1;
    if (extent != c->y.dim[2 + i]) return CUDNN_STATUS_BAD_PARAM;
  }
  return CUDNN_STATUS_SUCCESS;
}

// The operation graph's one operation.
const Desc* graph_op(const Desc* g) {
  if (!g || g->type != CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR || !g->final) return nullptr;
  cudnnBackendDescriptor_t op = nullptr;
  if (!get(*g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op) || !op) return nullptr;
  return as(op);
}

// The engines (file comment): their notes, workspace and rounding.
std::vector<cudnnBackendNumericalNote_t> notes_of(int engine) {
  if (engine == 0) return {CUDNN_NUMERICAL_NOTE_TENSOR_CORE};
  if (engine == 2) return {CUDNN_NUMERICAL_NOTE_TENSOR_CORE, CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION};
  return {};
}
int64_t workspace_of(int engine) { return engine == 0 ? 4096 : 0; }
std::vector<int> heuristics(int64_t mode) {
  if (mode == CUDNN_HEUR_MODE_FALLBACK) return {1};
  return {2, 0, 1};
}

cudnnStatus_t finalize(Desc& d) {
  switch (d.type) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR: {
      Tensor t;
      int64_t alignment = 0;
      d.final = true;  // for tensor_of
      const bool ok = tensor_of(&d, &t) && get(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment) &&
                      alignment > 0;
      for (int i = 0; ok && i < 4; i++)
        if (t.dim[i] <= 0 || t.stride[i] <= 0) d.final = false;
      if (!ok) d.final = false;
      return d.final ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM;
    }
    case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR: {
      cudnnDataType_t compute;
      cudnnConvolutionMode_t mode;
      int64_t spatial = 0, v[2];
      if (!get(d, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute) ||
          !get(d, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode) ||
          !get(d, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial) || spatial != 2 ||
          !get(d, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, v) ||
          !get(d, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, v) ||
          !get(d, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, v) ||
          !get(d, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, v))
        return CUDNN_STATUS_BAD_PARAM;
      if (mode != CUDNN_CROSS_CORRELATION) return CUDNN_STATUS_NOT_SUPPORTED;
      break;
    }
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR: {
      Conv c;
      const cudnnStatus_t st = read_conv(d, &c);
      if (st != CUDNN_STATUS_SUCCESS) return st;
      break;
    }
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR: {
      cudnnHandle_t h = nullptr;
      const auto it = d.attrs.find(CUDNN_ATTR_OPERATIONGRAPH_OPS);
      if (it == d.attrs.end() || it->second.count != 1) return CUDNN_STATUS_NOT_SUPPORTED;  // one operation only
      cudnnBackendDescriptor_t op = nullptr;
      if (!get(d, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op) || !op || !as(op)->final ||
          !get(d, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h) || !h)
        return CUDNN_STATUS_BAD_PARAM;
      break;
    }
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR: {
      cudnnBackendHeurMode_t mode;
      if (!get_desc(d, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR) ||
          !get(d, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode))
        return CUDNN_STATUS_BAD_PARAM;
      if (mode != CUDNN_HEUR_MODE_A && mode != CUDNN_HEUR_MODE_FALLBACK) return CUDNN_STATUS_NOT_SUPPORTED;
      break;
    }
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: {
      cudnnHandle_t h = nullptr;
      const Desc* cfg = get_desc(d, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
      if (!cfg || cfg->engine < 0 || !get(d, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h) || !h)
        return CUDNN_STATUS_BAD_PARAM;
      d.engine = cfg->engine, d.graph = cfg->graph;
      break;
    }
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR: {
      const auto uids = d.attrs.find(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
      const auto ptrs = d.attrs.find(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
      void* ws = nullptr;
      if (uids == d.attrs.end() || ptrs == d.attrs.end() || uids->second.type != CUDNN_TYPE_INT64 ||
          ptrs->second.type != CUDNN_TYPE_VOID_PTR || uids->second.count != ptrs->second.count ||
          !get(d, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws))
        return CUDNN_STATUS_BAD_PARAM;
      break;
    }
    default:
      return CUDNN_STATUS_NOT_SUPPORTED;
  }
  d.final = true;
  return CUDNN_STATUS_SUCCESS;
}

// Fills a descriptor the caller made (ENGINECFG or ENGINE) with engine e of graph g.
void fill(Desc* d, int e, Desc* g) {
  d->engine = e, d->graph = g, d->final = true;
}

}  // namespace

extern "C" {

cudnnStatus_t CUDNNWINAPI cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t* d) {
  EMU_API_CALL();
  if (!d) return CUDNN_STATUS_BAD_PARAM;
  *d = reinterpret_cast<cudnnBackendDescriptor_t>(new Desc{type});
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t CUDNNWINAPI cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t d) {
  EMU_API_CALL();
  delete as(d);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t CUDNNWINAPI cudnnBackendSetAttribute(cudnnBackendDescriptor_t desc, cudnnBackendAttributeName_t name,
                                                   cudnnBackendAttributeType_t type, int64_t count,
                                                   const void* values) {
  EMU_API_CALL();
  Desc* d = as(desc);
  if (!d || count < 0 || (count > 0 && !values)) return CUDNN_STATUS_BAD_PARAM;
  if (d->final) return CUDNN_STATUS_NOT_INITIALIZED;  // cuDNN: no setting after finalize
  Attr a{type, count, std::vector<unsigned char>(element_size(type) * static_cast<size_t>(count))};
  if (count) std::memcpy(a.bytes.data(), values, a.bytes.size());
  d->attrs[name] = std::move(a);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t CUDNNWINAPI cudnnBackendFinalize(cudnnBackendDescriptor_t desc) {
  EMU_API_CALL();
  Desc* d = as(desc);
  if (!d) return CUDNN_STATUS_BAD_PARAM;
  return finalize(*d);
}
cudnnStatus_t CUDNNWINAPI cudnnBackendGetAttribute(cudnnBackendDescriptor_t const desc,
                                                   cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                                                   int64_t requested, int64_t* count, void* values) {
  EMU_API_CALL();
  Desc* d = as(desc);
  if (!d || !d->final || !count || requested < 0) return CUDNN_STATUS_BAD_PARAM;
  switch (name) {
    case CUDNN_ATTR_ENGINEHEUR_RESULTS: {
      cudnnBackendHeurMode_t mode;
      if (type != CUDNN_TYPE_BACKEND_DESCRIPTOR || !get(*d, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode))
        return CUDNN_STATUS_BAD_PARAM;
      cudnnBackendDescriptor_t g = nullptr;
      get(*d, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g);
      const std::vector<int> engines = heuristics(mode);
      *count = static_cast<int64_t>(engines.size());
      if (values)
        for (int64_t i = 0; i < requested && i < *count; i++) {
          Desc* cfg = as(static_cast<cudnnBackendDescriptor_t*>(values)[i]);
          if (!cfg || cfg->type != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR) return CUDNN_STATUS_BAD_PARAM;
          fill(cfg, engines[static_cast<size_t>(i)], as(g));
        }
      if (values && requested < *count) *count = requested;
      return CUDNN_STATUS_SUCCESS;
    }
    case CUDNN_ATTR_ENGINECFG_ENGINE: {
      if (d->type != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR || type != CUDNN_TYPE_BACKEND_DESCRIPTOR || requested < 1 ||
          !values)
        return CUDNN_STATUS_BAD_PARAM;
      Desc* e = as(*static_cast<cudnnBackendDescriptor_t*>(values));
      if (!e || e->type != CUDNN_BACKEND_ENGINE_DESCRIPTOR) return CUDNN_STATUS_BAD_PARAM;
      fill(e, d->engine, d->graph);
      *count = 1;
      return CUDNN_STATUS_SUCCESS;
    }
    case CUDNN_ATTR_ENGINE_NUMERICAL_NOTE: {
      if (d->type != CUDNN_BACKEND_ENGINE_DESCRIPTOR || type != CUDNN_TYPE_NUMERICAL_NOTE) return CUDNN_STATUS_BAD_PARAM;
      const std::vector<cudnnBackendNumericalNote_t> notes = notes_of(d->engine);
      *count = static_cast<int64_t>(notes.size());
      for (int64_t i = 0; values && i < requested && i < *count; i++)
        static_cast<cudnnBackendNumericalNote_t*>(values)[i] = notes[static_cast<size_t>(i)];
      return CUDNN_STATUS_SUCCESS;
    }
    case CUDNN_ATTR_ENGINE_GLOBAL_INDEX: {
      if (d->type != CUDNN_BACKEND_ENGINE_DESCRIPTOR || type != CUDNN_TYPE_INT64 || requested < 1 || !values)
        return CUDNN_STATUS_BAD_PARAM;
      *static_cast<int64_t*>(values) = d->engine;
      *count = 1;
      return CUDNN_STATUS_SUCCESS;
    }
    case CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE: {
      if (d->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR || type != CUDNN_TYPE_INT64 || requested < 1 || !values)
        return CUDNN_STATUS_BAD_PARAM;
      *static_cast<int64_t*>(values) = workspace_of(d->engine);
      *count = 1;
      return CUDNN_STATUS_SUCCESS;
    }
    default:
      return CUDNN_STATUS_NOT_SUPPORTED;
  }
}

cudnnStatus_t CUDNNWINAPI cudnnBackendExecute(cudnnHandle_t h, cudnnBackendDescriptor_t plan,
                                              cudnnBackendDescriptor_t pack) {
  EMU_API_CALL();
  const Desc *p = as(plan), *v = as(pack);
  if (!h || !p || !v || !p->final || !v->final || p->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR ||
      v->type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)
    return CUDNN_STATUS_BAD_PARAM;
  const Desc* op = graph_op(p->graph);
  Conv c;
  if (!op) return CUDNN_STATUS_BAD_PARAM;
  const cudnnStatus_t st = read_conv(*op, &c);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  // The operands by unique id; the workspace the plan asked for.
  const Attr& uids = v->attrs.at(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
  const Attr& ptrs = v->attrs.at(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
  auto pointer = [&](int64_t uid) -> void* {
    for (int64_t i = 0; i < uids.count; i++) {
      int64_t u;
      std::memcpy(&u, uids.bytes.data() + i * sizeof(int64_t), sizeof u);
      if (u == uid) {
        void* q;
        std::memcpy(&q, ptrs.bytes.data() + i * sizeof(void*), sizeof q);
        return q;
      }
    }
    return nullptr;
  };
  void *x = pointer(c.x.uid), *w = pointer(c.w.uid), *y = pointer(c.y.uid), *ws = nullptr;
  get(*v, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
  if (!x || !w || !y || (workspace_of(p->engine) > 0 && !ws)) return CUDNN_STATUS_BAD_PARAM;
  const int rounding = p->engine == 2 ? 2 : p->engine == 0 ? 1 : 0;
  cudaStream_t stream = nullptr;
  (void)cudnnGetStream(h, &stream);
  return emu::convolve(c.op, c.x.type, c.x.dim, c.x.stride, x, c.w.dim, c.w.stride, w, c.y.dim, c.y.stride, y, c.pad,
                       c.stride, c.dilation, rounding, c.alpha, c.beta, stream);
}

}  // extern "C"
