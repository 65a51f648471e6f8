// Device memory, as the CUDA module provides it (cuda/): the core allocates
// GPU tensors through these hooks, so it never links CUDA itself. Without the
// module (no CUDA at build time) they are absent and GPU tensors are refused.
#pragma once

#include <cstddef>

namespace nnc {

struct DeviceMemory {
  void* (*alloc)(int device, size_t bytes);  // throws nnc::Error (OOM) on failure
  void (*free)(int device, void* ptr);
  int (*count)();                            // devices present (0 without a driver or GPU)
};

// Installed once by the CUDA module when the library initialises.
void set_device_memory(const DeviceMemory* memory);
const DeviceMemory* device_memory();

}  // namespace nnc
