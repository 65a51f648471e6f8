// Shared by the MPI tests on the pretend GPU (gpu_collectives.cpp,
// gpu_train_dp.cpp): a check that counts failures, tensors on the pretend
// GPU filled and read back through DATA_TRANSFER (the pretend device memory
// is unreadable from the host, as a real GPU's), small command helpers.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "fakegpu.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace gpu_mpi {

inline int failed = 0;
#define CHECK(cond, ...)                                      \
  do {                                                        \
    if (!(cond)) {                                            \
      gpu_mpi::failed++;                                      \
      std::printf("%s:%d: %s: ", __FILE__, __LINE__, #cond);  \
      std::printf(__VA_ARGS__);                               \
      std::printf(" (%s)\n", ccv_nnc_error_message());        \
    }                                                         \
  } while (0)

// This process's rank, the communicator's size, and the pretend GPU it uses.
inline int g_rank = 0, g_size = 1, g_device = 0;

// The start of each program: the pretend GPU (two devices) installed before
// the registry, then a communicator over MPI_COMM_WORLD with a 120 s timeout,
// and g_rank, g_size, g_device (rank % 2) set. NULL when the build has no MPI
// (nothing to test: says so) or the communicator fails (counted).
inline ccv_nnc_comm_t* start(const char* name) {
  const bool installed = nnc_fakegpu::install(2);
  ccv_nnc_init();
  CHECK(installed, "the pretend GPU is installed before the registry");
  if (!ccv_nnc_comm_mpi_available()) {
    std::printf("%s: built without MPI; nothing to test\n", name);
    return nullptr;
  }
  ccv_nnc_comm_t* comm = ccv_nnc_comm_new_mpi(nullptr);
  CHECK(comm, "communicator");
  if (!comm) return nullptr;
  g_rank = ccv_nnc_comm_rank(comm), g_size = ccv_nnc_comm_size(comm);
  g_device = g_rank % 2;
  ccv_nnc_comm_set_timeout(comm, 120);
  return comm;
}

inline ccv_nnc_tensor_param_t params(int device, int datatype, std::vector<int> dims) {
  ccv_nnc_tensor_param_t p{};
  p.type = device < 0 ? static_cast<int>(CCV_TENSOR_CPU_MEMORY) : (static_cast<int>(CCV_TENSOR_GPU_MEMORY) | (device << 8));
  p.format = CCV_TENSOR_FORMAT_NHWC;
  p.datatype = datatype;
  for (size_t i = 0; i < dims.size(); i++) p.dim[i] = dims[i];
  return p;
}

inline ccv_nnc_cmd_t cmd(uint32_t id) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  return ccv_nnc_cmd(id, nullptr, p, 0);
}

inline int exec(ccv_nnc_cmd_t c, std::vector<ccv_nnc_tensor_t*> in, std::vector<ccv_nnc_tensor_t*> out,
                ccv_nnc_stream_context_t* stream = nullptr) {
  return ccv_nnc_cmd_exec(c, ccv_nnc_no_hint, 0, in.data(), static_cast<int>(in.size()), out.data(), static_cast<int>(out.size()),
                          stream);
}

inline double load(const ccv_nnc_tensor_t* t, size_t i) {
  switch (t->info.datatype) {
    case CCV_32F: return t->data.f32[i];
    case CCV_64F: return t->data.f64[i];
    case CCV_32S: return t->data.i32[i];
    case CCV_16BF: {
      const uint32_t bits = static_cast<uint32_t>(reinterpret_cast<const uint16_t*>(t->data.u8)[i]) << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    default: {
      float f;
      ccv_half_precision_to_float(reinterpret_cast<uint16_t*>(t->data.f16) + i, &f, 1);
      return f;
    }
  }
}

// Values stored here are exact in every type used (multiples of 1/4 below 64).
inline void store(ccv_nnc_tensor_t* t, size_t i, double v) {
  switch (t->info.datatype) {
    case CCV_32F: t->data.f32[i] = static_cast<float>(v); break;
    case CCV_64F: t->data.f64[i] = v; break;
    case CCV_32S: t->data.i32[i] = static_cast<int>(std::lrint(v)); break;
    case CCV_16BF: {
      const float f = static_cast<float>(v);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      reinterpret_cast<uint16_t*>(t->data.u8)[i] = static_cast<uint16_t>(bits >> 16);
      break;
    }
    default: {
      float f = static_cast<float>(v);
      ccv_float_to_half_precision(&f, reinterpret_cast<uint16_t*>(t->data.f16) + i, 1);
    }
  }
}

// A host copy of a (GPU or CPU, packed) tensor, and a host tensor's values into one.
inline ccv_nnc_tensor_t* to_cpu(ccv_nnc_tensor_t* t) {
  ccv_nnc_tensor_param_t p = t->info;
  p.type = CCV_TENSOR_CPU_MEMORY;
  ccv_nnc_tensor_t* h = ccv_nnc_tensor_new(nullptr, p, 0);
  if (exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {t}, {h}) != CCV_NNC_EXEC_SUCCESS) std::printf("to_cpu: %s\n", ccv_nnc_error_message());
  return h;
}
inline void from_cpu(ccv_nnc_tensor_t* h, ccv_nnc_tensor_t* t) {
  if (exec(cmd(CCV_NNC_DATA_TRANSFER_FORWARD), {h}, {t}) != CCV_NNC_EXEC_SUCCESS) std::printf("from_cpu: %s\n", ccv_nnc_error_message());
}

}  // namespace gpu_mpi
