// Persistence of tensors in SQLite: the C++ interface behind
// ccv_nnc_tensor_write / _read, for other modules (the model writer in
// lib/cnnp) that write many tensors as one checkpoint.
//
//   nnc::io::Database db = nnc::io::open_checkpoint("run.sqlite3");
//   {
//     nnc::io::Transaction tx(db.get());       // all or nothing
//     nnc::io::write_tensor(db.get(), "w1", w1, nullptr);
//     nnc::io::write_tensor(db.get(), "b1", b1, nullptr);
//     tx.commit();                             // without it: rolled back
//   }
//   nnc::io::read_tensor_into(db.get(), "w1", w1, nullptr);
//
// Every function throws nnc::Error (CCV_NNC_EXEC_INVALID, with a message
// naming the tensor) on bad input, a corrupt or foreign file, or an SQLite
// failure; nothing is left half-written, and a tensor read into is left
// untouched on failure.
//
// The file format (schema 1): one table
//   tensors(name TEXT PRIMARY KEY, schema INTEGER, type INTEGER, format INTEGER,
//           datatype INTEGER, dims BLOB, identifier INTEGER, checksum INTEGER, data BLOB)
// dims: the sizes as little-endian int32, outermost first (1 to 12 of them);
// data: the elements packed row-major in little-endian byte order, or what the
// encode hook made of them when identifier is not 0; checksum: XXH3-64 of the
// header fields and the data blob (see checksum_of in tensor_io.cpp), stored
// as a signed 64-bit integer.
#pragma once

#include <memory>
#include <string>

#include "nnc/ccv_nnc.h"

struct sqlite3;

namespace nnc::io {

// The schema this code writes and the only one it reads.
constexpr int kSchema = 1;

struct SqliteCloser {
  void operator()(sqlite3* db) const noexcept;
};
// An owned SQLite connection (closed by its destructor).
using Database = std::unique_ptr<sqlite3, SqliteCloser>;

// Open (or create, when `create`) a file for checkpoints: WAL journal and
// synchronous=FULL, so that a committed checkpoint survives a kill or a power
// loss and a checkpoint being written when the process dies leaves the last
// committed one readable; 64 KiB pages for a new file; a 5 s busy timeout;
// cell_size_check on, so that a
// corrupt page is reported rather than read. Throws with SQLite's message for
// a missing file (without `create`) or a file that is not a database.
Database open_checkpoint(const char* path, bool create = true);
// Open an existing file read-only (nothing in it changes, the journal mode
// included); the same busy timeout and corruption checks.
Database open_read_only(const char* path);

// A transaction that nests: SAVEPOINT on construction, RELEASE on commit(),
// ROLLBACK TO and RELEASE on destruction without commit (an exception or an
// early return). Outermost, it is a whole transaction; inside a caller's, it
// commits only with the caller's.
class Transaction {
 public:
  explicit Transaction(sqlite3* db, const char* name = "nnc_io");
  ~Transaction();
  void commit();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

 private:
  sqlite3* db_;
  std::string name_;
  bool open_;
};

// Write `tensor` (any CPU tensor or view; a view as its packed contents; a
// GPU tensor through a copy to the host) under `name`, replacing an entry of
// that name. `options` may be NULL; its encode hook, when set, may transform
// the bytes. One transaction of its own (nested in the caller's, if any).
void write_tensor(sqlite3* db, const char* name, const ccv_nnc_tensor_t* tensor,
                  const ccv_nnc_tensor_io_option_t* options);

// Read `name` into `tensor` (a tensor or view whose shape and data type must
// match the stored ones; the format is not compared). `tensor` is untouched
// when the read fails.
void read_tensor_into(sqlite3* db, const char* name, ccv_nnc_tensor_t* tensor,
                      const ccv_nnc_tensor_io_option_t* options);

// Read `name` into a new tensor (freed by the caller with ccv_nnc_tensor_free).
// `params`, when not NULL, sets where it lives (its type); its format, data
// type and sizes, where not 0, must match the stored ones. With
// CCV_NNC_TENSOR_READ_METADATA_ONLY in flags the tensor is a header without
// data (the data blob is neither read nor checked).
ccv_nnc_tensor_t* read_tensor(sqlite3* db, const char* name, const ccv_nnc_tensor_io_option_t* options, int flags,
                              const ccv_nnc_tensor_param_t* params);

// Whether the database holds a tensor of that name (false without the table).
bool has_tensor(sqlite3* db, const char* name);

// The bodies of ccv_nnc_symbolic_graph_write / _read (graph_io.cpp describes
// the format and what is refused). read_graph sets its outputs only on
// success; binds_ref and bind_size_ref may both be NULL.
void write_graph(const ccv_nnc_symbolic_graph_t* graph, const ccv_nnc_tensor_bind_t* binds, int bind_size,
                 const char* fn);
void read_graph(const char* fn, ccv_nnc_symbolic_graph_t** graph_ref, ccv_nnc_tensor_bind_t** binds_ref,
                int* bind_size_ref);

}  // namespace nnc::io
