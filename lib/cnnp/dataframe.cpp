// The dataframe's core: columns, row order, iterators with reused buffers
// and a prefetch worker, and the value-picking columns (extract_value,
// make_tuple, extract_tuple).
#include "cnnp/dataframe.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/error.hpp"
#include "core/splitmix.hpp"

namespace nnc::dataframe {

namespace {
std::atomic<uint64_t> g_allocations{0};

// The shuffle's generator: splitmix64, so that the order depends on nothing
// but the fixed seed and the number of shuffles before (std::shuffle's
// distributions differ between standard libraries).
uint64_t next_random(uint64_t& state) {
  SplitMix64 g{state};
  const uint64_t x = g.next();
  state = g.state;
  return x;
}
constexpr uint64_t kShuffleSeed = 0x6e6e635f64660001ull;

// A draw in [0, n) without modulo bias (Lemire's multiply-and-reject).
uint64_t bounded_random(uint64_t& state, uint64_t n) {
  uint64_t x = next_random(state);
  __uint128_t m = static_cast<__uint128_t>(x) * n;
  uint64_t low = static_cast<uint64_t>(m);
  if (low < n) {
    const uint64_t threshold = (0 - n) % n;
    while (low < threshold) {
      x = next_random(state);
      m = static_cast<__uint128_t>(x) * n;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}
}  // namespace

uint64_t allocation_count() { return g_allocations.load(std::memory_order_relaxed); }
void count_allocation(uint64_t n) { g_allocations.fetch_add(n, std::memory_order_relaxed); }

void check_column(const Dataframe* df, int column_idx, const char* what) {
  NNC_CHECK(column_idx >= 0 && column_idx < static_cast<int>(df->columns.size()),
            "%s: column %d is out of range (the dataframe has %d columns)", what, column_idx,
            static_cast<int>(df->columns.size()));
}

int add_column(Dataframe* df, Column column) {
  df->columns.push_back(std::move(column));
  return static_cast<int>(df->columns.size()) - 1;
}

std::unique_ptr<Dataframe> make_dataframe(const ccv_cnnp_column_data_t* column_data, int column_size, int row_count) {
  NNC_CHECK(row_count >= 0, "ccv_cnnp_dataframe_new: negative row count %d", row_count);
  NNC_CHECK(column_size >= 0, "ccv_cnnp_dataframe_new: negative column count %d", column_size);
  NNC_CHECK(column_size == 0 || column_data, "ccv_cnnp_dataframe_new: column_data is NULL for %d columns", column_size);
  for (int i = 0; i < column_size; i++)
    NNC_CHECK(column_data[i].data_enum, "ccv_cnnp_dataframe_new: column %d has no data_enum", i);
  auto df = std::make_unique<Dataframe>();
  df->row_count = row_count;
  df->rng_state = kShuffleSeed;
  df->columns.reserve(column_size);
  for (int i = 0; i < column_size; i++) {
    Column c;
    c.has_name = column_data[i].name != nullptr;
    if (c.has_name) c.name = column_data[i].name;
    c.stream_type = column_data[i].stream_type;
    c.data_enum = column_data[i].data_enum;
    c.data_deinit = column_data[i].data_deinit;
    c.context = column_data[i].context;
    c.context_deinit = column_data[i].context_deinit;
    df->columns.push_back(std::move(c));
  }
  return df;
}

void shuffle(Dataframe* df) {
  std::lock_guard<std::mutex> lock(df->compute_mutex);
  const int n = df->row_count;
  if (df->order.empty()) {
    df->order.resize(n);
    for (int i = 0; i < n; i++) df->order[i] = i;
  }
  // Fisher-Yates from the current order: every call a new permutation, the
  // sequence of permutations fixed by the seed.
  for (int i = n - 1; i > 0; i--) {
    const int j = static_cast<int>(bounded_random(df->rng_state, static_cast<uint64_t>(i) + 1));
    std::swap(df->order[i], df->order[j]);
  }
  df->order_generation.fetch_add(1, std::memory_order_release);
}

// ---------------------------------------------------------------------------
// Iterator

Iterator::Iterator(Dataframe* df, std::vector<int> column_idxs, bool threaded)
    : df_(df), column_idxs_(std::move(column_idxs)), columns_(df->columns), threaded_(threaded) {
  const int n = static_cast<int>(columns_.size());
  in_closure_.assign(n, 0);
  for (int c : column_idxs_) in_closure_[c] = 1;
  for (int c = n - 1; c >= 0; c--)
    if (in_closure_[c])
      for (int input : columns_[c].inputs) in_closure_[input] = 1;
  for (int c = 0; c < n; c++)
    if (in_closure_[c]) closure_.push_back(c);
}

Iterator::~Iterator() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  // Deinits are callbacks of the dataframe too: never beside another of them.
  std::lock_guard<std::mutex> lock(df_->compute_mutex);
  for (auto& buf : pool_)
    for (int c : closure_)
      if (buf->values[c] && columns_[c].data_deinit) columns_[c].data_deinit(buf->values[c], columns_[c].context);
}

RowBuf* Iterator::take_free_buffer() {
  if (free_.empty()) {
    auto buf = std::make_unique<RowBuf>();
    buf->values.assign(columns_.size(), nullptr);
    buf->computed.assign(columns_.size(), 0);
    pool_.push_back(std::move(buf));
    free_.reserve(pool_.size());
    count_allocation();
    free_.push_back(pool_.back().get());
  }
  RowBuf* buf = free_.back();
  free_.pop_back();
  buf->row = -1;
  buf->position = -1;
  std::fill(buf->computed.begin(), buf->computed.end(), 0);
  buf->state = RowBuf::kFree;
  return buf;
}

void Iterator::release_buffer(RowBuf* buf) {
  buf->state = RowBuf::kFree;
  free_.push_back(buf);  // capacity reserved for the whole pool
}

void Iterator::compute(RowBuf* const* rows, int n, const int* iter_columns, int column_count,
                       ccv_nnc_stream_context_t* stream) {
  std::lock_guard<std::mutex> lock(df_->compute_mutex);
  compute_locked(rows, n, iter_columns, column_count, stream);
}

void Iterator::compute_locked(RowBuf* const* rows, int n, const int* iter_columns, int column_count,
                              ccv_nnc_stream_context_t* stream) {
  const uint64_t generation = df_->order_generation.load(std::memory_order_acquire);
  for (int i = 0; i < n; i++)
    if (rows[i]->row < 0) {
      rows[i]->row = df_->row_at(rows[i]->position);
      rows[i]->generation = generation;
    }
  // The columns these ask for and what they read: walk the closure downwards
  // marking inputs, then compute upwards (inputs have lower indices).
  const int total = static_cast<int>(columns_.size());
  if (needed_.size() < static_cast<size_t>(total)) {
    needed_.resize(total);
    count_allocation();
  }
  std::fill(needed_.begin(), needed_.begin() + total, 0);
  for (int k = 0; k < column_count; k++) needed_[column_idxs_[iter_columns[k]]] = 1;
  for (auto it = closure_.rbegin(); it != closure_.rend(); ++it)
    if (needed_[*it])
      for (int input : columns_[*it].inputs) needed_[input] = 1;
  for (int c : closure_)
    if (needed_[c]) compute_column(c, rows, n, stream);
}

void Iterator::compute_column(int c, RowBuf* const* rows, int n, ccv_nnc_stream_context_t* stream) {
  const Column& col = columns_[c];
  const size_t inputs = col.inputs.size();
  if (scratch_out_.size() < static_cast<size_t>(n)) {
    scratch_out_.resize(n);
    scratch_rows_.resize(n);
    scratch_bufs_.resize(n);
    count_allocation(3);
  }
  if (scratch_in_.size() < inputs * n) {
    scratch_in_.resize(inputs * n);
    count_allocation();
  }
  if (scratch_in_ptrs_.size() < inputs) {
    scratch_in_ptrs_.resize(inputs);
    count_allocation();
  }
  int m = 0;
  for (int i = 0; i < n; i++)
    if (!rows[i]->computed[c]) scratch_bufs_[m++] = rows[i];
  if (m == 0) return;
  for (int j = 0; j < m; j++) scratch_out_[j] = scratch_bufs_[j]->values[c];
  // Whatever the callback left in data[] is the slot's value from now on,
  // even when it fails half-way: the slot owns it and frees it at the end.
  auto scatter = [&](bool ok) {
    for (int j = 0; j < m; j++) {
      scratch_bufs_[j]->values[c] = scratch_out_[j];
      scratch_bufs_[j]->computed[c] = ok;
    }
  };
  try {
    if (col.data_enum) {
      for (int j = 0; j < m; j++) scratch_rows_[j] = scratch_bufs_[j]->row;
      col.data_enum(c, scratch_rows_.data(), m, scratch_out_.data(), col.context, stream);
    } else {
      for (size_t k = 0; k < inputs; k++) {
        void** in = scratch_in_.data() + k * m;
        for (int j = 0; j < m; j++) in[j] = scratch_bufs_[j]->values[col.inputs[k]];
        scratch_in_ptrs_[k] = in;
      }
      col.map(scratch_in_ptrs_.data(), static_cast<int>(inputs), m, scratch_out_.data(), col.context, stream);
    }
  } catch (...) {
    scatter(false);
    throw;
  }
  scatter(true);
}

void Iterator::discard_queue(std::unique_lock<std::mutex>& lock) {
  cv_.wait(lock, [&] { return !worker_busy_; });
  for (size_t i = 0; i < queue_size_; i++) release_buffer(queue_[(queue_head_ + i) % queue_.size()]);
  queue_head_ = 0;
  queue_size_ = 0;
  pending_ = 0;
}

void Iterator::queue_push(RowBuf* buf) {
  if (queue_size_ == queue_.size()) {
    std::vector<RowBuf*> grown(std::max<size_t>(4, queue_.size() * 2));
    for (size_t i = 0; i < queue_size_; i++) grown[i] = queue_[(queue_head_ + i) % queue_.size()];
    queue_.swap(grown);
    queue_head_ = 0;
    count_allocation();
  }
  queue_[(queue_head_ + queue_size_) % queue_.size()] = buf;
  queue_size_++;
}

RowBuf* Iterator::queue_pop() {
  RowBuf* buf = queue_[queue_head_];
  queue_head_ = (queue_head_ + 1) % queue_.size();
  queue_size_--;
  return buf;
}

int Iterator::next(void** data_ref, int count, ccv_nnc_stream_context_t* stream) {
  NNC_CHECK(count >= 0 && count <= column_count(),
            "ccv_cnnp_dataframe_iter_next: column_idx_size %d is out of range (the iterator has %d columns)", count,
            column_count());
  NNC_CHECK(count == 0 || data_ref, "ccv_cnnp_dataframe_iter_next: data_ref is NULL for %d columns", count);
  std::unique_lock<std::mutex> lock(mutex_);
  if (cursor_ >= df_->row_count) {
    ended_++;
    return ended_ == 1 ? -1 : -2;
  }
  RowBuf* buf = nullptr;
  if (queue_size_ > 0) {
    RowBuf* front = queue_[queue_head_];
    cv_.wait(lock, [&] { return front->state == RowBuf::kReady || front->state == RowBuf::kFailed; });
    if (front->state == RowBuf::kFailed ||
        front->generation != df_->order_generation.load(std::memory_order_acquire)) {
      // A failed batch (which row failed is not known: the row is computed
      // again here, alone, so that its own error, if any, is the one
      // reported), or rows shuffled since they were prefetched.
      discard_queue(lock);
    } else {
      buf = queue_pop();
    }
  }
  // The caller's pointers into the current row end with this call: its
  // buffer goes back first, so that without prefetch one buffer serves every
  // row (and each callback gets back the value it produced for the row before).
  if (current_) {
    release_buffer(current_);
    current_ = nullptr;
  }
  if (!buf) {
    buf = take_free_buffer();
    buf->position = cursor_;
  }
  // Columns the prefetch did not cover (or a fresh row): here, on this thread.
  bool missing = false;
  for (int k = 0; k < count && !missing; k++) missing = !buf->computed[column_idxs_[k]];
  if (missing) {
    lock.unlock();
    try {
      if (iota_.size() < static_cast<size_t>(column_count())) fill_iota();
      compute(&buf, 1, iota_.data(), count, stream);
    } catch (...) {
      lock.lock();
      release_buffer(buf);
      throw;
    }
    lock.lock();
  }
  current_ = buf;
  cursor_++;
  ended_ = 0;
  for (int k = 0; k < count; k++) data_ref[k] = buf->values[column_idxs_[k]];
  return 0;
}

void Iterator::fill_iota() {
  iota_.resize(column_count());
  for (int k = 0; k < column_count(); k++) iota_[k] = k;
  count_allocation();
}

void Iterator::peek(void** data_ref, int offset, int count, ccv_nnc_stream_context_t* stream) {
  NNC_CHECK(offset >= 0 && count >= 0 && offset + count <= column_count(),
            "ccv_cnnp_dataframe_iter_peek: columns [%d, %d) are out of range (the iterator has %d columns)", offset,
            offset + count, column_count());
  NNC_CHECK(count == 0 || data_ref, "ccv_cnnp_dataframe_iter_peek: data_ref is NULL for %d columns", count);
  NNC_CHECK(current_, "ccv_cnnp_dataframe_iter_peek: no current row (call ccv_cnnp_dataframe_iter_next first)");
  if (iota_.size() < static_cast<size_t>(column_count())) fill_iota();
  // The current row belongs to the caller's thread: the worker never touches it.
  compute(&current_, 1, iota_.data() + offset, count, stream);
  for (int k = 0; k < count; k++) data_ref[k] = current_->values[column_idxs_[offset + k]];
}

int Iterator::prefetch(int count, ccv_nnc_stream_context_t* stream) {
  NNC_CHECK(count >= 0, "ccv_cnnp_dataframe_iter_prefetch: negative prefetch count %d", count);
  std::unique_lock<std::mutex> lock(mutex_);
  const int start = cursor_ + static_cast<int>(queue_size_);
  if (start >= df_->row_count) return -1;
  const int n = std::min(count, df_->row_count - start);
  if (n == 0) return 0;
  if (iota_.size() < static_cast<size_t>(column_count())) fill_iota();
  // The worker exists before any row waits for it (a thread that cannot be
  // started leaves nothing queued).
  if (threaded_ && !worker_.joinable()) worker_ = std::thread([this] { worker_loop(); });
  const size_t first = queue_size_;
  for (int i = 0; i < n; i++) {
    try {
      RowBuf* buf = take_free_buffer();
      buf->position = start + i;
      queue_push(buf);
      buf->state = RowBuf::kPending;
    } catch (...) {
      // Out of memory part-way: the rows queued so far are left for next()
      // to compute (failed rows are computed again there).
      for (size_t k = first; k < queue_size_; k++) queue_[(queue_head_ + k) % queue_.size()]->state = RowBuf::kFailed;
      throw;
    }
  }
  if (threaded_) {
    pending_ += n;
    worker_stream_ = stream;
    lock.unlock();
    cv_.notify_all();
    return 0;
  }
  // Without a worker: compute here, all columns of the iterator.
  if (batch_.size() < static_cast<size_t>(n)) {
    batch_.resize(n);
    count_allocation();
  }
  for (int i = 0; i < n; i++) batch_[i] = queue_[(queue_head_ + first + i) % queue_.size()];
  lock.unlock();
  bool ok = true;
  try {
    compute(batch_.data(), n, iota_.data(), column_count(), stream);
  } catch (...) {
    ok = false;  // next() computes these rows again, one by one, and reports
  }
  lock.lock();
  for (int i = 0; i < n; i++) batch_[i]->state = ok ? RowBuf::kReady : RowBuf::kFailed;
  return 0;
}

void Iterator::worker_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || pending_ > 0; });
    if (stop_) return;
    const int n = pending_;
    if (worker_bufs_.size() < static_cast<size_t>(n)) {
      try {
        worker_bufs_.resize(n);
        count_allocation();
      } catch (...) {  // nothing may leave the thread: next() computes them
        for (size_t i = 0; i < queue_size_; i++) {
          RowBuf* buf = queue_[(queue_head_ + i) % queue_.size()];
          if (buf->state == RowBuf::kPending) buf->state = RowBuf::kFailed;
        }
        pending_ = 0;
        cv_.notify_all();
        continue;
      }
    }
    // The pending rows sit at the queue's tail (only rows given up after a
    // failure may lie among them): collect them from the back, in order.
    int m = n;
    for (size_t i = queue_size_; i-- > 0 && m > 0;) {
      RowBuf* buf = queue_[(queue_head_ + i) % queue_.size()];
      if (buf->state != RowBuf::kPending) continue;
      buf->state = RowBuf::kClaimed;
      worker_bufs_[--m] = buf;
    }
    RowBuf* const* claimed = worker_bufs_.data() + m;
    m = n - m;
    pending_ = 0;
    worker_busy_ = true;
    ccv_nnc_stream_context_t* stream = worker_stream_;
    lock.unlock();
    bool ok = true;
    try {
      compute(claimed, m, iota_.data(), column_count(), stream);
    } catch (...) {
      ok = false;  // next() computes these rows again on its thread and reports
    }
    lock.lock();
    for (int i = 0; i < m; i++) claimed[i]->state = ok ? RowBuf::kReady : RowBuf::kFailed;
    worker_busy_ = false;
    cv_.notify_all();
  }
}

int Iterator::set_cursor(int position) {
  if (position < 0 || position > df_->row_count) {
    set_error_message(format("ccv_cnnp_dataframe_iter_set_cursor: %d is out of range [0, %d]", position,
                             df_->row_count));
    return -1;
  }
  std::unique_lock<std::mutex> lock(mutex_);
  discard_queue(lock);
  cursor_ = position;
  ended_ = 0;
  return 0;
}

void Iterator::fetch_range(int start, int count, ccv_nnc_stream_context_t* stream) {
  NNC_CHECK(start >= 0 && count >= 0 && start + count <= df_->row_count,
            "dataframe: rows [%d, %d) are out of range (%d rows)", start, start + count, df_->row_count);
  while (range_bufs_.size() < static_cast<size_t>(count)) {
    auto buf = std::make_unique<RowBuf>();
    buf->values.assign(columns_.size(), nullptr);
    buf->computed.assign(columns_.size(), 0);
    range_bufs_.push_back(buf.get());
    pool_.push_back(std::move(buf));
    count_allocation(3);
  }
  for (int i = 0; i < count; i++) {
    RowBuf* buf = range_bufs_[i];
    buf->position = start + i;
    buf->row = -1;
    std::fill(buf->computed.begin(), buf->computed.end(), 0);
  }
  if (iota_.size() < static_cast<size_t>(column_count())) fill_iota();
  compute(range_bufs_.data(), count, iota_.data(), column_count(), stream);
}

// ---------------------------------------------------------------------------
// Value-picking columns. Their values point into their input's value: no
// allocation, nothing to free (tuples excepted).

namespace {
struct OffsetContext {
  off_t offset;
};
void extract_value_map(void* const* const* column_data, int, int batch_size, void** data, void* context,
                       ccv_nnc_stream_context_t*) {
  const off_t offset = static_cast<OffsetContext*>(context)->offset;
  for (int i = 0; i < batch_size; i++) {
    char* const value = static_cast<char*>(column_data[0][i]);
    data[i] = value ? *reinterpret_cast<void**>(value + offset) : nullptr;
  }
}
void delete_offset_context(void* context) { std::unique_ptr<OffsetContext>(static_cast<OffsetContext*>(context)); }

void make_tuple_map(void* const* const* column_data, int column_size, int batch_size, void** data, void*,
                    ccv_nnc_stream_context_t*) {
  for (int i = 0; i < batch_size; i++) {
    if (!data[i]) {
      data[i] = std::malloc(sizeof(void*) * std::max(column_size, 1));
      if (!data[i]) throw std::bad_alloc();
      count_allocation();
    }
    void** const tuple = static_cast<void**>(data[i]);
    for (int k = 0; k < column_size; k++) tuple[k] = column_data[k][i];
  }
}
void free_data(void* data, void*) { std::free(data); }

struct IndexContext {
  int index;
};
void extract_tuple_map(void* const* const* column_data, int, int batch_size, void** data, void* context,
                       ccv_nnc_stream_context_t*) {
  const int index = static_cast<IndexContext*>(context)->index;
  for (int i = 0; i < batch_size; i++) {
    void** const tuple = static_cast<void**>(column_data[0][i]);
    data[i] = tuple ? tuple[index] : nullptr;
  }
}
void delete_index_context(void* context) { std::unique_ptr<IndexContext>(static_cast<IndexContext*>(context)); }

Column derived(ccv_cnnp_column_data_map_f map, std::vector<int> inputs, const char* name) {
  Column c;
  c.map = map;
  c.inputs = std::move(inputs);
  c.has_name = name != nullptr;
  if (name) c.name = name;
  return c;
}
}  // namespace

int extract_value(Dataframe* df, int column_idx, off_t offset, const char* name) {
  check_column(df, column_idx, "ccv_cnnp_dataframe_extract_value");
  NNC_CHECK(offset >= 0, "ccv_cnnp_dataframe_extract_value: negative offset %lld", static_cast<long long>(offset));
  Column c = derived(extract_value_map, {column_idx}, name);
  auto context = std::make_unique<OffsetContext>(OffsetContext{offset});
  c.context = context.get();
  c.context_deinit = delete_offset_context;
  const int idx = add_column(df, std::move(c));
  context.release();
  return idx;
}

int make_tuple(Dataframe* df, const int* column_idxs, int column_idx_size, const char* name) {
  NNC_CHECK(column_idx_size > 0 && column_idxs, "ccv_cnnp_dataframe_make_tuple: no columns given");
  std::vector<int> inputs(column_idxs, column_idxs + column_idx_size);
  for (int c : inputs) check_column(df, c, "ccv_cnnp_dataframe_make_tuple");
  Column c = derived(make_tuple_map, std::move(inputs), name);
  c.data_deinit = free_data;
  c.tuple_size = column_idx_size;
  return add_column(df, std::move(c));
}

int extract_tuple(Dataframe* df, int column_idx, int index, const char* name) {
  check_column(df, column_idx, "ccv_cnnp_dataframe_extract_tuple");
  const int size = df->columns[column_idx].tuple_size;
  NNC_CHECK(size >= 0, "ccv_cnnp_dataframe_extract_tuple: column %d does not hold tuples", column_idx);
  NNC_CHECK(index >= 0 && index < size, "ccv_cnnp_dataframe_extract_tuple: index %d is out of range (tuples of %d)",
            index, size);
  Column c = derived(extract_tuple_map, {column_idx}, name);
  auto context = std::make_unique<IndexContext>(IndexContext{index});
  c.context = context.get();
  c.context_deinit = delete_index_context;
  const int idx = add_column(df, std::move(c));
  context.release();
  return idx;
}

}  // namespace nnc::dataframe

ccv_cnnp_dataframe_s::~ccv_cnnp_dataframe_s() {
  for (auto& c : columns)
    if (c.context_deinit) c.context_deinit(c.context);
}
