// Recursive-descent parser for index expressions, and their evaluator.
//
//   expr   := term (('+' | '-') term)*
//   term   := unary (('*' | '/') unary)*
//   unary  := '-' unary | atom
//   atom   := NUMBER | 'i' DIGITS | 'd' [A-Z] DIGITS | '$' NAME | '(' expr ')'
#include "micro/expr.hpp"

#include <cctype>
#include <limits>

#include "core/error.hpp"

namespace nnc::micro {

namespace {

// Nesting deeper than this is refused rather than risking the stack.
constexpr int kMaxDepth = 64;

class Parser {
 public:
  Parser(const char* text, const ExprScope& scope, Expr& out) : s_(text), scope_(scope), out_(out) {}

  void parse() {
    skip();
    NNC_CHECK(s_[pos_] != '\0', "%s: empty expression", scope_.what);
    expr(0);
    skip();
    if (s_[pos_] == ')') error("unbalanced parentheses: ')' without a matching '('");
    if (s_[pos_] != '\0') error("unexpected character '%c'", s_[pos_]);
  }

 private:
  [[noreturn]] void error(const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
    va_list args;
    va_start(args, fmt);
    const std::string why = vformat(fmt, args);
    va_end(args);
    fail(CCV_NNC_EXEC_INVALID, "%s: \"%s\": %s (at column %d)", scope_.what, s_, why.c_str(),
         static_cast<int>(pos_) + 1);
  }

  void skip() {
    while (s_[pos_] == ' ' || s_[pos_] == '\t') pos_++;
  }

  int digits(const char* what) {
    if (!std::isdigit(static_cast<unsigned char>(s_[pos_]))) error("%s needs a number", what);
    int64_t v = 0;
    while (std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      v = v * 10 + (s_[pos_++] - '0');
      if (v > std::numeric_limits<int>::max()) error("number too large");
    }
    return static_cast<int>(v);
  }

  void expr(int depth) {
    term(depth);
    for (;;) {
      skip();
      const char c = s_[pos_];
      if (c != '+' && c != '-') return;
      pos_++;
      term(depth);
      out_.ops.push_back({c == '+' ? Tok::kAdd : Tok::kSub});
    }
  }

  void term(int depth) {
    unary(depth);
    for (;;) {
      skip();
      const char c = s_[pos_];
      if (c != '*' && c != '/') return;
      pos_++;
      unary(depth);
      out_.ops.push_back({c == '*' ? Tok::kMul : Tok::kDiv});
    }
  }

  void unary(int depth) {
    skip();
    if (s_[pos_] == '-') {
      if (depth >= kMaxDepth) error("nested too deeply");
      pos_++;
      unary(depth + 1);
      out_.ops.push_back({Tok::kNeg});
      return;
    }
    atom(depth);
  }

  void atom(int depth) {
    skip();
    const char c = s_[pos_];
    if (c == '(') {
      if (depth >= kMaxDepth) error("nested too deeply");
      pos_++;
      expr(depth + 1);
      skip();
      if (s_[pos_] != ')') error("unbalanced parentheses: missing ')'");
      pos_++;
      return;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      Op op{Tok::kConst};
      op.value = digits("a constant");
      out_.ops.push_back(op);
      return;
    }
    if (c == 'i') {
      pos_++;
      const size_t at = pos_;
      const int axis = digits("an index variable i");
      if (scope_.index_count == 0) {
        pos_ = at - 1;
        error("index variables (i0, i1, ...) are not allowed here");
      }
      if (axis >= scope_.index_count) {
        pos_ = at - 1;
        error("unknown variable i%d: the output has %d axes (i0 to i%d)", axis, scope_.index_count,
              scope_.index_count - 1);
      }
      out_.ops.push_back({Tok::kIndex, axis});
      return;
    }
    if (c == 'd') {
      const size_t at = pos_;
      pos_++;
      const char t = s_[pos_];
      if (t < 'A' || t > 'Z') error("a dimension is written dA0, dB1, ...: 'd' must be followed by a capital letter");
      pos_++;
      const int tensor = t - 'A';
      const int axis = digits("a dimension variable");
      if (tensor >= static_cast<int>(scope_.dims.size())) {
        pos_ = at;
        error("unknown variable d%c%d: only %d shape tensor(s) were given", t, axis,
              static_cast<int>(scope_.dims.size()));
      }
      if (axis >= scope_.dims[tensor]) {
        pos_ = at;
        error("unknown variable d%c%d: shape tensor %c has %d axes", t, axis, t, scope_.dims[tensor]);
      }
      out_.ops.push_back({Tok::kDim, tensor, axis});
      return;
    }
    if (c == '$') {
      pos_++;
      const size_t begin = pos_;
      while (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_') pos_++;
      if (pos_ == begin) error("'$' must be followed by a parameter name");
      const std::string name(s_ + begin, pos_ - begin);
      int slot = -1;
      for (size_t k = 0; k < out_.params.size(); k++)
        if (out_.params[k] == name) slot = static_cast<int>(k);
      if (slot < 0) {
        slot = static_cast<int>(out_.params.size());
        out_.params.push_back(name);
      }
      out_.ops.push_back({Tok::kParam, slot});
      return;
    }
    if (c == '\0') error("expression ends where a value was expected");
    if (c == ')') error("unbalanced parentheses: ')' where a value was expected");
    if (std::isalpha(static_cast<unsigned char>(c))) error("unknown variable starting with '%c'", c);
    error("unexpected character '%c'", c);
  }

  const char* s_;
  const ExprScope& scope_;
  Expr& out_;
  size_t pos_ = 0;
};

}  // namespace

Expr parse_expr(const char* text, const ExprScope& scope) {
  NNC_CHECK(text, "%s: expression is NULL", scope.what);
  Expr e;
  e.text = text;
  Parser(e.text.c_str(), scope, e).parse();
  return e;
}

int64_t eval_expr(const Expr& e, const ExprEnv& env, bool& ok) {
  // Small fixed stack: a parse of depth <= kMaxDepth never needs more than
  // ops.size() slots, so size it by the program.
  int64_t local[32];
  std::vector<int64_t> heap;
  int64_t* st = local;
  if (e.ops.size() > 32) {
    heap.resize(e.ops.size());
    st = heap.data();
  }
  int sp = 0;
  for (const Op& op : e.ops) {
    switch (op.tok) {
      case Tok::kConst:
        st[sp++] = op.value;
        break;
      case Tok::kIndex:
        st[sp++] = env.index[op.a];
        break;
      case Tok::kDim:
        st[sp++] = (*env.dims)[op.a][op.b];
        break;
      case Tok::kParam:
        st[sp++] = env.params[op.a];
        break;
      case Tok::kNeg:
        st[sp - 1] = -st[sp - 1];
        break;
      case Tok::kAdd:
        sp--;
        st[sp - 1] += st[sp];
        break;
      case Tok::kSub:
        sp--;
        st[sp - 1] -= st[sp];
        break;
      case Tok::kMul:
        sp--;
        st[sp - 1] *= st[sp];
        break;
      case Tok::kDiv:
        sp--;
        if (st[sp] == 0) {
          ok = false;
          return 0;
        }
        st[sp - 1] /= st[sp];
        break;
    }
  }
  return sp == 1 ? st[0] : 0;
}

}  // namespace nnc::micro
