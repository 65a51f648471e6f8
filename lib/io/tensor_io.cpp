// Tensors in SQLite (the format is described in io.hpp).
//
// Reading trusts nothing in the file: the schema number, the header fields
// and the blob's length are checked before anything is allocated, and the
// checksum before a byte reaches the caller. A tensor read into is written
// only once the data is known good, so a failed read leaves it as it was.
#include <xxhash.h>

#include <bit>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "core/error.hpp"
#include "core/tensor.hpp"
#include "io/io.hpp"
#include "io/sqlite.hpp"

static_assert(std::endian::native == std::endian::little,
              "the file format stores little-endian bytes as they are in memory");

namespace nnc::io {

namespace {

constexpr const char* kCreateTable =
    "CREATE TABLE IF NOT EXISTS tensors (name TEXT PRIMARY KEY NOT NULL, schema INTEGER NOT NULL, "
    "type INTEGER NOT NULL, format INTEGER NOT NULL, datatype INTEGER NOT NULL, dims BLOB NOT NULL, "
    "identifier INTEGER NOT NULL, checksum INTEGER NOT NULL, data BLOB)";

struct TensorDeleter {
  void operator()(ccv_nnc_tensor_t* t) const noexcept { tensor_free(t); }
};
using Owned = std::unique_ptr<ccv_nnc_tensor_t, TensorDeleter>;

// What a row says about its tensor.
struct Header {
  int type = 0, format = 0, datatype = 0, nd = 0;
  int dim[kMaxDim] = {};
  uint32_t identifier = 0;
  ccv_nnc_tensor_param_t params() const {
    ccv_nnc_tensor_param_t p{};
    p.type = type;
    p.format = format;
    p.datatype = datatype;
    for (int i = 0; i < nd; i++) p.dim[i] = dim[i];
    return p;
  }
};

// XXH3-64 of the data, seeded with a hash of the header fields, so that a
// changed shape or type is caught as surely as a changed byte.
uint64_t checksum_of(const Header& h, const void* data, size_t size) {
  int32_t words[5 + kMaxDim] = {kSchema, h.type, h.format, h.datatype, h.nd};
  for (int i = 0; i < h.nd; i++) words[5 + i] = h.dim[i];
  uint64_t seed = XXH3_64bits(words, sizeof(int32_t) * static_cast<size_t>(5 + h.nd));
  seed ^= h.identifier;
  return XXH3_64bits_withSeed(data, size, seed);
}

Header header_of(const ccv_nnc_tensor_param_t& p) {
  Header h;
  h.type = p.type;
  h.format = p.format;
  h.datatype = CCV_GET_DATA_TYPE(p.datatype);
  h.nd = nd_of(p.dim);
  for (int i = 0; i < h.nd; i++) h.dim[i] = p.dim[i];
  return h;
}

// DATA_TRANSFER between a host and a device tensor (the CUDA module's kernel).
void transfer(ccv_nnc_tensor_t* from, ccv_nnc_tensor_t* to, const std::string& what) {
  const ccv_nnc_cmd_t cmd = ccv_nnc_cmd(CCV_NNC_DATA_TRANSFER_FORWARD, nullptr, ccv_nnc_cmd_auto, 0);
  const int rc = ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, &from, 1, &to, 1, nullptr);
  if (rc != CCV_NNC_EXEC_SUCCESS)
    fail(rc, "%s: copying between host and device failed: %s", what.c_str(), ccv_nnc_error_message());
}

void check_name(sqlite3* db, const char* name, const char* op) {
  NNC_CHECK(db, "%s: the database handle is NULL", op);
  NNC_CHECK(name, "%s: the tensor name is NULL", op);
}

// The row of `name`, checked: schema, header, and the blob's length against
// the shape. Throws for a foreign database or a missing tensor.
struct Entry {
  Header header;
  sqlite3_int64 rowid = 0;
  sqlite3_int64 data_size = 0;
  bool has_data = false;
  uint64_t checksum = 0;
  size_t bytes = 0;  // of the decoded tensor
};

Entry lookup(sqlite3* db, const char* name, const std::string& what) {
  sqlite3_stmt* raw = nullptr;
  const int rc = sqlite3_prepare_v2(
      db,
      "SELECT rowid, schema, type, format, datatype, dims, identifier, checksum, length(data), typeof(data) "
      "FROM main.tensors WHERE name = ?1",
      -1, &raw, nullptr);
  if (rc != SQLITE_OK) {
    const std::string message = sqlite3_errmsg(db);
    sqlite3_finalize(raw);
    if (message.rfind("no such table", 0) == 0)
      fail(CCV_NNC_EXEC_INVALID, "%s: the database has no NNC tensor table (an empty or foreign SQLite file)",
           what.c_str());
    if (message.rfind("no such column", 0) == 0)
      fail(CCV_NNC_EXEC_INVALID,
           "%s: the database's 'tensors' table is not NNC's (%s): a foreign file, or one from another program",
           what.c_str(), message.c_str());
    sqlite_fail(db, what);
  }
  std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> stmt(raw, sqlite3_finalize);
  sqlite_check(db, sqlite3_bind_text(raw, 1, name, -1, SQLITE_TRANSIENT), what);
  const int step = sqlite3_step(raw);
  if (step == SQLITE_DONE) fail(CCV_NNC_EXEC_INVALID, "%s: no tensor of that name in the database", what.c_str());
  if (step != SQLITE_ROW) sqlite_fail(db, what);
  for (int c = 0; c <= 7; c++) {
    const int want = c == 5 ? SQLITE_BLOB : SQLITE_INTEGER;
    NNC_CHECK(sqlite3_column_type(raw, c) == want, "%s: column %s has the wrong type; the entry is corrupt or foreign",
              what.c_str(), sqlite3_column_name(raw, c));
  }
  Entry e;
  e.rowid = sqlite3_column_int64(raw, 0);
  const sqlite3_int64 schema = sqlite3_column_int64(raw, 1);
  NNC_CHECK(schema == kSchema, "%s: the entry has schema %lld; this version of NNC reads schema %d", what.c_str(),
            static_cast<long long>(schema), kSchema);
  auto as_int = [&](int c) -> int {
    const sqlite3_int64 v = sqlite3_column_int64(raw, c);
    NNC_CHECK(v >= std::numeric_limits<int>::min() && v <= std::numeric_limits<int>::max(),
              "%s: %s %lld is out of range; the entry is corrupt", what.c_str(), sqlite3_column_name(raw, c),
              static_cast<long long>(v));
    return static_cast<int>(v);
  };
  Header& h = e.header;
  h.type = as_int(2);
  h.format = as_int(3);
  h.datatype = as_int(4);
  const int dims_bytes = sqlite3_column_bytes(raw, 5);
  NNC_CHECK(dims_bytes > 0 && dims_bytes % 4 == 0 && dims_bytes / 4 <= kMaxDim,
            "%s: the shape field holds %d bytes; expected 1 to %d sizes of 4 bytes", what.c_str(), dims_bytes, kMaxDim);
  h.nd = dims_bytes / 4;
  std::memcpy(h.dim, sqlite3_column_blob(raw, 5), static_cast<size_t>(dims_bytes));
  const sqlite3_int64 identifier = sqlite3_column_int64(raw, 6);
  NNC_CHECK(identifier >= 0 && identifier <= std::numeric_limits<uint32_t>::max(),
            "%s: encoder identifier %lld is out of range; the entry is corrupt", what.c_str(),
            static_cast<long long>(identifier));
  h.identifier = static_cast<uint32_t>(identifier);
  e.checksum = static_cast<uint64_t>(sqlite3_column_int64(raw, 7));
  const unsigned char* data_type = sqlite3_column_text(raw, 9);
  e.has_data = data_type && std::strcmp(reinterpret_cast<const char*>(data_type), "blob") == 0;
  e.data_size = e.has_data ? sqlite3_column_int64(raw, 8) : 0;
  for (int i = 0; i < h.nd; i++)
    NNC_CHECK(h.dim[i] > 0, "%s: stored dimension %d is %d; the entry is corrupt", what.c_str(), i, h.dim[i]);
  // validate_params bounds the element count before multiplying, so a forged
  // shape cannot overflow the size computation.
  e.bytes = validate_params(h.params(), (what + ": stored header").c_str());
  NNC_CHECK(e.has_data, "%s: the entry has no data blob", what.c_str());
  if (h.identifier == 0)
    NNC_CHECK(static_cast<uint64_t>(e.data_size) == e.bytes,
              "%s: the data blob holds %lld bytes, but a %s tensor of %s needs %zu; the entry is truncated or corrupt",
              what.c_str(), static_cast<long long>(e.data_size), datatype_name(h.datatype), shape_string(h.dim).c_str(),
              e.bytes);
  else
    // The encoder was given a buffer the size of the raw data.
    NNC_CHECK(static_cast<uint64_t>(e.data_size) <= e.bytes,
              "%s: the encoded blob holds %lld bytes, more than the %zu of the tensor it encodes; the entry is corrupt",
              what.c_str(), static_cast<long long>(e.data_size), e.bytes);
  return e;
}

// The blob of an entry into `out` (exactly e.data_size bytes), checksum verified.
void read_blob(sqlite3* db, const Entry& e, void* out, const std::string& what) {
  if (e.data_size > 0) {
    sqlite3_blob* blob = nullptr;
    NNC_CHECK(e.data_size <= std::numeric_limits<int>::max(), "%s: a blob of %lld bytes is beyond SQLite's limits",
              what.c_str(), static_cast<long long>(e.data_size));
    if (sqlite3_blob_open(db, "main", "tensors", "data", e.rowid, 0, &blob) != SQLITE_OK) {
      sqlite3_blob_close(blob);
      sqlite_fail(db, what);
    }
    NNC_CHECK(sqlite3_blob_bytes(blob) == e.data_size, "%s: the data blob changed size while being read", what.c_str());
    // SQLite's blobs stop at SQLITE_MAX_LENGTH (1e9 bytes by default), inside an int.
    const int rc = sqlite3_blob_read(blob, out, static_cast<int>(e.data_size), 0);
    sqlite3_blob_close(blob);
    if (rc != SQLITE_OK) sqlite_fail(db, what);
  }
  NNC_CHECK(checksum_of(e.header, out, static_cast<size_t>(e.data_size)) == e.checksum,
            "%s: checksum mismatch: the stored data is corrupt", what.c_str());
}

// A new packed CPU tensor holding the entry's decoded data. `final_params`
// is what the hook is told the tensor will become.
Owned read_packed(sqlite3* db, const Entry& e, const ccv_nnc_tensor_io_option_t* options,
                  const ccv_nnc_tensor_param_t& final_params, const std::string& what) {
  ccv_nnc_tensor_param_t p = e.header.params();
  p.type = CCV_TENSOR_CPU_MEMORY;
  const bool decoder = e.header.identifier != 0 && options && options->decode;
  // Encoded bytes handed out as if raw would be wrong data without a word;
  // only a decode hook that declines them says they may be used as they are.
  NNC_CHECK(e.header.identifier == 0 || decoder,
            "%s: the data was written through an encoder (identifier %u) and no decode hook was given", what.c_str(),
            e.header.identifier);
  Owned t(tensor_new(nullptr, p, 0));
  if (!decoder) {
    read_blob(db, e, t->data.u8, what);
    return t;
  }
  std::vector<unsigned char> encoded(static_cast<size_t>(e.data_size));
  read_blob(db, e, encoded.data(), what);
  ccv_nnc_tensor_t* given = t.get();
  ccv_nnc_tensor_t* out = given;
  size_t decoded_size = e.bytes;
  const int handled =
      options->decode(encoded.data(), encoded.size(), e.header.datatype, e.header.dim, e.header.nd, e.header.identifier,
                      options->context, final_params, &out, t->data.u8, &decoded_size);
  NNC_CHECK(out == given, "%s: the decode hook replaced the tensor it was given; NNC allocates it before decoding",
            what.c_str());
  if (handled) {
    NNC_CHECK(decoded_size == e.bytes, "%s: the decode hook produced %zu bytes; the tensor holds %zu", what.c_str(),
              decoded_size, e.bytes);
  } else {
    NNC_CHECK(encoded.size() == e.bytes,
              "%s: the decode hook declined identifier %u, and the %zu stored bytes are not the %zu of the raw tensor",
              what.c_str(), e.header.identifier, encoded.size(), e.bytes);
    std::memcpy(t->data.u8, encoded.data(), e.bytes);
  }
  return t;
}

}  // namespace

void write_tensor(sqlite3* db, const char* name, const ccv_nnc_tensor_t* tensor,
                  const ccv_nnc_tensor_io_option_t* options) {
  check_name(db, name, "ccv_nnc_tensor_write");
  const std::string what = format("writing tensor '%s'", name);
  NNC_CHECK(tensor, "%s: the tensor is NULL", what.c_str());
  Layout l = layout_of(tensor, (what + ": the tensor").c_str());
  ccv_nnc_tensor_param_t params = normalized_params(tensor->info);
  params.datatype = CCV_GET_DATA_TYPE(params.datatype);
  const size_t bytes = validate_params(params, what.c_str());
  NNC_CHECK(l.data, "%s: the tensor has no data (a header made with CCV_NO_DATA_ALLOC and no memory)", what.c_str());

  // The bytes to store: the tensor's own memory when it is packed on the host,
  // else a packed copy.
  Owned staging;
  std::vector<unsigned char> packed;
  const unsigned char* raw = l.data;
  if (l.memory == CCV_TENSOR_GPU_MEMORY) {
    ccv_nnc_tensor_param_t host = params;
    host.type = CCV_TENSOR_CPU_MEMORY;
    staging.reset(tensor_new(nullptr, host, 0));
    transfer(const_cast<ccv_nnc_tensor_t*>(tensor), staging.get(), what);
    raw = staging->data.u8;
  } else if (!l.packed()) {
    packed.resize(bytes);
    pack(l, packed.data());
    raw = packed.data();
  }

  Header h = header_of(params);
  const void* blob = raw;
  size_t blob_size = bytes;
  std::vector<unsigned char> encoded;
  if (options && options->encode) {
    encoded.resize(bytes);
    size_t encoded_size = bytes;
    ccv_nnc_tensor_param_t hook_params = params;
    unsigned int identifier = 0;
    const int handled = options->encode(raw, bytes, h.datatype, h.dim, h.nd, options->context, encoded.data(),
                                        &encoded_size, &hook_params, &identifier);
    if (handled) {
      NNC_CHECK(encoded_size <= bytes, "%s: the encode hook reports %zu bytes in a buffer of %zu", what.c_str(),
                encoded_size, bytes);
      NNC_CHECK(identifier != 0, "%s: the encode hook handled the data but left the identifier 0", what.c_str());
      hook_params = normalized_params(hook_params);
      hook_params.datatype = CCV_GET_DATA_TYPE(hook_params.datatype);
      validate_params(hook_params, (what + ": the parameters the encode hook set").c_str());
      h = header_of(hook_params);
      h.identifier = identifier;
      blob = encoded.data();
      blob_size = encoded_size;
    }
  }
  const uint64_t checksum = checksum_of(h, blob, blob_size);

  Transaction tx(db, "nnc_tensor_write");
  exec_sql(db, kCreateTable, what);
  Statement insert(db,
                   "INSERT OR REPLACE INTO main.tensors (name, schema, type, format, datatype, dims, identifier, "
                   "checksum, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                   what);
  sqlite3_stmt* s = insert.get();
  int32_t dims[kMaxDim];
  for (int i = 0; i < h.nd; i++) dims[i] = h.dim[i];
  sqlite_check(db, sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC), what);
  sqlite_check(db, sqlite3_bind_int(s, 2, kSchema), what);
  sqlite_check(db, sqlite3_bind_int(s, 3, h.type), what);
  sqlite_check(db, sqlite3_bind_int(s, 4, h.format), what);
  sqlite_check(db, sqlite3_bind_int(s, 5, h.datatype), what);
  sqlite_check(db, sqlite3_bind_blob(s, 6, dims, static_cast<int>(sizeof(int32_t)) * h.nd, SQLITE_STATIC), what);
  sqlite_check(db, sqlite3_bind_int64(s, 7, h.identifier), what);
  sqlite_check(db, sqlite3_bind_int64(s, 8, static_cast<sqlite3_int64>(checksum)), what);
  sqlite_check(db, sqlite3_bind_blob64(s, 9, blob, blob_size, SQLITE_STATIC), what);
  insert.step();
  tx.commit();
}

namespace {

// The tensor to create for a read, from the stored header and the caller's parameters.
ccv_nnc_tensor_param_t final_params_of(const Entry& e, const ccv_nnc_tensor_param_t* params, const std::string& what) {
  ccv_nnc_tensor_param_t p = e.header.params();
  if (!params) return p;
  p.type = params->type;
  NNC_CHECK(!params->format || params->format == p.format,
            "%s: tensor_params asks for format %s; the stored tensor is %s", what.c_str(), format_name(params->format),
            format_name(p.format));
  NNC_CHECK(!params->datatype || CCV_GET_DATA_TYPE(params->datatype) == p.datatype,
            "%s: tensor_params asks for data type %s; the stored tensor is %s (no conversion on read)", what.c_str(),
            datatype_name(params->datatype), datatype_name(p.datatype));
  NNC_CHECK(!params->dim[0] || same_shape(params->dim, p.dim),
            "%s: tensor_params asks for shape %s; the stored tensor is %s", what.c_str(),
            shape_string(params->dim).c_str(), shape_string(p.dim).c_str());
  return p;
}

}  // namespace

ccv_nnc_tensor_t* read_tensor(sqlite3* db, const char* name, const ccv_nnc_tensor_io_option_t* options, int flags,
                              const ccv_nnc_tensor_param_t* params) {
  check_name(db, name, "ccv_nnc_tensor_read");
  const std::string what = format("reading tensor '%s'", name);
  Transaction tx(db, "nnc_tensor_read");  // one snapshot for the header and the blob
  const Entry e = lookup(db, name, what);
  const ccv_nnc_tensor_param_t p = final_params_of(e, params, what);
  validate_params(p, (what + ": tensor_params").c_str());
  if (flags & CCV_NNC_TENSOR_READ_METADATA_ONLY) {
    Owned t(tensor_new(nullptr, p, CCV_NO_DATA_ALLOC));
    tx.commit();
    return t.release();
  }
  Owned device;
  if (CCV_TENSOR_GET_MEMORY(p.type) != CCV_TENSOR_CPU_MEMORY)
    device.reset(tensor_new(nullptr, p, 0));  // refused here, before reading, without CUDA
  Owned host = read_packed(db, e, options, p, what);
  tx.commit();
  if (!device) return host.release();
  transfer(host.get(), device.get(), what);
  return device.release();
}

void read_tensor_into(sqlite3* db, const char* name, ccv_nnc_tensor_t* tensor,
                      const ccv_nnc_tensor_io_option_t* options) {
  check_name(db, name, "ccv_nnc_tensor_read");
  const std::string what = format("reading tensor '%s'", name);
  NNC_CHECK(tensor, "%s: the tensor to read into is NULL", what.c_str());
  const Layout l = layout_of(tensor, (what + ": the tensor to read into").c_str());
  NNC_CHECK(l.data, "%s: the tensor to read into has no data", what.c_str());
  Transaction tx(db, "nnc_tensor_read");
  const Entry e = lookup(db, name, what);
  NNC_CHECK(same_shape(tensor->info.dim, e.header.dim), "%s: the tensor is %s, the stored one %s", what.c_str(),
            shape_string(tensor->info.dim).c_str(), shape_string(e.header.dim).c_str());
  NNC_CHECK(l.datatype == e.header.datatype, "%s: the tensor holds %s, the stored one %s (no conversion on read)",
            what.c_str(), datatype_name(l.datatype), datatype_name(e.header.datatype));
  Owned host = read_packed(db, e, options, normalized_params(tensor->info), what);
  tx.commit();
  if (l.memory != CCV_TENSOR_CPU_MEMORY) {
    transfer(host.get(), tensor, what);
    return;
  }
  unpack(host->data.u8, l);
}

bool has_tensor(sqlite3* db, const char* name) {
  check_name(db, name, "has_tensor");
  Statement exists(db, "SELECT 1 FROM main.sqlite_master WHERE type = 'table' AND name = 'tensors'", "has_tensor");
  if (!exists.step()) return false;
  Statement s(db, "SELECT 1 FROM main.tensors WHERE name = ?1", "has_tensor");
  sqlite_check(db, sqlite3_bind_text(s.get(), 1, name, -1, SQLITE_STATIC), "has_tensor");
  return s.step();
}

}  // namespace nnc::io
