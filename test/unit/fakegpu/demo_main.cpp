// nnc-demo-fakegpu: the demo (tools/demo/demo.c, its main renamed) on one
// pretend GPU whose kernels are the CPU_OPT ones, so that `--gpu` (the model
// on GPU 0, batches copied in and logits out, every step through the model's
// schedule over pretend streams that run work late and out of order) is
// checked end to end by the same check values and accuracy as on the CPU.
#include <cstdio>

#include "fakegpu.hpp"

extern "C" int nnc_demo_main(int argc, char** argv);

int main(int argc, char** argv) {
  if (!nnc_fakegpu::install(1, true)) {
    std::fprintf(stderr, "nnc-demo-fakegpu: the pretend GPU was installed too late\n");
    return 3;
  }
  return nnc_demo_main(argc, argv);
}
