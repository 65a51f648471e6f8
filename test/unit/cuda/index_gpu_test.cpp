// GPU_REF INDEX_SELECT and MASKED_FILL (cuda/index_gpu.cpp) against CPU_REF on
// random inputs (fixed seeds): odd shapes, views (whole parents compared),
// 32S and 64S indices with repeats, broadcast masks of several types, and
// refusals. Copies and selects are exact; the backward's sums add at most a
// handful of float values per element (atomics in any order): atol 1e-6.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test/unit/cuda/gpu.hpp"
#include "test/unit/cuda/gpu_pair.hpp"

namespace {

using namespace nnc_gpu_test;

void set_indices(Both& b, int rows, std::mt19937& rng) {
  std::uniform_int_distribution<int> d(0, rows - 1);
  ccv_nnc_tensor_t* t = b.cpu_parent();
  for (size_t i = 0; i < ccv_nnc_tensor_count(t->info); i++) {
    if (CCV_GET_DATA_TYPE(t->info.datatype) == CCV_32S)
      t->data.i32[i] = d(rng);
    else
      t->data.i64[i] = d(rng);
  }
  b.upload();
}

TEST(GpuRefIndex, IndexSelectForwardBackward) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(401);
  struct Case {
    std::vector<int> x;
    int n;
    int index_type;
    bool view;
    int datatype;
  };
  const Case cases[] = {
      {{17, 33}, 40, CCV_32S, false, CCV_32F},  // more picks than rows: repeats
      {{1023}, 7, CCV_64S, false, CCV_32F},     // 1-d: single elements
      {{5, 3, 7}, 9, CCV_32S, true, CCV_32F},
      {{9, 65}, 4, CCV_64S, true, CCV_16F},  // forward only for 16F (rows are copied)
      {{1, 1}, 1, CCV_32S, false, CCV_32F},
  };
  for (const Case& k : cases) {
    std::vector<int> yd = k.x;
    yd[0] = k.n;
    auto x = both({k.x, k.view, k.datatype}, rng), y = both({yd, !k.view, k.datatype}, rng);
    auto ind = both({{k.n}, false, k.index_type}, rng, 0, static_cast<float>(k.x[0] - 1));
    set_indices(*ind, k.x[0], rng);
    run_both(make_cmd(CCV_NNC_INDEX_SELECT_FORWARD), {x.get(), ind.get()}, {y.get()}, "INDEX_SELECT_FORWARD");
    y->expect_close(0, 0, "INDEX_SELECT_FORWARD");
    if (k.datatype != CCV_32F) continue;
    auto g = both({yd, k.view}, rng), dx = both({k.x, !k.view}, rng);
    run_both(make_cmd(CCV_NNC_INDEX_SELECT_BACKWARD), {g.get(), x.get(), ind.get()}, {dx.get()},
             "INDEX_SELECT_BACKWARD");
    dx->expect_close(1e-6f, 1e-6f, "INDEX_SELECT_BACKWARD");
  }
}

TEST(GpuRefIndex, IndexOutsideRowsIsAnError) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(409);
  auto x = both({{6, 5}}, rng), y = both({{3, 5}}, rng), ind = both({{3}, false, CCV_32S}, rng, 0, 5);
  ind->cpu_parent()->data.i32[0] = 1;
  ind->cpu_parent()->data.i32[1] = 6;  // rows are 0..5
  ind->cpu_parent()->data.i32[2] = 2;
  ind->upload();
  ccv_nnc_cmd_t c = make_cmd(CCV_NNC_INDEX_SELECT_FORWARD);
  c.backend = CCV_NNC_BACKEND_GPU_REF;
  EXPECT_EQ(exec(c, ccv_nnc_no_hint, {x->gpu(), ind->gpu()}, {y->gpu()}), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(std::string(ccv_nnc_error_message()).find("indices[1]"), std::string::npos) << ccv_nnc_error_message();
  // A 32S backward: not a float type (the family's check; 16F, 16BF and 64F:
  // half2_gpu_test.cpp).
  auto g = both({{3, 5}, false, CCV_32S}, rng, 0, 3), dx = both({{6, 5}, false, CCV_32S}, rng, 0, 3);
  ccv_nnc_cmd_t b = make_cmd(CCV_NNC_INDEX_SELECT_BACKWARD);
  b.backend = CCV_NNC_BACKEND_GPU_REF;
  ind->cpu_parent()->data.i32[1] = 3;
  ind->upload();
  EXPECT_NE(exec(b, ccv_nnc_no_hint, {g->gpu(), nullptr, ind->gpu()}, {dx->gpu()}), CCV_NNC_EXEC_SUCCESS);
  EXPECT_STRNE(ccv_nnc_error_message(), "");
}

TEST(GpuRefIndex, MaskedFillForwardBackward) {
  NNC_REQUIRE_GPU();
  std::mt19937 rng(419);
  struct Case {
    std::vector<int> x, mask;
    int mask_type, x_type;
    bool view;
  };
  const Case cases[] = {
      {{2, 3, 7, 7}, {1, 1, 7, 7}, CCV_32S, CCV_32F, false},  // an attention mask over scores
      {{5, 33}, {33}, CCV_32F, CCV_32F, true},
      {{5, 33}, {5, 1}, CCV_8U, CCV_16F, true},
      {{1023}, {1023}, CCV_16F, CCV_32F, false},
  };
  for (const Case& k : cases) {
    auto x = both({k.x, k.view, k.x_type}, rng), y = both({k.x, !k.view, k.x_type}, rng);
    auto m = both({k.mask, false, k.mask_type}, rng, 0, 1);
    // Masks of 0 and 1 (eq = 0 fills where the mask is 0).
    {
      std::uniform_int_distribution<int> d(0, 1);
      Owned f(param_of(k.mask, CCV_32F, CCV_TENSOR_FORMAT_NHWC, false));
      for (size_t i = 0; i < ccv_nnc_tensor_count(f->info); i++) f->data.f32[i] = static_cast<float>(d(rng));
      ccv_nnc_tensor_t* t = m->cpu_parent();
      for (size_t i = 0; i < ccv_nnc_tensor_count(t->info); i++) {
        if (k.mask_type == CCV_32S) t->data.i32[i] = static_cast<int>(f->data.f32[i]);
        if (k.mask_type == CCV_8U) t->data.u8[i] = static_cast<unsigned char>(f->data.f32[i]);
        if (k.mask_type == CCV_32F) t->data.f32[i] = f->data.f32[i];
      }
      if (k.mask_type == CCV_16F) {
        ccv_nnc_cmd_t cv = make_cmd(CCV_NNC_DATATYPE_CONVERSION_FORWARD);
        cv.backend = CCV_NNC_BACKEND_CPU_REF;
        ASSERT_EQ(exec(cv, ccv_nnc_no_hint, {f.t}, {t}), CCV_NNC_EXEC_SUCCESS) << ccv_nnc_error_message();
      }
      m->upload();
    }
    ccv_nnc_cmd_t c = make_cmd(CCV_NNC_MASKED_FILL_FORWARD);
    c.info.blas.a[0] = 0;
    c.info.blas.a[1] = -1e4f;
    run_both(c, {x.get(), m.get()}, {y.get()}, "MASKED_FILL_FORWARD");
    y->expect_close(0, 0, "MASKED_FILL_FORWARD");
    auto g = both({k.x, false, k.x_type}, rng), dx = both({k.x, k.view, k.x_type}, rng),
         dm = both({k.mask, false, k.mask_type}, rng, 0, 1);
    ccv_nnc_cmd_t b = c;
    b.cmd = CCV_NNC_MASKED_FILL_BACKWARD;
    run_both(b, {g.get(), x.get(), m.get()}, {dx.get(), dm.get()}, "MASKED_FILL_BACKWARD");
    dx->expect_close(0, 0, "MASKED_FILL_BACKWARD dx");
    dm->expect_close(0, 0, "MASKED_FILL_BACKWARD dmask");
  }
}

}  // namespace
