#include "core/registry.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>

#include "core/error.hpp"

namespace nnc {

int backend_rank(uint32_t backend) {
  static constexpr uint32_t kOrder[] = {
      CCV_NNC_BACKEND_GPU_CUDNN, CCV_NNC_BACKEND_GPU_CUBLAS, CCV_NNC_BACKEND_GPU_NCCL, CCV_NNC_BACKEND_GPU_REF,
      CCV_NNC_BACKEND_MPS,       CCV_NNC_BACKEND_CPU_OPT,    CCV_NNC_BACKEND_CPU_REF,
  };
  for (size_t i = 0; i < std::size(kOrder); i++)
    if (kOrder[i] == backend) return static_cast<int>(i);
  return static_cast<int>(std::size(kOrder));
}

Registry::Entry* Registry::find(uint32_t cmd) {
  if (!slots_.empty()) {
    const size_t mask = slots_.size() - 1;
    for (size_t i = slot_of(cmd);; i = (i + 1) & mask) {
      const int32_t e = slots_[i];
      if (e < 0) return nullptr;
      if (entries_[static_cast<size_t>(e)].info.cmd == cmd) return &entries_[static_cast<size_t>(e)];
    }
  }
  if (sorted_) {
    auto it = std::lower_bound(entries_.begin(), entries_.end(), cmd,
                               [](const Entry& e, uint32_t id) { return e.info.cmd < id; });
    return it != entries_.end() && it->info.cmd == cmd ? &*it : nullptr;
  }
  for (auto& e : entries_)
    if (e.info.cmd == cmd) return &e;
  return nullptr;
}

const Registry::Entry* Registry::find(uint32_t cmd) const { return const_cast<Registry*>(this)->find(cmd); }

void Registry::add_command(const CommandInfo& info) {
  if (Entry* e = find(info.cmd)) {
    e->info = info;
    return;
  }
  entries_.push_back(Entry{info, {}});
  sorted_ = false;
  slots_.clear();  // until the next freeze
}

void Registry::add_kernel(const Kernel& kernel) {
  Entry* e = find(kernel.cmd);
  if (!e) {
    CommandInfo info;
    info.cmd = kernel.cmd;
    add_command(info);
    e = find(kernel.cmd);
  }
  auto& ks = e->kernels;
  ks.erase(std::remove_if(ks.begin(), ks.end(), [&](const Kernel& k) { return k.backend == kernel.backend; }), ks.end());
  ks.push_back(kernel);
  std::stable_sort(ks.begin(), ks.end(),
                   [](const Kernel& a, const Kernel& b) { return backend_rank(a.backend) < backend_rank(b.backend); });
}

void Registry::add_kernels(const KernelTraits& traits, KernelList execs) {
  Kernel k;
  k.backend = traits.backend;
  k.tensor_formats = traits.formats;
  k.tensor_datatypes = traits.datatypes;
  k.tensor_memory = traits.memory;
  k.algorithms = traits.algorithms;
  k.autotune = traits.autotune;
  k.accept = traits.accept;
  k.exclusive = traits.exclusive;
  for (const auto& [cmd, exec] : execs) {
    k.cmd = cmd;
    k.exec = exec;
    add_kernel(k);
  }
}

void Registry::freeze() {
  std::sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) { return a.info.cmd < b.info.cmd; });
  sorted_ = true;
  // At most a quarter full, so probes stay short.
  unsigned bits = 4;
  while ((size_t{1} << bits) < entries_.size() * 4) bits++;
  slot_shift_ = 32 - bits;
  slots_.assign(size_t{1} << bits, -1);
  const size_t mask = slots_.size() - 1;
  for (size_t k = 0; k < entries_.size(); k++) {
    size_t i = slot_of(entries_[k].info.cmd);
    while (slots_[i] >= 0) i = (i + 1) & mask;
    slots_[i] = static_cast<int32_t>(k);
  }
}

const CommandInfo* Registry::command(uint32_t cmd) const {
  const Entry* e = find(cmd);
  return e ? &e->info : nullptr;
}

std::span<const Kernel> Registry::kernels(uint32_t cmd) const {
  const Entry* e = find(cmd);
  if (!e) return {};
  return std::span<const Kernel>(e->kernels);
}

const Kernel* Registry::kernel(uint32_t cmd, uint32_t backend) const {
  for (const Kernel& k : kernels(cmd))
    if (k.backend == backend) return &k;
  return nullptr;
}

std::vector<uint32_t> Registry::commands() const {
  std::vector<uint32_t> ids;
  ids.reserve(entries_.size());
  for (const Entry& e : entries_) ids.push_back(e.info.cmd);
  return ids;
}

namespace {
std::atomic<void (*)(Registry&)> g_late{nullptr};
std::atomic<bool> g_built{false};
}  // namespace

bool set_late_registration(void (*late)(Registry& registry)) {
  if (g_built.load()) return false;
  g_late.store(late);
  return true;
}

const Registry& registry() {
  static const Registry instance = [] {
    Registry r;
    r.sorted_ = false;
    register_all_families(r);
    g_built.store(true);
    if (auto late = g_late.load()) late(r);
    r.freeze();
    return r;
  }();
  return instance;
}

namespace shape {

void same_as_first_input(const ccv_nnc_cmd_param_t&, const ccv_nnc_tensor_param_t* inputs, int input_size,
                         const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  if (input_size <= 0) return;
  for (int i = 0; i < output_size; i++) outputs[i] = inputs[0];
}

void same_as_input_i(const ccv_nnc_cmd_param_t&, const ccv_nnc_tensor_param_t* inputs, int input_size,
                     const ccv_nnc_hint_t&, ccv_nnc_tensor_param_t* outputs, int output_size) {
  for (int i = 0; i < output_size && i < input_size; i++) outputs[i] = inputs[i];
}

}  // namespace shape

namespace inplace {
bool always(const ccv_nnc_cmd_param_t&, int, int, int, int) { return true; }
bool same_index(const ccv_nnc_cmd_param_t&, int input_idx, int, int output_idx, int) { return input_idx == output_idx; }
}  // namespace inplace

}  // namespace nnc
