// The generated id tables, as arrays the tests can walk.
#pragma once

#include <cstdint>

namespace nnc_test {

struct IdName {
  uint32_t id;
  const char* name;
};

inline constexpr IdName kCommandIds[] = {
#include "cmd/command_names.inc"
};

inline constexpr IdName kBackendIds[] = {
#include "cmd/backend_names.inc"
};

}  // namespace nnc_test
