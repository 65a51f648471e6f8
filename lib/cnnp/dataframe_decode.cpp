// PNG (libpng's simplified API) and JPEG (libjpeg) decoding into 8-bit RGB
// dense matrices, for ccv_cnnp_dataframe_read_image. Built with the decoders
// when NNC_HAVE_PNG / NNC_HAVE_JPEG are defined (the build links libpng /
// libjpeg then); without them decode_image reports that the format is not
// supported by this build.
#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <string>

#include "cnnp/dataframe.hpp"
#include "core/error.hpp"

#ifdef NNC_HAVE_PNG
#include <png.h>
#endif
#ifdef NNC_HAVE_JPEG
#include <jpeglib.h>
#endif

namespace nnc::dataframe {

namespace {

// Images larger than this many pixels are refused before allocating (a
// corrupt header must not ask for gigabytes).
constexpr uint64_t kMaxPixels = uint64_t{1} << 28;

// An 8-bit RGB matrix of rows x cols in `slot`: the one there when it has
// that shape, else a new one (the old one freed). NULL when out of memory.
// Never throws: it runs between setjmp and longjmp in the JPEG decoder.
[[maybe_unused]] ccv_dense_matrix_t* rgb_matrix(void*& slot, int rows, int cols) noexcept {
  auto* m = static_cast<ccv_dense_matrix_t*>(slot);
  if (m && m->rows == rows && m->cols == cols && CCV_GET_DATA_TYPE(m->type) == CCV_8U &&
      CCV_GET_CHANNEL(m->type) == CCV_C3)
    return m;
  if (m) {
    ccv_matrix_free(m);
    slot = nullptr;
  }
  m = ccv_dense_matrix_new(rows, cols, CCV_8U | CCV_C3, nullptr, 0);
  if (m) count_allocation();
  slot = m;
  return m;
}

#ifdef NNC_HAVE_PNG
// Returns an empty string, or what went wrong.
std::string decode_png(const char* filename, void*& slot) {
  png_image image;
  std::memset(&image, 0, sizeof(image));
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, filename)) return std::string("PNG: ") + image.message;
  if (image.width == 0 || image.height == 0 || static_cast<uint64_t>(image.width) * image.height > kMaxPixels) {
    png_image_free(&image);
    return format("PNG of %ux%u pixels is refused (at most %llu)", image.width, image.height,
                  static_cast<unsigned long long>(kMaxPixels));
  }
  image.format = PNG_FORMAT_RGB;  // gray expanded, alpha composited on black
  ccv_dense_matrix_t* m = rgb_matrix(slot, static_cast<int>(image.height), static_cast<int>(image.width));
  if (!m) {
    png_image_free(&image);
    return "out of memory for the decoded image";
  }
  // For 8-bit formats the row stride counts bytes.
  if (!png_image_finish_read(&image, nullptr, m->data.u8, m->step, nullptr)) {
    png_image_free(&image);
    return std::string("PNG: ") + image.message;
  }
  return {};
}
#endif

#ifdef NNC_HAVE_JPEG
struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_fail(j_common_ptr info) {
  auto* err = reinterpret_cast<JpegError*>(info->err);
  err->mgr.format_message(info, err->message);
  std::longjmp(err->jump, 1);
}
void jpeg_quiet(j_common_ptr) {}

// C-style on purpose: libjpeg reports errors by longjmp, so nothing with a
// destructor lives in this frame. Returns 0, or 1 with `message` filled.
int decode_jpeg_c(std::FILE* file, void** slot, char* message, size_t message_size) {
  jpeg_decompress_struct info;
  JpegError err;
  info.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_fail;
  err.mgr.output_message = jpeg_quiet;
  err.message[0] = '\0';
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&info);
    std::snprintf(message, message_size, "JPEG: %s", err.message);
    return 1;
  }
  jpeg_create_decompress(&info);
  jpeg_stdio_src(&info, file);
  jpeg_read_header(&info, TRUE);
  if (static_cast<uint64_t>(info.image_width) * info.image_height > kMaxPixels) {
    std::snprintf(message, message_size, "JPEG of %ux%u pixels is refused", info.image_width, info.image_height);
    jpeg_destroy_decompress(&info);
    return 1;
  }
  info.out_color_space = JCS_RGB;  // gray and YCbCr both come out as RGB
  jpeg_start_decompress(&info);
  if (info.output_components != 3) {
    std::snprintf(message, message_size, "JPEG with %d output components (RGB expected)", info.output_components);
    jpeg_destroy_decompress(&info);
    return 1;
  }
  ccv_dense_matrix_t* m = rgb_matrix(*slot, static_cast<int>(info.output_height), static_cast<int>(info.output_width));
  if (!m) {
    std::snprintf(message, message_size, "out of memory for the decoded image");
    jpeg_destroy_decompress(&info);
    return 1;
  }
  while (info.output_scanline < info.output_height) {
    JSAMPROW row = m->data.u8 + static_cast<size_t>(info.output_scanline) * m->step;
    jpeg_read_scanlines(&info, &row, 1);
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  return 0;
}
#endif

}  // namespace

bool image_decoders_available() {
#if defined(NNC_HAVE_PNG) || defined(NNC_HAVE_JPEG)
  return true;
#else
  return false;
#endif
}

void decode_image(const char* filename, [[maybe_unused]] void*& slot) {
  const char* what = "ccv_cnnp_dataframe_read_image";
  std::FILE* file = std::fopen(filename, "rb");
  NNC_CHECK(file, "%s: cannot open '%s': %s", what, filename, std::strerror(errno));
  unsigned char magic[8] = {};
  const size_t got = std::fread(magic, 1, sizeof(magic), file);
  const bool png = got >= 8 && std::memcmp(magic, "\x89PNG\r\n\x1a\n", 8) == 0;
  const bool jpeg = got >= 3 && magic[0] == 0xFF && magic[1] == 0xD8 && magic[2] == 0xFF;
  std::string error;
  if (png) {
#ifdef NNC_HAVE_PNG
    std::fclose(file);
    file = nullptr;
    error = decode_png(filename, slot);
#else
    error = "PNG decoding is not part of this build (libpng was not linked)";
#endif
  } else if (jpeg) {
#ifdef NNC_HAVE_JPEG
    std::rewind(file);
    char message[JMSG_LENGTH_MAX + 64];
    if (decode_jpeg_c(file, &slot, message, sizeof(message))) error = message;
#else
    error = "JPEG decoding is not part of this build (libjpeg was not linked)";
#endif
  } else {
    error = "not a PNG or JPEG file";
  }
  if (file) std::fclose(file);
  if (!error.empty()) fail(CCV_NNC_EXEC_INVALID, "%s: '%s': %s", what, filename, error.c_str());
}

}  // namespace nnc::dataframe
