// gpu_flash.hpp's host side: the flash attention kernels' mode (from
// NNC_GPU_ATTN_FLASH) and eligibility.
#include "cmd/common/gpu_flash.hpp"

#include <cstdlib>
#include <cstring>

#include "nnc/ccv_nnc.h"

namespace nnc::gpu {

FlashMode flash_mode(const char* v) {
  if (v && std::strcmp(v, "0") == 0) return FlashMode::kOff;
  if (v && std::strcmp(v, "1") == 0) return FlashMode::kForce;
  return FlashMode::kAuto;
}

FlashMode flash_mode_from_env() { return flash_mode(std::getenv("NNC_GPU_ATTN_FLASH")); }

bool flash_mma_allowed(const char* v) { return !(v && std::strcmp(v, "0") == 0); }

bool flash_mma_allowed_from_env() { return flash_mma_allowed(std::getenv("NNC_GPU_ATTN_MMA")); }

int flash_mma_splits_for(const AttnShape& s, const char* v, int rows) {
  if (v && *v) {
    const long n = std::strtol(v, nullptr, 10);
    return n < 1 ? 1 : n > kFlashMmaMaxSplits ? kFlashMmaMaxSplits : static_cast<int>(n);
  }
  return flash_mma_splits(flash_mma_items(s, rows), (s.Sk + kFlashMmaKeys - 1) / kFlashMmaKeys);
}

int flash_mma_fwd_rows(const AttnShape& s, bool async, const char* v) {
  if (!async || s.has_mask) return kFlashMmaRows;
  if (v && std::strcmp(v, "64") == 0) return kFlashMmaRows;
  if (v && std::strcmp(v, "128") == 0) return kFlashMmaWideRows;
  const bool prefill = static_cast<int64_t>(flash_mma_group(s)) * s.Sq > kFlashMmaRows;
  return prefill && flash_mma_bucket(s.D, s.Dv) <= 64 ? kFlashMmaWideRows : kFlashMmaRows;
}

bool flash_mma_fwd_narrow(int bucket, int rows, const char* v) {
  return bucket > 64 && rows == kFlashMmaRows && v && std::strcmp(v, "32") == 0;
}

bool flash_mma_fwd_narrow_from_env(int bucket, int rows) {
  return flash_mma_fwd_narrow(bucket, rows, std::getenv("NNC_GPU_ATTN_FWD_KEYS"));
}

int flash_mma_fwd_rows_from_env(const AttnShape& s, bool async) {
  return flash_mma_fwd_rows(s, async, std::getenv("NNC_GPU_ATTN_FWD_ROWS"));
}

int flash_mma_splits_from_env(const AttnShape& s, int rows) {
  return flash_mma_splits_for(s, std::getenv("NNC_GPU_ATTN_SPLITS"), rows);
}

bool flash_mma_forward_plan(const AttnPlan& a, bool allowed, int* bucket, std::string* why) {
  auto refuse = [&](const char* r) {
    if (why) *why = r;
    return false;
  };
  if (!allowed) return refuse("NNC_GPU_ATTN_MMA=0");
  if (a.datatype != CCV_16F && a.datatype != CCV_16BF) return refuse("the tensor-core kernels take 16F or 16BF");
  if (a.fused) return refuse("the flash kernels do not take the fused unify-head projection");
  const int b = flash_mma_bucket(a.s.D, a.s.Dv);
  if (!b || a.s.D < 1 || a.s.Dv < 1) return refuse("the tensor-core kernels take head sizes D and Dv from 1 to 128");
  if (bucket) *bucket = b;
  return true;
}

bool flash_plan(const AttnPlan& a, int64_t shmem_limit, FlashGeom* g, std::string* why) {
  auto refuse = [&](const char* r) {
    if (why) *why = r;
    return false;
  };
  if (a.datatype != CCV_32F && a.datatype != CCV_16F && a.datatype != CCV_16BF)
    return refuse("the flash kernels take 32F, 16F or 16BF");
  if (a.fused) return refuse("the flash kernels do not take the fused unify-head projection");
  if (a.s.D < 1 || a.s.Dv < 1 || a.s.D > kFlashMaxHead || a.s.Dv > kFlashMaxHead)
    return refuse("the flash kernels take head sizes D and Dv from 1 to 256");
  if (a.s.H < 1 || a.s.Hk < 1 || a.s.H % a.s.Hk != 0) return refuse("the kv heads must divide the query heads");
  FlashGeom x;
  if (!flash_geometry(a.s.D, a.s.Dv, shmem_limit, &x))
    return refuse("the flash kernels' tiles for these head sizes do not fit the shared memory limit");
  if (g) *g = x;
  return true;
}

}  // namespace nnc::gpu
