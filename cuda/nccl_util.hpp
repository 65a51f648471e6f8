// NCCL helpers shared by the GPU_NCCL kernels (nccl.cpp: the GPUs of one
// process; nccl_across.cpp: across processes): a status turned into an error
// with NCCL's message, and our datatypes as NCCL's.
#pragma once

#include <nccl.h>

#include "core/error.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc::cuda {

inline void check_nccl(ncclResult_t r, const char* what, const char* call) {
  if (r != ncclSuccess) fail(CCV_NNC_EXEC_INVALID, "%s: %s failed: %s", what, call, ncclGetErrorString(r));
}
#define NNC_NCCL_CHECK(call, what) ::nnc::cuda::check_nccl((call), (what), #call)

inline bool nccl_type(int datatype, ncclDataType_t* t) {
  switch (CCV_GET_DATA_TYPE(datatype)) {
    case CCV_32F: *t = ncclFloat32; return true;
    case CCV_64F: *t = ncclFloat64; return true;
    case CCV_16F: *t = ncclFloat16; return true;
    case CCV_16BF: *t = ncclBfloat16; return true;
    case CCV_32S: *t = ncclInt32; return true;
    case CCV_64S: *t = ncclInt64; return true;
    case CCV_8U: *t = ncclUint8; return true;
    default: return false;
  }
}

}  // namespace nnc::cuda
