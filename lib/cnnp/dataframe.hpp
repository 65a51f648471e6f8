// The dataframe (Level 5): a table of lazily computed columns, walked by
// iterators that reuse their buffers.
//
//   ccv_cnnp_dataframe_t* df = ccv_cnnp_dataframe_from_array_new(array);
//   const int t = ccv_cnnp_dataframe_one_hot(df, 0, offsetof(S, label), 10, 1, 0, CCV_32F, CCV_TENSOR_FORMAT_NHWC, 0);
//   ccv_cnnp_dataframe_t* batched = ccv_cnnp_dataframe_combine_new(df, &t, 1, 64, 1, CCV_TENSOR_FORMAT_NHWC);
//   ccv_cnnp_dataframe_iter_t* it = ccv_cnnp_dataframe_iter_new(batched, (int[]){0}, 1);
//   void* tuple;
//   while (ccv_cnnp_dataframe_iter_next(it, &tuple, 1, 0) == 0) { ... ((void**)tuple)[0] ... }
//
// Ownership: a column's values belong to the iterator that computed them.
// Each iterator keeps, per column, one value slot per row it holds (the row
// last returned by next plus the prefetched ones); a slot keeps its value from
// one row to the next, and the column's enumerator or map receives that old
// value in data[i] to reuse. So once an iterator has held as many rows as it
// ever will (the first pass), walking the data again allocates nothing in the
// dataframe, and nothing in columns whose callbacks reuse their slot.
//
// Threads: ccv_cnnp_dataframe_iter_prefetch hands the rows to a worker thread
// owned by the iterator, and returns at once; next waits for a row only if the
// worker has not finished it. The callbacks of one dataframe never run on two
// threads at once (a per-dataframe mutex), so a column's context needs no lock
// of its own; the callbacks may run on the worker thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nnc/ccv_nnc.h"
#include "core/live.hpp"

namespace nnc::dataframe {

// One column: a source (data_enum) or a derived one (map over `inputs`, all
// of lower index, so column index order is a valid computing order).
struct Column {
  std::string name;
  bool has_name = false;
  int stream_type = 0;
  ccv_cnnp_column_data_enum_f data_enum = nullptr;
  ccv_cnnp_column_data_map_f map = nullptr;
  std::vector<int> inputs;
  ccv_cnnp_column_data_deinit_f data_deinit = nullptr;
  void* context = nullptr;
  ccv_cnnp_column_data_context_deinit_f context_deinit = nullptr;
  // Values are tuples (void* arrays) of this many entries; -1 when not.
  int tuple_size = -1;
};

// Allocations made by the dataframe code itself (row buffers, scratch arrays,
// tensors and tuples of the add-on columns), for tests that check that a
// second pass allocates nothing. Counted, never reset.
uint64_t allocation_count();
void count_allocation(uint64_t n = 1);

class Iterator;

}  // namespace nnc::dataframe

struct ccv_cnnp_dataframe_s {
  int row_count = 0;
  std::vector<nnc::dataframe::Column> columns;
  // Row order: empty until the first shuffle (then a permutation of rows).
  std::vector<int> order;
  uint64_t rng_state = 0;
  // Bumped by each shuffle: a prefetched row resolved under an older order is
  // recomputed.
  std::atomic<uint64_t> order_generation{0};
  // Held while any of this dataframe's callbacks runs, and by shuffle.
  std::mutex compute_mutex;

  ~ccv_cnnp_dataframe_s();
  int row_at(int position) const { return order.empty() ? position : order[position]; }
  nnc::LiveCounter<CCV_NNC_LIVE_DATAFRAME> live_counter_;  // ccv_nnc_live_object_count
};

namespace nnc::dataframe {

using Dataframe = ccv_cnnp_dataframe_s;

// One computed row: a value slot and a computed flag per column of the
// iterator's dataframe (columns outside the iterator's closure stay empty).
struct RowBuf {
  std::vector<void*> values;
  std::vector<uint8_t> computed;
  int position = -1;  // place in iteration order
  int row = -1;       // dataframe row
  uint64_t generation = 0;
  enum State : uint8_t { kFree, kPending, kClaimed, kReady, kFailed } state = kFree;
};

class Iterator {
 public:
  // Walk `df` computing the given columns (and what they read). `threaded`:
  // whether prefetch may start a worker thread (internal iterators, used by
  // derived dataframes from inside a callback, compute in place).
  Iterator(Dataframe* df, std::vector<int> column_idxs, bool threaded);
  ~Iterator();
  Iterator(const Iterator&) = delete;
  Iterator& operator=(const Iterator&) = delete;

  int column_count() const { return static_cast<int>(column_idxs_.size()); }
  // libnnc's next: 0 with a row, -1 at the end, -2 once more after the end.
  int next(void** data_ref, int count, ccv_nnc_stream_context_t* stream);
  void peek(void** data_ref, int offset, int count, ccv_nnc_stream_context_t* stream);
  int prefetch(int count, ccv_nnc_stream_context_t* stream);
  int set_cursor(int position);

  // Compute rows [start, start + count) of the iteration order, every
  // column of the iterator, on the calling thread, into buffers kept for
  // this use; read them with range_value until the next call. For derived
  // dataframes, whose callbacks need a batch of their parent's rows at once.
  void fetch_range(int start, int count, ccv_nnc_stream_context_t* stream);
  void* range_value(int i, int iter_column) const { return range_bufs_[i]->values[column_idxs_[iter_column]]; }

 private:
  RowBuf* take_free_buffer();
  void release_buffer(RowBuf* buf);
  // Compute `columns` (iterator column slots) for `rows`, under the
  // dataframe's compute mutex. Throws on failure (values stay in their slots).
  void compute(RowBuf* const* rows, int n, const int* iter_columns, int column_count, ccv_nnc_stream_context_t* stream);
  void compute_locked(RowBuf* const* rows, int n, const int* iter_columns, int column_count, ccv_nnc_stream_context_t* stream);
  void compute_column(int column, RowBuf* const* rows, int n, ccv_nnc_stream_context_t* stream);
  // Drop the prefetched rows (waiting for the worker to put its batch down).
  void discard_queue(std::unique_lock<std::mutex>& lock);
  void queue_push(RowBuf* buf);
  RowBuf* queue_pop();
  void fill_iota();
  void worker_loop();

  Dataframe* df_;
  std::vector<int> column_idxs_;
  std::vector<Column> columns_;  // the dataframe's columns as at creation
  std::vector<uint8_t> in_closure_;
  std::vector<int> closure_;  // columns computed for a full row, ascending
  bool threaded_;

  std::vector<std::unique_ptr<RowBuf>> pool_;
  std::vector<RowBuf*> free_;
  RowBuf* current_ = nullptr;
  int cursor_ = 0;       // position of the row next() returns
  int ended_ = 0;        // next() calls past the end
  // Prefetched rows for positions cursor_, cursor_ + 1, ... as a ring.
  std::vector<RowBuf*> queue_;
  size_t queue_head_ = 0;
  size_t queue_size_ = 0;

  // Scratch for one compute call (guarded by the dataframe's compute mutex).
  std::vector<void*> scratch_out_;
  std::vector<void*> scratch_in_;
  std::vector<void**> scratch_in_ptrs_;
  std::vector<int> scratch_rows_;
  std::vector<RowBuf*> scratch_bufs_;
  std::vector<RowBuf*> worker_bufs_;
  std::vector<RowBuf*> batch_;
  std::vector<RowBuf*> range_bufs_;
  std::vector<uint8_t> needed_;
  std::vector<int> iota_;  // 0, 1, ... : every iterator column
  int pending_ = 0;        // queued rows the worker has not claimed

  std::mutex mutex_;  // guards the queue and row states
  std::condition_variable cv_;
  std::thread worker_;
  bool stop_ = false;
  bool worker_busy_ = false;
  ccv_nnc_stream_context_t* worker_stream_ = nullptr;
};

// Checks shared by the API and the add-ons.
void check_column(const Dataframe* df, int column_idx, const char* what);
int add_column(Dataframe* df, Column column);
std::unique_ptr<Dataframe> make_dataframe(const ccv_cnnp_column_data_t* column_data, int column_size, int row_count);
void shuffle(Dataframe* df);

// Tensors and tuples of tensors held in value slots (dataframe_derived.cpp).
// reuse_tensor: a tensor of `params` in `slot`, the one already there when it
// is in the same memory (device) and its buffer is large enough (only its
// shape changes), else a new one (the old one freed). Never leaves the slot
// dangling.
ccv_nnc_tensor_t* reuse_tensor(void*& slot, const ccv_nnc_tensor_param_t& params);
void free_tensor(void* data, void* context);  // data_deinit of tensor columns
// A tuple of n tensor slots (all NULL), freed with free_tensor_tuple, which
// frees the tensors in it too.
void** new_tensor_tuple(int n);
void free_tensor_tuple(void* data, void* context);
// Bytes of a packed tensor of `params`; throws for an unknown datatype.
size_t packed_bytes(const ccv_nnc_tensor_param_t& params, const char* what);

// Derived dataframes (dataframe_derived.cpp).
std::unique_ptr<Dataframe> sample_new(Dataframe* df, ccv_cnnp_column_data_sample_f sample,
                                      ccv_cnnp_column_data_deinit_f data_deinit, int column_idx, int batch_size,
                                      void* context, ccv_cnnp_column_data_context_deinit_f context_deinit);
// Every size-th row from `rank`, of the parent's current order (dataframe_derived.cpp).
std::unique_ptr<Dataframe> shard_new(Dataframe* df, int rank, int size);
std::unique_ptr<Dataframe> combine_new(Dataframe* df, const int* column_idxs, int column_idx_size, int batch_count,
                                       int group_count, int format);

// Value-picking columns (dataframe.cpp).
int extract_value(Dataframe* df, int column_idx, off_t offset, const char* name);
int make_tuple(Dataframe* df, const int* column_idxs, int column_idx_size, const char* name);
int extract_tuple(Dataframe* df, int column_idx, int index, const char* name);

// Add-ons (dataframe_addons.cpp).
std::unique_ptr<Dataframe> from_array_new(ccv_array_t* array);
int add_aux(Dataframe* df, const ccv_nnc_tensor_param_t& params, const char* name);
int one_hot(Dataframe* df, int column_idx, off_t structof, int range, float onval, float offval, int datatype,
            int format, const char* name);
int copy_scalar(Dataframe* df, int column_idx, off_t structof, int from_dt, int to_dt, int format, const char* name);
int one_squared(Dataframe* df, const int* column_idxs, int column_idx_size, int variable_size, int max_length,
                const char* name);
int truncate(Dataframe* df, const int* vec_idxs, int vec_idx_size, const int* len_idxs, int len_idx_size,
             const char* name);
int copy_to_gpu(Dataframe* df, int column_idx, int tensor_offset, int tensor_size, int device_id, const char* name);
int cmd_exec(Dataframe* df, int column_idx, const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, int flags,
             int input_offset, int input_size, const ccv_nnc_tensor_param_t* output_params, int output_size,
             int stream_type, const char* name);

// Images (dataframe_image.cpp, decoders in dataframe_decode.cpp).
int read_image(Dataframe* df, int column_idx, off_t structof, const char* name);
int image_random_jitter(Dataframe* df, int column_idx, int datatype, const ccv_cnnp_random_jitter_t& jitter,
                        const char* name);
bool image_decoders_available();
// Decode a PNG or JPEG file into an 8-bit RGB matrix in `slot` (reused when
// its shape matches); throws with a message naming the file.
void decode_image(const char* filename, void*& slot);

// CSV (dataframe_csv.cpp).
std::unique_ptr<Dataframe> from_csv_new(void* input, int type, size_t len, char delim, char quote, int include_header,
                                        int* column_size);

}  // namespace nnc::dataframe
