// Image columns: read_image (a file name in a column's value -> an 8-bit RGB
// ccv_dense_matrix_t) and image_random_jitter (resize, aspect ratio, crop,
// flip, brightness / contrast / saturation, PCA lighting, normalisation ->
// a 32-bit float RGB matrix, which is also a 3-d NHWC tensor).
//
// The jitter samples each output pixel once, bilinearly, from the input:
// resize, crop and flip are one change of coordinates, so no intermediate
// image is made.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "cnnp/dataframe.hpp"
#include "core/error.hpp"
#include "core/splitmix.hpp"

namespace nnc::dataframe {

namespace {

Column derived(ccv_cnnp_column_data_map_f map, int input, const char* name) {
  Column c;
  c.map = map;
  c.inputs = {input};
  c.has_name = name != nullptr;
  if (name) c.name = name;
  return c;
}

void free_matrix(void* data, void*) { ccv_matrix_free(data); }

struct ReadContext {
  off_t structof;
};
void read_image_map(void* const* const* column_data, int, int batch_size, void** data, void* context,
                    ccv_nnc_stream_context_t*) {
  const off_t structof = static_cast<ReadContext*>(context)->structof;
  for (int i = 0; i < batch_size; i++) {
    const char* value = static_cast<const char*>(column_data[0][i]);
    NNC_CHECK(value, "ccv_cnnp_dataframe_read_image: a row's value is NULL");
    decode_image(value + structof, data[i]);
  }
}

// The jitter's generator (splitmix64), one per column, advanced row by row
// under the dataframe's compute mutex: a fixed seed gives the same sequence
// of jitters for the same sequence of rows.
struct Rng : SplitMix64 {
  double unit() { return uniform(); }  // [0, 1)
  double between(double a, double b) { return a + (b - a) * unit(); }
  // A factor in [1 / (1 + r), 1 + r], uniform in log scale (as likely to
  // halve as to double).
  double factor(double r) { return r > 0 ? std::exp(between(-std::log1p(r), std::log1p(r))) : 1.0; }
  double normal() {  // Box-Muller
    const double u = 1.0 - unit(), v = unit();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * CCV_PI * v);
  }
};

struct JitterContext {
  ccv_cnnp_random_jitter_t jitter;
  Rng rng;
};

// AlexNet's PCA lighting: the eigenvalues and eigenvectors of the RGB
// covariance of ImageNet's pixels (on a 0..1 scale), as published with
// fb.resnet.torch and used widely since.
constexpr double kEigenValue[3] = {0.2175, 0.0188, 0.0045};
constexpr double kEigenVector[3][3] = {
    {-0.5675, 0.7192, 0.4009},
    {-0.5808, -0.0045, -0.8140},
    {-0.5836, -0.6948, 0.4203},
};

double pixel(const ccv_dense_matrix_t* in, int y, int x, int c) {
  const int channels = CCV_GET_CHANNEL(in->type);
  const int k = channels == 1 ? 0 : c;
  if (CCV_GET_DATA_TYPE(in->type) == CCV_8U)
    return in->data.u8[static_cast<size_t>(y) * in->step + static_cast<size_t>(x) * channels + k];
  const auto* row = reinterpret_cast<const float*>(in->data.u8 + static_cast<size_t>(y) * in->step);
  return row[static_cast<size_t>(x) * channels + k];
}

void jitter_map(void* const* const* column_data, int, int batch_size, void** data, void* context,
                ccv_nnc_stream_context_t*) {
  auto* ctx = static_cast<JitterContext*>(context);
  const ccv_cnnp_random_jitter_t& j = ctx->jitter;
  const char* what = "ccv_cnnp_dataframe_image_random_jitter";
  for (int i = 0; i < batch_size; i++) {
    const auto* in = static_cast<const ccv_dense_matrix_t*>(column_data[0][i]);
    NNC_CHECK(in, "%s: a row's image is NULL", what);
    NNC_CHECK(CCV_TENSOR_IS_DENSE_MATRIX(in->type) &&
                  (CCV_GET_DATA_TYPE(in->type) == CCV_8U || CCV_GET_DATA_TYPE(in->type) == CCV_32F) &&
                  (CCV_GET_CHANNEL(in->type) == 1 || CCV_GET_CHANNEL(in->type) == 3),
              "%s: the image is not an 8U or 32F dense matrix of 1 or 3 channels", what);
    const int rows0 = in->rows, cols0 = in->cols;
    NNC_CHECK(rows0 > 0 && cols0 > 0, "%s: the image is empty", what);
    Rng& rng = ctx->rng;
    // Resized size: the shorter side to a draw in [min, max], then the
    // aspect ratio stretched, then rounded up to a multiple of roundup.
    double sy = 1, sx = 1;
    if (j.resize.min > 0) {
      const double side = rng.between(j.resize.min, std::max(j.resize.min, j.resize.max));
      sy = sx = side / std::min(rows0, cols0);
    }
    if (j.aspect_ratio > 0) {
      const double ar = std::sqrt(rng.factor(j.aspect_ratio));
      sx *= ar;
      sy /= ar;
    }
    int rrows = std::max(1, static_cast<int>(std::lround(rows0 * sy)));
    int rcols = std::max(1, static_cast<int>(std::lround(cols0 * sx)));
    if (j.resize.roundup > 1) {
      rrows = (rrows + j.resize.roundup - 1) / j.resize.roundup * j.resize.roundup;
      rcols = (rcols + j.resize.roundup - 1) / j.resize.roundup * j.resize.roundup;
    }
    const int rows = j.size.rows > 0 ? j.size.rows : rrows;
    const int cols = j.size.cols > 0 ? j.size.cols : rcols;
    NNC_CHECK(static_cast<int64_t>(rows) * cols <= (int64_t{1} << 28), "%s: a %dx%d output is too large", what, rows,
              cols);
    // Crop origin in the resized image (negative: the output is larger and
    // the outside is zero).
    int oy, ox;
    if (j.center_crop || rrows < rows) {
      oy = (rrows - rows) / 2;
    } else {
      oy = static_cast<int>(rng.unit() * (rrows - rows + 1));
    }
    if (j.center_crop || rcols < cols) {
      ox = (rcols - cols) / 2;
    } else {
      ox = static_cast<int>(rng.unit() * (rcols - cols + 1));
    }
    if (j.offset.y > 0) oy += static_cast<int>(std::lround(rng.between(-j.offset.y, j.offset.y)));
    if (j.offset.x > 0) ox += static_cast<int>(std::lround(rng.between(-j.offset.x, j.offset.x)));
    const bool flip = j.symmetric && rng.unit() < 0.5;
    const double brightness = rng.factor(j.brightness);
    const double contrast = rng.factor(j.contrast);
    const double saturation = rng.factor(j.saturation);
    double shift[3] = {0, 0, 0};
    if (j.lighting > 0) {
      const double scale = CCV_GET_DATA_TYPE(in->type) == CCV_8U ? 255.0 : 1.0;
      double alpha[3];
      for (double& a : alpha) a = rng.normal() * j.lighting;
      for (int c = 0; c < 3; c++)
        for (int k = 0; k < 3; k++) shift[c] += kEigenVector[c][k] * alpha[k] * kEigenValue[k] * scale;
    }

    // The output slot: reused when its shape matches.
    auto* out = static_cast<ccv_dense_matrix_t*>(data[i]);
    if (!out || out->rows != rows || out->cols != cols || CCV_GET_DATA_TYPE(out->type) != CCV_32F ||
        CCV_GET_CHANNEL(out->type) != 3) {
      if (out) ccv_matrix_free(out);
      data[i] = nullptr;
      out = ccv_dense_matrix_new(rows, cols, CCV_32F | CCV_C3, nullptr, 0);
      if (!out) fail(CCV_NNC_EXEC_OOM, "%s: cannot allocate a %dx%d image", what, rows, cols);
      count_allocation();
      data[i] = out;
    }
    float* const o = out->data.f32;
    const double ry_scale = static_cast<double>(rows0) / rrows, rx_scale = static_cast<double>(cols0) / rcols;
    for (int y = 0; y < rows; y++) {
      const int ry = oy + y;
      for (int x = 0; x < cols; x++) {
        const int rx = ox + (flip ? cols - 1 - x : x);
        float* const p = o + (static_cast<size_t>(y) * cols + x) * 3;
        if (ry < 0 || ry >= rrows || rx < 0 || rx >= rcols) {
          p[0] = p[1] = p[2] = 0;
          continue;
        }
        // Pixel centres map to pixel centres; edges clamp.
        const double fy = std::clamp((ry + 0.5) * ry_scale - 0.5, 0.0, rows0 - 1.0);
        const double fx = std::clamp((rx + 0.5) * rx_scale - 0.5, 0.0, cols0 - 1.0);
        const int y0 = static_cast<int>(fy), x0 = static_cast<int>(fx);
        const int y1 = std::min(y0 + 1, rows0 - 1), x1 = std::min(x0 + 1, cols0 - 1);
        const double wy = fy - y0, wx = fx - x0;
        for (int c = 0; c < 3; c++) {
          const double top = pixel(in, y0, x0, c) * (1 - wx) + (wx > 0 ? pixel(in, y0, x1, c) * wx : 0);
          const double bottom =
              wy > 0 ? pixel(in, y1, x0, c) * (1 - wx) + (wx > 0 ? pixel(in, y1, x1, c) * wx : 0) : 0;
          p[c] = static_cast<float>(top * (1 - wy) + bottom * wy);
        }
      }
    }
    // Colour, on the cropped pixels: brightness scales, contrast pulls
    // towards the image's mean grey, saturation towards each pixel's grey.
    const size_t n = static_cast<size_t>(rows) * cols;
    if (brightness != 1.0)
      for (size_t k = 0; k < n * 3; k++) o[k] = static_cast<float>(o[k] * brightness);
    if (contrast != 1.0) {
      double mean = 0;
      for (size_t k = 0; k < n; k++) mean += 0.299 * o[3 * k] + 0.587 * o[3 * k + 1] + 0.114 * o[3 * k + 2];
      mean /= static_cast<double>(n);
      for (size_t k = 0; k < n * 3; k++) o[k] = static_cast<float>((o[k] - mean) * contrast + mean);
    }
    if (saturation != 1.0)
      for (size_t k = 0; k < n; k++) {
        float* const p = o + 3 * k;
        const double grey = 0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2];
        for (int c = 0; c < 3; c++) p[c] = static_cast<float>((p[c] - grey) * saturation + grey);
      }
    double mean[3], inv_std[3];
    for (int c = 0; c < 3; c++) {
      mean[c] = j.normalize.mean[c] - shift[c];
      inv_std[c] = j.normalize.std[c] != 0 ? 1.0 / j.normalize.std[c] : 1.0;
    }
    for (size_t k = 0; k < n; k++)
      for (int c = 0; c < 3; c++) o[3 * k + c] = static_cast<float>((o[3 * k + c] - mean[c]) * inv_std[c]);
  }
}

}  // namespace

int read_image(Dataframe* df, int column_idx, off_t structof, const char* name) {
  check_column(df, column_idx, "ccv_cnnp_dataframe_read_image");
  NNC_CHECK(structof >= 0, "ccv_cnnp_dataframe_read_image: negative structof");
  NNC_CHECK(image_decoders_available(),
            "ccv_cnnp_dataframe_read_image: this build of NNC has no image decoders (libpng / libjpeg not linked)");
  Column c = derived(read_image_map, column_idx, name);
  c.data_deinit = free_matrix;
  auto ctx = std::make_unique<ReadContext>(ReadContext{structof});
  c.context = ctx.get();
  c.context_deinit = [](void* p) { std::unique_ptr<ReadContext>(static_cast<ReadContext*>(p)); };
  const int idx = add_column(df, std::move(c));
  ctx.release();
  return idx;
}

int image_random_jitter(Dataframe* df, int column_idx, int datatype, const ccv_cnnp_random_jitter_t& jitter,
                        const char* name) {
  const char* what = "ccv_cnnp_dataframe_image_random_jitter";
  check_column(df, column_idx, what);
  NNC_CHECK(datatype == CCV_32F, "%s: only CCV_32F output is supported", what);
  NNC_CHECK(jitter.contrast >= 0 && jitter.saturation >= 0 && jitter.brightness >= 0 && jitter.lighting >= 0 &&
                jitter.aspect_ratio >= 0,
            "%s: negative jitter amounts", what);
  NNC_CHECK(jitter.resize.min >= 0 && jitter.resize.max >= 0 && jitter.resize.roundup >= 0, "%s: negative resize",
            what);
  NNC_CHECK(jitter.size.rows >= 0 && jitter.size.cols >= 0 && jitter.offset.x >= 0 && jitter.offset.y >= 0,
            "%s: negative size or offset", what);
  Column c = derived(jitter_map, column_idx, name);
  c.data_deinit = free_matrix;
  auto ctx = std::make_unique<JitterContext>();
  ctx->jitter = jitter;
  ctx->rng.state = static_cast<uint64_t>(static_cast<uint32_t>(jitter.seed)) * 0x9e3779b97f4a7c15ull + 0x6a09e667ull;
  c.context = ctx.get();
  c.context_deinit = [](void* p) { std::unique_ptr<JitterContext>(static_cast<JitterContext*>(p)); };
  const int idx = add_column(df, std::move(c));
  ctx.release();
  return idx;
}

}  // namespace nnc::dataframe
