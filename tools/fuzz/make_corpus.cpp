// Seed corpus for the fuzz targets: DIR/tensor/ gets small SQLite files of
// tensors (every datatype, a view, an encoded entry, 512-byte pages so the
// files stay small) and DIR/graph/ the seed graph's record.
//
//   fuzz_make_corpus DIR
#include <sqlite3.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "nnc/ccv_nnc.h"
#include "fuzz_model.hpp"
#include "seed_graph.hpp"

namespace {

int xor_encode(const void* data, size_t size, int, const int*, int, void*, void* encoded, size_t* encoded_size,
               ccv_nnc_tensor_param_t*, unsigned int* identifier) {
  for (size_t i = 0; i < size; i++)
    static_cast<unsigned char*>(encoded)[i] = static_cast<const unsigned char*>(data)[i] ^ 0x5a;
  *encoded_size = size;
  *identifier = 1;
  return 1;
}

bool write_file(const std::string& path, const std::vector<ccv_nnc_tensor_param_t>& params, bool encode) {
  std::remove(path.c_str());
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) return false;
  sqlite3_exec(db, "PRAGMA page_size=512; PRAGMA journal_mode=DELETE", nullptr, nullptr, nullptr);
  ccv_nnc_tensor_io_option_t options{nullptr, xor_encode, nullptr};
  bool ok = true;
  for (size_t i = 0; i < params.size(); i++) {
    ccv_nnc_tensor_t* t = ccv_nnc_tensor_new(nullptr, params[i], 0);
    for (uint64_t j = 0; j < t->data_size; j++) t->data.u8[j] = static_cast<unsigned char>(j * 7 + i);
    const std::string name(1, static_cast<char>('a' + i));
    ok = ok && ccv_nnc_tensor_write(t, db, name.c_str(), encode ? &options : nullptr) == CCV_IO_FINAL;
    ccv_nnc_tensor_free(t);
  }
  sqlite3_close(db);
  return ok;
}

ccv_nnc_tensor_param_t tensor(int datatype, int format, std::vector<int> dims) {
  ccv_nnc_tensor_param_t p{};
  p.type = CCV_TENSOR_CPU_MEMORY;
  p.format = format;
  p.datatype = datatype;
  for (size_t i = 0; i < dims.size(); i++) p.dim[i] = dims[i];
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_corpus DIR\n");
    return 2;
  }
  ccv_nnc_init();
  const std::string dir = argv[1];
  mkdir(dir.c_str(), 0755);
  mkdir((dir + "/tensor").c_str(), 0755);
  mkdir((dir + "/graph").c_str(), 0755);
  mkdir((dir + "/model").c_str(), 0755);
  const int types[] = {CCV_32F, CCV_64F, CCV_16F, CCV_16BF, CCV_32S, CCV_64S, CCV_8U};
  bool ok = true;
  int n = 0;
  for (int dt : types)
    ok = ok &&
         write_file(dir + "/tensor/seed" + std::to_string(n++), {tensor(dt, CCV_TENSOR_FORMAT_NHWC, {3, 5})}, false);
  ok =
      ok && write_file(dir + "/tensor/seed" + std::to_string(n++),
                       {tensor(CCV_32F, CCV_TENSOR_FORMAT_NCHW, {2, 3, 4}), tensor(CCV_8U, CCV_TENSOR_FORMAT_CHWN, {7}),
                        tensor(CCV_64S, CCV_TENSOR_FORMAT_NHWC, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2})},
                       false);
  ok = ok &&
       write_file(dir + "/tensor/seed" + std::to_string(n++), {tensor(CCV_32F, CCV_TENSOR_FORMAT_NHWC, {300})}, false);
  ok = ok &&
       write_file(dir + "/tensor/seed" + std::to_string(n++), {tensor(CCV_16F, CCV_TENSOR_FORMAT_NHWC, {4, 4})}, true);

  const std::string graph_db = dir + "/graph.sqlite3";
  ok = ok && nnc_fuzz::write_seed_graph(graph_db.c_str());
  sqlite3* db = nullptr;
  sqlite3_stmt* s = nullptr;
  if (ok && sqlite3_open(graph_db.c_str(), &db) == SQLITE_OK &&
      sqlite3_prepare_v2(db, "SELECT data FROM graphs", -1, &s, nullptr) == SQLITE_OK &&
      sqlite3_step(s) == SQLITE_ROW) {
    FILE* f = std::fopen((dir + "/graph/seed0").c_str(), "wb");
    ok = f && std::fwrite(sqlite3_column_blob(s, 0), 1, static_cast<size_t>(sqlite3_column_bytes(s, 0)), f) ==
                  static_cast<size_t>(sqlite3_column_bytes(s, 0));
    if (f) std::fclose(f);
  } else {
    ok = false;
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((graph_db + suffix).c_str());
  // Model checkpoints: parameters only, then with the minimiser's momenta.
  ccv_cnnp_model_t* model = nnc_fuzz::make_fuzz_model();
  ok = ok && nnc_fuzz::write_fuzz_model(model, (dir + "/model/seed0").c_str());
  nnc_fuzz::step_fuzz_model(model);
  ok = ok && nnc_fuzz::write_fuzz_model(model, (dir + "/model/seed1").c_str());
  ccv_cnnp_model_free(model);
  std::printf("%s: %d tensor files, 1 graph record and 2 model checkpoints in %s\n", ok ? "done" : "FAILED", n, dir.c_str());
  return ok ? 0 : 1;
}
