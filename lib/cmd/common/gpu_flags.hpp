// The words for the bad-input flags of the GPU_REF kernels that check their
// input on the device (cuda/*_gpu.cpp, class DeviceFlag in cuda/ewgpu.hpp).
// On a synchronous call each backend reads its flag back and words the error
// itself; on a GPU stream context the flag is a slot of the stream's device
// error log (core/stream_errors.hpp), read back when the host next waits for
// the stream, after the call has returned: the words then come from here, by
// command. Each kernel encodes the position it found its own way (first + 1,
// INT_MAX - first, ...); decode_gpu_flag undoes it. A NEW user of DeviceFlag
// adds its command here (test/unit/stream_errors checks every row).
//
//   describe_gpu_flag("CCV_NNC_INDEX_SELECT_FORWARD", 6)
//     -> "row index out of range: indices[5] is outside the rows"
//
// Host code, no CUDA.
#pragma once

#include <string>

namespace nnc {

// The words for a nonzero flag `value` of a call of `what` (a command's name
// as ccv_nnc_cmd_name gives it: "CCV_NNC_<FAMILY>_FORWARD / _BACKWARD"): the
// kind of error, a colon, and the position as the synchronous call words it.
// A command not listed: "bad input found on the device (flag <value>)".
std::string describe_gpu_flag(const char* what, int value);

}  // namespace nnc
