// libFuzzer target: the input is an SQLite file, handed to ccv_nnc_tensor_read
// as a caller's database would be. Every read must return CCV_IO_FINAL with a
// tensor or CCV_IO_ERROR with a message; ASan watches the rest.
//
// The bytes are loaded with sqlite3_deserialize (SQLite's in-memory VFS, the
// same page reader as a file) rather than written to disk, for speed. Each
// tensor named in the file (at most 4) is read three ways: into a new tensor,
// metadata only, and into a given tensor of the stored shape.
#include <sqlite3.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_db.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

void read_all_ways(sqlite3* db, const char* name) {
  ccv_nnc_tensor_t* t = nullptr;
  const int rc = ccv_nnc_tensor_read(db, name, nullptr, 0, nullptr, &t);
  check((rc == CCV_IO_FINAL) == (t != nullptr));
  if (rc != CCV_IO_FINAL) check(ccv_nnc_error_message()[0] != '\0');
  ccv_nnc_tensor_t* h = nullptr;
  if (ccv_nnc_tensor_read(db, name, nullptr, CCV_NNC_TENSOR_READ_METADATA_ONLY, nullptr, &h) == CCV_IO_FINAL) {
    check(h && !h->data.u8);
    ccv_nnc_tensor_free(h);
  }
  if (t) {
    // Read again into the tensor just made: the same bytes must come back.
    ccv_nnc_tensor_t* copy = ccv_nnc_tensor_new(nullptr, t->info, 0);
    check(copy != nullptr);
    ccv_nnc_tensor_t* into = copy;
    check(ccv_nnc_tensor_read(db, name, nullptr, 0, nullptr, &into) == CCV_IO_FINAL && into == copy);
    // The elements only: what follows them (allocation padding) holds no data.
    check(std::memcmp(copy->data.u8, t->data.u8, ccv_nnc_tensor_data_size_without_padding(t->info)) == 0);
    ccv_nnc_tensor_free(copy);
    ccv_nnc_tensor_free(t);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sqlite3* db = nnc_fuzz::open_bytes(data, size);
  if (!db) return 0;
  std::vector<std::string> names;
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT name FROM tensors LIMIT 4", -1, &s, nullptr) == SQLITE_OK)
    while (sqlite3_step(s) == SQLITE_ROW)
      if (const unsigned char* n = sqlite3_column_text(s, 0)) names.emplace_back(reinterpret_cast<const char*>(n));
  sqlite3_finalize(s);
  if (names.empty()) names.emplace_back("a");  // the refusal paths of a file without the table
  for (const std::string& n : names) read_all_ways(db, n.c_str());
  sqlite3_close(db);
  return 0;
}
