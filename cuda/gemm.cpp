// GEMM on cuBLAS (GPU_CUBLAS): forward and backward of every GEMM our
// CPU_REF takes (batched, broadcast batch, either operand transposed, views
// with one unit stride per matrix, any bias that broadcasts to b) in fp32,
// fp16, bf16 and fp64 storage. The calls are planned on the host
// (cmd/common/gemm_plan.hpp, tested on the CPU): each is one
// cublasGemmStridedBatchedEx, or a cublasLtMatmul with the bias epilogue
// (CUBLASLT_EPILOGUE_BIAS) where the bias is one vector per output row;
// other biases are broadcast into b first and the GEMM accumulates (beta = 1).
// dbias is a reduction kernel (gemm_kernels.cu) over g.
//
// Accumulation: fp32 (fp64 for fp64 storage) unless the command allows less:
// CCV_NNC_GEMM_16F in cmd.info.blas.flags lets fp16 storage accumulate in
// fp16; CCV_NNC_GEMM_32TF lets fp32 products run on TF32 tensor cores. Off by
// default, so fp32 GEMM matches CPU_REF to fp32 rounding. The a[] scales are
// not applied, as CPU_REF does not apply them. NNC_CUBLAS_NO_LT=1 in the
// environment turns the cuBLASLt epilogue off (bias fill + accumulate).
#include <cublasLt.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "cmd/common/gemm_plan.hpp"
#include "core/kernel.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"
#include "cuda/cuda.hpp"
#include "cuda/kern.hpp"
#include "cuda/stream.hpp"

namespace nnc::cuda {

cudaError_t launch_gemm_bias_fill(cudaStream_t s, int type, const gpu::EwPlan& p, void* c, const void* bias);
// dbias (launch: gpu::choose_reduce_sliced; a sliced one needs scratch of
// gpu::reduce_scratch_elements accumulators: floats, doubles for 64F).
cudaError_t launch_gemm_bias_grad(cudaStream_t s, int type, const gpu::ReducePlan& r, const gpu::ReduceLaunch& l,
                                  void* dbias, const void* g, void* scratch);
cudaError_t launch_gemm_store_f32(cudaStream_t s, int type, const gpu::EwPlan& p, void* c, const float* x);

namespace {

inline void check_lt(cublasStatus_t st, const char* what, const char* call) {
  if (st != CUBLAS_STATUS_SUCCESS)
    fail(CCV_NNC_EXEC_INVALID, "%s: %s failed: %s (cuBLASLt)", what, call, cublasLtGetStatusName(st));
}
#define NNC_LT_CHECK(call, what) check_lt((call), (what), #call)

// cuBLASLt's workspace per call (stream-ordered from the caching allocator);
// 32 MiB is what Hopper's fastest kernels ask for.
constexpr size_t kLtWorkspace = size_t(32) << 20;

// Storage and compute of one command.
struct Types {
  int datatype = CCV_32F;
  cudaDataType_t storage = CUDA_R_32F;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cudaDataType_t scale = CUDA_R_32F;  // of alpha and beta
  int kernel_type = kF32;
  size_t esize = 4;
};

Types types_of(const ccv_nnc_cmd_t& cmd, int datatype) {
  Types t;
  t.datatype = datatype;
  t.esize = datatype_size(datatype);
  switch (datatype) {
    case CCV_16F:
      t.storage = CUDA_R_16F, t.kernel_type = kF16;
      break;
    case CCV_16BF:
      t.storage = CUDA_R_16BF, t.kernel_type = kBF16;
      break;
    case CCV_64F:
      t.storage = CUDA_R_64F, t.kernel_type = kF64;
      break;
    default:
      break;
  }
  switch (gemm_plan::compute_of(cmd.info.blas.flags, datatype)) {
    case gemm_plan::Compute::f64:
      t.compute = CUBLAS_COMPUTE_64F, t.scale = CUDA_R_64F;
      break;
    case gemm_plan::Compute::f16:
      t.compute = CUBLAS_COMPUTE_16F, t.scale = CUDA_R_16F;
      break;
    case gemm_plan::Compute::f32_tf32:
      t.compute = CUBLAS_COMPUTE_32F_FAST_TF32;
      break;
    default:
      break;
  }
  return t;
}

// alpha = 1 and beta = 0 or 1 in the scale type.
struct Scalars {
  float f[2] = {0, 1};
  double d[2] = {0, 1};
  __half h[2];
  Scalars() { h[0] = __float2half(0.f), h[1] = __float2half(1.f); }
  const void* get(const Types& t, int v) const {
    return t.scale == CUDA_R_64F   ? static_cast<const void*>(&d[v])
           : t.scale == CUDA_R_16F ? static_cast<const void*>(&h[v])
                                   : static_cast<const void*>(&f[v]);
  }
};

// The calling thread's cuBLASLt handle (not bound to a stream: streams are
// given per call), one per device, made on first use.
cublasLtHandle_t lt_handle(int device, const char* what) {
  thread_local struct Handles {
    cublasLtHandle_t h[64] = {};
    ~Handles() {
      for (auto x : h)
        if (x) cublasLtDestroy(x);
    }
  } handles;
  NNC_CHECK(device >= 0 && device < 64, "%s: device %d out of range", what, device);
  if (!handles.h[device]) NNC_LT_CHECK(cublasLtCreate(&handles.h[device]), what);
  return handles.h[device];
}

// The largest power of two (up to 256) dividing an address: cuBLASLt picks
// algorithms by the operands' alignment, and views may start anywhere.
uint32_t alignment(const void* p) {
  const uintptr_t x = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 256;
  while (a > 1 && (x & (a - 1))) a >>= 1;
  return a;
}

template <class T, class F>
struct Owned {
  T v = nullptr;
  F destroy;
  explicit Owned(F d) : destroy(d) {}
  ~Owned() {
    if (v) destroy(v);
  }
};

using AlgoKey = std::array<int64_t, 20>;

// NNC_CUBLAS_NO_LT=1 in the environment: never the cuBLASLt epilogue (the
// bias is broadcast into b and the GEMM accumulates), to tell the two apart.
bool lt_disabled() {
  static const bool off = [] {
    const char* e = std::getenv("NNC_CUBLAS_NO_LT");
    return e && *e && std::strcmp(e, "0") != 0;
  }();
  return off;
}

// What one shape of bias-epilogue call needs from cuBLASLt, made on its
// first call and kept (per thread, device, shape, types and alignments): the
// matmul and layout descriptors and the heuristic's algorithm (ok false: it
// had none). Later calls of the shape only point the bias at their operand.
struct LtPlan {
  bool ok = false;
  cublasLtMatmulHeuristicResult_t result = {};
  Owned<cublasLtMatmulDesc_t, cublasStatus_t (*)(cublasLtMatmulDesc_t)> desc{cublasLtMatmulDescDestroy};
  Owned<cublasLtMatrixLayout_t, cublasStatus_t (*)(cublasLtMatrixLayout_t)> la{cublasLtMatrixLayoutDestroy},
      lb{cublasLtMatrixLayoutDestroy}, lc{cublasLtMatrixLayoutDestroy};
};

// The descriptors and the heuristic's answer for call c (al: the operands'
// worst alignments, a, b, c; worst_bias: the bias operand aligned worst).
std::unique_ptr<LtPlan> make_lt_plan(cublasLtHandle_t lt, const gemm_plan::Call& c, const Types& t,
                                     const uint32_t al[4], const void* worst_bias, const char* what) {
  auto p = std::make_unique<LtPlan>();
  auto mk_layout = [&](cublasLtMatrixLayout_t* out, int64_t rows, int64_t cols, int64_t ld, int64_t stride) {
    NNC_LT_CHECK(
        cublasLtMatrixLayoutCreate(out, t.storage, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld), what);
    if (c.batch > 1) {
      const int32_t n = c.batch;
      NNC_LT_CHECK(cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &n, sizeof n), what);
      NNC_LT_CHECK(
          cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride),
          what);
    }
  };
  Owned<cublasLtMatmulPreference_t, cublasStatus_t (*)(cublasLtMatmulPreference_t)> pref(
      cublasLtMatmulPreferenceDestroy);
  NNC_LT_CHECK(cublasLtMatmulDescCreate(&p->desc.v, t.compute, t.scale), what);
  const cublasOperation_t ta = c.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = c.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  NNC_LT_CHECK(cublasLtMatmulDescSetAttribute(p->desc.v, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), what);
  NNC_LT_CHECK(cublasLtMatmulDescSetAttribute(p->desc.v, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), what);
  const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
  NNC_LT_CHECK(cublasLtMatmulDescSetAttribute(p->desc.v, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi), what);
  const cudaDataType_t bias_type = t.storage;
  NNC_LT_CHECK(
      cublasLtMatmulDescSetAttribute(p->desc.v, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type),
      what);
  if (c.batch > 1) {
    const int64_t bs = c.stride_bias;
    NNC_LT_CHECK(cublasLtMatmulDescSetAttribute(p->desc.v, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &bs, sizeof bs),
                 what);
  }
  mk_layout(&p->la.v, c.trans_a ? c.k : c.m, c.trans_a ? c.m : c.k, c.lda, c.stride_a);
  mk_layout(&p->lb.v, c.trans_b ? c.n : c.k, c.trans_b ? c.k : c.n, c.ldb, c.stride_b);
  mk_layout(&p->lc.v, c.m, c.n, c.ldc, c.stride_c);
  NNC_LT_CHECK(cublasLtMatmulPreferenceCreate(&pref.v), what);
  const uint64_t ws = kLtWorkspace;
  NNC_LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.v, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
               what);
  const cublasLtMatmulPreferenceAttributes_t which[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; i++)
    NNC_LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.v, which[i], &al[i], sizeof al[i]), what);
  // The heuristic reads the bias pointer for its alignment: the worst one.
  NNC_LT_CHECK(
      cublasLtMatmulDescSetAttribute(p->desc.v, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &worst_bias, sizeof worst_bias),
      what);
  int found = 0;
  const cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(lt, p->desc.v, p->la.v, p->lb.v, p->lc.v, p->lc.v, pref.v,
                                                           1, &p->result, &found);
  p->ok = hs == CUBLAS_STATUS_SUCCESS && found > 0;
  return p;
}

// One planned call with the bias epilogue through cuBLASLt. False (nothing
// queued) when cuBLASLt has no algorithm for it: the caller falls back.
bool lt_bias_call(int device, cudaStream_t s, const gemm_plan::Call& c, const Types& t, const void* bias,
                  const char* what) {
  cublasLtHandle_t lt = lt_handle(device, what);
  // One algorithm for every base: chosen for the worst alignment among them
  // (the heuristic reads the bias pointer for its alignment too).
  const int64_t es = static_cast<int64_t>(t.esize);
  uint32_t al[4] = {256, 256, 256, 256};
  const void* worst_bias = nullptr;
  uint32_t bias_al = 512;
  for (const gemm_plan::Base& base : c.bases) {
    const uint32_t x[4] = {alignment(c.a + base.a * es), alignment(c.b + base.b * es), alignment(c.c + base.c * es),
                           alignment(c.c + base.c * es)};
    for (int i = 0; i < 4; i++) al[i] = std::min(al[i], x[i]);
    const void* bp = static_cast<const unsigned char*>(bias) + base.bias * es;
    if (alignment(bp) < bias_al) bias_al = alignment(bp), worst_bias = bp;
  }
  // The heuristic's answer costs more than a small GEMM: kept per shape,
  // types and alignments, per thread and device, with its descriptors.
  const AlgoKey key = {device,
                       static_cast<int64_t>(t.storage),
                       static_cast<int64_t>(t.compute),
                       c.trans_a,
                       c.trans_b,
                       c.m,
                       c.n,
                       c.k,
                       c.lda,
                       c.ldb,
                       c.ldc,
                       c.batch,
                       c.stride_a,
                       c.stride_b,
                       c.stride_c,
                       c.stride_bias,
                       al[0],
                       al[1],
                       al[2],
                       bias_al};
  thread_local std::map<AlgoKey, std::unique_ptr<LtPlan>> cache;
  auto it = cache.find(key);
  if (it == cache.end()) {
    if (cache.size() > 4096) cache.clear();
    it = cache.emplace(key, make_lt_plan(lt, c, t, al, worst_bias, what)).first;
  }
  LtPlan& plan = *it->second;
  if (!plan.ok) return false;  // no algorithm: nothing queued, the caller falls back
  const cublasLtMatmulHeuristicResult_t& result = plan.result;
  const Scalars sc;
  StreamBlock workspace(result.workspaceSize, s, what);
  for (const gemm_plan::Base& base : c.bases) {
    const void* bias_at = static_cast<const unsigned char*>(bias) + base.bias * es;
    NNC_LT_CHECK(
        cublasLtMatmulDescSetAttribute(plan.desc.v, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_at, sizeof bias_at), what);
    unsigned char* out = c.c + base.c * es;
    const cublasStatus_t st =
        cublasLtMatmul(lt, plan.desc.v, sc.get(t, 1), c.a + base.a * es, plan.la.v, c.b + base.b * es, plan.lb.v,
                       sc.get(t, 0), out, plan.lc.v, out, plan.lc.v, &result.algo, workspace.get(), result.workspaceSize,
                       s);
    // Refused outright on the first call (nothing queued yet): fall back, and
    // remember not to try this shape again.
    if (st != CUBLAS_STATUS_SUCCESS && &base == &c.bases.front() &&
        (st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_INVALID_VALUE)) {
      plan.ok = false;
      return false;
    }
    check_lt(st, what, "cublasLtMatmul");
  }
  return true;
}

// One planned call through cublasGemmStridedBatchedEx (beta = 1 for every
// base when accumulate_all: a bias is already in C).
void run_call(cublasHandle_t h, const gemm_plan::Call& c, const Types& t, bool accumulate_all, const char* what) {
  const Scalars sc;
  const cublasOperation_t ta = c.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = c.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasGemmAlgo_t algo = CUBLAS_GEMM_DEFAULT;
  for (const gemm_plan::Base& base : c.bases) {
    const void* a = c.a + base.a * static_cast<int64_t>(t.esize);
    const void* b = c.b + base.b * static_cast<int64_t>(t.esize);
    void* out = c.c + base.c * static_cast<int64_t>(t.esize);
    const void* beta = sc.get(t, (base.accumulate || accumulate_all) ? 1 : 0);
    if (c.batch == 1) {
      NNC_CUDA_CHECK(
          cublasGemmEx(h, ta, tb, c.m, c.n, c.k, sc.get(t, 1), a, t.storage, static_cast<int>(c.lda), b, t.storage,
                       static_cast<int>(c.ldb), beta, out, t.storage, static_cast<int>(c.ldc), t.compute, algo),
          what);
    } else {
      NNC_CUDA_CHECK(
          cublasGemmStridedBatchedEx(h, ta, tb, c.m, c.n, c.k, sc.get(t, 1), a, t.storage, static_cast<int>(c.lda),
                                     c.stride_a, b, t.storage, static_cast<int>(c.ldb), c.stride_b, beta, out,
                                     t.storage, static_cast<int>(c.ldc), c.stride_c, c.batch, t.compute, algo),
          what);
    }
  }
}

// A planned call whose outputs are summed over several calls (the gradient of
// a broadcast operand that does not fold), in fp16 / bf16 with fp32
// accumulation: the partial sums stay in fp32 scratch and are rounded to the
// storage type once at the end, as a single GEMM would
// (gemm_plan::scratch_sums).
void run_call_f32_sums(cublasHandle_t h, cudaStream_t s, const gemm_plan::Call& c, const Types& t, const char* what) {
  const gemm_plan::ScratchSums plan = gemm_plan::scratch_sums(c);
  StreamBlock scratch(static_cast<size_t>(plan.per_slot) * plan.outputs.size() * sizeof(float), s, what);
  float* const sums = static_cast<float*>(scratch.get());
  const float alpha = 1, zero = 0, one = 1;
  const cublasOperation_t ta = c.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = c.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int64_t es = static_cast<int64_t>(t.esize);
  for (size_t i = 0; i < c.bases.size(); i++) {
    const gemm_plan::Base& base = c.bases[i];
    NNC_CUDA_CHECK(cublasGemmStridedBatchedEx(
                       h, ta, tb, c.m, c.n, c.k, &alpha, c.a + base.a * es, t.storage, static_cast<int>(c.lda),
                       c.stride_a, c.b + base.b * es, t.storage, static_cast<int>(c.ldb), c.stride_b,
                       base.accumulate ? &one : &zero, sums + plan.slot[i] * plan.per_slot, CUDA_R_32F, c.m,
                       static_cast<long long>(c.m) * c.n, c.batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                   what);
  }
  for (const auto& [off, slot] : plan.outputs)
    NNC_CUDA_CHECK(launch_gemm_store_f32(s, t.kernel_type, plan.store, c.c + off * es, sums + slot * plan.per_slot),
                   what);
}

// Every tensor in GPU memory on one device, one floating type cuBLAS takes.
bool on_one_device(ccv_nnc_tensor_t* const* ts, int n, int* device, int* datatype) {
  for (int i = 0; i < n; i++) {
    const ccv_nnc_tensor_t* t = ts[i];
    if (!t) continue;
    if (CCV_IS_TENSOR_MULTIVIEW(t) || CCV_TENSOR_GET_MEMORY(t->info.type) != CCV_TENSOR_GPU_MEMORY) return false;
    const int d = CCV_TENSOR_GET_DEVICE_ID(t->info.type), dt = CCV_GET_DATA_TYPE(t->info.datatype);
    if (*device < 0) *device = d, *datatype = dt;
    if (d != *device || dt != *datatype) return false;
  }
  return *device >= 0 &&
         (*datatype == CCV_32F || *datatype == CCV_16F || *datatype == CCV_16BF || *datatype == CCV_64F);
}

bool accept_gemm(const ccv_nnc_cmd_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                 ccv_nnc_tensor_t* const* outputs, int output_size) {
  int device = -1, datatype = 0;
  return input_size >= 2 && output_size >= 1 && on_one_device(inputs, input_size, &device, &datatype) &&
         on_one_device(outputs, output_size, &device, &datatype);
}

bool accept_gemm_backward(const ccv_nnc_cmd_t&, ccv_nnc_tensor_t* const* inputs, int input_size,
                          ccv_nnc_tensor_t* const* outputs, int output_size) {
  int device = -1, datatype = 0;
  // bias and b (inputs 3, 4) are never read: whatever they are, they do not matter.
  return input_size >= 1 && output_size >= 1 &&
         on_one_device(inputs, input_size < 3 ? input_size : 3, &device, &datatype) &&
         on_one_device(outputs, output_size, &device, &datatype);
}

int device_of(ccv_nnc_tensor_t* const* ts, int n) {
  for (int i = 0; i < n; i++)
    if (ts[i]) return CCV_TENSOR_GET_DEVICE_ID(ts[i]->info.type);
  return 0;
}

NNC_KERNEL(gemm) {
  static const char* what = "GEMM_FORWARD (GPU_CUBLAS)";
  gemm_plan::Forward f;
  std::string why;
  if (!gemm_plan::forward(cmd, inputs, input_size, outputs, output_size, &f, &why))
    fail(CCV_NNC_EXEC_NO_KERNEL, "%s: %s", what, why.c_str());
  const Types t = types_of(cmd, CCV_GET_DATA_TYPE(outputs[0]->info.datatype));
  const int device = CCV_TENSOR_GET_DEVICE_ID(outputs[0]->info.type);
  const cudaStream_t s = stream_of(stream_context, device, what);
  bool filled = false;
  if (f.bias == gemm_plan::BiasMode::epilogue && !f.gemm.bases.empty() && !lt_disabled()) {
    if (lt_bias_call(device, s, f.gemm, t, f.bias_data, what)) {
      finish(stream_context, s, what);
      return CCV_NNC_EXEC_SUCCESS;
    }
  }
  if (f.bias != gemm_plan::BiasMode::none) {
    NNC_CUDA_CHECK(launch_gemm_bias_fill(s, t.kernel_type, f.fill, f.gemm.c, f.bias_data), what);
    filled = true;
  }
  if (!f.gemm.bases.empty()) run_call(cublas_handle(stream_context, device, s, what), f.gemm, t, filled, what);
  finish(stream_context, s, what);
  return CCV_NNC_EXEC_SUCCESS;
}

// libnnc's |g|a|w|bias|b| -> |da|dw|dbias|, for b = op(a) op(w) + bias.
NNC_KERNEL(gemm_backward) {
  static const char* what = "GEMM_BACKWARD (GPU_CUBLAS)";
  gemm_plan::Backward b;
  std::string why;
  if (!gemm_plan::backward(cmd, inputs, input_size, outputs, output_size, &b, &why))
    fail(CCV_NNC_EXEC_NO_KERNEL, "%s: %s", what, why.c_str());
  const Types t = types_of(cmd, CCV_GET_DATA_TYPE(inputs[0]->info.datatype));
  const int device = device_of(outputs, output_size);
  const cudaStream_t s = stream_of(stream_context, device, what);
  if ((b.da && !b.da_gemm.bases.empty()) || (b.dw && !b.dw_gemm.bases.empty())) {
    cublasHandle_t h = cublas_handle(stream_context, device, s, what);
    const bool half = (t.storage == CUDA_R_16F || t.storage == CUDA_R_16BF) && t.compute == CUBLAS_COMPUTE_32F;
    for (const gemm_plan::Call* c : {b.da ? &b.da_gemm : nullptr, b.dw ? &b.dw_gemm : nullptr}) {
      if (!c) continue;
      if (half && gemm_plan::has_partial_sums(*c))
        run_call_f32_sums(h, s, *c, t, what);
      else
        run_call(h, *c, t, false, what);
    }
  }
  if (b.dbias) {
    const gpu::ReduceLaunch l = gpu::choose_reduce_sliced(b.reduce);
    const size_t acc = t.kernel_type == kF64 ? sizeof(double) : sizeof(float);
    StreamBlock scratch(static_cast<size_t>(gpu::reduce_scratch_elements(l, b.reduce)) * acc, s, what);
    NNC_CUDA_CHECK(launch_gemm_bias_grad(s, t.kernel_type, b.reduce, l, b.dbias_data, b.g_data, scratch.get()), what);
  }
  finish(stream_context, s, what);
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace

void register_gemm(Registry& r) {
  KernelTraits t;
  t.backend = CCV_NNC_BACKEND_GPU_CUBLAS;
  t.datatypes = CCV_32F | CCV_16F | CCV_16BF | CCV_64F;
  t.memory = CCV_TENSOR_GPU_MEMORY;
  r.add_kernels(t.accepting(accept_gemm), {{CCV_NNC_GEMM_FORWARD, gemm}});
  r.add_kernels(t.accepting(accept_gemm_backward), {{CCV_NNC_GEMM_BACKWARD, gemm_backward}});
}

}  // namespace nnc::cuda
