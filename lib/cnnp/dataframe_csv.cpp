// A dataframe over the cells of a CSV text (RFC 4180 with a chosen delimiter
// and quote). The whole text is parsed once into one block of
// null-terminated cells; a column's value for a row is a `const char*` to
// its cell, "" for an empty cell and for a cell the row does not have. The
// block lives as long as the dataframe.
//
// Lenient where RFC 4180 is strict, strict where guessing would lose data:
// a quote inside an unquoted field and text after a closing quote are kept
// literally; blank lines are skipped; CRLF, LF, LFCR and lone CR end a line;
// an unterminated quoted field is refused (it would swallow the rest of the
// file).
#include <cstdio>
#include <cstring>
#include <string>

#include "cnnp/dataframe.hpp"
#include "core/error.hpp"

namespace nnc::dataframe {

namespace {

struct CsvContext {
  std::unique_ptr<char[]> text;     // every cell, null-terminated
  std::vector<size_t> row_start;    // into cells, one per row plus the end
  std::vector<size_t> cells;        // offsets into text
  std::vector<std::string> header;  // names when include_header
};

const char kEmpty[] = "";

void csv_enum(int column_idx, const int* row_idxs, int row_size, void** data, void* context,
              ccv_nnc_stream_context_t*) {
  const auto* ctx = static_cast<CsvContext*>(context);
  for (int i = 0; i < row_size; i++) {
    const size_t begin = ctx->row_start[row_idxs[i]], end = ctx->row_start[row_idxs[i] + 1];
    const size_t cell = begin + static_cast<size_t>(column_idx);
    data[i] = cell < end ? ctx->text.get() + ctx->cells[cell] : const_cast<char*>(kEmpty);
  }
}

void delete_csv(void* context) { std::unique_ptr<CsvContext>(static_cast<CsvContext*>(context)); }

std::string read_file(FILE* file) {
  std::string s;
  char chunk[1 << 16];
  for (;;) {
    const size_t n = std::fread(chunk, 1, sizeof(chunk), file);
    s.append(chunk, n);
    if (n < sizeof(chunk)) break;
  }
  NNC_CHECK(!std::ferror(file), "ccv_cnnp_dataframe_from_csv_new: reading the file failed");
  return s;
}

}  // namespace

std::unique_ptr<Dataframe> from_csv_new(void* input, int type, size_t len, char delim, char quote, int include_header,
                                        int* column_size) {
  const char* what = "ccv_cnnp_dataframe_from_csv_new";
  NNC_CHECK(input, "%s: input is NULL", what);
  NNC_CHECK(type == CCV_CNNP_DATAFRAME_CSV_FILE || type == CCV_CNNP_DATAFRAME_CSV_MEMORY, "%s: unknown input type %d",
            what, type);
  if (!delim) delim = ',';
  if (!quote) quote = '"';
  NNC_CHECK(delim != quote, "%s: the delimiter and the quote are the same character", what);
  NNC_CHECK(delim != '\n' && delim != '\r' && quote != '\n' && quote != '\r',
            "%s: the delimiter or quote is a line ending", what);
  std::string file_text;
  const char* p;
  size_t n;
  if (type == CCV_CNNP_DATAFRAME_CSV_FILE) {
    file_text = read_file(static_cast<FILE*>(input));
    p = file_text.data();
    n = file_text.size();
  } else {
    p = static_cast<const char*>(input);
    n = len;
  }

  std::string text;
  text.reserve(n + n / 4 + 16);
  std::vector<size_t> cells;
  std::vector<size_t> row_start;
  size_t i = 0;
  size_t line = 1;
  size_t widest = 0;
  auto at_line_end = [&](size_t k) { return k < n && (p[k] == '\n' || p[k] == '\r'); };
  auto skip_line_end = [&]() {
    const char first = p[i++];
    if (i < n && (p[i] == '\n' || p[i] == '\r') && p[i] != first) i++;
    line++;
  };
  while (i < n) {
    if (at_line_end(i)) {  // a blank line
      skip_line_end();
      continue;
    }
    row_start.push_back(cells.size());
    for (;;) {
      cells.push_back(text.size());
      if (i < n && p[i] == quote) {
        const size_t opened = line;
        i++;
        for (;;) {
          NNC_CHECK(i < n, "%s: the quoted field opened on line %zu is not closed", what, opened);
          if (p[i] == quote) {
            if (i + 1 < n && p[i + 1] == quote) {
              text.push_back(quote);
              i += 2;
              continue;
            }
            i++;
            break;
          }
          if (p[i] == '\n') line++;
          text.push_back(p[i++]);
        }
      }
      while (i < n && p[i] != delim && p[i] != '\n' && p[i] != '\r') text.push_back(p[i++]);
      text.push_back('\0');
      if (i < n && p[i] == delim) {
        i++;
        continue;
      }
      break;
    }
    widest = std::max(widest, cells.size() - row_start.back());
    if (i < n) skip_line_end();
  }
  row_start.push_back(cells.size());

  auto ctx = std::make_unique<CsvContext>();
  size_t first_row = 0;
  if (include_header && row_start.size() > 1) {
    for (size_t c = row_start[0]; c < row_start[1]; c++) ctx->header.emplace_back(text.data() + cells[c]);
    first_row = 1;
  }
  const size_t rows = row_start.size() - 1 - first_row;
  NNC_CHECK(rows <= static_cast<size_t>(INT32_MAX) && widest <= static_cast<size_t>(INT32_MAX),
            "%s: %zu rows of %zu columns are too many", what, rows, widest);
  ctx->row_start.assign(row_start.begin() + static_cast<ptrdiff_t>(first_row), row_start.end());
  ctx->cells = std::move(cells);
  ctx->text = std::make_unique<char[]>(text.size() + 1);
  std::memcpy(ctx->text.get(), text.data(), text.size());
  ctx->text[text.size()] = '\0';

  auto df = make_dataframe(nullptr, 0, static_cast<int>(rows));
  df->columns.reserve(widest);
  for (size_t c = 0; c < widest; c++) {
    Column col;
    col.data_enum = csv_enum;
    col.context = ctx.get();
    if (c < ctx->header.size()) {
      col.has_name = true;
      col.name = ctx->header[c];
    }
    df->columns.push_back(std::move(col));
  }
  // The first column owns the shared context (every column reads it).
  if (widest > 0) {
    df->columns[0].context_deinit = delete_csv;
    ctx.release();
  }
  if (column_size) *column_size = static_cast<int>(widest);
  return df;
}

}  // namespace nnc::dataframe
