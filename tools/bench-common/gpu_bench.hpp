// What the GPU benchmark programs share (tools/bench-cuda, bench-cudnn,
// bench-gattn): their timing (nnc_bench::time_ms, median of 20 timed calls
// after 5 warm-ups; NNC's synchronous calls wait for the GPU, so each figure
// includes it), the opening (no GPU: say so and measure nothing), GPU 0's
// name, and GPU tensors set to one byte value. Their PyTorch peers share
// gpu_peer.py beside this file.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bench.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace nnc_bench {

inline double gpu_median_ms(const std::function<void()>& f) { return time_ms(f, 5, 0, 20, 20); }

// ccv_nnc_init; false (having said so) when there is no GPU to measure.
inline bool gpu_start() {
  ccv_nnc_init();
  if (ccv_nnc_device_count(CCV_STREAM_CONTEXT_GPU) == 0) {
    std::printf("no GPU found: nothing to measure\n");
    return false;
  }
  return true;
}

inline std::string gpu0_name() {
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  return prop.name;
}

// A tensor on GPU 0 (32F unless 16F: the fill counts 2 or 4 bytes an
// element) with every byte `byte`; null when the allocation fails.
inline ccv_nnc_tensor_t* gpu_tensor(const std::vector<int>& d, int datatype, int format, int byte) {
  ccv_nnc_tensor_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.type = CCV_TENSOR_GPU_MEMORY;
  p.format = format;
  p.datatype = datatype;
  for (size_t i = 0; i < d.size(); i++) p.dim[i] = d[i];
  ccv_nnc_tensor_t* t = ccv_nnc_tensor_new(nullptr, p, 0);
  if (t) cudaMemset(t->data.u8, byte, ccv_nnc_tensor_count(p) * (datatype == CCV_16F ? 2 : 4));
  return t;
}

// A row's first, untimed call: false, having printed the name (in a column
// `width` wide) and libnnc's message, when it fails.
inline bool first_call(const char* name, int width, const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint,
                       std::vector<ccv_nnc_tensor_t*>& in, std::vector<ccv_nnc_tensor_t*>& out) {
  if (ccv_nnc_cmd_exec(cmd, hint, 0, in.data(), static_cast<int>(in.size()), out.data(), static_cast<int>(out.size()),
                       nullptr) == CCV_NNC_EXEC_SUCCESS)
    return true;
  std::printf("%-*s failed: %s\n", width, name, ccv_nnc_error_message());
  return false;
}

// Runs the PyTorch peer first, in its own process (the two never share the
// GPU): `python3 <peer> <args>`, the peer being $NNC_BENCH_PEER, else
// `built_in` (the source tree's, compiled in), else `fallback` (relative to
// the current folder, as gpu-check runs from the tree). Lines "torch NAME MS"
// become the map; every other line is printed as it comes.
inline std::map<std::string, double> run_peer(const char* built_in, const char* fallback, const std::string& args = "") {
  std::map<std::string, double> ms;
  std::string peer = std::getenv("NNC_BENCH_PEER") ? std::getenv("NNC_BENCH_PEER") : built_in;
  if (FILE* f = std::fopen(peer.c_str(), "r"))
    std::fclose(f);
  else
    peer = fallback;
  if (FILE* p = popen(("python3 " + peer + (args.empty() ? "" : " " + args) + " 2>&1").c_str(), "r")) {
    char line[512];
    while (std::fgets(line, sizeof(line), p)) {
      char name[128];
      double v = 0;
      if (std::sscanf(line, "torch %127s %lf", name, &v) == 2)
        ms[name] = v;
      else
        std::fputs(line, stdout);
    }
    pclose(p);
  }
  return ms;
}

}  // namespace nnc_bench
