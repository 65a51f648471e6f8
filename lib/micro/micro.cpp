// Micro-op graph building, combines, and the element-by-element interpreter.
//
// Values are held in double precision, row-major, whatever the tensors'
// datatypes. The interpreter is a reference: it favours being obviously right
// over being fast.
#include "micro/micro.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <unordered_map>

#include "core/error.hpp"
#include "core/tensor.hpp"

namespace nnc::micro {

namespace {

const ccv_nnc_micro_io_vtab_t kVtabs[] = {
    {kInput, "input"},   {kReindex, "reindex"}, {kUnary, "unary"}, {kBinary, "binary"},
    {kReduce, "reduce"}, {kSelect, "select"},   {kGrad, "grad"},
};

std::atomic<int> g_next_id{1};

const char* unary_name(uint32_t op) {
  switch (op) {
    case CCV_NNC_MICRO_UNARY_OP_NEG:
      return "neg";
    case CCV_NNC_MICRO_UNARY_OP_LOG:
      return "log";
    case CCV_NNC_MICRO_UNARY_OP_EXP:
      return "exp";
  }
  return nullptr;
}

const char* binary_name(uint32_t op) {
  switch (op) {
    case CCV_NNC_MICRO_BINARY_OP_PLUS:
      return "plus";
    case CCV_NNC_MICRO_BINARY_OP_MINUS:
      return "minus";
    case CCV_NNC_MICRO_BINARY_OP_MUL:
      return "mul";
    case CCV_NNC_MICRO_BINARY_OP_DIV:
      return "div";
    case CCV_NNC_MICRO_BINARY_OP_MAX:
      return "max";
    case CCV_NNC_MICRO_BINARY_OP_MIN:
      return "min";
    case CCV_NNC_MICRO_BINARY_OP_EQUAL_TO:
      return "equal_to";
    case CCV_NNC_MICRO_BINARY_OP_LESS_THAN:
      return "less_than";
  }
  return nullptr;
}

std::unique_ptr<Io> new_io(Kind kind, int dimensions) {
  auto io = std::make_unique<Io>();
  io->isa = vtab_of(kind);
  io->inputs = nullptr;
  io->input_size = 0;
  io->dimensions = dimensions;
  io->id = g_next_id.fetch_add(1, std::memory_order_relaxed);
  io->kind = kind;
  return io;
}

// Check an operand handed to a builder.
Io* operand(ccv_nnc_micro_io_t h, const char* fn, const char* what) {
  NNC_CHECK(h, "%s: %s is NULL", fn, what);
  Io* io = io_of(h);
  NNC_CHECK(io->isa >= kVtabs && io->isa < kVtabs + 7, "%s: %s is not a micro io", fn, what);
  NNC_CHECK(io->kind != kGrad,
            "%s: %s is a gradient io (ccv_nnc_micro_grad); those only go to ccv_nnc_micro_combine_new", fn, what);
  return io;
}

// Publish the held operands and take a reference on each.
Io* finish(std::unique_ptr<Io> io, std::vector<Io*> held) {
  for (Io* h : held) io->held.push_back(h);
  io->inputs = io->held.empty() ? nullptr : io->held.data();
  io->input_size = static_cast<int>(io->held.size());
  for (Io* h : held) h->refs++;
  return io.release();
}

}  // namespace

const ccv_nnc_micro_io_vtab_t* vtab_of(Kind kind) { return &kVtabs[kind]; }

Io* make_input(int dimensions) {
  NNC_CHECK(dimensions >= 1 && dimensions <= CCV_NNC_MAX_DIM_ALLOC,
            "ccv_nnc_micro_input: dimensions is %d; it must be 1 to %d", dimensions, CCV_NNC_MAX_DIM_ALLOC);
  return finish(new_io(kInput, dimensions), {});
}

Io* make_reindex(const char* const* shape, int shape_count, const ccv_nnc_micro_io_t* ss, int s_count,
                 const char* const* reindex, int reindex_count, ccv_nnc_micro_io_t xh) {
  const char* fn = "ccv_nnc_micro_reindex";
  Io* x = operand(xh, fn, "x");
  NNC_CHECK(shape_count >= 1 && shape_count <= CCV_NNC_MAX_DIM_ALLOC, "%s: shape_count is %d; it must be 1 to %d", fn,
            shape_count, CCV_NNC_MAX_DIM_ALLOC);
  NNC_CHECK(shape, "%s: shape is NULL", fn);
  NNC_CHECK(s_count >= 0 && s_count <= 26, "%s: s_count is %d; it must be 0 to 26 (dA.. to dZ..)", fn, s_count);
  NNC_CHECK(s_count == 0 || ss, "%s: ss is NULL but s_count is %d", fn, s_count);
  NNC_CHECK(reindex, "%s: reindex is NULL", fn);
  NNC_CHECK(reindex_count == x->dimensions, "%s: reindex_count is %d but x (io #%d) has %d dimensions", fn,
            reindex_count, x->id, x->dimensions);
  std::vector<Io*> held{x};
  ExprScope scope{0, {}, nullptr};
  for (int k = 0; k < s_count; k++) {
    const std::string what = format("ss[%d]", k);
    Io* s = operand(ss[k], fn, what.c_str());
    held.push_back(s);
    scope.dims.push_back(s->dimensions);
  }
  auto io = new_io(kReindex, shape_count);
  for (int k = 0; k < shape_count; k++) {
    const std::string what = format("%s: shape[%d]", fn, k);
    scope.what = what.c_str();
    scope.index_count = 0;
    io->shape.push_back(parse_expr(shape[k], scope));
  }
  for (int k = 0; k < reindex_count; k++) {
    const std::string what = format("%s: reindex[%d]", fn, k);
    scope.what = what.c_str();
    scope.index_count = shape_count;
    io->reindex.push_back(parse_expr(reindex[k], scope));
  }
  io->ss.assign(held.begin() + 1, held.end());
  return finish(std::move(io), held);
}

Io* make_unary(uint32_t op, ccv_nnc_micro_io_t xh) {
  Io* x = operand(xh, "ccv_nnc_micro_unary", "x");
  NNC_CHECK(unary_name(op), "ccv_nnc_micro_unary: unknown op %u", op);
  auto io = new_io(kUnary, x->dimensions);
  io->op = op;
  return finish(std::move(io), {x});
}

Io* make_binary(uint32_t op, ccv_nnc_micro_io_t lh, ccv_nnc_micro_io_t rh) {
  const char* fn = "ccv_nnc_micro_binary";
  Io* l = operand(lh, fn, "left");
  Io* r = operand(rh, fn, "right");
  NNC_CHECK(binary_name(op), "%s: unknown op %u", fn, op);
  NNC_CHECK(l->dimensions == r->dimensions,
            "%s: shape mismatch: left (io #%d) has %d dimensions, right (io #%d) has %d", fn, l->id, l->dimensions,
            r->id, r->dimensions);
  auto io = new_io(kBinary, l->dimensions);
  io->op = op;
  return finish(std::move(io), {l, r});
}

Io* make_reduce(uint8_t op, const int* axis, int axis_count, ccv_nnc_micro_io_t xh) {
  const char* fn = "ccv_nnc_micro_reduce";
  Io* x = operand(xh, fn, "x");
  NNC_CHECK(op <= CCV_NNC_MICRO_REDUCE_OP_PROD, "%s: unknown op %u", fn, static_cast<unsigned>(op));
  NNC_CHECK(axis && axis_count >= 1 && axis_count <= x->dimensions,
            "%s: axis_count is %d; give 1 to %d axes of x (io #%d)", fn, axis_count, x->dimensions, x->id);
  std::vector<int> axes;
  for (int k = 0; k < axis_count; k++) {
    NNC_CHECK(axis[k] >= 0 && axis[k] < x->dimensions, "%s: axis[%d] is %d but x (io #%d) has %d dimensions", fn, k,
              axis[k], x->id, x->dimensions);
    NNC_CHECK(std::find(axes.begin(), axes.end(), axis[k]) == axes.end(), "%s: axis %d is given twice", fn, axis[k]);
    axes.push_back(axis[k]);
  }
  std::sort(axes.begin(), axes.end());
  auto io = new_io(kReduce, x->dimensions);
  io->op = op;
  io->axes = std::move(axes);
  return finish(std::move(io), {x});
}

Io* make_select(int axis, ccv_nnc_micro_io_t xh, ccv_nnc_micro_io_t ih) {
  const char* fn = "ccv_nnc_micro_select";
  Io* x = operand(xh, fn, "x");
  Io* index = operand(ih, fn, "index");
  NNC_CHECK(axis >= 0 && axis < x->dimensions, "%s: axis is %d but x (io #%d) has %d dimensions", fn, axis, x->id,
            x->dimensions);
  NNC_CHECK(index->dimensions == x->dimensions,
            "%s: shape mismatch: index (io #%d) has %d dimensions, x (io #%d) has %d", fn, index->id, index->dimensions,
            x->id, x->dimensions);
  auto io = new_io(kSelect, x->dimensions);
  io->axis = axis;
  return finish(std::move(io), {x, index});
}

Io* make_grad(ccv_nnc_micro_io_t xh) {
  Io* x = operand(xh, "ccv_nnc_micro_grad", "x");
  return finish(new_io(kGrad, x->dimensions), {x});
}

void unref(Io* io) {
  std::vector<Io*> stack{io};
  while (!stack.empty()) {
    Io* n = stack.back();
    stack.pop_back();
    if (--n->refs > 0) continue;
    for (auto h : n->held) stack.push_back(io_of(h));
    delete n;
  }
}

void free_io(Io* io) {
  NNC_CHECK(io->isa >= kVtabs && io->isa < kVtabs + 7, "ccv_nnc_micro_io_free: not a micro io");
  NNC_CHECK(io->refs == 0,
            "ccv_nnc_micro_io_free: io #%d is held by %d other io(s) or combine(s); it is freed with them", io->id,
            io->refs);
  io->refs = 1;
  unref(io);
}

}  // namespace nnc::micro

ccv_nnc_micro_combine_s::~ccv_nnc_micro_combine_s() {
  for (auto* list : {&inputs, &outputs, &ingrads, &outgrads})
    for (auto* io : *list) nnc::micro::unref(io);
}

namespace nnc::micro {

namespace {

std::vector<Io*> io_list(const ccv_nnc_micro_io_t* list, int size, const char* what) {
  const char* fn = "ccv_nnc_micro_combine_new";
  NNC_CHECK(size >= 0, "%s: %s_size is %d", fn, what, size);
  NNC_CHECK(size == 0 || list, "%s: %s is NULL but %s_size is %d", fn, what, what, size);
  std::vector<Io*> out;
  for (int k = 0; k < size; k++) {
    NNC_CHECK(list[k], "%s: %s[%d] is NULL", fn, what, k);
    Io* io = io_of(list[k]);
    NNC_CHECK(io->isa >= kVtabs && io->isa < kVtabs + 7, "%s: %s[%d] is not a micro io", fn, what, k);
    out.push_back(io);
  }
  return out;
}

// Forward ios reachable from `roots` (gradient ios contribute their x), each
// after its operands.
std::vector<Io*> topo_order(const std::vector<Io*>& roots) {
  std::vector<Io*> order;
  std::unordered_map<Io*, int> state;  // 1: entered, 2: done
  std::vector<std::pair<Io*, size_t>> stack;
  for (Io* r : roots) {
    Io* start = r->kind == kGrad ? r->in(0) : r;
    if (state[start]) continue;
    stack.push_back({start, 0});
    state[start] = 1;
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (next < n->held.size()) {
        Io* c = n->in(static_cast<int>(next++));
        if (!state[c]) {
          state[c] = 1;
          stack.push_back({c, 0});
        }
        continue;
      }
      state[n] = 2;
      order.push_back(n);
      stack.pop_back();
    }
  }
  return order;
}

std::string strip_dollar(const char* name) { return name[0] == '$' ? std::string(name + 1) : std::string(name); }

}  // namespace

std::unique_ptr<ccv_nnc_micro_combine_s> make_combine(const ccv_nnc_micro_io_t* inputs, int input_size,
                                                      const char* const* parameters, int parameter_size,
                                                      const ccv_nnc_micro_io_t* outputs, int output_size,
                                                      const ccv_nnc_micro_io_t* ingrads, int ingrad_size,
                                                      const ccv_nnc_micro_io_t* outgrads, int outgrad_size) {
  const char* fn = "ccv_nnc_micro_combine_new";
  auto c = std::make_unique<ccv_nnc_micro_combine_s>();
  std::vector<Io*> in = io_list(inputs, input_size, "inputs");
  std::vector<Io*> out = io_list(outputs, output_size, "outputs");
  std::vector<Io*> ig = io_list(ingrads, ingrad_size, "ingrads");
  std::vector<Io*> og = io_list(outgrads, outgrad_size, "outgrads");
  NNC_CHECK(!out.empty() || !og.empty(), "%s: there are neither outputs nor outgrads", fn);
  for (size_t k = 0; k < in.size(); k++) {
    NNC_CHECK(in[k]->kind == kInput, "%s: inputs[%zu] (io #%d) is a %s, not a ccv_nnc_micro_input", fn, k, in[k]->id,
              in[k]->isa->name);
    for (size_t j = 0; j < k; j++) NNC_CHECK(in[j] != in[k], "%s: inputs[%zu] repeats inputs[%zu]", fn, k, j);
  }
  for (size_t k = 0; k < out.size(); k++)
    NNC_CHECK(out[k]->kind != kGrad, "%s: outputs[%zu] is a gradient io; gradients go in outgrads", fn, k);
  for (size_t k = 0; k < og.size(); k++)
    NNC_CHECK(og[k]->kind == kGrad, "%s: outgrads[%zu] (io #%d) is not a ccv_nnc_micro_grad io", fn, k, og[k]->id);
  NNC_CHECK(parameter_size >= 0 && (parameter_size == 0 || parameters),
            "%s: parameters is NULL but parameter_size is %d", fn, parameter_size);
  for (int k = 0; k < parameter_size; k++) {
    NNC_CHECK(parameters[k], "%s: parameters[%d] is NULL", fn, k);
    std::string name = strip_dollar(parameters[k]);
    NNC_CHECK(!name.empty(), "%s: parameters[%d] is an empty name", fn, k);
    NNC_CHECK(std::find(c->parameters.begin(), c->parameters.end(), name) == c->parameters.end(),
              "%s: parameter $%s is named twice", fn, name.c_str());
    c->parameters.push_back(std::move(name));
  }
  std::vector<Io*> roots = in;
  roots.insert(roots.end(), out.begin(), out.end());
  roots.insert(roots.end(), ig.begin(), ig.end());
  roots.insert(roots.end(), og.begin(), og.end());
  c->order = topo_order(roots);
  for (Io* n : c->order) {
    if (n->kind == kInput)
      NNC_CHECK(std::find(in.begin(), in.end(), n) != in.end(),
                "%s: the graph reads io #%d, an input that is not among the combine's inputs", fn, n->id);
    for (const auto* list : {&n->shape, &n->reindex})
      for (const Expr& e : *list)
        for (const std::string& p : e.params)
          NNC_CHECK(std::find(c->parameters.begin(), c->parameters.end(), p) != c->parameters.end(),
                    "%s: expression \"%s\" of io #%d uses $%s, which is not among the parameters", fn, e.text.c_str(),
                    n->id, p.c_str());
  }
  // Nothing can fail from here: take the references.
  for (auto* list : {&in, &out, &ig, &og})
    for (Io* io : *list) io->refs++;
  c->inputs = std::move(in);
  c->outputs = std::move(out);
  c->ingrads = std::move(ig);
  c->outgrads = std::move(og);
  return c;
}

// ---------------------------------------------------------------------------
// The interpreter.

namespace {

using Shape = std::vector<int>;

struct Value {
  Shape dim;
  std::vector<double> v;
};

size_t count_of(const Shape& s) {
  size_t c = 1;
  for (int d : s) c *= static_cast<size_t>(d);
  return c;
}

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t k = 0; k < s.size(); k++) {
    if (k) out += ", ";
    out += std::to_string(s[k]);
  }
  return out + "]";
}

Shape squeeze(const Shape& s) {
  Shape out;
  for (int d : s)
    if (d != 1) out.push_back(d);
  return out;
}

// Row-major flat offset of `index` in `dim`.
size_t flat(const int* index, const Shape& dim) {
  size_t off = 0;
  for (size_t k = 0; k < dim.size(); k++) off = off * dim[k] + index[k];
  return off;
}

struct Interp {
  ccv_nnc_micro_combine_s& c;
  std::vector<int64_t> params;           // by the combine's parameter order
  std::unordered_map<Io*, size_t> slot;  // io -> position in c.order
  std::vector<std::optional<Shape>> shape;
  std::vector<std::optional<Value>> value;
  const char* fn = "ccv_nnc_micro_combine_interpret";

  explicit Interp(ccv_nnc_micro_combine_s& combine) : c(combine) {
    for (size_t k = 0; k < c.order.size(); k++) slot[c.order[k]] = k;
    shape.resize(c.order.size());
    value.resize(c.order.size());
  }

  std::string name(const Io* n) const {
    if (n->kind == kUnary) return format("io #%d (unary %s)", n->id, unary_name(n->op));
    if (n->kind == kBinary) return format("io #%d (binary %s)", n->id, binary_name(n->op));
    return format("io #%d (%s)", n->id, n->isa->name);
  }

  static Shape tensor_shape(const Layout& l) { return Shape(l.dim.begin(), l.dim.begin() + l.nd); }

  Layout check_tensor(const ccv_nnc_tensor_t* t, const char* what, int k) {
    const std::string w = format("%s: %s[%d]", fn, what, k);
    Layout l = layout_of(t, w.c_str());
    NNC_CHECK(l.memory == CCV_TENSOR_CPU_MEMORY, "%s is not in CPU memory; the interpreter runs on the CPU", w.c_str());
    NNC_CHECK(l.datatype == CCV_32F || l.datatype == CCV_64F || l.datatype == CCV_16F || l.datatype == CCV_16BF ||
                  l.datatype == CCV_32S || l.datatype == CCV_64S || l.datatype == CCV_8U,
              "%s has an unsupported datatype", w.c_str());
    NNC_CHECK(l.nd >= 1, "%s has no dimensions", w.c_str());
    return l;
  }

  static Value read(const Layout& l) {
    Value val;
    val.dim = tensor_shape(l);
    val.v.reserve(count_of(val.dim));
    for_each_index(l.dim.data(), l.nd, [&](const int* idx) { val.v.push_back(load_double(l.at(idx), l.datatype)); });
    return val;
  }

  // Whether a tensor of shape `t` can hold a value of shape `s` (size-1 axes may differ).
  static bool fits(const Shape& t, const Shape& s) { return t == s || squeeze(t) == squeeze(s); }

  void set_params(const ccv_nnc_micro_scalar_t* values, int parameter_size) {
    NNC_CHECK(parameter_size == static_cast<int>(c.parameters.size()),
              "%s: parameter_size is %d but the combine was made with %zu parameters", fn, parameter_size,
              c.parameters.size());
    NNC_CHECK(parameter_size == 0 || values, "%s: values is NULL but parameter_size is %d", fn, parameter_size);
    for (int k = 0; k < parameter_size; k++) {
      const ccv_nnc_micro_scalar_t& s = values[k];
      double v = 0;
      switch (s.type) {
        case CCV_8U:
          v = s.u8;
          break;
        case CCV_32S:
          v = s.i32;
          break;
        case CCV_64S:
          params.push_back(s.i64);
          continue;
        case CCV_16F: {
          uint16_t h;
          std::memcpy(&h, &s.f16, sizeof(h));
          v = half_to_float(h);
          break;
        }
        case CCV_32F:
          v = s.f32;
          break;
        case CCV_64F:
          v = s.f64;
          break;
        default:
          fail(CCV_NNC_EXEC_INVALID,
               "%s: values[%d] ($%s) has type 0x%x; use CCV_8U, CCV_32S, CCV_64S, CCV_16F, CCV_32F or CCV_64F", fn, k,
               c.parameters[k].c_str(), s.type);
      }
      NNC_CHECK(std::isfinite(v) && v == std::trunc(v) && std::fabs(v) < 9.0e15,
                "%s: values[%d] ($%s) is %g; parameters are integers", fn, k, c.parameters[k].c_str(), v);
      params.push_back(static_cast<int64_t>(v));
    }
  }

  // The io's expression parameters, in the expression's own slot order.
  std::vector<int64_t> expr_params(const Expr& e) const {
    std::vector<int64_t> out;
    for (const std::string& p : e.params) {
      const size_t k = std::find(c.parameters.begin(), c.parameters.end(), p) - c.parameters.begin();
      out.push_back(params[k]);
    }
    return out;
  }

  std::vector<std::vector<int>> ss_dims(Io* n) {
    std::vector<std::vector<int>> dims;
    for (Io* s : n->ss) dims.push_back(*shape[slot.at(s)]);
    return dims;
  }

  int64_t eval(const Expr& e, const int* index, const std::vector<std::vector<int>>& dims,
               const std::vector<int64_t>& ps, const Io* n) const {
    ExprEnv env{index, &dims, ps.data()};
    bool ok = true;
    const int64_t v = eval_expr(e, env, ok);
    NNC_CHECK(ok, "%s: expression \"%s\" of %s divides by zero", fn, e.text.c_str(), name(n).c_str());
    return v;
  }

  // Shape of each io where it can be known: from its operands, else from a
  // tensor bound to it (a value, or a gradient's shape); where both are known they must agree.
  void infer_shapes() {
    for (size_t k = 0; k < c.order.size(); k++) {
      Io* n = c.order[k];
      std::optional<Shape> given = value[k] ? std::optional<Shape>(value[k]->dim) : shape[k];
      std::optional<Shape> derived;
      auto known = [&](Io* o) -> const Shape* { return shape[slot.at(o)] ? &*shape[slot.at(o)] : nullptr; };
      switch (n->kind) {
        case kInput:
          break;
        case kReindex: {
          bool all = true;
          for (Io* s : n->ss) all = all && known(s);
          if (!all) break;
          const auto dims = ss_dims(n);
          Shape out;
          size_t total = 1;
          for (const Expr& e : n->shape) {
            const int64_t d = eval(e, nullptr, dims, expr_params(e), n);
            NNC_CHECK(d >= 1 && d <= std::numeric_limits<int>::max(),
                      "%s: shape expression \"%s\" of %s evaluates to %lld", fn, e.text.c_str(), name(n).c_str(),
                      static_cast<long long>(d));
            total *= static_cast<size_t>(d);
            NNC_CHECK(total <= (size_t(1) << 28),
                      "%s: %s would have more than 2^28 elements (the interpreter's limit per step)", fn,
                      name(n).c_str());
            out.push_back(static_cast<int>(d));
          }
          derived = out;
          break;
        }
        case kUnary:
          if (const Shape* s = known(n->in(0))) derived = *s;
          break;
        case kBinary: {
          const Shape* l = known(n->in(0));
          const Shape* r = known(n->in(1));
          if (!l || !r) break;
          NNC_CHECK(*l == *r, "%s: shape mismatch in %s: left is %s, right is %s", fn, name(n).c_str(),
                    shape_str(*l).c_str(), shape_str(*r).c_str());
          derived = *l;
          break;
        }
        case kReduce:
          if (const Shape* s = known(n->in(0))) {
            Shape out = *s;
            for (int a : n->axes) out[a] = 1;
            derived = out;
          }
          break;
        case kSelect: {
          const Shape* x = known(n->in(0));
          const Shape* i = known(n->in(1));
          if (!x || !i) break;
          for (int a = 0; a < n->dimensions; a++)
            NNC_CHECK(a == n->axis || (*x)[a] == (*i)[a],
                      "%s: shape mismatch in %s: index is %s, x is %s (they may differ only on axis %d)", fn,
                      name(n).c_str(), shape_str(*i).c_str(), shape_str(*x).c_str(), n->axis);
          derived = *i;
          break;
        }
        case kGrad:
          break;
      }
      if (derived && given)
        NNC_CHECK(*derived == *given, "%s: shape mismatch: the tensor given for %s is %s but its operands make it %s",
                  fn, name(n).c_str(), shape_str(*given).c_str(), shape_str(*derived).c_str());
      shape[k] = derived ? derived : given;
    }
  }

  const Value* val(Io* n) { return value[slot.at(n)] ? &*value[slot.at(n)] : nullptr; }

  Value compute(Io* n) {
    Value out;
    out.dim = *shape[slot.at(n)];
    const size_t total = count_of(out.dim);
    switch (n->kind) {
      case kInput:
        break;
      case kReindex: {
        const Value& x = *val(n->in(0));
        const auto dims = ss_dims(n);
        std::vector<std::vector<int64_t>> ps;
        for (const Expr& e : n->reindex) ps.push_back(expr_params(e));
        out.v.assign(total, 0.0);
        std::vector<int> src(x.dim.size());
        size_t o = 0;
        for_each_index(out.dim.data(), static_cast<int>(out.dim.size()), [&](const int* idx) {
          bool inside = true;
          for (size_t a = 0; a < n->reindex.size(); a++) {
            const int64_t j = eval(n->reindex[a], idx, dims, ps[a], n);
            if (j < 0 || j >= x.dim[a]) inside = false;
            src[a] = inside ? static_cast<int>(j) : 0;
          }
          if (inside) out.v[o] = x.v[flat(src.data(), x.dim)];
          o++;
        });
        break;
      }
      case kUnary: {
        const Value& x = *val(n->in(0));
        out.v.resize(total);
        for (size_t i = 0; i < total; i++) {
          const double a = x.v[i];
          out.v[i] = n->op == CCV_NNC_MICRO_UNARY_OP_NEG   ? -a
                     : n->op == CCV_NNC_MICRO_UNARY_OP_LOG ? std::log(a)
                                                           : std::exp(a);
        }
        break;
      }
      case kBinary: {
        const Value& l = *val(n->in(0));
        const Value& r = *val(n->in(1));
        out.v.resize(total);
        for (size_t i = 0; i < total; i++) {
          const double a = l.v[i], b = r.v[i];
          double y = 0;
          switch (n->op) {
            case CCV_NNC_MICRO_BINARY_OP_PLUS:
              y = a + b;
              break;
            case CCV_NNC_MICRO_BINARY_OP_MINUS:
              y = a - b;
              break;
            case CCV_NNC_MICRO_BINARY_OP_MUL:
              y = a * b;
              break;
            case CCV_NNC_MICRO_BINARY_OP_DIV:
              y = a / b;
              break;
            case CCV_NNC_MICRO_BINARY_OP_MAX:
              y = a >= b ? a : b;
              break;
            case CCV_NNC_MICRO_BINARY_OP_MIN:
              y = a <= b ? a : b;
              break;
            case CCV_NNC_MICRO_BINARY_OP_EQUAL_TO:
              y = a == b;
              break;
            case CCV_NNC_MICRO_BINARY_OP_LESS_THAN:
              y = a < b;
              break;
          }
          out.v[i] = y;
        }
        break;
      }
      case kReduce: {
        const Value& x = *val(n->in(0));
        const int op = static_cast<int>(n->op);
        out.v.assign(total, 0.0);
        std::vector<double> best(total, 0.0);
        std::vector<char> seen(total, 0);
        std::vector<int> o(x.dim.size());
        size_t group = 1;
        for (int a : n->axes) group *= static_cast<size_t>(x.dim[a]);
        size_t i = 0;
        for_each_index(x.dim.data(), static_cast<int>(x.dim.size()), [&](const int* idx) {
          size_t pos = 0;  // row-major position within the reduced axes
          for (size_t a = 0; a < x.dim.size(); a++) o[a] = idx[a];
          for (int a : n->axes) {
            pos = pos * x.dim[a] + idx[a];
            o[a] = 0;
          }
          const size_t t = flat(o.data(), out.dim);
          const double v = x.v[i++];
          switch (op) {
            case CCV_NNC_MICRO_REDUCE_OP_SUM:
            case CCV_NNC_MICRO_REDUCE_OP_MEAN:
              out.v[t] += v;
              break;
            case CCV_NNC_MICRO_REDUCE_OP_PROD:
              out.v[t] = seen[t] ? out.v[t] * v : v;
              break;
            case CCV_NNC_MICRO_REDUCE_OP_MAX:
            case CCV_NNC_MICRO_REDUCE_OP_ARGMAX:
              if (!seen[t] || v > best[t])
                best[t] = v, out.v[t] = op == CCV_NNC_MICRO_REDUCE_OP_MAX ? v : static_cast<double>(pos);
              break;
            case CCV_NNC_MICRO_REDUCE_OP_MIN:
            case CCV_NNC_MICRO_REDUCE_OP_ARGMIN:
              if (!seen[t] || v < best[t])
                best[t] = v, out.v[t] = op == CCV_NNC_MICRO_REDUCE_OP_MIN ? v : static_cast<double>(pos);
              break;
          }
          seen[t] = 1;
        });
        if (op == CCV_NNC_MICRO_REDUCE_OP_MEAN)
          for (double& v : out.v) v /= static_cast<double>(group);
        break;
      }
      case kSelect: {
        const Value& x = *val(n->in(0));
        const Value& index = *val(n->in(1));
        out.v.resize(total);
        std::vector<int> src(x.dim.size());
        size_t i = 0;
        for_each_index(out.dim.data(), static_cast<int>(out.dim.size()), [&](const int* idx) {
          const int j = checked_index(n, index.v[i], x.dim[n->axis]);
          for (size_t a = 0; a < x.dim.size(); a++) src[a] = idx[a];
          src[n->axis] = j;
          out.v[i++] = x.v[flat(src.data(), x.dim)];
        });
        break;
      }
      case kGrad:
        break;
    }
    return out;
  }

  int checked_index(const Io* n, double v, int size) const {
    NNC_CHECK(v == std::trunc(v) && v >= 0 && v < size, "%s: %s: index value %g is not a whole number in [0, %d)", fn,
              name(n).c_str(), v, size);
    return static_cast<int>(v);
  }

  // Compute every io whose operands' values are known.
  void compute_values() {
    for (size_t k = 0; k < c.order.size(); k++) {
      Io* n = c.order[k];
      if (value[k] || n->kind == kInput) continue;
      if (!shape[k]) continue;
      bool ready = true;
      // ss contribute only shapes; every other operand is read.
      const size_t reads = n->kind == kReindex ? 1 : n->held.size();
      for (size_t j = 0; j < reads; j++) ready = ready && val(n->in(static_cast<int>(j)));
      if (ready) value[k] = compute(n);
    }
  }

  // Write `v` (of io n's shape) into tensor t. Checked first by check_output.
  static void write(const Layout& l, const std::vector<double>& v) {
    size_t i = 0;
    for_each_index(l.dim.data(), l.nd, [&](const int* idx) { store_double(l.at(idx), l.datatype, v[i++]); });
  }

  void check_output(const Layout& l, Io* n, const char* what, int k) {
    const Shape& s = *shape[slot.at(n)];
    NNC_CHECK(fits(tensor_shape(l), s), "%s: shape mismatch: %s[%d] is %s but %s is %s", fn, what, k,
              shape_str(tensor_shape(l)).c_str(), name(n).c_str(), shape_str(s).c_str());
  }

  void need_shape(Io* n, const char* why) {
    NNC_CHECK(shape[slot.at(n)], "%s: the shape of %s is unknown (%s); give a tensor for it", fn, name(n).c_str(), why);
  }

  void forward(ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
    NNC_CHECK(input_size == static_cast<int>(c.inputs.size()), "%s: input_size is %d but the combine has %zu inputs",
              fn, input_size, c.inputs.size());
    NNC_CHECK(output_size == static_cast<int>(c.outputs.size()),
              "%s: output_size is %d but the combine has %zu outputs", fn, output_size, c.outputs.size());
    NNC_CHECK(input_size == 0 || inputs, "%s: inputs is NULL", fn);
    NNC_CHECK(output_size == 0 || outputs, "%s: outputs is NULL", fn);
    for (int k = 0; k < input_size; k++) {
      const Layout l = check_tensor(inputs[k], "inputs", k);
      Io* n = c.inputs[k];
      NNC_CHECK(l.nd == n->dimensions, "%s: shape mismatch: inputs[%d] has %d dimensions but its io #%d has %d", fn, k,
                l.nd, n->id, n->dimensions);
      value[slot.at(n)] = read(l);
    }
    infer_shapes();
    compute_values();
    std::vector<Layout> outs(output_size);
    for (int k = 0; k < output_size; k++) {
      if (!outputs[k]) continue;
      outs[k] = check_tensor(outputs[k], "outputs", k);
      check_output(outs[k], c.outputs[k], "outputs", k);
    }
    for (int k = 0; k < output_size; k++)
      if (outputs[k]) write(outs[k], val(c.outputs[k])->v);
  }

  // Gradient propagation: add node n's gradient g into its operands' gradients.
  void propagate(Io* n, const std::vector<double>& g, std::vector<std::vector<double>>& grad,
                 const std::vector<char>& wanted) {
    auto want = [&](int j) { return wanted[slot.at(n->in(j))] != 0; };
    auto acc = [&](int j) -> std::vector<double>& {
      Io* o = n->in(j);
      auto& buf = grad[slot.at(o)];
      if (buf.empty()) {
        need_shape(o, "its gradient is needed");
        buf.assign(count_of(*shape[slot.at(o)]), 0.0);
      }
      return buf;
    };
    auto need = [&](Io* o) -> const Value& {
      const Value* v = val(o);
      NNC_CHECK(
          v,
          "%s: the backward of %s needs the value of %s, which is neither among the ingrads nor computable from them",
          fn, name(n).c_str(), name(o).c_str());
      return *v;
    };
    const size_t total = g.size();
    switch (n->kind) {
      case kInput:
      case kGrad:
        break;
      case kReindex: {
        if (!want(0)) break;
        Io* x = n->in(0);
        need_shape(x, "the backward of a reindex scatters into it");
        const Shape xs = *shape[slot.at(x)];
        auto& dx = acc(0);
        const auto dims = ss_dims(n);
        std::vector<std::vector<int64_t>> ps;
        for (const Expr& e : n->reindex) ps.push_back(expr_params(e));
        const Shape& ys = *shape[slot.at(n)];
        std::vector<int> src(xs.size());
        size_t i = 0;
        for_each_index(ys.data(), static_cast<int>(ys.size()), [&](const int* idx) {
          bool inside = true;
          for (size_t a = 0; a < n->reindex.size(); a++) {
            const int64_t j = eval(n->reindex[a], idx, dims, ps[a], n);
            if (j < 0 || j >= xs[a]) inside = false;
            src[a] = inside ? static_cast<int>(j) : 0;
          }
          if (inside) dx[flat(src.data(), xs)] += g[i];
          i++;
        });
        break;
      }
      case kUnary: {
        if (!want(0)) break;
        if (n->op == CCV_NNC_MICRO_UNARY_OP_NEG) {
          auto& dx = acc(0);
          for (size_t i = 0; i < total; i++) dx[i] -= g[i];
        } else if (n->op == CCV_NNC_MICRO_UNARY_OP_LOG) {
          const Value& x = need(n->in(0));
          auto& dx = acc(0);
          for (size_t i = 0; i < total; i++) dx[i] += g[i] / x.v[i];
        } else {
          const Value& y = need(n);
          auto& dx = acc(0);
          for (size_t i = 0; i < total; i++) dx[i] += g[i] * y.v[i];
        }
        break;
      }
      case kBinary: {
        const uint32_t op = n->op;
        if (op == CCV_NNC_MICRO_BINARY_OP_EQUAL_TO || op == CCV_NNC_MICRO_BINARY_OP_LESS_THAN) break;
        for (int side = 0; side < 2; side++) {
          if (!want(side)) continue;
          if (op == CCV_NNC_MICRO_BINARY_OP_PLUS || op == CCV_NNC_MICRO_BINARY_OP_MINUS) {
            auto& d = acc(side);
            const double s = (op == CCV_NNC_MICRO_BINARY_OP_MINUS && side == 1) ? -1.0 : 1.0;
            for (size_t i = 0; i < total; i++) d[i] += s * g[i];
            continue;
          }
          const Value& l = need(n->in(0));
          const Value& r = need(n->in(1));
          auto& d = acc(side);
          for (size_t i = 0; i < total; i++) {
            const double a = l.v[i], b = r.v[i];
            switch (op) {
              case CCV_NNC_MICRO_BINARY_OP_MUL:
                d[i] += g[i] * (side == 0 ? b : a);
                break;
              case CCV_NNC_MICRO_BINARY_OP_DIV:
                d[i] += side == 0 ? g[i] / b : -g[i] * a / (b * b);
                break;
              case CCV_NNC_MICRO_BINARY_OP_MAX:
                if ((a >= b) == (side == 0)) d[i] += g[i];
                break;
              case CCV_NNC_MICRO_BINARY_OP_MIN:
                if ((a <= b) == (side == 0)) d[i] += g[i];
                break;
            }
          }
        }
        break;
      }
      case kReduce: {
        const int op = static_cast<int>(n->op);
        if (!want(0) || op == CCV_NNC_MICRO_REDUCE_OP_ARGMAX || op == CCV_NNC_MICRO_REDUCE_OP_ARGMIN) break;
        Io* xio = n->in(0);
        const Value* x = nullptr;
        if (op == CCV_NNC_MICRO_REDUCE_OP_MAX || op == CCV_NNC_MICRO_REDUCE_OP_MIN ||
            op == CCV_NNC_MICRO_REDUCE_OP_PROD)
          x = &need(xio);
        need_shape(xio, "the backward of a reduce spreads into it");
        const Shape xs = *shape[slot.at(xio)];
        const Shape& ys = *shape[slot.at(n)];
        auto& dx = acc(0);
        size_t group = 1;
        for (int a : n->axes) group *= static_cast<size_t>(xs[a]);
        // Per output element: the chosen position (max/min), or the zero count and product of non-zeros (prod).
        std::vector<double> best(total, 0.0), nz_prod(total, 1.0);
        std::vector<size_t> at(total, 0), zeros(total, 0);
        std::vector<char> seen(total, 0);
        std::vector<int> o(xs.size());
        auto out_of = [&](const int* idx) {
          for (size_t a = 0; a < xs.size(); a++) o[a] = idx[a];
          for (int a : n->axes) o[a] = 0;
          return flat(o.data(), ys);
        };
        if (x) {
          size_t i = 0;
          for_each_index(xs.data(), static_cast<int>(xs.size()), [&](const int* idx) {
            const size_t t = out_of(idx);
            const double v = x->v[i];
            if (op == CCV_NNC_MICRO_REDUCE_OP_PROD) {
              if (v == 0)
                zeros[t]++;
              else
                nz_prod[t] *= v;
            } else if (!seen[t] || (op == CCV_NNC_MICRO_REDUCE_OP_MAX ? v > best[t] : v < best[t])) {
              best[t] = v;
              at[t] = i;
            }
            seen[t] = 1;
            i++;
          });
        }
        size_t i = 0;
        for_each_index(xs.data(), static_cast<int>(xs.size()), [&](const int* idx) {
          const size_t t = out_of(idx);
          switch (op) {
            case CCV_NNC_MICRO_REDUCE_OP_SUM:
              dx[i] += g[t];
              break;
            case CCV_NNC_MICRO_REDUCE_OP_MEAN:
              dx[i] += g[t] / static_cast<double>(group);
              break;
            case CCV_NNC_MICRO_REDUCE_OP_MAX:
            case CCV_NNC_MICRO_REDUCE_OP_MIN:
              if (at[t] == i) dx[i] += g[t];
              break;
            case CCV_NNC_MICRO_REDUCE_OP_PROD: {
              // Product of the others: exact even when some elements are zero.
              const double v = x->v[i];
              double others = 0;
              if (v != 0)
                others = zeros[t] ? 0.0 : nz_prod[t] / v;
              else
                others = zeros[t] == 1 ? nz_prod[t] : 0.0;
              dx[i] += g[t] * others;
              break;
            }
          }
          i++;
        });
        break;
      }
      case kSelect: {
        if (!want(0)) break;
        Io* xio = n->in(0);
        const Value& index = need(n->in(1));
        need_shape(xio, "the backward of a select scatters into it");
        const Shape xs = *shape[slot.at(xio)];
        const Shape& ys = *shape[slot.at(n)];
        auto& dx = acc(0);
        std::vector<int> src(xs.size());
        size_t i = 0;
        for_each_index(ys.data(), static_cast<int>(ys.size()), [&](const int* idx) {
          const int j = checked_index(n, index.v[i], xs[n->axis]);
          for (size_t a = 0; a < xs.size(); a++) src[a] = idx[a];
          src[n->axis] = j;
          dx[flat(src.data(), xs)] += g[i];
          i++;
        });
        break;
      }
    }
  }

  void backward(ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* outputs, int output_size) {
    NNC_CHECK(input_size == static_cast<int>(c.ingrads.size()), "%s: input_size is %d but the combine has %zu ingrads",
              fn, input_size, c.ingrads.size());
    NNC_CHECK(output_size == static_cast<int>(c.outgrads.size()),
              "%s: output_size is %d but the combine has %zu outgrads", fn, output_size, c.outgrads.size());
    NNC_CHECK(input_size == 0 || inputs, "%s: inputs is NULL", fn);
    NNC_CHECK(output_size == 0 || outputs, "%s: outputs is NULL", fn);
    std::vector<std::pair<Io*, Value>> seeds;
    for (int k = 0; k < input_size; k++) {
      if (!inputs[k]) continue;  // an ingrad not given: as if zero / unknown
      const Layout l = check_tensor(inputs[k], "inputs", k);
      Io* io = c.ingrads[k];
      Io* target = io->kind == kGrad ? io->in(0) : io;
      const size_t s = slot.at(target);
      if (l.nd == target->dimensions && !shape[s]) shape[s] = tensor_shape(l);
      if (io->kind == kGrad) {
        seeds.push_back({target, read(l)});
      } else {
        NNC_CHECK(l.nd == target->dimensions, "%s: shape mismatch: inputs[%d] has %d dimensions but its io #%d has %d",
                  fn, k, l.nd, target->id, target->dimensions);
        value[s] = read(l);
      }
    }
    // Output tensors tell the shapes of what they are gradients of.
    for (int k = 0; k < output_size; k++) {
      if (!outputs[k]) continue;
      const Layout l = check_tensor(outputs[k], "outputs", k);
      Io* target = c.outgrads[k]->in(0);
      const size_t s = slot.at(target);
      if (l.nd == target->dimensions && !shape[s]) shape[s] = tensor_shape(l);
    }
    infer_shapes();
    compute_values();
    // Which ios' gradients are needed: targets and anything whose operands lead to one.
    std::vector<char> wanted(c.order.size(), 0);
    for (Io* og : c.outgrads) wanted[slot.at(og->in(0))] = 1;
    for (size_t k = 0; k < c.order.size(); k++) {
      Io* n = c.order[k];
      const size_t reads = n->kind == kReindex ? 1 : n->held.size();
      for (size_t j = 0; j < reads; j++) wanted[k] = wanted[k] || wanted[slot.at(n->in(static_cast<int>(j)))];
    }
    std::vector<std::vector<double>> grad(c.order.size());
    for (auto& [target, v] : seeds) {
      const size_t s = slot.at(target);
      need_shape(target, "its gradient is given");
      NNC_CHECK(fits(v.dim, *shape[s]), "%s: shape mismatch: the gradient given for %s is %s but the io is %s", fn,
                name(target).c_str(), shape_str(v.dim).c_str(), shape_str(*shape[s]).c_str());
      if (grad[s].empty()) grad[s].assign(v.v.size(), 0.0);
      for (size_t i = 0; i < v.v.size(); i++) grad[s][i] += v.v[i];
    }
    for (size_t k = c.order.size(); k-- > 0;) {
      Io* n = c.order[k];
      if (!wanted[k] || grad[k].empty()) continue;
      propagate(n, grad[k], grad, wanted);
    }
    std::vector<Layout> outs(output_size);
    for (int k = 0; k < output_size; k++) {
      if (!outputs[k]) continue;
      outs[k] = check_tensor(outputs[k], "outputs", k);
      Io* target = c.outgrads[k]->in(0);
      need_shape(target, "it is an outgrad's io");
      check_output(outs[k], target, "outputs", k);
    }
    for (int k = 0; k < output_size; k++) {
      if (!outputs[k]) continue;
      const size_t s = slot.at(c.outgrads[k]->in(0));
      if (grad[s].empty()) grad[s].assign(count_of(*shape[s]), 0.0);  // nothing flows to it
      write(outs[k], grad[s]);
    }
  }
};

}  // namespace

void interpret(ccv_nnc_micro_combine_s& c, uint32_t cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
               const ccv_nnc_micro_scalar_t* values, int parameter_size, ccv_nnc_tensor_t* const* outputs,
               int output_size) {
  Interp in(c);
  NNC_CHECK(cmd == CCV_NNC_CUSTOM_FORWARD || cmd == CCV_NNC_CUSTOM_BACKWARD,
            "ccv_nnc_micro_combine_interpret: cmd is 0x%x; use CCV_NNC_CUSTOM_FORWARD or CCV_NNC_CUSTOM_BACKWARD", cmd);
  in.set_params(values, parameter_size);
  if (cmd == CCV_NNC_CUSTOM_FORWARD)
    in.forward(inputs, input_size, outputs, output_size);
  else
    in.backward(inputs, input_size, outputs, output_size);
}

}  // namespace nnc::micro
