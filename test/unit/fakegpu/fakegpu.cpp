// The pretend GPU (fakegpu.hpp).
#include "fakegpu.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/device.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "nnc/ccv_nnc.h"

namespace nnc_fakegpu {
namespace {

struct Block {
  size_t mapped;  // bytes mapped (whole pages)
  size_t bytes;   // bytes asked for
  int device;
};

std::mutex g_mutex;
int g_devices = 0;
std::map<void*, Block> g_blocks;  // every live allocation
std::vector<size_t> g_in_use, g_allocations;
int g_running = 0;  // kernels running now: memory is readable while > 0
std::atomic<size_t> g_kernels{0};

// The CPU kernel each command runs on pretend GPU tensors.
std::unordered_map<uint32_t, nnc::Kernel> g_cpu;

size_t page() {
  static const size_t p = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return p;
}

void protect_all(int prot) {
  for (auto& [p, b] : g_blocks) mprotect(p, b.mapped, prot);
}

void* alloc(int device, size_t bytes) {
  if (device < 0 || device >= g_devices)
    nnc::fail(CCV_NNC_EXEC_INVALID, "fake GPU: device %d does not exist (%d devices)", device, g_devices);
  const size_t mapped = (bytes + page() - 1) / page() * page() + page();
  void* p = mmap(nullptr, mapped, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) nnc::fail(CCV_NNC_EXEC_OOM, "fake GPU: cannot map %zu bytes", bytes);
  const std::lock_guard<std::mutex> lock(g_mutex);
  if (g_running > 0) mprotect(p, mapped, PROT_READ | PROT_WRITE);
  g_blocks[p] = Block{mapped, bytes, device};
  g_in_use[static_cast<size_t>(device)] += bytes;
  g_allocations[static_cast<size_t>(device)]++;
  return p;
}

void release(int device, void* p) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_blocks.find(p);
  if (it == g_blocks.end()) return;
  if (it->second.device == device) g_in_use[static_cast<size_t>(device)] -= it->second.bytes;
  munmap(p, it->second.mapped);
  g_blocks.erase(it);
}

int count() { return g_devices; }

const nnc::DeviceMemory kMemory = {alloc, release, count};

bool is_gpu(const ccv_nnc_tensor_t* t) {
  return t && CCV_TENSOR_GET_MEMORY(t->info.type) == CCV_TENSOR_GPU_MEMORY;
}

// DATA_TRANSFER moves between host and device; every other command takes
// GPU tensors only, as the real GPU kernels do. At least one must be on the GPU.
bool accept(const ccv_nnc_cmd_t& cmd, ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs,
            int output_size) {
  const auto it = g_cpu.find(cmd.cmd);
  if (it == g_cpu.end()) return false;
  const bool mixed_ok = cmd.cmd == CCV_NNC_DATA_TRANSFER_FORWARD || cmd.cmd == CCV_NNC_DATA_TRANSFER_BACKWARD;
  bool any = false;
  for (int i = 0; i < input_size + output_size; i++) {
    const ccv_nnc_tensor_t* t = i < input_size ? inputs[i] : outputs[i - input_size];
    if (!t) continue;
    if (is_gpu(t)) {
      any = true;
    } else if (!mixed_ok) {
      return false;
    }
  }
  const nnc::Kernel& k = it->second;
  return any && (!k.accept || k.accept(cmd, inputs, input_size, outputs, output_size));
}

int exec(const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t hint, const int flags, ccv_nnc_tensor_t* const* inputs,
         const int input_size, ccv_nnc_tensor_t* const* outputs, const int output_size,
         ccv_nnc_stream_context_t* const stream_context) {
  const nnc::Kernel& k = g_cpu.at(cmd.cmd);
  {
    const std::lock_guard<std::mutex> lock(g_mutex);
    if (g_running++ == 0) protect_all(PROT_READ | PROT_WRITE);
  }
  g_kernels++;
  ccv_nnc_cmd_t c = cmd;
  c.backend = k.backend;
  int status;
  try {
    status = k.exec(c, hint, flags, inputs, input_size, outputs, output_size, stream_context);
  } catch (...) {
    const std::lock_guard<std::mutex> lock(g_mutex);
    if (--g_running == 0) protect_all(PROT_NONE);
    throw;
  }
  const std::lock_guard<std::mutex> lock(g_mutex);
  if (--g_running == 0) protect_all(PROT_NONE);
  return status;
}

void late(nnc::Registry& r) {
  nnc::set_device_memory(&kMemory);
  for (uint32_t cmd : r.commands()) {
    const nnc::Kernel* k = r.kernel(cmd, CCV_NNC_BACKEND_CPU_REF);
    if (!k) k = r.kernel(cmd, CCV_NNC_BACKEND_CPU_OPT);
    if (!k || !k->exec) continue;
    g_cpu[cmd] = *k;
    nnc::Kernel m = *k;
    m.backend = CCV_NNC_BACKEND_GPU_REF;
    m.tensor_memory = CCV_TENSOR_CPU_MEMORY | CCV_TENSOR_GPU_MEMORY;
    m.exec = exec;
    m.accept = accept;
    m.autotune = nullptr;
    m.algorithms = 1;
    r.add_kernel(m);
  }
}

}  // namespace

bool install(int devices) {
  {
    const std::lock_guard<std::mutex> lock(g_mutex);
    g_devices = devices;
    g_in_use.assign(static_cast<size_t>(devices), 0);
    g_allocations.assign(static_cast<size_t>(devices), 0);
  }
  return nnc::set_late_registration(late);
}

size_t bytes_in_use(int device) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  return device >= 0 && device < g_devices ? g_in_use[static_cast<size_t>(device)] : 0;
}

size_t allocations(int device) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  return device >= 0 && device < g_devices ? g_allocations[static_cast<size_t>(device)] : 0;
}

size_t kernels_run() { return g_kernels.load(); }

}  // namespace nnc_fakegpu
