// The kernel adaptor (core/kernel.hpp): a kernel reports what it cannot run by
// throwing nnc::Error, and its callers turn that into a code and a message;
// the registration record of each family carries what its traits said.
#include <gtest/gtest.h>

#include <vector>

#include <string>

#include "cmd/util/util.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "test_util.hpp"

using namespace nnc_test;

namespace {

TEST(KernelAdaptor, AKernelThrowsWhatItCannotRunAndNeedsNoGuard) {
  ccv_nnc_init();
  // A 3-d NHWC tensor cannot be rewritten as CHWN (4-d only): validation
  // refuses it before any kernel; called directly, the kernel itself throws.
  Tensor x(cpu_param(CCV_32F, {2, 3, 4})), y(cpu_param(CCV_32F, {2, 3, 4}, CCV_TENSOR_FORMAT_CHWN));
  ccv_nnc_tensor_t* in[] = {x.t};
  ccv_nnc_tensor_t* out[] = {y.t};
  const ccv_nnc_cmd_t cmd = ccv_nnc_cmd(CCV_NNC_FORMAT_TRANSFORM_FORWARD, nullptr, no_params(), 0);
  try {
    nnc::util::format_ref(cmd, ccv_nnc_no_hint, 0, in, 1, out, 1, nullptr);
    ADD_FAILURE() << "format_ref ran a transform it cannot run";
  } catch (const nnc::Error& e) {
    EXPECT_EQ(e.code(), CCV_NNC_EXEC_INVALID);
    EXPECT_NE(std::string(e.what()).find("FORMAT_TRANSFORM"), std::string::npos) << e.what();
  }
  // Through the exported call the same input is a code and a message, not an exception.
  EXPECT_EQ(ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, in, 1, out, 1, nullptr), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("FORMAT_TRANSFORM"), std::string::npos)
      << ccv_nnc_error_message();
}

TEST(KernelAdaptor, RegistrationCarriesEachBackendsTraits) {
  ccv_nnc_init();
  const nnc::Registry& r = nnc::registry();
  const int all = CCV_TENSOR_FORMAT_NHWC | CCV_TENSOR_FORMAT_NCHW | CCV_TENSOR_FORMAT_CHWN;
  const int image = CCV_TENSOR_FORMAT_NHWC | CCV_TENSOR_FORMAT_NCHW;
  const int floats = CCV_32F | CCV_64F | CCV_16F | CCV_16BF;

  // Windows take NHWC and NCHW only; the optimised convolution runs alone
  // (every core) and has algorithms to tune.
  const nnc::Kernel* conv_ref = r.kernel(CCV_NNC_CONVOLUTION_FORWARD, CCV_NNC_BACKEND_CPU_REF);
  const nnc::Kernel* conv_opt = r.kernel(CCV_NNC_CONVOLUTION_BACKWARD, CCV_NNC_BACKEND_CPU_OPT);
  ASSERT_TRUE(conv_ref && conv_opt);
  EXPECT_EQ(conv_ref->tensor_formats, image);
  EXPECT_EQ(conv_ref->tensor_datatypes, floats);
  EXPECT_FALSE(conv_ref->exclusive);
  EXPECT_EQ(conv_opt->tensor_formats, image);
  EXPECT_EQ(conv_opt->tensor_datatypes, CCV_32F);
  EXPECT_TRUE(conv_opt->exclusive);
  EXPECT_GT(conv_opt->algorithms, 1);
  const nnc::Kernel* pool_opt = r.kernel(CCV_NNC_AVERAGE_POOL_BACKWARD, CCV_NNC_BACKEND_CPU_OPT);
  ASSERT_TRUE(pool_opt);
  EXPECT_EQ(pool_opt->tensor_formats, image);
  EXPECT_FALSE(pool_opt->exclusive);

  // GEMM's optimised kernels: OpenBLAS under the compute lock, each direction its own acceptance test.
  const nnc::Kernel* gf = r.kernel(CCV_NNC_GEMM_FORWARD, CCV_NNC_BACKEND_CPU_OPT);
  const nnc::Kernel* gb = r.kernel(CCV_NNC_GEMM_BACKWARD, CCV_NNC_BACKEND_CPU_OPT);
  ASSERT_TRUE(gf && gb);
  EXPECT_TRUE(gf->exclusive && gb->exclusive);
  EXPECT_TRUE(gf->accept && gb->accept);
  EXPECT_NE(gf->accept, gb->accept);
  EXPECT_EQ(gf->tensor_datatypes, CCV_32F | CCV_64F);
  EXPECT_EQ(gf->tensor_formats, all);

  // EWSUM: the optimised sum is 32F / 64F, its backward (copies) every type the reference takes.
  const nnc::Kernel* sf = r.kernel(CCV_NNC_EWSUM_FORWARD, CCV_NNC_BACKEND_CPU_OPT);
  const nnc::Kernel* sb = r.kernel(CCV_NNC_EWSUM_BACKWARD, CCV_NNC_BACKEND_CPU_OPT);
  const nnc::Kernel* sr = r.kernel(CCV_NNC_EWSUM_BACKWARD, CCV_NNC_BACKEND_CPU_REF);
  ASSERT_TRUE(sf && sb && sr);
  EXPECT_EQ(sf->tensor_datatypes, CCV_32F | CCV_64F);
  EXPECT_EQ(sb->tensor_datatypes, sr->tensor_datatypes);
  EXPECT_EQ(sr->tensor_datatypes, floats | CCV_32S | CCV_64S);

  // Softmax: 32S labels beside float logits on both backends; only the optimised one has an acceptance test.
  const nnc::Kernel* xr = r.kernel(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD, CCV_NNC_BACKEND_CPU_REF);
  const nnc::Kernel* xo = r.kernel(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD, CCV_NNC_BACKEND_CPU_OPT);
  ASSERT_TRUE(xr && xo);
  EXPECT_EQ(xr->tensor_datatypes, floats | CCV_32S);
  EXPECT_EQ(xo->tensor_datatypes, CCV_32F | CCV_32S);
  EXPECT_EQ(xr->accept, nullptr);
  EXPECT_NE(xo->accept, nullptr);

  // Random backward (zeroed gradients) has a reference kernel for every type and no optimised one.
  const nnc::Kernel* zr = r.kernel(CCV_NNC_RANDOM_NORMAL_BACKWARD, CCV_NNC_BACKEND_CPU_REF);
  ASSERT_TRUE(zr);
  EXPECT_EQ(zr->tensor_datatypes, floats | CCV_32S | CCV_64S | CCV_8U);
  EXPECT_EQ(r.kernel(CCV_NNC_RANDOM_NORMAL_BACKWARD, CCV_NNC_BACKEND_CPU_OPT), nullptr);

  // Every CPU kernel of every family: CPU memory, a known backend, an exec
  // function. (A CUDA build puts its GPU kernels first in the list: skipped.)
  for (uint32_t id : {CCV_NNC_RELU_FORWARD, CCV_NNC_LAYER_NORM_BACKWARD, CCV_NNC_REDUCE_SUM_FORWARD, CCV_NNC_ARGMAX_FORWARD,
                      CCV_NNC_ADAM_FORWARD, CCV_NNC_TRANSPOSE_FORWARD, CCV_NNC_SET_FORWARD, CCV_NNC_MSE_FORWARD,
                      CCV_NNC_ADD_BACKWARD, CCV_NNC_EWEXP_FORWARD, CCV_NNC_DROPOUT_BACKWARD}) {
    std::vector<nnc::Kernel> ks;
    for (const nnc::Kernel& k : r.kernels(id))
      if (k.backend == CCV_NNC_BACKEND_CPU_OPT || k.backend == CCV_NNC_BACKEND_CPU_REF) ks.push_back(k);
    ASSERT_EQ(ks.size(), 2u) << ccv_nnc_cmd_name(id);
    for (const nnc::Kernel& k : ks) {
      EXPECT_EQ(k.cmd, id);
      EXPECT_EQ(k.tensor_memory, CCV_TENSOR_CPU_MEMORY) << ccv_nnc_cmd_name(id);
      EXPECT_TRUE(k.exec) << ccv_nnc_cmd_name(id);
      EXPECT_EQ(k.tensor_formats, all) << ccv_nnc_cmd_name(id);
    }
    EXPECT_EQ(ks[0].backend, CCV_NNC_BACKEND_CPU_OPT) << ccv_nnc_cmd_name(id);  // preference order
    EXPECT_EQ(ks[1].backend, CCV_NNC_BACKEND_CPU_REF) << ccv_nnc_cmd_name(id);
  }
}

}  // namespace
