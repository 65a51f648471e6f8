// Image columns: random jitter against closed forms (identity, crop, flip,
// normalisation, constant images through a resize), and PNG / JPEG decoding
// of files written here with libpng / libjpeg against the pixels written.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "nnc/ccv_nnc.h"

#ifdef NNC_TEST_IMAGE_WRITERS
#include <jpeglib.h>
#include <png.h>
#include <unistd.h>
#endif

namespace {

std::string last_error() {
  const char* m = ccv_nnc_error_message();
  return m ? m : "";
}

// A dataframe of one column whose every row is the same image.
void image_enum(int, const int*, int n, void** data, void* context, ccv_nnc_stream_context_t*) {
  for (int i = 0; i < n; i++) data[i] = context;
}
ccv_cnnp_dataframe_t* image_frame(ccv_dense_matrix_t* image, int rows) {
  ccv_cnnp_column_data_t column{};
  column.data_enum = image_enum;
  column.context = image;
  return ccv_cnnp_dataframe_new(&column, 1, rows);
}

// 3 x 5 RGB, pixel (y, x, c) = 10 * (5y + x) + c.
ccv_dense_matrix_t* test_image() {
  ccv_dense_matrix_t* m = ccv_dense_matrix_new(3, 5, CCV_8U | CCV_C3, nullptr, 0);
  for (int y = 0; y < 3; y++)
    for (int x = 0; x < 5; x++)
      for (int c = 0; c < 3; c++) m->data.u8[y * m->step + x * 3 + c] = static_cast<unsigned char>(10 * (5 * y + x) + c);
  return m;
}

ccv_cnnp_random_jitter_t plain_jitter(int rows, int cols) {
  ccv_cnnp_random_jitter_t j;
  std::memset(&j, 0, sizeof(j));
  j.size.rows = rows;
  j.size.cols = cols;
  j.center_crop = 1;
  for (int c = 0; c < 3; c++) j.normalize.std[c] = 1;
  return j;
}

// Rows of the jittered column, copied out.
std::vector<std::vector<float>> run(ccv_cnnp_dataframe_t* df, int column, int rows, int* out_rows = nullptr,
                                    int* out_cols = nullptr) {
  ccv_cnnp_dataframe_iter_t* it = ccv_cnnp_dataframe_iter_new(df, &column, 1);
  std::vector<std::vector<float>> all;
  void* v;
  for (int r = 0; r < rows; r++) {
    EXPECT_EQ(ccv_cnnp_dataframe_iter_next(it, &v, 1, nullptr), 0) << last_error();
    auto* m = static_cast<ccv_dense_matrix_t*>(v);
    EXPECT_EQ(CCV_GET_DATA_TYPE(m->type), CCV_32F);
    EXPECT_EQ(CCV_GET_CHANNEL(m->type), 3);
    if (out_rows) *out_rows = m->rows;
    if (out_cols) *out_cols = m->cols;
    all.emplace_back(m->data.f32, m->data.f32 + static_cast<size_t>(m->rows) * m->cols * 3);
  }
  ccv_cnnp_dataframe_iter_free(it);
  return all;
}

TEST(DataframeImage, JitterIdentityAndNormalise) {
  ccv_dense_matrix_t* image = test_image();
  ccv_cnnp_dataframe_t* df = image_frame(image, 2);
  const int same = ccv_cnnp_dataframe_image_random_jitter(df, 0, CCV_32F, plain_jitter(3, 5), nullptr);
  ccv_cnnp_random_jitter_t norm = plain_jitter(0, 0);  // size 0: the whole image
  const float mean[3] = {10, 20, 30}, stdv[3] = {2, 4, 8};
  for (int c = 0; c < 3; c++) norm.normalize.mean[c] = mean[c], norm.normalize.std[c] = stdv[c];
  const int normalised = ccv_cnnp_dataframe_image_random_jitter(df, 0, CCV_32F, norm, nullptr);
  ASSERT_GE(same, 0) << last_error();
  ASSERT_GE(normalised, 0);
  const auto a = run(df, same, 2);
  int rows = 0, cols = 0;
  const auto b = run(df, normalised, 2, &rows, &cols);
  EXPECT_EQ(rows, 3);
  EXPECT_EQ(cols, 5);
  for (int r = 0; r < 2; r++)
    for (int y = 0; y < 3; y++)
      for (int x = 0; x < 5; x++)
        for (int c = 0; c < 3; c++) {
          const float v = static_cast<float>(10 * (5 * y + x) + c);
          EXPECT_EQ(a[r][(y * 5 + x) * 3 + c], v);
          EXPECT_FLOAT_EQ(b[r][(y * 5 + x) * 3 + c], (v - mean[c]) / stdv[c]);
        }
  ccv_cnnp_dataframe_free(df);
  ccv_matrix_free(image);
}

TEST(DataframeImage, JitterCenterCropAndFlip) {
  ccv_dense_matrix_t* image = test_image();
  ccv_cnnp_dataframe_t* df = image_frame(image, 16);
  const int crop = ccv_cnnp_dataframe_image_random_jitter(df, 0, CCV_32F, plain_jitter(1, 3), nullptr);
  ccv_cnnp_random_jitter_t flip = plain_jitter(3, 5);
  flip.symmetric = 1;
  flip.seed = 7;
  const int flipped = ccv_cnnp_dataframe_image_random_jitter(df, 0, CCV_32F, flip, nullptr);
  // The 1 x 3 centre of 3 x 5: row 1, columns 1..3.
  for (const auto& row : run(df, crop, 1))
    for (int x = 0; x < 3; x++)
      for (int c = 0; c < 3; c++) EXPECT_EQ(row[x * 3 + c], 10 * (5 * 1 + x + 1) + c);
  int plain = 0, mirrored = 0;
  for (const auto& row : run(df, flipped, 16)) {
    bool is_plain = true, is_mirrored = true;
    for (int y = 0; y < 3; y++)
      for (int x = 0; x < 5; x++)
        for (int c = 0; c < 3; c++) {
          const float v = row[(y * 5 + x) * 3 + c];
          is_plain = is_plain && v == 10 * (5 * y + x) + c;
          is_mirrored = is_mirrored && v == 10 * (5 * y + (4 - x)) + c;
        }
    EXPECT_TRUE(is_plain || is_mirrored);
    plain += is_plain;
    mirrored += is_mirrored;
  }
  EXPECT_GT(plain, 0);  // a fair coin over 16 rows: both sides (fixed seed)
  EXPECT_GT(mirrored, 0);
  ccv_cnnp_dataframe_free(df);
  ccv_matrix_free(image);
}

TEST(DataframeImage, JitterResizeAndColourOnAConstantImage) {
  ccv_dense_matrix_t* image = ccv_dense_matrix_new(4, 6, CCV_8U | CCV_C1, nullptr, 0);
  std::memset(image->data.u8, 100, static_cast<size_t>(image->step) * 4);
  ccv_cnnp_dataframe_t* df = image_frame(image, 8);
  ccv_cnnp_random_jitter_t j = plain_jitter(0, 0);
  j.resize.min = 8;  // the shorter side (4) to 8: 8 x 12
  j.resize.max = 8;
  const int resized = ccv_cnnp_dataframe_image_random_jitter(df, 0, CCV_32F, j, nullptr);
  ccv_cnnp_random_jitter_t k = plain_jitter(5, 5);
  k.center_crop = 0;  // random crop
  k.resize.min = 5;
  k.resize.max = 9;
  k.aspect_ratio = 0.5f;
  k.brightness = 0.5f;
  k.contrast = 0.5f;    // no effect on a constant image
  k.saturation = 0.5f;  // nor on a grey one
  const int jittered = ccv_cnnp_dataframe_image_random_jitter(df, 0, CCV_32F, k, nullptr);
  int rows = 0, cols = 0;
  for (const auto& row : run(df, resized, 2, &rows, &cols))
    for (float v : row) EXPECT_EQ(v, 100.0f);
  EXPECT_EQ(rows, 8);
  EXPECT_EQ(cols, 12);
  std::vector<float> seen;
  for (const auto& row : run(df, jittered, 8, &rows, &cols)) {
    EXPECT_EQ(rows, 5);
    EXPECT_EQ(cols, 5);
    // One brightness factor per image, in [1/1.5, 1.5]; pixels outside a
    // smaller resized image are 0.
    float level = 0;
    for (float v : row)
      if (v != 0) {
        if (level == 0) level = v;
        EXPECT_NEAR(v, level, 1e-3f * level);
      }
    EXPECT_GE(level, 100 / 1.5f - 1e-3f);
    EXPECT_LE(level, 100 * 1.5f + 1e-3f);
    seen.push_back(level);
  }
  EXPECT_NE(seen.front(), seen.back());  // the draws move
  ccv_cnnp_dataframe_free(df);
  ccv_matrix_free(image);
}

TEST(DataframeImage, JitterBadInput) {
  ccv_dense_matrix_t* image = test_image();
  ccv_cnnp_dataframe_t* df = image_frame(image, 1);
  EXPECT_EQ(ccv_cnnp_dataframe_image_random_jitter(df, 0, CCV_16F, plain_jitter(1, 1), nullptr), -1);
  EXPECT_NE(last_error().find("only CCV_32F"), std::string::npos);
  EXPECT_EQ(ccv_cnnp_dataframe_image_random_jitter(df, 3, CCV_32F, plain_jitter(1, 1), nullptr), -1);
  EXPECT_EQ(ccv_cnnp_dataframe_image_random_jitter(nullptr, 0, CCV_32F, plain_jitter(1, 1), nullptr), -1);
  ccv_cnnp_random_jitter_t bad = plain_jitter(1, 1);
  bad.contrast = -1;
  EXPECT_EQ(ccv_cnnp_dataframe_image_random_jitter(df, 0, CCV_32F, bad, nullptr), -1);
  // Jitter of a jitter: a 32F C3 matrix is an image too.
  const int twice = ccv_cnnp_dataframe_image_random_jitter(df, 0, CCV_32F, plain_jitter(1, 1), nullptr);
  const int again = ccv_cnnp_dataframe_image_random_jitter(df, twice, CCV_32F, plain_jitter(1, 1), nullptr);
  ASSERT_GE(again, 0);
  ccv_cnnp_dataframe_iter_t* it = ccv_cnnp_dataframe_iter_new(df, &again, 1);
  void* v;
  EXPECT_EQ(ccv_cnnp_dataframe_iter_next(it, &v, 1, nullptr), 0);
  EXPECT_EQ(static_cast<ccv_dense_matrix_t*>(v)->data.f32[0], 10 * (5 * 1 + 2));  // the centre pixel, red
  ccv_cnnp_dataframe_iter_free(it);
  ccv_cnnp_dataframe_free(df);
  // A column of tensors that are not images: refused by next, with a message.
  ccv_nnc_tensor_param_t p{};
  p.type = CCV_TENSOR_CPU_MEMORY;
  p.format = CCV_TENSOR_FORMAT_NHWC;
  p.datatype = CCV_32S;
  p.dim[0] = 4;
  ccv_nnc_tensor_t* t = ccv_nnc_tensor_new(nullptr, p, 0);
  df = image_frame(reinterpret_cast<ccv_dense_matrix_t*>(t), 1);
  const int j = ccv_cnnp_dataframe_image_random_jitter(df, 0, CCV_32F, plain_jitter(1, 1), nullptr);
  it = ccv_cnnp_dataframe_iter_new(df, &j, 1);
  EXPECT_EQ(ccv_cnnp_dataframe_iter_next(it, &v, 1, nullptr), CCV_NNC_EXEC_INVALID);
  EXPECT_NE(last_error().find("not an 8U or 32F dense matrix"), std::string::npos) << last_error();
  ccv_cnnp_dataframe_iter_free(it);
  ccv_cnnp_dataframe_free(df);
  ccv_nnc_tensor_free(t);
  ccv_matrix_free(image);
}

// --- decoding ------------------------------------------------------------------

struct Named {
  int label;
  char filename[256];
};

bool decoders_built() {
  ccv_cnnp_column_data_t column{};
  column.data_enum = image_enum;
  ccv_cnnp_dataframe_t* df = ccv_cnnp_dataframe_new(&column, 1, 1);
  const int r = ccv_cnnp_dataframe_read_image(df, 0, 0, nullptr);
  const std::string message = last_error();
  ccv_cnnp_dataframe_free(df);
  if (r < 0) {
    EXPECT_NE(message.find("no image decoders"), std::string::npos) << message;
    std::printf("[   INFO   ] %s\n", message.c_str());
  }
  return r >= 0;
}

#ifdef NNC_TEST_IMAGE_WRITERS
std::string temp_path(const char* suffix) {
  char path[] = "/tmp/nnc_dataframe_XXXXXX";
  const int fd = mkstemp(path);
  if (fd >= 0) close(fd);
  std::remove(path);
  return std::string(path) + suffix;
}

bool write_png(const std::string& path, int rows, int cols, int channels, const std::vector<unsigned char>& pixels) {
  png_image image;
  std::memset(&image, 0, sizeof(image));
  image.version = PNG_IMAGE_VERSION;
  image.width = cols;
  image.height = rows;
  image.format = channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
  return png_image_write_to_file(&image, path.c_str(), 0, pixels.data(), cols * channels, nullptr) != 0;
}

struct WriteError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
};
void write_fail(j_common_ptr info) { std::longjmp(reinterpret_cast<WriteError*>(info->err)->jump, 1); }

bool write_jpeg(const char* path, int rows, int cols, int channels, const unsigned char* pixels) {
  std::FILE* f = std::fopen(path, "wb");
  if (!f) return false;
  jpeg_compress_struct info;
  WriteError err;
  info.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = write_fail;
  if (setjmp(err.jump)) {
    jpeg_destroy_compress(&info);
    std::fclose(f);
    return false;
  }
  jpeg_create_compress(&info);
  jpeg_stdio_dest(&info, f);
  info.image_width = cols;
  info.image_height = rows;
  info.input_components = channels;
  info.in_color_space = channels == 3 ? JCS_RGB : JCS_GRAYSCALE;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, 100, TRUE);
  jpeg_start_compress(&info, TRUE);
  while (info.next_scanline < info.image_height) {
    JSAMPROW row = const_cast<unsigned char*>(pixels) + static_cast<size_t>(info.next_scanline) * cols * channels;
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  jpeg_destroy_compress(&info);
  std::fclose(f);
  return true;
}
#endif

TEST(DataframeImage, ReadPngAndJpegAgainstKnownPixels) {
  if (!decoders_built()) GTEST_SKIP() << "this build of NNC has no image decoders";
#ifndef NNC_TEST_IMAGE_WRITERS
  GTEST_SKIP() << "libpng / libjpeg not found for the test to write images";
#else
  // 1: a 7 x 5 RGB PNG (odd width: padded matrix rows), 2: a 4 x 3 grey PNG,
  // 3: a 16 x 16 solid-colour RGB JPEG, 4: a 16 x 24 grey gradient JPEG.
  std::vector<unsigned char> rgb(7 * 5 * 3), grey(4 * 3), solid(16 * 16 * 3), ramp(16 * 24);
  for (size_t i = 0; i < rgb.size(); i++) rgb[i] = static_cast<unsigned char>(i * 7 % 256);
  for (size_t i = 0; i < grey.size(); i++) grey[i] = static_cast<unsigned char>(20 * i);
  for (size_t i = 0; i < solid.size(); i += 3) solid[i] = 200, solid[i + 1] = 40, solid[i + 2] = 90;
  for (int y = 0; y < 16; y++)
    for (int x = 0; x < 24; x++) ramp[y * 24 + x] = static_cast<unsigned char>(40 + 6 * x);
  const std::string files[4] = {temp_path(".png"), temp_path(".png"), temp_path(".jpg"), temp_path(".jpg")};
  ASSERT_TRUE(write_png(files[0], 7, 5, 3, rgb));
  ASSERT_TRUE(write_png(files[1], 4, 3, 1, grey));
  ASSERT_TRUE(write_jpeg(files[2].c_str(), 16, 16, 3, solid.data()));
  ASSERT_TRUE(write_jpeg(files[3].c_str(), 16, 24, 1, ramp.data()));
  ccv_array_t* array = ccv_array_new(sizeof(Named), 4, 0);
  for (int i = 0; i < 4; i++) {
    Named n{};
    n.label = i;
    std::snprintf(n.filename, sizeof(n.filename), "%s", files[i].c_str());
    ccv_array_push(array, &n);
  }
  ccv_cnnp_dataframe_t* df = ccv_cnnp_dataframe_from_array_new(array);
  const int images = ccv_cnnp_dataframe_read_image(df, 0, offsetof(Named, filename), "image");
  ASSERT_GE(images, 0) << last_error();
  ccv_cnnp_dataframe_iter_t* it = ccv_cnnp_dataframe_iter_new(df, &images, 1);
  void* v;
  auto at = [](const ccv_dense_matrix_t* m, int y, int x, int c) { return m->data.u8[y * m->step + x * 3 + c]; };
  ASSERT_EQ(ccv_cnnp_dataframe_iter_next(it, &v, 1, nullptr), 0) << last_error();
  auto* m = static_cast<ccv_dense_matrix_t*>(v);
  ASSERT_EQ(m->rows, 7);
  ASSERT_EQ(m->cols, 5);
  EXPECT_EQ(m->type & (CCV_8U | CCV_C3), CCV_8U | CCV_C3);
  for (int y = 0; y < 7; y++)
    for (int x = 0; x < 5; x++)
      for (int c = 0; c < 3; c++) EXPECT_EQ(at(m, y, x, c), rgb[(y * 5 + x) * 3 + c]);
  ASSERT_EQ(ccv_cnnp_dataframe_iter_next(it, &v, 1, nullptr), 0) << last_error();
  m = static_cast<ccv_dense_matrix_t*>(v);
  ASSERT_EQ(m->rows, 4);
  ASSERT_EQ(m->cols, 3);
  for (int y = 0; y < 4; y++)
    for (int x = 0; x < 3; x++)
      for (int c = 0; c < 3; c++) EXPECT_EQ(at(m, y, x, c), grey[y * 3 + x]);  // grey expanded to RGB
  ASSERT_EQ(ccv_cnnp_dataframe_iter_next(it, &v, 1, nullptr), 0) << last_error();
  m = static_cast<ccv_dense_matrix_t*>(v);
  ASSERT_EQ(m->rows, 16);
  ASSERT_EQ(m->cols, 16);
  for (int y = 0; y < 16; y++)
    for (int x = 0; x < 16; x++) {
      EXPECT_NEAR(at(m, y, x, 0), 200, 3);
      EXPECT_NEAR(at(m, y, x, 1), 40, 3);
      EXPECT_NEAR(at(m, y, x, 2), 90, 3);
    }
  ASSERT_EQ(ccv_cnnp_dataframe_iter_next(it, &v, 1, nullptr), 0) << last_error();
  m = static_cast<ccv_dense_matrix_t*>(v);
  ASSERT_EQ(m->rows, 16);
  ASSERT_EQ(m->cols, 24);
  for (int y = 0; y < 16; y++)
    for (int x = 0; x < 24; x++)
      for (int c = 0; c < 3; c++) EXPECT_NEAR(at(m, y, x, c), 40 + 6 * x, 3);
  ccv_cnnp_dataframe_iter_free(it);
  ccv_cnnp_dataframe_free(df);
  ccv_array_free(array);
  for (const auto& f : files) std::remove(f.c_str());
#endif
}

TEST(DataframeImage, ReadImageErrors) {
  if (!decoders_built()) GTEST_SKIP() << "this build of NNC has no image decoders";
#ifndef NNC_TEST_IMAGE_WRITERS
  GTEST_SKIP() << "libpng / libjpeg not found for the test to write images";
#else
  const std::string missing = temp_path(".png"), text = temp_path(".png"), cut = temp_path(".jpg");
  std::FILE* f = std::fopen(text.c_str(), "wb");
  std::fputs("not an image at all", f);
  std::fclose(f);
  // A JPEG cut after its first 20 bytes (inside the headers).
  std::vector<unsigned char> solid(16 * 16 * 3, 128);
  ASSERT_TRUE(write_jpeg(cut.c_str(), 16, 16, 3, solid.data()));
  ASSERT_EQ(truncate(cut.c_str(), 20), 0);
  ccv_array_t* array = ccv_array_new(sizeof(Named), 3, 0);
  for (const std::string* name : {&missing, &text, &cut}) {
    Named n{};
    std::snprintf(n.filename, sizeof(n.filename), "%s", name->c_str());
    ccv_array_push(array, &n);
  }
  ccv_cnnp_dataframe_t* df = ccv_cnnp_dataframe_from_array_new(array);
  const int images = ccv_cnnp_dataframe_read_image(df, 0, offsetof(Named, filename), nullptr);
  ccv_cnnp_dataframe_iter_t* it = ccv_cnnp_dataframe_iter_new(df, &images, 1);
  void* v;
  const char* expect[3] = {"cannot open", "not a PNG or JPEG file", "JPEG: "};
  for (int r = 0; r < 3; r++) {
    ccv_cnnp_dataframe_iter_set_cursor(it, r);
    EXPECT_EQ(ccv_cnnp_dataframe_iter_next(it, &v, 1, nullptr), CCV_NNC_EXEC_INVALID);
    EXPECT_NE(last_error().find(expect[r]), std::string::npos) << last_error();
  }
  ccv_cnnp_dataframe_iter_free(it);
  ccv_cnnp_dataframe_free(df);
  ccv_array_free(array);
  std::remove(text.c_str());
  std::remove(cut.c_str());
#endif
}

}  // namespace
