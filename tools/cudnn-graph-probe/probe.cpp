// cudnn-graph-probe (a developer's check, not built by CMake; `run` builds
// and runs it): compiles cuda/cudnn_graph.cpp itself into this program and,
// without a GPU or a cuDNN handle, builds the tensor, convolution and
// operation descriptors exactly as it does for convolutions of every kind
// (forward / backward data / backward filter, NHWC / NCHW, 32F / 16F / 16BF,
// groups, stride, dilation, one input channel, views) and finalizes them:
// cuDNN's own host-side checks of every attribute's type and count and of
// the operation's shapes (extents, groups). Two deliberately wrong shapes
// must be refused. PROBE_GRAPH=1 also finalizes the operation graph (no
// handle), PROBE_HEUR=1 then asks the heuristics (no device: no
// configurations, but no error either). Exit status 0 when every good shape
// finalizes and both wrong ones are refused.
#include "cuda/cudnn_graph.cpp"

namespace nnc::cuda {
void* stream_attachment(ccv_nnc_stream_context_t*, const void*, void* (*)(int, cudaStream_t), void (*)(void*)) {
  return nullptr;
}
void* device_alloc_on(int, size_t, cudaStream_t, const char*) { return nullptr; }
void device_free_on(int, void*) {}
}  // namespace nnc::cuda

using namespace nnc;
using namespace nnc::cuda::cudnn_graph;
namespace gpn = nnc::cudnn_graph_plan;

gpn::GraphTensor img(int64_t n, int64_t c, int64_t h, int64_t w, bool nhwc, int64_t pad = 0) {
  gpn::GraphTensor t;
  t.dim[0] = n, t.dim[1] = c, t.dim[2] = h, t.dim[3] = w;
  const int64_t W = w + pad, C = c + pad;
  if (nhwc) t.stride[0] = h * W * C, t.stride[1] = 1, t.stride[2] = W * C, t.stride[3] = C;
  else t.stride[0] = C * h * W, t.stride[1] = h * W, t.stride[2] = W, t.stride[3] = 1;
  return t;
}

int probe(const char* name, gpn::Op op, int dt, bool nhwc, int64_t N, int64_t C, int64_t H, int64_t W, int64_t K,
          int64_t R, int64_t S, int64_t G, int64_t pad, int64_t stride, int64_t dil, int64_t view_pad = 0) {
  gpn::GraphConv g;
  g.op = op;
  g.datatype = dt;
  g.x = img(N, C, H, W, nhwc, view_pad);
  cudnn_plan::Filter f;
  f.dim[0] = (int)K, f.dim[1] = (int)(C / G), f.dim[2] = (int)R, f.dim[3] = (int)S, f.nhwc = nhwc;
  g.w = gpn::filter(f);
  const int64_t OH = (H + 2 * pad - ((R - 1) * dil + 1)) / stride + 1, OW = (W + 2 * pad - ((S - 1) * dil + 1)) / stride + 1;
  g.y = img(N, K, OH, OW, nhwc, view_pad);
  for (int i = 0; i < 2; i++) g.pad[i] = pad, g.stride[i] = stride, g.dilation[i] = dil;
  std::string why;
  if (!gpn::consistent(g, (int)G, &why)) { std::printf("%-40s inconsistent: %s\n", name, why.c_str()); return 1; }
  try {
    const cudnnDataType_t type = storage_type(dt);
    Backend tx = make_tensor(g.x, gpn::kUidX, type, 16);
    Backend tw = make_tensor(g.w, gpn::kUidW, type, 16);
    Backend ty = make_tensor(g.y, gpn::kUidY, type, 16);
    Backend conv = make_convolution(g);
    const OpNames names = op_names(g.op);
    Backend o(names.type, names.name);
    const float one = 1, zero = 0;
    o.set(names.alpha, CUDNN_TYPE_FLOAT, 1, &one, "ALPHA");
    o.set(names.beta, CUDNN_TYPE_FLOAT, 1, &zero, "BETA");
    o.set_desc(names.conv, conv, "CONV_DESC");
    o.set_desc(names.x, tx, "X");
    o.set_desc(names.w, tw, "W");
    o.set_desc(names.y, ty, "Y");
    o.finalize(names.name);
    if (getenv("PROBE_GRAPH")) {
      Backend graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "OPERATIONGRAPH");
      cudnnBackendDescriptor_t ops[1] = {o.get()};
      graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, ops, "OPS");
      graph.finalize("cudnnBackendFinalize(OPERATIONGRAPH) without a handle");
      if (getenv("PROBE_HEUR")) {
        for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
          Backend heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "ENGINEHEUR");
          try {
            heur.set_desc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph, "OG");
            heur.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, "MODE");
            heur.finalize("cudnnBackendFinalize(ENGINEHEUR)");
            std::vector<Backend> cfgs = configurations(heur);
            std::printf("  heur mode %d: %zu configurations\n", (int)mode, cfgs.size());
            for (size_t i = 0; i < cfgs.size() && i < 3; i++) {
              std::string why, engine;
              bool ok = allowed(cfgs[i], dt, false, &why, &engine);
              std::printf("    %zu: %s %s\n", i, engine.c_str(), ok ? "allowed" : why.c_str());
            }
          } catch (const NoPlan& e) { std::printf("  heur mode %d: %s\n", (int)mode, e.why.c_str()); }
        }
      }
    }
    std::printf("%-40s ok\n", name);
    return 0;
  } catch (const NoPlan& e) {
    std::printf("%-40s FAILED: %s\n", name, e.why.c_str());
    return 1;
  }
}

int main() {
  int bad = 0, refused = 0;
  for (gpn::Op op : {gpn::Op::kForward, gpn::Op::kBackwardData, gpn::Op::kBackwardFilter}) {
    const char* on = op == gpn::Op::kForward ? "fwd" : op == gpn::Op::kBackwardData ? "bwd data" : "bwd filter";
    for (bool nhwc : {true, false})
      for (int dt : {CCV_32F, CCV_16F, CCV_16BF}) {
        char n[128];
        std::snprintf(n, sizeof n, "%s %s %d 32->64 5x5", on, nhwc ? "NHWC" : "NCHW", dt);
        bad += probe(n, op, dt, nhwc, 64, 32, 14, 14, 64, 5, 5, 1, 2, 1, 1);
        std::snprintf(n, sizeof n, "%s %s %d groups 2 s2 d2", on, nhwc ? "NHWC" : "NCHW", dt);
        bad += probe(n, op, dt, nhwc, 3, 6, 11, 10, 4, 3, 3, 2, 2, 2, 2);
        std::snprintf(n, sizeof n, "%s %s %d depthwise", on, nhwc ? "NHWC" : "NCHW", dt);
        bad += probe(n, op, dt, nhwc, 2, 16, 15, 17, 16, 3, 3, 16, 2, 1, 2);
        std::snprintf(n, sizeof n, "%s %s %d C1", on, nhwc ? "NHWC" : "NCHW", dt);
        bad += probe(n, op, dt, nhwc, 8, 1, 28, 28, 32, 5, 5, 1, 2, 1, 1);
        std::snprintf(n, sizeof n, "%s %s %d view", on, nhwc ? "NHWC" : "NCHW", dt);
        bad += probe(n, op, dt, nhwc, 2, 5, 9, 8, 3, 3, 3, 1, 1, 2, 1, 2);
      }
  }
  {  // deliberately wrong: y one row too tall (consistent() bypassed)
    gpn::GraphConv g;
    g.op = gpn::Op::kForward; g.datatype = CCV_32F;
    g.x = img(2, 8, 9, 9, true);
    cudnn_plan::Filter f; f.dim[0] = 4, f.dim[1] = 8, f.dim[2] = 3, f.dim[3] = 3, f.nhwc = true;
    g.w = gpn::filter(f);
    g.y = img(2, 4, 10, 9, true);
    g.pad[0] = g.pad[1] = 1;
    try {
      Backend tx = make_tensor(g.x, 1, CUDNN_DATA_FLOAT, 16), tw = make_tensor(g.w, 2, CUDNN_DATA_FLOAT, 16), ty = make_tensor(g.y, 3, CUDNN_DATA_FLOAT, 16);
      Backend conv = make_convolution(g);
      OpNames names = op_names(g.op);
      Backend o(names.type, names.name);
      const float one = 1, zero = 0;
      o.set(names.alpha, CUDNN_TYPE_FLOAT, 1, &one, "ALPHA"); o.set(names.beta, CUDNN_TYPE_FLOAT, 1, &zero, "BETA");
      o.set_desc(names.conv, conv, "C"); o.set_desc(names.x, tx, "X"); o.set_desc(names.w, tw, "W"); o.set_desc(names.y, ty, "Y");
      o.finalize(names.name);
      std::printf("wrong y extent: finalized (cuDNN does not check here)\n");
    } catch (const NoPlan& e) { std::printf("wrong y extent: refused: %s\n", e.why.c_str()); refused++; }
    // wrong groups: filter C 3 does not divide x's 8
    g.y = img(2, 4, 9, 9, true);
    f.dim[1] = 3; g.w = gpn::filter(f);
    try {
      Backend tx = make_tensor(g.x, 1, CUDNN_DATA_FLOAT, 16), tw = make_tensor(g.w, 2, CUDNN_DATA_FLOAT, 16), ty = make_tensor(g.y, 3, CUDNN_DATA_FLOAT, 16);
      Backend conv = make_convolution(g);
      OpNames names = op_names(g.op);
      Backend o(names.type, names.name);
      const float one = 1, zero = 0;
      o.set(names.alpha, CUDNN_TYPE_FLOAT, 1, &one, "ALPHA"); o.set(names.beta, CUDNN_TYPE_FLOAT, 1, &zero, "BETA");
      o.set_desc(names.conv, conv, "C"); o.set_desc(names.x, tx, "X"); o.set_desc(names.w, tw, "W"); o.set_desc(names.y, ty, "Y");
      o.finalize(names.name);
      std::printf("wrong groups: finalized (cuDNN does not check here)\n");
    } catch (const NoPlan& e) { std::printf("wrong groups: refused: %s\n", e.why.c_str()); refused++; }
  }
  std::printf("good shapes that did not finalize: %d; wrong shapes refused: %d of 2\n", bad, refused);
  return bad != 0 || refused != 2;
}
