// Small RAII helpers over SQLite's C API for lib/io: a prepared statement
// that finalises itself, and failures turned into nnc::Error with SQLite's
// own message and the context of the call.
#pragma once

#include <sqlite3.h>

#include <string>

#include "core/error.hpp"

namespace nnc::io {

// Throw CCV_NNC_EXEC_INVALID: "<what>: <SQLite message> (<code name>)".
[[noreturn]] void sqlite_fail(sqlite3* db, const std::string& what);
// Throw with a readable explanation when `rc` is an error (SQLITE_OK,
// SQLITE_ROW and SQLITE_DONE pass).
void sqlite_check(sqlite3* db, int rc, const std::string& what);
// Run SQL without results.
void exec_sql(sqlite3* db, const char* sql, const std::string& what);

class Statement {
 public:
  Statement(sqlite3* db, const char* sql, const std::string& what);
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  sqlite3_stmt* get() const { return stmt_; }
  // sqlite3_step; true for a row, false when done; throws on an error.
  bool step();

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  std::string what_;
};

}  // namespace nnc::io
