// The exported ccv_nnc_micro_* functions: argument checks and the guard that
// turns exceptions into NULL / a message.
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/error.hpp"
#include "core/export.hpp"
#include "micro/micro.hpp"

using namespace nnc;

extern "C" {

NNC_API ccv_nnc_micro_io_t ccv_nnc_micro_input(const int dimensions) {
  return guard<ccv_nnc_micro_io_t>(nullptr, [&] { return micro::make_input(dimensions); });
}

NNC_API ccv_nnc_micro_io_t ccv_nnc_micro_reindex(const char* const* const shape, const int shape_count,
                                                 const ccv_nnc_micro_io_t* const ss, const int s_count,
                                                 const char* const* const reindex, const int reindex_count,
                                                 const ccv_nnc_micro_io_t x) {
  return guard<ccv_nnc_micro_io_t>(
      nullptr, [&] { return micro::make_reindex(shape, shape_count, ss, s_count, reindex, reindex_count, x); });
}

NNC_API ccv_nnc_micro_io_t ccv_nnc_micro_unary(const uint32_t op, const ccv_nnc_micro_io_t x) {
  return guard<ccv_nnc_micro_io_t>(nullptr, [&] { return micro::make_unary(op, x); });
}

NNC_API ccv_nnc_micro_io_t ccv_nnc_micro_binary(const uint32_t op, const ccv_nnc_micro_io_t left,
                                                const ccv_nnc_micro_io_t right) {
  return guard<ccv_nnc_micro_io_t>(nullptr, [&] { return micro::make_binary(op, left, right); });
}

NNC_API ccv_nnc_micro_io_t ccv_nnc_micro_reduce(const uint8_t op, const int* const axis, const int axis_count,
                                                const ccv_nnc_micro_io_t x) {
  return guard<ccv_nnc_micro_io_t>(nullptr, [&] { return micro::make_reduce(op, axis, axis_count, x); });
}

NNC_API ccv_nnc_micro_io_t ccv_nnc_micro_select(const int axis, const ccv_nnc_micro_io_t x,
                                                const ccv_nnc_micro_io_t index) {
  return guard<ccv_nnc_micro_io_t>(nullptr, [&] { return micro::make_select(axis, x, index); });
}

NNC_API ccv_nnc_micro_io_t ccv_nnc_micro_grad(const ccv_nnc_micro_io_t x) {
  return guard<ccv_nnc_micro_io_t>(nullptr, [&] { return micro::make_grad(x); });
}

NNC_API ccv_nnc_micro_combine_t* ccv_nnc_micro_combine_new(
    const ccv_nnc_micro_io_t* const inputs, const int input_size, const char* const* const parameters,
    const int parameter_size, const ccv_nnc_micro_io_t* const outputs, const int output_size,
    const ccv_nnc_micro_io_t* const ingrads, const int ingrad_size, const ccv_nnc_micro_io_t* const outgrads,
    const int outgrad_size) {
  return guard<ccv_nnc_micro_combine_t*>(nullptr, [&] {
    return micro::make_combine(inputs, input_size, parameters, parameter_size, outputs, output_size, ingrads,
                               ingrad_size, outgrads, outgrad_size)
        .release();
  });
}

NNC_API void ccv_nnc_micro_combine_free(ccv_nnc_micro_combine_t* const combine) {
  guard_void([&] { delete combine; });
}

NNC_API void ccv_nnc_micro_combine_interpret(ccv_nnc_micro_combine_t* const combine, const uint32_t cmd,
                                             ccv_nnc_tensor_t* const* const inputs, const int input_size,
                                             const ccv_nnc_micro_scalar_t* const values, const int parameter_size,
                                             ccv_nnc_tensor_t* const* const outputs, const int output_size) {
  guard_void([&] {
    NNC_CHECK(combine, "ccv_nnc_micro_combine_interpret: combine is NULL");
    micro::interpret(*combine, cmd, inputs, input_size, values, parameter_size, outputs, output_size);
  });
}

NNC_API char* ccv_nnc_micro_combine_c(ccv_nnc_micro_combine_t* const combine) {
  return guard<char*>(nullptr, [&]() -> char* {
    NNC_CHECK(combine, "ccv_nnc_micro_combine_c: combine is NULL");
    const std::string code = micro::generate_c(*combine);
    char* out = static_cast<char*>(std::malloc(code.size() + 1));
    if (!out) throw std::bad_alloc();
    std::memcpy(out, code.c_str(), code.size() + 1);
    return out;
  });
}

NNC_API void ccv_nnc_micro_io_free(ccv_nnc_micro_io_t io) {
  guard_void([&] {
    if (io) micro::free_io(micro::io_of(io));
  });
}

}  // extern "C"
