// A stand-in GPU for tests on machines without one (CI). "Device memory" is
// host memory handed out through the hook the CUDA module installs
// (core/device.hpp), on `devices` pretend devices, and every command gets a
// GPU_REF kernel that runs its CPU_REF kernel on GPU tensors. What it checks
// is everything around the kernels: that tensors, graph arenas, model
// parameters and dataframe batches land in GPU memory on the right device,
// that transfers are where they must be, and — because the pretend device
// memory is kept unreadable (PROT_NONE) except while one of its kernels runs —
// that no host code reads or writes GPU memory directly: such code crashes
// here as it would on a real GPU.
//
// GPU stream contexts (CCV_STREAM_CONTEXT_GPU) are pretend too: a kernel
// queued on one does not run until the host waits (for the stream, a signal,
// or before device memory is freed), and then the queued kernels of all
// streams run in a random order that honours only each stream's own order
// and the device-side waits between streams. Work that lacks a wait it needs
// then runs too early and gives wrong results, as it would on a GPU.
//
// install() must run before ccv_nnc_init (or anything else that builds the
// command registry); it returns false if that is too late. Not for CUDA
// builds: the real module installs its own device memory.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nnc/ccv_nnc.h"

namespace nnc_fakegpu {

// Each command's GPU_REF kernel runs its CPU_REF kernel, or with
// prefer_optimised its CPU_OPT one (faster, for whole programs).
bool install(int devices, bool prefer_optimised = false);
// Bytes of pretend device memory held now on `device`, and allocations made.
size_t bytes_in_use(int device);
size_t allocations(int device);
// Kernels run through the pretend GPU since install.
size_t kernels_run();
// Kernels queued on pretend GPU streams since install.
size_t kernels_queued();
// The seed of the random order in which queued work runs.
void set_stream_order_seed(uint32_t seed);
// CONVOLUTION_FORWARD / BACKWARD and EWSUM_FORWARD also have a pretend
// GPU_CUDNN kernel, preferred to GPU_REF and doing the same work. The one of
// `backend` (CCV_NNC_BACKEND_GPU_CUDNN or _GPU_REF) refuses (throws
// nnc::Declined, core/declined.hpp) the next `calls` calls of `cmd` (-1: every
// call; 0: none, the default) before queueing anything, as cuDNN may refuse a
// call it had seemed to take. declines() counts the refusals.
void set_declining(uint32_t cmd, int calls, uint32_t backend = CCV_NNC_BACKEND_GPU_CUDNN);
size_t declines();
// Host bytes pinned (ccv_nnc_tensor_pin_memory) now. A transfer on a pretend
// stream from or to pinned memory is queued like device work (the host
// memory is read or written when the stream gets there, as with CUDA).
size_t pinned_bytes();

}  // namespace nnc_fakegpu
