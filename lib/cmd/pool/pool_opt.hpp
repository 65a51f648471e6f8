// The CPU_OPT pooling loops (cpu_opt_avx2.cpp, cpu_opt_avx512.cpp), one task at a time; the
// split into tasks and the dispatch live in cpu_opt.cpp.
#pragma once

#include "cmd/pool/pool.hpp"

namespace nnc::pool::opt {

enum class Op { kMaxForward, kAvgForward, kMaxBackward, kAvgBackward };

// One task. channels_inner (x, y / g and dx with unit-stride channels):
//   forward: image n, output row a; backward: image n, channels [a, b).
// Otherwise (planes): image n, channel a.
struct Task {
  bool channels_inner;
  int n, a, b;
};

// g: the geometry over (x or dx, y or g); dx: the backward output (else unused).
void run_avx2(Op op, const Geometry& g, const Image& dx, Task t);

// The AVX-512 loops (cpu_opt_avx512.cpp; call only after
// cpu_features().avx512): false, having done nothing, for a task they do not
// cover (then run_avx2 does it).
bool run_avx512(Op op, const Geometry& g, const Image& dx, Task t);

// Windows that tile the image without overlap or gaps: each dx element is
// written exactly once, so no zeroing pass.
inline bool tiles(const Geometry& g) {
  return g.SH == g.KH && g.SW == g.KW && g.PT == 0 && g.PL == 0 && g.OH * g.KH == g.H && g.OW * g.KW == g.W;
}

}  // namespace nnc::pool::opt
