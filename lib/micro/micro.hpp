// The micro-op graph (ios), combines, and the CPU interpreter behind
// ccv_nnc_micro_*.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "micro/expr.hpp"
#include "nnc/ccv_nnc.h"

// The vtab is only an identity: which kind of step an io is.
struct ccv_nnc_micro_io_vtab_s {
  int kind;
  const char* name;
};

namespace nnc::micro {

enum Kind { kInput, kReindex, kUnary, kBinary, kReduce, kSelect, kGrad };

const ccv_nnc_micro_io_vtab_t* vtab_of(Kind kind);

// One io. The public struct comes first so that the C handle and this object
// are the same pointer. `refs` counts holders: ios built on this one, and
// combines. An io nobody holds is the caller's.
struct Io : ccv_nnc_micro_io_s {
  Kind kind = kInput;
  uint32_t op = 0;
  std::vector<int> axes;                 // reduce
  int axis = 0;                          // select
  std::vector<Expr> shape;               // reindex: output sizes
  std::vector<Expr> reindex;             // reindex: where to read x
  std::vector<Io*> ss;                   // reindex: shape tensors
  std::vector<ccv_nnc_micro_io_t> held;  // what `inputs` points at
  int refs = 0;

  Io* in(int k) const { return static_cast<Io*>(held[k]); }
};

inline Io* io_of(ccv_nnc_micro_io_t h) { return static_cast<Io*>(h); }

// Builders (throw nnc::Error on bad arguments; take a reference on what they hold).
Io* make_input(int dimensions);
Io* make_reindex(const char* const* shape, int shape_count, const ccv_nnc_micro_io_t* ss, int s_count,
                 const char* const* reindex, int reindex_count, ccv_nnc_micro_io_t x);
Io* make_unary(uint32_t op, ccv_nnc_micro_io_t x);
Io* make_binary(uint32_t op, ccv_nnc_micro_io_t left, ccv_nnc_micro_io_t right);
Io* make_reduce(uint8_t op, const int* axis, int axis_count, ccv_nnc_micro_io_t x);
Io* make_select(int axis, ccv_nnc_micro_io_t x, ccv_nnc_micro_io_t index);
Io* make_grad(ccv_nnc_micro_io_t x);

// Drop one reference (deleting ios that nothing holds any more).
void unref(Io* io);
// Free an io nobody holds; throws if something does.
void free_io(Io* io);

}  // namespace nnc::micro

// A combine: the ios it holds and the order to evaluate them in.
struct ccv_nnc_micro_combine_s {
  std::vector<nnc::micro::Io*> inputs, outputs, ingrads, outgrads;
  std::vector<std::string> parameters;  // names without '$'
  std::vector<nnc::micro::Io*> order;   // every forward io reachable, operands first
  ~ccv_nnc_micro_combine_s();
};

namespace nnc::micro {

std::unique_ptr<ccv_nnc_micro_combine_s> make_combine(const ccv_nnc_micro_io_t* inputs, int input_size,
                                                      const char* const* parameters, int parameter_size,
                                                      const ccv_nnc_micro_io_t* outputs, int output_size,
                                                      const ccv_nnc_micro_io_t* ingrads, int ingrad_size,
                                                      const ccv_nnc_micro_io_t* outgrads, int outgrad_size);

void interpret(ccv_nnc_micro_combine_s& c, uint32_t cmd, ccv_nnc_tensor_t* const* inputs, int input_size,
               const ccv_nnc_micro_scalar_t* values, int parameter_size, ccv_nnc_tensor_t* const* outputs,
               int output_size);

// C source for the forward pass (see codegen.cpp for the function it defines).
std::string generate_c(const ccv_nnc_micro_combine_s& c);

}  // namespace nnc::micro
