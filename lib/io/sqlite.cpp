#include "io/sqlite.hpp"

#include "io/io.hpp"

namespace nnc::io {

void sqlite_fail(sqlite3* db, const std::string& what) {
  const int code = db ? sqlite3_extended_errcode(db) : SQLITE_MISUSE;
  const char* message = db ? sqlite3_errmsg(db) : "no database";
  std::string hint;
  switch (code & 0xff) {
    case SQLITE_NOTADB:
      hint = "; the file is not an SQLite database";
      break;
    case SQLITE_CORRUPT:
      hint = "; the file is corrupt";
      break;
    case SQLITE_READONLY:
      hint = "; the database was opened read-only";
      break;
    case SQLITE_BUSY:
      hint = "; another connection holds the database";
      break;
    default:
      break;
  }
  fail(CCV_NNC_EXEC_INVALID, "%s: SQLite: %s (%s)%s", what.c_str(), message, sqlite3_errstr(code), hint.c_str());
}

void sqlite_check(sqlite3* db, int rc, const std::string& what) {
  if (rc != SQLITE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE) sqlite_fail(db, what);
}

void exec_sql(sqlite3* db, const char* sql, const std::string& what) {
  sqlite_check(db, sqlite3_exec(db, sql, nullptr, nullptr, nullptr), what);
}

Statement::Statement(sqlite3* db, const char* sql, const std::string& what) : db_(db), what_(what) {
  sqlite_check(db, sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr), what);
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  sqlite_fail(db_, what_);
}

void SqliteCloser::operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }

Database open_checkpoint(const char* path, bool create) {
  NNC_CHECK(path, "open_checkpoint: path is NULL");
  sqlite3* raw = nullptr;
  const int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
  const int rc = sqlite3_open_v2(path, &raw, flags, nullptr);
  Database db(raw);  // closes the handle SQLite returns even on failure
  const std::string what = std::string("opening '") + path + "'";
  if (rc != SQLITE_OK) {
    if (!raw) throw std::bad_alloc();
    sqlite_fail(raw, what);
  }
  sqlite3_busy_timeout(raw, 5000);
  sqlite3_extended_result_codes(raw, 1);
  // The first statement reads the header: a file that is not a database fails
  // here. 64 KiB pages (taken only by a new, empty file) cut the per-page work
  // on tensor-sized blobs: half the write and read time of the 4 KiB default
  // for the reference network's 3.4 MB (tools/bench-io).
  exec_sql(raw, "PRAGMA page_size=65536", what);
  exec_sql(raw, "PRAGMA journal_mode=WAL", what);
  exec_sql(raw, "PRAGMA synchronous=FULL", what);
  exec_sql(raw, "PRAGMA cell_size_check=ON", what);
  return db;
}

Database open_read_only(const char* path) {
  NNC_CHECK(path, "open_read_only: path is NULL");
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path, &raw, SQLITE_OPEN_READONLY, nullptr);
  Database db(raw);
  const std::string what = std::string("opening '") + path + "'";
  if (rc != SQLITE_OK) {
    if (!raw) throw std::bad_alloc();
    sqlite_fail(raw, what);
  }
  sqlite3_busy_timeout(raw, 5000);
  sqlite3_extended_result_codes(raw, 1);
  exec_sql(raw, "PRAGMA cell_size_check=ON", what);
  // Reads the header: a file that is not a database fails here.
  exec_sql(raw, "SELECT count(*) FROM sqlite_master", what);
  return db;
}

namespace {
std::string savepoint_sql(const char* verb, const std::string& name) {
  std::string sql = verb;
  sql += " \"";
  sql += name;
  sql += '"';
  return sql;
}
}  // namespace

Transaction::Transaction(sqlite3* db, const char* name) : db_(db), name_(name ? name : "nnc_io"), open_(false) {
  NNC_CHECK(db, "transaction: the database handle is NULL");
  NNC_CHECK(name_.find('"') == std::string::npos, "transaction: the name must not contain a double quote");
  exec_sql(db_, savepoint_sql("SAVEPOINT", name_).c_str(), "starting a transaction");
  open_ = true;
}

void Transaction::commit() {
  NNC_CHECK(open_, "transaction: committed twice");
  exec_sql(db_, savepoint_sql("RELEASE", name_).c_str(), "committing a transaction");
  open_ = false;
}

Transaction::~Transaction() {
  if (!open_) return;
  // Best effort: if SQLite already rolled the transaction back (some errors
  // do), these fail harmlessly.
  sqlite3_exec(db_, savepoint_sql("ROLLBACK TO", name_).c_str(), nullptr, nullptr, nullptr);
  sqlite3_exec(db_, savepoint_sql("RELEASE", name_).c_str(), nullptr, nullptr, nullptr);
}

}  // namespace nnc::io
