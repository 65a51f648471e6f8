// Device memory, as the CUDA module provides it (cuda/): the core allocates
// GPU tensors through these hooks, so it never links CUDA itself. Without the
// module (no CUDA at build time) they are absent and GPU tensors are refused.
#pragma once

#include <cstddef>

#include "nnc/ccv_nnc.h"

namespace nnc {

struct DeviceMemory {
  void* (*alloc)(int device, size_t bytes);  // throws nnc::Error (OOM) on failure
  void (*free)(int device, void* ptr);
  int (*count)();                            // devices present (0 without a driver or GPU)
  // The allocator's figures (false: nothing to say for that device) and
  // the release of its cache (device -1: every device); NULL if absent.
  bool (*stats)(int device, ccv_nnc_gpu_memory_stats_t* out) = nullptr;
  size_t (*release_cached)(int device) = nullptr;
  // Page-locks host memory for transfers that need not stage it (CUDA:
  // cudaHostRegister; throws nnc::Error on failure), and undoes it; NULL if
  // absent.
  void (*pin)(void* host, size_t bytes) = nullptr;
  void (*unpin)(void* host) = nullptr;
};

// Installed once by the CUDA module when the library initialises.
void set_device_memory(const DeviceMemory* memory);
const DeviceMemory* device_memory();

}  // namespace nnc
