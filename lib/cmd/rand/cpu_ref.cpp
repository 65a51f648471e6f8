// CPU_REF kernels of the random family: element by element through each
// tensor's own strides, counting elements in row-major order of the shape
// (which names the random word each element takes, see rand.hpp).
#include "cmd/common/copy.hpp"
#include "cmd/rand/rand.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

namespace nnc::rand {

NNC_KERNEL(uniform_ref) {
  const Layout y = layout_of(outputs[0], "RANDOM_UNIFORM output");
  const Counter ctr(draw_seed(stream_context));
  const double lb = cmd.info.blas.a[0], range = double(cmd.info.blas.a[1]) - lb;
  uint64_t i = 0;
  for_each_index(y.dim.data(), y.nd, [&](const int* idx) {
    const double v =
        y.datatype == CCV_64F ? uniform_wide(ctr.word64(i), lb, range) : uniform_narrow(ctr.word32(i), lb, range);
    store_double(y.at(idx), y.datatype, v);
    i++;
  });
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(normal_ref) {
  const Layout y = layout_of(outputs[0], "RANDOM_NORMAL output");
  const Counter ctr(draw_seed(stream_context));
  const double std_dev = cmd.info.blas.a[0], mean = cmd.info.blas.a[1];
  uint64_t i = 0;
  double z[2];
  for_each_index(y.dim.data(), y.nd, [&](const int* idx) {
    if (!(i & 1)) normal_pair(ctr.word64(i >> 1), mean, std_dev, z);
    store_double(y.at(idx), y.datatype, z[i & 1]);
    i++;
  });
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(dropout_forward_ref) {
  const Layout x = layout_of(inputs[0], "DROPOUT x");
  const Layout y = layout_of(outputs[0], "DROPOUT y");
  const Layout mask = layout_of(outputs[1], "DROPOUT mask");
  const bool shaped = mask_like_x(outputs[1], inputs[0]);
  const Counter ctr(draw_seed(stream_context));
  const uint64_t t = dropout_threshold(cmd.info.dropout.p);
  const double scale = dropout_scale(cmd.info.dropout.p);
  const bool entirety = cmd.info.dropout.entirety != 0;
  const bool keep_all = ctr.word32(0) >= t;
  if (entirety) *mask.data = keep_all;
  uint64_t i = 0;
  for_each_index(x.dim.data(), x.nd, [&](const int* idx) {
    const bool keep = entirety ? keep_all : ctr.word32(i) >= t;
    const double v = keep ? load_double(x.at(idx), x.datatype) * scale : 0.0;
    store_double(y.at(idx), y.datatype, v);
    if (!entirety) *(shaped ? mask.at(idx) : mask.data + i) = keep;
    i++;
  });
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(dropout_backward_ref) {
  const Layout g = layout_of(inputs[0], "DROPOUT_BACKWARD g");
  const Layout mask = layout_of(inputs[4], "DROPOUT_BACKWARD mask");
  const bool shaped = mask_like_x(inputs[4], inputs[0]);
  const Layout dx = layout_of(outputs[0], "DROPOUT_BACKWARD dx");
  const double scale = dropout_scale(cmd.info.dropout.p);
  const bool entirety = cmd.info.dropout.entirety != 0;
  uint64_t i = 0;
  for_each_index(g.dim.data(), g.nd, [&](const int* idx) {
    const bool keep = entirety ? *mask.data != 0 : *(shaped ? mask.at(idx) : mask.data + i) != 0;
    store_double(dx.at(idx), dx.datatype, keep ? load_double(g.at(idx), g.datatype) * scale : 0.0);
    i++;
  });
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(zero_gradients) {
  for (int i = 0; i < output_size; i++)
    if (outputs[i]) util::ref_fill(outputs[i], 0);
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::rand
