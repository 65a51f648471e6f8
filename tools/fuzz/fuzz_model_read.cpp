// libFuzzer target: the input is an SQLite file holding a model checkpoint,
// read with ccv_cnnp_model_read into a compiled model (fuzz_model.hpp). The
// read must succeed or fail with a message, and a failed read must leave
// every parameter as it was (reads are all-or-nothing); ASan watches the rest.
#include <sqlite3.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "fuzz_db.hpp"
#include "fuzz_model.hpp"
#include "nnc/ccv_nnc_easy.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

ccv_cnnp_model_t* model() {
  static ccv_cnnp_model_t* m = [] {
    ccv_nnc_init();
    ccv_cnnp_model_t* x = nnc_fuzz::make_fuzz_model();
    nnc_fuzz::step_fuzz_model(x);
    return x;
  }();
  return m;
}

std::vector<float> parameters(ccv_cnnp_model_t* m) {
  // Each ccv_cnnp_model_parameters call adds an io the model keeps until it
  // is freed: make them once.
  static std::vector<ccv_cnnp_model_io_t> ios = [m] {
    std::vector<ccv_cnnp_model_io_t> r;
    for (int i = 0; i < ccv_cnnp_model_parameter_count(m); i++) r.push_back(ccv_cnnp_model_parameters(m, ALL_PARAMETERS, i));
    return r;
  }();
  std::vector<float> v;
  for (ccv_cnnp_model_io_t p : ios) {
    ccv_nnc_tensor_t* t = ccv_nnc_tensor_new(nullptr, ccv_cnnp_model_parameter_tensor_params(m, p), 0);
    ccv_cnnp_model_parameter_copy(m, p, t);
    v.insert(v.end(), t->data.f32, t->data.f32 + ccv_nnc_tensor_count(t->info));
    ccv_nnc_tensor_free(t);
  }
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ccv_cnnp_model_t* m = model();
  sqlite3* db = nnc_fuzz::open_bytes(data, size);
  if (!db) return 0;
  const std::vector<float> before = parameters(m);
  const int rc = ccv_cnnp_model_read(db, "", nullptr, m);
  check(rc == CCV_IO_FINAL || rc == CCV_IO_ERROR);
  if (rc != CCV_IO_FINAL) {
    check(ccv_nnc_error_message()[0] != '\0');
    const std::vector<float> after = parameters(m);
    check(after.size() == before.size() && std::memcmp(after.data(), before.data(), after.size() * sizeof(float)) == 0);
  }
  sqlite3_close(db);
  return 0;
}
