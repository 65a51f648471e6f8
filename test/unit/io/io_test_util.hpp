// Helpers for the persistence tests: temporary files, SQLite handles, random tensors.
#pragma once

#include <sqlite3.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "nnc/ccv_nnc.h"

namespace iotest {

// A file name in the temporary directory, removed (with SQLite's -wal, -shm
// and -journal files) on destruction.
class TempPath {
 public:
  TempPath() {
    const char* dir = std::getenv("TMPDIR");
    std::string templ = std::string(dir && *dir ? dir : "/tmp") + "/nnc-io-XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    const int fd = mkstemp(buf.data());
    if (fd >= 0) close(fd);
    path_ = buf.data();
    std::remove(path_.c_str());  // SQLite creates it
  }
  ~TempPath() {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::remove((path_ + suffix).c_str());
  }
  const char* c_str() const { return path_.c_str(); }
  const std::string& str() const { return path_; }

 private:
  std::string path_;
};

class Db {
 public:
  explicit Db(const std::string& path, int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) {
    if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
      sqlite3_close(db_);
      db_ = nullptr;
    }
  }
  ~Db() { sqlite3_close(db_); }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  sqlite3* get() const { return db_; }
  operator sqlite3*() const { return db_; }
  // Run SQL; returns SQLite's code.
  int exec(const std::string& sql) const { return sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr); }

 private:
  sqlite3* db_ = nullptr;
};

inline ccv_nnc_tensor_param_t params(int datatype, int format, std::vector<int> dims) {
  ccv_nnc_tensor_param_t p{};
  p.type = CCV_TENSOR_CPU_MEMORY;
  p.format = format;
  p.datatype = datatype;
  for (size_t i = 0; i < dims.size(); i++) p.dim[i] = dims[i];
  return p;
}

inline size_t element_size(int datatype) {
  switch (datatype) {
    case CCV_8U:
      return 1;
    case CCV_16F:
    case CCV_16BF:
      return 2;
    case CCV_32F:
    case CCV_32S:
      return 4;
    default:
      return 8;
  }
}

inline size_t count_of(const ccv_nnc_tensor_param_t& p) {
  size_t n = 1;
  for (int i = 0; i < CCV_NNC_MAX_DIM_ALLOC && p.dim[i]; i++) n *= static_cast<size_t>(p.dim[i]);
  return n;
}

inline size_t bytes_of(const ccv_nnc_tensor_param_t& p) { return count_of(p) * element_size(p.datatype); }

// A new tensor filled with random bytes (NaN patterns included: the
// comparisons are of bytes).
inline ccv_nnc_tensor_t* random_tensor(const ccv_nnc_tensor_param_t& p, std::mt19937_64& rng) {
  ccv_nnc_tensor_t* t = ccv_nnc_tensor_new(nullptr, p, 0);
  if (!t) return nullptr;
  const size_t n = bytes_of(p);
  for (size_t i = 0; i < n; i++) t->data.u8[i] = static_cast<unsigned char>(rng());
  return t;
}

}  // namespace iotest
