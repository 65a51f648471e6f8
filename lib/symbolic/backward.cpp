// Reverse-mode automatic differentiation of symbolic graphs (Level 3.5);
// see backward.hpp. Loops and branches (while / case..of sub-graphs) are
// differentiated by recomputing a round or a branch inside a backward loop or
// case..of (below); a loop or branch nested in one is recomputed with it (a
// copy) and differentiated there by the same code, at any depth.
#include "symbolic/backward.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/cmd.hpp"
#include "core/error.hpp"
#include "core/export.hpp"
#include "core/registry.hpp"
#include "core/tensor.hpp"
#include "symbolic/loop_tape.hpp"

namespace nnc::symbolic {

namespace {

constexpr const char* kWhat = "ccv_nnc_symbolic_graph_backward";

// The gradients of the last backward pass live in the graph (Graph::gradients).
using Record = Graph::GradientRecord;

bool is_float(int datatype) {
  const int t = CCV_GET_DATA_TYPE(datatype);
  return t == CCV_32F || t == CCV_64F || t == CCV_16F || t == CCV_16BF;
}

int ndim(const ccv_nnc_tensor_param_t& info) { return nd_of(info.dim); }

size_t count_of(const ccv_nnc_tensor_param_t& info) {
  const size_t s = datatype_size(info.datatype);
  return s ? bytes_of(info) / s : 0;
}

// Where a symbol sits in its base: shape, first element and strides.
struct Geometry {
  int nd = 0;
  int dim[CCV_NNC_MAX_DIM_ALLOC] = {};
  int64_t first = 0;
  int64_t stride[CCV_NNC_MAX_DIM_ALLOC] = {};
  bool operator==(const Geometry& o) const {
    return nd == o.nd && first == o.first && std::equal(dim, dim + nd, o.dim) && std::equal(stride, stride + nd, o.stride);
  }
};

class Differentiator {
 public:
  explicit Differentiator(Graph* g) : g_(g) {}

  void run(const ccv_nnc_tensor_symbol_t* f, int f_size, const ccv_nnc_tensor_symbol_t* wrt, int wrt_size,
           const ccv_nnc_graph_exec_symbol_t* sources, int source_size, const ccv_nnc_graph_exec_symbol_t* destinations,
           int destination_size);

 private:
  struct Contribution {
    int target;  // the forward symbol (a base or an alias) the gradient is of
    int grad;    // a packed base symbol of the target's shape
  };

  Graph* g_;
  std::vector<int> new_execs_;
  std::map<int, std::vector<Contribution>> contributions_;  // by base
  std::unordered_map<int, int> memo_;                       // forward symbol -> its gradient (-1: none)
  std::unordered_set<int> consumed_;                        // partial gradients gradient() has read

  // A partial gradient of `target`. One of the same place that nothing has
  // read yet is added to it at once (an EWSUM), so that a value read at every
  // step of an unrolled loop (an LSTM's weights) holds one running sum instead
  // of every step's gradient alive until a single EWSUM at the end.
  void add(int target, int grad) {
    auto& list = contributions_[base_of(g_, target)];
    for (Contribution& c : list)
      if (!consumed_.count(c.grad) && (c.target == target || geometry(c.target) == geometry(target)) &&
          t(c.grad).alias_of < 0 && t(c.grad).aliases.empty()) {
        c.grad = sum({c.grad, grad}, -1, t(c.grad).info, name_for(c.target));
        return;
      }
    list.push_back({target, grad});
  }

  const Graph::Tensor& t(int d) const { return g_->tensors[static_cast<size_t>(d)]; }

  Geometry geometry(int d) const {
    Geometry r;
    const Graph::Tensor& x = t(d);
    r.nd = ndim(x.info);
    std::copy(x.info.dim, x.info.dim + r.nd, r.dim);
    int64_t last;
    element_range(g_, d, &r.first, &last);
    if (x.alias_of >= 0)
      alias_strides(g_, d, r.stride);
    else
      packed_strides(x.info.dim, r.nd, r.stride);
    return r;
  }

  // The symbol covers its base's elements exactly, in packed order (the base
  // itself or a reshape of it).
  bool covers_base(int d) const {
    const Geometry geo = geometry(d);
    int64_t packed[CCV_NNC_MAX_DIM_ALLOC];
    packed_strides(geo.dim, geo.nd, packed);
    return geo.first == 0 && std::equal(packed, packed + geo.nd, geo.stride) &&
           count_of(t(d).info) == count_of(t(base_of(g_, d)).info);
  }

  std::string name_for(int forward) const {
    const std::string& n = t(forward).name;
    return n.empty() ? std::string() : "d" + n;
  }

  int fresh(const ccv_nnc_tensor_param_t& info, const std::string& name, int flags = 0) {
    // A copy: `info` may live in the symbol table, which tensor_new can move
    // before it passes the parameters to the caller's hook.
    const ccv_nnc_tensor_param_t params = info;
    const ccv_nnc_tensor_symbol_t s = tensor_new(g_, params, name.empty() ? nullptr : name.c_str());
    g_->tensors[static_cast<size_t>(s.d)].flags |= flags;
    return s.d;
  }

  // An alias of `of` (a packed base) at `like`'s place in its own base; both
  // bases hold the same number of elements, so the offsets carry over.
  int alias_like(int of, int like) {
    const Graph::Tensor& l = t(like);
    int ofs[CCV_NNC_MAX_DIM_ALLOC] = {}, stride[CCV_NNC_MAX_DIM_ALLOC] = {};
    if (l.alias_of >= 0) {
      std::copy(l.ofs, l.ofs + CCV_NNC_MAX_DIM_ALLOC, ofs);
      std::copy(l.stride, l.stride + CCV_NNC_MAX_DIM_ALLOC, stride);
    }
    const ccv_nnc_tensor_param_t info = l.info;
    return alias_new(g_, {of, g_}, ofs, stride, info, nullptr).d;
  }

  // `of` (a packed base) seen with `shape`'s parameters: itself when the
  // shapes agree, else a reshape.
  int reshaped(int of, const ccv_nnc_tensor_param_t& shape) {
    if (std::equal(shape.dim, shape.dim + CCV_NNC_MAX_DIM_ALLOC, t(of).info.dim)) return of;
    int zeros[CCV_NNC_MAX_DIM_ALLOC] = {};
    return alias_new(g_, {of, g_}, zeros, zeros, shape, nullptr).d;
  }

  // Zeros: flagged INIT_ZEROS in the root graph; inside a loop body or a
  // branch (whose symbols compile does not initialise) written by a SET.
  int zero_symbol(const ccv_nnc_tensor_param_t& info, const std::string& name) {
    if (!g_->parent) return fresh(info, name, CCV_NNC_TENSOR_SYMBOL_INIT_ZEROS);
    const int z = fresh(info, name);
    ccv_nnc_cmd_param_t p;
    std::memset(&p, 0, sizeof(p));
    emit(make_cmd(CCV_NNC_SET_FORWARD, nullptr, p, 0), nullptr, {}, {z}, "zero");
    return z;
  }

  int emit(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t* hint, const std::vector<int>& in, const std::vector<int>& out,
           const char* name) {
    std::vector<ccv_nnc_tensor_symbol_t> i, o;
    for (int d : in) i.push_back(d >= 0 ? ccv_nnc_tensor_symbol_t{d, g_} : ccv_nnc_tensor_symbol_t{CCV_NNC_NO_TENSOR_SYMBOL, nullptr});
    for (int d : out) o.push_back(d >= 0 ? ccv_nnc_tensor_symbol_t{d, g_} : ccv_nnc_tensor_symbol_t{CCV_NNC_NO_TENSOR_SYMBOL, nullptr});
    const ccv_nnc_graph_exec_symbol_t e =
        exec_new(g_, cmd, i.data(), static_cast<int>(i.size()), o.data(), static_cast<int>(o.size()), name);
    if (hint) g_->execs[static_cast<size_t>(e.d)].hint = *hint;
    new_execs_.push_back(e.d);
    return e.d;
  }

  static ccv_nnc_cmd_t simple(uint32_t id) {
    ccv_nnc_cmd_param_t p;
    std::memset(&p, 0, sizeof(p));
    return make_cmd(id, nullptr, p, 0);
  }

  // Sum `grads` (one shape) into `into` (a new symbol of that shape when -1).
  int sum(const std::vector<int>& grads, int into, const ccv_nnc_tensor_param_t& info, const std::string& name) {
    if (into < 0) into = fresh(info, name);
    emit(simple(CCV_NNC_EWSUM_FORWARD), nullptr, grads, {into}, "sum gradients");
    return into;
  }

  // Have the backward exec that writes `grad` (nothing read it yet) write
  // `part` instead, saving a copy; the contribution then names `part`.
  bool redirect(int base, int grad, int part) {
    const Graph::Tensor& x = t(grad);
    if (x.alias_of >= 0 || !x.aliases.empty() || x.writers.size() != 1) return false;
    const int w = x.writers[0];
    if (std::find(new_execs_.begin(), new_execs_.end(), w) == new_execs_.end()) return false;
    for (int e : new_execs_)
      for (int d : g_->execs[static_cast<size_t>(e)].inputs)
        if (d == grad) return false;
    for (const auto& [symbol, r] : memo_)
      if (r == grad) return false;
    const Graph::Exec& we = g_->execs[static_cast<size_t>(w)];
    std::vector<ccv_nnc_tensor_symbol_t> in, out;
    auto ref = [&](int d) {
      return d >= 0 ? ccv_nnc_tensor_symbol_t{d, g_} : ccv_nnc_tensor_symbol_t{CCV_NNC_NO_TENSOR_SYMBOL, nullptr};
    };
    for (int d : we.inputs) in.push_back(ref(d));
    for (int d : we.outputs) out.push_back(ref(d == grad ? part : d));
    exec_set_io(g_, w, in.data(), static_cast<int>(in.size()), out.data(), static_cast<int>(out.size()));
    tensor_free(g_, {grad, g_});
    for (Contribution& c : contributions_[base])
      if (c.grad == grad) c.grad = part;
    return true;
  }

  int gradient(int o);
  int combine(int base, const std::vector<Contribution>& parts);

  // Where box `inner` lies wholly inside box `outer` of the same base, both
  // laid out with the same strides: the per-dimension offset; false otherwise.
  bool inside(int inner, int outer, int* rel) const {
    const Geometry gi = geometry(inner), go = geometry(outer);
    if (gi.nd != go.nd || !std::equal(gi.stride, gi.stride + gi.nd, go.stride)) return false;
    int64_t fi = 0, fo = 0;
    for (int k = 0; k < gi.nd; k++) {
      const int oi = t(inner).alias_of >= 0 ? t(inner).ofs[k] : 0, oo = t(outer).alias_of >= 0 ? t(outer).ofs[k] : 0;
      fi += oi * gi.stride[k];
      fo += oo * go.stride[k];
      if (oi < oo || oi + gi.dim[k] > oo + go.dim[k]) return false;
      rel[k] = oi - oo;
    }
    return fi == gi.first && fo == go.first;
  }

  // The gradient of o read straight out of partial gradients of larger boxes
  // that each hold o (a dense block's prefixes read by its later layers):
  // views of them, with no zero-initialised base and no copies (combine()
  // would build one base-sized sum per such o). Empty when some part does
  // not hold o.
  std::vector<int> within(int o, const std::vector<Contribution>& parts) {
    std::vector<std::vector<int>> rels;
    for (const Contribution& c : parts) {
      std::vector<int> rel(CCV_NNC_MAX_DIM_ALLOC, 0);
      // A gradient redirected into its place in a combined base is a view already.
      if (t(c.grad).alias_of >= 0 || !inside(o, c.target, rel.data())) return {};
      rels.push_back(std::move(rel));
    }
    std::vector<int> pieces;
    for (size_t i = 0; i < parts.size(); i++) {
      const Graph::Tensor& gt = t(parts[i].grad);
      int stride[CCV_NNC_MAX_DIM_ALLOC] = {};
      int64_t packed[CCV_NNC_MAX_DIM_ALLOC];
      packed_strides(gt.info.dim, ndim(gt.info), packed);
      for (int k = 0; k < ndim(gt.info); k++) stride[k] = static_cast<int>(packed[k]);
      const ccv_nnc_tensor_param_t info = t(o).info;
      pieces.push_back(alias_new(g_, {parts[i].grad, g_}, rels[i].data(), stride, info, nullptr).d);
    }
    return pieces;
  }
  void differentiate(int e, const std::vector<char>& reached);
  void differentiate_backward(int e, const std::vector<int>& grad_out, const std::vector<char>& wanted);
  void differentiate_while(int e, const std::vector<int>& grad_out, const std::vector<char>& wanted);
  void differentiate_case_of(int e, const std::vector<int>& grad_out, const std::vector<char>& wanted);
  // A base symbol holding `d`'s gradient value: d itself, or a copy when d is an alias.
  int as_base(Graph* g, int d, const char* name);

  // Changes to graphs other than g_ (a differentiated loop's body), undone
  // when the backward pass fails.
  std::vector<std::function<void()>> undo_;

 public:
  // For the second-order rules (below): forward commands over symbols.
  const Graph::Tensor& tensor(int d) const { return t(d); }
  // `c` over `in` into a new symbol shaped like `like` (-1: the command's inference).
  int apply(const ccv_nnc_cmd_t& c, const std::vector<int>& in, int like, std::vector<int> outs = {}) {
    ccv_nnc_tensor_param_t info;
    if (like >= 0) {
      info = t(like).info;
    } else {
      info = t(in[0] >= 0 ? in[0] : in[1]).info;
      std::fill(info.dim, info.dim + CCV_NNC_MAX_DIM_ALLOC, 0);
    }
    const int o = fresh(info, std::string());
    if (outs.empty()) outs = {o};
    for (int& x : outs)
      if (x == -2) x = o;
    emit(c, nullptr, in, outs, "second order");
    return o;
  }
  int zeros(int like) { return zero_symbol(t(like).info, std::string()); }
  void undo() {
    for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) (*it)();
    undo_.clear();
  }
  void contribute(int target, int grad) { add(target, grad); }
  Graph* graph() const { return g_; }
};

// The gradient of forward symbol o from the contributions recorded so far (all
// of them: every reader of o comes after its writer, so it was processed).
int Differentiator::gradient(int o) {
  if (const auto it = memo_.find(o); it != memo_.end()) return it->second;
  const int b = base_of(g_, o);
  std::vector<Contribution> parts;
  for (const Contribution& c : contributions_[b])
    if (may_overlap(g_, c.target, o)) {
      parts.push_back(c);
      consumed_.insert(c.grad);
    }
  int r = -1;
  if (!parts.empty()) {
    const Geometry geo = geometry(o);
    bool same = true;
    for (const Contribution& c : parts) same = same && geometry(c.target) == geo;
    if (same) {
      if (parts.size() == 1) {
        r = parts[0].grad;
      } else {
        std::vector<int> grads;
        for (const Contribution& c : parts) grads.push_back(c.grad);
        r = sum(grads, -1, t(o).info, name_for(o));
      }
    } else if (std::vector<int> pieces = within(o, parts); !pieces.empty()) {
      r = pieces.size() == 1 ? pieces[0] : sum(pieces, -1, t(o).info, name_for(o));
    } else {
      const int whole = combine(b, parts);
      r = t(o).alias_of >= 0 ? alias_like(whole, o) : reshaped(whole, t(o).info);
    }
  }
  memo_[o] = r;
  return r;
}

// One packed gradient over a whole base from partial gradients at several
// places in it: each place's gradients are summed into an alias of a
// zero-initialised base-sized symbol; places that overlap go into different
// such layers, which one EWSUM adds up.
int Differentiator::combine(int base, const std::vector<Contribution>& parts) {
  struct Group {
    int target;
    std::vector<int> grads;
  };
  std::vector<Group> groups;
  for (const Contribution& c : parts) {
    const Geometry geo = geometry(c.target);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& gr) { return geometry(gr.target) == geo; });
    if (it == groups.end())
      groups.push_back({c.target, {c.grad}});
    else
      it->grads.push_back(c.grad);
  }
  std::vector<std::vector<int>> layers;  // indices into groups
  for (size_t i = 0; i < groups.size(); i++) {
    bool placed = false;
    for (auto& layer : layers) {
      bool apart = true;
      for (int j : layer) apart = apart && !may_overlap(g_, groups[i].target, groups[static_cast<size_t>(j)].target);
      if (apart) {
        layer.push_back(static_cast<int>(i));
        placed = true;
        break;
      }
    }
    if (!placed) layers.push_back({static_cast<int>(i)});
  }
  const ccv_nnc_tensor_param_t info = t(base).info;
  const std::string name = name_for(base);
  std::vector<int> sums;
  for (const auto& layer : layers) {
    const Group& first = groups[static_cast<size_t>(layer[0])];
    if (layer.size() == 1 && covers_base(first.target)) {
      const int s = first.grads.size() == 1 ? first.grads[0] : sum(first.grads, -1, t(first.target).info, name);
      sums.push_back(s);
      continue;
    }
    const int whole = fresh(info, name, CCV_NNC_TENSOR_SYMBOL_INIT_ZEROS);
    for (int j : layer) {
      const Group& gr = groups[static_cast<size_t>(j)];
      const int part = alias_like(whole, gr.target);
      if (gr.grads.size() == 1 && redirect(base, gr.grads[0], part))
        continue;
      else if (gr.grads.size() == 1)
        emit(simple(CCV_NNC_DATA_TRANSFER_FORWARD), nullptr, {gr.grads[0]}, {part}, "place gradient");
      else
        sum(gr.grads, part, info, name);
    }
    sums.push_back(whole);
  }
  if (sums.size() == 1) return sums[0];
  std::vector<int> shaped;
  for (int s : sums) shaped.push_back(reshaped(s, info));
  return sum(shaped, -1, info, name);
}

// --- Second order (beyond libnnc) -------------------------------------------
//
// A backward command B reads |g..|x..|y..| and writes |dx..|. Differentiating
// it again means: with H the gradients arriving at B's outputs, the gradient
// of <H, B(g, x, y)> with respect to each of B's inputs. Each rule writes it
// with forward commands, and with backward commands where those are the
// linear map needed (TANH_BACKWARD(H, y) is H (1 - y^2), the gradient of
// <H, TANH_BACKWARD(g, y)> in g), so the result plans and runs like any other
// part of the graph. y is an input of B like any other: its own dependence on
// x reaches x through the forward exec that wrote it.
//
// Bilinear forwards (GEMM, MUL, two-input EWPROD) need nothing new: with
// F(a, w) bilinear, da = Fa*(g; w) and dw = Fw*(g; a) are its adjoints, so
// d<Ha, da>/dg = F(Ha, w), d<Ha, da>/dw = Fw*(g; Ha), and alike for Hw.

struct Adjoint {
  Differentiator& d;
  const Graph::Exec& b;  // the backward exec
  std::string label;
  std::vector<int> h;        // the gradient of each of b's outputs, -1 where none arrives
  std::vector<char> wanted;  // which of b's inputs need a gradient

  int in(size_t k) const { return k < b.inputs.size() ? b.inputs[k] : -1; }
  int H(size_t j) const { return j < h.size() ? h[j] : -1; }
  bool want(size_t k) const { return k < wanted.size() && wanted[k] && in(k) >= 0; }
  int need(size_t k, const char* role) const {
    NNC_CHECK(in(k) >= 0, "%s: differentiating %s needs its input %d (%s), which it does not have", kWhat, label.c_str(),
              static_cast<int>(k), role);
    return in(k);
  }
  void give(size_t k, int grad) {
    if (grad >= 0 && want(k)) d.contribute(b.inputs[k], grad);
  }

  static ccv_nnc_cmd_t cmd(uint32_t id, const ccv_nnc_cmd_param_t& p) { return make_cmd(id, nullptr, p, 0); }
  static ccv_nnc_cmd_t blas(uint32_t id, float p, float q = 0) {
    ccv_nnc_cmd_param_t c;
    std::memset(&c, 0, sizeof(c));
    c.blas.a[0] = p;
    c.blas.a[1] = q;
    return make_cmd(id, nullptr, c, 0);
  }
  static ccv_nnc_cmd_t plain(uint32_t id) {
    ccv_nnc_cmd_param_t c;
    std::memset(&c, 0, sizeof(c));
    return make_cmd(id, nullptr, c, 0);
  }
  // B's own command on other operands (its backend pin dropped: the operands differ).
  ccv_nnc_cmd_t again() const { return make_cmd(b.cmd.cmd, nullptr, b.cmd.info, 0); }
  ccv_nnc_cmd_t forward() const { return make_cmd(b.cmd.cmd & ~1u, nullptr, b.cmd.info, 0); }

  int prod(const std::vector<int>& xs) {
    return xs.size() == 1 ? xs[0] : d.apply(plain(CCV_NNC_EWPROD_FORWARD), xs, xs[0]);
  }
  int scale(int x, float a) { return d.apply(blas(CCV_NNC_SCALAR_MUL_FORWARD, a), {x}, x); }
  int lin(int x, float p, int y, float q) { return d.apply(blas(CCV_NNC_ADD_FORWARD, p, q), {x, y}, -1); }
  int div(int x, int y) { return d.apply(plain(CCV_NNC_EWDIV_FORWARD), {x, y}, x); }
  int mul(int x, int y) { return d.apply(blas(CCV_NNC_MUL_FORWARD, 1), {x, y}, -1); }
  // A gradient usable as a contribution: a packed base of `like`'s shape.
  int own(int x, int like) {
    const Graph::Tensor& t = d.tensor(x);
    if (t.alias_of < 0 && std::equal(t.info.dim, t.info.dim + CCV_NNC_MAX_DIM_ALLOC, d.tensor(like).info.dim)) return x;
    return d.apply(plain(CCV_NNC_DATA_TRANSFER_FORWARD), {x}, like);
  }
  int row_sum(int x) {
    ccv_nnc_cmd_param_t p;
    std::memset(&p, 0, sizeof(p));
    p.reduce.axis[0] = ndim(d.tensor(x).info) - 1;
    p.reduce.count = 1;
    return d.apply(cmd(CCV_NNC_REDUCE_SUM_FORWARD, p), {x}, -1);
  }
};

using Rule = void (*)(Adjoint&);

// |g|x|y| -> |dx| with dx = g s(y): the gradient in g is B itself on H; `dy`
// gives the one in y from H and g.
template <int Y>
void unary_rule(Adjoint& a, int (*dy)(Adjoint&, int h, int g, int y)) {
  const int h = a.H(0);
  if (h < 0) return;
  const int y = a.need(Y, Y == 1 ? "x" : "y");
  if (a.want(0)) {
    std::vector<int> in{h, -1, -1};
    in[Y] = y;
    a.give(0, a.d.apply(a.again(), in, a.in(0) >= 0 ? a.in(0) : y));
  }
  if (dy && a.want(Y)) a.give(Y, dy(a, h, a.need(0, "g"), y));
}

void tanh_rule(Adjoint& a) {
  unary_rule<2>(a, [](Adjoint& a, int h, int g, int y) { return a.scale(a.prod({h, g, y}), -2); });  // d(1 - y^2) = -2y
}
void sigmoid_rule(Adjoint& a) {
  unary_rule<2>(a, [](Adjoint& a, int h, int g, int y) {  // d(y - y^2) = 1 - 2y
    const int hg = a.prod({h, g});
    return a.lin(hg, 1, a.prod({hg, y}), -2);
  });
}
// RELU, LEAKY_RELU, CLAMP: dx = g times a piecewise-constant slope of x (or
// y), whose derivative is 0 almost everywhere; in g it is B itself on H.
void mask_rule(Adjoint& a) {
  const int h = a.H(0);
  if (h < 0 || !a.want(0)) return;
  NNC_CHECK(a.in(1) >= 0 || a.in(2) >= 0, "%s: differentiating %s needs x or y, which it does not have", kWhat, a.label.c_str());
  a.give(0, a.d.apply(a.again(), {h, a.in(1), a.in(2)}, a.need(0, "g")));
}
// MIN / MAX: |g|a|b|y| -> |da|db|, g routed to the operand picked (half each
// on a tie): <Ha, da> + <Hb, db> in g is Ha routed to a plus Hb routed to b.
void pick_rule(Adjoint& a) {
  const int ha = a.H(0), hb = a.H(1);
  if ((ha < 0 && hb < 0) || !a.want(0)) return;
  const int g = a.need(0, "g"), x = a.need(1, "a"), y = a.need(2, "b");
  if (ha >= 0) a.give(0, a.d.apply(a.again(), {ha, x, y}, g, {-2, -1}));
  if (hb >= 0) a.give(0, a.d.apply(a.again(), {hb, x, y}, g, {-1, -2}));
}
void softmax_rule(Adjoint& a) {
  // dx = y (g - <g, y>) per row: in g that is B on H; in y,
  // H g - H <g, y> - g <H, y>.
  unary_rule<2>(a, [](Adjoint& a, int h, int g, int y) {
    const int s = a.row_sum(a.prod({g, y})), u = a.row_sum(a.prod({h, y}));
    const int r = a.lin(a.prod({h, g}), 1, a.mul(h, s), -1);
    return a.lin(r, 1, a.mul(g, u), -1);
  });
}
// GELU / SWISH: |g|x|(y)| -> |dx = g f'(x)|; in g that is B itself on H, in x
// H g f''(x), written with forward commands. y, when given, is only B's cache
// of f(x): a gradient asked for it is refused (our autodiff never passes it).
template <class Second>
void activation_rule(Adjoint& a, Second second) {
  NNC_CHECK(!a.want(2), "%s: differentiating %s with respect to its optional forward output y is not supported (pass x only)",
            kWhat, a.label.c_str());
  unary_rule<1>(a, [](Adjoint&, int, int, int) { return -1; });
  const int h = a.H(0);
  if (h < 0 || !a.want(1)) return;
  const int x = a.need(1, "x");
  a.give(1, a.prod({h, a.need(0, "g"), second(a, x)}));
}
void gelu_rule(Adjoint& a) {
  if (!a.b.cmd.info.gelu.tanh) {  // f = x Phi(x): f'' = phi(x) (2 - x^2), phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
    activation_rule(a, [](Adjoint& a, int x) {
      const int x2 = a.prod({x, x});
      const int phi = a.scale(a.d.apply(Adjoint::plain(CCV_NNC_EWEXP_FORWARD), {a.scale(x2, -0.5f)}, x), 0.3989422804014327f);
      return a.lin(phi, 2, a.prod({x2, phi}), -1);
    });
    return;
  }
  // f = x s, s = sigmoid(v), v = 2k (x + c x^3) (k = sqrt(2 / pi), c = 0.044715):
  // f'' = s (1 - s) (2 v' + x (1 - 2 s) v'^2 + x v''), v' = 2k (1 + 3 c x^2),
  // v'' = 12 k c x; 1 - s is sigmoid(-v), and 1 = s + (1 - s).
  activation_rule(a, [](Adjoint& a, int x) {
    constexpr float k = 0.7978845608028654f, c = 0.044715f;
    const int x2 = a.prod({x, x});
    const int v = a.scale(a.lin(x, 1, a.prod({x2, x}), c), 2 * k);
    const int s = a.d.apply(Adjoint::plain(CCV_NNC_SIGMOID_FORWARD), {v}, x);
    const int r = a.d.apply(Adjoint::plain(CCV_NNC_SIGMOID_FORWARD), {a.scale(v, -1)}, x);  // 1 - s
    const int dv = a.lin(a.lin(s, 1, r, 1), 2 * k, x2, 6 * k * c);
    const int t = a.lin(a.lin(dv, 2, a.prod({x, a.lin(r, 1, s, -1), dv, dv}), 1), 1, x2, 12 * k * c);
    return a.prod({s, r, t});
  });
}
void swish_rule(Adjoint& a) {
  // f = x s, s = sigmoid(x): f'' = s (1 - s) (2 + x (1 - 2 s)); 1 - s is
  // sigmoid(-x), and 2 = 2 s + 2 (1 - s).
  activation_rule(a, [](Adjoint& a, int x) {
    const int s = a.d.apply(Adjoint::plain(CCV_NNC_SIGMOID_FORWARD), {x}, x);
    const int r = a.d.apply(Adjoint::plain(CCV_NNC_SIGMOID_FORWARD), {a.scale(x, -1)}, x);
    const int t = a.lin(a.lin(s, 2, r, 2), 1, a.prod({x, a.lin(r, 1, s, -1)}), 1);
    return a.prod({s, r, t});
  });
}
// SOFTMAX_CROSSENTROPY: |g|gs|z|labels|loss|s| -> |dz|(dlabels)| with
// dz = g (s T - t) + s (gs - <gs, s>) per row, t the row's (smoothed) target
// and T its sum. With H at dz:
//   in g:  <H, s T - t> per row, B itself with g NULL (ones) and gs NULL;
//   in gs: s (H - <H, s>), SOFTMAX_BACKWARD(H, s);
//   in s:  g T H + H gs - H <gs, s> - gs <H, s>, where -t is B with g and
//          gs NULL and s = 0.
// Class-index labels get no gradient (it is 0 almost everywhere); dense
// labels are refused, like the command's own labels gradient.
void softmax_crossentropy_rule(Adjoint& a) {
  const int h = a.H(0);
  if (h < 0) return;
  const int label = a.need(3, "labels"), s = a.need(5, "softmax");
  NNC_CHECK(!a.want(3) || count_of(a.d.tensor(label).info) != count_of(a.d.tensor(s).info),
            "%s: differentiating %s with respect to its dense labels is not supported (SOFTMAX_CROSSENTROPY_BACKWARD gives no "
            "labels gradient either)",
            kWhat, a.label.c_str());
  const int gs = a.in(1), g = a.in(0);
  if (a.want(0)) {
    const int st = a.d.apply(a.again(), {-1, -1, -1, label, -1, s}, s, {-2, -1});  // s T - t
    a.give(0, a.own(a.row_sum(a.prod({h, st})), g));
  }
  if (gs >= 0 && a.want(1)) a.give(1, a.d.apply(Adjoint::plain(CCV_NNC_SOFTMAX_BACKWARD), {h, -1, s}, s));
  if (!a.want(5)) return;
  const int t = a.scale(a.d.apply(a.again(), {-1, -1, -1, label, -1, a.d.zeros(s)}, s, {-2, -1}), -1);
  const int T = a.row_sum(t);
  int r = a.mul(h, g >= 0 ? a.mul(a.own(g, T), T) : T);  // g T H
  if (gs >= 0) {
    r = a.lin(r, 1, a.prod({h, gs}), 1);
    r = a.lin(r, 1, a.mul(h, a.row_sum(a.prod({gs, s}))), -1);
    r = a.lin(r, 1, a.mul(gs, a.row_sum(a.prod({h, s}))), -1);
  }
  a.give(5, r);
}
void exp_rule(Adjoint& a) {  // dx = g y
  const int h = a.H(0);
  if (h < 0) return;
  const int y = a.need(2, "y");
  if (a.want(0)) a.give(0, a.prod({h, y}));
  if (a.want(2)) a.give(2, a.prod({h, a.need(0, "g")}));
}
void log_rule(Adjoint& a) {  // dx = g / x
  const int h = a.H(0);
  if (h < 0) return;
  const int x = a.need(1, "x");
  const int t = a.div(h, x);
  a.give(0, t);
  if (a.want(1)) a.give(1, a.scale(a.div(a.prod({t, a.need(0, "g")}), x), -1));
}
void sqrt_rule(Adjoint& a) {  // dx = g / (2 y)
  const int h = a.H(0);
  if (h < 0) return;
  const int y = a.need(2, "y");
  const int t = a.d.apply(a.again(), {h, -1, y}, y);  // h / (2 y)
  a.give(0, t);
  if (a.want(2)) a.give(2, a.scale(a.div(a.prod({t, a.need(0, "g")}), y), -1));
}
void div_rule(Adjoint& a) {  // |g|a|b|y| -> |da|db|: da = g / b, db = -g y / b
  const int ha = a.H(0), hb = a.H(1);
  if (ha < 0 && hb < 0) return;
  const int b = a.need(2, "b");
  const int ta = ha >= 0 ? a.div(ha, b) : -1, tb = hb >= 0 ? a.div(hb, b) : -1;
  const int y = tb >= 0 ? a.need(3, "y") : -1;
  int dg = ta;
  if (tb >= 0) dg = ta >= 0 ? a.lin(ta, 1, a.prod({tb, y}), -1) : a.scale(a.prod({tb, y}), -1);
  a.give(0, dg);
  if (a.want(2)) a.give(2, a.scale(a.div(a.prod({a.need(0, "g"), dg}), b), -1));  // -g dg / b
  if (tb >= 0 && a.want(3)) a.give(3, a.scale(a.prod({tb, a.need(0, "g")}), -1));
}
void prod_rule(Adjoint& a) {  // |g|x_1..x_n|y| -> |dx_i = g prod_{j != i} x_j|
  const size_t n = a.b.outputs.size();
  for (size_t i = 0; i < n; i++) {
    const int h = a.H(i);
    if (h < 0) continue;
    if (a.want(0)) {
      std::vector<int> f{h};
      for (size_t j = 0; j < n; j++)
        if (j != i) f.push_back(a.need(1 + j, "x"));
      a.give(0, a.own(a.prod(f), a.in(0)));
    }
    for (size_t k = 0; k < n; k++)
      if (k != i && a.want(1 + k)) {
        std::vector<int> f{h, a.need(0, "g")};
        for (size_t j = 0; j < n; j++)
          if (j != i && j != k) f.push_back(a.need(1 + j, "x"));
        a.give(1 + k, a.prod(f));
      }
  }
}
void sum_rule(Adjoint& a) {  // every dx_i is g
  for (size_t i = 0; i < a.b.outputs.size(); i++)
    if (a.H(i) >= 0 && a.want(0)) a.give(0, a.own(a.H(i), a.in(0)));
}
void data_transfer_rule(Adjoint& a) {  // pairs: dx_i = g_i
  for (size_t i = 0; i < a.b.outputs.size(); i++)
    if (a.H(i) >= 0 && a.want(i)) a.give(i, a.own(a.H(i), a.in(i)));
}
void transpose_rule(Adjoint& a) {  // pairs: dx_i = g_i with the axes swapped back
  for (size_t i = 0; i < a.b.outputs.size(); i++)
    if (a.H(i) >= 0 && a.want(i)) a.give(i, a.d.apply(a.forward(), {a.H(i)}, a.in(i)));
}
void linear_rule(Adjoint& a) {  // SCALAR_MUL, REDUCE_SUM / MEAN: dx = L*(g), so d<H, dx>/dg = L(H)
  if (a.H(0) >= 0 && a.want(0)) a.give(0, a.d.apply(a.forward(), {a.H(0)}, a.in(0)));
}
void add_rule(Adjoint& a) {  // |g|a|b|y| -> |da|db|: p g and q g, summed down to a's and b's shapes
  const int ha = a.H(0), hb = a.H(1);
  if ((ha < 0 && hb < 0) || !a.want(0)) return;
  const float p = a.b.cmd.info.blas.a[0], q = a.b.cmd.info.blas.a[1];
  const int g = a.in(0);
  const int dg = a.lin(ha >= 0 ? ha : a.d.zeros(g), ha >= 0 ? p : 0, hb >= 0 ? hb : a.d.zeros(g), hb >= 0 ? q : 0);
  a.give(0, a.own(dg, g));
}
// |g|a|b|..| -> |da|db|..| of a bilinear forward F (MUL: slots 1, 2; GEMM:
// slots 1, 2 and the bias at 3).
void bilinear_rule(Adjoint& a, bool bias) {
  const int ha = a.H(0), hw = a.H(1), hbias = bias ? a.H(2) : -1;
  if (ha < 0 && hw < 0 && hbias < 0) return;
  const int g = a.need(0, "g");
  const ccv_nnc_cmd_t f = a.forward();
  if (a.want(0)) {
    if (ha >= 0) {
      std::vector<int> in{ha, a.need(2, "the second operand")};
      if (hbias >= 0) in.push_back(hbias);
      a.give(0, a.own(a.d.apply(f, in, -1), g));
    } else if (hbias >= 0) {
      a.give(0, a.own(a.lin(a.d.zeros(g), 1, hbias, 1), g));
    }
    if (hw >= 0) a.give(0, a.own(a.d.apply(f, {a.need(1, "the first operand"), hw}, -1), g));
  }
  const size_t outs = a.b.outputs.size();
  auto slots = [&](int which) {  // B's outputs with only `which` written
    std::vector<int> o(outs, -1);
    o[static_cast<size_t>(which)] = -2;
    return o;
  };
  if (hw >= 0 && a.want(1)) a.give(1, a.d.apply(a.again(), {g, a.in(1), hw}, a.in(1), slots(0)));
  if (ha >= 0 && a.want(2)) a.give(2, a.d.apply(a.again(), {g, ha, a.in(2)}, a.in(2), slots(1)));
}
void mul_rule(Adjoint& a) { bilinear_rule(a, false); }
void gemm_rule(Adjoint& a) { bilinear_rule(a, true); }

Rule second_order_rule(uint32_t id) {
  static const std::pair<uint32_t, Rule> table[] = {
      {CCV_NNC_GEMM_BACKWARD, gemm_rule},
      {CCV_NNC_ADD_BACKWARD, add_rule},
      {CCV_NNC_MUL_BACKWARD, mul_rule},
      {CCV_NNC_SCALAR_MUL_BACKWARD, linear_rule},
      {CCV_NNC_EWSUM_BACKWARD, sum_rule},
      {CCV_NNC_EWPROD_BACKWARD, prod_rule},
      {CCV_NNC_EWDIV_BACKWARD, div_rule},
      {CCV_NNC_EWEXP_BACKWARD, exp_rule},
      {CCV_NNC_EWLOG_BACKWARD, log_rule},
      {CCV_NNC_EWSQRT_BACKWARD, sqrt_rule},
      {CCV_NNC_RELU_BACKWARD, mask_rule},
      {CCV_NNC_LEAKY_RELU_BACKWARD, mask_rule},
      {CCV_NNC_CLAMP_BACKWARD, mask_rule},
      {CCV_NNC_MIN_BACKWARD, pick_rule},
      {CCV_NNC_MAX_BACKWARD, pick_rule},
      {CCV_NNC_SIGMOID_BACKWARD, sigmoid_rule},
      {CCV_NNC_TANH_BACKWARD, tanh_rule},
      {CCV_NNC_SOFTMAX_BACKWARD, softmax_rule},
      {CCV_NNC_GELU_BACKWARD, gelu_rule},
      {CCV_NNC_SWISH_BACKWARD, swish_rule},
      {CCV_NNC_SOFTMAX_CROSSENTROPY_BACKWARD, softmax_crossentropy_rule},
      {CCV_NNC_REDUCE_SUM_BACKWARD, linear_rule},
      {CCV_NNC_REDUCE_MEAN_BACKWARD, linear_rule},
      {CCV_NNC_TRANSPOSE_BACKWARD, transpose_rule},
      {CCV_NNC_DATA_TRANSFER_BACKWARD, data_transfer_rule},
  };
  for (const auto& [cmd, rule] : table)
    if (cmd == id) return rule;
  return nullptr;
}

void Differentiator::differentiate_backward(int e, const std::vector<int>& grad_out, const std::vector<char>& wanted) {
  const Graph::Exec x = g_->execs[static_cast<size_t>(e)];  // a copy: the rules append execs
  const Rule rule = second_order_rule(x.cmd.cmd);
  NNC_CHECK(rule,
            "%s: %s is a backward command without a second-order rule, so gradients cannot flow through it (the "
            "differentiable backwards are those of GEMM, ADD, MUL, SCALAR_MUL, EWSUM, EWPROD, EWDIV, EWEXP, EWLOG, EWSQRT, "
            "RELU, LEAKY_RELU, CLAMP, MIN, MAX, SIGMOID, TANH, GELU, SWISH, SOFTMAX, SOFTMAX_CROSSENTROPY, REDUCE_SUM, REDUCE_MEAN, "
            "TRANSPOSE and DATA_TRANSFER)",
            kWhat, exec_label(g_, e).c_str());
  Adjoint a{*this, x, exec_label(g_, e), grad_out, wanted};
  rule(a);
}

void Differentiator::differentiate(int e, const std::vector<char>& reached) {
  // A copy: emitting execs below may move the table.
  const Graph::Exec x = g_->execs[static_cast<size_t>(e)];
  const int m = static_cast<int>(x.outputs.size()), n = static_cast<int>(x.inputs.size());
  std::vector<int> grad_out(static_cast<size_t>(m), -1);
  bool any = false;
  for (int j = 0; j < m; j++)
    if (x.outputs[static_cast<size_t>(j)] >= 0) {
      grad_out[static_cast<size_t>(j)] = gradient(x.outputs[static_cast<size_t>(j)]);
      any = any || grad_out[static_cast<size_t>(j)] >= 0;
    }
  if (!any) return;
  std::vector<char> wanted(static_cast<size_t>(n), 0);
  bool want_any = false;
  for (int i = 0; i < n; i++) {
    const int d = x.inputs[static_cast<size_t>(i)];
    if (d >= 0 && reached[static_cast<size_t>(base_of(g_, d))] && is_float(t(d).info.datatype)) {
      wanted[static_cast<size_t>(i)] = 1;
      want_any = true;
    }
  }
  if (!want_any) return;
  if ((x.flags & CCV_NNC_GRAPH_EXEC_P_WHILE) && x.cmd.cmd == CCV_NNC_GRAPH_FORWARD) {
    differentiate_while(e, grad_out, wanted);
    return;
  }
  if ((x.flags & CCV_NNC_GRAPH_EXEC_CASE_OF) && x.cmd.cmd == CCV_NNC_GRAPH_FORWARD) {
    differentiate_case_of(e, grad_out, wanted);
    return;
  }
  if ((x.flags & (CCV_NNC_GRAPH_EXEC_P_WHILE | CCV_NNC_GRAPH_EXEC_CASE_OF)) || x.cmd.cmd == CCV_NNC_GRAPH_FORWARD ||
      x.cmd.cmd == CCV_NNC_GRAPH_BACKWARD)
    fail(CCV_NNC_EXEC_INVALID, "%s: %s is a %s; the backward pass through loops and branches is not supported yet", kWhat,
         exec_label(g_, e).c_str(),
         (x.flags & CCV_NNC_GRAPH_EXEC_CASE_OF) ? "case..of" : (x.flags & CCV_NNC_GRAPH_EXEC_P_WHILE) ? "while loop" : "sub-graph");
  ccv_nnc_cmd_t cmd = x.cmd;
  int attributes = 0;
  if (x.cmd.cmd == CCV_NNC_CUSTOM_FORWARD) {
    cmd.cmd = CCV_NNC_CUSTOM_BACKWARD;
  } else {
    if (x.cmd.cmd & 1u) {  // a backward pass differentiated again
      differentiate_backward(e, grad_out, wanted);
      return;
    }
    const uint32_t id = x.cmd.cmd | 1u;
    const CommandInfo* info = registry().command(id);
    NNC_CHECK(info && !registry().kernels(id).empty(), "%s: %s has no backward command, so no gradient flows through it",
              kWhat, exec_label(g_, e).c_str());
    attributes = info->attributes;
    cmd = make_cmd(id, nullptr, x.cmd.info, 0);
    // A forward pinned to a backend keeps it where that backend has the backward too.
    if (x.cmd.backend && registry().kernel(id, x.cmd.backend)) cmd.backend = x.cmd.backend;
  }
  // The zero gradient of a missing first output: NULL would read as ones there.
  auto zeros_for = [&](int j) {
    const int o = x.outputs[static_cast<size_t>(j)];
    return zero_symbol(t(o).info, name_for(o));
  };
  if ((attributes & CCV_NNC_CMD_ATTR_NULL_IS_ONES) && m > 0 && x.outputs[0] >= 0 && grad_out[0] < 0) grad_out[0] = zeros_for(0);
  // Slots: |output gradients|forward inputs|forward outputs| -> |input gradients|.
  const int in_size = m + n + m;
  std::vector<int> in(static_cast<size_t>(in_size), -1);
  for (int j = 0; j < m; j++) in[static_cast<size_t>(j)] = grad_out[static_cast<size_t>(j)];
  for (int i = 0; i < n; i++) in[static_cast<size_t>(m + i)] = x.inputs[static_cast<size_t>(i)];
  for (int j = 0; j < m; j++) in[static_cast<size_t>(m + n + j)] = x.outputs[static_cast<size_t>(j)];
  std::vector<char> out_on(wanted);
  auto accepts = [&]() {
    std::vector<uint64_t> im(static_cast<size_t>((in_size + 63) / 64 + 1), 0), om(static_cast<size_t>((n + 63) / 64 + 1), 0);
    for (int k = 0; k < in_size; k++)
      if (in[static_cast<size_t>(k)] >= 0) im[static_cast<size_t>(k / 64)] |= uint64_t{1} << (k % 64);
    for (int k = 0; k < n; k++)
      if (out_on[static_cast<size_t>(k)]) om[static_cast<size_t>(k / 64)] |= uint64_t{1} << (k % 64);
    return cmd_bitmask(cmd, in_size, n, im.data(), static_cast<int>(im.size()), om.data(), static_cast<int>(om.size())) != 0;
  };
  // Some backwards compute gradients nobody wants (thrown away): add them one
  // by one, in slot order, until the bitmask accepts.
  auto widen = [&]() {
    bool accepted = accepts();
    for (int i = 0; i < n && !accepted; i++)
      if (!out_on[static_cast<size_t>(i)] && x.inputs[static_cast<size_t>(i)] >= 0) {
        out_on[static_cast<size_t>(i)] = 1;
        accepted = accepts();
      }
    return accepted;
  };
  bool ok = widen();
  if (!ok) {  // or want a gradient for every output: zeros where none arrives
    for (int j = 0; j < m; j++)
      if (in[static_cast<size_t>(j)] < 0 && x.outputs[static_cast<size_t>(j)] >= 0) in[static_cast<size_t>(j)] = zeros_for(j);
    out_on = wanted;
    ok = widen();
  }
  if (!ok) {
    std::string list;
    for (int i = 0; i < n; i++)
      if (wanted[static_cast<size_t>(i)]) list += format("%s%d", list.empty() ? "" : ", ", i);
    fail(CCV_NNC_EXEC_INVALID, "%s: the backward of %s cannot give the gradient of input%s %s (its bitmask refuses it)", kWhat,
         exec_label(g_, e).c_str(), list.find(',') == std::string::npos ? "" : "s", list.c_str());
  }
  // Pass only the forward values the backward reads, so the planner can free
  // the rest early. A custom command's bitmask accepts anything, which says
  // nothing about what its backward reads: it gets every slot.
  for (int k = m; k < in_size && cmd.cmd != CCV_NNC_CUSTOM_BACKWARD; k++) {
    const int keep = in[static_cast<size_t>(k)];
    if (keep < 0) continue;
    in[static_cast<size_t>(k)] = -1;
    if (!accepts()) in[static_cast<size_t>(k)] = keep;
  }
  std::vector<int> out(static_cast<size_t>(n), -1);
  for (int i = 0; i < n; i++)
    if (out_on[static_cast<size_t>(i)]) {
      const int d = x.inputs[static_cast<size_t>(i)];
      out[static_cast<size_t>(i)] = fresh(t(d).info, name_for(d));
    }
  const std::string name = x.name.empty() ? std::string() : x.name + " backward";
  const int b = emit(cmd, &x.hint, in, out, name.empty() ? nullptr : name.c_str());
  // After its forward exec even where it reads none of its values (libnnc's shape of a training graph).
  concat(g_, e, b);
  for (int i = 0; i < n; i++)
    if (wanted[static_cast<size_t>(i)]) {
      const int d = x.inputs[static_cast<size_t>(i)];
      add(d, out[static_cast<size_t>(i)]);
    }
}

// --- Backward through a while loop --------------------------------------------
//
// The forward loop runs rounds r = 0 .. R-1 of its body (those whose every
// exec ran: all rounds when the breakpoints end the body, all but the last
// when they only guard the expression). A push added to the forward body
// keeps, per round, what the round reads from outside itself: its carried-in
// values and body constants (values of the enclosing graph it only reads are
// the same every round and are read there). The backward is a second while
// loop in the enclosing graph whose round j recomputes forward round
// R - 1 - j from the tape and differentiates it (the body's own backward,
// built by the same Differentiator), with
//   - the gradient of each carried-out value as its seed: in backward round 0
//     the gradient of the enclosing symbol it is hooked up to (zero when it is
//     not), after that the gradient of the carried-in value the round before
//     produced (a carry of the backward loop);
//   - the gradient of a value the round hands out (hooked up) and does not
//     carry: its gradient in round 0, zero after;
//   - the gradients of the enclosing graph's symbols the body reads summed
//     over the rounds (a carried running sum), and of the carried-in values'
//     round-0 sources (the initial states) taken from the last round.
// A loop or case..of in the body is part of the round: the recompute runs a
// copy of it (replicate) from the round's taped inputs, and differentiating
// the recomputed round differentiates the copy, inside the backward body, by
// this same code; its own tape is then filled and read within one backward
// round. Nested so (the loop's graph is itself a body or a branch), the
// enclosing graph's symbols cannot be flagged INIT_ZEROS (compile sets none
// inside loops and branches): zeros are written by SET execs, and the
// gradients are handed out by copies that are breakpoints of the backward
// loop, reading what the round carries in, so the stopping round hands out
// the final values.
int Differentiator::as_base(Graph* g, int d, const char* name) {
  if (g->tensors[static_cast<size_t>(d)].alias_of < 0) return d;
  const ccv_nnc_tensor_param_t info = g->tensors[static_cast<size_t>(d)].info;
  const ccv_nnc_tensor_symbol_t copy = tensor_new(g, info, name);
  const ccv_nnc_tensor_symbol_t from{d, g};
  const ccv_nnc_graph_exec_symbol_t x = exec_new(g, simple(CCV_NNC_DATA_TRANSFER_FORWARD), &from, 1, &copy, 1, "gradient copy");
  if (g == g_) new_execs_.push_back(x.d);
  return copy.d;
}

namespace {

// Clears the thread's message, runs a public call, and turns a message it
// left into an exception (the public calls report through the message).
template <class F>
auto checked(F&& f) {
  clear_error_message();
  auto r = f();
  if (!error_message().empty()) fail(CCV_NNC_EXEC_INVALID, "%s", error_message().c_str());
  return r;
}

bool is_random(uint32_t cmd) {
  return cmd == CCV_NNC_DROPOUT_FORWARD || cmd == CCV_NNC_RANDOM_UNIFORM_FORWARD || cmd == CCV_NNC_RANDOM_NORMAL_FORWARD;
}

// The gradient arriving at the sub-graph exec x's output `outer`, or -1.
int gradient_at_output(const Graph::Exec& x, const std::vector<int>& grad_out, int outer) {
  for (size_t j = 0; j < x.outputs.size(); j++)
    if (x.outputs[j] == outer) return j < grad_out.size() ? grad_out[j] : -1;
  return -1;
}

// Per base of g: whether some exec of `execs` (in order) leads from it to f.
std::vector<char> needed_for(const Graph* g, const std::vector<int>& execs, const std::vector<int>& f) {
  std::vector<char> needed(g->tensors.size(), 0);
  for (int d : f) needed[static_cast<size_t>(d)] = 1;
  for (auto it = execs.rbegin(); it != execs.rend(); ++it) {
    const Graph::Exec& y = g->execs[static_cast<size_t>(*it)];
    bool r = false;
    for (int d : y.outputs) r = r || (d >= 0 && needed[static_cast<size_t>(base_of(g, d))]);
    if (!r) continue;
    for (int d : y.inputs)
      if (d >= 0) needed[static_cast<size_t>(base_of(g, d))] = 1;
  }
  return needed;
}

// Whether an exec of g (or of a loop or branch inside) draws random numbers;
// the first such exec's label in `which`.
bool draws_random(const Graph* g, std::string* which) {
  for (size_t e = 0; e < g->execs.size(); e++) {
    const Graph::Exec& y = g->execs[e];
    if (CCV_NNC_GRAPH_EXEC_IS_DEAD(y.flags)) continue;
    if (is_random(y.cmd.cmd)) {
      *which = exec_label(g, static_cast<int>(e));
      return true;
    }
    for (const Graph* sub : y.subs)
      if (sub && draws_random(sub, which)) return true;
  }
  return false;
}

// A loop or branch nested in a round or branch that the backward pass
// recomputes is recomputed with it (a copy, below), so everything it reads
// must come from outside it or be computed inside it: a constant of its own
// (no writer, no enclosing symbol), or a carried value without an initial
// one, would be a value the copy does not have.
void check_recomputable(const Graph* sub, const std::string& where) {
  const size_t nt = sub->tensors.size();
  std::vector<char> written(nt, 0), read(nt, 0), carried_in(nt, 0);
  for (size_t e = 0; e < sub->execs.size(); e++) {
    const Graph::Exec& y = sub->execs[e];
    if (CCV_NNC_GRAPH_EXEC_IS_DEAD(y.flags)) continue;
    NNC_CHECK(!is_loop_tape_cmd(y.cmd), "%s: %s holds the tape of a loop differentiated before; it cannot be differentiated again",
              kWhat, where.c_str());
    for (int d : y.inputs)
      if (d >= 0) read[static_cast<size_t>(base_of(sub, d))] = 1;
    for (int d : y.outputs)
      if (d >= 0) written[static_cast<size_t>(base_of(sub, d))] = 1;
    for (const Graph* inner : y.subs)
      if (inner) check_recomputable(inner, "a loop or branch inside " + where);
  }
  for (int d : sub->while_inputs)
    if (d >= 0) read[static_cast<size_t>(base_of(sub, d))] = 1;
  for (const auto& c : sub->carry_overs) carried_in[static_cast<size_t>(c.second)] = 1;
  for (size_t d = 0; d < nt; d++)
    if (read[d] && !written[d] && sub->tensors[d].outer < 0 && !CCV_NNC_TENSOR_SYMBOL_IS_DEAD(sub->tensors[d].flags))
      fail(CCV_NNC_EXEC_INVALID,
           "%s: %s reads %s, %s; the backward pass recomputes it from what it reads of the enclosing graph and cannot know that "
           "value (hook it up to an enclosing symbol)",
           kWhat, where.c_str(), tensor_label(sub, static_cast<int>(d)).c_str(),
           carried_in[d] ? "a carried value with no initial value from the enclosing graph" : "which nothing in it writes");
}

// A copy of sub-graph src (a loop body or a branch) for a new owner, its
// stand-ins standing for outer(s) where src's stood for s; loops and
// branches inside are copied with it. Not attached to anything yet.
Graph* clone_subgraph(const Graph* src, const std::function<int(int)>& outer) {
  std::unique_ptr<Graph> c(new Graph());
  c->tensors = src->tensors;
  for (Graph::Tensor& t : c->tensors) {
    t.pair = {CCV_NNC_NO_TENSOR_SYMBOL, nullptr};
    t.copies.clear();
  }
  for (const auto& [up, local] : src->stand_ins) {
    const int mapped = outer(up);
    NNC_CHECK(mapped >= 0, "%s: a loop or branch inside a recomputed round reads a symbol with no counterpart", kWhat);
    c->stand_ins.emplace_back(mapped, local);
    c->tensors[static_cast<size_t>(local)].outer = mapped;
  }
  c->execs.reserve(src->execs.size());
  for (size_t e = 0; e < src->execs.size(); e++) {
    Graph::Exec y = src->execs[e];
    y.pair = {CCV_NNC_NO_GRAPH_EXEC_SYMBOL, nullptr};
    y.copies.clear();
    for (Graph*& sub : y.subs) sub = nullptr;
    c->execs.push_back(std::move(y));
    for (size_t k = 0; k < src->execs[e].subs.size(); k++) {
      const Graph* inner = src->execs[e].subs[k];
      if (!inner) continue;
      Graph* copy = clone_subgraph(inner, [](int d) { return d; });
      copy->parent = c.get();
      copy->exec_in_parent = static_cast<int>(e);
      c->execs[e].subs[k] = copy;
    }
  }
  for (auto ends : {std::make_pair(&src->sources, &c->sources), std::make_pair(&src->destinations, &c->destinations)})
    for (const ccv_nnc_graph_exec_symbol_t& x : *ends.first) ends.second->push_back({x.d, c.get()});
  c->while_expr = src->while_expr;
  c->while_data = src->while_data;
  c->while_inputs = src->while_inputs;
  c->breakpoints = src->breakpoints;
  c->carry_overs = src->carry_overs;
  return c.release();
}

// The execs of src again in dst, in order, their symbols through map (src
// symbol -> dst symbol; negative for an empty slot), hints kept. A loop or
// case..of among them is copied whole (its body or branches included), its
// stand-ins for src's symbols standing for their counterparts in dst.
template <class Map>
void replicate(Graph* dst, const Graph* src, const std::vector<int>& execs, Map&& map) {
  for (int v : execs) {
    const Graph::Exec& y = src->execs[static_cast<size_t>(v)];
    std::vector<ccv_nnc_tensor_symbol_t> in, out;
    auto ref = [&](int d) {
      const int md = map(d);
      return md < 0 ? ccv_nnc_tensor_symbol_t{CCV_NNC_NO_TENSOR_SYMBOL, nullptr} : ccv_nnc_tensor_symbol_t{md, dst};
    };
    if (control_of(y)) {
      const std::string where = exec_label(src, v);
      for (const Graph* sub : y.subs)
        if (sub) check_recomputable(sub, (y.flags & CCV_NNC_GRAPH_EXEC_P_WHILE ? "the body of " : "a branch of ") + where);
      const std::function<int(int)> outer = [&](int d) { return map(d); };
      const char* name = y.name.empty() ? nullptr : y.name.c_str();
      if (y.flags & CCV_NNC_GRAPH_EXEC_P_WHILE) {
        Graph* body = clone_subgraph(y.subs.at(0), outer);
        const ccv_nnc_graph_exec_symbol_t made = [&] {
          try {
            return checked([&] { return ccv_nnc_symbolic_graph_while(dst, y.cmd.cmd, body, name); });
          } catch (...) {
            if (!body->parent) delete body;
            throw;
          }
        }();
        (void)made;
        continue;
      }
      std::vector<ccv_nnc_tensor_symbol_t> expr_in;
      for (int i = 0; i < y.expr_inputs; i++) expr_in.push_back(ref(y.declared_inputs[static_cast<size_t>(i)]));
      std::vector<ccv_nnc_tensor_symbol_map_t> outs;
      for (int o : y.declared_outputs) {
        const int by = src->tensors[static_cast<size_t>(o)].bypass;
        NNC_CHECK(by >= 0, "%s: %s: its output %s has no fall-back", kWhat, where.c_str(), tensor_label(src, o).c_str());
        outs.push_back({ref(by), ref(o)});
      }
      const ccv_nnc_graph_exec_symbol_t made = checked([&] {
        return ccv_nnc_symbolic_graph_case_of_new(dst, y.cmd.cmd, expr_in.data(), static_cast<int>(expr_in.size()), outs.data(),
                                                  static_cast<int>(outs.size()), name);
      });
      checked([&] {
        ccv_nnc_symbolic_graph_set_case_of_expr(dst, made, y.case_of, y.case_of_data);
        return 0;
      });
      for (size_t i = 0; i < y.subs.size(); i++) {
        if (!y.subs[i]) continue;
        Graph* branch = clone_subgraph(y.subs[i], outer);
        try {
          checked([&] {
            ccv_nnc_symbolic_graph_set_case_of(dst, made, branch, static_cast<int>(i), nullptr, 0);
            return 0;
          });
        } catch (...) {
          if (!branch->parent) delete branch;
          throw;
        }
      }
      continue;
    }
    for (int d : y.inputs) in.push_back(ref(d));
    for (int d : y.outputs) out.push_back(ref(d));
    const int r = exec_new(dst, y.cmd, in.data(), static_cast<int>(in.size()), out.data(), static_cast<int>(out.size()),
                           y.name.empty() ? nullptr : y.name.c_str())
                      .d;
    dst->execs[static_cast<size_t>(r)].hint = y.hint;
  }
}

}  // namespace

void Differentiator::differentiate_while(int e, const std::vector<int>& grad_out, const std::vector<char>& wanted) {
  const Graph::Exec x = g_->execs[static_cast<size_t>(e)];  // a copy: execs are appended below
  Graph* body = x.subs.at(0);
  const std::string label = exec_label(g_, e);
  NNC_CHECK(body->while_expr && !body->breakpoints.empty(),
            "%s: %s has no expression (ccv_nnc_symbolic_graph_set_while_expr), so its rounds are not known", kWhat,
            label.c_str());
  const size_t nt = body->tensors.size(), ne = body->execs.size();
  auto bt = [&](int d) -> const Graph::Tensor& { return body->tensors[static_cast<size_t>(d)]; };
  // Head: the breakpoints and what they depend on (run in every round, the
  // last one included); the rest only in rounds the expression let through.
  std::vector<std::vector<int>> incoming(ne);
  for (size_t i = 0; i < ne; i++)
    if (!CCV_NNC_GRAPH_EXEC_IS_DEAD(body->execs[i].flags))
      for (int j : body->execs[i].outgoing) incoming[static_cast<size_t>(j)].push_back(static_cast<int>(i));
  std::vector<char> head(ne, 0);
  std::vector<int> stack(body->breakpoints.begin(), body->breakpoints.end());
  while (!stack.empty()) {
    const int v = stack.back();
    stack.pop_back();
    if (head[static_cast<size_t>(v)]) continue;
    head[static_cast<size_t>(v)] = 1;
    for (int u : incoming[static_cast<size_t>(v)]) stack.push_back(u);
  }
  const std::vector<int> order = exec_order(body, nullptr, 0, nullptr, 0);
  bool all_head = true;
  for (int v : order) all_head = all_head && head[static_cast<size_t>(v)];
  std::vector<int> round;  // the execs a counted round runs
  for (int v : order)
    if (all_head || !head[static_cast<size_t>(v)]) round.push_back(v);
  std::vector<char> is_carried_in(nt, 0), is_carried_out(nt, 0);
  for (const auto& [out, in] : body->carry_overs) {
    is_carried_out[static_cast<size_t>(out)] = 1;
    is_carried_in[static_cast<size_t>(in)] = 1;
  }
  std::vector<char> written(nt, 0), read(nt, 0);
  for (int v : round) {
    const Graph::Exec& y = body->execs[static_cast<size_t>(v)];
    std::string random = exec_label(body, v);
    NNC_CHECK(!is_random(y.cmd.cmd) && !(control_of(y) && draws_random(body, &random)),
              "%s: the body of %s draws random numbers (%s); its backward recomputes each round, which would draw other "
              "numbers",
              kWhat, label.c_str(), random.c_str());
    for (int d : y.inputs) {
      if (d >= 0) read[static_cast<size_t>(base_of(body, d))] = 1;
    }
    for (int d : y.outputs)
      if (d >= 0) written[static_cast<size_t>(base_of(body, d))] = 1;
  }
  if (!all_head)  // what the head computes must not matter to the gradients
    for (int v : order) {
      if (!head[static_cast<size_t>(v)]) continue;
      for (int d : body->execs[static_cast<size_t>(v)].outputs) {
        if (d < 0) continue;
        const int b = base_of(body, d);
        NNC_CHECK(!read[static_cast<size_t>(b)] && !is_carried_out[static_cast<size_t>(b)] && bt(b).outer < 0,
                  "%s: in %s, %s runs before the breakpoints and computes %s, which the rest of the round uses; the backward "
                  "pass needs the breakpoints to end the body or to guard only the expression",
                  kWhat, label.c_str(), exec_label(body, v).c_str(), tensor_label(body, b).c_str());
      }
    }
  // What a round hands out: carried-out values and values hooked up outside.
  std::vector<int> f;
  for (const auto& [out, in] : body->carry_overs) {
    NNC_CHECK(written[static_cast<size_t>(out)], "%s: in %s, the carried value %s is not computed by the round", kWhat,
              label.c_str(), tensor_label(body, out).c_str());
    if (std::find(f.begin(), f.end(), out) == f.end()) f.push_back(out);
  }
  auto grad_of_output = [&](int outer) { return gradient_at_output(x, grad_out, outer); };
  for (size_t d = 0; d < nt; d++)
    if (bt(static_cast<int>(d)).outer >= 0 && written[d] && !CCV_NNC_TENSOR_SYMBOL_IS_DEAD(bt(static_cast<int>(d)).flags) &&
        grad_of_output(bt(static_cast<int>(d)).outer) >= 0 && std::find(f.begin(), f.end(), static_cast<int>(d)) == f.end())
      f.push_back(static_cast<int>(d));
  // What a round reads from outside itself: the tape keeps the carried-in
  // values and the body's constants; the enclosing graph's symbols it only
  // reads are read there.
  std::vector<int> taped;
  for (size_t d = 0; d < nt; d++)
    if (read[d] && !written[d] && (is_carried_in[d] || bt(static_cast<int>(d)).outer < 0)) taped.push_back(static_cast<int>(d));
  // Which of those lead to what the round hands out (wrt candidates).
  const std::vector<char> needed = needed_for(body, round, f);
  auto input_slot = [&](int outer) {
    for (size_t i = 0; i < x.inputs.size(); i++)
      if (x.inputs[i] == outer) return static_cast<int>(i);
    return -1;
  };
  auto is_wanted = [&](int outer) {
    const int i = input_slot(outer);
    return i >= 0 && static_cast<size_t>(i) < wanted.size() && wanted[static_cast<size_t>(i)];
  };

  std::vector<int> wrt_forward;  // the body symbol of each wrt
  for (size_t d = 0; d < nt; d++) {
    if (!read[d] || written[d] || !needed[d] || !is_float(bt(static_cast<int>(d)).info.datatype)) continue;
    const int outer = bt(static_cast<int>(d)).outer;
    if (!is_carried_in[d] && !(outer >= 0 && is_wanted(outer))) continue;
    wrt_forward.push_back(static_cast<int>(d));
  }
  if (wrt_forward.empty() || f.empty()) return;  // no gradient flows through the loop to what it reads

  // The backward loop and its body.
  Graph* back = ccv_nnc_symbolic_graph_new();
  NNC_CHECK(back, "%s: out of memory", kWhat);
  const std::string back_name = (x.name.empty() ? std::string("while") : x.name) + " backward";
  ccv_nnc_graph_exec_symbol_t back_exec;
  try {
    back_exec = checked([&] { return ccv_nnc_symbolic_graph_while(g_, CCV_NNC_GRAPH_BACKWARD, back, back_name.c_str()); });
  } catch (...) {
    ccv_nnc_symbolic_graph_free(back);
    throw;
  }
  new_execs_.push_back(back_exec.d);
  auto bsym = [&](int d) { return ccv_nnc_tensor_symbol_t{d, back}; };
  auto gsym = [&](int d) { return ccv_nnc_tensor_symbol_t{d, g_}; };
  auto fresh_in = [&](Graph* g, const ccv_nnc_tensor_param_t& info, const std::string& name) {
    const ccv_nnc_tensor_param_t params = info;
    return tensor_new(g, params, name.empty() ? nullptr : name.c_str()).d;
  };
  ccv_nnc_tensor_param_t i64{};
  i64.type = CCV_TENSOR_CPU_MEMORY;
  i64.format = CCV_TENSOR_FORMAT_NHWC;
  i64.datatype = CCV_64S;
  i64.dim[0] = 1;
  auto tape = std::make_shared<LoopTape>();
  tape->values = taped.size();
  // The read: go flag, forward round, then the taped values.
  std::vector<int> m(nt, -1);
  const int go = fresh_in(back, i64, "go");
  const int fcount = fresh_in(back, i64, "forward round");
  std::vector<ccv_nnc_tensor_symbol_t> read_out{bsym(go), bsym(fcount)};
  for (int d : taped) {
    m[static_cast<size_t>(d)] = fresh_in(back, bt(d).info, bt(d).name);
    read_out.push_back(bsym(m[static_cast<size_t>(d)]));
  }
  const ccv_nnc_tensor_symbol_t back_count{CCV_NNC_WHILE_COUNT_TENSOR_SYMBOL, back};
  const int read_exec = exec_new(back, loop_tape_read(tape.get()), &back_count, 1, read_out.data(),
                                 static_cast<int>(read_out.size()), "tape read")
                            .d;
  std::vector<int> breakpoints{read_exec};
  const bool nested = g_->parent != nullptr;
  // The round again, over the tape's values and the enclosing graph's symbols.
  auto map_symbol = [&](int d) -> int {
    if (d == CCV_NNC_WHILE_COUNT_TENSOR_SYMBOL) return fcount;
    if (d < 0) return d;
    if (m[static_cast<size_t>(d)] >= 0) return m[static_cast<size_t>(d)];
    const Graph::Tensor& s = bt(d);
    if (s.alias_of >= 0) {
      const int b = s.alias_of;
      if (m[static_cast<size_t>(b)] < 0) {
        NNC_CHECK(bt(b).outer < 0 || is_carried_in[static_cast<size_t>(b)], "%s: in %s, %s is an alias of the enclosing graph's %s",
                  kWhat, label.c_str(), tensor_label(body, d).c_str(), tensor_label(g_, bt(b).outer).c_str());
        m[static_cast<size_t>(b)] = fresh_in(back, bt(b).info, bt(b).name);
      }
      const ccv_nnc_tensor_param_t info = s.info;
      m[static_cast<size_t>(d)] = alias_new(back, bsym(m[static_cast<size_t>(b)]), s.ofs, s.stride, info, nullptr).d;
    } else if (s.outer >= 0 && !written[static_cast<size_t>(d)] && !is_carried_in[static_cast<size_t>(d)]) {
      m[static_cast<size_t>(d)] = stand_in(back, gsym(s.outer), kWhat);
    } else {
      m[static_cast<size_t>(d)] = fresh_in(back, s.info, s.name);
    }
    return m[static_cast<size_t>(d)];
  };
  replicate(back, body, round, map_symbol);
  autogen(back, {}, false);
  // Differentiate the round: f = what it hands out, wrt = what it reads that
  // leads there and needs a gradient (the carried-in values, the enclosing
  // symbols wanted).
  std::vector<ccv_nnc_tensor_symbol_t> fs, wrts;
  for (int d : f) fs.push_back(bsym(m[static_cast<size_t>(d)]));
  for (int d : wrt_forward) wrts.push_back(bsym(map_symbol(d)));
  {
    Differentiator inner(back);
    inner.run(fs.data(), static_cast<int>(fs.size()), wrts.data(), static_cast<int>(wrts.size()), nullptr, 0, nullptr, 0);
  }
  auto zero_round = [&](const ccv_nnc_tensor_param_t& info) {  // zeros, written every round
    const int z = fresh_in(back, info, "zero");
    ccv_nnc_cmd_param_t p;
    std::memset(&p, 0, sizeof(p));
    const ccv_nnc_tensor_symbol_t out = bsym(z);
    exec_new(back, make_cmd(CCV_NNC_SET_FORWARD, nullptr, p, 0), nullptr, 0, &out, 1, "zero");
    return z;
  };
  auto root_zeros = [&](const ccv_nnc_tensor_param_t& info, const std::string& name) { return zero_symbol(info, name); };
  auto seed_of = [&](int d) {
    const int s = gradient_of(back, m[static_cast<size_t>(d)]);
    NNC_CHECK(s >= 0, "%s: %s: no seed for %s", kWhat, label.c_str(), tensor_label(body, d).c_str());
    back->tensors[static_cast<size_t>(s)].flags &= ~static_cast<int>(CCV_NNC_TENSOR_SYMBOL_INIT_ONES);
    return s;
  };
  auto grad_in_back = [&](int d) {  // the round's gradient of body symbol d, as a base, or -1
    const int gd = gradient_of(back, m[static_cast<size_t>(d)]);
    return gd < 0 ? -1 : as_base(back, gd, nullptr);
  };
  std::vector<ccv_nnc_tensor_symbol_map_t> carries;
  std::vector<std::pair<int, int>> root_grads;  // (forward symbol of g_, its gradient)
  for (int d : f) {
    const int seed = seed_of(d);
    const int outer = bt(d).outer;
    int from_outside = outer >= 0 ? grad_of_output(outer) : -1;
    if (from_outside >= 0) from_outside = as_base(g_, from_outside, nullptr);
    int carried_in = -1;
    for (const auto& [out, in] : body->carry_overs)
      if (out == d) carried_in = in;
    if (carried_in >= 0) {
      int dh = std::find(wrt_forward.begin(), wrt_forward.end(), carried_in) != wrt_forward.end() ? grad_in_back(carried_in) : -1;
      if (dh < 0) dh = zero_round(bt(carried_in).info);
      carries.push_back({bsym(dh), bsym(seed)});
    } else {
      carries.push_back({bsym(zero_round(bt(d).info)), bsym(seed)});
    }
    if (from_outside < 0) from_outside = root_zeros(bt(d).info, "d" + bt(d).name + " (none)");
    hookup(g_, back, gsym(from_outside), bsym(seed), kWhat);
  }
  for (size_t k = 0; k < wrt_forward.size(); k++) {
    const int d = wrt_forward[k];
    const int outer = bt(d).outer;
    if (outer < 0 || !is_wanted(outer)) continue;
    const int gd = grad_in_back(d);
    if (gd < 0) continue;
    // In the root graph: zeros where the forward loop completed no round
    // (the backward loop then runs none). Inside a loop body or a branch
    // (nested), whose symbols compile does not initialise, see below.
    const int dx = nested ? fresh(g_->tensors[static_cast<size_t>(outer)].info, name_for(outer))
                          : fresh(g_->tensors[static_cast<size_t>(outer)].info, name_for(outer), CCV_NNC_TENSOR_SYMBOL_INIT_ZEROS);
    // Handed out through a copy written every round, so dx is an ordinary
    // tensor of the enclosing graph and not the loop's carried result: the
    // enclosing backward may take aliases of it (which compile refuses for a
    // carried result), and its INIT_ZEROS stands when no round runs.
    // Nested, the copy is a breakpoint of the backward loop and reads what
    // the round carried in: it runs in every round, the stopping one too,
    // whose carried-in values are the final ones (the starting ones when no
    // round runs), so dx needs no initialisation.
    auto hand_out = [&](int from) {
      const ccv_nnc_tensor_param_t info = back->tensors[static_cast<size_t>(from)].info;
      const ccv_nnc_tensor_symbol_t in = bsym(from), out = bsym(fresh_in(back, info, name_for(outer)));
      const int h = exec_new(back, simple(CCV_NNC_DATA_TRANSFER_FORWARD), &in, 1, &out, 1, "hand out").d;
      if (nested) breakpoints.push_back(h);
      hookup(g_, back, gsym(dx), out, kWhat);
    };
    if (is_carried_in[static_cast<size_t>(d)] && nested) {  // the seed the last backward round carries to the stopping one
      int carried_out = -1;
      for (const auto& [out, in] : body->carry_overs)
        if (in == d) carried_out = out;
      hand_out(seed_of(carried_out));
    } else if (is_carried_in[static_cast<size_t>(d)]) {  // the initial state: the last backward round's gradient
      hand_out(gd);
    } else {  // read every round: a running sum
      const ccv_nnc_tensor_param_t info = g_->tensors[static_cast<size_t>(outer)].info;
      const int acc_in = fresh_in(back, info, "running sum");
      const int acc_out = fresh_in(back, info, "running sum");
      const ccv_nnc_tensor_symbol_t in[2] = {bsym(acc_in), bsym(gd)}, out = bsym(acc_out);
      exec_new(back, simple(CCV_NNC_EWSUM_FORWARD), in, 2, &out, 1, "sum over rounds");
      carries.push_back({bsym(acc_out), bsym(acc_in)});
      hookup(g_, back, gsym(root_zeros(info, name_for(outer) + " (start)")), bsym(acc_in), kWhat);
      hand_out(nested ? acc_in : acc_out);
    }
    root_grads.emplace_back(outer, dx);
  }
  checked([&] {
    ccv_nnc_symbolic_graph_set_carry_overs(back, carries.data(), static_cast<int>(carries.size()));
    return 0;
  });
  const ccv_nnc_tensor_symbol_t go_in = bsym(go);
  std::vector<ccv_nnc_graph_exec_symbol_t> bps;
  for (int b : breakpoints) bps.push_back({b, back});
  checked([&] {
    ccv_nnc_symbolic_graph_set_while_expr(back, loop_tape_go, nullptr, &go_in, 1, bps.data(), static_cast<int>(bps.size()));
    return 0;
  });
  autogen(back, {}, true);
  // The push, last: the forward body changes only once all else is built.
  std::vector<ccv_nnc_tensor_symbol_t> push_in{{CCV_NNC_WHILE_COUNT_TENSOR_SYMBOL, body}};
  for (int d : taped) push_in.push_back({d, body});
  const std::vector<int> old_breakpoints = body->breakpoints;
  const bool had_ends = !body->sources.empty() || !body->destinations.empty();
  const int push = exec_new(body, loop_tape_push(tape.get()), push_in.data(), static_cast<int>(push_in.size()), nullptr, 0, "tape").d;
  body->owned.push_back(tape);
  if (all_head) body->breakpoints.push_back(push);
  if (had_ends) reset_ends(body);
  undo_.push_back([body, push, old_breakpoints, had_ends] {
    exec_free(body, {push, body});
    body->breakpoints = old_breakpoints;
    body->owned.pop_back();
    if (had_ends) reset_ends(body);
  });
  concat(g_, e, back_exec.d);
  for (const auto& [outer, dx] : root_grads) add(outer, dx);
}

// --- Backward through a case..of ---------------------------------------------
//
// A second case..of in the enclosing graph, on the same expression and its
// inputs (so it picks the same branch: the expression must depend only on
// them), whose branch i recomputes forward branch i from the enclosing
// symbols it reads and differentiates it (no tape: a branch runs once). Its
// outputs are the gradients of the enclosing symbols the branches read; when
// no branch runs they fall back to the gradient of the outputs whose
// fall-back (bypass) each input is, or to zeros.
void Differentiator::differentiate_case_of(int e, const std::vector<int>& grad_out, const std::vector<char>& wanted) {
  const Graph::Exec x = g_->execs[static_cast<size_t>(e)];  // a copy: execs are appended below
  const std::string label = exec_label(g_, e);
  NNC_CHECK(x.case_of, "%s: %s has no expression (ccv_nnc_symbolic_graph_set_case_of_expr)", kWhat, label.c_str());
  auto grad_of_output = [&](int outer) { return gradient_at_output(x, grad_out, outer); };
  // The inputs that get a gradient: wanted, floating point, not only the expression's.
  std::vector<int> targets;
  for (size_t i = 0; i < x.inputs.size() && i < wanted.size(); i++)
    if (wanted[i] && is_float(t(x.inputs[i]).info.datatype)) targets.push_back(x.inputs[i]);
  if (targets.empty()) return;
  // Where no branch runs: each output is its fall-back, so the fall-back's
  // gradient is the sum of those outputs' gradients.
  std::vector<int> fallback;
  for (int in : targets) {
    std::vector<int> parts;
    for (int o : x.outputs)
      if (t(o).bypass == in && grad_of_output(o) >= 0) parts.push_back(as_base(g_, grad_of_output(o), nullptr));
    const ccv_nnc_tensor_param_t info = t(in).info;
    if (parts.empty())
      fallback.push_back(zero_symbol(info, name_for(in) + " (no branch)"));
    else
      fallback.push_back(parts.size() == 1 ? parts[0] : sum(parts, -1, info, name_for(in)));
  }
  // The backward case..of (a failure below rolls it back with its branches).
  std::vector<int> dx;
  for (int in : targets) dx.push_back(fresh(t(in).info, name_for(in)));
  std::vector<ccv_nnc_tensor_symbol_t> expr_in;
  for (int i = 0; i < x.expr_inputs; i++) expr_in.push_back({x.declared_inputs[static_cast<size_t>(i)], g_});
  std::vector<ccv_nnc_tensor_symbol_map_t> outs;
  for (size_t k = 0; k < targets.size(); k++)
    outs.push_back({{fallback[k], g_}, {dx[k], g_}});
  const std::string back_name = (x.name.empty() ? std::string("case..of") : x.name) + " backward";
  const ccv_nnc_graph_exec_symbol_t back = checked([&] {
    return ccv_nnc_symbolic_graph_case_of_new(g_, CCV_NNC_GRAPH_BACKWARD, expr_in.data(), static_cast<int>(expr_in.size()), outs.data(),
                                              static_cast<int>(outs.size()), back_name.c_str());
  });
  new_execs_.push_back(back.d);
  checked([&] {
    ccv_nnc_symbolic_graph_set_case_of_expr(g_, back, x.case_of, x.case_of_data);
    return 0;
  });
  for (size_t i = 0; i < x.subs.size(); i++) {
    const Graph* fb = x.subs[i];
    if (!fb) continue;
    Graph* bb = ccv_nnc_symbolic_graph_new();
    NNC_CHECK(bb, "%s: out of memory", kWhat);
    try {
      checked([&] {
        ccv_nnc_symbolic_graph_set_case_of(g_, back, bb, static_cast<int>(i), nullptr, 0);
        return 0;
      });
    } catch (...) {
      ccv_nnc_symbolic_graph_free(bb);
      throw;
    }
    const size_t nt = fb->tensors.size();
    auto ft = [&](int d) -> const Graph::Tensor& { return fb->tensors[static_cast<size_t>(d)]; };
    const std::vector<int> order = exec_order(fb, nullptr, 0, nullptr, 0);
    std::vector<char> written(nt, 0);
    for (int v : order) {
      const Graph::Exec& y = fb->execs[static_cast<size_t>(v)];
      std::string random = exec_label(fb, v);
      NNC_CHECK(!is_random(y.cmd.cmd) && !(control_of(y) && draws_random(fb, &random)),
                "%s: branch %zu of %s draws random numbers (%s); its backward recomputes the branch, which would draw other numbers",
                kWhat, i, label.c_str(), random.c_str());
      for (int d : y.outputs)
        if (d >= 0) written[static_cast<size_t>(base_of(fb, d))] = 1;
    }
    std::vector<int> m(nt, -1);
    auto bsym = [&](int d) { return ccv_nnc_tensor_symbol_t{d, bb}; };
    auto map_symbol = [&](int d) -> int {
      if (d < 0) return d;
      if (m[static_cast<size_t>(d)] >= 0) return m[static_cast<size_t>(d)];
      const Graph::Tensor& s = ft(d);
      if (s.alias_of >= 0) {
        const int b = s.alias_of;
        NNC_CHECK(ft(b).outer < 0 || written[static_cast<size_t>(b)], "%s: in branch %zu of %s, %s is an alias of the enclosing graph's %s",
                  kWhat, i, label.c_str(), tensor_label(fb, d).c_str(), tensor_label(g_, ft(b).outer).c_str());
        if (m[static_cast<size_t>(b)] < 0) {
          const ccv_nnc_tensor_param_t info = ft(b).info;
          m[static_cast<size_t>(b)] = tensor_new(bb, info, ft(b).name.empty() ? nullptr : ft(b).name.c_str()).d;
        }
        const ccv_nnc_tensor_param_t info = s.info;
        m[static_cast<size_t>(d)] = alias_new(bb, bsym(m[static_cast<size_t>(b)]), s.ofs, s.stride, info, nullptr).d;
      } else if (s.outer >= 0 && !written[static_cast<size_t>(d)]) {
        m[static_cast<size_t>(d)] = stand_in(bb, {s.outer, g_}, kWhat);
      } else {
        NNC_CHECK(s.outer >= 0 || written[static_cast<size_t>(d)],
                  "%s: branch %zu of %s reads %s, which nothing writes (a constant of the branch cannot be recomputed)", kWhat, i,
                  label.c_str(), tensor_label(fb, d).c_str());
        const ccv_nnc_tensor_param_t info = s.info;
        m[static_cast<size_t>(d)] = tensor_new(bb, info, s.name.empty() ? nullptr : s.name.c_str()).d;
      }
      return m[static_cast<size_t>(d)];
    };
    replicate(bb, fb, order, map_symbol);
    autogen(bb, {}, false);
    // f: the branch's results with a gradient; wrt: the stand-ins of targets that lead there.
    std::vector<int> f;
    for (size_t d = 0; d < nt; d++)
      if (ft(static_cast<int>(d)).outer >= 0 && written[d] && grad_of_output(ft(static_cast<int>(d)).outer) >= 0)
        f.push_back(static_cast<int>(d));
    const std::vector<char> needed = needed_for(fb, order, f);
    std::vector<int> wrt_of(targets.size(), -1);  // per target: its branch symbol when it is a wrt
    std::vector<ccv_nnc_tensor_symbol_t> fs, wrts;
    for (int d : f) fs.push_back(bsym(m[static_cast<size_t>(d)]));
    for (size_t d = 0; d < nt; d++) {
      const int outer = ft(static_cast<int>(d)).outer;
      if (outer < 0 || written[d] || !needed[d]) continue;
      for (size_t k = 0; k < targets.size(); k++)
        if (targets[k] == outer) {
          wrt_of[k] = map_symbol(static_cast<int>(d));
          wrts.push_back(bsym(wrt_of[k]));
        }
    }
    if (!fs.empty() && !wrts.empty()) {
      Differentiator inner(bb);
      inner.run(fs.data(), static_cast<int>(fs.size()), wrts.data(), static_cast<int>(wrts.size()), nullptr, 0, nullptr, 0);
      // The seeds read the enclosing graph's gradients of the outputs.
      for (int d : f) {
        const int seed = gradient_of(bb, m[static_cast<size_t>(d)]);
        NNC_CHECK(seed >= 0, "%s: %s: no seed for %s", kWhat, label.c_str(), tensor_label(fb, d).c_str());
        bb->tensors[static_cast<size_t>(seed)].flags &= ~static_cast<int>(CCV_NNC_TENSOR_SYMBOL_INIT_ONES);
        hookup(g_, bb, {as_base(g_, grad_of_output(ft(d).outer), nullptr), g_}, bsym(seed), kWhat);
      }
    }
    // Every output written: the gradient, or zeros where none flows in this branch.
    for (size_t k = 0; k < targets.size(); k++) {
      int gd = wrt_of[k] >= 0 ? gradient_of(bb, wrt_of[k]) : -1;
      const ccv_nnc_tensor_param_t info = t(targets[k]).info;
      if (gd >= 0) {
        // A fresh base that stands for nothing yet (a seed read back as a gradient gets a copy).
        const Graph::Tensor& gt = bb->tensors[static_cast<size_t>(gd)];
        if (gt.alias_of >= 0 || gt.outer >= 0 || !gt.aliases.empty()) {
          const ccv_nnc_tensor_symbol_t from = bsym(gd), copy = tensor_new(bb, info, nullptr);
          exec_new(bb, simple(CCV_NNC_DATA_TRANSFER_FORWARD), &from, 1, &copy, 1, "gradient copy");
          gd = copy.d;
        }
      } else {
        ccv_nnc_cmd_param_t p;
        std::memset(&p, 0, sizeof(p));
        const ccv_nnc_tensor_symbol_t z = tensor_new(bb, info, "zero");
        exec_new(bb, make_cmd(CCV_NNC_SET_FORWARD, nullptr, p, 0), nullptr, 0, &z, 1, "zero");
        gd = z.d;
      }
      hookup(g_, bb, {dx[k], g_}, bsym(gd), kWhat);
    }
    autogen(bb, {}, true);
  }
  concat(g_, e, back.d);
  for (size_t k = 0; k < targets.size(); k++) add(targets[k], dx[k]);
}

void Differentiator::run(const ccv_nnc_tensor_symbol_t* f, int f_size, const ccv_nnc_tensor_symbol_t* wrt, int wrt_size,
                         const ccv_nnc_graph_exec_symbol_t* sources, int source_size,
                         const ccv_nnc_graph_exec_symbol_t* destinations, int destination_size) {
  NNC_CHECK(f_size > 0 && f, "%s: no f symbols (f_symbol_size %d)", kWhat, f_size);
  NNC_CHECK(wrt_size > 0 && wrt, "%s: no wrt symbols (wrt_symbol_size %d)", kWhat, wrt_size);
  NNC_CHECK(source_size >= 0 && (source_size == 0 || sources), "%s: bad sources array (size %d)", kWhat, source_size);
  NNC_CHECK(destination_size >= 0 && (destination_size == 0 || destinations), "%s: bad destinations array (size %d)", kWhat,
            destination_size);
  for (int i = 0; i < f_size; i++) {
    const std::string w = format("%s: f_symbols[%d]", kWhat, i);
    const Graph::Tensor& x = tensor_of(g_, f[i], w.c_str());
    NNC_CHECK(ndim(x.info) > 0, "%s: %s has no shape", w.c_str(), tensor_label(g_, f[i].d).c_str());
    NNC_CHECK(is_float(x.info.datatype), "%s: %s is %s; gradients need a floating-point f", w.c_str(),
              tensor_label(g_, f[i].d).c_str(), datatype_name(x.info.datatype));
  }
  for (int i = 0; i < wrt_size; i++) {
    const std::string w = format("%s: wrt_symbols[%d]", kWhat, i);
    const Graph::Tensor& x = tensor_of(g_, wrt[i], w.c_str());
    NNC_CHECK(is_float(x.info.datatype), "%s: %s is %s; gradients need a floating-point symbol", w.c_str(),
              tensor_label(g_, wrt[i].d).c_str(), datatype_name(x.info.datatype));
  }
  const std::vector<int> order = exec_order(g_, sources, source_size, destinations, destination_size);
  const size_t nt = g_->tensors.size();
  // Which bases depend on a wrt (forward), and which an f depends on (backward).
  std::vector<char> reached(nt, 0), needed(nt, 0);
  for (int i = 0; i < wrt_size; i++) reached[static_cast<size_t>(base_of(g_, wrt[i].d))] = 1;
  std::vector<char> exec_reached(g_->execs.size(), 0), exec_needed(g_->execs.size(), 0);
  for (int e : order) {
    const Graph::Exec& x = g_->execs[static_cast<size_t>(e)];
    bool r = false;
    for (int d : x.inputs) r = r || (d >= 0 && reached[static_cast<size_t>(base_of(g_, d))]);
    if (!r) continue;
    exec_reached[static_cast<size_t>(e)] = 1;
    for (int d : x.outputs)
      if (d >= 0) reached[static_cast<size_t>(base_of(g_, d))] = 1;
  }
  for (int i = 0; i < f_size; i++) needed[static_cast<size_t>(base_of(g_, f[i].d))] = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Graph::Exec& x = g_->execs[static_cast<size_t>(*it)];
    bool r = false;
    for (int d : x.outputs) r = r || (d >= 0 && needed[static_cast<size_t>(base_of(g_, d))]);
    if (!r || !exec_reached[static_cast<size_t>(*it)]) continue;
    exec_needed[static_cast<size_t>(*it)] = 1;
    for (int d : x.inputs)
      if (d >= 0) needed[static_cast<size_t>(base_of(g_, d))] = 1;
  }
  for (int i = 0; i < wrt_size; i++)
    NNC_CHECK(needed[static_cast<size_t>(base_of(g_, wrt[i].d))],
              "%s: wrt_symbols[%d], %s, is not reachable from the f symbols (no exec between the sources and the "
              "destinations leads from it to an f)",
              kWhat, i, tensor_label(g_, wrt[i].d).c_str());
  // The seeds: the gradients of the f symbols, ones for a scalar.
  std::vector<int> seeds;
  for (int i = 0; i < f_size; i++) {
    const int d = f[i].d;
    int seed = -1;
    for (int j = 0; j < i; j++)
      if (f[j].d == d) seed = seeds[static_cast<size_t>(j)];
    if (seed < 0) {
      seed = fresh(t(d).info, name_for(d), count_of(t(d).info) == 1 ? static_cast<int>(CCV_NNC_TENSOR_SYMBOL_INIT_ONES) : 0);
      contributions_[base_of(g_, d)].push_back({d, seed});
    }
    seeds.push_back(seed);
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    if (exec_needed[static_cast<size_t>(*it)]) differentiate(*it, reached);
  std::vector<Record> records;
  for (int i = 0; i < wrt_size; i++) {
    const int gd = gradient(wrt[i].d);
    NNC_CHECK(gd >= 0, "%s: no gradient reaches wrt_symbols[%d], %s", kWhat, i, tensor_label(g_, wrt[i].d).c_str());
    records.push_back({wrt[i].d, gd, t(wrt[i].d).info});
  }
  for (int i = 0; i < f_size; i++) records.push_back({f[i].d, seeds[static_cast<size_t>(i)], t(f[i].d).info});
  // Order each backward exec after the forward execs whose values it reads.
  std::vector<int> set = order;
  set.insert(set.end(), new_execs_.begin(), new_execs_.end());
  autogen(g_, set, false);
  if (!g_->sources.empty() || !g_->destinations.empty()) reset_ends(g_);
  g_->gradients = std::move(records);
}

bool same_info(const ccv_nnc_tensor_param_t& a, const ccv_nnc_tensor_param_t& b) {
  return a.datatype == b.datatype && std::equal(a.dim, a.dim + CCV_NNC_MAX_DIM_ALLOC, b.dim);
}

}  // namespace

Checkpoint checkpoint(const Graph* g) { return {g->tensors.size(), g->execs.size()}; }

void rollback(Graph* g, const Checkpoint& c) {
  // Appended symbols and execs refer only to each other, except the edges
  // from older execs to new ones and the ends.
  for (size_t e = c.execs; e < g->execs.size(); e++)
    for (Graph* sub : g->execs[e].subs) delete sub;
  g->execs.resize(c.execs);
  g->tensors.resize(c.tensors);
  for (Graph::Exec& x : g->execs)
    x.outgoing.erase(std::remove_if(x.outgoing.begin(), x.outgoing.end(), [&](int t) { return static_cast<size_t>(t) >= c.execs; }),
                     x.outgoing.end());
  for (Graph::Tensor& t : g->tensors) {
    t.writers.erase(std::remove_if(t.writers.begin(), t.writers.end(), [&](int w) { return static_cast<size_t>(w) >= c.execs; }),
                    t.writers.end());
    t.aliases.erase(std::remove_if(t.aliases.begin(), t.aliases.end(), [&](int a) { return static_cast<size_t>(a) >= c.tensors; }),
                    t.aliases.end());
  }
  auto drop = [&](std::vector<ccv_nnc_graph_exec_symbol_t>& v) {
    v.erase(std::remove_if(v.begin(), v.end(), [&](const ccv_nnc_graph_exec_symbol_t& e) { return static_cast<size_t>(e.d) >= c.execs; }),
            v.end());
  };
  drop(g->sources);
  drop(g->destinations);
  g->gradients.clear();
}

void backward(Graph* g, const ccv_nnc_tensor_symbol_t* f, int f_size, const ccv_nnc_tensor_symbol_t* wrt, int wrt_size,
              const ccv_nnc_graph_exec_symbol_t* sources, int source_size, const ccv_nnc_graph_exec_symbol_t* destinations,
              int destination_size) {
  NNC_CHECK(g, "%s: the symbolic graph is NULL", kWhat);
  g->gradients.clear();
  const Checkpoint before = checkpoint(g);
  Differentiator d(g);
  try {
    d.run(f, f_size, wrt, wrt_size, sources, source_size, destinations, destination_size);
  } catch (...) {
    d.undo();
    rollback(g, before);
    throw;
  }
}

int gradient_of(const Graph* g, int symbol) {
  for (const Record& r : g->gradients)
    if (r.forward == symbol) {
      // A record that no longer fits the graph (symbols changed since) fails these checks.
      if (static_cast<size_t>(r.gradient) >= g->tensors.size() || static_cast<size_t>(symbol) >= g->tensors.size()) return -1;
      const Graph::Tensor& gt = g->tensors[static_cast<size_t>(r.gradient)];
      if (CCV_NNC_TENSOR_SYMBOL_IS_DEAD(gt.flags) || !same_info(g->tensors[static_cast<size_t>(symbol)].info, r.info) ||
          !same_info(gt.info, r.info))
        return -1;
      return r.gradient;
    }
  return -1;
}

}  // namespace nnc::symbolic

using namespace nnc;
using namespace nnc::symbolic;

NNC_API void ccv_nnc_symbolic_graph_backward(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_tensor_symbol_t* const f_symbols,
                                             const int f_symbol_size, const ccv_nnc_tensor_symbol_t* const wrt_symbols,
                                             const int wrt_symbol_size, const ccv_nnc_graph_exec_symbol_t* const sources,
                                             const int source_size, const ccv_nnc_graph_exec_symbol_t* const destinations,
                                             const int destination_size) {
  guard_void([&] {
    backward(graph, f_symbols, f_symbol_size, wrt_symbols, wrt_symbol_size, sources, source_size, destinations,
             destination_size);
  });
}

NNC_API ccv_nnc_tensor_symbol_t ccv_nnc_tensor_symbol_for_backward(const ccv_nnc_symbolic_graph_t* const graph,
                                                                   const ccv_nnc_tensor_symbol_t symbol) {
  constexpr ccv_nnc_tensor_symbol_t none = {CCV_NNC_NO_TENSOR_SYMBOL, nullptr};
  return guard(none, [&]() -> ccv_nnc_tensor_symbol_t {
    tensor_of(graph, symbol, "ccv_nnc_tensor_symbol_for_backward");
    const int d = gradient_of(graph, symbol.d);
    if (d < 0) return none;
    return {d, const_cast<Graph*>(graph)};
  });
}

NNC_API ccv_nnc_graph_exec_symbol_t ccv_nnc_graph_exec_symbol_for_backward(const ccv_nnc_symbolic_graph_t* const graph,
                                                                           const ccv_nnc_tensor_symbol_t symbol) {
  constexpr ccv_nnc_graph_exec_symbol_t none = {CCV_NNC_NO_GRAPH_EXEC_SYMBOL, nullptr};
  return guard(none, [&]() -> ccv_nnc_graph_exec_symbol_t {
    const Graph::Tensor& x = tensor_of(graph, symbol, "ccv_nnc_graph_exec_symbol_for_backward");
    // A gradient that is an alias is written through its base.
    for (int d : {symbol.d, x.alias_of}) {
      if (d < 0) continue;
      for (int w : graph->tensors[static_cast<size_t>(d)].writers)
        if (!CCV_NNC_GRAPH_EXEC_IS_DEAD(graph->execs[static_cast<size_t>(w)].flags)) return {w, const_cast<Graph*>(graph)};
    }
    return none;
  });
}
