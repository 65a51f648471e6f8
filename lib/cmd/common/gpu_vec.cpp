// Host side of the GPU_REF kernels' vector launches (gpu_vec.hpp).
#include "cmd/common/gpu_vec.hpp"

#include <cstdlib>
#include <cstring>

namespace nnc::gpu {

namespace {

bool vector_read(int mode) { return mode == kVecPacked || mode == kVecRow; }

}  // namespace

EwVec choose_ew_vec(const EwPlan& p, const uint64_t* addr, const int* element_size) {
  EwVec none;
  const int n = p.operands;
  if (n < 1 || n > kPlanOperands || p.count <= 0 || p.nd < 1 || p.nd > 2 || addr[0] == 0) return none;
  EwVec v;
  v.operands = n;
  v.count = p.count;
  const bool two = p.nd == 2;
  v.inner = two ? p.dim[1] : p.count;
  int largest = 0;
  for (int k = 0; k < n; k++) {
    const int es = element_size[k];
    if (es != 1 && es != 2 && es != 4 && es != 8) return none;
    const int64_t s0 = p.stride[k][0], s1 = two ? p.stride[k][1] : 0;
    int m;
    if (addr[k] == 0)
      m = kVecScalar;  // a NULL input: the kernels read 1
    else if (!two)
      m = s0 == 1 ? kVecPacked : s0 == 0 ? kVecScalar : -1;
    else if (s0 == p.dim[1] && s1 == 1)
      m = kVecPacked;
    else if (s0 == 0 && s1 == 0)
      m = kVecScalar;
    else if (s0 == 0 && s1 == 1)
      m = kVecRow;
    else if (s0 == 1 && s1 == 0)
      m = kVecCol;
    else
      m = -1;
    if (m < 0 || (k == 0 && m != kVecPacked)) return none;
    v.mode[k] = m;
    if (vector_read(m) && es > largest) largest = es;
  }
  v.width = kVecBytes / largest;
  // Every vector operand misaligned by the same number of elements (modulo
  // the width): the head of scalar elements brings them all to a boundary.
  int64_t mis = -1;
  for (int k = 0; k < n; k++) {
    if (!vector_read(v.mode[k])) continue;
    const uint64_t es = static_cast<uint64_t>(element_size[k]);
    if (addr[k] % es != 0) return none;
    const int64_t e = static_cast<int64_t>((addr[k] / es) % static_cast<uint64_t>(v.width));
    if (mis >= 0 && e != mis) return none;
    mis = e;
  }
  v.head = (v.width - mis) % v.width;
  if (two && (v.head != 0 || v.inner % v.width != 0)) return none;
  if (v.count - v.head < v.width) return none;
  v.vectors = (v.count - v.head) / v.width;
  const int64_t items = v.vectors > v.scalars() ? v.vectors : v.scalars();
  v.launch = choose_ew(items);
  return v;
}

EwVec choose_ew_vec(const EwPlan& p, const uint64_t* addr, int element_size) {
  int sizes[kPlanOperands];
  for (int k = 0; k < kPlanOperands; k++) sizes[k] = element_size;
  return choose_ew_vec(p, addr, sizes);
}

bool ew_vec_allowed(const char* value) { return !(value && std::strcmp(value, "0") == 0); }

bool ew_vec_allowed_from_env() { return ew_vec_allowed(std::getenv("NNC_GPU_EW_VEC")); }

}  // namespace nnc::gpu
