// The model the model-reading fuzz target reads into, and its seed writer:
// dense(2) with a bias over [1, 3] inputs, SGD with momentum (so a checkpoint
// after one step holds minimiser state too).
#pragma once

#include <sqlite3.h>

#include <cstdio>
#include <cstring>

#include "nnc/ccv_nnc.h"

namespace nnc_fuzz {

// The model's input: one row of 3 features.
inline ccv_nnc_tensor_param_t fuzz_model_input() {
  ccv_nnc_tensor_param_t in{};
  in.type = CCV_TENSOR_CPU_MEMORY;
  in.format = CCV_TENSOR_FORMAT_NHWC;
  in.datatype = CCV_32F;
  in.dim[0] = 1;
  in.dim[1] = 3;
  return in;
}

inline ccv_cnnp_model_t* make_fuzz_model() {
  ccv_cnnp_model_t* dense = ccv_cnnp_dense(2, 0, 0, 1, "fc");
  ccv_cnnp_model_t* m = ccv_cnnp_sequential_new(&dense, 1, 1, "fuzz");
  const ccv_nnc_tensor_param_t in = fuzz_model_input();
  ccv_nnc_cmd_param_t p{};
  p.size.dim[0] = p.size.dim[1] = p.size.dim[2] = 1;
  p.sgd.rate = 0.1f, p.sgd.scale = 1, p.sgd.momentum = 0.9f;
  ccv_nnc_cmd_param_t q{};
  q.size.dim[0] = q.size.dim[1] = q.size.dim[2] = 1;
  q.label_smoothing.trim1 = 1;
  ccv_cnnp_model_compile(m, &in, 1, ccv_nnc_cmd(CCV_NNC_SGD_FORWARD, nullptr, p, 0),
                         ccv_nnc_cmd(CCV_NNC_SOFTMAX_CROSSENTROPY_FORWARD, nullptr, q, 0));
  return m;
}

// One training step, so that the model holds momenta.
inline void step_fuzz_model(ccv_cnnp_model_t* m) {
  const ccv_nnc_tensor_param_t in = fuzz_model_input();
  ccv_nnc_tensor_param_t lp = in;
  lp.dim[1] = 0;
  ccv_nnc_tensor_t* x = ccv_nnc_tensor_new(nullptr, in, 0);
  ccv_nnc_tensor_t* l = ccv_nnc_tensor_new(nullptr, lp, 0);
  for (int i = 0; i < 3; i++) x->data.f32[i] = 0.5f * static_cast<float>(i) - 0.25f;
  l->data.f32[0] = 1;
  ccv_cnnp_model_fit(m, &x, 1, &l, 1, nullptr, 0, nullptr, nullptr);
  ccv_nnc_tensor_free(x);
  ccv_nnc_tensor_free(l);
}

// A checkpoint of the model in a file of small pages (small seeds).
inline bool write_fuzz_model(ccv_cnnp_model_t* m, const char* path) {
  std::remove(path);
  sqlite3* db = nullptr;
  if (sqlite3_open(path, &db) != SQLITE_OK) {
    sqlite3_close(db);
    return false;
  }
  sqlite3_exec(db, "PRAGMA page_size=512; PRAGMA journal_mode=DELETE", nullptr, nullptr, nullptr);
  const bool ok = ccv_cnnp_model_write(m, db, "", nullptr) == CCV_IO_FINAL;
  sqlite3_close(db);
  return ok;
}

}  // namespace nnc_fuzz
