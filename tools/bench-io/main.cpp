// bench-io: a checkpoint of the reference network's parameters (8 fp32
// tensors, 3.4 MB), or ResNet-50's, written and read through ccv_nnc_tensor_write / _read in
// one SQLite transaction, beside torch.save / torch.load of the same tensors.
//
//   bench-io [--reps N] [--dir DIR] [--resnet50]
//
// --resnet50: ResNet-50's parameters and batch-norm statistics instead (267
// tensors, 25.6 M parameters plus 53 k statistics, about 102 MB).
//
// NNC rows: "durable" is the checkpoint file as nnc::io opens it (64 KiB
// pages, WAL, synchronous=FULL: fsync at commit); "no sync" is synchronous=OFF, which is
// what torch.save gives (the OS writes the file later). Each write starts
// from a removed file and includes open and close; reads open the file, read
// all tensors into new tensors (or into existing ones) and close it. Times
// are medians. A ratio is NNC / PyTorch: below 1 NNC is faster.
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

namespace {

const std::vector<std::vector<int>> kShapes = {{32, 1, 5, 5}, {32},  {64, 32, 5, 5}, {64},
                                               {256, 3136},   {256}, {10, 256},      {10}};

// ResNet-50 (v1, torchvision's layout): each convolution's weight, each
// batch norm's weight, bias, running mean and running variance, the classifier.
std::vector<std::vector<int>> resnet50_shapes() {
  std::vector<std::vector<int>> s;
  auto bn = [&](int c) {
    for (int k = 0; k < 4; k++) s.push_back({c});
  };
  s.push_back({64, 3, 7, 7});
  bn(64);
  int in = 64;
  const int blocks[4] = {3, 4, 6, 3}, widths[4] = {64, 128, 256, 512};
  for (int stage = 0; stage < 4; stage++)
    for (int b = 0; b < blocks[stage]; b++) {
      const int w = widths[stage];
      s.push_back({w, in, 1, 1});
      bn(w);
      s.push_back({w, w, 3, 3});
      bn(w);
      s.push_back({4 * w, w, 1, 1});
      bn(4 * w);
      if (b == 0) {
        s.push_back({4 * w, in, 1, 1});
        bn(4 * w);
      }
      in = 4 * w;
    }
  s.push_back({1000, 2048});
  s.push_back({1000});
  return s;
}

double median_ms(int reps, const std::function<void()>& f) {
  std::vector<double> t;
  for (int i = 0; i < reps; i++) {
    const auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "bench-io: %s failed: %s\n", what, ccv_nnc_error_message());
    std::exit(1);
  }
}

sqlite3* open_db(const std::string& path, bool sync) {
  sqlite3* db = nullptr;
  check(sqlite3_open(path.c_str(), &db) == SQLITE_OK, "sqlite3_open");
  // As nnc::io::open_checkpoint (lib/io) sets a new file up.
  check(sqlite3_exec(db, "PRAGMA page_size=65536", nullptr, nullptr, nullptr) == SQLITE_OK, "page_size");
  check(sqlite3_exec(db, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr) == SQLITE_OK, "journal_mode");
  check(sqlite3_exec(db, sync ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=OFF", nullptr, nullptr, nullptr) ==
            SQLITE_OK,
        "synchronous");
  return db;
}

void remove_db(const std::string& path) {
  for (const char* s : {"", "-wal", "-shm"}) std::remove((path + s).c_str());
}

long file_size(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? static_cast<long>(st.st_size) : -1;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 20;
  std::string dir = "/tmp";
  std::vector<std::vector<int>> shapes = kShapes;
  const char* what = "the reference network";
  for (int i = 1; i < argc; i++) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--dir") && i + 1 < argc)
      dir = argv[++i];
    else if (!std::strcmp(argv[i], "--resnet50")) {
      shapes = resnet50_shapes();
      what = "ResNet-50";
    } else {
      std::fprintf(stderr, "usage: bench-io [--reps N] [--dir DIR] [--resnet50]\n");
      return 2;
    }
  }
  const std::string path = dir + "/bench-io-" + std::to_string(getpid()) + ".sqlite3";
  const std::string torch_path = dir + "/bench-io-" + std::to_string(getpid()) + ".pt";

  std::vector<ccv_nnc_tensor_t*> tensors;
  size_t bytes = 0;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> d(0.f, 1.f);
  for (const auto& s : shapes) {
    ccv_nnc_tensor_param_t p{};
    p.type = CCV_TENSOR_CPU_MEMORY;
    p.format = CCV_TENSOR_FORMAT_NCHW;
    p.datatype = CCV_32F;
    size_t n = 1;
    for (size_t i = 0; i < s.size(); i++) {
      p.dim[i] = s[i];
      n *= static_cast<size_t>(s[i]);
    }
    ccv_nnc_tensor_t* t = ccv_nnc_tensor_new(nullptr, p, 0);
    check(t, "ccv_nnc_tensor_new");
    for (size_t i = 0; i < n; i++) t->data.f32[i] = d(rng);
    tensors.push_back(t);
    bytes += n * 4;
  }
  auto name = [](size_t i) {
    char n[32];
    std::snprintf(n, sizeof(n), "p%zu", i);
    return std::string(n);
  };
  auto write_all = [&](bool sync) {
    remove_db(path);
    sqlite3* db = open_db(path, sync);
    check(sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr) == SQLITE_OK, "BEGIN");
    for (size_t i = 0; i < tensors.size(); i++)
      check(ccv_nnc_tensor_write(tensors[i], db, name(i).c_str(), nullptr) == CCV_IO_FINAL, "ccv_nnc_tensor_write");
    check(sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr) == SQLITE_OK, "COMMIT");
    sqlite3_close(db);
  };
  std::vector<ccv_nnc_tensor_t*> into;
  for (ccv_nnc_tensor_t* t : tensors) into.push_back(ccv_nnc_tensor_new(nullptr, t->info, 0));
  auto read_all = [&](bool new_tensors) {
    sqlite3* db = nullptr;
    check(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK, "sqlite3_open_v2");
    for (size_t i = 0; i < tensors.size(); i++) {
      ccv_nnc_tensor_t* t = new_tensors ? nullptr : into[i];
      check(ccv_nnc_tensor_read(db, name(i).c_str(), nullptr, 0, nullptr, &t) == CCV_IO_FINAL, "ccv_nnc_tensor_read");
      if (new_tensors) ccv_nnc_tensor_free(t);
    }
    sqlite3_close(db);
  };

  const double write_durable = median_ms(reps, [&] { write_all(true); });
  const double write_nosync = median_ms(reps, [&] { write_all(false); });
  const long size = file_size(path);
  const double read_new = median_ms(reps, [&] { read_all(true); });
  const double read_into = median_ms(reps, [&] { read_all(false); });
  for (size_t i = 0; i < tensors.size(); i++)
    check(std::memcmp(into[i]->data.f32, tensors[i]->data.f32, ccv_nnc_tensor_count(tensors[i]->info) * 4) == 0,
          "the round trip");
  remove_db(path);

  std::string cmd =
      std::string("/usr/bin/python3 ") + NNC_BENCH_IO_PEER + " " + torch_path + " " + std::to_string(reps);
  for (const auto& s : shapes)
    for (size_t i = 0; i < s.size(); i++) {
      char d[16];
      std::snprintf(d, sizeof(d), "%s%d", i ? "x" : " ", s[i]);
      cmd += d;
    }
  std::map<std::string, std::string> peer;
  if (FILE* f = popen(cmd.c_str(), "r")) {
    char line[256];
    while (std::fgets(line, sizeof(line), f)) {
      char key[64], value[128];
      if (std::sscanf(line, "%63s %127s", key, value) == 2) peer[key] = value;
    }
    pclose(f);
  }
  const bool have_peer = peer.count("load_ms") > 0;
  auto num = [&](const char* k) { return have_peer ? std::atof(peer[k].c_str()) : 0.0; };

  std::printf("bench-io: %s, %zu fp32 tensors, %.2f MB of parameters, median of %d, files in %s\n", what, tensors.size(),
              bytes / 1e6, reps, dir.c_str());
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    char load[64] = "";
    if (std::fgets(load, sizeof(load), f)) std::printf("load average: %s", load);
    std::fclose(f);
  }
  std::printf("peer: %s\n", have_peer ? ("PyTorch " + peer["version"] + " (torch.save / torch.load)").c_str()
                                      : "PyTorch not available (/usr/bin/python3 -c 'import torch' failed)");
  std::printf("%-34s %12s %12s %8s\n", "", "NNC", "PyTorch", "ratio");
  auto row = [&](const char* what, double ours, double theirs, const char* unit) {
    if (have_peer)
      std::printf("%-34s %9.3f %s %9.3f %s %8.2f\n", what, ours, unit, theirs, unit, ours / theirs);
    else
      std::printf("%-34s %9.3f %s\n", what, ours, unit);
  };
  row("write, durable (fsync at commit)", write_durable, num("save_fsync_ms"), "ms");
  row("write, no sync", write_nosync, num("save_ms"), "ms");
  row("read into new tensors", read_new, num("load_ms"), "ms");
  row("read into existing tensors", read_into, num("load_ms"), "ms");
  row("file size", size / 1e6, num("size") / 1e6, "MB");
  for (size_t i = 0; i < tensors.size(); i++) {
    ccv_nnc_tensor_free(tensors[i]);
    ccv_nnc_tensor_free(into[i]);
  }
  return 0;
}
