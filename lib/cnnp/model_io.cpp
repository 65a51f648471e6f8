// Persistence of a model's parameters and minimiser state (lib/io's tensors).
//
// Each parameter is a tensor named "<name>/<parameter name>" (just the
// parameter name when `name` is empty), each of its minimiser state tensors
// "<...>#<k>". A write is one transaction (nested in the caller's, so a caller
// can add its own tensors to the same checkpoint atomically). A read loads
// every tensor into a temporary first and copies only when all were read, so
// a failed read leaves the model as it was.
#include <sqlite3.h>

#include "cnnp/layers.hpp"
#include "cnnp/model.hpp"
#include "core/error.hpp"
#include "core/export.hpp"
#include "io/io.hpp"
#include "nnc/ccv_nnc_easy.h"

using namespace nnc;
using namespace nnc::cnnp;

namespace {

std::string key_of(const char* name, const std::string& param, int aux) {
  std::string k = name && *name ? format("%s/%s", name, param.c_str()) : param;
  return aux >= 0 ? format("%s#%d", k.c_str(), aux) : k;
}

void write_model(const Model* m, sqlite3* db, const char* name, const ccv_nnc_tensor_io_option_t* options) {
  const char* what = "ccv_cnnp_model_write";
  NNC_CHECK(m, "%s: the model is NULL", what);
  NNC_CHECK(db, "%s: the database handle is NULL", what);
  NNC_CHECK(m->compiled, "%s: model %s is not compiled, so it has no parameters yet", what, model_label(*m).c_str());
  settle(const_cast<Model*>(m));  // steps queued on a GPU stream update the parameters
  io::Transaction tx(db, "nnc_model");
  for (const Param& p : m->compiled->params) {
    const std::string k = key_of(name, p.name, -1);
    if (m->writer) {
      const int r = m->writer(p.tensor.get(), nullptr, db, k.c_str(), options);
      if (r != CCV_IO_FINAL && r != 0) fail(CCV_NNC_EXEC_INVALID, "%s: the model's writer failed on %s (%d)", what, k.c_str(), r);
    } else {
      io::write_tensor(db, k.c_str(), p.tensor.get(), options);
    }
    for (size_t a = 0; a < p.aux.size(); a++) io::write_tensor(db, key_of(name, p.name, static_cast<int>(a)).c_str(), p.aux[a].get(), options);
  }
  tx.commit();
}

void read_model(sqlite3* db, const char* name, const ccv_nnc_tensor_io_option_t* options, const Model* cm) {
  const char* what = "ccv_cnnp_model_read";
  NNC_CHECK(cm, "%s: the model is NULL", what);
  NNC_CHECK(db, "%s: the database handle is NULL", what);
  Model* m = const_cast<Model*>(cm);
  NNC_CHECK(m->compiled, "%s: model %s is not compiled; compile it first so its parameters have shapes", what, model_label(*m).c_str());
  settle(m);
  std::vector<std::pair<ccv_nnc_tensor_t*, TensorRef>> loaded;  // target, what was read
  for (Param& p : m->compiled->params) {
    const std::string k = key_of(name, p.name, -1);
    TensorRef t;
    if (m->reader) {
      ccv_nnc_tensor_t* out = nullptr;
      const int r = m->reader(db, k.c_str(), options, p.tensor->info, &out);
      NNC_CHECK(out && (r == CCV_IO_FINAL || r == 0), "%s: the model's reader gave nothing for %s (%d)", what, k.c_str(), r);
      t = TensorRef(out, [](ccv_nnc_tensor_t* x) { ccv_nnc_tensor_free(x); });
    } else {
      NNC_CHECK(io::has_tensor(db, k.c_str()), "%s: the file has no tensor %s (parameter %s of model %s)", what, k.c_str(), p.name.c_str(),
                model_label(*m).c_str());
      t = new_tensor(p.tensor->info);
      io::read_tensor_into(db, k.c_str(), t.get(), options);
    }
    NNC_CHECK(ccv_nnc_tensor_count(t->info) == ccv_nnc_tensor_count(p.tensor->info), "%s: %s holds %zu elements, parameter %s has %zu", what,
              k.c_str(), static_cast<size_t>(ccv_nnc_tensor_count(t->info)), p.name.c_str(), static_cast<size_t>(ccv_nnc_tensor_count(p.tensor->info)));
    loaded.emplace_back(p.tensor.get(), t);
    // Minimiser state, when the file has it and the model keeps as much.
    for (size_t a = 0; a < p.aux.size(); a++) {
      const std::string ka = key_of(name, p.name, static_cast<int>(a));
      if (!io::has_tensor(db, ka.c_str())) continue;
      TensorRef s = new_tensor(p.aux[a]->info);
      io::read_tensor_into(db, ka.c_str(), s.get(), options);
      loaded.emplace_back(p.aux[a].get(), s);
    }
  }
  for (auto& [dst, src] : loaded) copy_values(src.get(), dst, what);
  for (Param& p : m->compiled->params) p.initialized = true;
  params_written(m);
}

}  // namespace

NNC_API int ccv_cnnp_model_write(const ccv_cnnp_model_t* const model, void* const handle, const char* const name,
                                 const ccv_nnc_tensor_io_option_t* const options) {
  return guard<int>(CCV_IO_ERROR, [&] {
    write_model(model, static_cast<sqlite3*>(handle), name, options);
    return static_cast<int>(CCV_IO_FINAL);
  });
}

NNC_API void ccv_cnnp_model_write_to_file(ccv_cnnp_model_t* const model, const char* const fn, const ccv_nnc_tensor_io_option_t* const options) {
  guard_void([&] {
    NNC_CHECK(fn, "ccv_cnnp_model_write_to_file: no file name");
    NNC_CHECK(model, "ccv_cnnp_model_write_to_file: the model is NULL");
    io::Database db = io::open_checkpoint(fn, true);
    write_model(model, db.get(), "", options);
  });
}

NNC_API void ccv_cnnp_model_set_io(ccv_cnnp_model_t* const model, ccv_cnnp_model_io_reader_f reader, ccv_cnnp_model_io_writer_f writer) {
  guard_void([&] {
    NNC_CHECK(model, "ccv_cnnp_model_set_io: the model is NULL");
    model->reader = reader;
    model->writer = writer;
  });
}

NNC_API int ccv_cnnp_model_read(void* const handle, const char* const name, const ccv_nnc_tensor_io_option_t* const options,
                                const ccv_cnnp_model_t* const model_out) {
  return guard<int>(CCV_IO_ERROR, [&] {
    read_model(static_cast<sqlite3*>(handle), name, options, model_out);
    return static_cast<int>(CCV_IO_FINAL);
  });
}

NNC_API void ccv_cnnp_model_read_from_file(const char* const fn, const ccv_nnc_tensor_io_option_t* const options, const ccv_cnnp_model_t* const model_out) {
  guard_void([&] {
    NNC_CHECK(fn, "ccv_cnnp_model_read_from_file: no file name");
    io::Database db = io::open_read_only(fn);
    read_model(db.get(), "", options, model_out);
  });
}
