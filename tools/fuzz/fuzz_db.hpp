// The fuzz input as a read-only SQLite database in memory (SQLite's own
// page reader, as for a file, without touching the disk). NULL when SQLite
// refuses the bytes at once.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <cstring>

namespace nnc_fuzz {

inline sqlite3* open_bytes(const uint8_t* data, size_t size) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return nullptr;
  }
  // SQLite takes ownership of a buffer from sqlite3_malloc64.
  unsigned char* copy = static_cast<unsigned char*>(sqlite3_malloc64(size ? size : 1));
  if (!copy) {
    sqlite3_close(db);
    return nullptr;
  }
  if (size) std::memcpy(copy, data, size);
  if (sqlite3_deserialize(db, "main", copy, static_cast<sqlite3_int64>(size), static_cast<sqlite3_int64>(size),
                          SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_READONLY) != SQLITE_OK) {
    sqlite3_close(db);
    return nullptr;
  }
  return db;
}

}  // namespace nnc_fuzz
