// Level 5: models (libnnc's ccv_cnnp_model_*).
//
// A model is a node of a tree: a leaf layer (convolution, dense, ...) or a
// composite (sequential, functional) that owns the models inside it. A model
// is turned into computation by build(): given tensor symbols for its inputs
// in a symbolic graph, it adds exec symbols and returns the symbols of its
// outputs. Compiling a model builds it once to learn its parameters (their
// shapes, names and initialisers); every mode it then runs in (inference,
// training) is built again into its own symbolic graph, planned and compiled
// once, and cached by the shapes it was built for.
//
// Parameters belong to the top model being compiled: tensors that outlive
// every compiled graph, bound into each. A parameter is identified by the
// leaf model that declares it and a slot number, so a model applied twice in
// a functional model declares the same parameters twice and gets one tensor.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "nnc/ccv_nnc.h"
#include "core/live.hpp"

namespace nnc::cnnp {

using Sym = ccv_nnc_tensor_symbol_t;

// A tensor the model owns (or shares with another model: share_parameters).
using TensorRef = std::shared_ptr<ccv_nnc_tensor_t>;
TensorRef new_tensor(const ccv_nnc_tensor_param_t& info);

// How a parameter gets its first value.
struct Init {
  enum Kind { ZEROS, CONSTANT, UNIFORM, NORMAL, COPY, CALLBACK } kind = ZEROS;
  float a = 0, b = 0;                        // CONSTANT: a; UNIFORM: [a, b); NORMAL: mean a, std b
  const ccv_nnc_tensor_t* from = nullptr;    // COPY: the caller's tensor (must outlive compile)
  ccv_cnnp_cmd_exec_io_init_state_t state{}; // CALLBACK: ccv_cnnp_cmd_exec's init state
  static Init zeros() { return {}; }
  static Init constant(float v) { Init i; i.kind = CONSTANT; i.a = v; return i; }
  static Init uniform(float lo, float hi) { Init i; i.kind = UNIFORM; i.a = lo; i.b = hi; return i; }
  static Init normal(float mean, float std) { Init i; i.kind = NORMAL; i.a = mean; i.b = std; return i; }
};

// A parameter slot declared by a leaf model while it builds.
struct ParamDecl {
  ccv_nnc_tensor_param_t info{};
  Init init;
  const char* label = "weight";   // the last part of the parameter's name
  int selector = CCV_CNNP_PARAMETER_SELECT_WEIGHT;
  bool trainable = true;          // false: a persisted state (batch norm's running statistics)
};

using Model = ::ccv_cnnp_model_s;
using Io = ::ccv_cnnp_model_io_s;

// One build of a model tree into a symbolic graph.
class Build {
 public:
  Build(ccv_nnc_symbolic_graph_t* graph, bool is_test) : graph(graph), is_test(is_test) {}
  ccv_nnc_symbolic_graph_t* const graph;
  const bool is_test;
  // The symbol of `owner`'s parameter `slot` in this graph (the same symbol
  // when the slot is asked for again).
  Sym parameter(const Model* owner, int slot, const ParamDecl& decl);
  // A new symbol that an exec writes with the next value of `owner`'s
  // parameter `slot` (declared before): compiled graphs bind it to the same
  // tensor, so the write updates the parameter in place (batch norm's
  // running statistics). At most one per parameter and build.
  Sym parameter_update(const Model* owner, int slot);
  // A symbol of the graph, with the shape given or inferred by the exec that writes it.
  Sym tensor(const ccv_nnc_tensor_param_t& info, const char* name = nullptr);
  Sym tensor_auto() { return tensor(ccv_nnc_tensor_auto); }
  // An exec; throws with the graph's message when it is refused.
  ccv_nnc_graph_exec_symbol_t exec(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, const std::vector<Sym>& inputs,
                                   const std::vector<Sym>& outputs, const char* name = nullptr);
  // An exec whose outputs are new symbols shaped by the command's shape
  // inference with this hint (NO_TENSOR inputs allowed); returns them.
  std::vector<Sym> apply(const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, const std::vector<Sym>& inputs, int output_count,
                         const char* name = nullptr);
  // Where a symbol's elements live: its base symbol and, per axis of the
  // symbol, an offset and a stride in the base's elements.
  struct Place {
    Sym base;
    int ofs[CCV_NNC_MAX_DIM_ALLOC] = {0};
    int stride[CCV_NNC_MAX_DIM_ALLOC] = {0};
  };
  Place place(Sym s) const;
  // Whether the elements of `s` (a symbol or a view) are packed row-major.
  bool is_packed(Sym s) const;
  // A view of `s` with another shape over the same elements. A packed view is
  // re-viewed on its base (a graph takes no alias of an alias); a strided one
  // is copied first.
  Sym reshape(Sym s, const ccv_nnc_tensor_param_t& info);
  // Run `m` (trainability inherited as the tree says).
  void run(Model* m, const std::vector<Sym>& in, std::vector<Sym>& out);
  ccv_nnc_tensor_param_t params(Sym s) const;

  struct Found {  // a parameter as the build met it
    const Model* owner;
    int slot;
    ParamDecl decl;
    bool trainable;  // after is_trainable of the models around it
    Sym symbol;
    std::string name;
  };
  std::vector<Found> found;  // in the order first declared
  std::vector<std::pair<size_t, Sym>> updates;  // (index into found, symbol) from parameter_update
  // Exec symbol ranges [begin, end) built by models with gradient
  // checkpointing (outermost ones only).
  std::vector<std::pair<int, int>> checkpoints;
 private:
  std::map<std::pair<const Model*, int>, size_t> index_;
  std::vector<int> trainable_;  // stack of is_trainable (1, 0, -1) of the models being built
  std::map<std::string, int> kind_count_;
  int checkpoint_depth_ = 0;
  std::map<const Model*, std::string> label_;
 public:
  std::string label_of(const Model* m);
};

struct Param {
  const Model* owner = nullptr;
  int slot = 0;
  std::string name;
  ParamDecl decl;
  bool trainable = true;
  TensorRef tensor;
  bool initialized = false;
  std::vector<TensorRef> aux;  // the minimiser's saved state (zeros at first)
  ccv_nnc_cmd_t minimizer{};   // this parameter's minimiser (the model's unless set)
  TensorRef gradient;          // summed by ccv_cnnp_model_backward, zeroed by apply_gradients
  bool has_gradient = false;
  // ccv_cnnp_model_set_data_parallel: the parameter and its minimiser state on
  // each other device (device id -> tensors). Equal updates keep them equal
  // (Compiled::copies_stale says when they are not); a parameter that is not
  // trainable (batch norm's running statistics, which each device updates
  // from its own rows) is broadcast to them by the graphs every run instead.
  std::vector<std::pair<int, TensorRef>> copies;
  std::vector<std::pair<int, std::vector<TensorRef>>> aux_copies;
};

struct Jit;  // a compiled graph for one mode and one set of shapes (model.cpp)

// What ccv_cnnp_model_compile gives the top model.
struct Compiled {
  std::vector<ccv_nnc_tensor_param_t> inputs;
  ccv_nnc_cmd_t minimizer{}, loss{};
  std::vector<Param> params;
  std::vector<ccv_nnc_tensor_param_t> outputs;
  std::vector<std::unique_ptr<Jit>> jits;  // most recently used first
  Jit* staged = nullptr;                   // the graph evaluate(requires_grad) ran, for backward / apply_gradients
  int staged_state = 0;                    // 0 none, 1 forward ran, 2 backward ran
  // ccv_cnnp_model_set_data_parallel: the trainable parameters' copies on
  // the other devices (Param::copies, aux_copies) stay equal to the model's
  // own by equal updates in fit's graphs; anything else that writes the
  // parameters or their minimiser state sets this, and the next run copies
  // them over first.
  bool copies_stale = true;
  ccv_nnc_symbolic_graph_compile_param_t compile_params{};
  std::vector<ccv_nnc_tensor_param_t> last_outputs;  // output shapes of the last evaluate (for ccv_nnc_dynamic_graph_evaluate)
  size_t workspace_size = 0;
  ~Compiled();
};

}  // namespace nnc::cnnp

// The C handle types are the C++ objects.
struct ccv_cnnp_model_io_s {
  ccv_cnnp_model_s* model = nullptr;         // the model applied; NULL for an input
  std::vector<ccv_cnnp_model_io_s*> inputs;  // what it was applied to
  std::vector<ccv_cnnp_model_io_s*> dependencies;
  uint64_t sequence = 0;                     // creation order: a valid build order
  // ccv_cnnp_model_parameters: a selection of the model's parameters.
  bool is_parameters = false;
  int selector = -1, index = -1;
  std::vector<nnc::cnnp::Sym> symbols;       // during one build
};

struct ccv_cnnp_model_s {
  ccv_cnnp_model_s(const char* kind, const char* name, int output_size = 1) : kind(kind), name(name ? name : ""), output_size(output_size) {}
  virtual ~ccv_cnnp_model_s();
  ccv_cnnp_model_s(const ccv_cnnp_model_s&) = delete;
  ccv_cnnp_model_s& operator=(const ccv_cnnp_model_s&) = delete;

  const char* kind;  // "convolution", "sequential", ...
  std::string name;
  int is_trainable = -1;
  int output_size = 1;
  int input_size = -1;  // -1: any number
  std::vector<std::unique_ptr<ccv_cnnp_model_io_s>> ios;  // applies of this model and parameter selections
  std::vector<std::pair<ccv_cnnp_model_notify_f, void*>> hooks;
  std::unique_ptr<nnc::cnnp::Compiled> compiled;
  int gradient_checkpointing = 0;
  ccv_cnnp_model_io_reader_f reader = nullptr;
  ccv_cnnp_model_io_writer_f writer = nullptr;
  volatile int cancelled = 0;
  ccv_cnnp_model_s* absorbed = nullptr;  // ccv_cnnp_model_absorb's structure, owned
  // ccv_cnnp_model_set_comm: the processes this model trains across (null: this one only).
  ccv_nnc_comm_t* comm = nullptr;
  size_t comm_bucket_bytes = 0;
  // ccv_cnnp_model_set_data_parallel: the GPUs fit and evaluate run on (1: the model's own).
  int parallel = 1;
  // ccv_cnnp_model_set_max_concurrency: GPU streams per device a run may use (0: no limit).
  int max_concurrency = 0;
  // fit / evaluate queued on a GPU stream and not yet waited for: `inflight`
  // is emitted on the stream after each such call (made on first use), and
  // `pending` says whether the host has waited for the last one since.
  ccv_nnc_stream_signal_t* inflight = nullptr;
  bool pending = false;
  // ccv_cnnp_model_default_stream: a GPU stream on the model's device, made
  // when first asked for (models on a GPU only). A fit / evaluate given no
  // stream waits for what was queued there first.
  ccv_nnc_stream_context_t* default_stream = nullptr;

  // Add this model's computation to b.graph.
  virtual void build(nnc::cnnp::Build& b, const std::vector<nnc::cnnp::Sym>& in, std::vector<nnc::cnnp::Sym>& out) = 0;
  // A fresh copy of the structure (no compiled state).
  virtual std::unique_ptr<ccv_cnnp_model_s> clone() const = 0;
  // The models this one owns, in order.
  virtual void children(std::vector<ccv_cnnp_model_s*>& out) const { (void)out; }
  // Called with the copy made by clone() to copy the common fields.
  void copy_common_to(ccv_cnnp_model_s& m) const {
    m.is_trainable = is_trainable;
    m.input_size = input_size;
    m.gradient_checkpointing = gradient_checkpointing;
  }
  nnc::LiveCounter<CCV_NNC_LIVE_MODEL> live_counter_;  // ccv_nnc_live_object_count
};

namespace nnc::cnnp {

// A leaf whose build is a function (most layers).
struct Layer final : Model {
  using Fn = std::function<void(const Layer& self, Build& b, const std::vector<Sym>& in, std::vector<Sym>& out)>;
  Layer(const char* kind, const char* name, int inputs, Fn fn, int outputs = 1) : Model(kind, name, outputs), fn(std::move(fn)) {
    input_size = inputs;
  }
  Fn fn;
  std::function<void()> on_free;            // releases a caller context (debug, cmd_exec init states)
  std::function<std::function<void()>()> on_copy;  // copies it for clone(); returns the copy's on_free
  void build(Build& b, const std::vector<Sym>& in, std::vector<Sym>& out) override { fn(*this, b, in, out); }
  std::unique_ptr<Model> clone() const override;
  ~Layer() override {
    if (on_free) on_free();
  }
};

// Copy src's values into dst (same element count; converted when the data
// types differ). Throws with `what` in the message.
void copy_values(ccv_nnc_tensor_t* src, ccv_nnc_tensor_t* dst, const char* what);
// Throws nnc::Error (INVALID) naming the model when a layer gets the wrong number of inputs.
void expect_inputs(const Model& m, const std::vector<Sym>& in, int count);
std::string model_label(const Model& m);

// Steps in flight. fit / evaluate given a GPU stream queue their work and
// return without waiting for anything: a later one (on any GPU stream) is
// ordered after the earlier ones on the device. Everything else that reads
// or writes the model's state from the host (parameters, recompiles, the
// synchronous calls, free) first waits for the queued work: settle().
void settle(Model* m);
// The model's default stream (see Model::default_stream): NULL for a model
// that is not compiled or not on a GPU.
ccv_nnc_stream_context_t* default_stream(Model* m);
// After host code wrote parameters or minimiser state: the copies on the
// other devices (data parallelism) are refreshed before the next run.
void params_written(Model* m);
// compiled_of without the wait, for calls that queue on a GPU stream.
Compiled& compiled_queued(Model* m, const char* what);

// Compile-time and run-time entry points used by api.cpp.
void compile(Model* m, const ccv_nnc_tensor_param_t* inputs, int input_size, const ccv_nnc_cmd_t& minimizer, const ccv_nnc_cmd_t& loss);
// fit and evaluate queue their work on `stream` when it is a GPU stream
// context (and return once it is queued); otherwise they run synchronously.
void fit(Model* m, ccv_nnc_tensor_t* const* inputs, int input_size, ccv_nnc_tensor_t* const* fits, int fit_size,
         ccv_nnc_tensor_t* const* outputs, int output_size, ccv_nnc_stream_context_t* stream = nullptr);
void evaluate(Model* m, const ccv_cnnp_evaluate_param_t& params, ccv_nnc_tensor_t* const* inputs, int input_size,
              ccv_nnc_tensor_t* const* outputs, int output_size, bool dry_run, ccv_nnc_stream_context_t* stream = nullptr);
void backward(Model* m, ccv_nnc_tensor_t* const* ingrads, int ingrad_size, ccv_nnc_tensor_t* const* outgrads, int outgrad_size);
void apply_gradients(Model* m);
// Data parallelism across processes (model_parallel.cpp).
void set_comm(Model* m, ccv_nnc_comm_t* comm, size_t bucket_bytes);
// After compile with a communicator: check every process built the same
// parameters, then give all rank 0's values.
void sync_parameters(Model* m, const char* what);
// Before apply_gradients' minimisers: the accumulated gradients averaged.
void average_gradients(Model* m, const char* what);
// Whether fit's graphs average gradients (a communicator of more than one process).
bool averages(const Model* m);
// Seconds of the fit graphs' allreduces, and of waiting for them (model.cpp).
void comm_time(Model* m, double* allreduce_seconds, double* waited_seconds);
void set_data_parallel(Model* m, int parallel);
// ccv_cnnp_model_absorb: m builds as `init` from now on, with m's parameter
// tensors (matched in order, shapes equal) and their minimiser state.
void absorb(Model* m, Model* init, const ccv_nnc_tensor_param_t* inputs, int input_size);
Compiled& compiled_of(Model* m, const char* what);
// The parameters a selection io names (every parameter for ALL_PARAMETERS).
std::vector<Param*> select(Model* m, const Io* io, const char* what);
void set_minimizer(Model* m, const ccv_nnc_cmd_t& minimizer, int reset, const ccv_cnnp_model_io_t* parameters, int parameter_size);
void dot(const Model* m, int flags, FILE** outs, int out_size);
uint64_t memory_size(const Model* m);
// ccv_nnc_symbolic_graph_format over the most recently used compiled graph.
void format_jit(const Model* m, ccv_nnc_symbolic_graph_format_f f, void* context);
// Stop the compiled graphs' runs in progress.
void cancel_jits(Model* m);
// Forget the compiled graphs (parameters stay).
void drop_jits(Model* m);

}  // namespace nnc::cnnp
