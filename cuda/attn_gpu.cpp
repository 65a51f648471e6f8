// GPU_REF SCALED_DOT_PRODUCT_ATTENTION forward and backward, with the
// CPU family's contract (lib/cmd/attention/attention.cpp: slots, shapes,
// causal bottom-right, the broadcast mask, fewer kv heads, the fused
// unify-head projection, lse [B, H, Sq] or [Sq, B] as saved for the backward,
// which either backend's backward reads). 32F, 16F and 16BF tensors (one
// type for all but lse; lse 32F, 16F or 16BF), any strides, fp32
// accumulation whatever scaled_dot_product_attention.flags asks. 64F (which
// CPU_REF takes) is not taken on the GPU.
//
// The algorithm (cmd/common/gpu_attn.hpp, whose math the CPU tests check):
// per chunk of (batch, kv head) units, one block per query row writes the
// row's probabilities into float scratch (at most kChunkBytes, or one unit's
// G Sq Sk floats, from the module's caching allocator on the call's stream),
// then o; the backward recomputes the
// probabilities from the saved lse (or recomputes lse when not given, and the
// attention result for a fused call), ds, then dq, dk, dv one thread per
// element. Not a fused flash kernel: memory traffic is O(B H Sq Sk) floats.
//
// Those row kernels are the fallback. What gpu::flash_plan takes (not fused,
// head sizes 1 .. 256; cmd/common/gpu_flash.hpp) runs on the fused flash
// kernels instead (flash_kernels.cu: online softmax over key tiles in shared
// memory, O(S) memory, FlashAttention-2's backward with a separate dq pass, no
// atomics). NNC_GPU_ATTN_FLASH=0 forces the row kernels, =1 the flash kernels
// (an error saying why when they decline the call).
#include <cstdlib>
#include <memory>
#include <string>

#include "cmd/attention/attention.hpp"
#include "cmd/common/gpu_attn.hpp"
#include "core/error.hpp"
#include "core/kernel.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"
#include "cuda/attn_kern.hpp"
#include "cuda/cuda.hpp"
#include "cuda/ewgpu.hpp"
#include "cuda/flash_kern.hpp"
#include "cuda/flash_mma_bwd.hpp"
#include "cuda/flash_tiled.hpp"

namespace nnc::cuda {

namespace {

constexpr int64_t kChunkBytes = int64_t{512} << 20;

// The scratch limit per chunk: kChunkBytes, or NNC_GPU_ATTN_CHUNK_BYTES from
// the environment (tests set it small to run many chunks).
int64_t chunk_bytes() {
  const char* e = std::getenv("NNC_GPU_ATTN_CHUNK_BYTES");
  if (!e || !*e) return kChunkBytes;
  const long long v = std::atoll(e);
  return v > 0 ? static_cast<int64_t>(v) : kChunkBytes;
}

bool accept_attn(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
                 ccv_nnc_tensor_t* const* outputs, int output_size) {
  if (!on_one_gpu(inputs, input_size, outputs, output_size, nullptr)) return false;
  const int base = cmd.cmd == CCV_NNC_SCALED_DOT_PRODUCT_ATTENTION_BACKWARD ? 3 : 0;
  if (input_size <= base || !inputs[base]) return false;
  // Only q's type here: the family's checks (attn::problem) then refuse
  // mixed types with a message naming both.
  const int dt = CCV_GET_DATA_TYPE(inputs[base]->info.datatype);
  return dt == CCV_32F || dt == CCV_16F || dt == CCV_16BF;
}

gpu::AttnPlan plan_of(const attn::Problem& p, const char* what) {
  gpu::AttnPlan a;
  std::string why;
  if (!gpu::attn_plan(p, &a, &why)) fail(CCV_NNC_EXEC_NO_KERNEL, "%s: %s", what, why.c_str());
  return a;
}

AttnRows rows_of(const attn::Problem& p, const gpu::AttnPlan& a) {
  AttnRows r;
  r.s = a.s;
  r.type = gpu_type(a.datatype);
  r.q = p.q.data, r.k = p.k.data, r.v = p.v.data, r.mask = p.mask.data;
  return r;
}

// Runs f for each chunk of `chunk` (batch, kv head) units.
template <class F>
void each_chunk(int64_t units, int64_t chunk, AttnRows& r, const F& f) {
  for (int64_t u0 = 0; u0 < units; u0 += chunk) {
    r.u0 = u0, r.u1 = u0 + chunk < units ? u0 + chunk : units;
    f();
  }
}

size_t floats(int64_t n) { return static_cast<size_t>(n) * sizeof(float); }

// Whether the call runs on the flash kernels (their geometry in *g), by
// NNC_GPU_ATTN_FLASH and gpu::flash_plan; with =1 a declined call fails.
bool use_flash(const gpu::AttnPlan& a, gpu::FlashGeom* g, const char* what) {
  const gpu::FlashMode mode = gpu::flash_mode_from_env();
  if (mode == gpu::FlashMode::kOff) return false;
  std::string why;
  if (gpu::flash_plan(a, gpu::kFlashShmemLimit, g, &why)) return true;
  if (mode == gpu::FlashMode::kForce)
    fail(CCV_NNC_EXEC_NO_KERNEL, "%s: NNC_GPU_ATTN_FLASH=1 but %s", what, why.c_str());
  return false;
}

FlashArgs flash_args(const attn::Problem& p, const gpu::AttnPlan& a, const gpu::FlashGeom& g) {
  FlashArgs f;
  f.s = a.s;
  f.g = g;
  f.type = gpu_type(a.datatype);
  f.q = p.q.data, f.k = p.k.data, f.v = p.v.data, f.mask = p.mask.data;
  return f;
}

// Queues f's forward on the flash kernels: the tensor-core ones for what
// gpu::flash_mma_forward_plan takes (16F / 16BF, heads up to 128, unless
// NNC_GPU_ATTN_MMA=0), their keys split over blocks when the call has few
// work items (scratch in *part, which the caller keeps until c.done()),
// else the scalar ones.
void queue_flash_forward(const gpu::AttnPlan& a, FlashArgs f, const Call& c, std::unique_ptr<StreamBlock>* part,
                         const char* what) {
  int bucket = 0;
  if (!gpu::flash_mma_forward_plan(a, gpu::flash_mma_allowed_from_env(), &bucket, nullptr)) {
    // The register-tiled kernels (heads up to 128) unless NNC_GPU_ATTN_F32=old / bwd.
    c.check(flash_tiled_takes_from_env(f.s.D, f.s.Dv, false) ? launch_flash_tiled_forward(c.s, f)
                                                             : launch_flash_forward(c.s, f));
    return;
  }
  const bool async = gpu::flash_mma_fwd_async(f.type, f.s, f.k, f.v, std::getenv("NNC_GPU_ATTN_ASYNC"));
  f.rows = gpu::flash_mma_fwd_rows_from_env(f.s, async);
  f.narrow = gpu::flash_mma_fwd_narrow_from_env(bucket, f.rows);
  f.splits = gpu::flash_mma_splits_from_env(f.s, f.rows);
  if (f.splits > 1) {
    *part = std::make_unique<StreamBlock>(floats(gpu::flash_mma_split_floats(f.s, f.splits)), c.s, what);
    f.part = static_cast<float*>((*part)->get());
  }
  c.check(launch_flash_mma_forward(c.s, f, bucket));
}

void flash_forward(const attn::Problem& p, const gpu::AttnPlan& a, const gpu::FlashGeom& g, const Call& c,
                   const char* what) {
  FlashArgs f = flash_args(p, a, g);
  f.lse = p.lse.data, f.lse_type = gpu_type(a.lse_type);
  f.o = p.o.data, f.o_view = a.o, f.o_type = f.type;
  std::unique_ptr<StreamBlock> part;
  queue_flash_forward(a, f, c, &part, what);
  c.done();
}

// The backward: lse and o as saved, or (when either is missing) recomputed
// by the flash forward into float scratch; then delta, dk / dv and dq.
void flash_backward(const attn::Problem& p, const gpu::AttnPlan& a, const gpu::FlashGeom& g, const Call& c,
                    const char* what) {
  if (!p.dq.data && !p.dk.data && !p.dv.data) return c.done();
  const bool need_fwd = !p.lse.data || !p.o.data;
  const int64_t rows = static_cast<int64_t>(p.B) * p.H * p.Sq;
  StreamBlock obuf(need_fwd ? floats(rows * p.Dv) : 0, c.s, what);
  StreamBlock lsebuf(need_fwd ? floats(rows) : 0, c.s, what);
  StreamBlock dbuf(floats(rows), c.s, what);
  std::unique_ptr<StreamBlock> part;  // the recomputed forward's split scratch
  FlashArgs f = flash_args(p, a, g);
  if (need_fwd) {
    f.s.lse = gpu::attn_packed_lse(p.Sq, p.H);
    f.lse = lsebuf.get(), f.lse_type = kF32;
    f.o = obuf.get(), f.o_view = gpu::attn_packed(p.Sq, p.H, p.Dv), f.o_type = kF32;
    queue_flash_forward(a, f, c, &part, what);
    f.O = f.o, f.O_view = f.o_view, f.O_type = kF32;
    f.o = nullptr;
  } else {
    f.lse = p.lse.data, f.lse_type = gpu_type(a.lse_type);
    f.O = p.o.data, f.O_view = a.o, f.O_type = f.type;
  }
  f.dO = p.g.data, f.dO_view = a.g, f.dO_type = f.type;
  f.delta = static_cast<float*>(dbuf.get());
  f.dq = p.dq.data, f.dq_view = a.dq;
  f.dk = p.dk.data, f.dk_view = a.dk;
  f.dv = p.dv.data, f.dv_view = a.dv;
  f.out_type = f.type;
  // 16F / 16BF on the tensor-core kernels (flash_mma_bwd.hpp) unless
  // NNC_GPU_ATTN_MMA=0 or the head sizes are past theirs.
  gpu::FlashMmaBwdGeom mg;
  const bool mma = (f.type == kF16 || f.type == kBF16) && gpu::flash_mma_allowed_from_env() &&
                   gpu::flash_mma_bwd_geometry(p.D, p.Dv, &mg);
  c.check(mma                                               ? launch_flash_mma_backward(c.s, f, mg)
          : flash_tiled_takes_from_env(f.s.D, f.s.Dv, true) ? launch_flash_tiled_backward(c.s, f)
                                                            : launch_flash_backward(c.s, f));
  c.done();  // while the scratch blocks are alive, as the row path does
}

NNC_KERNEL(attn_forward) {
  static const char* what = "SCALED_DOT_PRODUCT_ATTENTION_FORWARD (GPU_REF)";
  const attn::Problem p = attn::problem(cmd, inputs, input_size, outputs, output_size, false, what);
  const gpu::AttnPlan a = plan_of(p, what);
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  gpu::FlashGeom fg;
  if (use_flash(a, &fg, what)) {
    flash_forward(p, a, fg, c, what);
    return CCV_NNC_EXEC_SUCCESS;
  }
  const int type = gpu_type(a.datatype);
  const int64_t units = static_cast<int64_t>(p.B) * p.Hk, per_unit = static_cast<int64_t>(p.H / p.Hk) * p.Sq * p.Sk;
  const int64_t chunk = gpu::attn_chunk_units(units, per_unit, chunk_bytes());
  const gpu::AttnView packed = gpu::attn_packed(p.Sq, p.H, p.Dv);
  StreamBlock pbuf(floats(chunk * per_unit), c.s, what);
  StreamBlock obuf(a.fused ? floats(static_cast<int64_t>(p.B) * p.Sq * p.H * p.Dv) : 0, c.s, what);
  AttnRows r = rows_of(p, a);
  r.p = static_cast<float*>(pbuf.get());
  r.lse = p.lse.data;
  if (p.lse.data) r.lse_type = gpu_type(a.lse_type);
  if (a.fused) {
    r.o = obuf.get(), r.o_view = packed, r.o_type = kF32;
  } else {
    r.o = p.o.data, r.o_view = a.o, r.o_type = type;
  }
  each_chunk(units, chunk, r, [&] { c.check(launch_attn_forward_rows(c.s, r)); });
  if (a.fused) {
    if (p.o.data)  // qkv, when asked
      c.check(launch_attn_copy(c.s, p.B, p.Sq, p.H, p.Dv, obuf.get(), packed, kF32, p.o.data, a.o, type));
    c.check(launch_attn_proj(c.s, a.proj, static_cast<const float*>(obuf.get()), p.w.data, p.bias, p.y3.data, type));
  }
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(attn_backward) {
  static const char* what = "SCALED_DOT_PRODUCT_ATTENTION_BACKWARD (GPU_REF)";
  const attn::Problem p = attn::problem(cmd, inputs, input_size, outputs, output_size, true, what);
  const gpu::AttnPlan a = plan_of(p, what);
  const Call c(stream_context, device_of(inputs, input_size, outputs, output_size), what);
  gpu::FlashGeom fg;
  if (use_flash(a, &fg, what)) {
    flash_backward(p, a, fg, c, what);
    return CCV_NNC_EXEC_SUCCESS;
  }
  const int type = gpu_type(a.datatype);
  const int64_t units = static_cast<int64_t>(p.B) * p.Hk, per_unit = static_cast<int64_t>(p.H / p.Hk) * p.Sq * p.Sk;
  const int64_t nO = static_cast<int64_t>(p.B) * p.Sq * p.H * p.Dv;
  const bool attention_grads = p.dq.data || p.dk.data || p.dv.data;
  // The forward again when the fused projection needs the attention result
  // (for dw) or no lse was saved.
  const bool need_fwd = (a.fused && p.dw.data) || (attention_grads && !p.lse.data);
  const int64_t chunk = gpu::attn_chunk_units(units, 2 * per_unit, chunk_bytes());
  const gpu::AttnView packed = gpu::attn_packed(p.Sq, p.H, p.Dv);
  StreamBlock pbuf(need_fwd || attention_grads ? floats(chunk * per_unit) : 0, c.s, what);
  StreamBlock dsbuf(attention_grads ? floats(chunk * per_unit) : 0, c.s, what);
  StreamBlock dObuf(attention_grads ? floats(nO) : 0, c.s, what);
  StreamBlock obuf(a.fused && p.dw.data ? floats(nO) : 0, c.s, what);
  StreamBlock lsebuf(need_fwd ? floats(static_cast<int64_t>(p.B) * p.H * p.Sq) : 0, c.s, what);
  AttnRows r = rows_of(p, a);
  r.p = static_cast<float*>(pbuf.get());
  if (need_fwd) {
    r.s.lse = gpu::attn_packed_lse(p.Sq, p.H);
    r.lse = lsebuf.get(), r.lse_type = kF32;
    r.o = obuf.get(), r.o_view = packed, r.o_type = kF32;
    each_chunk(units, chunk, r, [&] { c.check(launch_attn_forward_rows(c.s, r)); });
    r.o = nullptr;
  } else {
    r.lse = p.lse.data, r.lse_type = gpu_type(a.lse_type);
  }
  float* dO = static_cast<float*>(dObuf.get());
  if (a.fused)
    c.check(launch_attn_proj_backward(c.s, a.proj, p.g.data, p.w.data, static_cast<const float*>(obuf.get()), dO,
                                      p.dw.data, a.dw_rs, a.dw_cs, p.dbias, a.dbias_stride, type));
  else if (attention_grads)
    c.check(launch_attn_copy(c.s, p.B, p.Sq, p.H, p.Dv, p.g.data, a.g, type, dO, packed, kF32));
  if (attention_grads) {
    r.dO = dO;
    r.ds = static_cast<float*>(dsbuf.get());
    each_chunk(units, chunk, r, [&] {
      c.check(launch_attn_backward_rows(c.s, r));
      c.check(launch_attn_grads(c.s, r, p.dq.data, a.dq, p.dk.data, a.dk, p.dv.data, a.dv, type));
    });
  }
  c.done();
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace

void register_attn_gpu(Registry& r) {
  KernelTraits t;
  t.backend = CCV_NNC_BACKEND_GPU_REF;
  t.memory = CCV_TENSOR_GPU_MEMORY;
  t.datatypes = CCV_32F | CCV_16F | CCV_16BF;
  r.add_kernels(t.accepting(accept_attn), {{CCV_NNC_SCALED_DOT_PRODUCT_ATTENTION_FORWARD, attn_forward},
                                           {CCV_NNC_SCALED_DOT_PRODUCT_ATTENTION_BACKWARD, attn_backward}});
}

}  // namespace nnc::cuda
