// GPU_REF under CPU emulation (design: CMakeLists.txt here): registers the
// CUDA module (cuda/device.cpp's register_cuda, compiled against the
// emulated runtime) before the library starts, for test_cuda_emu and
// host-cost-emu.
#include <cuda_runtime.h>
#include <sys/mman.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "core/device.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "emu_hooks.hpp"

namespace nnc {
void register_cuda(Registry& r);  // cuda/device.cpp
void register_comm(Registry& r);  // lib/cmd/comm/comm.cpp
}  // namespace nnc

namespace {

int devices() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}
void check_device(int device) {
  if (device < 0 || device >= devices())
    nnc::fail(CCV_NNC_EXEC_INVALID, "gpu-emu: device %d does not exist (%d devices)", device, devices());
}

// EMU_EXACT_MEMORY=1: each GPU tensor an allocation of its own instead of a
// block of the caching allocator's segments, so that a kernel reading or
// writing past a tensor is caught: under AddressSanitizer a malloc of the
// exact size; otherwise the tensor ends (its size rounded up to 8 bytes) where
// an inaccessible page begins, and an access there stops the program with a
// message (tools/test runs one order this way).
#if defined(__SANITIZE_ADDRESS__)
void* exact_alloc(int device, size_t bytes) {
  check_device(device);
  void* p = std::malloc(bytes ? bytes : 1);
  if (!p) nnc::fail(CCV_NNC_EXEC_OOM, "gpu-emu: cannot allocate %zu bytes", bytes);
  emu::device_range(p, bytes ? bytes : 1, device);
  return p;
}
void exact_free(int, void* p) {
  emu::finish_device(-1);  // as cudaFree: queued work (of any device: a copy, a peer) may still use it
  emu::device_range(p, 0, 0);
  std::free(p);
}
void install_fault_message() {}
#else
struct Mapping {
  char* base;
  size_t length;
};
std::mutex g_mutex;
std::map<void*, Mapping> g_mappings;
size_t page_size() {
  static const size_t p = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return p;
}
void* exact_alloc(int device, size_t bytes) {
  check_device(device);
  const size_t data = (bytes + 7) / 8 * 8, pages = (data + page_size() - 1) / page_size() * page_size();
  void* m = mmap(nullptr, pages + page_size(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) nnc::fail(CCV_NNC_EXEC_OOM, "gpu-emu: cannot map %zu bytes", bytes);
  char* base = static_cast<char*>(m);
  mprotect(base + pages, page_size(), PROT_NONE);
  void* p = base + pages - data;
  emu::device_range(p, data ? data : 8, device);
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_mappings[p] = Mapping{base, pages + page_size()};
  return p;
}
void exact_free(int, void* p) {
  emu::finish_device(-1);  // as cudaFree: queued work (of any device: a copy, a peer) may still use it
  const std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_mappings.find(p);
  if (it == g_mappings.end()) return;
  emu::device_range(p, 0, 0);
  munmap(it->second.base, it->second.length);
  g_mappings.erase(it);
}
void on_fault(int sig) {
  static const char msg[] =
      "gpu-emu: memory fault (EMU_EXACT_MEMORY=1: an access past the end of a GPU tensor, if it was in a kernel)\n";
  (void)!write(2, msg, sizeof(msg) - 1);
  signal(sig, SIG_DFL);
  raise(sig);
}
void install_fault_message() {
  signal(SIGSEGV, on_fault);
  signal(SIGBUS, on_fault);
}
#endif
void pin(void* host, size_t bytes) {
  if (cudaHostRegister(host, bytes, cudaHostRegisterDefault) != cudaSuccess)
    nnc::fail(CCV_NNC_EXEC_INVALID, "gpu-emu: cudaHostRegister of %zu bytes failed", bytes);
}
void unpin(void* host) {
  if (cudaHostUnregister(host) != cudaSuccess) cudaGetLastError();
}
const nnc::DeviceMemory kExactMemory = {exact_alloc, exact_free, devices, nullptr, nullptr, pin, unpin};

void late(nnc::Registry& r) {
  nnc::register_cuda(r);
  // A CUDA build registers the module before the COMM_ family, which wraps
  // GPU_NCCL's kernels for communicators across processes; registered late,
  // the module's GPU_NCCL kernels replace those wrappers: the family again.
  nnc::register_comm(r);
  if (emu::env_flag("EMU_EXACT_MEMORY")) {
    nnc::set_device_memory(&kExactMemory);
    install_fault_message();
  }
}

}  // namespace

namespace emu {
// Registered once, before the library builds its registry: at the latest
// when this file's static initialisation runs, earlier if another file's
// asks (the pretend GPU's install() in a test's static initialiser).
bool cuda_registered() {
  static const bool registered = nnc::set_late_registration(late);
  return registered;
}
}  // namespace emu

namespace {
const bool g_registered = emu::cuda_registered();
}  // namespace
