// Exported ccv_cnnp_dataframe_* calls: argument checks, then the C++ in
// dataframe*.cpp, every exception turned into libnnc's failure value and a
// message for ccv_nnc_error_message().
#include "cnnp/dataframe.hpp"
#include "core/error.hpp"
#include "core/export.hpp"
#include "core/live.hpp"

struct ccv_cnnp_dataframe_iter_s : nnc::dataframe::Iterator {
  using Iterator::Iterator;
  nnc::LiveCounter<CCV_NNC_LIVE_DATAFRAME_ITER> live_counter_;  // ccv_nnc_live_object_count
};

namespace {
using nnc::dataframe::Dataframe;

// A dataframe built in C++ handed to the caller (who frees it with
// ccv_cnnp_dataframe_free).
ccv_cnnp_dataframe_t* give(std::unique_ptr<Dataframe> df) { return df.release(); }

void check_df(const ccv_cnnp_dataframe_t* df, const char* what) { NNC_CHECK(df, "%s: dataframe is NULL", what); }
}  // namespace

extern "C" {

NNC_API ccv_cnnp_dataframe_t* ccv_cnnp_dataframe_new(const ccv_cnnp_column_data_t* const column_data,
                                                     const int column_size, const int row_count) {
  return nnc::guard<ccv_cnnp_dataframe_t*>(nullptr, [&] {
    return give(nnc::dataframe::make_dataframe(column_data, column_size, row_count));
  });
}

NNC_API int ccv_cnnp_dataframe_add(ccv_cnnp_dataframe_t* const dataframe, ccv_cnnp_column_data_enum_f data_enum,
                                   const int stream_type, ccv_cnnp_column_data_deinit_f data_deinit,
                                   void* const context, ccv_cnnp_column_data_context_deinit_f context_deinit,
                                   const char* name) {
  return nnc::guard(-1, [&] {
    check_df(dataframe, "ccv_cnnp_dataframe_add");
    NNC_CHECK(data_enum, "ccv_cnnp_dataframe_add: data_enum is NULL");
    nnc::dataframe::Column c;
    c.has_name = name != nullptr;
    if (name) c.name = name;
    c.stream_type = stream_type;
    c.data_enum = data_enum;
    c.data_deinit = data_deinit;
    c.context = context;
    c.context_deinit = context_deinit;
    return nnc::dataframe::add_column(dataframe, std::move(c));
  });
}

NNC_API int ccv_cnnp_dataframe_map(ccv_cnnp_dataframe_t* const dataframe, ccv_cnnp_column_data_map_f map,
                                   const int stream_type, ccv_cnnp_column_data_deinit_f data_deinit,
                                   const int* const column_idxs, const int column_idx_size, void* const context,
                                   ccv_cnnp_column_data_context_deinit_f context_deinit, const char* name) {
  return nnc::guard(-1, [&] {
    check_df(dataframe, "ccv_cnnp_dataframe_map");
    NNC_CHECK(map, "ccv_cnnp_dataframe_map: map is NULL");
    NNC_CHECK(column_idx_size > 0 && column_idxs, "ccv_cnnp_dataframe_map: no input columns given");
    for (int i = 0; i < column_idx_size; i++)
      nnc::dataframe::check_column(dataframe, column_idxs[i], "ccv_cnnp_dataframe_map");
    nnc::dataframe::Column c;
    c.has_name = name != nullptr;
    if (name) c.name = name;
    c.stream_type = stream_type;
    c.map = map;
    c.inputs.assign(column_idxs, column_idxs + column_idx_size);
    c.data_deinit = data_deinit;
    c.context = context;
    c.context_deinit = context_deinit;
    return nnc::dataframe::add_column(dataframe, std::move(c));
  });
}

NNC_API void ccv_cnnp_dataframe_shuffle(ccv_cnnp_dataframe_t* const dataframe) {
  nnc::guard_void([&] {
    check_df(dataframe, "ccv_cnnp_dataframe_shuffle");
    nnc::dataframe::shuffle(dataframe);
  });
}

NNC_API int ccv_cnnp_dataframe_row_count(ccv_cnnp_dataframe_t* const dataframe) {
  return nnc::guard(-1, [&] {
    check_df(dataframe, "ccv_cnnp_dataframe_row_count");
    return dataframe->row_count;
  });
}

NNC_API const char* ccv_cnnp_dataframe_column_name(ccv_cnnp_dataframe_t* const dataframe, const int column_idx) {
  return nnc::guard<const char*>(nullptr, [&]() -> const char* {
    check_df(dataframe, "ccv_cnnp_dataframe_column_name");
    nnc::dataframe::check_column(dataframe, column_idx, "ccv_cnnp_dataframe_column_name");
    const auto& c = dataframe->columns[column_idx];
    return c.has_name ? c.name.c_str() : nullptr;
  });
}

NNC_API ccv_cnnp_dataframe_t* ccv_cnnp_dataframe_shard_new(ccv_cnnp_dataframe_t* const dataframe, const int rank, const int size) {
  return nnc::guard<ccv_cnnp_dataframe_t*>(nullptr, [&] {
    check_df(dataframe, "ccv_cnnp_dataframe_shard_new");
    return give(nnc::dataframe::shard_new(dataframe, rank, size));
  });
}

NNC_API ccv_cnnp_dataframe_t* ccv_cnnp_dataframe_sample_new(ccv_cnnp_dataframe_t* const dataframe,
                                                            ccv_cnnp_column_data_sample_f sample,
                                                            ccv_cnnp_column_data_deinit_f data_deinit,
                                                            const int column_idx, const int batch_size,
                                                            void* const context,
                                                            ccv_cnnp_column_data_context_deinit_f context_deinit) {
  return nnc::guard<ccv_cnnp_dataframe_t*>(nullptr, [&] {
    check_df(dataframe, "ccv_cnnp_dataframe_sample_new");
    return give(nnc::dataframe::sample_new(dataframe, sample, data_deinit, column_idx, batch_size, context,
                                           context_deinit));
  });
}

NNC_API int ccv_cnnp_dataframe_extract_value(ccv_cnnp_dataframe_t* const dataframe, const int column_idx,
                                             const off_t offset, const char* name) {
  return nnc::guard(-1, [&] {
    check_df(dataframe, "ccv_cnnp_dataframe_extract_value");
    return nnc::dataframe::extract_value(dataframe, column_idx, offset, name);
  });
}

NNC_API int ccv_cnnp_dataframe_make_tuple(ccv_cnnp_dataframe_t* const dataframe, const int* const column_idxs,
                                          const int column_idx_size, const char* name) {
  return nnc::guard(-1, [&] {
    check_df(dataframe, "ccv_cnnp_dataframe_make_tuple");
    return nnc::dataframe::make_tuple(dataframe, column_idxs, column_idx_size, name);
  });
}

NNC_API int ccv_cnnp_dataframe_tuple_size(const ccv_cnnp_dataframe_t* const dataframe, const int column_idx) {
  return nnc::guard(-1, [&] {
    check_df(dataframe, "ccv_cnnp_dataframe_tuple_size");
    nnc::dataframe::check_column(dataframe, column_idx, "ccv_cnnp_dataframe_tuple_size");
    const int size = dataframe->columns[column_idx].tuple_size;
    NNC_CHECK(size >= 0, "ccv_cnnp_dataframe_tuple_size: column %d does not hold tuples", column_idx);
    return size;
  });
}

NNC_API int ccv_cnnp_dataframe_extract_tuple(ccv_cnnp_dataframe_t* const dataframe, const int column_idx,
                                             const int index, const char* name) {
  return nnc::guard(-1, [&] {
    check_df(dataframe, "ccv_cnnp_dataframe_extract_tuple");
    return nnc::dataframe::extract_tuple(dataframe, column_idx, index, name);
  });
}

NNC_API ccv_cnnp_dataframe_iter_t* ccv_cnnp_dataframe_iter_new(ccv_cnnp_dataframe_t* const dataframe,
                                                               const int* const column_idxs,
                                                               const int column_idx_size) {
  return nnc::guard<ccv_cnnp_dataframe_iter_t*>(nullptr, [&] {
    check_df(dataframe, "ccv_cnnp_dataframe_iter_new");
    NNC_CHECK(column_idx_size > 0 && column_idxs, "ccv_cnnp_dataframe_iter_new: no columns given");
    for (int i = 0; i < column_idx_size; i++)
      nnc::dataframe::check_column(dataframe, column_idxs[i], "ccv_cnnp_dataframe_iter_new");
    auto it = std::make_unique<ccv_cnnp_dataframe_iter_t>(
        dataframe, std::vector<int>(column_idxs, column_idxs + column_idx_size), true);
    return it.release();
  });
}

NNC_API int ccv_cnnp_dataframe_iter_next(ccv_cnnp_dataframe_iter_t* const iter, void** const data_ref,
                                         const int column_idx_size, ccv_nnc_stream_context_t* const stream_context) {
  return nnc::guard_code([&] {
    NNC_CHECK(iter, "ccv_cnnp_dataframe_iter_next: iterator is NULL");
    return iter->next(data_ref, column_idx_size, stream_context);
  });
}

NNC_API void ccv_cnnp_dataframe_iter_peek(ccv_cnnp_dataframe_iter_t* const iter, void** const data_ref,
                                          const int offset, const int data_ref_size,
                                          ccv_nnc_stream_context_t* const stream_context) {
  nnc::guard_void([&] {
    NNC_CHECK(iter, "ccv_cnnp_dataframe_iter_peek: iterator is NULL");
    iter->peek(data_ref, offset, data_ref_size, stream_context);
  });
}

NNC_API int ccv_cnnp_dataframe_iter_prefetch(ccv_cnnp_dataframe_iter_t* const iter, const int prefetch_count,
                                             ccv_nnc_stream_context_t* const stream_context) {
  return nnc::guard_code([&] {
    NNC_CHECK(iter, "ccv_cnnp_dataframe_iter_prefetch: iterator is NULL");
    return iter->prefetch(prefetch_count, stream_context);
  });
}

NNC_API int ccv_cnnp_dataframe_iter_set_cursor(ccv_cnnp_dataframe_iter_t* const iter, const int idx) {
  return nnc::guard(-1, [&] {
    NNC_CHECK(iter, "ccv_cnnp_dataframe_iter_set_cursor: iterator is NULL");
    return iter->set_cursor(idx);
  });
}

NNC_API void ccv_cnnp_dataframe_iter_free(ccv_cnnp_dataframe_iter_t* const iter) {
  nnc::guard_void([&] { std::unique_ptr<ccv_cnnp_dataframe_iter_t> owned(iter); });
}

NNC_API void ccv_cnnp_dataframe_free(ccv_cnnp_dataframe_t* const dataframe) {
  nnc::guard_void([&] { std::unique_ptr<Dataframe> owned(dataframe); });
}

// Add-ons.

NNC_API ccv_cnnp_dataframe_t* ccv_cnnp_dataframe_from_array_new(ccv_array_t* const array) {
  return nnc::guard<ccv_cnnp_dataframe_t*>(nullptr, [&] { return give(nnc::dataframe::from_array_new(array)); });
}

NNC_API int ccv_cnnp_dataframe_copy_to_gpu(ccv_cnnp_dataframe_t* const dataframe, const int column_idx,
                                           const int tensor_offset, const int tensor_size, const int device_id,
                                           const char* name) {
  return nnc::guard(-1, [&]() -> int {
    check_df(dataframe, "ccv_cnnp_dataframe_copy_to_gpu");
    return nnc::dataframe::copy_to_gpu(dataframe, column_idx, tensor_offset, tensor_size, device_id, name);
  });
}

NNC_API int ccv_cnnp_dataframe_cmd_exec(ccv_cnnp_dataframe_t* const dataframe, const int column_idx,
                                        const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t hint, const int flags,
                                        const int input_offset, const int input_size,
                                        const ccv_nnc_tensor_param_t* const output_params, const int output_size,
                                        const int stream_type, const char* name) {
  return nnc::guard(-1, [&] {
    check_df(dataframe, "ccv_cnnp_dataframe_cmd_exec");
    return nnc::dataframe::cmd_exec(dataframe, column_idx, cmd, hint, flags, input_offset, input_size, output_params,
                                    output_size, stream_type, name);
  });
}

NNC_API int ccv_cnnp_dataframe_add_aux(ccv_cnnp_dataframe_t* const dataframe, const ccv_nnc_tensor_param_t params,
                                       const char* name) {
  return nnc::guard(-1, [&] {
    check_df(dataframe, "ccv_cnnp_dataframe_add_aux");
    return nnc::dataframe::add_aux(dataframe, params, name);
  });
}

NNC_API int ccv_cnnp_dataframe_read_image(ccv_cnnp_dataframe_t* const dataframe, const int column_idx,
                                          const off_t structof, const char* name) {
  return nnc::guard(-1, [&] {
    check_df(dataframe, "ccv_cnnp_dataframe_read_image");
    return nnc::dataframe::read_image(dataframe, column_idx, structof, name);
  });
}

NNC_API int ccv_cnnp_dataframe_image_random_jitter(ccv_cnnp_dataframe_t* const dataframe, const int column_idx,
                                                   const int datatype, const ccv_cnnp_random_jitter_t random_jitter,
                                                   const char* name) {
  return nnc::guard(-1, [&] {
    check_df(dataframe, "ccv_cnnp_dataframe_image_random_jitter");
    return nnc::dataframe::image_random_jitter(dataframe, column_idx, datatype, random_jitter, name);
  });
}

NNC_API int ccv_cnnp_dataframe_one_hot(ccv_cnnp_dataframe_t* const dataframe, const int column_idx,
                                       const off_t structof, const int range, const float onval, const float offval,
                                       const int datatype, const int format, const char* name) {
  return nnc::guard(-1, [&] {
    check_df(dataframe, "ccv_cnnp_dataframe_one_hot");
    return nnc::dataframe::one_hot(dataframe, column_idx, structof, range, onval, offval, datatype, format, name);
  });
}

NNC_API int ccv_cnnp_dataframe_copy_scalar(ccv_cnnp_dataframe_t* const dataframe, const int column_idx,
                                           const off_t structof, const int from_dt, const int to_dt, const int format,
                                           const char* name) {
  return nnc::guard(-1, [&] {
    check_df(dataframe, "ccv_cnnp_dataframe_copy_scalar");
    return nnc::dataframe::copy_scalar(dataframe, column_idx, structof, from_dt, to_dt, format, name);
  });
}

NNC_API int ccv_cnnp_dataframe_one_squared(ccv_cnnp_dataframe_t* const dataframe, const int* const column_idxs,
                                           const int column_idx_size, const int variable_size, const int max_length,
                                           const char* name) {
  return nnc::guard(-1, [&] {
    check_df(dataframe, "ccv_cnnp_dataframe_one_squared");
    return nnc::dataframe::one_squared(dataframe, column_idxs, column_idx_size, variable_size, max_length, name);
  });
}

NNC_API int ccv_cnnp_dataframe_truncate(ccv_cnnp_dataframe_t* const dataframe, const int* const vec_idxs,
                                        const int vec_idx_size, const int* len_idxs, const int len_idx_size,
                                        const char* name) {
  return nnc::guard(-1, [&] {
    check_df(dataframe, "ccv_cnnp_dataframe_truncate");
    return nnc::dataframe::truncate(dataframe, vec_idxs, vec_idx_size, len_idxs, len_idx_size, name);
  });
}

NNC_API ccv_cnnp_dataframe_t* ccv_cnnp_dataframe_combine_new(ccv_cnnp_dataframe_t* const dataframe,
                                                             const int* const column_idxs, const int column_idx_size,
                                                             const int batch_count, const int group_count,
                                                             const int format) {
  return nnc::guard<ccv_cnnp_dataframe_t*>(nullptr, [&] {
    check_df(dataframe, "ccv_cnnp_dataframe_combine_new");
    return give(nnc::dataframe::combine_new(dataframe, column_idxs, column_idx_size, batch_count, group_count, format));
  });
}

NNC_API ccv_cnnp_dataframe_t* ccv_cnnp_dataframe_from_csv_new(void* const input, const int type, const size_t len,
                                                              const char delim, const char quote,
                                                              const int include_header, int* const column_size) {
  return nnc::guard<ccv_cnnp_dataframe_t*>(nullptr, [&] {
    return give(nnc::dataframe::from_csv_new(input, type, len, delim, quote, include_header, column_size));
  });
}

}  // extern "C"
