// Dataframes whose rows are batches of another's: sample_new (a caller's
// reduction of n rows of one column) and combine_new (tensors stacked into
// one batch tensor per column). Each keeps an iterator over its parent; the
// parent must outlive it.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "cnnp/dataframe.hpp"
#include "core/error.hpp"

namespace nnc::dataframe {

size_t packed_bytes(const ccv_nnc_tensor_param_t& params, const char* what) {
  const ssize_t element = ccv_data_type_size(params.datatype);
  NNC_CHECK(element > 0, "%s: unsupported datatype 0x%x", what, params.datatype);
  return ccv_nnc_tensor_count(params) * static_cast<size_t>(element);
}

ccv_nnc_tensor_t* reuse_tensor(void*& slot, const ccv_nnc_tensor_param_t& params) {
  auto* t = static_cast<ccv_nnc_tensor_t*>(slot);
  const size_t bytes = packed_bytes(params, "dataframe");
  if (t && !CCV_IS_TENSOR_VIEW(t) && t->info.type == params.type && t->data_size >= bytes) {
    t->info = params;
    return t;
  }
  if (t) {
    ccv_nnc_tensor_free(t);
    slot = nullptr;
  }
  t = ccv_nnc_tensor_new(nullptr, params, 0);
  if (!t) fail(CCV_NNC_EXEC_OOM, "dataframe: cannot allocate a tensor of %zu bytes", bytes);
  count_allocation();
  slot = t;
  return t;
}

void free_tensor(void* data, void*) { ccv_nnc_tensor_free(static_cast<ccv_nnc_tensor_t*>(data)); }

// The tuple's size sits in the word before its first entry, so that the
// deinit (which gets only the value) can free the tensors in it.
void** new_tensor_tuple(int n) {
  void** block = static_cast<void**>(std::calloc(static_cast<size_t>(n) + 1, sizeof(void*)));
  if (!block) throw std::bad_alloc();
  count_allocation();
  block[0] = reinterpret_cast<void*>(static_cast<intptr_t>(n));
  return block + 1;
}

void free_tensor_tuple(void* data, void*) {
  if (!data) return;
  void** const tuple = static_cast<void**>(data);
  const int n = static_cast<int>(reinterpret_cast<intptr_t>(tuple[-1]));
  for (int i = 0; i < n; i++) ccv_nnc_tensor_free(static_cast<ccv_nnc_tensor_t*>(tuple[i]));
  std::free(tuple - 1);
}

namespace {

// --- sample_new -------------------------------------------------------------

struct SampleContext {
  std::unique_ptr<Iterator> parent;
  int parent_rows = 0;
  int batch_size = 0;
  ccv_cnnp_column_data_sample_f sample = nullptr;
  ccv_cnnp_column_data_deinit_f data_deinit = nullptr;
  void* context = nullptr;
  ccv_cnnp_column_data_context_deinit_f context_deinit = nullptr;
  std::vector<void*> inputs;
};

void sample_enum(int, const int* row_idxs, int row_size, void** data, void* context, ccv_nnc_stream_context_t* stream) {
  auto* ctx = static_cast<SampleContext*>(context);
  for (int i = 0; i < row_size; i++) {
    const int start = row_idxs[i] * ctx->batch_size;
    const int count = std::min(ctx->batch_size, ctx->parent_rows - start);
    ctx->parent->fetch_range(start, count, stream);
    for (int j = 0; j < count; j++) ctx->inputs[j] = ctx->parent->range_value(j, 0);
    ctx->sample(ctx->inputs.data(), count, data + i, ctx->context, stream);
  }
}

void sample_data_deinit(void* data, void* context) {
  auto* ctx = static_cast<SampleContext*>(context);
  if (ctx->data_deinit) ctx->data_deinit(data, ctx->context);
}

void sample_context_deinit(void* context) {
  std::unique_ptr<SampleContext> ctx(static_cast<SampleContext*>(context));
  ctx->parent.reset();
  if (ctx->context_deinit) ctx->context_deinit(ctx->context);
}

// --- combine_new ------------------------------------------------------------

struct CombineContext {
  std::unique_ptr<Iterator> parent;
  int parent_rows = 0;
  int columns = 0;
  int batch_count = 0;
  int group_count = 0;
  int format = 0;
};

// Stack rows [first, first + m) of the parent's iterator column `k` into the
// tensor in `slot`: the batch dimension first, then each row's dimensions
// (channel moved when the formats differ). m may be 0 (an empty group of the
// last batch): the tensor then keeps the first row's shape with N = 0.
void stack(CombineContext* ctx, int k, int first, int m, void*& slot) {
  const auto* t0 = static_cast<const ccv_nnc_tensor_t*>(ctx->parent->range_value(m > 0 ? first : 0, k));
  NNC_CHECK(t0, "ccv_cnnp_dataframe_combine_new: column %d holds a NULL tensor", k);
  const ccv_nnc_tensor_param_t in = t0->info;
  NNC_CHECK(CCV_TENSOR_GET_MEMORY(in.type) == CCV_TENSOR_CPU_MEMORY,
            "ccv_cnnp_dataframe_combine_new: column %d holds a tensor outside CPU memory", k);
  const int nd = ccv_nnc_tensor_nd(in.dim);
  NNC_CHECK(nd >= 1 && nd < CCV_NNC_MAX_DIM_ALLOC,
            "ccv_cnnp_dataframe_combine_new: column %d holds a %d-d tensor (1 to %d dimensions can be batched)", k,
            nd, CCV_NNC_MAX_DIM_ALLOC - 1);
  const bool transpose = nd >= 2 && in.format != ctx->format &&
                         (in.format == CCV_TENSOR_FORMAT_NHWC || in.format == CCV_TENSOR_FORMAT_NCHW);
  ccv_nnc_tensor_param_t out = in;
  out.type = CCV_TENSOR_CPU_MEMORY;
  out.format = ctx->format;
  for (int d = 0; d < CCV_NNC_MAX_DIM_ALLOC; d++) out.dim[d] = 0;
  out.dim[0] = ctx->batch_count;  // allocate for a full batch once
  if (!transpose) {
    for (int d = 0; d < nd; d++) out.dim[d + 1] = in.dim[d];
  } else if (in.format == CCV_TENSOR_FORMAT_NHWC) {  // (..., C) -> (C, ...)
    out.dim[1] = in.dim[nd - 1];
    for (int d = 0; d < nd - 1; d++) out.dim[d + 2] = in.dim[d];
  } else {  // (C, ...) -> (..., C)
    for (int d = 1; d < nd; d++) out.dim[d] = in.dim[d];
    out.dim[nd] = in.dim[0];
  }
  reuse_tensor(slot, out);
  auto* const batch = static_cast<ccv_nnc_tensor_t*>(slot);
  batch->info.dim[0] = m;
  const size_t element = static_cast<size_t>(ccv_data_type_size(in.datatype));
  const size_t sample_count = ccv_nnc_tensor_count(in);
  const size_t sample_bytes = sample_count * element;
  const size_t channels = transpose ? static_cast<size_t>(in.format == CCV_TENSOR_FORMAT_NHWC ? in.dim[nd - 1] : in.dim[0]) : 1;
  const size_t spatial = transpose ? sample_count / channels : 0;
  for (int j = 0; j < m; j++) {
    const auto* t = static_cast<const ccv_nnc_tensor_t*>(ctx->parent->range_value(first + j, k));
    NNC_CHECK(t, "ccv_cnnp_dataframe_combine_new: column %d holds a NULL tensor", k);
    NNC_CHECK(t->info.datatype == in.datatype && t->info.format == in.format &&
                  std::equal(t->info.dim, t->info.dim + CCV_NNC_MAX_DIM_ALLOC, in.dim),
              "ccv_cnnp_dataframe_combine_new: column %d: rows of one batch differ in shape, datatype or format", k);
    NNC_CHECK(CCV_IS_TENSOR_CONTIGUOUS(t) && CCV_TENSOR_GET_MEMORY(t->info.type) == CCV_TENSOR_CPU_MEMORY,
              "ccv_cnnp_dataframe_combine_new: column %d holds a strided view or a non-CPU tensor", k);
    const unsigned char* src = t->data.u8;
    unsigned char* dst = batch->data.u8 + j * sample_bytes;
    if (!transpose) {
      std::memcpy(dst, src, sample_bytes);
    } else if (in.format == CCV_TENSOR_FORMAT_NHWC) {
      for (size_t s = 0; s < spatial; s++)
        for (size_t c = 0; c < channels; c++)
          std::memcpy(dst + (c * spatial + s) * element, src + (s * channels + c) * element, element);
    } else {
      for (size_t c = 0; c < channels; c++)
        for (size_t s = 0; s < spatial; s++)
          std::memcpy(dst + (s * channels + c) * element, src + (c * spatial + s) * element, element);
    }
  }
}

void combine_enum(int, const int* row_idxs, int row_size, void** data, void* context,
                  ccv_nnc_stream_context_t* stream) {
  auto* ctx = static_cast<CombineContext*>(context);
  const int per_row = ctx->batch_count * ctx->group_count;
  for (int i = 0; i < row_size; i++) {
    const int start = row_idxs[i] * per_row;
    const int count = std::min(per_row, ctx->parent_rows - start);
    ctx->parent->fetch_range(start, count, stream);
    if (!data[i]) data[i] = new_tensor_tuple(ctx->columns * ctx->group_count);
    void** const tuple = static_cast<void**>(data[i]);
    for (int g = 0; g < ctx->group_count; g++) {
      const int first = std::min(g * ctx->batch_count, count);
      const int m = std::min(ctx->batch_count, count - first);
      for (int k = 0; k < ctx->columns; k++) stack(ctx, k, first, m, tuple[g * ctx->columns + k]);
    }
  }
}

void combine_context_deinit(void* context) { std::unique_ptr<CombineContext>(static_cast<CombineContext*>(context)); }

}  // namespace

std::unique_ptr<Dataframe> sample_new(Dataframe* df, ccv_cnnp_column_data_sample_f sample,
                                      ccv_cnnp_column_data_deinit_f data_deinit, int column_idx, int batch_size,
                                      void* context, ccv_cnnp_column_data_context_deinit_f context_deinit) {
  NNC_CHECK(sample, "ccv_cnnp_dataframe_sample_new: sample is NULL");
  check_column(df, column_idx, "ccv_cnnp_dataframe_sample_new");
  NNC_CHECK(batch_size > 0, "ccv_cnnp_dataframe_sample_new: batch_size %d is not positive", batch_size);
  auto ctx = std::make_unique<SampleContext>();
  ctx->parent = std::make_unique<Iterator>(df, std::vector<int>{column_idx}, false);
  ctx->parent_rows = df->row_count;
  ctx->batch_size = batch_size;
  ctx->sample = sample;
  ctx->inputs.resize(batch_size);
  Column c;
  c.data_enum = sample_enum;
  c.data_deinit = sample_data_deinit;
  c.context = ctx.get();
  c.context_deinit = sample_context_deinit;
  const int rows = static_cast<int>((static_cast<int64_t>(df->row_count) + batch_size - 1) / batch_size);
  auto out = make_dataframe(nullptr, 0, rows);
  add_column(out.get(), std::move(c));
  ctx.release();
  // Only now, with nothing left to fail, does the sampled dataframe take
  // over the caller's context.
  auto* owned = static_cast<SampleContext*>(out->columns[0].context);
  owned->data_deinit = data_deinit;
  owned->context = context;
  owned->context_deinit = context_deinit;
  return out;
}

std::unique_ptr<Dataframe> combine_new(Dataframe* df, const int* column_idxs, int column_idx_size, int batch_count,
                                       int group_count, int format) {
  NNC_CHECK(column_idx_size > 0 && column_idxs, "ccv_cnnp_dataframe_combine_new: no columns given");
  for (int i = 0; i < column_idx_size; i++) check_column(df, column_idxs[i], "ccv_cnnp_dataframe_combine_new");
  NNC_CHECK(batch_count > 0, "ccv_cnnp_dataframe_combine_new: batch_count %d is not positive", batch_count);
  NNC_CHECK(group_count > 0, "ccv_cnnp_dataframe_combine_new: group_count %d is not positive", group_count);
  NNC_CHECK(format == CCV_TENSOR_FORMAT_NHWC || format == CCV_TENSOR_FORMAT_NCHW,
            "ccv_cnnp_dataframe_combine_new: format %d is neither NHWC nor NCHW", format);
  NNC_CHECK(static_cast<int64_t>(batch_count) * group_count <= (1 << 24),
            "ccv_cnnp_dataframe_combine_new: batch_count %d x group_count %d rows per batch is too many", batch_count,
            group_count);
  auto ctx = std::make_unique<CombineContext>();
  ctx->parent = std::make_unique<Iterator>(df, std::vector<int>(column_idxs, column_idxs + column_idx_size), false);
  ctx->parent_rows = df->row_count;
  ctx->columns = column_idx_size;
  ctx->batch_count = batch_count;
  ctx->group_count = group_count;
  ctx->format = format;
  const int per_row = batch_count * group_count;
  const int rows = static_cast<int>((static_cast<int64_t>(df->row_count) + per_row - 1) / per_row);
  auto out = make_dataframe(nullptr, 0, rows);
  Column c;
  c.data_enum = combine_enum;
  c.data_deinit = free_tensor_tuple;
  c.context = ctx.get();
  c.context_deinit = combine_context_deinit;
  c.tuple_size = column_idx_size * group_count;
  add_column(out.get(), std::move(c));
  ctx.release();
  return out;
}

// --- shard_new --------------------------------------------------------------
// The same columns (callbacks and contexts shared with the parent, which keeps
// owning the contexts), over the rows rank, rank + size, ... of the parent's
// order at this call, cut to the same count on every process. Its own order
// is that list, so its row indices are the parent's and its shuffles permute
// within the shard.
std::unique_ptr<Dataframe> shard_new(Dataframe* df, int rank, int size) {
  const char* what = "ccv_cnnp_dataframe_shard_new";
  NNC_CHECK(size >= 1, "%s: size %d is not positive", what, size);
  NNC_CHECK(rank >= 0 && rank < size, "%s: rank %d is outside [0, %d)", what, rank, size);
  const int rows = df->row_count / size;
  NNC_CHECK(rows > 0 || df->row_count == 0, "%s: %d rows cannot give each of %d processes one", what, df->row_count, size);
  auto out = std::make_unique<Dataframe>();
  out->row_count = rows;
  out->rng_state = df->rng_state ^ (0x9e3779b97f4a7c15ull * static_cast<uint64_t>(rank + 1));
  {
    std::lock_guard<std::mutex> lock(df->compute_mutex);
    out->order.resize(static_cast<size_t>(rows));
    for (int k = 0; k < rows; k++) out->order[static_cast<size_t>(k)] = df->row_at(rank + k * size);
  }
  out->columns = df->columns;
  for (Column& c : out->columns) c.context_deinit = nullptr;  // the parent's to free
  return out;
}

}  // namespace nnc::dataframe
