// Symbolic graphs in SQLite (ccv_nnc_symbolic_graph_write / _read).
//
// The file holds one row in
//   graphs(name TEXT PRIMARY KEY, schema INTEGER, checksum INTEGER, data BLOB)
// (name 'graph'), whose blob is the graph in the little-endian record format
// below, and the bound tensors in the tensor table (io.hpp) under the names
// "graph.bind.<i>". The checksum is XXH3-64 of the blob.
//
// Blob, schema 1 (every integer 32-bit little-endian, strings as a length and
// UTF-8 bytes), a graph record followed by the binds:
//   graph record: "NNCG", tensor count, exec count,
//   per tensor symbol: flags, alias_of (-1 for none), the parameter block
//     (type, format, datatype, reserved, 12 sizes), 12 ofs, 12 strides, name,
//     copy count, (device, symbol) pairs, outer (the symbol of the enclosing
//     graph a loop body's stand-in stands for, -1 for none);
//   per exec symbol: flags, name, cmd, backend, algorithm, the size of the
//     command parameters and their bytes, the hint (12 strides, 12 border
//     begins, 12 border ends), input count and inputs, output count and
//     outputs, edge count and the exec symbols it leads to, copy count,
//     (device, exec) pairs, sub-graph kind (0 none, 1 while, 2 case..of);
//     for a while: the body's graph record, carried pair count and (from, to)
//     pairs; for a case..of: the expression's input count and inputs, output
//     count and (bypass, output) pairs, branch count and per branch a
//     present flag and the branch's graph record;
//   source count and sources, destination count and destinations;
//   then bind count, per bind: the symbol.
//
// Symbols keep their indices: a freed symbol is written as dead, and rebuilt
// as a placeholder that is freed at once, so that a caller's saved indices
// and the binds mean the same symbols in the graph read back. The graph is
// rebuilt through the public Level-3 calls, which check it as they would a
// caller's (SSA, shapes, cycles, hookups), after the blob itself is checked
// for sizes and indices. A loop or branch is attached before its graph is
// rebuilt, so that its stand-ins hook up to the owner's symbols (a branch's
// outputs are such stand-ins).
//
// The expressions of while and case..of are C callbacks, which a file cannot
// hold: they are read without one, and compiling fails with a message until
// the caller sets them again (ccv_nnc_symbolic_graph_set_while_expr on
// ccv_nnc_symbolic_graph_from_while_symbol, ccv_nnc_symbolic_graph_set_case_of_expr).
// Not written (refused with a message): custom commands (an isa pointer) and
// a sub-graph on its own. Not kept: pairings with symbols of other graphs and
// the records of the last backward pass.
#include <sqlite3.h>
#include <xxhash.h>

#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/tensor.hpp"
#include "io/io.hpp"
#include "io/sqlite.hpp"
#include "symbolic/graph.hpp"

namespace nnc::io {

namespace {

constexpr char kMagic[4] = {'N', 'N', 'C', 'G'};
constexpr const char* kGraphName = "graph";
constexpr const char* kCreateGraphs =
    "CREATE TABLE IF NOT EXISTS graphs (name TEXT PRIMARY KEY NOT NULL, schema INTEGER NOT NULL, "
    "checksum INTEGER NOT NULL, data BLOB NOT NULL)";
// Any record is at least this many bytes, which bounds the counts a blob may claim.
constexpr size_t kMinTensorRecord = 4 * (2 + 4 + kMaxDim * 3 + 3);
constexpr size_t kMinExecRecord = 4 * (1 + 1 + 3 + 1 + kMaxDim * 3 + 5);

std::string bind_name(size_t i) { return "graph.bind." + std::to_string(i); }

class Out {
 public:
  void i32(int32_t v) { bytes(&v, 4); }
  void u32(uint32_t v) { bytes(&v, 4); }
  void ints(const int* v, int n) { bytes(v, sizeof(int) * static_cast<size_t>(n)); }
  void list(const std::vector<int>& v) {
    i32(static_cast<int32_t>(v.size()));
    ints(v.data(), static_cast<int>(v.size()));
  }
  void string(const std::string& s) {
    i32(static_cast<int32_t>(s.size()));
    bytes(s.data(), s.size());
  }
  void bytes(const void* p, size_t n) {
    if (n == 0) return;
    const auto* c = static_cast<const unsigned char*>(p);
    data_.insert(data_.end(), c, c + n);
  }
  const std::vector<unsigned char>& data() const { return data_; }

 private:
  std::vector<unsigned char> data_;
};

// Reads with every length checked against what is left.
class In {
 public:
  In(const unsigned char* p, size_t n, const std::string& what) : p_(p), n_(n), what_(what) {}
  void bytes(void* out, size_t n) {
    if (n == 0) return;  // out may be an empty vector's NULL
    need(n);
    std::memcpy(out, p_ + at_, n);
    at_ += n;
  }
  int32_t i32() {
    int32_t v;
    bytes(&v, 4);
    return v;
  }
  uint32_t u32() {
    uint32_t v;
    bytes(&v, 4);
    return v;
  }
  void ints(int* v, int n) { bytes(v, sizeof(int) * static_cast<size_t>(n)); }
  // A count of records of at least `record` bytes each.
  int count(size_t record, const char* of) {
    const int32_t n = i32();
    if (n < 0 || static_cast<size_t>(n) > left() / record)
      fail(CCV_NNC_EXEC_INVALID, "%s: %d %s claimed where %zu bytes remain; the graph is corrupt", what_.c_str(), n, of,
           left());
    return n;
  }
  std::vector<int> list(const char* of) {
    std::vector<int> v(static_cast<size_t>(count(4, of)));
    ints(v.data(), static_cast<int>(v.size()));
    return v;
  }
  std::string string() {
    const int n = count(1, "string bytes");
    std::string s(static_cast<size_t>(n), '\0');
    bytes(s.data(), s.size());
    return s;
  }
  size_t left() const { return n_ - at_; }

 private:
  void need(size_t n) {
    if (n > left())
      fail(CCV_NNC_EXEC_INVALID, "%s: the graph record ends early (%zu bytes wanted, %zu left); the graph is corrupt",
           what_.c_str(), n, left());
  }
  const unsigned char* p_;
  size_t n_;
  size_t at_ = 0;
  const std::string& what_;
};

using symbolic::Graph;

constexpr int kMaxDepth = 32;  // loops inside loops; deeper records are refused as corrupt

void encode_body(Out& o, const Graph* g, const std::string& what, int depth) {
  NNC_CHECK(depth < kMaxDepth, "%s: loops nested more than %d deep", what.c_str(), kMaxDepth);
  o.bytes(kMagic, 4);
  o.i32(static_cast<int32_t>(g->tensors.size()));
  o.i32(static_cast<int32_t>(g->execs.size()));
  for (const Graph::Tensor& t : g->tensors) {
    o.u32(static_cast<uint32_t>(t.flags));
    o.i32(t.alias_of);
    o.i32(t.info.type);
    o.i32(t.info.format);
    o.i32(t.info.datatype);
    o.i32(t.info.reserved);
    o.ints(t.info.dim, kMaxDim);
    o.ints(t.ofs, kMaxDim);
    o.ints(t.stride, kMaxDim);
    o.string(t.name);
    o.i32(static_cast<int32_t>(t.copies.size()));
    for (const auto& [device, symbol] : t.copies) {
      o.i32(device);
      o.i32(symbol);
    }
    o.i32(t.outer);
  }
  for (size_t e = 0; e < g->execs.size(); e++) {
    const Graph::Exec& x = g->execs[e];
    const bool dead = CCV_NNC_GRAPH_EXEC_IS_DEAD(x.flags);
    const int kind = dead ? 0 : symbolic::control_of(x);
    NNC_CHECK(kind != CCV_NNC_GRAPH_EXEC_P_WHILE || (x.subs.size() == 1 && x.subs[0]), "%s: %s has no body",
              what.c_str(), symbolic::exec_label(g, static_cast<int>(e)).c_str());
    if (!dead && !kind) {
      NNC_CHECK(!x.cmd.isa && x.cmd.cmd != CCV_NNC_CUSTOM_FORWARD && x.cmd.cmd != CCV_NNC_CUSTOM_BACKWARD,
                "%s: %s is a custom command; its functions cannot be written to a file", what.c_str(),
                symbolic::exec_label(g, static_cast<int>(e)).c_str());
    }
    o.u32(static_cast<uint32_t>(x.flags));
    o.string(x.name);
    o.u32(x.cmd.cmd);
    o.u32(x.cmd.backend);
    o.i32(x.cmd.algorithm);
    o.i32(static_cast<int32_t>(sizeof(x.cmd.info)));
    o.bytes(&x.cmd.info, sizeof(x.cmd.info));
    o.ints(x.hint.stride.dim, kMaxDim);
    o.ints(x.hint.border.begin, kMaxDim);
    o.ints(x.hint.border.end, kMaxDim);
    o.list(x.inputs);
    o.list(x.outputs);
    o.list(x.outgoing);
    o.i32(static_cast<int32_t>(x.copies.size()));
    for (const auto& [device, symbol] : x.copies) {
      o.i32(device);
      o.i32(symbol);
    }
    o.i32(kind == CCV_NNC_GRAPH_EXEC_P_WHILE ? 1 : kind == CCV_NNC_GRAPH_EXEC_CASE_OF ? 2 : 0);
    if (kind == CCV_NNC_GRAPH_EXEC_P_WHILE) {
      const Graph* body = x.subs[0];
      encode_body(o, body, what, depth + 1);
      o.i32(static_cast<int32_t>(body->carry_overs.size()));
      for (const auto& [from, to] : body->carry_overs) {
        o.i32(from);
        o.i32(to);
      }
    } else if (kind == CCV_NNC_GRAPH_EXEC_CASE_OF) {
      // What ccv_nnc_symbolic_graph_case_of_new was given: the expression's
      // inputs and, per output, the input it takes when no branch runs.
      NNC_CHECK(x.expr_inputs >= 0 && static_cast<size_t>(x.expr_inputs) <= x.declared_inputs.size(),
                "%s: %s: inconsistent case..of inputs", what.c_str(),
                symbolic::exec_label(g, static_cast<int>(e)).c_str());
      o.list(std::vector<int>(x.declared_inputs.begin(), x.declared_inputs.begin() + x.expr_inputs));
      o.i32(static_cast<int32_t>(x.declared_outputs.size()));
      for (int out : x.declared_outputs) {
        const int bypass = g->tensors[static_cast<size_t>(out)].bypass;
        NNC_CHECK(bypass >= 0, "%s: output %s of %s has no bypass", what.c_str(),
                  symbolic::tensor_label(g, out).c_str(), symbolic::exec_label(g, static_cast<int>(e)).c_str());
        o.i32(bypass);
        o.i32(out);
      }
      o.i32(static_cast<int32_t>(x.subs.size()));
      for (const Graph* branch : x.subs) {
        o.i32(branch ? 1 : 0);
        if (branch) encode_body(o, branch, what, depth + 1);
      }
    }
  }
  // Ends that were freed since they were set mean nothing; they are left out.
  auto ends = [&](const std::vector<ccv_nnc_graph_exec_symbol_t>& v) {
    std::vector<int> live;
    for (const auto& s : v)
      if (s.d >= 0 && static_cast<size_t>(s.d) < g->execs.size() &&
          !CCV_NNC_GRAPH_EXEC_IS_DEAD(g->execs[static_cast<size_t>(s.d)].flags))
        live.push_back(s.d);
    o.list(live);
  };
  ends(g->sources);
  ends(g->destinations);
}

std::vector<unsigned char> encode_graph(const Graph* g, const ccv_nnc_tensor_bind_t* binds, int bind_size,
                                        const std::string& what) {
  NNC_CHECK(!g->parent, "%s: this is a sub-graph of a while or case..of; write the graph that owns it", what.c_str());
  Out o;
  encode_body(o, g, what, 0);
  o.i32(bind_size);
  for (int i = 0; i < bind_size; i++) o.i32(binds[i].symbol.d);
  return o.data();
}

// After a public call that reports failure only through the message.
void check_call(const std::string& what, const char* call) {
  if (!error_message().empty()) fail(CCV_NNC_EXEC_INVALID, "%s: %s: %s", what.c_str(), call, error_message().c_str());
}

struct GraphDeleter {
  void operator()(Graph* g) const noexcept { ccv_nnc_symbolic_graph_free(g); }
};
struct TensorDeleter {
  void operator()(ccv_nnc_tensor_t* t) const noexcept { ccv_nnc_tensor_free(t); }
};

ccv_nnc_graph_exec_symbol_t exec_ref(Graph* g, int d, int count, const std::string& what, const char* role) {
  NNC_CHECK(d >= 0 && d < count, "%s: %s refers to exec symbol %d of %d; the graph is corrupt", what.c_str(), role, d,
            count);
  return {d, g};
}

// Rebuild g (empty; a while body already attached to `parent`) from its record.
void decode_body(Graph* g, Graph* parent, In& in, const std::string& what, int depth) {
  NNC_CHECK(depth < kMaxDepth, "%s: loops nested more than %d deep; the graph is corrupt", what.c_str(), kMaxDepth);
  char magic[4];
  in.bytes(magic, 4);
  NNC_CHECK(std::memcmp(magic, kMagic, 4) == 0, "%s: the graph record does not start with NNCG; the graph is corrupt",
            what.c_str());
  const int tensor_count = in.count(kMinTensorRecord, "tensor symbols");
  const int exec_count = in.i32();
  NNC_CHECK(exec_count >= 0, "%s: a negative exec count; the graph is corrupt", what.c_str());
  const int parent_tensors = parent ? ccv_nnc_tensor_symbol_count(parent) : 0;
  std::vector<int> dead_tensors;
  std::vector<std::vector<std::pair<int, int>>> tensor_copies(static_cast<size_t>(tensor_count));
  for (int d = 0; d < tensor_count; d++) {
    const uint32_t flags = in.u32();
    const int alias_of = in.i32();
    ccv_nnc_tensor_param_t info{};
    info.type = in.i32();
    info.format = in.i32();
    info.datatype = in.i32();
    info.reserved = in.i32();
    in.ints(info.dim, kMaxDim);
    int ofs[kMaxDim], stride[kMaxDim];
    in.ints(ofs, kMaxDim);
    in.ints(stride, kMaxDim);
    const std::string name = in.string();
    const int copies = in.count(8, "tensor copies");
    for (int c = 0; c < copies; c++) {
      const int device = in.i32();
      const int symbol = in.i32();
      tensor_copies[static_cast<size_t>(d)].emplace_back(device, symbol);
    }
    const int outer = in.i32();
    const std::string label = format("tensor symbol %d (\"%s\")", d, name.c_str());
    ccv_nnc_tensor_symbol_t s;
    if (CCV_NNC_TENSOR_SYMBOL_IS_DEAD(flags)) {
      s = ccv_nnc_tensor_symbol_new(g, ccv_nnc_tensor_auto, name.c_str());
      dead_tensors.push_back(d);
    } else if (alias_of >= 0) {
      NNC_CHECK(alias_of < d, "%s: %s is an alias of symbol %d, which does not come before it; the graph is corrupt",
                what.c_str(), label.c_str(), alias_of);
      s = ccv_nnc_tensor_symbol_alias_new(g, {alias_of, g}, ofs, stride, info, name.c_str());
    } else {
      NNC_CHECK(alias_of == -1, "%s: %s has alias_of %d; the graph is corrupt", what.c_str(), label.c_str(), alias_of);
      s = ccv_nnc_tensor_symbol_new(g, info, name.c_str());
    }
    if (s.d != d)
      fail(CCV_NNC_EXEC_INVALID, "%s: rebuilding %s: %s", what.c_str(), label.c_str(), ccv_nnc_error_message());
    if (outer != -1 && !CCV_NNC_TENSOR_SYMBOL_IS_DEAD(flags)) {
      // A stand-in for a symbol of the loop's owner.
      NNC_CHECK(parent && outer >= 0 && outer < parent_tensors,
                "%s: %s stands for symbol %d of an enclosing graph that has %d; the graph is corrupt", what.c_str(),
                label.c_str(), outer, parent_tensors);
      ccv_nnc_tensor_symbol_hookup(parent, g, {outer, parent}, s);
      check_call(what + ": hooking up " + label, "ccv_nnc_tensor_symbol_hookup");
    }
    const int live_flags = static_cast<int>(flags & ~static_cast<uint32_t>(CCV_NNC_TENSOR_SYMBOL_DEAD));
    if (!CCV_NNC_TENSOR_SYMBOL_IS_DEAD(flags) && live_flags && ccv_nnc_tensor_symbol_set_flags(g, s, live_flags) != 0)
      fail(CCV_NNC_EXEC_INVALID, "%s: the flags of %s: %s", what.c_str(), label.c_str(), ccv_nnc_error_message());
  }
  for (int d = 0; d < tensor_count; d++)
    for (const auto& [device, symbol] : tensor_copies[static_cast<size_t>(d)]) {
      NNC_CHECK(symbol >= 0 && symbol < tensor_count,
                "%s: a copy of tensor symbol %d refers to symbol %d of %d; the graph is corrupt", what.c_str(), d,
                symbol, tensor_count);
      ccv_nnc_tensor_symbol_set_copy(g, {d, g}, device, {symbol, g});
      check_call(what, "ccv_nnc_tensor_symbol_set_copy");
    }

  NNC_CHECK(static_cast<size_t>(exec_count) <= in.left() / kMinExecRecord,
            "%s: %d exec symbols claimed where %zu bytes remain; the graph is corrupt", what.c_str(), exec_count,
            in.left());
  std::vector<int> dead_execs;
  std::vector<std::vector<int>> outgoing(static_cast<size_t>(exec_count));
  std::vector<std::vector<std::pair<int, int>>> exec_copies(static_cast<size_t>(exec_count));
  for (int e = 0; e < exec_count; e++) {
    const uint32_t flags = in.u32();
    const std::string name = in.string();
    const uint32_t cmd_id = in.u32();
    const uint32_t backend = in.u32();
    const int algorithm = in.i32();
    const int info_size = in.i32();
    NNC_CHECK(info_size == static_cast<int>(sizeof(ccv_nnc_cmd_param_t)),
              "%s: command parameters of %d bytes; this build's are %zu (a file from another version or a corrupt one)",
              what.c_str(), info_size, sizeof(ccv_nnc_cmd_param_t));
    ccv_nnc_cmd_param_t info;
    in.bytes(&info, sizeof(info));
    ccv_nnc_hint_t hint;
    in.ints(hint.stride.dim, kMaxDim);
    in.ints(hint.border.begin, kMaxDim);
    in.ints(hint.border.end, kMaxDim);
    const std::vector<int> inputs = in.list("inputs");
    const std::vector<int> outputs = in.list("outputs");
    outgoing[static_cast<size_t>(e)] = in.list("edges");
    const int copies = in.count(8, "exec copies");
    for (int c = 0; c < copies; c++) {
      const int device = in.i32();
      const int symbol = in.i32();
      exec_copies[static_cast<size_t>(e)].emplace_back(device, symbol);
    }
    const int kind = in.i32();
    const std::string label = format("exec symbol %d (\"%s\")", e, name.c_str());
    NNC_CHECK(!CCV_NNC_GRAPH_EXEC_IS_DEAD(flags) || kind == 0,
              "%s: %s is freed but has a sub-graph; the graph is corrupt", what.c_str(), label.c_str());
    NNC_CHECK(kind == 0 || (kind == 1 && (flags & CCV_NNC_GRAPH_EXEC_P_WHILE)) ||
                  (kind == 2 && (flags & CCV_NNC_GRAPH_EXEC_CASE_OF)),
              "%s: %s has sub-graph kind %d with flags 0x%x; the graph is corrupt", what.c_str(), label.c_str(), kind,
              flags);
    ccv_nnc_graph_exec_symbol_t x;
    if (kind == 1) {
      // A while loop: attached first, so that its body's stand-ins can hook up.
      std::unique_ptr<Graph, GraphDeleter> body(ccv_nnc_symbolic_graph_new());
      if (!body) throw std::bad_alloc();
      x = ccv_nnc_symbolic_graph_while(g, cmd_id, body.get(), name.c_str());
      if (x.d != e)
        fail(CCV_NNC_EXEC_INVALID, "%s: rebuilding %s: %s", what.c_str(), label.c_str(), ccv_nnc_error_message());
      Graph* b = body.release();  // owned by g now
      decode_body(b, g, in, what, depth + 1);
      const int carries = in.count(8, "carried pairs");
      std::vector<ccv_nnc_tensor_symbol_map_t> map;
      const int body_tensors = ccv_nnc_tensor_symbol_count(b);
      for (int c = 0; c < carries; c++) {
        const int from = in.i32(), to = in.i32();
        NNC_CHECK(from >= 0 && from < body_tensors && to >= 0 && to < body_tensors,
                  "%s: %s carries symbol %d into %d of %d; the graph is corrupt", what.c_str(), label.c_str(), from, to,
                  body_tensors);
        map.push_back({{from, b}, {to, b}});
      }
      ccv_nnc_symbolic_graph_set_carry_overs(b, map.data(), carries);
      check_call(what + ": the carried pairs of " + label, "ccv_nnc_symbolic_graph_set_carry_overs");
    } else if (kind == 2) {
      // A case..of: made with its inputs and bypasses, then each branch attached and rebuilt.
      auto symbols = [&](const std::vector<int>& v, const char* role) {
        std::vector<ccv_nnc_tensor_symbol_t> out;
        for (int d : v) {
          NNC_CHECK(d >= 0 && d < tensor_count, "%s: %s has %s tensor symbol %d of %d; the graph is corrupt",
                    what.c_str(), label.c_str(), role, d, tensor_count);
          out.push_back({d, g});
        }
        return out;
      };
      const std::vector<ccv_nnc_tensor_symbol_t> expr_in = symbols(in.list("case..of inputs"), "as an input");
      const int pairs = in.count(8, "case..of outputs");
      std::vector<int> flat(static_cast<size_t>(pairs) * 2);
      in.ints(flat.data(), pairs * 2);
      const std::vector<ccv_nnc_tensor_symbol_t> ends = symbols(flat, "as an output or bypass");
      std::vector<ccv_nnc_tensor_symbol_map_t> map;
      for (int c = 0; c < pairs; c++)
        map.push_back({ends[static_cast<size_t>(2 * c)], ends[static_cast<size_t>(2 * c + 1)]});
      x = ccv_nnc_symbolic_graph_case_of_new(g, cmd_id, expr_in.data(), static_cast<int>(expr_in.size()), map.data(),
                                             pairs, name.c_str());
      if (x.d != e)
        fail(CCV_NNC_EXEC_INVALID, "%s: rebuilding %s: %s", what.c_str(), label.c_str(), ccv_nnc_error_message());
      const int branches = in.count(4, "branches");
      for (int i = 0; i < branches; i++) {
        if (!in.i32()) continue;
        std::unique_ptr<Graph, GraphDeleter> branch(ccv_nnc_symbolic_graph_new());
        if (!branch) throw std::bad_alloc();
        ccv_nnc_symbolic_graph_set_case_of(g, x, branch.get(), i, nullptr, 0);
        check_call(what + ": attaching a branch of " + label, "ccv_nnc_symbolic_graph_set_case_of");
        Graph* b = branch.release();  // owned by g now
        decode_body(b, g, in, what, depth + 1);
      }
    } else if (CCV_NNC_GRAPH_EXEC_IS_DEAD(flags)) {
      x = ccv_nnc_graph_exec_symbol_new(g, ccv_nnc_cmd(CCV_NNC_NOOP, nullptr, ccv_nnc_cmd_auto, 0), nullptr, 0, nullptr,
                                        0, name.c_str());
      dead_execs.push_back(e);
    } else {
      NNC_CHECK(!(flags & (CCV_NNC_GRAPH_EXEC_P_WHILE | CCV_NNC_GRAPH_EXEC_CASE_OF)),
                "%s: %s is marked as a while or case..of, which this format does not hold; the graph is corrupt",
                what.c_str(), label.c_str());
      ccv_nnc_cmd_t cmd = ccv_nnc_cmd(cmd_id, nullptr, info, 0);
      check_call(what + ": the command of " + label, "ccv_nnc_cmd");
      NNC_CHECK(cmd_id != CCV_NNC_CUSTOM_FORWARD && cmd_id != CCV_NNC_CUSTOM_BACKWARD,
                "%s: %s is a custom command, which a file cannot hold; the graph is corrupt", what.c_str(),
                label.c_str());
      // The backend is kept where this build has it; elsewhere the default one runs.
      if (backend && ccv_nnc_cmd_ok(cmd_id, backend)) cmd.backend = backend;
      cmd.algorithm = algorithm;
      std::vector<ccv_nnc_tensor_symbol_t> ins, outs;
      for (int v : inputs) {
        // The loop counter is a slot of a while body only (exec_new checks it is one).
        NNC_CHECK(v == CCV_NNC_NO_TENSOR_SYMBOL || (v == CCV_NNC_WHILE_COUNT_TENSOR_SYMBOL && parent) ||
                      (v >= 0 && v < tensor_count),
                  "%s: %s reads tensor symbol %d of %d; the graph is corrupt", what.c_str(), label.c_str(), v,
                  tensor_count);
        ins.push_back({v, v == CCV_NNC_NO_TENSOR_SYMBOL ? nullptr : g});
      }
      for (int v : outputs) {
        NNC_CHECK(v == CCV_NNC_NO_TENSOR_SYMBOL || (v >= 0 && v < tensor_count),
                  "%s: %s writes tensor symbol %d of %d; the graph is corrupt", what.c_str(), label.c_str(), v,
                  tensor_count);
        outs.push_back({v, v >= 0 ? g : nullptr});
      }
      x = ccv_nnc_graph_exec_symbol_new(g, cmd, ins.data(), static_cast<int>(ins.size()), outs.data(),
                                        static_cast<int>(outs.size()), name.c_str());
    }
    if (x.d != e)
      fail(CCV_NNC_EXEC_INVALID, "%s: rebuilding %s: %s", what.c_str(), label.c_str(), ccv_nnc_error_message());
    if (!CCV_NNC_GRAPH_EXEC_IS_DEAD(flags)) {
      ccv_nnc_graph_exec_symbol_set_hint(g, x, hint);
      check_call(what, "ccv_nnc_graph_exec_symbol_set_hint");
      ccv_nnc_graph_exec_symbol_set_flags(g, x, static_cast<int>(flags));
      check_call(what, "ccv_nnc_graph_exec_symbol_set_flags");
    }
  }
  for (int e = 0; e < exec_count; e++) {
    for (int to : outgoing[static_cast<size_t>(e)])
      if (ccv_nnc_graph_exec_symbol_concat(g, {e, g}, exec_ref(g, to, exec_count, what, "an edge")) != 0)
        fail(CCV_NNC_EXEC_INVALID, "%s: the edge from exec symbol %d to %d: %s", what.c_str(), e, to,
             ccv_nnc_error_message());
    for (const auto& [device, symbol] : exec_copies[static_cast<size_t>(e)]) {
      ccv_nnc_graph_exec_symbol_set_copy(g, {e, g}, device, exec_ref(g, symbol, exec_count, what, "an exec copy"));
      check_call(what, "ccv_nnc_graph_exec_symbol_set_copy");
    }
  }
  for (int d : dead_tensors) ccv_nnc_tensor_symbol_free(g, {d, g});
  for (int e : dead_execs) ccv_nnc_graph_exec_symbol_free(g, {e, g});
  check_call(what, "freeing the placeholders of freed symbols");
  for (int which = 0; which < 2; which++) {
    const int n = in.count(4, which ? "destinations" : "sources");
    std::vector<ccv_nnc_graph_exec_symbol_t> ends;
    for (int i = 0; i < n; i++)
      ends.push_back(exec_ref(g, in.i32(), exec_count, what, which ? "a destination" : "a source"));
    if (n == 0) continue;
    if (which)
      ccv_nnc_symbolic_graph_set_destinations(g, ends.data(), n);
    else
      ccv_nnc_symbolic_graph_set_sources(g, ends.data(), n);
    check_call(what, which ? "ccv_nnc_symbolic_graph_set_destinations" : "ccv_nnc_symbolic_graph_set_sources");
  }
}

// Rebuild a graph from its blob; returns the graph and the bound symbols.
std::unique_ptr<Graph, GraphDeleter> decode_graph(const unsigned char* data, size_t size, std::vector<int>* bound,
                                                  const std::string& what) {
  In in(data, size, what);
  std::unique_ptr<Graph, GraphDeleter> graph(ccv_nnc_symbolic_graph_new());
  if (!graph) throw std::bad_alloc();
  decode_body(graph.get(), nullptr, in, what, 0);
  const int tensor_count = ccv_nnc_tensor_symbol_count(graph.get());
  const int bind_count = in.count(4, "binds");
  for (int i = 0; i < bind_count; i++) {
    const int d = in.i32();
    NNC_CHECK(d >= 0 && d < tensor_count, "%s: bind %d is for tensor symbol %d of %d; the graph is corrupt",
              what.c_str(), i, d, tensor_count);
    bound->push_back(d);
  }
  NNC_CHECK(in.left() == 0, "%s: %zu bytes follow the graph record; the graph is corrupt", what.c_str(), in.left());
  return graph;
}

}  // namespace

void write_graph(const ccv_nnc_symbolic_graph_t* graph, const ccv_nnc_tensor_bind_t* binds, int bind_size,
                 const char* fn) {
  NNC_CHECK(fn, "ccv_nnc_symbolic_graph_write: the file name is NULL");
  const std::string what = format("ccv_nnc_symbolic_graph_write '%s'", fn);
  NNC_CHECK(graph, "%s: the graph is NULL", what.c_str());
  NNC_CHECK(bind_size >= 0 && (binds || bind_size == 0), "%s: bad binds array (size %d)", what.c_str(), bind_size);
  for (int i = 0; i < bind_size; i++) {
    NNC_CHECK(binds[i].symbol.graph == graph && binds[i].symbol.d >= 0 &&
                  static_cast<size_t>(binds[i].symbol.d) < graph->tensors.size(),
              "%s: bind %d is not a tensor symbol of this graph", what.c_str(), i);
    NNC_CHECK(binds[i].tensor, "%s: bind %d has no tensor", what.c_str(), i);
  }
  const std::vector<unsigned char> blob = encode_graph(graph, binds, bind_size, what);
  Database db = open_checkpoint(fn);
  Transaction tx(db.get(), "nnc_graph_write");
  exec_sql(db.get(), kCreateGraphs, what);
  {
    // Binds of an earlier graph in the same file go with it.
    const bool had_tensors = [&] {
      Statement s(db.get(), "SELECT 1 FROM main.sqlite_master WHERE type = 'table' AND name = 'tensors'", what);
      return s.step();
    }();
    if (had_tensors) exec_sql(db.get(), "DELETE FROM main.tensors WHERE name GLOB 'graph.bind.*'", what);
  }
  for (int i = 0; i < bind_size; i++)
    write_tensor(db.get(), bind_name(static_cast<size_t>(i)).c_str(), binds[i].tensor, nullptr);
  Statement insert(db.get(),
                   "INSERT OR REPLACE INTO main.graphs (name, schema, checksum, data) VALUES (?1, ?2, ?3, ?4)", what);
  sqlite_check(db.get(), sqlite3_bind_text(insert.get(), 1, kGraphName, -1, SQLITE_STATIC), what);
  sqlite_check(db.get(), sqlite3_bind_int(insert.get(), 2, kSchema), what);
  sqlite_check(db.get(),
               sqlite3_bind_int64(insert.get(), 3, static_cast<sqlite3_int64>(XXH3_64bits(blob.data(), blob.size()))),
               what);
  sqlite_check(db.get(), sqlite3_bind_blob64(insert.get(), 4, blob.data(), blob.size(), SQLITE_STATIC), what);
  insert.step();
  tx.commit();
}

void read_graph(const char* fn, ccv_nnc_symbolic_graph_t** graph_ref, ccv_nnc_tensor_bind_t** binds_ref,
                int* bind_size_ref) {
  NNC_CHECK(fn, "ccv_nnc_symbolic_graph_read: the file name is NULL");
  const std::string what = format("ccv_nnc_symbolic_graph_read '%s'", fn);
  NNC_CHECK(graph_ref, "%s: graph_ref is NULL", what.c_str());
  NNC_CHECK(!binds_ref == !bind_size_ref, "%s: give both tensor_binds_ref and tensor_bind_size_ref, or neither",
            what.c_str());
  Database db = open_read_only(fn);
  Transaction tx(db.get(), "nnc_graph_read");
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db.get(), "SELECT schema, checksum, data, typeof(data) FROM main.graphs WHERE name = ?1", -1,
                         &raw, nullptr) != SQLITE_OK) {
    const std::string message = sqlite3_errmsg(db.get());
    sqlite3_finalize(raw);
    if (message.rfind("no such table", 0) == 0)
      fail(CCV_NNC_EXEC_INVALID, "%s: the file holds no NNC graph (an empty or foreign SQLite file)", what.c_str());
    if (message.rfind("no such column", 0) == 0)
      fail(CCV_NNC_EXEC_INVALID, "%s: the file's 'graphs' table is not NNC's (%s)", what.c_str(), message.c_str());
    sqlite_fail(db.get(), what);
  }
  std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> stmt(raw, sqlite3_finalize);
  sqlite_check(db.get(), sqlite3_bind_text(raw, 1, kGraphName, -1, SQLITE_STATIC), what);
  const int rc = sqlite3_step(raw);
  if (rc == SQLITE_DONE) fail(CCV_NNC_EXEC_INVALID, "%s: the file holds no NNC graph", what.c_str());
  if (rc != SQLITE_ROW) sqlite_fail(db.get(), what);
  NNC_CHECK(sqlite3_column_type(raw, 0) == SQLITE_INTEGER && sqlite3_column_type(raw, 1) == SQLITE_INTEGER,
            "%s: the graph's schema or checksum is not an integer; the file is corrupt", what.c_str());
  const sqlite3_int64 schema = sqlite3_column_int64(raw, 0);
  NNC_CHECK(schema == kSchema, "%s: the graph has schema %lld; this version of NNC reads schema %d", what.c_str(),
            static_cast<long long>(schema), kSchema);
  const unsigned char* type = sqlite3_column_text(raw, 3);
  NNC_CHECK(type && std::strcmp(reinterpret_cast<const char*>(type), "blob") == 0,
            "%s: the graph record is not a blob; the file is corrupt", what.c_str());
  const auto* data = static_cast<const unsigned char*>(sqlite3_column_blob(raw, 2));
  const size_t size = static_cast<size_t>(sqlite3_column_bytes(raw, 2));
  NNC_CHECK(XXH3_64bits(data, size) == static_cast<uint64_t>(sqlite3_column_int64(raw, 1)),
            "%s: checksum mismatch: the graph record is corrupt", what.c_str());
  std::vector<int> bound;
  auto graph = decode_graph(data, size, &bound, what);
  stmt.reset();
  // The bound tensors, read before anything is handed out.
  std::vector<std::unique_ptr<ccv_nnc_tensor_t, TensorDeleter>> tensors;
  if (binds_ref)
    for (size_t i = 0; i < bound.size(); i++) {
      tensors.emplace_back(read_tensor(db.get(), bind_name(i).c_str(), nullptr, 0, nullptr));
      const ccv_nnc_tensor_param_t p = ccv_nnc_tensor_symbol_params(graph.get(), {bound[i], graph.get()});
      NNC_CHECK(same_shape(p.dim, tensors.back()->info.dim) &&
                    CCV_GET_DATA_TYPE(p.datatype) == CCV_GET_DATA_TYPE(tensors.back()->info.datatype),
                "%s: bound tensor %zu (%s of %s) does not fit tensor symbol %d (%s of %s)", what.c_str(), i,
                shape_string(tensors.back()->info.dim).c_str(), datatype_name(tensors.back()->info.datatype), bound[i],
                shape_string(p.dim).c_str(), datatype_name(p.datatype));
    }
  tx.commit();
  if (binds_ref) {
    ccv_nnc_tensor_bind_t* binds = nullptr;
    if (!tensors.empty()) {
      binds = static_cast<ccv_nnc_tensor_bind_t*>(ccmalloc(sizeof(ccv_nnc_tensor_bind_t) * tensors.size()));
      if (!binds) throw std::bad_alloc();
      for (size_t i = 0; i < tensors.size(); i++) binds[i] = {{bound[i], graph.get()}, tensors[i].release()};
    }
    *binds_ref = binds;
    *bind_size_ref = static_cast<int>(tensors.size());
  }
  *graph_ref = graph.release();
}

}  // namespace nnc::io
