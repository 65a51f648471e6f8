// libFuzzer target for the CSV reader: any bytes, any delimiter / quote /
// header choice (from the first two bytes), then every cell read through an
// iterator. A refusal must come with a message; nothing may crash or leak.
//   clang++ -fsanitize=fuzzer,address ... fuzz_csv.cpp (see CMakeLists.txt)
//   ./fuzz_csv -max_total_time=600 corpus/
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "nnc/ccv_nnc.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const char delim = static_cast<char>(data[0] & 0x7f);
  const char quote = static_cast<char>(data[1] & 0x7f);
  const int header = data[1] >> 7;
  // A copy of exactly `size` bytes, so that reading past the end is caught.
  std::vector<char> text(data + 2, data + size);
  int columns = -1;
  ccv_cnnp_dataframe_t* df = ccv_cnnp_dataframe_from_csv_new(text.empty() ? const_cast<char*>("") : text.data(),
                                                             CCV_CNNP_DATAFRAME_CSV_MEMORY, text.size(), delim, quote,
                                                             header, &columns);
  if (!df) {
    const char* message = ccv_nnc_error_message();
    if (!message || !*message) std::abort();
    return 0;
  }
  if (columns > 0) {
    std::vector<int> idx(columns);
    for (int i = 0; i < columns; i++) idx[i] = i;
    ccv_cnnp_dataframe_iter_t* it = ccv_cnnp_dataframe_iter_new(df, idx.data(), columns);
    std::vector<void*> cells(columns);
    size_t total = 0;
    while (ccv_cnnp_dataframe_iter_next(it, cells.data(), columns, nullptr) == 0)
      for (void* cell : cells) total += std::strlen(static_cast<const char*>(cell));
    if (total > text.size()) std::abort();  // cells only ever shrink the text
    ccv_cnnp_dataframe_iter_free(it);
  }
  // Names may be NULL (a file without a header row); asking must not crash.
  for (int i = 0; i < columns; i++) {
    const char* volatile name = ccv_cnnp_dataframe_column_name(df, i);
    (void)name;
  }
  ccv_cnnp_dataframe_free(df);
  return 0;
}
