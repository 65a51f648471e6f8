// Integer index expressions of the micro-op API: "i1 + i2 * 2", "dA0 - $k + 1".
//
// An expression is parsed once (when ccv_nnc_micro_reindex is called) into a
// flat postfix program, then evaluated for every output element by a small
// stack machine. Parsing checks the grammar and every variable that can be
// checked then; parameters are resolved to positions when the combine is made.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nnc::micro {

enum class Tok : uint8_t {
  kConst,  // push value
  kIndex,  // push the output index along axis `a`
  kDim,    // push dimension `b` of shape tensor `a`
  kParam,  // push parameter slot `a` (resolved from `name` by the combine)
  kNeg,
  kAdd,
  kSub,
  kMul,
  kDiv,
};

struct Op {
  Tok tok;
  int a = 0;
  int b = 0;
  int64_t value = 0;
};

struct Expr {
  std::string text;                 // as written, for messages
  std::vector<Op> ops;              // postfix
  std::vector<std::string> params;  // names of kParam ops, by op's `name_slot` (a)
};

// What a parse may refer to.
struct ExprScope {
  int index_count;        // number of i variables allowed (0: none)
  std::vector<int> dims;  // dimensions of each shape tensor (A, B, ...)
  const char* what;       // e.g. "ccv_nnc_micro_reindex: reindex[1]"
};

// Parse `text`; throws nnc::Error (CCV_NNC_EXEC_INVALID) with a message
// naming the expression and the column on any problem.
Expr parse_expr(const char* text, const ExprScope& scope);

// Values an expression reads at evaluation time.
struct ExprEnv {
  const int* index = nullptr;                           // output index
  const std::vector<std::vector<int>>* dims = nullptr;  // shape tensors' sizes
  const int64_t* params = nullptr;                      // by the Expr's param slot
};

// Evaluate; `ok` is cleared on division by zero (the caller reports it).
int64_t eval_expr(const Expr& e, const ExprEnv& env, bool& ok);

}  // namespace nnc::micro
