// Level 5: the dataframe. Values against results computed by hand here;
// buffer reuse against a count of every allocation of the process.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "alloc_counter.hpp"
#include "cnnp/dataframe.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

// Column lists in calls (the C compound literal (const int[]){...} is not C++).
#define IDX(...) std::vector<int>{__VA_ARGS__}.data()

namespace {

std::string last_error() {
  const char* m = ccv_nnc_error_message();
  return m ? m : "";
}

// A source column of ints: row r holds r * 10 + 1. The value is an int the
// enumerator allocates once per slot and reuses.
struct IntSource {
  int allocations = 0;
  int frees = 0;
  int context_frees = 0;
};
void int_enum(int, const int* rows, int n, void** data, void* context, ccv_nnc_stream_context_t*) {
  auto* src = static_cast<IntSource*>(context);
  for (int i = 0; i < n; i++) {
    if (!data[i]) {
      data[i] = std::malloc(sizeof(int));
      src->allocations++;
    }
    *static_cast<int*>(data[i]) = rows[i] * 10 + 1;
  }
}
void int_deinit(void* data, void* context) {
  static_cast<IntSource*>(context)->frees++;
  std::free(data);
}
void int_context_deinit(void* context) { static_cast<IntSource*>(context)->context_frees++; }

ccv_cnnp_dataframe_t* int_frame(IntSource* src, int rows) {
  ccv_cnnp_column_data_t column{};
  column.name = const_cast<char*>("ints");
  column.data_enum = int_enum;
  column.data_deinit = int_deinit;
  column.context = src;
  column.context_deinit = int_context_deinit;
  return ccv_cnnp_dataframe_new(&column, 1, rows);
}

// A map: float = int * scale (scale from the context), reusing its slot.
struct Scale {
  float scale;
  int allocations = 0;
  int frees = 0;
  int context_frees = 0;
  std::vector<void*> seen_previous{};  // data[i] as received, to check reuse
};
void scale_map(void* const* const* in, int, int n, void** data, void* context, ccv_nnc_stream_context_t*) {
  auto* s = static_cast<Scale*>(context);
  for (int i = 0; i < n; i++) {
    if (!data[i]) {
      data[i] = std::malloc(sizeof(float));
      s->allocations++;
    }
    *static_cast<float*>(data[i]) = static_cast<float>(*static_cast<int*>(in[0][i])) * s->scale;
  }
}
void scale_deinit(void* data, void* context) {
  static_cast<Scale*>(context)->frees++;
  std::free(data);
}
void scale_context_deinit(void* context) { static_cast<Scale*>(context)->context_frees++; }

// Row order as seen through a one-column iterator of ints (value -> row).
std::vector<int> walk(ccv_cnnp_dataframe_t* df) {
  int col = 0;
  ccv_cnnp_dataframe_iter_t* it = ccv_cnnp_dataframe_iter_new(df, &col, 1);
  std::vector<int> rows;
  void* v;
  while (ccv_cnnp_dataframe_iter_next(it, &v, 1, nullptr) == 0) rows.push_back((*static_cast<int*>(v) - 1) / 10);
  ccv_cnnp_dataframe_iter_free(it);
  return rows;
}

ccv_nnc_tensor_param_t cpu(int datatype, int format, std::vector<int> dims) {
  ccv_nnc_tensor_param_t p{};
  p.type = CCV_TENSOR_CPU_MEMORY;
  p.format = format;
  p.datatype = datatype;
  for (size_t i = 0; i < dims.size(); i++) p.dim[i] = dims[i];
  return p;
}

TEST(Dataframe, NewAddMapValuesAndDeinits) {
  IntSource src;
  Scale scale{0.5f};
  ccv_cnnp_dataframe_t* df = int_frame(&src, 7);
  ASSERT_NE(df, nullptr);
  EXPECT_EQ(ccv_cnnp_dataframe_row_count(df), 7);
  int in = 0;
  const int mapped =
      ccv_cnnp_dataframe_map(df, scale_map, 0, scale_deinit, &in, 1, &scale, scale_context_deinit, "half");
  ASSERT_EQ(mapped, 1);
  EXPECT_STREQ(ccv_cnnp_dataframe_column_name(df, 0), "ints");
  EXPECT_STREQ(ccv_cnnp_dataframe_column_name(df, 1), "half");
  const int cols[] = {1, 0};
  ccv_cnnp_dataframe_iter_t* it = ccv_cnnp_dataframe_iter_new(df, cols, 2);
  void* v[2];
  for (int r = 0; r < 7; r++) {
    ASSERT_EQ(ccv_cnnp_dataframe_iter_next(it, v, 2, nullptr), 0);
    EXPECT_EQ(*static_cast<float*>(v[0]), (r * 10 + 1) * 0.5f);
    EXPECT_EQ(*static_cast<int*>(v[1]), r * 10 + 1);
  }
  EXPECT_EQ(ccv_cnnp_dataframe_iter_next(it, v, 2, nullptr), -1);
  EXPECT_EQ(ccv_cnnp_dataframe_iter_next(it, v, 2, nullptr), -2);  // already ended
  // Without prefetch an iterator holds one row: one slot per column.
  EXPECT_EQ(src.allocations, 1);
  EXPECT_EQ(scale.allocations, 1);
  ccv_cnnp_dataframe_iter_free(it);
  EXPECT_EQ(src.frees, 1);
  EXPECT_EQ(scale.frees, 1);
  EXPECT_EQ(src.context_frees, 0);
  ccv_cnnp_dataframe_free(df);
  EXPECT_EQ(src.context_frees, 1);
  EXPECT_EQ(scale.context_frees, 1);
}

// A column added with ccv_cnnp_dataframe_add behaves as one from _new; a map
// over two columns sees both.
void add_map(void* const* const* in, int, int n, void** data, void*, ccv_nnc_stream_context_t*) {
  for (int i = 0; i < n; i++) {
    if (!data[i]) data[i] = std::malloc(sizeof(int));
    *static_cast<int*>(data[i]) = *static_cast<int*>(in[0][i]) + *static_cast<int*>(in[1][i]);
  }
}
void free_deinit(void* data, void*) { std::free(data); }

TEST(Dataframe, AddAndTwoInputMap) {
  IntSource a, b;
  ccv_cnnp_dataframe_t* df = int_frame(&a, 5);
  const int added = ccv_cnnp_dataframe_add(df, int_enum, 0, int_deinit, &b, nullptr, nullptr);
  ASSERT_EQ(added, 1);
  EXPECT_EQ(ccv_cnnp_dataframe_column_name(df, 1), nullptr);
  const int ins[] = {0, 1};
  const int sum = ccv_cnnp_dataframe_map(df, add_map, 0, free_deinit, ins, 2, nullptr, nullptr, "sum");
  ccv_cnnp_dataframe_iter_t* it = ccv_cnnp_dataframe_iter_new(df, &sum, 1);
  void* v;
  for (int r = 0; r < 5; r++) {
    ASSERT_EQ(ccv_cnnp_dataframe_iter_next(it, &v, 1, nullptr), 0);
    EXPECT_EQ(*static_cast<int*>(v), 2 * (r * 10 + 1));
  }
  ccv_cnnp_dataframe_iter_free(it);
  ccv_cnnp_dataframe_free(df);
  EXPECT_EQ(a.allocations, a.frees);
  EXPECT_EQ(b.allocations, b.frees);
}

// The map receives its previous output in data[i] (libnnc's reuse contract).
void remember_map(void* const* const* in, int, int n, void** data, void* context, ccv_nnc_stream_context_t*) {
  auto* s = static_cast<Scale*>(context);
  for (int i = 0; i < n; i++) {
    s->seen_previous.push_back(data[i]);
    if (!data[i]) data[i] = std::malloc(sizeof(float));
    *static_cast<float*>(data[i]) = static_cast<float>(*static_cast<int*>(in[0][i]));
  }
}

TEST(Dataframe, MapReceivesItsPreviousValue) {
  IntSource src;
  Scale s{1};
  ccv_cnnp_dataframe_t* df = int_frame(&src, 3);
  int in = 0;
  const int m = ccv_cnnp_dataframe_map(df, remember_map, 0, free_deinit, &in, 1, &s, nullptr, nullptr);
  ccv_cnnp_dataframe_iter_t* it = ccv_cnnp_dataframe_iter_new(df, &m, 1);
  void* v;
  std::vector<void*> handed;
  while (ccv_cnnp_dataframe_iter_next(it, &v, 1, nullptr) == 0) handed.push_back(v);
  ASSERT_EQ(s.seen_previous.size(), 3u);
  EXPECT_EQ(s.seen_previous[0], nullptr);
  EXPECT_EQ(s.seen_previous[1], handed[0]);
  EXPECT_EQ(s.seen_previous[2], handed[1]);
  ccv_cnnp_dataframe_iter_free(it);
  ccv_cnnp_dataframe_free(df);
}

TEST(Dataframe, ShuffleIsAPermutationReproducibleAndNewEachCall) {
  IntSource s1, s2;
  ccv_cnnp_dataframe_t* a = int_frame(&s1, 50);
  ccv_cnnp_dataframe_t* b = int_frame(&s2, 50);
  std::vector<int> identity(50);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_EQ(walk(a), identity);
  ccv_cnnp_dataframe_shuffle(a);
  ccv_cnnp_dataframe_shuffle(b);
  const std::vector<int> first = walk(a);
  EXPECT_EQ(first, walk(b));  // same seed, same sequence of orders
  EXPECT_NE(first, identity);
  std::vector<int> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, identity);
  ccv_cnnp_dataframe_shuffle(a);
  ccv_cnnp_dataframe_shuffle(b);
  const std::vector<int> second = walk(a);
  EXPECT_NE(second, first);
  EXPECT_EQ(second, walk(b));
  ccv_cnnp_dataframe_free(a);
  ccv_cnnp_dataframe_free(b);
}

// A pinned order: the first shuffle of a 10-row dataframe is the same on
// every run and every machine (it depends on the fixed seed only).
TEST(Dataframe, ShuffleOrderIsPinned) {
  IntSource s1, s2;
  ccv_cnnp_dataframe_t* a = int_frame(&s1, 10);
  ccv_cnnp_dataframe_t* b = int_frame(&s2, 10);
  ccv_cnnp_dataframe_shuffle(a);
  ccv_cnnp_dataframe_shuffle(b);
  EXPECT_EQ(walk(a), walk(b));
  // Printed so that a change of generator shows up in review.
  std::string order;
  for (int r : walk(a)) order += std::to_string(r) + " ";
  RecordProperty("first_shuffle", order);
  ccv_cnnp_dataframe_free(a);
  ccv_cnnp_dataframe_free(b);
}

TEST(Dataframe, PrefetchGivesTheSameRowsAsNoPrefetch) {
  IntSource s;
  Scale sc{2};
  ccv_cnnp_dataframe_t* df = int_frame(&s, 23);
  int in = 0;
  const int m = ccv_cnnp_dataframe_map(df, scale_map, 0, scale_deinit, &in, 1, &sc, nullptr, nullptr);
  ccv_cnnp_dataframe_shuffle(df);
  const int cols[] = {0, m};
  auto run = [&](int prefetch) {
    std::vector<std::pair<int, float>> rows;
    ccv_cnnp_dataframe_iter_t* it = ccv_cnnp_dataframe_iter_new(df, cols, 2);
    void* v[2];
    for (int k = 0;; k++) {
      if (prefetch && k % 3 == 0) ccv_cnnp_dataframe_iter_prefetch(it, prefetch, nullptr);
      if (ccv_cnnp_dataframe_iter_next(it, v, 2, nullptr) != 0) break;
      rows.emplace_back(*static_cast<int*>(v[0]), *static_cast<float*>(v[1]));
    }
    ccv_cnnp_dataframe_iter_free(it);
    return rows;
  };
  const auto plain = run(0);
  ASSERT_EQ(plain.size(), 23u);
  for (auto& [i, f] : plain) EXPECT_EQ(f, 2.0f * i);
  EXPECT_EQ(run(1), plain);
  EXPECT_EQ(run(4), plain);
  EXPECT_EQ(run(50), plain);
  ccv_cnnp_dataframe_free(df);
}

TEST(Dataframe, PrefetchReturnsMinusOneAtTheEnd) {
  IntSource s;
  ccv_cnnp_dataframe_t* df = int_frame(&s, 3);
  int col = 0;
  ccv_cnnp_dataframe_iter_t* it = ccv_cnnp_dataframe_iter_new(df, &col, 1);
  EXPECT_EQ(ccv_cnnp_dataframe_iter_prefetch(it, 2, nullptr), 0);
  EXPECT_EQ(ccv_cnnp_dataframe_iter_prefetch(it, 2, nullptr), 0);  // one more row left
  EXPECT_EQ(ccv_cnnp_dataframe_iter_prefetch(it, 1, nullptr), -1);
  void* v;
  for (int r = 0; r < 3; r++) {
    ASSERT_EQ(ccv_cnnp_dataframe_iter_next(it, &v, 1, nullptr), 0);
    EXPECT_EQ(*static_cast<int*>(v), r * 10 + 1);
  }
  EXPECT_EQ(ccv_cnnp_dataframe_iter_next(it, &v, 1, nullptr), -1);
  ccv_cnnp_dataframe_iter_free(it);
  ccv_cnnp_dataframe_free(df);
}

TEST(Dataframe, ShuffleAfterPrefetchDropsTheStaleRows) {
  IntSource s1, s2;
  ccv_cnnp_dataframe_t* df = int_frame(&s1, 20);
  ccv_cnnp_dataframe_t* ref = int_frame(&s2, 20);
  int col = 0;
  ccv_cnnp_dataframe_iter_t* it = ccv_cnnp_dataframe_iter_new(df, &col, 1);
  ASSERT_EQ(ccv_cnnp_dataframe_iter_prefetch(it, 5, nullptr), 0);
  ccv_cnnp_dataframe_shuffle(df);
  ccv_cnnp_dataframe_shuffle(ref);
  const std::vector<int> expect = walk(ref);
  void* v;
  for (int r = 0; r < 20; r++) {
    ASSERT_EQ(ccv_cnnp_dataframe_iter_next(it, &v, 1, nullptr), 0);
    EXPECT_EQ((*static_cast<int*>(v) - 1) / 10, expect[r]) << r;
  }
  ccv_cnnp_dataframe_iter_free(it);
  ccv_cnnp_dataframe_free(df);
  ccv_cnnp_dataframe_free(ref);
}

TEST(Dataframe, SetCursorAndPeek) {
  IntSource s;
  Scale sc{3};
  ccv_cnnp_dataframe_t* df = int_frame(&s, 10);
  int in = 0;
  const int m = ccv_cnnp_dataframe_map(df, scale_map, 0, scale_deinit, &in, 1, &sc, nullptr, nullptr);
  const int cols[] = {0, m};
  ccv_cnnp_dataframe_iter_t* it = ccv_cnnp_dataframe_iter_new(df, cols, 2);
  void* v[2] = {nullptr, nullptr};
  ccv_cnnp_dataframe_iter_peek(it, v, 0, 1, nullptr);  // no row yet
  EXPECT_NE(last_error().find("no current row"), std::string::npos);
  ASSERT_EQ(ccv_cnnp_dataframe_iter_next(it, v, 1, nullptr), 0);  // column 0 only
  EXPECT_EQ(*static_cast<int*>(v[0]), 1);
  EXPECT_EQ(sc.allocations, 0);  // the map has not run
  ccv_cnnp_dataframe_iter_peek(it, v + 1, 1, 1, nullptr);
  EXPECT_EQ(*static_cast<float*>(v[1]), 3.0f);
  ASSERT_EQ(ccv_cnnp_dataframe_iter_prefetch(it, 3, nullptr), 0);
  EXPECT_EQ(ccv_cnnp_dataframe_iter_set_cursor(it, 6), 0);  // drops the prefetched rows
  ASSERT_EQ(ccv_cnnp_dataframe_iter_next(it, v, 2, nullptr), 0);
  EXPECT_EQ(*static_cast<int*>(v[0]), 61);
  EXPECT_EQ(*static_cast<float*>(v[1]), 183.0f);
  EXPECT_EQ(ccv_cnnp_dataframe_iter_set_cursor(it, 0), 0);
  ASSERT_EQ(ccv_cnnp_dataframe_iter_next(it, v, 2, nullptr), 0);
  EXPECT_EQ(*static_cast<int*>(v[0]), 1);
  EXPECT_EQ(ccv_cnnp_dataframe_iter_set_cursor(it, 10), 0);
  EXPECT_EQ(ccv_cnnp_dataframe_iter_next(it, v, 2, nullptr), -1);
  EXPECT_EQ(ccv_cnnp_dataframe_iter_set_cursor(it, 11), -1);
  EXPECT_NE(last_error().find("out of range"), std::string::npos);
  EXPECT_EQ(ccv_cnnp_dataframe_iter_set_cursor(it, -1), -1);
  ccv_cnnp_dataframe_iter_set_cursor(it, 9);
  EXPECT_EQ(ccv_cnnp_dataframe_iter_next(it, v, 2, nullptr), 0);
  EXPECT_EQ(*static_cast<int*>(v[0]), 91);
  ccv_cnnp_dataframe_iter_free(it);
  ccv_cnnp_dataframe_free(df);
}

// Callbacks of one dataframe never overlap, even with two iterators, each
// with its prefetch worker, driven from two threads.
struct Overlap {
  std::atomic<int> inside{0};
  std::atomic<int> most{0};
};
void overlap_map(void* const* const* in, int, int n, void** data, void* context, ccv_nnc_stream_context_t*) {
  auto* o = static_cast<Overlap*>(context);
  const int now = ++o->inside;
  int most = o->most.load();
  while (now > most && !o->most.compare_exchange_weak(most, now)) {
  }
  for (int i = 0; i < n; i++) {
    if (!data[i]) data[i] = std::malloc(sizeof(int));
    *static_cast<int*>(data[i]) = *static_cast<int*>(in[0][i]) * 2;
  }
  std::this_thread::yield();
  --o->inside;
}

TEST(Dataframe, CallbacksNeverOverlapAcrossThreads) {
  IntSource s;
  Overlap o;
  ccv_cnnp_dataframe_t* df = int_frame(&s, 300);
  const int m = ccv_cnnp_dataframe_map(df, overlap_map, 0, free_deinit, IDX(0), 1, &o, nullptr, nullptr);
  long sums[2] = {0, 0};
  auto walker = [&](int k) {
    ccv_cnnp_dataframe_iter_t* it = ccv_cnnp_dataframe_iter_new(df, &m, 1);
    void* v;
    ccv_cnnp_dataframe_iter_prefetch(it, 3, nullptr);
    while (ccv_cnnp_dataframe_iter_next(it, &v, 1, nullptr) == 0) {
      ccv_cnnp_dataframe_iter_prefetch(it, 1, nullptr);
      sums[k] += *static_cast<int*>(v);
    }
    ccv_cnnp_dataframe_iter_free(it);
  };
  std::thread a(walker, 0), b(walker, 1);
  a.join();
  b.join();
  long expect = 0;
  for (int r = 0; r < 300; r++) expect += 2 * (r * 10 + 1);
  EXPECT_EQ(sums[0], expect);
  EXPECT_EQ(sums[1], expect);
  EXPECT_EQ(o.most.load(), 1);
  ccv_cnnp_dataframe_free(df);
}

// --- tuples and values ---------------------------------------------------------

struct Pair {
  int label;
  float weight;
  double value;
  const char* name;
};

TEST(Dataframe, TupleAndExtract) {
  std::vector<Pair> data = {{1, 0.5f, 2.25, "a"}, {3, 1.5f, -1.0, "b"}, {0, 2.5f, 7.0, "c"}};
  ccv_array_t* array = ccv_array_new(sizeof(Pair), 3, 0);
  for (auto& p : data) ccv_array_push(array, &p);
  ccv_cnnp_dataframe_t* df = ccv_cnnp_dataframe_from_array_new(array);
  ASSERT_EQ(ccv_cnnp_dataframe_row_count(df), 3);
  const int name = ccv_cnnp_dataframe_extract_value(df, 0, offsetof(Pair, name), "name");
  const int cols[] = {0, name};
  const int tuple = ccv_cnnp_dataframe_make_tuple(df, cols, 2, "tuple");
  EXPECT_EQ(ccv_cnnp_dataframe_tuple_size(df, tuple), 2);
  const int second = ccv_cnnp_dataframe_extract_tuple(df, tuple, 1, nullptr);
  ccv_cnnp_dataframe_iter_t* it = ccv_cnnp_dataframe_iter_new(df, IDX(tuple, second), 2);
  void* v[2];
  for (int r = 0; r < 3; r++) {
    ASSERT_EQ(ccv_cnnp_dataframe_iter_next(it, v, 2, nullptr), 0);
    void** t = static_cast<void**>(v[0]);
    EXPECT_EQ(t[0], ccv_array_get(array, r));
    EXPECT_STREQ(static_cast<const char*>(t[1]), data[r].name);
    EXPECT_STREQ(static_cast<const char*>(v[1]), data[r].name);
  }
  ccv_cnnp_dataframe_iter_free(it);
  // Bad tuple requests.
  EXPECT_EQ(ccv_cnnp_dataframe_extract_tuple(df, tuple, 2, nullptr), -1);
  EXPECT_NE(last_error().find("index 2 is out of range"), std::string::npos);
  EXPECT_EQ(ccv_cnnp_dataframe_extract_tuple(df, 0, 0, nullptr), -1);
  EXPECT_NE(last_error().find("does not hold tuples"), std::string::npos);
  EXPECT_EQ(ccv_cnnp_dataframe_tuple_size(df, 0), -1);
  EXPECT_EQ(ccv_cnnp_dataframe_tuple_size(df, 99), -1);
  ccv_cnnp_dataframe_free(df);
  ccv_array_free(array);
}

TEST(Dataframe, OneHotAndCopyScalar) {
  std::vector<Pair> data = {{1, 0.5f, 2.25, "a"}, {3, 1.5f, -1.0, "b"}, {0, 2.5f, 7.0, "c"}};
  ccv_array_t* array = ccv_array_new(sizeof(Pair), 3, 0);
  for (auto& p : data) ccv_array_push(array, &p);
  ccv_cnnp_dataframe_t* df = ccv_cnnp_dataframe_from_array_new(array);
  const int hot = ccv_cnnp_dataframe_one_hot(df, 0, offsetof(Pair, label), 4, 0.9f, 0.025f, CCV_32F,
                                             CCV_TENSOR_FORMAT_NHWC, "hot");
  const int hot16 = ccv_cnnp_dataframe_one_hot(df, 0, offsetof(Pair, label), 4, 1, 0, CCV_16F,
                                               CCV_TENSOR_FORMAT_NHWC, nullptr);
  const int w = ccv_cnnp_dataframe_copy_scalar(df, 0, offsetof(Pair, weight), CCV_32F, CCV_32F,
                                               CCV_TENSOR_FORMAT_NHWC, nullptr);
  const int d = ccv_cnnp_dataframe_copy_scalar(df, 0, offsetof(Pair, value), CCV_64F, CCV_32F,
                                               CCV_TENSOR_FORMAT_NCHW, nullptr);
  const int l = ccv_cnnp_dataframe_copy_scalar(df, 0, offsetof(Pair, label), CCV_32S, CCV_64F,
                                               CCV_TENSOR_FORMAT_NHWC, nullptr);
  ASSERT_GE(std::min({hot, hot16, w, d, l}), 1);
  const int cols[] = {hot, hot16, w, d, l};
  ccv_cnnp_dataframe_iter_t* it = ccv_cnnp_dataframe_iter_new(df, cols, 5);
  void* v[5];
  for (int r = 0; r < 3; r++) {
    ASSERT_EQ(ccv_cnnp_dataframe_iter_next(it, v, 5, nullptr), 0);
    auto* h = static_cast<ccv_nnc_tensor_t*>(v[0]);
    EXPECT_EQ(h->info.dim[0], 4);
    EXPECT_EQ(h->info.dim[1], 0);
    EXPECT_EQ(h->info.datatype, CCV_32F);
    for (int j = 0; j < 4; j++) EXPECT_EQ(h->data.f32[j], j == data[r].label ? 0.9f : 0.025f);
    auto* h16 = static_cast<ccv_nnc_tensor_t*>(v[1]);
    EXPECT_EQ(h16->info.datatype, CCV_16F);
    for (int j = 0; j < 4; j++) EXPECT_EQ(h16->data.f16[j].v, j == data[r].label ? 0x3c00 : 0);
    auto* tw = static_cast<ccv_nnc_tensor_t*>(v[2]);
    EXPECT_EQ(tw->info.dim[0], 1);
    EXPECT_EQ(tw->data.f32[0], data[r].weight);
    auto* td = static_cast<ccv_nnc_tensor_t*>(v[3]);
    EXPECT_EQ(td->info.format, CCV_TENSOR_FORMAT_NCHW);
    EXPECT_EQ(td->data.f32[0], static_cast<float>(data[r].value));
    EXPECT_EQ(static_cast<ccv_nnc_tensor_t*>(v[4])->data.f64[0], data[r].label);
  }
  ccv_cnnp_dataframe_iter_free(it);
  EXPECT_EQ(ccv_cnnp_dataframe_one_hot(df, 0, 0, 0, 1, 0, CCV_32F, CCV_TENSOR_FORMAT_NHWC, nullptr), -1);
  EXPECT_NE(last_error().find("range 0"), std::string::npos);
  EXPECT_EQ(ccv_cnnp_dataframe_copy_scalar(df, 99, 0, CCV_32F, CCV_32F, CCV_TENSOR_FORMAT_NHWC, nullptr), -1);
  EXPECT_NE(last_error().find("out of range"), std::string::npos);
  ccv_cnnp_dataframe_free(df);
  ccv_array_free(array);
}

// A label outside the one-hot range is reported by next (and by a prefetch
// on the worker thread), with no crash and nothing leaked.
TEST(Dataframe, ErrorsDuringIterationAreReported) {
  std::vector<Pair> data = {{1, 0, 0, "a"}, {9, 0, 0, "b"}, {0, 0, 0, "c"}};
  ccv_array_t* array = ccv_array_new(sizeof(Pair), 3, 0);
  for (auto& p : data) ccv_array_push(array, &p);
  ccv_cnnp_dataframe_t* df = ccv_cnnp_dataframe_from_array_new(array);
  const int hot = ccv_cnnp_dataframe_one_hot(df, 0, offsetof(Pair, label), 4, 1, 0, CCV_32F,
                                             CCV_TENSOR_FORMAT_NHWC, nullptr);
  for (int prefetch = 0; prefetch < 2; prefetch++) {
    ccv_cnnp_dataframe_iter_t* it = ccv_cnnp_dataframe_iter_new(df, &hot, 1);
    if (prefetch) {
      EXPECT_EQ(ccv_cnnp_dataframe_iter_prefetch(it, 3, nullptr), 0);
    }
    void* v;
    EXPECT_EQ(ccv_cnnp_dataframe_iter_next(it, &v, 1, nullptr), 0);
    EXPECT_EQ(ccv_cnnp_dataframe_iter_next(it, &v, 1, nullptr), CCV_NNC_EXEC_INVALID);
    EXPECT_NE(last_error().find("label 9 is outside [0, 4)"), std::string::npos) << last_error();
    // The failing row stays next; skipping it goes on.
    EXPECT_EQ(ccv_cnnp_dataframe_iter_set_cursor(it, 2), 0);
    EXPECT_EQ(ccv_cnnp_dataframe_iter_next(it, &v, 1, nullptr), 0);
    EXPECT_EQ(static_cast<ccv_nnc_tensor_t*>(v)->data.f32[0], 1.0f);
    ccv_cnnp_dataframe_iter_free(it);
  }
  ccv_cnnp_dataframe_free(df);
  ccv_array_free(array);
}

// --- combine -----------------------------------------------------------------

// Row r: an NHWC tensor of H=2, W=3, C=2 with element e = r * 100 + e.
struct TensorSource {
  int format = CCV_TENSOR_FORMAT_NHWC;
};
void tensor_enum(int, const int* rows, int n, void** data, void* context, ccv_nnc_stream_context_t*) {
  const int format = static_cast<TensorSource*>(context)->format;
  for (int i = 0; i < n; i++) {
    if (!data[i]) data[i] = ccv_nnc_tensor_new(nullptr, cpu(CCV_32F, format, {2, 3, 2}), 0);
    auto* t = static_cast<ccv_nnc_tensor_t*>(data[i]);
    for (int e = 0; e < 12; e++) t->data.f32[e] = static_cast<float>(rows[i] * 100 + e);
  }
}
void tensor_deinit(void* data, void*) { ccv_nnc_tensor_free(static_cast<ccv_nnc_tensor_t*>(data)); }

// A second column: one int label per row, r % 3, as a 1-element 32S tensor.
void label_enum(int, const int* rows, int n, void** data, void*, ccv_nnc_stream_context_t*) {
  for (int i = 0; i < n; i++) {
    if (!data[i]) data[i] = ccv_nnc_tensor_new(nullptr, cpu(CCV_32S, CCV_TENSOR_FORMAT_NHWC, {1}), 0);
    static_cast<ccv_nnc_tensor_t*>(data[i])->data.i32[0] = rows[i] % 3;
  }
}

TEST(Dataframe, CombineBatchesWithAPartialLastBatch) {
  TensorSource src;
  ccv_cnnp_column_data_t columns[2] = {};
  columns[0].data_enum = tensor_enum;
  columns[0].data_deinit = tensor_deinit;
  columns[0].context = &src;
  columns[1].data_enum = label_enum;
  columns[1].data_deinit = tensor_deinit;
  ccv_cnnp_dataframe_t* df = ccv_cnnp_dataframe_new(columns, 2, 7);
  const int cols[] = {0, 1};
  ccv_cnnp_dataframe_t* batched = ccv_cnnp_dataframe_combine_new(df, cols, 2, 3, 1, CCV_TENSOR_FORMAT_NHWC);
  ASSERT_NE(batched, nullptr);
  EXPECT_EQ(ccv_cnnp_dataframe_row_count(batched), 3);
  EXPECT_EQ(ccv_cnnp_dataframe_tuple_size(batched, 0), 2);
  for (int epoch = 0; epoch < 2; epoch++) {
    ccv_cnnp_dataframe_iter_t* it = ccv_cnnp_dataframe_iter_new(batched, IDX(0), 1);
    void* v;
    for (int b = 0; b < 3; b++) {
      if (epoch) ccv_cnnp_dataframe_iter_prefetch(it, 1, nullptr);
      ASSERT_EQ(ccv_cnnp_dataframe_iter_next(it, &v, 1, nullptr), 0);
      auto** t = reinterpret_cast<ccv_nnc_tensor_t**>(v);
      const int n = b < 2 ? 3 : 1;
      EXPECT_EQ(t[0]->info.dim[0], n);
      EXPECT_EQ(t[0]->info.dim[1], 2);
      EXPECT_EQ(t[0]->info.dim[2], 3);
      EXPECT_EQ(t[0]->info.dim[3], 2);
      EXPECT_EQ(t[1]->info.dim[0], n);
      EXPECT_EQ(t[1]->info.dim[1], 1);
      for (int j = 0; j < n; j++) {
        const int r = b * 3 + j;
        for (int e = 0; e < 12; e++) EXPECT_EQ(t[0]->data.f32[j * 12 + e], r * 100 + e);
        EXPECT_EQ(t[1]->data.i32[j], r % 3);
      }
    }
    EXPECT_EQ(ccv_cnnp_dataframe_iter_next(it, &v, 1, nullptr), -1);
    ccv_cnnp_dataframe_iter_free(it);
  }
  ccv_cnnp_dataframe_free(batched);
  ccv_cnnp_dataframe_free(df);
}

TEST(Dataframe, CombineTransposesNhwcToNchwAndGroups) {
  TensorSource src;
  ccv_cnnp_column_data_t column{};
  column.data_enum = tensor_enum;
  column.data_deinit = tensor_deinit;
  column.context = &src;
  ccv_cnnp_dataframe_t* df = ccv_cnnp_dataframe_new(&column, 1, 5);
  ccv_cnnp_dataframe_shuffle(df);
  std::vector<int> order;
  {
    ccv_cnnp_dataframe_iter_t* it = ccv_cnnp_dataframe_iter_new(df, IDX(0), 1);
    void* v;
    while (ccv_cnnp_dataframe_iter_next(it, &v, 1, nullptr) == 0)
      order.push_back(static_cast<int>(static_cast<ccv_nnc_tensor_t*>(v)->data.f32[0]) / 100);
    ccv_cnnp_dataframe_iter_free(it);
  }
  // Two groups of 2 rows per batch: rows (0,1 | 2,3) then (4 | none).
  ccv_cnnp_dataframe_t* batched = ccv_cnnp_dataframe_combine_new(df, IDX(0), 1, 2, 2, CCV_TENSOR_FORMAT_NCHW);
  EXPECT_EQ(ccv_cnnp_dataframe_row_count(batched), 2);
  EXPECT_EQ(ccv_cnnp_dataframe_tuple_size(batched, 0), 2);
  ccv_cnnp_dataframe_iter_t* it = ccv_cnnp_dataframe_iter_new(batched, IDX(0), 1);
  void* v;
  for (int b = 0; b < 2; b++) {
    ASSERT_EQ(ccv_cnnp_dataframe_iter_next(it, &v, 1, nullptr), 0);
    auto** t = reinterpret_cast<ccv_nnc_tensor_t**>(v);
    for (int g = 0; g < 2; g++) {
      const int first = b * 4 + g * 2;
      const int n = std::max(0, std::min(2, 5 - first));
      ASSERT_EQ(t[g]->info.dim[0], n);
      EXPECT_EQ(t[g]->info.format, CCV_TENSOR_FORMAT_NCHW);
      EXPECT_EQ(t[g]->info.dim[1], 2);  // C
      EXPECT_EQ(t[g]->info.dim[2], 2);  // H
      EXPECT_EQ(t[g]->info.dim[3], 3);  // W
      for (int j = 0; j < n; j++)
        for (int c = 0; c < 2; c++)
          for (int y = 0; y < 2; y++)
            for (int x = 0; x < 3; x++)
              EXPECT_EQ(t[g]->data.f32[((j * 2 + c) * 2 + y) * 3 + x], order[first + j] * 100 + (y * 3 + x) * 2 + c);
    }
  }
  ccv_cnnp_dataframe_iter_free(it);
  ccv_cnnp_dataframe_free(batched);
  ccv_cnnp_dataframe_free(df);
}

TEST(Dataframe, CombineRefusesRowsOfDifferentShapes) {
  struct Ctx {
    static void e(int, const int* rows, int n, void** data, void*, ccv_nnc_stream_context_t*) {
      for (int i = 0; i < n; i++) {
        if (data[i]) ccv_nnc_tensor_free(static_cast<ccv_nnc_tensor_t*>(data[i]));
        data[i] = ccv_nnc_tensor_new(nullptr, cpu(CCV_32F, CCV_TENSOR_FORMAT_NHWC, {rows[i] + 1}), 0);
      }
    }
  };
  ccv_cnnp_column_data_t column{};
  column.data_enum = Ctx::e;
  column.data_deinit = tensor_deinit;
  ccv_cnnp_dataframe_t* df = ccv_cnnp_dataframe_new(&column, 1, 4);
  ccv_cnnp_dataframe_t* batched = ccv_cnnp_dataframe_combine_new(df, IDX(0), 1, 2, 1, CCV_TENSOR_FORMAT_NHWC);
  ccv_cnnp_dataframe_iter_t* it = ccv_cnnp_dataframe_iter_new(batched, IDX(0), 1);
  void* v;
  EXPECT_EQ(ccv_cnnp_dataframe_iter_next(it, &v, 1, nullptr), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(last_error().find("differ in shape"), std::string::npos) << last_error();
  ccv_cnnp_dataframe_iter_free(it);
  ccv_cnnp_dataframe_free(batched);
  ccv_cnnp_dataframe_free(df);
}

// sample_new: each row is the sum of 3 rows of ints.
void sum_sample(void* const* input, int n, void** output, void* context, ccv_nnc_stream_context_t*) {
  (*static_cast<int*>(context))++;
  if (!*output) *output = std::malloc(sizeof(int));
  int s = 0;
  for (int i = 0; i < n; i++) s += *static_cast<int*>(input[i]);
  *static_cast<int*>(*output) = s;
}
void count_context_deinit(void* context) { *static_cast<int*>(context) = -1000; }

TEST(Dataframe, SampleReducesBatchesOfRows) {
  IntSource s;
  ccv_cnnp_dataframe_t* df = int_frame(&s, 8);
  int calls = 0;
  ccv_cnnp_dataframe_t* sampled =
      ccv_cnnp_dataframe_sample_new(df, sum_sample, free_deinit, 0, 3, &calls, count_context_deinit);
  ASSERT_NE(sampled, nullptr);
  EXPECT_EQ(ccv_cnnp_dataframe_row_count(sampled), 3);
  const std::vector<int> expect = {1 + 11 + 21, 31 + 41 + 51, 61 + 71};
  ccv_cnnp_dataframe_iter_t* it = ccv_cnnp_dataframe_iter_new(sampled, IDX(0), 1);
  void* v;
  for (int r = 0; r < 3; r++) {
    ASSERT_EQ(ccv_cnnp_dataframe_iter_next(it, &v, 1, nullptr), 0);
    EXPECT_EQ(*static_cast<int*>(v), expect[r]);
  }
  ccv_cnnp_dataframe_iter_free(it);
  EXPECT_EQ(calls, 3);
  ccv_cnnp_dataframe_free(sampled);
  EXPECT_EQ(calls, -1000);  // the sampled dataframe owned the context
  ccv_cnnp_dataframe_free(df);
  EXPECT_EQ(s.allocations, s.frees);
}

// --- one_squared / truncate / cmd_exec / add_aux ----------------------------------

// Row r: lengths tensor {r + 1, 1} (32S) and a 2 x 4 x 2 sequence tensor.
void lens_enum(int, const int* rows, int n, void** data, void*, ccv_nnc_stream_context_t*) {
  for (int i = 0; i < n; i++) {
    if (!data[i]) data[i] = ccv_nnc_tensor_new(nullptr, cpu(CCV_32S, CCV_TENSOR_FORMAT_NHWC, {2}), 0);
    auto* t = static_cast<ccv_nnc_tensor_t*>(data[i]);
    t->data.i32[0] = rows[i] + 1;
    t->data.i32[1] = 1;
  }
}
void seq_enum(int, const int* rows, int n, void** data, void*, ccv_nnc_stream_context_t*) {
  for (int i = 0; i < n; i++) {
    if (!data[i]) data[i] = ccv_nnc_tensor_new(nullptr, cpu(CCV_32F, CCV_TENSOR_FORMAT_NHWC, {2, 4, 2}), 0);
    auto* t = static_cast<ccv_nnc_tensor_t*>(data[i]);
    for (int e = 0; e < 16; e++) t->data.f32[e] = static_cast<float>(rows[i] * 100 + e);
  }
}

TEST(Dataframe, OneSquaredAndTruncate) {
  ccv_cnnp_column_data_t columns[2] = {};
  columns[0].data_enum = lens_enum;
  columns[0].data_deinit = tensor_deinit;
  columns[1].data_enum = seq_enum;
  columns[1].data_deinit = tensor_deinit;
  ccv_cnnp_dataframe_t* df = ccv_cnnp_dataframe_new(columns, 2, 3);
  const int sq = ccv_cnnp_dataframe_one_squared(df, IDX(0), 1, 1, 4, nullptr);
  const int sqfixed = ccv_cnnp_dataframe_one_squared(df, IDX(0), 1, 0, 4, nullptr);
  const int tr = ccv_cnnp_dataframe_truncate(df, IDX(1), 1, IDX(0), 1, nullptr);
  ASSERT_GE(std::min({sq, sqfixed, tr}), 0);
  EXPECT_EQ(ccv_cnnp_dataframe_tuple_size(df, sq), 1);
  ccv_cnnp_dataframe_iter_t* it = ccv_cnnp_dataframe_iter_new(df, IDX(sq, sqfixed, tr), 3);
  void* v[3];
  for (int r = 0; r < 3; r++) {
    ASSERT_EQ(ccv_cnnp_dataframe_iter_next(it, v, 3, nullptr), 0);
    const int lens[2] = {r + 1, 1};
    const int l = r + 1;  // the longest
    auto* m = static_cast<ccv_nnc_tensor_t*>(static_cast<void**>(v[0])[0]);
    ASSERT_EQ(m->info.dim[0], 2);
    ASSERT_EQ(m->info.dim[1], l);
    ASSERT_EQ(m->info.dim[2], l);
    for (int b = 0; b < 2; b++)
      for (int y = 0; y < l; y++)
        for (int x = 0; x < l; x++)
          EXPECT_EQ(m->data.i32[(b * l + y) * l + x], (y < lens[b] && x < lens[b]) ? 1 : 0);
    auto* f = static_cast<ccv_nnc_tensor_t*>(static_cast<void**>(v[1])[0]);
    ASSERT_EQ(f->info.dim[1], 4);
    EXPECT_EQ(f->data.i32[(1 * 4 + 0) * 4 + 0], 1);
    EXPECT_EQ(f->data.i32[(1 * 4 + 0) * 4 + 1], 0);
    auto* t = static_cast<ccv_nnc_tensor_t*>(static_cast<void**>(v[2])[0]);
    ASSERT_EQ(t->info.dim[0], 2);
    ASSERT_EQ(t->info.dim[1], l);
    ASSERT_EQ(t->info.dim[2], 2);
    for (int b = 0; b < 2; b++)
      for (int s = 0; s < l; s++)
        for (int c = 0; c < 2; c++)
          EXPECT_EQ(t->data.f32[(b * l + s) * 2 + c], r * 100 + (b * 4 + s) * 2 + c);
  }
  ccv_cnnp_dataframe_iter_free(it);
  ccv_cnnp_dataframe_free(df);
}

TEST(Dataframe, CmdExecAndAddAux) {
  TensorSource src;
  ccv_cnnp_column_data_t column{};
  column.data_enum = tensor_enum;
  column.data_deinit = tensor_deinit;
  column.context = &src;
  ccv_cnnp_dataframe_t* df = ccv_cnnp_dataframe_new(&column, 1, 3);
  const int tuple = ccv_cnnp_dataframe_make_tuple(df, IDX(0), 1, nullptr);
  ccv_nnc_cmd_param_t params{};
  const ccv_nnc_cmd_t exp = ccv_nnc_cmd(CCV_NNC_EWEXP_FORWARD, nullptr, params, 0);
  const ccv_nnc_tensor_param_t out = cpu(CCV_32F, CCV_TENSOR_FORMAT_NHWC, {2, 3, 2});
  const int ran = ccv_cnnp_dataframe_cmd_exec(df, tuple, exp, ccv_nnc_hint_t{}, 0, 0, 1, &out, 1, 0, "exp");
  ASSERT_GE(ran, 0);
  EXPECT_EQ(ccv_cnnp_dataframe_tuple_size(df, ran), 1);
  const int aux = ccv_cnnp_dataframe_add_aux(df, cpu(CCV_32F, CCV_TENSOR_FORMAT_NHWC, {5}), "aux");
  ccv_cnnp_dataframe_iter_t* it = ccv_cnnp_dataframe_iter_new(df, IDX(ran, aux), 2);
  void* v[2];
  void* first_aux = nullptr;
  for (int r = 0; r < 3; r++) {
    ASSERT_EQ(ccv_cnnp_dataframe_iter_next(it, v, 2, nullptr), 0);
    auto* t = static_cast<ccv_nnc_tensor_t*>(static_cast<void**>(v[0])[0]);
    // exp of r * 100 + e: finite for row 0, infinite beyond (as exp of a float is).
    for (int e = 0; e < 12; e++) EXPECT_FLOAT_EQ(t->data.f32[e], std::exp(static_cast<float>(r * 100 + e)));
    auto* a = static_cast<ccv_nnc_tensor_t*>(v[1]);
    EXPECT_EQ(a->info.dim[0], 5);
    if (!first_aux) first_aux = a;
    EXPECT_EQ(a, first_aux);  // one scratch tensor per slot, reused
  }
  ccv_cnnp_dataframe_iter_free(it);
  EXPECT_EQ(ccv_cnnp_dataframe_cmd_exec(df, 0, exp, ccv_nnc_hint_t{}, 0, 0, 1, &out, 1, 0, nullptr), -1);
  EXPECT_NE(last_error().find("does not hold tuples"), std::string::npos);
  EXPECT_EQ(ccv_cnnp_dataframe_cmd_exec(df, tuple, exp, ccv_nnc_hint_t{}, 0, 1, 1, &out, 1, 0, nullptr), -1);
  EXPECT_NE(last_error().find("outside the column's tuples"), std::string::npos);
  ccv_cnnp_dataframe_free(df);
}

// --- allocation-free passes ---------------------------------------------------------

// u8 "images" of 4 x 4 (value (row + i) % 256), mapped to normalised fp32
// tensors, with a one-hot label, batched by 3 over 10 rows.
struct Image {
  unsigned char pixels[16];
  int label;
};
void image_map(void* const* const* in, int, int n, void** data, void* context, ccv_nnc_stream_context_t*) {
  int* allocations = static_cast<int*>(context);
  for (int i = 0; i < n; i++) {
    if (!data[i]) {
      data[i] = ccv_nnc_tensor_new(nullptr, cpu(CCV_32F, CCV_TENSOR_FORMAT_NHWC, {4, 4, 1}), 0);
      ++*allocations;
    }
    const auto* img = static_cast<const Image*>(in[0][i]);
    auto* t = static_cast<ccv_nnc_tensor_t*>(data[i]);
    for (int k = 0; k < 16; k++) t->data.f32[k] = (img->pixels[k] / 255.0f - 0.5f) / 0.25f;
  }
}

TEST(Dataframe, ThreeEpochsAllocateNothingAfterTheFirst) {
  ccv_array_t* array = ccv_array_new(sizeof(Image), 10, 0);
  for (int r = 0; r < 10; r++) {
    Image img;
    for (int k = 0; k < 16; k++) img.pixels[k] = static_cast<unsigned char>((r * 7 + k) % 256);
    img.label = r % 4;
    ccv_array_push(array, &img);
  }
  ccv_cnnp_dataframe_t* df = ccv_cnnp_dataframe_from_array_new(array);
  int map_allocations = 0;
  const int x = ccv_cnnp_dataframe_map(df, image_map, 0, tensor_deinit, IDX(0), 1, &map_allocations,
                                       nullptr, nullptr);
  const int y = ccv_cnnp_dataframe_one_hot(df, 0, offsetof(Image, label), 4, 1, 0, CCV_32F, CCV_TENSOR_FORMAT_NHWC,
                                           nullptr);
  ccv_cnnp_dataframe_t* batched = ccv_cnnp_dataframe_combine_new(df, IDX(x, y), 2, 3, 1, CCV_TENSOR_FORMAT_NHWC);
  for (int prefetch = 0; prefetch < 2; prefetch++) {
    ccv_cnnp_dataframe_iter_t* it = ccv_cnnp_dataframe_iter_new(batched, IDX(0), 1);
    uint64_t process[3], library[3];
    int maps[3];
    double checksum[3] = {0, 0, 0};
    double ones[3] = {0, 0, 0};
    for (int epoch = 0; epoch < 3; epoch++) {
      const uint64_t p0 = alloc_counter::count(), l0 = nnc::dataframe::allocation_count();
      const int m0 = map_allocations;
      ccv_cnnp_dataframe_shuffle(df);
      ccv_cnnp_dataframe_shuffle(batched);
      ccv_cnnp_dataframe_iter_set_cursor(it, 0);
      void* v;
      for (;;) {
        if (prefetch) ccv_cnnp_dataframe_iter_prefetch(it, 2, nullptr);
        if (ccv_cnnp_dataframe_iter_next(it, &v, 1, nullptr) != 0) break;
        auto** t = reinterpret_cast<ccv_nnc_tensor_t**>(v);
        for (int k = 0; k < t[0]->info.dim[0] * 16; k++) checksum[epoch] += t[0]->data.f32[k];
        for (int k = 0; k < t[1]->info.dim[0] * 4; k++) ones[epoch] += t[1]->data.f32[k];
      }
      process[epoch] = alloc_counter::count() - p0;
      library[epoch] = nnc::dataframe::allocation_count() - l0;
      maps[epoch] = map_allocations - m0;
    }
    ccv_cnnp_dataframe_iter_free(it);
    // The first pass allocates (the combine's own iterator over its parent
    // is shared by every iterator of the batched dataframe, so the map and
    // one-hot slots are allocated once, in the first loop).
    EXPECT_GT(process[0], 0u);
    EXPECT_GT(library[0], 0u);
    if (prefetch == 0) {
      EXPECT_GT(maps[0], 0);
    }
    for (int epoch = 1; epoch < 3; epoch++) {
      EXPECT_EQ(process[epoch], 0u) << "prefetch " << prefetch << " epoch " << epoch;
      EXPECT_EQ(library[epoch], 0u) << "prefetch " << prefetch << " epoch " << epoch;
      EXPECT_EQ(maps[epoch], 0) << "prefetch " << prefetch << " epoch " << epoch;
      // Every epoch sees every row once, whatever the order.
      EXPECT_NEAR(checksum[epoch], checksum[0], 1e-4 * std::abs(checksum[0]));
    }
    // Pixels: sum over rows r and k of ((7r + k) / 255 - 0.5) / 0.25.
    double expect = 0;
    for (int r = 0; r < 10; r++)
      for (int k = 0; k < 16; k++) expect += ((r * 7 + k) / 255.0 - 0.5) / 0.25;
    for (int epoch = 0; epoch < 3; epoch++) {
      EXPECT_NEAR(checksum[epoch], expect, 1e-3);
      EXPECT_EQ(ones[epoch], 10);  // one 1 per row in the one-hot labels
    }
  }
  ccv_cnnp_dataframe_free(batched);
  ccv_cnnp_dataframe_free(df);
  ccv_array_free(array);
}

// --- CSV ---------------------------------------------------------------------------

std::vector<std::vector<std::string>> read_all(ccv_cnnp_dataframe_t* df, int columns) {
  std::vector<int> cols(columns);
  std::iota(cols.begin(), cols.end(), 0);
  ccv_cnnp_dataframe_iter_t* it = ccv_cnnp_dataframe_iter_new(df, cols.data(), columns);
  std::vector<void*> v(columns);
  std::vector<std::vector<std::string>> rows;
  while (ccv_cnnp_dataframe_iter_next(it, v.data(), columns, nullptr) == 0) {
    rows.emplace_back();
    for (void* cell : v) rows.back().emplace_back(static_cast<const char*>(cell));
  }
  ccv_cnnp_dataframe_iter_free(it);
  return rows;
}

TEST(DataframeCsv, QuotesEmptyFieldsCrlfAndHeader) {
  const std::string text =
      "name,score,note\r\n"
      "alice,1.5,\"hello, world\"\r\n"
      "\"bob \"\"the\"\" builder\",,\r\n"
      ",2,\"multi\r\nline\"\r\n"
      "\r\n"
      "carol,3\r\n"
      "\"\",\"\",x";
  int columns = -1;
  ccv_cnnp_dataframe_t* df = ccv_cnnp_dataframe_from_csv_new(const_cast<char*>(text.data()),
                                                             CCV_CNNP_DATAFRAME_CSV_MEMORY, text.size(), 0, 0, 1, &columns);
  ASSERT_NE(df, nullptr) << last_error();
  ASSERT_EQ(columns, 3);
  EXPECT_EQ(ccv_cnnp_dataframe_row_count(df), 5);
  EXPECT_STREQ(ccv_cnnp_dataframe_column_name(df, 0), "name");
  EXPECT_STREQ(ccv_cnnp_dataframe_column_name(df, 2), "note");
  const std::vector<std::vector<std::string>> expect = {
      {"alice", "1.5", "hello, world"},
      {"bob \"the\" builder", "", ""},
      {"", "2", "multi\r\nline"},
      {"carol", "3", ""},
      {"", "", "x"},
  };
  EXPECT_EQ(read_all(df, 3), expect);
  ccv_cnnp_dataframe_free(df);
}

TEST(DataframeCsv, DelimiterQuoteLineEndingsAndFiles) {
  // Tabs, single quotes, LF, LFCR and a lone CR; no header; a ragged row.
  const std::string text = "a\t'b\tc'\t''''\n1\t2\n\r3\t'4''5'\t6\t7\r8";
  FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  std::fwrite(text.data(), 1, text.size(), f);
  std::rewind(f);
  int columns = 0;
  ccv_cnnp_dataframe_t* df = ccv_cnnp_dataframe_from_csv_new(f, CCV_CNNP_DATAFRAME_CSV_FILE, 0, '\t', '\'', 0, &columns);
  std::fclose(f);
  ASSERT_NE(df, nullptr) << last_error();
  EXPECT_EQ(columns, 4);
  EXPECT_EQ(ccv_cnnp_dataframe_column_name(df, 0), nullptr);
  const std::vector<std::vector<std::string>> expect = {
      {"a", "b\tc", "'", ""},
      {"1", "2", "", ""},
      {"3", "4'5", "6", "7"},
      {"8", "", "", ""},
  };
  EXPECT_EQ(read_all(df, 4), expect);
  ccv_cnnp_dataframe_free(df);
}

TEST(DataframeCsv, MalformedInput) {
  const std::string open_quote = "a,b\n\"never closed,c\nd,e\n";
  int columns = -7;
  EXPECT_EQ(ccv_cnnp_dataframe_from_csv_new(const_cast<char*>(open_quote.data()), CCV_CNNP_DATAFRAME_CSV_MEMORY,
                                            open_quote.size(), 0, 0, 0, &columns),
            nullptr);
  EXPECT_NE(last_error().find("opened on line 2 is not closed"), std::string::npos) << last_error();
  EXPECT_EQ(columns, -7);
  EXPECT_EQ(ccv_cnnp_dataframe_from_csv_new(nullptr, CCV_CNNP_DATAFRAME_CSV_MEMORY, 3, 0, 0, 0, &columns), nullptr);
  EXPECT_NE(last_error().find("input is NULL"), std::string::npos);
  EXPECT_EQ(ccv_cnnp_dataframe_from_csv_new(const_cast<char*>("x"), 7, 1, 0, 0, 0, &columns), nullptr);
  EXPECT_NE(last_error().find("unknown input type"), std::string::npos);
  // Lenient cases: quotes inside an unquoted field and text after a closing
  // quote are kept.
  const std::string stray = "ab\"c,\"d\"e\n";
  ccv_cnnp_dataframe_t* df = ccv_cnnp_dataframe_from_csv_new(const_cast<char*>(stray.data()),
                                                             CCV_CNNP_DATAFRAME_CSV_MEMORY, stray.size(), 0, 0, 0, &columns);
  ASSERT_NE(df, nullptr);
  EXPECT_EQ(read_all(df, 2), (std::vector<std::vector<std::string>>{{"ab\"c", "de"}}));
  ccv_cnnp_dataframe_free(df);
  // Empty input: no rows, no columns.
  df = ccv_cnnp_dataframe_from_csv_new(const_cast<char*>(""), CCV_CNNP_DATAFRAME_CSV_MEMORY, 0, 0, 0, 1, &columns);
  ASSERT_NE(df, nullptr);
  EXPECT_EQ(columns, 0);
  EXPECT_EQ(ccv_cnnp_dataframe_row_count(df), 0);
  ccv_cnnp_dataframe_free(df);
}

// Random tables written as CSV (cells quoted when they hold a delimiter, a
// quote, a line ending or nothing; random LF / CRLF endings) read back cell
// for cell; random bytes over the same alphabet never crash the reader.
TEST(DataframeCsv, RandomTablesRoundTripAndGarbageIsSafe) {
  uint64_t state = 42;
  auto draw = [&](uint64_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (state >> 33) % n;
  };
  const char alphabet[] = {'a', 'b', ',', '"', '\n', '\r', ' ', 'x'};
  for (int round = 0; round < 200; round++) {
    const int rows = 1 + static_cast<int>(draw(6)), columns = 1 + static_cast<int>(draw(4));
    std::vector<std::vector<std::string>> table(rows, std::vector<std::string>(columns));
    std::string text;
    for (auto& row : table) {
      for (int c = 0; c < columns; c++) {
        std::string& cell = row[c];
        const int len = static_cast<int>(draw(5));
        for (int k = 0; k < len; k++) cell.push_back(alphabet[draw(sizeof(alphabet))]);
        const bool quote = cell.empty() || cell.find_first_of(",\"\r\n") != std::string::npos;
        if (c) text.push_back(',');
        if (quote) {
          text.push_back('"');
          for (char ch : cell) {
            if (ch == '"') text.push_back('"');
            text.push_back(ch);
          }
          text.push_back('"');
        } else {
          text += cell;
        }
      }
      text += draw(2) ? "\r\n" : "\n";
    }
    int got_columns = 0;
    ccv_cnnp_dataframe_t* df = ccv_cnnp_dataframe_from_csv_new(const_cast<char*>(text.data()),
                                                               CCV_CNNP_DATAFRAME_CSV_MEMORY, text.size(), 0, 0, 0,
                                                               &got_columns);
    ASSERT_NE(df, nullptr) << last_error();
    ASSERT_EQ(got_columns, columns) << text;
    ASSERT_EQ(read_all(df, columns), table) << text;
    ccv_cnnp_dataframe_free(df);
  }
  for (int round = 0; round < 2000; round++) {
    std::string text(draw(40), ' ');
    for (char& ch : text) ch = alphabet[draw(sizeof(alphabet))];
    int got_columns = 0;
    ccv_cnnp_dataframe_t* df = ccv_cnnp_dataframe_from_csv_new(const_cast<char*>(text.data()),
                                                               CCV_CNNP_DATAFRAME_CSV_MEMORY, text.size(), 0, 0,
                                                               static_cast<int>(draw(2)), &got_columns);
    if (!df) {
      EXPECT_NE(last_error().find("is not closed"), std::string::npos) << last_error();
      continue;
    }
    if (got_columns > 0) read_all(df, got_columns);  // every cell a readable string
    ccv_cnnp_dataframe_free(df);
  }
}

// --- bad input -----------------------------------------------------------------------

TEST(Dataframe, BadInputGetsCodesAndMessages) {
  EXPECT_EQ(ccv_cnnp_dataframe_new(nullptr, 1, 3), nullptr);
  EXPECT_NE(last_error().find("column_data is NULL"), std::string::npos);
  EXPECT_EQ(ccv_cnnp_dataframe_new(nullptr, 0, -1), nullptr);
  EXPECT_NE(last_error().find("negative row count"), std::string::npos);
  EXPECT_EQ(ccv_cnnp_dataframe_row_count(nullptr), -1);
  EXPECT_NE(last_error().find("dataframe is NULL"), std::string::npos);
  EXPECT_EQ(ccv_cnnp_dataframe_column_name(nullptr, 0), nullptr);
  ccv_cnnp_dataframe_shuffle(nullptr);
  EXPECT_NE(last_error().find("ccv_cnnp_dataframe_shuffle: dataframe is NULL"), std::string::npos);
  EXPECT_EQ(ccv_cnnp_dataframe_add(nullptr, int_enum, 0, nullptr, nullptr, nullptr, nullptr), -1);
  EXPECT_EQ(ccv_cnnp_dataframe_iter_new(nullptr, IDX(0), 1), nullptr);
  EXPECT_EQ(ccv_cnnp_dataframe_iter_next(nullptr, nullptr, 0, nullptr), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(last_error().find("iterator is NULL"), std::string::npos);
  ccv_cnnp_dataframe_iter_peek(nullptr, nullptr, 0, 0, nullptr);
  EXPECT_NE(last_error().find("iterator is NULL"), std::string::npos);
  EXPECT_EQ(ccv_cnnp_dataframe_iter_prefetch(nullptr, 1, nullptr), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(ccv_cnnp_dataframe_iter_set_cursor(nullptr, 0), -1);
  ccv_cnnp_dataframe_iter_free(nullptr);
  ccv_cnnp_dataframe_free(nullptr);
  EXPECT_EQ(ccv_cnnp_dataframe_from_array_new(nullptr), nullptr);
  EXPECT_EQ(ccv_cnnp_dataframe_combine_new(nullptr, IDX(0), 1, 2, 1, CCV_TENSOR_FORMAT_NHWC), nullptr);

  IntSource s;
  ccv_cnnp_dataframe_t* df = int_frame(&s, 4);
  EXPECT_EQ(ccv_cnnp_dataframe_column_name(df, 1), nullptr);
  EXPECT_NE(last_error().find("column 1 is out of range"), std::string::npos);
  EXPECT_EQ(ccv_cnnp_dataframe_map(df, scale_map, 0, nullptr, IDX(3), 1, nullptr, nullptr, nullptr), -1);
  EXPECT_NE(last_error().find("column 3 is out of range"), std::string::npos);
  EXPECT_EQ(ccv_cnnp_dataframe_map(df, nullptr, 0, nullptr, IDX(0), 1, nullptr, nullptr, nullptr), -1);
  EXPECT_EQ(ccv_cnnp_dataframe_iter_new(df, IDX(-1), 1), nullptr);
  EXPECT_EQ(ccv_cnnp_dataframe_extract_value(df, 2, 0, nullptr), -1);
  EXPECT_EQ(ccv_cnnp_dataframe_make_tuple(df, IDX(0, 5), 2, nullptr), -1);
  EXPECT_EQ(ccv_cnnp_dataframe_sample_new(df, sum_sample, nullptr, 0, 0, nullptr, nullptr), nullptr);
  EXPECT_NE(last_error().find("batch_size 0"), std::string::npos);
  EXPECT_EQ(ccv_cnnp_dataframe_combine_new(df, IDX(0), 1, 0, 1, CCV_TENSOR_FORMAT_NHWC), nullptr);
  EXPECT_EQ(ccv_cnnp_dataframe_combine_new(df, IDX(0), 1, 2, 1, 77), nullptr);
  EXPECT_NE(last_error().find("neither NHWC nor NCHW"), std::string::npos);
  EXPECT_EQ(ccv_cnnp_dataframe_copy_to_gpu(df, 0, 0, 1, 0, nullptr), -1);  // (on a GPU: test_fakegpu)
  EXPECT_NE(last_error().find("does not hold tuples"), std::string::npos) << last_error();
  EXPECT_EQ(ccv_cnnp_dataframe_truncate(df, IDX(0, 0), 2, IDX(0, 0, 0), 3, nullptr), -1);
  EXPECT_EQ(ccv_cnnp_dataframe_one_squared(df, IDX(0), 1, 1, 0, nullptr), -1);
  EXPECT_EQ(ccv_cnnp_dataframe_add_aux(df, cpu(CCV_32F, CCV_TENSOR_FORMAT_NHWC, {}), nullptr), -1);

  ccv_cnnp_dataframe_iter_t* it = ccv_cnnp_dataframe_iter_new(df, IDX(0), 1);
  void* v = nullptr;
  EXPECT_EQ(ccv_cnnp_dataframe_iter_next(it, &v, 2, nullptr), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(last_error().find("column_idx_size 2 is out of range"), std::string::npos);
  EXPECT_EQ(ccv_cnnp_dataframe_iter_next(it, nullptr, 1, nullptr), CCV_NNC_EXEC_INVALID);
  EXPECT_EQ(ccv_cnnp_dataframe_iter_prefetch(it, -1, nullptr), CCV_NNC_EXEC_INVALID);
  ASSERT_EQ(ccv_cnnp_dataframe_iter_next(it, nullptr, 0, nullptr), 0);  // advance without reading
  ccv_cnnp_dataframe_iter_peek(it, &v, 0, 1, nullptr);
  EXPECT_EQ(*static_cast<int*>(v), 1);
  ccv_cnnp_dataframe_iter_peek(it, &v, 1, 1, nullptr);
  EXPECT_NE(last_error().find("out of range"), std::string::npos);
  ccv_cnnp_dataframe_iter_free(it);
  ccv_cnnp_dataframe_free(df);
}

}  // namespace

// ccv_cnnp_dataframe_shard_new: processes of a data-parallel run each take
// every size-th row of the shuffled set, as many as every other process,
// and together no row twice; a map column and a shuffle within the shard
// work; the parent keeps its contexts.
TEST(Dataframe, ShardsPartitionTheShuffledRows) {
  for (int size : {1, 2, 3, 4}) {
    IntSource src;
    ccv_cnnp_dataframe_t* df = int_frame(&src, 23);
    ccv_cnnp_dataframe_shuffle(df);
    const std::vector<int> order = walk(df);
    std::vector<int> all;
    for (int rank = 0; rank < size; rank++) {
      ccv_cnnp_dataframe_t* shard = ccv_cnnp_dataframe_shard_new(df, rank, size);
      ASSERT_NE(shard, nullptr) << last_error();
      EXPECT_EQ(ccv_cnnp_dataframe_row_count(shard), 23 / size);
      const std::vector<int> rows = walk(shard);
      ASSERT_EQ(rows.size(), static_cast<size_t>(23 / size));
      for (size_t k = 0; k < rows.size(); k++) EXPECT_EQ(rows[k], order[static_cast<size_t>(rank) + k * static_cast<size_t>(size)]);
      // A map over the shard sees the shard's rows.
      Scale sc{0.5f};
      const int mapped = ccv_cnnp_dataframe_map(shard, scale_map, 0, scale_deinit, IDX(0), 1, &sc, nullptr, nullptr);
      ASSERT_GE(mapped, 0) << last_error();
      ccv_cnnp_dataframe_iter_t* it = ccv_cnnp_dataframe_iter_new(shard, &mapped, 1);
      void* v;
      size_t k = 0;
      while (ccv_cnnp_dataframe_iter_next(it, &v, 1, nullptr) == 0) {
        EXPECT_FLOAT_EQ(*static_cast<float*>(v), (rows[k] * 10 + 1) * 0.5f);
        k++;
      }
      EXPECT_EQ(k, rows.size());
      ccv_cnnp_dataframe_iter_free(it);
      // A shuffle of the shard permutes its own rows.
      ccv_cnnp_dataframe_shuffle(shard);
      std::vector<int> again = walk(shard), sorted_rows = rows;
      std::sort(again.begin(), again.end());
      std::sort(sorted_rows.begin(), sorted_rows.end());
      EXPECT_EQ(again, sorted_rows);
      all.insert(all.end(), rows.begin(), rows.end());
      ccv_cnnp_dataframe_free(shard);
    }
    std::sort(all.begin(), all.end());
    EXPECT_TRUE(std::adjacent_find(all.begin(), all.end()) == all.end()) << "a row in two shards";
    EXPECT_EQ(all.size(), static_cast<size_t>(23 / size * size));
    EXPECT_EQ(src.context_frees, 0);  // the shards did not free the parent's context
    ccv_cnnp_dataframe_free(df);
    EXPECT_EQ(src.context_frees, 1);
  }
}

TEST(Dataframe, ShardRefusesBadRanks) {
  IntSource src;
  ccv_cnnp_dataframe_t* df = int_frame(&src, 5);
  EXPECT_EQ(ccv_cnnp_dataframe_shard_new(df, 2, 2), nullptr);
  EXPECT_NE(last_error().find("rank 2 is outside [0, 2)"), std::string::npos) << last_error();
  EXPECT_EQ(ccv_cnnp_dataframe_shard_new(df, 0, 0), nullptr);
  EXPECT_NE(last_error().find("size 0 is not positive"), std::string::npos) << last_error();
  EXPECT_EQ(ccv_cnnp_dataframe_shard_new(df, 0, 6), nullptr);
  EXPECT_NE(last_error().find("5 rows cannot give each of 6 processes one"), std::string::npos) << last_error();
  EXPECT_EQ(ccv_cnnp_dataframe_shard_new(nullptr, 0, 1), nullptr);
  ccv_cnnp_dataframe_free(df);
}
