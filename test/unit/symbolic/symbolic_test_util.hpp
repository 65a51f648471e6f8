// Helpers shared by the symbolic-graph suites.
#pragma once

#include <cstring>
#include <string>

#include "nnc/ccv_nnc.h"

namespace symtest {

inline std::string last_error() { return ccv_nnc_error_message(); }

// A command with all-zero parameters.
inline ccv_nnc_cmd_t plain(uint32_t id) {
  ccv_nnc_cmd_param_t p;
  std::memset(&p, 0, sizeof(p));
  return ccv_nnc_cmd(id, nullptr, p, 0);
}

}  // namespace symtest
