// C source for a combine's forward pass (ccv_nnc_micro_combine_c).
//
// The generated file is self-contained C99 (math.h and stdlib.h only) and
// defines one function:
//
//   int ccv_nnc_micro_forward(const double* const* inputs, const int* const* input_dims,
//                             const long long* params, double** outputs, int (*output_dims)[12]);
//
// inputs[k] are row-major values of the k-th input with sizes input_dims[k]
// (the io's number of axes), params the parameters in the combine's order.
// On success it returns 0 and sets outputs[k] to a malloc'ed row-major array
// (the caller frees it) with sizes in output_dims[k]; on failure (a shape
// mismatch, division by zero in an expression, an index out of range) it
// returns a negative number and allocates nothing. It computes what the
// interpreter's forward pass computes, in the same order and precision.
#include <algorithm>
#include <unordered_map>

#include "core/error.hpp"
#include "micro/micro.hpp"

namespace nnc::micro {

namespace {

struct Gen {
  const ccv_nnc_micro_combine_s& c;
  std::unordered_map<const Io*, size_t> slot;
  std::string out;

  explicit Gen(const ccv_nnc_micro_combine_s& combine) : c(combine) {
    for (size_t k = 0; k < c.order.size(); k++) slot[c.order[k]] = k;
  }

  void line(int indent, const std::string& s) {
    out.append(static_cast<size_t>(indent) * 2, ' ');
    out += s;
    out += '\n';
  }

  size_t param_index(const std::string& name) const {
    for (size_t k = 0; k < c.parameters.size(); k++)
      if (c.parameters[k] == name) return k;
    return 0;  // make_combine has checked every name
  }

  // Infix C for a postfix expression of io n.
  std::string expr(const Expr& e, const Io* n) const {
    std::vector<std::string> st;
    for (const Op& op : e.ops) {
      switch (op.tok) {
        case Tok::kConst:
          st.push_back(std::to_string(op.value) + "LL");
          break;
        case Tok::kIndex:
          st.push_back(format("(long long)i%d", op.a));
          break;
        case Tok::kDim:
          st.push_back(format("(long long)d%zu[%d]", slot.at(n->ss[op.a]), op.b));
          break;
        case Tok::kParam:
          st.push_back(format("params[%zu]", param_index(e.params[op.a])));
          break;
        case Tok::kNeg:
          st.back() = "(-" + st.back() + ")";
          break;
        default: {
          std::string r = st.back();
          st.pop_back();
          std::string l = st.back();
          if (op.tok == Tok::kDiv)
            st.back() = "micro_div(" + l + ", " + r + ", &err)";
          else
            st.back() = "(" + l + (op.tok == Tok::kAdd ? " + " : op.tok == Tok::kSub ? " - " : " * ") + r + ")";
        }
      }
    }
    return st.empty() ? "0" : st.back();
  }

  // Row-major offset of index variables `var`0.. in dims array `d`.
  static std::string offset(const std::string& var, const std::string& d, int nd) {
    std::string s = var + "0";
    for (int a = 1; a < nd; a++) s = "(" + s + ") * " + d + "[" + std::to_string(a) + "] + " + var + std::to_string(a);
    return s;
  }

  void loops_open(int& ind, const std::string& var, const std::string& d, int nd) {
    for (int a = 0; a < nd; a++)
      line(ind++, format("for (int %s%d = 0; %s%d < %s[%d]; %s%d++) {", var.c_str(), a, var.c_str(), a, d.c_str(), a,
                         var.c_str(), a));
  }
  void loops_close(int& ind, int nd) {
    for (int a = 0; a < nd; a++) line(--ind, "}");
  }

  void node(size_t k) {
    const Io* n = c.order[k];
    const int nd = n->dimensions;
    const std::string d = format("d%zu", k), v = format("v%zu", k);
    line(1, format("/* io #%d: %s */", n->id, n->isa->name));
    line(1, format("int %s[12] = {0};", d.c_str()));
    if (n->kind == kInput) {
      size_t idx = 0;
      while (c.inputs[idx] != n) idx++;
      line(1, format("for (int a = 0; a < %d; a++) %s[a] = input_dims[%zu][a];", nd, d.c_str(), idx));
      line(1, format("const double* %s = inputs[%zu];", v.c_str(), idx));
      line(1, format("size_t n%zu = 1; for (int a = 0; a < %d; a++) n%zu *= (size_t)%s[a];", k, nd, k, d.c_str()));
      return;
    }
    const Io* x = n->in(0);
    const size_t xs = slot.at(x);
    switch (n->kind) {
      case kReindex:
        for (int a = 0; a < nd; a++) {
          line(1, format("{ long long s = %s; if (err || s < 1 || s > 2147483647LL) goto fail; %s[%d] = (int)s; }",
                         expr(n->shape[a], n).c_str(), d.c_str(), a));
        }
        break;
      case kUnary:
      case kSelect:
        if (n->kind == kSelect) {
          const size_t is = slot.at(n->in(1));
          for (int a = 0; a < nd; a++)
            if (a != n->axis) line(1, format("if (d%zu[%d] != d%zu[%d]) goto fail;", is, a, xs, a));
          line(1, format("for (int a = 0; a < %d; a++) %s[a] = d%zu[a];", nd, d.c_str(), is));
        } else {
          line(1, format("for (int a = 0; a < %d; a++) %s[a] = d%zu[a];", nd, d.c_str(), xs));
        }
        break;
      case kBinary:
        line(1, format("for (int a = 0; a < %d; a++) { if (d%zu[a] != d%zu[a]) goto fail; %s[a] = d%zu[a]; }", nd, xs,
                       slot.at(n->in(1)), d.c_str(), xs));
        break;
      case kReduce:
        line(1, format("for (int a = 0; a < %d; a++) %s[a] = d%zu[a];", nd, d.c_str(), xs));
        for (int a : n->axes) line(1, format("%s[%d] = 1;", d.c_str(), a));
        break;
      default:
        break;
    }
    line(1, format("size_t n%zu = 1; for (int a = 0; a < %d; a++) n%zu *= (size_t)%s[a];", k, nd, k, d.c_str()));
    line(1, format("double* %s = (double*)calloc(n%zu, sizeof(double)); owned[%zu] = %s; if (!%s) goto fail;",
                   v.c_str(), k, k, v.c_str(), v.c_str()));
    int ind = 1;
    switch (n->kind) {
      case kReindex: {
        line(ind++, "{");
        line(ind, "size_t o = 0;");
        loops_open(ind, "i", d, nd);
        std::string inside = "1";
        for (size_t a = 0; a < n->reindex.size(); a++) {
          line(ind, format("const long long j%zu = %s;", a, expr(n->reindex[a], n).c_str()));
          inside += format(" && j%zu >= 0 && j%zu < d%zu[%zu]", a, a, xs, a);
        }
        line(ind, "if (err) goto fail;");
        line(ind, format("if (%s) %s[o] = v%zu[%s];", inside.c_str(), v.c_str(), xs,
                         offset("j", format("d%zu", xs), static_cast<int>(n->reindex.size())).c_str()));
        line(ind, "o++;");
        loops_close(ind, nd);
        line(--ind, "}");
        break;
      }
      case kUnary: {
        const char* f = n->op == CCV_NNC_MICRO_UNARY_OP_NEG ? "-" : n->op == CCV_NNC_MICRO_UNARY_OP_LOG ? "log" : "exp";
        line(1, format("for (size_t e = 0; e < n%zu; e++) %s[e] = %s(v%zu[e]);", k, v.c_str(), f, xs));
        break;
      }
      case kBinary: {
        const size_t ys = slot.at(n->in(1));
        const char* body = "";
        switch (n->op) {
          case CCV_NNC_MICRO_BINARY_OP_PLUS:
            body = "a + b";
            break;
          case CCV_NNC_MICRO_BINARY_OP_MINUS:
            body = "a - b";
            break;
          case CCV_NNC_MICRO_BINARY_OP_MUL:
            body = "a * b";
            break;
          case CCV_NNC_MICRO_BINARY_OP_DIV:
            body = "a / b";
            break;
          case CCV_NNC_MICRO_BINARY_OP_MAX:
            body = "a >= b ? a : b";
            break;
          case CCV_NNC_MICRO_BINARY_OP_MIN:
            body = "a <= b ? a : b";
            break;
          case CCV_NNC_MICRO_BINARY_OP_EQUAL_TO:
            body = "(double)(a == b)";
            break;
          case CCV_NNC_MICRO_BINARY_OP_LESS_THAN:
            body = "(double)(a < b)";
            break;
        }
        line(1, format("for (size_t e = 0; e < n%zu; e++) { const double a = v%zu[e], b = v%zu[e]; %s[e] = %s; }", k,
                       xs, ys, v.c_str(), body));
        break;
      }
      case kReduce: {
        const int op = static_cast<int>(n->op);
        line(ind++, "{");
        line(ind, format("char* seen = (char*)calloc(n%zu, 1); double* best = (double*)calloc(n%zu, sizeof(double));",
                         k, k));
        line(ind, "if (!seen || !best) { free(seen); free(best); goto fail; }");
        line(ind, "size_t e = 0;");
        loops_open(ind, "i", format("d%zu", xs), nd);
        std::string pos = "0";
        for (int a : n->axes) pos = format("(%s) * d%zu[%d] + i%d", pos.c_str(), xs, a, a);
        std::string o = "0";
        for (int a = 0; a < nd; a++) {
          const bool reduced = std::find(n->axes.begin(), n->axes.end(), a) != n->axes.end();
          o = format("(%s) * %s[%d] + %s", o.c_str(), d.c_str(), a, reduced ? "0" : format("i%d", a).c_str());
        }
        line(ind, format("const size_t t = %s; const double x = v%zu[e++]; const double pos = (double)(%s);", o.c_str(),
                         xs, pos.c_str()));
        switch (op) {
          case CCV_NNC_MICRO_REDUCE_OP_SUM:
          case CCV_NNC_MICRO_REDUCE_OP_MEAN:
            line(ind, format("%s[t] += x;", v.c_str()));
            break;
          case CCV_NNC_MICRO_REDUCE_OP_PROD:
            line(ind, format("%s[t] = seen[t] ? %s[t] * x : x;", v.c_str(), v.c_str()));
            break;
          case CCV_NNC_MICRO_REDUCE_OP_MAX:
          case CCV_NNC_MICRO_REDUCE_OP_ARGMAX:
            line(ind, format("if (!seen[t] || x > best[t]) { best[t] = x; %s[t] = %s; }", v.c_str(),
                             op == CCV_NNC_MICRO_REDUCE_OP_MAX ? "x" : "pos"));
            break;
          default:
            line(ind, format("if (!seen[t] || x < best[t]) { best[t] = x; %s[t] = %s; }", v.c_str(),
                             op == CCV_NNC_MICRO_REDUCE_OP_MIN ? "x" : "pos"));
            break;
        }
        line(ind, "(void)pos; seen[t] = 1;");
        loops_close(ind, nd);
        line(ind, "free(seen); free(best);");
        if (op == CCV_NNC_MICRO_REDUCE_OP_MEAN)
          line(ind, format("for (size_t q = 0; q < n%zu; q++) %s[q] /= (double)(n%zu / n%zu);", k, v.c_str(), xs, k));
        line(--ind, "}");
        break;
      }
      case kSelect: {
        const size_t is = slot.at(n->in(1));
        line(ind++, "{");
        line(ind, "size_t e = 0;");
        loops_open(ind, "i", d, nd);
        line(ind,
             format("const double q = v%zu[e]; if (!(q >= 0 && q < d%zu[%d] && q == (double)(long long)q)) goto fail;",
                    is, xs, n->axis));
        std::string src = "0";
        for (int a = 0; a < nd; a++)
          src = format("(%s) * d%zu[%d] + %s", src.c_str(), xs, a,
                       a == n->axis ? "(long long)q" : format("i%d", a).c_str());
        line(ind, format("%s[e++] = v%zu[%s];", v.c_str(), xs, src.c_str()));
        loops_close(ind, nd);
        line(--ind, "}");
        break;
      }
      default:
        break;
    }
  }

  std::string run() {
    NNC_CHECK(!c.outputs.empty(),
              "ccv_nnc_micro_combine_c: the combine has no outputs (only the forward pass is generated)");
    out += "/* Generated by NNC (ccv_nnc_micro_combine_c): the forward pass of a micro-op combine. */\n";
    out += "#include <math.h>\n#include <stdlib.h>\n#include <string.h>\n\n";
    out +=
        "static long long micro_div(long long a, long long b, int* err) { if (b == 0) { *err = 1; return 0; } return a "
        "/ b; }\n\n";
    out +=
        "int ccv_nnc_micro_forward(const double* const* inputs, const int* const* input_dims, const long long* params, "
        "double** outputs, int (*output_dims)[12])\n{\n";
    line(1, "int err = 0;");
    line(1, format("double* owned[%zu] = {0};", c.order.size()));
    line(1, "(void)params; (void)input_dims; (void)inputs; (void)micro_div;");
    line(1, format("for (int q = 0; q < %zu; q++) outputs[q] = 0;", c.outputs.size()));
    for (size_t k = 0; k < c.order.size(); k++) node(k);
    for (size_t k = 0; k < c.outputs.size(); k++) {
      const size_t s = slot.at(c.outputs[k]);
      line(1,
           format("outputs[%zu] = (double*)malloc(n%zu * sizeof(double)); if (!outputs[%zu]) goto fail_out;", k, s, k));
      line(1, format("memcpy(outputs[%zu], v%zu, n%zu * sizeof(double)); memcpy(output_dims[%zu], d%zu, sizeof(d%zu));",
                     k, s, s, k, s, s));
    }
    line(1, format("for (int q = 0; q < %zu; q++) free(owned[q]);", c.order.size()));
    line(1, "return 0;");
    out += "fail_out:\n";
    line(1, format("for (int q = 0; q < %zu; q++) { free(outputs[q]); outputs[q] = 0; }", c.outputs.size()));
    out += "fail:\n";
    line(1, format("for (int q = 0; q < %zu; q++) free(owned[q]);", c.order.size()));
    line(1, "return -1;");
    out += "}\n";
    return out;
  }
};

}  // namespace

std::string generate_c(const ccv_nnc_micro_combine_s& c) { return Gen(c).run(); }

}  // namespace nnc::micro
