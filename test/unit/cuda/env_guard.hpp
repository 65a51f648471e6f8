// Sets an environment variable for a scope (NULL: unsets it), restoring what
// was there at the end: the GPU tests steer the backends' choices this way
// (NNC_GPU_ATTN_FLASH, NNC_GPU_ATTN_MMA, NNC_GPU_ATTN_CHUNK_BYTES, ...).
#pragma once

#include <cstdlib>
#include <string>

namespace nnc_gpu_test {

class EnvGuard {
 public:
  EnvGuard(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~EnvGuard() {
    if (had_)
      setenv(name_.c_str(), old_.c_str(), 1);
    else
      unsetenv(name_.c_str());
  }
  EnvGuard(const EnvGuard&) = delete;
  EnvGuard& operator=(const EnvGuard&) = delete;

 private:
  std::string name_, old_;
  bool had_ = false;
};

}  // namespace nnc_gpu_test
