// Ready-made columns: a dataframe over a ccv_array_t, scratch tensors, one-hot
// and scalar tensors from struct fields, square masks from lengths, sequence
// truncation, and a command run over a tuple of tensors. Every tensor they
// produce lives in its iterator slot and is reused from row to row.
#include <algorithm>
#include <cstring>

#include "cnnp/dataframe.hpp"
#include "core/error.hpp"

namespace nnc::dataframe {

namespace {

bool valid_format(int format) {
  return format == CCV_TENSOR_FORMAT_NHWC || format == CCV_TENSOR_FORMAT_NCHW || format == CCV_TENSOR_FORMAT_CHWN;
}

bool scalar_type(int datatype) {
  switch (datatype) {
    case CCV_8U:
    case CCV_32S:
    case CCV_64S:
    case CCV_32F:
    case CCV_64F:
    case CCV_16F:
    case CCV_16BF:
      return true;
  }
  return false;
}

double read_scalar(int datatype, const void* p) {
  switch (datatype) {
    case CCV_8U: return *static_cast<const uint8_t*>(p);
    case CCV_32S: return *static_cast<const int32_t*>(p);
    case CCV_64S: return static_cast<double>(*static_cast<const int64_t*>(p));
    case CCV_32F: return *static_cast<const float*>(p);
    case CCV_64F: return *static_cast<const double*>(p);
    case CCV_16F: {
      float f;
      ccv_half_precision_to_float(static_cast<const uint16_t*>(p), &f, 1);
      return f;
    }
    case CCV_16BF: {
      const uint32_t bits = static_cast<uint32_t>(*static_cast<const uint16_t*>(p)) << 16;
      float f;
      std::memcpy(&f, &bits, sizeof(f));
      return f;
    }
  }
  return 0;
}

void write_scalar(int datatype, void* base, size_t i, double v) {
  switch (datatype) {
    case CCV_8U: static_cast<uint8_t*>(base)[i] = static_cast<uint8_t>(std::clamp(v, 0.0, 255.0)); break;
    case CCV_32S: static_cast<int32_t*>(base)[i] = static_cast<int32_t>(v); break;
    case CCV_64S: static_cast<int64_t*>(base)[i] = static_cast<int64_t>(v); break;
    case CCV_32F: static_cast<float*>(base)[i] = static_cast<float>(v); break;
    case CCV_64F: static_cast<double*>(base)[i] = v; break;
    case CCV_16F: {
      const float f = static_cast<float>(v);
      ccv_float_to_half_precision(&f, static_cast<uint16_t*>(base) + i, 1);
      break;
    }
    case CCV_16BF: {
      const float f = static_cast<float>(v);
      uint32_t bits;
      std::memcpy(&bits, &f, sizeof(bits));
      if ((bits & 0x7fffffffu) > 0x7f800000u)
        bits = (bits | 0x00400000u);  // NaN stays NaN
      else
        bits += 0x7fffu + ((bits >> 16) & 1u);  // round to nearest even
      static_cast<uint16_t*>(base)[i] = static_cast<uint16_t>(bits >> 16);
      break;
    }
  }
}

Column derived(ccv_cnnp_column_data_map_f map, std::vector<int> inputs, const char* name) {
  Column c;
  c.map = map;
  c.inputs = std::move(inputs);
  c.has_name = name != nullptr;
  if (name) c.name = name;
  return c;
}

// Add a column whose context is a C++ object, freed with the dataframe (or
// here, when adding fails).
template <class Context>
int add_with_context(Dataframe* df, Column c, std::unique_ptr<Context> context) {
  c.context = context.get();
  c.context_deinit = [](void* p) { std::unique_ptr<Context>(static_cast<Context*>(p)); };
  const int idx = add_column(df, std::move(c));
  context.release();
  return idx;
}

ccv_nnc_tensor_param_t cpu_params(int format, int datatype, std::initializer_list<int> dims) {
  ccv_nnc_tensor_param_t p{};
  p.type = CCV_TENSOR_CPU_MEMORY;
  p.format = format;
  p.datatype = datatype;
  int d = 0;
  for (int v : dims) p.dim[d++] = v;
  return p;
}

const ccv_nnc_tensor_t* tensor_input(void* value, const char* what, int k) {
  const auto* t = static_cast<const ccv_nnc_tensor_t*>(value);
  NNC_CHECK(t, "%s: input %d is NULL", what, k);
  NNC_CHECK(CCV_IS_TENSOR_CONTIGUOUS(t) && CCV_TENSOR_GET_MEMORY(t->info.type) == CCV_TENSOR_CPU_MEMORY,
            "%s: input %d is a strided view or not in CPU memory", what, k);
  return t;
}

// --- from_array ---------------------------------------------------------------

void array_enum(int, const int* row_idxs, int row_size, void** data, void* context, ccv_nnc_stream_context_t*) {
  auto* array = static_cast<ccv_array_t*>(context);
  for (int i = 0; i < row_size; i++) data[i] = ccv_array_get(array, row_idxs[i]);
}

// --- add_aux --------------------------------------------------------------------

struct AuxContext {
  ccv_nnc_tensor_param_t params;
};
void aux_enum(int, const int*, int row_size, void** data, void* context, ccv_nnc_stream_context_t*) {
  const auto& params = static_cast<AuxContext*>(context)->params;
  for (int i = 0; i < row_size; i++) reuse_tensor(data[i], params);
}

// --- one_hot / copy_scalar ------------------------------------------------------

struct OneHotContext {
  off_t structof;
  int range;
  float onval, offval;
  int datatype, format;
};
void one_hot_map(void* const* const* column_data, int, int batch_size, void** data, void* context,
                 ccv_nnc_stream_context_t*) {
  const auto* ctx = static_cast<OneHotContext*>(context);
  for (int i = 0; i < batch_size; i++) {
    const char* value = static_cast<const char*>(column_data[0][i]);
    NNC_CHECK(value, "ccv_cnnp_dataframe_one_hot: a row's value is NULL");
    int label;
    std::memcpy(&label, value + ctx->structof, sizeof(label));
    NNC_CHECK(label >= 0 && label < ctx->range, "ccv_cnnp_dataframe_one_hot: label %d is outside [0, %d)", label,
              ctx->range);
    auto* t = reuse_tensor(data[i], cpu_params(ctx->format, ctx->datatype, {ctx->range}));
    for (int j = 0; j < ctx->range; j++) write_scalar(ctx->datatype, t->data.u8, j, ctx->offval);
    write_scalar(ctx->datatype, t->data.u8, label, ctx->onval);
  }
}

struct ScalarContext {
  off_t structof;
  int from_dt, to_dt, format;
};
void copy_scalar_map(void* const* const* column_data, int, int batch_size, void** data, void* context,
                     ccv_nnc_stream_context_t*) {
  const auto* ctx = static_cast<ScalarContext*>(context);
  for (int i = 0; i < batch_size; i++) {
    const char* value = static_cast<const char*>(column_data[0][i]);
    NNC_CHECK(value, "ccv_cnnp_dataframe_copy_scalar: a row's value is NULL");
    auto* t = reuse_tensor(data[i], cpu_params(ctx->format, ctx->to_dt, {1}));
    if (ctx->from_dt == ctx->to_dt)
      std::memcpy(t->data.u8, value + ctx->structof, static_cast<size_t>(ccv_data_type_size(ctx->to_dt)));
    else
      write_scalar(ctx->to_dt, t->data.u8, 0, read_scalar(ctx->from_dt, value + ctx->structof));
  }
}

// --- one_squared ----------------------------------------------------------------

struct SquaredContext {
  int columns;
  int variable_size;
  int max_length;
};
void one_squared_map(void* const* const* column_data, int column_size, int batch_size, void** data, void* context,
                     ccv_nnc_stream_context_t*) {
  const auto* ctx = static_cast<SquaredContext*>(context);
  const char* what = "ccv_cnnp_dataframe_one_squared";
  for (int i = 0; i < batch_size; i++) {
    if (!data[i]) data[i] = new_tensor_tuple(column_size);
    void** const tuple = static_cast<void**>(data[i]);
    for (int k = 0; k < column_size; k++) {
      const auto* lengths = tensor_input(column_data[k][i], what, k);
      NNC_CHECK(lengths->info.datatype == CCV_32S, "%s: lengths of input %d are not 32S", what, k);
      const int b = static_cast<int>(ccv_nnc_tensor_count(lengths->info));
      int longest = 1;
      for (int j = 0; j < b; j++) {
        const int len = lengths->data.i32[j];
        NNC_CHECK(len >= 0 && len <= ctx->max_length, "%s: length %d is outside [0, %d]", what, len, ctx->max_length);
        longest = std::max(longest, len);
      }
      const int l = ctx->variable_size ? longest : ctx->max_length;
      auto* t = reuse_tensor(tuple[k], cpu_params(CCV_TENSOR_FORMAT_NHWC, CCV_32S, {b, l, l}));
      for (int j = 0; j < b; j++) {
        const int len = lengths->data.i32[j];
        int32_t* m = t->data.i32 + static_cast<size_t>(j) * l * l;
        for (int y = 0; y < l; y++)
          for (int x = 0; x < l; x++) m[y * l + x] = (y < len && x < len) ? 1 : 0;
      }
    }
  }
}

// --- truncate -------------------------------------------------------------------

struct TruncateContext {
  int vecs;
  int lens;
};
void truncate_map(void* const* const* column_data, int, int batch_size, void** data, void* context,
                  ccv_nnc_stream_context_t*) {
  const auto* ctx = static_cast<TruncateContext*>(context);
  const char* what = "ccv_cnnp_dataframe_truncate";
  for (int i = 0; i < batch_size; i++) {
    if (!data[i]) data[i] = new_tensor_tuple(ctx->vecs);
    void** const tuple = static_cast<void**>(data[i]);
    for (int k = 0; k < ctx->vecs; k++) {
      const auto* vec = tensor_input(column_data[k][i], what, k);
      const int lk = ctx->vecs + (ctx->lens == 1 ? 0 : k);
      const auto* lengths = tensor_input(column_data[lk][i], what, lk);
      NNC_CHECK(lengths->info.datatype == CCV_32S, "%s: lengths of input %d are not 32S", what, lk);
      const int nd = ccv_nnc_tensor_nd(vec->info.dim);
      NNC_CHECK(nd >= 2, "%s: input %d is %d-d (a batch of sequences has at least 2 dimensions)", what, k, nd);
      const int b = vec->info.dim[0], l = vec->info.dim[1];
      NNC_CHECK(static_cast<int>(ccv_nnc_tensor_count(lengths->info)) == b,
                "%s: input %d has %d sequences but %d lengths", what, k, b,
                static_cast<int>(ccv_nnc_tensor_count(lengths->info)));
      int longest = 1;
      for (int j = 0; j < b; j++) {
        const int len = lengths->data.i32[j];
        NNC_CHECK(len >= 0 && len <= l, "%s: length %d is outside [0, %d]", what, len, l);
        longest = std::max(longest, len);
      }
      ccv_nnc_tensor_param_t out = vec->info;
      out.type = CCV_TENSOR_CPU_MEMORY;
      out.dim[1] = longest;
      auto* t = reuse_tensor(tuple[k], out);
      const size_t element = static_cast<size_t>(ccv_data_type_size(out.datatype));
      size_t inner = element;
      for (int d = 2; d < nd; d++) inner *= static_cast<size_t>(out.dim[d]);
      for (int j = 0; j < b; j++)
        std::memcpy(t->data.u8 + static_cast<size_t>(j) * longest * inner,
                    vec->data.u8 + static_cast<size_t>(j) * l * inner, longest * inner);
    }
  }
}

// --- cmd_exec -------------------------------------------------------------------

struct CmdContext {
  ccv_nnc_cmd_t cmd;
  ccv_nnc_hint_t hint;
  int flags;
  int input_offset, input_size;
  std::vector<ccv_nnc_tensor_param_t> outputs;
  std::vector<ccv_nnc_tensor_t*> in_scratch, out_scratch;
};
void cmd_exec_map(void* const* const* column_data, int, int batch_size, void** data, void* context,
                  ccv_nnc_stream_context_t* stream) {
  auto* ctx = static_cast<CmdContext*>(context);
  const int n = static_cast<int>(ctx->outputs.size());
  for (int i = 0; i < batch_size; i++) {
    void** const in = static_cast<void**>(column_data[0][i]);
    NNC_CHECK(in, "ccv_cnnp_dataframe_cmd_exec: a row's tuple is NULL");
    if (!data[i]) data[i] = new_tensor_tuple(n);
    void** const tuple = static_cast<void**>(data[i]);
    for (int k = 0; k < n; k++) ctx->out_scratch[k] = reuse_tensor(tuple[k], ctx->outputs[k]);
    for (int k = 0; k < ctx->input_size; k++)
      ctx->in_scratch[k] = static_cast<ccv_nnc_tensor_t*>(in[ctx->input_offset + k]);
    const int status = ccv_nnc_cmd_exec(ctx->cmd, ctx->hint, ctx->flags, ctx->in_scratch.data(), ctx->input_size,
                                        ctx->out_scratch.data(), n, stream);
    if (status != CCV_NNC_EXEC_SUCCESS)
      fail(status, "ccv_cnnp_dataframe_cmd_exec: the command failed (%d): %s", status, ccv_nnc_error_message());
  }
}

// --- copy_to_gpu ----------------------------------------------------------------

struct CopyToGpuContext {
  int offset, size, device;
};
void copy_to_gpu_map(void* const* const* column_data, int, int batch_size, void** data, void* context,
                     ccv_nnc_stream_context_t* stream) {
  const auto* ctx = static_cast<CopyToGpuContext*>(context);
  const char* what = "ccv_cnnp_dataframe_copy_to_gpu";
  ccv_nnc_cmd_param_t none;
  std::memset(&none, 0, sizeof(none));
  const ccv_nnc_cmd_t transfer = ccv_nnc_cmd(CCV_NNC_DATA_TRANSFER_FORWARD, nullptr, none, 0);
  for (int i = 0; i < batch_size; i++) {
    void** const in = static_cast<void**>(column_data[0][i]);
    NNC_CHECK(in, "%s: a row's tuple is NULL", what);
    if (!data[i]) data[i] = new_tensor_tuple(ctx->size);
    void** const tuple = static_cast<void**>(data[i]);
    for (int k = 0; k < ctx->size; k++) {
      ccv_nnc_tensor_t* src = static_cast<ccv_nnc_tensor_t*>(in[ctx->offset + k]);
      NNC_CHECK(src, "%s: tensor %d of a row's tuple is NULL", what, ctx->offset + k);
      NNC_CHECK(CCV_TENSOR_GET_MEMORY(src->info.type) == CCV_TENSOR_CPU_MEMORY, "%s: tensor %d of a row's tuple is not in CPU memory",
                what, ctx->offset + k);
      ccv_nnc_tensor_param_t params = src->info;
      params.type = CCV_TENSOR_GPU_MEMORY;
      CCV_TENSOR_SET_DEVICE_ID(params.type, ctx->device);
      ccv_nnc_tensor_t* dst = reuse_tensor(tuple[k], params);
      const int status = ccv_nnc_cmd_exec(transfer, ccv_nnc_no_hint, 0, &src, 1, &dst, 1, stream);
      if (status != CCV_NNC_EXEC_SUCCESS) fail(status, "%s: %s", what, ccv_nnc_error_message());
    }
  }
}

}  // namespace

int copy_to_gpu(Dataframe* df, int column_idx, int tensor_offset, int tensor_size, int device_id, const char* name) {
  const char* what = "ccv_cnnp_dataframe_copy_to_gpu";
  check_column(df, column_idx, what);
  const int size = df->columns[column_idx].tuple_size;
  NNC_CHECK(size >= 0, "%s: column %d does not hold tuples of tensors", what, column_idx);
  NNC_CHECK(tensor_offset >= 0 && tensor_size > 0 && tensor_offset + tensor_size <= size,
            "%s: tensors [%d, %d) are outside the column's tuples of %d", what, tensor_offset, tensor_offset + tensor_size, size);
  const int gpus = ccv_nnc_device_count(CCV_STREAM_CONTEXT_GPU);
  NNC_CHECK(gpus > 0, "%s: no GPU found (or this build of NNC has no CUDA support)", what);
  NNC_CHECK(device_id >= 0 && device_id < gpus, "%s: device %d, but %d GPU%s found", what, device_id, gpus, gpus == 1 ? "" : "s");
  Column c = derived(copy_to_gpu_map, {column_idx}, name);
  c.data_deinit = free_tensor_tuple;
  c.tuple_size = tensor_size;
  return add_with_context(df, std::move(c), std::make_unique<CopyToGpuContext>(CopyToGpuContext{tensor_offset, tensor_size, device_id}));
}

std::unique_ptr<Dataframe> from_array_new(ccv_array_t* array) {
  NNC_CHECK(array, "ccv_cnnp_dataframe_from_array_new: array is NULL");
  NNC_CHECK(array->rnum >= 0 && (array->rnum == 0 || array->data),
            "ccv_cnnp_dataframe_from_array_new: the array has %d rows and no data", array->rnum);
  ccv_cnnp_column_data_t column{};
  column.data_enum = array_enum;
  column.context = array;
  return make_dataframe(&column, 1, array->rnum);
}

int add_aux(Dataframe* df, const ccv_nnc_tensor_param_t& params, const char* name) {
  NNC_CHECK(CCV_TENSOR_GET_MEMORY(params.type) == CCV_TENSOR_CPU_MEMORY,
            "ccv_cnnp_dataframe_add_aux: only CPU tensors (this build)");
  NNC_CHECK(ccv_nnc_tensor_nd(params.dim) > 0, "ccv_cnnp_dataframe_add_aux: the tensor has no dimensions");
  packed_bytes(params, "ccv_cnnp_dataframe_add_aux");
  Column c;
  c.data_enum = aux_enum;
  c.data_deinit = free_tensor;
  c.has_name = name != nullptr;
  if (name) c.name = name;
  return add_with_context(df, std::move(c), std::make_unique<AuxContext>(AuxContext{params}));
}

int one_hot(Dataframe* df, int column_idx, off_t structof, int range, float onval, float offval, int datatype,
            int format, const char* name) {
  check_column(df, column_idx, "ccv_cnnp_dataframe_one_hot");
  NNC_CHECK(structof >= 0, "ccv_cnnp_dataframe_one_hot: negative structof");
  NNC_CHECK(range > 0, "ccv_cnnp_dataframe_one_hot: range %d is not positive", range);
  NNC_CHECK(scalar_type(datatype), "ccv_cnnp_dataframe_one_hot: unsupported datatype 0x%x", datatype);
  NNC_CHECK(valid_format(format), "ccv_cnnp_dataframe_one_hot: unknown format %d", format);
  Column c = derived(one_hot_map, {column_idx}, name);
  c.data_deinit = free_tensor;
  return add_with_context(df, std::move(c),
                          std::make_unique<OneHotContext>(OneHotContext{structof, range, onval, offval, datatype, format}));
}

int copy_scalar(Dataframe* df, int column_idx, off_t structof, int from_dt, int to_dt, int format, const char* name) {
  check_column(df, column_idx, "ccv_cnnp_dataframe_copy_scalar");
  NNC_CHECK(structof >= 0, "ccv_cnnp_dataframe_copy_scalar: negative structof");
  NNC_CHECK(scalar_type(from_dt), "ccv_cnnp_dataframe_copy_scalar: unsupported from_dt 0x%x", from_dt);
  NNC_CHECK(scalar_type(to_dt), "ccv_cnnp_dataframe_copy_scalar: unsupported to_dt 0x%x", to_dt);
  NNC_CHECK(valid_format(format), "ccv_cnnp_dataframe_copy_scalar: unknown format %d", format);
  Column c = derived(copy_scalar_map, {column_idx}, name);
  c.data_deinit = free_tensor;
  return add_with_context(df, std::move(c),
                          std::make_unique<ScalarContext>(ScalarContext{structof, from_dt, to_dt, format}));
}

int one_squared(Dataframe* df, const int* column_idxs, int column_idx_size, int variable_size, int max_length,
                const char* name) {
  NNC_CHECK(column_idx_size > 0 && column_idxs, "ccv_cnnp_dataframe_one_squared: no columns given");
  for (int i = 0; i < column_idx_size; i++) check_column(df, column_idxs[i], "ccv_cnnp_dataframe_one_squared");
  NNC_CHECK(max_length > 0, "ccv_cnnp_dataframe_one_squared: max_length %d is not positive", max_length);
  Column c = derived(one_squared_map, std::vector<int>(column_idxs, column_idxs + column_idx_size), name);
  c.data_deinit = free_tensor_tuple;
  c.tuple_size = column_idx_size;
  return add_with_context(df, std::move(c),
                          std::make_unique<SquaredContext>(SquaredContext{column_idx_size, variable_size, max_length}));
}

int truncate(Dataframe* df, const int* vec_idxs, int vec_idx_size, const int* len_idxs, int len_idx_size,
             const char* name) {
  NNC_CHECK(vec_idx_size > 0 && vec_idxs, "ccv_cnnp_dataframe_truncate: no vector columns given");
  NNC_CHECK(len_idx_size > 0 && len_idxs, "ccv_cnnp_dataframe_truncate: no length columns given");
  NNC_CHECK(len_idx_size == vec_idx_size || len_idx_size == 1,
            "ccv_cnnp_dataframe_truncate: %d length columns for %d vector columns (give one, or one each)",
            len_idx_size, vec_idx_size);
  std::vector<int> inputs(vec_idxs, vec_idxs + vec_idx_size);
  inputs.insert(inputs.end(), len_idxs, len_idxs + len_idx_size);
  for (int c : inputs) check_column(df, c, "ccv_cnnp_dataframe_truncate");
  Column c = derived(truncate_map, std::move(inputs), name);
  c.data_deinit = free_tensor_tuple;
  c.tuple_size = vec_idx_size;
  return add_with_context(df, std::move(c), std::make_unique<TruncateContext>(TruncateContext{vec_idx_size, len_idx_size}));
}

int cmd_exec(Dataframe* df, int column_idx, const ccv_nnc_cmd_t& cmd, const ccv_nnc_hint_t& hint, int flags,
             int input_offset, int input_size, const ccv_nnc_tensor_param_t* output_params, int output_size,
             int stream_type, const char* name) {
  check_column(df, column_idx, "ccv_cnnp_dataframe_cmd_exec");
  const int size = df->columns[column_idx].tuple_size;
  NNC_CHECK(size >= 0, "ccv_cnnp_dataframe_cmd_exec: column %d does not hold tuples of tensors", column_idx);
  NNC_CHECK(input_offset >= 0 && input_size >= 0 && input_offset + input_size <= size,
            "ccv_cnnp_dataframe_cmd_exec: inputs [%d, %d) are outside the column's tuples of %d", input_offset,
            input_offset + input_size, size);
  NNC_CHECK(output_size > 0 && output_params, "ccv_cnnp_dataframe_cmd_exec: no outputs given");
  auto ctx = std::make_unique<CmdContext>();
  ctx->cmd = cmd;
  ctx->hint = hint;
  ctx->flags = flags;
  ctx->input_offset = input_offset;
  ctx->input_size = input_size;
  for (int k = 0; k < output_size; k++) {
    NNC_CHECK(CCV_TENSOR_GET_MEMORY(output_params[k].type) == CCV_TENSOR_CPU_MEMORY,
              "ccv_cnnp_dataframe_cmd_exec: output %d is not a CPU tensor (this build)", k);
    packed_bytes(output_params[k], "ccv_cnnp_dataframe_cmd_exec");
    ctx->outputs.push_back(output_params[k]);
  }
  ctx->in_scratch.resize(input_size);
  ctx->out_scratch.resize(output_size);
  Column c = derived(cmd_exec_map, {column_idx}, name);
  c.stream_type = stream_type;
  c.data_deinit = free_tensor_tuple;
  c.tuple_size = output_size;
  return add_with_context(df, std::move(c), std::move(ctx));
}

}  // namespace nnc::dataframe
