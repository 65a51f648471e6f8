// The CMD_*() easy macros: easy_cases.c expands each of them from C; here every
// case is checked for its command id and for the parameter fields its macro
// promises (fields a macro does not name must stay zero). Every public macro
// in ccv_nnc_cmd_easy.h must be expanded at least once, and every case must
// have expectations.

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "easy_cases.h"
#include "id_tables.h"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace {

using P = ccv_nnc_cmd_param_t;
using Check = std::function<void(const P&)>;

constexpr int kDims = int(sizeof(P{}.size.dim) / sizeof(int));

std::string squeeze(const std::string& s) {
  std::string out;
  for (char c : s)
    if (c != ' ' && c != '\t' && c != '\n') out += c;
  return out;
}

// size.dim holds `dims` and zeros after them.
void window(const P& p, std::vector<int> dims) {
  dims.resize(kDims, 0);
  for (int i = 0; i < kDims; ++i) EXPECT_EQ(p.size.dim[i], dims[i]) << "size.dim[" << i << "]";
}
void unit_window(const P& p) { window(p, {1, 1, 1}); }

// The whole parameter block equals ccv_nnc_cmd_auto.
void is_auto(const P& p) { EXPECT_EQ(0, std::memcmp(&p, &ccv_nnc_cmd_auto, sizeof(P))); }

void axes(const int* got, int count_got, std::vector<int> want, const char* what) {
  EXPECT_EQ(count_got, int(want.size())) << what << " count";
  want.resize(kDims, 0);
  for (int i = 0; i < kDims; ++i) EXPECT_EQ(got[i], want[i]) << what << "[" << i << "]";
}

void blas(const P& p, float a0, float a1, float a2, std::array<int, 2> ta = {0, 0},
          std::array<int, 2> tb = {0, 0}) {
  EXPECT_EQ(p.blas.a[0], a0);
  EXPECT_EQ(p.blas.a[1], a1);
  EXPECT_EQ(p.blas.a[2], a2);
  EXPECT_EQ(p.blas.transpose_a[0], ta[0]);
  EXPECT_EQ(p.blas.transpose_a[1], ta[1]);
  EXPECT_EQ(p.blas.transpose_b[0], tb[0]);
  EXPECT_EQ(p.blas.transpose_b[1], tb[1]);
  EXPECT_EQ(p.blas.flags, 0);
}

void label_smoothing(const P& p, float trim0, float trim1) {
  unit_window(p);
  EXPECT_EQ(p.label_smoothing.trim0, trim0);
  EXPECT_EQ(p.label_smoothing.trim1, trim1);
}

void pos_weight(const P& p, float w) {
  unit_window(p);
  EXPECT_EQ(p.binary_crossentropy.pos_weight, w);
}

void reduce(const P& p, std::vector<int> want) {
  unit_window(p);
  axes(p.reduce.axis, p.reduce.count, want, "reduce.axis");
}

void adam(const P& p) {
  unit_window(p);
  EXPECT_EQ(p.adam.step, 3);
  EXPECT_EQ(p.adam.rate, 0.5f);
  EXPECT_EQ(p.adam.scale, 1.0f);
  EXPECT_EQ(p.adam.beta1, 0.875f);
  EXPECT_EQ(p.adam.beta2, 0.9375f);
  EXPECT_EQ(p.adam.decay, 0.125f);
  EXPECT_EQ(p.adam.epsilon, 0.0625f);
  EXPECT_EQ(p.adam.amsgrad, 1);
}

// Expectations, keyed by the call as written in easy_cases.c (spaces removed).
// both() registers the same expectations for the FORWARD and BACKWARD macro.
struct Expectations {
  std::map<std::string, Check> by_call;
  void one(const std::string& call, Check check) {
    EXPECT_TRUE(by_call.emplace(squeeze(call), std::move(check)).second) << call;
  }
  void both(const std::string& family, const std::string& args, const Check& check) {
    one("CMD_" + family + "_FORWARD" + args, check);
    one("CMD_" + family + "_BACKWARD" + args, check);
  }
};

Expectations expectations() {
  Expectations e;
  // Linear algebra and element-wise arithmetic. GEMM: alpha = beta = 1.
  e.both("GEMM", "()", [](const P& p) { unit_window(p); blas(p, 1, 1, 0); });
  e.both("GEMM", "(NO_TRANSPOSE, TRANSPOSE(0, 1))",
         [](const P& p) { unit_window(p); blas(p, 1, 1, 0, {0, 0}, {0, 1}); });
  e.one("CMD_GEMM_FORWARD(TRANSPOSE(1, 2))",
        [](const P& p) { unit_window(p); blas(p, 1, 1, 0, {1, 2}, {0, 0}); });
  e.both("ADD", "(0.5, 0.25)", [](const P& p) { unit_window(p); blas(p, 0.5f, 0.25f, 0); });
  e.both("MUL", "(0.5)", [](const P& p) { unit_window(p); blas(p, 0.5f, 0, 0); });
  e.both("SCALAR_MUL", "(0.75)", [](const P& p) { unit_window(p); blas(p, 0.75f, 0, 0); });
  e.both("CMUL", "()", [](const P& p) { unit_window(p); blas(p, 0, 0, 0); });
  for (const char* f : {"EWSUM", "EWPROD", "EWDIV", "EWEXP", "EWLOG", "EWSQRT"})
    e.both(f, "()", is_auto);
  e.both("CLAMP", "(0.25, 6)", [](const P& p) {
    unit_window(p);
    EXPECT_EQ(p.clamp.min, 0.25f);
    EXPECT_EQ(p.clamp.max, 6.0f);
  });
  e.both("MIN", "()", [](const P& p) { unit_window(p); blas(p, 0, 0, 0); });
  e.both("MAX", "()", [](const P& p) { unit_window(p); blas(p, 0, 0, 0); });
  e.both("SET", "(0.5)", [](const P& p) { unit_window(p); blas(p, 0.5f, 0, 0); });
  e.both("MASKED_FILL", "(0, -0.5)", [](const P& p) { unit_window(p); blas(p, 0, -0.5f, 0); });

  // Convolution, pooling and resampling.
  e.both("CONVOLUTION", "(1, 32, 5, 5, 3)", [](const P& p) {
    window(p, {5, 5, 3});
    EXPECT_EQ(p.convolution.count, 32);
    EXPECT_EQ(p.convolution.groups, 1);
    for (int i = 0; i < kDims; ++i) EXPECT_EQ(p.convolution.dilation[i], 0);
  });
  e.one("CMD_CONVOLUTION_FORWARD(4, 8, 3, 3)", [](const P& p) {
    window(p, {3, 3});
    EXPECT_EQ(p.convolution.count, 8);
    EXPECT_EQ(p.convolution.groups, 4);
  });
  e.both("CONVOLUTION_TRANSPOSE", "(2, 16, 1, 4, 4, 8)", [](const P& p) {
    window(p, {4, 4, 8});
    EXPECT_EQ(p.convolution_transpose.count, 16);
    EXPECT_EQ(p.convolution_transpose.groups, 2);
    EXPECT_EQ(p.convolution_transpose.output_padding, 1);
    for (int i = 0; i < kDims; ++i) EXPECT_EQ(p.convolution_transpose.dilation[i], 0);
  });
  e.both("MAX_POOL", "(2, 3)", [](const P& p) { window(p, {2, 3, 1}); });
  e.both("AVERAGE_POOL", "(2, 3)", [](const P& p) { window(p, {2, 3, 1}); });
  e.both("UPSAMPLE", "(CCV_NNC_UPSAMPLE_BILINEAR, 2, 1.5, 1)", [](const P& p) {
    unit_window(p);
    EXPECT_EQ(p.upsample.type, int(CCV_NNC_UPSAMPLE_BILINEAR));
    EXPECT_EQ(p.upsample.width_scale, 2.0f);
    EXPECT_EQ(p.upsample.height_scale, 1.5f);
    EXPECT_EQ(p.upsample.align_corners, 1);
  });
  e.both("ROI_ALIGN", "(7, 5)", [](const P& p) { window(p, {7, 5, 1}); });
  e.both("PAD", "(CCV_NNC_PAD_REPLICATE, (1, 2), (3, 4, 5))", [](const P& p) {
    window(p, {1, 2});  // size.dim carries the padding at the beginning
    EXPECT_EQ(p.pad.type, int(CCV_NNC_PAD_REPLICATE));
    std::vector<int> end = {3, 4, 5};
    end.resize(kDims, 0);
    for (int i = 0; i < kDims; ++i) EXPECT_EQ(p.pad.end[i], end[i]) << "pad.end[" << i << "]";
  });

  // Activations.
  for (const char* f : {"RELU", "SIGMOID", "TANH", "SWISH", "SOFTMAX"}) e.both(f, "()", is_auto);
  e.both("LEAKY_RELU", "(0.125)", [](const P& p) {
    unit_window(p);
    EXPECT_EQ(p.leaky_relu.negative_slope, 0.125f);
  });
  e.both("GELU", "(1)", [](const P& p) {
    unit_window(p);
    EXPECT_EQ(p.gelu.tanh, 1);
  });
  e.both("DROPOUT", "(0.5)", [](const P& p) {
    unit_window(p);
    EXPECT_EQ(p.dropout.p, 0.5f);
    EXPECT_EQ(p.dropout.entirety, 0);
  });
  e.both("DROPOUT", "(0.5, 1)", [](const P& p) {
    unit_window(p);
    EXPECT_EQ(p.dropout.p, 0.5f);
    EXPECT_EQ(p.dropout.entirety, 1);
  });

  // Normalisation.
  e.both("BATCH_NORM", "(0.125, 1, 0.75, 0, 1, 2)", [](const P& p) {
    unit_window(p);
    EXPECT_EQ(p.bnorm.epsilon, 0.125f);
    EXPECT_EQ(p.bnorm.is_test, 1);
    EXPECT_EQ(p.bnorm.momentum, 0.75f);
    axes(p.bnorm.axis, p.bnorm.count, {0, 1, 2}, "bnorm.axis");
  });
  e.both("LAYER_NORM", "(0.25, 1, 1, 2)", [](const P& p) {
    unit_window(p);
    EXPECT_EQ(p.lnorm.epsilon, 0.25f);
    EXPECT_EQ(p.lnorm.elementwise_affine, 1);
    axes(p.lnorm.axis, p.lnorm.count, {1, 2}, "lnorm.axis");
  });
  e.both("GROUP_NORM", "(1, 4, 0.25, 1, 2, 3)", [](const P& p) {
    unit_window(p);
    EXPECT_EQ(p.gnorm.group_axis, 1);
    EXPECT_EQ(p.gnorm.groups, 4);
    EXPECT_EQ(p.gnorm.epsilon, 0.25f);
    EXPECT_EQ(p.gnorm.elementwise_affine, 1);
    axes(p.gnorm.reduce_axis, p.gnorm.reduce_count, {2, 3}, "gnorm.reduce_axis");
  });
  e.both("RMSNORM", "(0.5, 2)", [](const P& p) {
    unit_window(p);
    EXPECT_EQ(p.rmsnorm.epsilon, 0.5f);
    axes(p.rmsnorm.axis, p.rmsnorm.count, {2}, "rmsnorm.axis");
  });

  // Losses: no arguments means no label smoothing (0, 1) and pos_weight 1.
  for (const char* f : {"SOFTMAX_CROSSENTROPY", "CATEGORICAL_CROSSENTROPY"}) {
    e.both(f, "()", [](const P& p) { label_smoothing(p, 0, 1); });
    e.both(f, "(0.125, 0.875)", [](const P& p) { label_smoothing(p, 0.125f, 0.875f); });
  }
  for (const char* f : {"BINARY_CROSSENTROPY", "SIGMOID_BINARY_CROSSENTROPY"}) {
    e.both(f, "()", [](const P& p) { pos_weight(p, 1); });
    e.both(f, "(2.5)", [](const P& p) { pos_weight(p, 2.5f); });
  }
  e.both("MSE", "(CCV_NNC_MSE_REDUCE_SUM)", [](const P& p) {
    unit_window(p);
    EXPECT_EQ(p.mse.reduce_op, int(CCV_NNC_MSE_REDUCE_SUM));
  });
  e.both("SMOOTH_L1", "(0.5)", [](const P& p) {
    unit_window(p);
    EXPECT_EQ(p.smooth_l1.beta, 0.5f);
  });

  // Reductions.
  e.both("REDUCE_SUM", "(0, 1)", [](const P& p) { reduce(p, {0, 1}); });
  e.one("CMD_REDUCE_SUM_FORWARD()", [](const P& p) { reduce(p, {}); });
  e.both("REDUCE_MEAN", "(1, 3)", [](const P& p) { reduce(p, {1, 3}); });
  e.both("REDUCE_MAX", "(2)", [](const P& p) { reduce(p, {2}); });
  e.both("REDUCE_MIN", "(2)", [](const P& p) { reduce(p, {2}); });
  e.both("REDUCE_NORM2", "(0, 1, 2)", [](const P& p) { reduce(p, {0, 1, 2}); });
  e.both("REDUCE_ISNAN", "(1)", [](const P& p) { reduce(p, {1}); });
  e.both("ARGMAX", "(1)", [](const P& p) { reduce(p, {1}); });
  e.both("ARGMIN", "(1)", [](const P& p) { reduce(p, {1}); });

  // Attention and recurrent layers.
  e.both("SCALED_DOT_PRODUCT_ATTENTION", "(0.125, 1)", [](const P& p) {
    unit_window(p);
    EXPECT_EQ(p.scaled_dot_product_attention.scale, 0.125f);
    EXPECT_EQ(p.scaled_dot_product_attention.is_causal, 1);
    EXPECT_EQ(p.scaled_dot_product_attention.flags, 0);
    EXPECT_EQ(p.scaled_dot_product_attention.deterministic, 0);
  });
  e.both("LSTM", "(32, 16, 2, 1, 1, 1, 0.25, 1)", [](const P& p) {
    window(p, {});  // LSTM leaves the window at zero
    EXPECT_EQ(p.rnn.hidden_size, 32);
    EXPECT_EQ(p.rnn.proj_size, 16);
    EXPECT_EQ(p.rnn.num_layers, 2);
    EXPECT_EQ(p.rnn.bias, 1);
    EXPECT_EQ(p.rnn.batch_first, 1);
    EXPECT_EQ(p.rnn.bidirectional, 1);
    EXPECT_EQ(p.rnn.dropout, 0.25f);
    EXPECT_EQ(p.rnn.is_test, 1);
  });

  // Optimisers (forward only). ADAM, ADAMW, LAMB and RMSPROP fix scale at 1.
  e.one("CMD_SGD_FORWARD(1, 0.5, 0.25, 0.125, 0.75, 0.0625)", [](const P& p) {
    unit_window(p);
    EXPECT_EQ(p.sgd.nesterov, 1);
    EXPECT_EQ(p.sgd.rate, 0.5f);
    EXPECT_EQ(p.sgd.scale, 0.25f);
    EXPECT_EQ(p.sgd.decay, 0.125f);
    EXPECT_EQ(p.sgd.momentum, 0.75f);
    EXPECT_EQ(p.sgd.dampening, 0.0625f);
  });
  e.one("CMD_ADAM_FORWARD(3, 0.5, 0.875, 0.9375, 0.125, 0.0625, 1)", adam);
  e.one("CMD_ADAMW_FORWARD(3, 0.5, 0.875, 0.9375, 0.125, 0.0625, 1)", adam);
  e.one("CMD_LAMB_FORWARD(3, 0.5, 0.875, 0.9375, 0.125, 0.0625)", [](const P& p) {
    unit_window(p);
    EXPECT_EQ(p.lamb.step, 3);
    EXPECT_EQ(p.lamb.rate, 0.5f);
    EXPECT_EQ(p.lamb.scale, 1.0f);
    EXPECT_EQ(p.lamb.beta1, 0.875f);
    EXPECT_EQ(p.lamb.beta2, 0.9375f);
    EXPECT_EQ(p.lamb.decay, 0.125f);
    EXPECT_EQ(p.lamb.epsilon, 0.0625f);
  });
  e.one("CMD_RMSPROP_FORWARD(0.5, 0.125, 0.875, 0.25, 0.0625)", [](const P& p) {
    unit_window(p);
    EXPECT_EQ(p.rmsprop.rate, 0.5f);
    EXPECT_EQ(p.rmsprop.scale, 1.0f);
    EXPECT_EQ(p.rmsprop.decay, 0.125f);
    EXPECT_EQ(p.rmsprop.alpha, 0.875f);
    EXPECT_EQ(p.rmsprop.momentum, 0.25f);
    EXPECT_EQ(p.rmsprop.epsilon, 0.0625f);
  });

  // Random numbers: the bounds / (std, mean) travel in blas.a.
  e.both("RANDOM_UNIFORM", "(-1, 1)", [](const P& p) { unit_window(p); blas(p, -1, 1, 0); });
  e.both("RANDOM_NORMAL", "(2, 0.5)", [](const P& p) { unit_window(p); blas(p, 2, 0.5f, 0); });

  // Data movement and indexing.
  for (const char* f : {"DATA_TRANSFER", "FORMAT_TRANSFORM", "DATATYPE_CONVERSION", "INDEX_SELECT"})
    e.both(f, "()", is_auto);
  e.both("TRANSPOSE", "(1, 3)", [](const P& p) {
    unit_window(p);
    EXPECT_EQ(p.transpose.axis[0], 1);
    EXPECT_EQ(p.transpose.axis[1], 3);
  });

  // Detection and statistics.
  e.both("NMS", "(0.5)", [](const P& p) {
    window(p, {});  // NMS leaves the window at zero
    EXPECT_EQ(p.nms.iou_threshold, 0.5f);
  });
  e.one("CMD_HISTOGRAM_EVEN(10, -1, 1)", [](const P& p) {
    unit_window(p);
    EXPECT_EQ(p.histogram.type, int(CCV_NNC_HISTOGRAM_EVEN));
    EXPECT_EQ(p.histogram.bins, 10);
    EXPECT_EQ(p.histogram.min, -1.0f);
    EXPECT_EQ(p.histogram.max, 1.0f);
    EXPECT_EQ(p.histogram.rate, 0.0f);
  });
  e.one("CMD_HISTOGRAM_LOG()", [](const P& p) {
    unit_window(p);
    EXPECT_EQ(p.histogram.type, int(CCV_NNC_HISTOGRAM_LOGARITHMIC));
    EXPECT_EQ(p.histogram.bins, 0);
    EXPECT_EQ(p.histogram.min, 1e-12f);
    EXPECT_EQ(p.histogram.max, 1e20f);
    EXPECT_EQ(p.histogram.rate, 1.1f);
  });
  e.one("CMD_HISTOGRAM_LOG(0.5, 1024, 2)", [](const P& p) {
    unit_window(p);
    EXPECT_EQ(p.histogram.type, int(CCV_NNC_HISTOGRAM_LOGARITHMIC));
    EXPECT_EQ(p.histogram.min, 0.5f);
    EXPECT_EQ(p.histogram.max, 1024.0f);
    EXPECT_EQ(p.histogram.rate, 2.0f);
  });
  e.one("CMD_HISTOGRAM_BINS()", [](const P& p) {
    unit_window(p);
    EXPECT_EQ(p.histogram.type, int(CCV_NNC_HISTOGRAM_BINS));
    EXPECT_EQ(p.histogram.bins, 0);
    EXPECT_EQ(p.histogram.min, 0.0f);
    EXPECT_EQ(p.histogram.max, 0.0f);
  });

  // Communication and compression.
  for (const char* f : {"COMM_ALLREDUCE", "COMM_BROADCAST", "COMM_REDUCE", "COMPRESSION_LSSC"})
    e.both(f, "()", is_auto);
  return e;
}

// The macro's name in a call: "CMD_GEMM_FORWARD(...)" -> "CMD_GEMM_FORWARD".
std::string macro_of(const std::string& call) { return call.substr(0, call.find('(')); }

// The command id a macro must carry, by its name.
uint32_t expected_id(const std::string& macro, bool* found) {
  std::string id_name;
  if (macro.rfind("CMD_HISTOGRAM_", 0) == 0)
    id_name = "CCV_NNC_HISTOGRAM_FORWARD";  // EVEN, LOG and BINS are forward histograms
  else
    id_name = "CCV_NNC_" + macro.substr(4);
  for (const auto& entry : nnc_test::kCommandIds) {
    if (id_name == entry.name) {
      *found = true;
      return entry.id;
    }
  }
  *found = false;
  return 0;
}

// The public CMD_* macros of the header (helpers end in '_' and are skipped).
std::set<std::string> public_macros() {
  std::ifstream in(std::string(NNC_SOURCE_DIR) + "/include/nnc/cmd/ccv_nnc_cmd_easy.h");
  EXPECT_TRUE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  std::set<std::string> out;
  const std::regex def(R"(#define\s+(CMD_[A-Z0-9_]*[A-Z0-9])\()");
  for (auto it = std::sregex_iterator(s.begin(), s.end(), def); it != std::sregex_iterator(); ++it)
    out.insert((*it)[1]);
  return out;
}

std::vector<nnc_test_easy_case_t> cases() {
  const nnc_test_easy_case_t* first = nullptr;
  const int n = nnc_test_easy_cases(&first);
  EXPECT_GT(n, 0) << "easy_cases.c ran out of room";
  return n > 0 ? std::vector<nnc_test_easy_case_t>(first, first + n)
               : std::vector<nnc_test_easy_case_t>{};
}

}  // namespace

TEST(EasyMacros, EveryCaseCarriesItsCommandAndParameters) {
  const auto exp = expectations();
  std::set<std::string> used;
  for (const auto& c : cases()) {
    const std::string call = squeeze(c.call);
    SCOPED_TRACE(call);
    bool found = false;
    const uint32_t id = expected_id(macro_of(call), &found);
    ASSERT_TRUE(found) << "no command id for " << macro_of(call);
    EXPECT_EQ(c.cmd.cmd, id);
    auto it = exp.by_call.find(call);
    if (it == exp.by_call.end()) {
      ADD_FAILURE() << "no expectations for this call";
      continue;
    }
    used.insert(call);
    it->second(c.cmd.info);
  }
  for (const auto& [call, check] : exp.by_call)
    EXPECT_TRUE(used.count(call)) << "expectations for " << call << " were never used";
}

TEST(EasyMacros, EveryPublicMacroIsExpanded) {
  const auto macros = public_macros();
  // libnnc c6ce5b12 defines 134 CMD_* macros in ccv_nnc_cmd_easy.h.
  EXPECT_EQ(macros.size(), 134u);
  std::set<std::string> expanded;
  for (const auto& c : cases()) expanded.insert(macro_of(squeeze(c.call)));
  for (const auto& m : macros) EXPECT_TRUE(expanded.count(m)) << m << " is never expanded";
  for (const auto& m : expanded) EXPECT_TRUE(macros.count(m)) << m << " is not in the header";
}
