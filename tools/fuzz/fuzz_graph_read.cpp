// libFuzzer target: the input is a graph record (the blob of the 'graphs'
// table, lib/io/graph_io.cpp). Each input is stored with a matching checksum
// in a file that also holds the seed graph's bound tensors, and read back
// with ccv_nnc_symbolic_graph_read, so that the fuzzer works on the record
// decoder and the rebuilding of the graph rather than on the checksum. Every
// read must give a graph or a message; ASan watches the rest.
#include <sqlite3.h>
#include <unistd.h>
#include <xxhash.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "nnc/ccv_nnc.h"
#include "seed_graph.hpp"

namespace {
std::string g_path;
sqlite3* g_db = nullptr;
sqlite3_stmt* g_update = nullptr;
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* dir = std::getenv("TMPDIR");
  g_path = std::string(dir && *dir ? dir : "/tmp") + "/nnc-fuzz-graph-" + std::to_string(getpid()) + ".sqlite3";
  std::remove(g_path.c_str());
  if (!nnc_fuzz::write_seed_graph(g_path.c_str())) std::abort();
  if (sqlite3_open(g_path.c_str(), &g_db) != SQLITE_OK) std::abort();
  sqlite3_exec(g_db, "PRAGMA synchronous=OFF", nullptr, nullptr, nullptr);
  if (sqlite3_prepare_v2(g_db, "UPDATE graphs SET data = ?1, checksum = ?2", -1, &g_update, nullptr) != SQLITE_OK)
    std::abort();
  std::atexit([] {
    sqlite3_finalize(g_update);
    sqlite3_close(g_db);
    for (const char* s : {"", "-wal", "-shm"}) std::remove((g_path + s).c_str());
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sqlite3_reset(g_update);
  sqlite3_bind_blob(g_update, 1, size ? data : reinterpret_cast<const uint8_t*>(""), static_cast<int>(size),
                    SQLITE_STATIC);
  sqlite3_bind_int64(g_update, 2, static_cast<sqlite3_int64>(XXH3_64bits(data, size)));
  if (sqlite3_step(g_update) != SQLITE_DONE) std::abort();
  ccv_nnc_symbolic_graph_t* graph = nullptr;
  ccv_nnc_tensor_bind_t* binds = nullptr;
  int bind_size = 0;
  ccv_nnc_symbolic_graph_read(g_path.c_str(), &graph, &binds, &bind_size);
  if (!graph) {
    if (ccv_nnc_error_message()[0] == '\0') std::abort();
    return 0;
  }
  for (int i = 0; i < bind_size; i++) ccv_nnc_tensor_free(const_cast<ccv_nnc_tensor_t*>(binds[i].tensor));
  free(binds);
  ccv_nnc_symbolic_graph_free(graph);
  return 0;
}
