// Tensors in SQLite: bit-exact round trips, views, hooks, refusals of bad
// input and of corrupt or foreign files, and checkpoints that survive SIGKILL.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/io.hpp"
#include "io_test_util.hpp"
#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

using namespace iotest;

namespace {

const int kDatatypes[] = {CCV_32F, CCV_64F, CCV_16F, CCV_16BF, CCV_32S, CCV_64S, CCV_8U};
const int kFormats[] = {CCV_TENSOR_FORMAT_NHWC, CCV_TENSOR_FORMAT_NCHW, CCV_TENSOR_FORMAT_CHWN};

std::string message() { return ccv_nnc_error_message(); }

bool same_bytes(const ccv_nnc_tensor_t* a, const ccv_nnc_tensor_t* b) {
  return std::memcmp(a->data.u8, b->data.u8, bytes_of(a->info)) == 0;
}

void expect_same_header(const ccv_nnc_tensor_t* a, const ccv_nnc_tensor_param_t& p) {
  EXPECT_EQ(a->info.format, p.format);
  EXPECT_EQ(a->info.datatype, p.datatype);
  EXPECT_EQ(CCV_TENSOR_GET_MEMORY(a->info.type), CCV_TENSOR_CPU_MEMORY);
  for (int i = 0; i < CCV_NNC_MAX_DIM_ALLOC; i++) {
    EXPECT_EQ(a->info.dim[i], p.dim[i]) << "dimension " << i;
    if (!p.dim[i]) break;
  }
}

struct Freer {
  void operator()(ccv_nnc_tensor_t* t) const { ccv_nnc_tensor_free(t); }
};
using Tensor = std::unique_ptr<ccv_nnc_tensor_t, Freer>;

Tensor read(sqlite3* db, const char* name, const ccv_nnc_tensor_io_option_t* options = nullptr, int flags = 0,
            const ccv_nnc_tensor_param_t* p = nullptr) {
  ccv_nnc_tensor_t* t = nullptr;
  const int rc = ccv_nnc_tensor_read(db, name, options, flags, p, &t);
  EXPECT_EQ(rc == CCV_IO_FINAL, t != nullptr);
  return Tensor(t);
}

// Read that must fail: the code, an untouched out-pointer and a message containing `needle`.
void expect_read_fails(sqlite3* db, const char* name, const std::string& needle,
                       const ccv_nnc_tensor_io_option_t* options = nullptr) {
  ccv_nnc_tensor_t* t = nullptr;
  EXPECT_EQ(ccv_nnc_tensor_read(db, name, options, 0, nullptr, &t), CCV_IO_ERROR);
  EXPECT_EQ(t, nullptr);
  EXPECT_NE(message().find(needle), std::string::npos) << "message: " << message();
}

TEST(TensorIo, RoundTripEveryDatatypeFormatAndRank) {
  TempPath file;
  Db db(file.str());
  std::mt19937_64 rng(1);
  const std::vector<std::vector<int>> shapes = {{7}, {3, 5},   {2, 3, 5, 7}, {1, 2, 1, 3, 1, 2, 1, 1, 2, 1, 1, 3},
                                                {1}, {4, 1, 9}};
  std::vector<Tensor> written;
  std::vector<std::string> names;
  for (int dt : kDatatypes)
    for (int fmt : kFormats)
      for (size_t s = 0; s < shapes.size(); s++) {
        const ccv_nnc_tensor_param_t p = params(dt, fmt, shapes[s]);
        Tensor t(random_tensor(p, rng));
        ASSERT_TRUE(t);
        char name[64];
        std::snprintf(name, sizeof(name), "t%d_%d_%zu", dt, fmt, s);
        ASSERT_EQ(ccv_nnc_tensor_write(t.get(), db, name, nullptr), CCV_IO_FINAL) << message();
        written.push_back(std::move(t));
        names.push_back(name);
      }
  // Read back after all writes, so that no entry overwrote another.
  for (size_t i = 0; i < names.size(); i++) {
    Tensor r = read(db, names[i].c_str());
    ASSERT_TRUE(r) << names[i] << ": " << message();
    expect_same_header(r.get(), written[i]->info);
    EXPECT_TRUE(same_bytes(r.get(), written[i].get())) << names[i];
  }
}

TEST(TensorIo, OverwriteReplacesTheEntry) {
  TempPath file;
  Db db(file.str());
  std::mt19937_64 rng(2);
  Tensor a(random_tensor(params(CCV_32F, CCV_TENSOR_FORMAT_NHWC, {3, 4}), rng));
  Tensor b(random_tensor(params(CCV_64S, CCV_TENSOR_FORMAT_NCHW, {5}), rng));
  ASSERT_EQ(ccv_nnc_tensor_write(a.get(), db, "x", nullptr), CCV_IO_FINAL);
  ASSERT_EQ(ccv_nnc_tensor_write(b.get(), db, "x", nullptr), CCV_IO_FINAL);
  Tensor r = read(db, "x");
  ASSERT_TRUE(r);
  expect_same_header(r.get(), b->info);
  EXPECT_TRUE(same_bytes(r.get(), b.get()));
}

// Element (i, j, k) of a 3-d tensor or view, through its strides.
template <class T>
T at3(const ccv_nnc_tensor_t* t, int i, int j, int k) {
  if (CCV_IS_TENSOR_VIEW(t)) {
    const auto* v = reinterpret_cast<const ccv_nnc_tensor_view_t*>(t);
    return reinterpret_cast<const T*>(t->data.u8)[i * v->stride[0] + j * v->stride[1] + k * v->stride[2]];
  }
  return reinterpret_cast<const T*>(t->data.u8)[(i * t->info.dim[1] + j) * t->info.dim[2] + k];
}

TEST(TensorIo, ViewsAreWrittenAsTheirPackedContents) {
  TempPath file;
  Db db(file.str());
  std::mt19937_64 rng(3);
  Tensor base(random_tensor(params(CCV_64F, CCV_TENSOR_FORMAT_NHWC, {6, 7, 9}), rng));
  // A window with the base's strides, and one that skips every other element innermost.
  const int ofs[CCV_NNC_MAX_DIM_ALLOC] = {1, 2, 3};
  const int skip[CCV_NNC_MAX_DIM_ALLOC] = {63, 9, 2};
  for (const int* stride : {static_cast<const int*>(nullptr), skip}) {
    const ccv_nnc_tensor_param_t vp = params(CCV_64F, CCV_TENSOR_FORMAT_NHWC, {3, 4, stride ? 3 : 5});
    ccv_nnc_tensor_view_t* view = ccv_nnc_tensor_view_new(base.get(), vp, ofs, stride);
    ASSERT_TRUE(view) << message();
    auto* tv = reinterpret_cast<ccv_nnc_tensor_t*>(view);
    ASSERT_EQ(ccv_nnc_tensor_write(tv, db, "v", nullptr), CCV_IO_FINAL) << message();
    Tensor r = read(db, "v");
    ASSERT_TRUE(r) << message();
    EXPECT_FALSE(CCV_IS_TENSOR_VIEW(r.get()));
    expect_same_header(r.get(), vp);
    for (int i = 0; i < vp.dim[0]; i++)
      for (int j = 0; j < vp.dim[1]; j++)
        for (int k = 0; k < vp.dim[2]; k++) {
          const double want = at3<double>(tv, i, j, k);
          const double got = at3<double>(r.get(), i, j, k);
          EXPECT_EQ(std::memcmp(&want, &got, sizeof(double)), 0) << i << "," << j << "," << k;
        }
    ccv_nnc_tensor_view_free(view);
  }
}

TEST(TensorIo, ReadIntoAGivenTensorOrView) {
  TempPath file;
  Db db(file.str());
  std::mt19937_64 rng(4);
  Tensor src(random_tensor(params(CCV_32S, CCV_TENSOR_FORMAT_NHWC, {3, 4, 5}), rng));
  ASSERT_EQ(ccv_nnc_tensor_write(src.get(), db, "s", nullptr), CCV_IO_FINAL);

  // A plain tensor of the same shape (another format: the bytes are the same).
  Tensor dst(ccv_nnc_tensor_new(nullptr, params(CCV_32S, CCV_TENSOR_FORMAT_NCHW, {3, 4, 5}), 0));
  ccv_nnc_tensor_t* out = dst.get();
  ASSERT_EQ(ccv_nnc_tensor_read(db, "s", nullptr, 0, nullptr, &out), CCV_IO_FINAL) << message();
  EXPECT_EQ(out, dst.get());
  EXPECT_TRUE(same_bytes(dst.get(), src.get()));
  EXPECT_EQ(dst->info.format, CCV_TENSOR_FORMAT_NCHW);

  // A strided view inside a larger tensor: the view's elements change, nothing else.
  Tensor big(ccv_nnc_tensor_new(nullptr, params(CCV_32S, CCV_TENSOR_FORMAT_NHWC, {5, 6, 11}), 0));
  for (int i = 0; i < 5 * 6 * 11; i++) big->data.i32[i] = -1 - i;
  const int ofs[CCV_NNC_MAX_DIM_ALLOC] = {1, 1, 0};
  const int stride[CCV_NNC_MAX_DIM_ALLOC] = {66, 11, 2};
  ccv_nnc_tensor_view_t* view =
      ccv_nnc_tensor_view_new(big.get(), params(CCV_32S, CCV_TENSOR_FORMAT_NHWC, {3, 4, 5}), ofs, stride);
  ASSERT_TRUE(view) << message();
  out = reinterpret_cast<ccv_nnc_tensor_t*>(view);
  ASSERT_EQ(ccv_nnc_tensor_read(db, "s", nullptr, 0, nullptr, &out), CCV_IO_FINAL) << message();
  std::vector<bool> covered(5 * 6 * 11, false);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++)
      for (int k = 0; k < 5; k++) {
        const int idx = (1 + i) * 66 + (1 + j) * 11 + 2 * k;
        covered[idx] = true;
        EXPECT_EQ(big->data.i32[idx], at3<int>(src.get(), i, j, k));
      }
  for (int i = 0; i < 5 * 6 * 11; i++)
    if (!covered[i]) {
      EXPECT_EQ(big->data.i32[i], -1 - i) << "element " << i << " outside the view changed";
    }
  ccv_nnc_tensor_view_free(view);
}

TEST(TensorIo, MismatchesAreRefusedAndLeaveTheTensorUntouched) {
  TempPath file;
  Db db(file.str());
  std::mt19937_64 rng(5);
  Tensor src(random_tensor(params(CCV_32F, CCV_TENSOR_FORMAT_NHWC, {4, 6}), rng));
  ASSERT_EQ(ccv_nnc_tensor_write(src.get(), db, "s", nullptr), CCV_IO_FINAL);

  struct Case {
    ccv_nnc_tensor_param_t p;
    const char* needle;
  };
  for (const Case& c : {Case{params(CCV_32F, CCV_TENSOR_FORMAT_NHWC, {6, 4}), "the tensor is 6x4, the stored one 4x6"},
                        Case{params(CCV_32F, CCV_TENSOR_FORMAT_NHWC, {4, 6, 1}), "4x6x1"},
                        Case{params(CCV_64F, CCV_TENSOR_FORMAT_NHWC, {4, 6}), "holds 64F, the stored one 32F"},
                        Case{params(CCV_16F, CCV_TENSOR_FORMAT_NHWC, {4, 6}), "16F"}}) {
    Tensor dst(ccv_nnc_tensor_new(nullptr, c.p, 0));
    std::memset(dst->data.u8, 0x5c, bytes_of(c.p));
    ccv_nnc_tensor_t* out = dst.get();
    EXPECT_EQ(ccv_nnc_tensor_read(db, "s", nullptr, 0, nullptr, &out), CCV_IO_ERROR);
    EXPECT_EQ(out, dst.get());
    EXPECT_NE(message().find(c.needle), std::string::npos) << message();
    for (size_t i = 0; i < bytes_of(c.p); i++) ASSERT_EQ(dst->data.u8[i], 0x5c);
  }
  // tensor_params that disagree with the stored tensor, for a new tensor.
  ccv_nnc_tensor_t* t = nullptr;
  ccv_nnc_tensor_param_t p = params(CCV_32F, CCV_TENSOR_FORMAT_NHWC, {4, 7});
  EXPECT_EQ(ccv_nnc_tensor_read(db, "s", nullptr, 0, &p, &t), CCV_IO_ERROR);
  EXPECT_EQ(t, nullptr);
  EXPECT_NE(message().find("asks for shape 4x7"), std::string::npos) << message();
  p = params(CCV_32S, CCV_TENSOR_FORMAT_NHWC, {});
  EXPECT_EQ(ccv_nnc_tensor_read(db, "s", nullptr, 0, &p, &t), CCV_IO_ERROR);
  EXPECT_NE(message().find("asks for data type 32S"), std::string::npos) << message();
  p = params(CCV_32F, CCV_TENSOR_FORMAT_CHWN, {4, 6});
  EXPECT_EQ(ccv_nnc_tensor_read(db, "s", nullptr, 0, &p, &t), CCV_IO_ERROR);
  EXPECT_NE(message().find("asks for format CHWN"), std::string::npos) << message();
  // Parameters that only say where it lives (CPU) are fine.
  ccv_nnc_tensor_param_t where{};
  where.type = CCV_TENSOR_CPU_MEMORY;
  Tensor r = read(db, "s", nullptr, 0, &where);
  ASSERT_TRUE(r) << message();
  EXPECT_TRUE(same_bytes(r.get(), src.get()));
}

TEST(TensorIo, GpuMemoryWithoutCudaIsRefused) {
  if (ccv_nnc_device_count(CCV_STREAM_CONTEXT_GPU) > 0)
    GTEST_SKIP() << "a GPU is present; the refusal is for CPU-only builds";
  TempPath file;
  Db db(file.str());
  std::mt19937_64 rng(6);
  Tensor src(random_tensor(params(CCV_32F, CCV_TENSOR_FORMAT_NHWC, {4}), rng));
  ASSERT_EQ(ccv_nnc_tensor_write(src.get(), db, "s", nullptr), CCV_IO_FINAL);
  ccv_nnc_tensor_param_t gpu{};
  gpu.type = CCV_TENSOR_GPU_MEMORY | CCV_COMPUTE_DEVICE_000;
  ccv_nnc_tensor_t* t = nullptr;
  EXPECT_EQ(ccv_nnc_tensor_read(db, "s", nullptr, 0, &gpu, &t), CCV_IO_ERROR);
  EXPECT_EQ(t, nullptr);
  EXPECT_NE(message().find("CUDA"), std::string::npos) << message();
}

int transfer(ccv_nnc_tensor_t* from, ccv_nnc_tensor_t* to) {
  const ccv_nnc_cmd_t cmd = ccv_nnc_cmd(CCV_NNC_DATA_TRANSFER_FORWARD, nullptr, ccv_nnc_cmd_auto, 0);
  return ccv_nnc_cmd_exec(cmd, ccv_nnc_no_hint, 0, &from, 1, &to, 1, nullptr);
}

TEST(TensorIo, GpuTensorsRoundTripWhenAGpuIsPresent) {
  if (ccv_nnc_device_count(CCV_STREAM_CONTEXT_GPU) <= 0)
    GTEST_SKIP() << "no GPU: GPU tensors are refused (tested above)";
  TempPath file;
  Db db(file.str());
  std::mt19937_64 rng(24);
  const ccv_nnc_tensor_param_t host = params(CCV_32F, CCV_TENSOR_FORMAT_NHWC, {17, 33});
  ccv_nnc_tensor_param_t gpu = host;
  gpu.type = CCV_TENSOR_GPU_MEMORY | CCV_COMPUTE_DEVICE_000;
  Tensor src(random_tensor(host, rng));
  Tensor dev(ccv_nnc_tensor_new(nullptr, gpu, 0));
  ASSERT_TRUE(dev) << message();
  ASSERT_EQ(transfer(src.get(), dev.get()), CCV_NNC_EXEC_SUCCESS) << message();
  ASSERT_EQ(ccv_nnc_tensor_write(dev.get(), db, "g", nullptr), CCV_IO_FINAL) << message();
  // Stored as GPU memory: read back where it was, or onto the host when asked.
  Tensor back = read(db, "g");
  ASSERT_TRUE(back) << message();
  EXPECT_EQ(CCV_TENSOR_GET_MEMORY(back->info.type), CCV_TENSOR_GPU_MEMORY);
  Tensor check(ccv_nnc_tensor_new(nullptr, host, 0));
  ASSERT_EQ(transfer(back.get(), check.get()), CCV_NNC_EXEC_SUCCESS) << message();
  EXPECT_TRUE(same_bytes(check.get(), src.get()));
  ccv_nnc_tensor_param_t where{};
  where.type = CCV_TENSOR_CPU_MEMORY;
  Tensor on_host = read(db, "g", nullptr, 0, &where);
  ASSERT_TRUE(on_host) << message();
  EXPECT_TRUE(same_bytes(on_host.get(), src.get()));
  // Into a given GPU tensor.
  Tensor dev2(ccv_nnc_tensor_new(nullptr, gpu, 0));
  ccv_nnc_tensor_t* out = dev2.get();
  ASSERT_EQ(ccv_nnc_tensor_read(db, "g", nullptr, 0, nullptr, &out), CCV_IO_FINAL) << message();
  ASSERT_EQ(transfer(dev2.get(), check.get()), CCV_NNC_EXEC_SUCCESS) << message();
  EXPECT_TRUE(same_bytes(check.get(), src.get()));
}

TEST(TensorIo, MetadataOnly) {
  TempPath file;
  Db db(file.str());
  std::mt19937_64 rng(7);
  const ccv_nnc_tensor_param_t p = params(CCV_16BF, CCV_TENSOR_FORMAT_CHWN, {2, 3, 4, 5});
  Tensor src(random_tensor(p, rng));
  ASSERT_EQ(ccv_nnc_tensor_write(src.get(), db, "s", nullptr), CCV_IO_FINAL);
  Tensor r = read(db, "s", nullptr, CCV_NNC_TENSOR_READ_METADATA_ONLY);
  ASSERT_TRUE(r) << message();
  expect_same_header(r.get(), p);
  EXPECT_EQ(r->data.u8, nullptr);
  // Into a given tensor it means nothing: refused.
  ccv_nnc_tensor_t* out = src.get();
  EXPECT_EQ(ccv_nnc_tensor_read(db, "s", nullptr, CCV_NNC_TENSOR_READ_METADATA_ONLY, nullptr, &out), CCV_IO_ERROR);
  EXPECT_NE(message().find("METADATA_ONLY"), std::string::npos) << message();
  // A header without data cannot be written.
  EXPECT_EQ(ccv_nnc_tensor_write(r.get(), db, "h", nullptr), CCV_IO_ERROR);
  EXPECT_NE(message().find("no data"), std::string::npos) << message();
}

// Hooks: XOR every byte with the context's key; identifier 0x5A.
struct XorContext {
  unsigned char key;
  int encodes = 0, decodes = 0;
  unsigned int seen_identifier = 0;
};
int xor_encode(const void* data, size_t data_size, int, const int*, int, void* context, void* encoded,
               size_t* encoded_size, ccv_nnc_tensor_param_t*, unsigned int* identifier) {
  auto* c = static_cast<XorContext*>(context);
  c->encodes++;
  for (size_t i = 0; i < data_size; i++)
    static_cast<unsigned char*>(encoded)[i] = static_cast<const unsigned char*>(data)[i] ^ c->key;
  *encoded_size = data_size;
  *identifier = 0x5A;
  return 1;
}
int xor_decode(const void* data, size_t data_size, int, const int*, int, unsigned int identifier, void* context,
               ccv_nnc_tensor_param_t, ccv_nnc_tensor_t** tensor_out, void* decoded, size_t* decoded_size) {
  auto* c = static_cast<XorContext*>(context);
  c->decodes++;
  c->seen_identifier = identifier;
  if (identifier != 0x5A || !*tensor_out || *decoded_size < data_size) return 0;
  for (size_t i = 0; i < data_size; i++)
    static_cast<unsigned char*>(decoded)[i] = static_cast<const unsigned char*>(data)[i] ^ c->key;
  *decoded_size = data_size;
  return 1;
}
// A compressor for constant tensors: one byte when every byte is equal, else declines.
int constant_encode(const void* data, size_t data_size, int, const int*, int, void*, void* encoded,
                    size_t* encoded_size, ccv_nnc_tensor_param_t*, unsigned int* identifier) {
  const auto* d = static_cast<const unsigned char*>(data);
  for (size_t i = 1; i < data_size; i++)
    if (d[i] != d[0]) return 0;
  static_cast<unsigned char*>(encoded)[0] = d[0];
  *encoded_size = 1;
  *identifier = 7;
  return 1;
}
int constant_decode(const void* data, size_t data_size, int, const int*, int, unsigned int identifier, void*,
                    ccv_nnc_tensor_param_t, ccv_nnc_tensor_t**, void* decoded, size_t* decoded_size) {
  if (identifier != 7 || data_size != 1) return 0;
  std::memset(decoded, static_cast<const unsigned char*>(data)[0], *decoded_size);
  return 1;
}

TEST(TensorIo, EncodeAndDecodeHooks) {
  TempPath file;
  Db db(file.str());
  std::mt19937_64 rng(8);
  const ccv_nnc_tensor_param_t p = params(CCV_32F, CCV_TENSOR_FORMAT_NHWC, {5, 7});
  Tensor src(random_tensor(p, rng));
  XorContext ctx{0xA5};
  ccv_nnc_tensor_io_option_t options{xor_decode, xor_encode, &ctx};
  ASSERT_EQ(ccv_nnc_tensor_write(src.get(), db, "x", &options), CCV_IO_FINAL) << message();
  EXPECT_EQ(ctx.encodes, 1);
  // On disk: the XORed bytes and the identifier.
  {
    sqlite3_stmt* s = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT identifier, data FROM tensors WHERE name = 'x'", -1, &s, nullptr),
              SQLITE_OK);
    ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int64(s, 0), 0x5A);
    ASSERT_EQ(static_cast<size_t>(sqlite3_column_bytes(s, 1)), bytes_of(p));
    const auto* blob = static_cast<const unsigned char*>(sqlite3_column_blob(s, 1));
    for (size_t i = 0; i < bytes_of(p); i++) ASSERT_EQ(blob[i], src->data.u8[i] ^ 0xA5);
    sqlite3_finalize(s);
  }
  Tensor r = read(db, "x", &options);
  ASSERT_TRUE(r) << message();
  EXPECT_EQ(ctx.decodes, 1);
  EXPECT_EQ(ctx.seen_identifier, 0x5Au);
  EXPECT_TRUE(same_bytes(r.get(), src.get()));
  // Into a given tensor too.
  Tensor dst(ccv_nnc_tensor_new(nullptr, p, 0));
  ccv_nnc_tensor_t* out = dst.get();
  ASSERT_EQ(ccv_nnc_tensor_read(db, "x", &options, 0, nullptr, &out), CCV_IO_FINAL) << message();
  EXPECT_TRUE(same_bytes(dst.get(), src.get()));
  // Without a decoder the raw bytes are XORed garbage of the right size: the
  // fall-back refuses rather than hands them out.
  expect_read_fails(db, "x", "no decode hook");

  // A hook that shrinks the data, and declines when it cannot.
  ccv_nnc_tensor_io_option_t constant{constant_decode, constant_encode, nullptr};
  Tensor flat(ccv_nnc_tensor_new(nullptr, params(CCV_64S, CCV_TENSOR_FORMAT_NHWC, {1000}), 0));
  std::memset(flat->data.u8, 0x3c, 8000);
  ASSERT_EQ(ccv_nnc_tensor_write(flat.get(), db, "flat", &constant), CCV_IO_FINAL) << message();
  ASSERT_EQ(ccv_nnc_tensor_write(src.get(), db, "declined", &constant), CCV_IO_FINAL) << message();
  {
    sqlite3_stmt* s = nullptr;
    ASSERT_EQ(
        sqlite3_prepare_v2(
            db, "SELECT name, identifier, length(data) FROM tensors WHERE name IN ('flat', 'declined') ORDER BY name",
            -1, &s, nullptr),
        SQLITE_OK);
    ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int64(s, 1), 0);  // declined: raw
    EXPECT_EQ(static_cast<size_t>(sqlite3_column_int64(s, 2)), bytes_of(p));
    ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int64(s, 1), 7);
    EXPECT_EQ(sqlite3_column_int64(s, 2), 1);
    sqlite3_finalize(s);
  }
  Tensor rflat = read(db, "flat", &constant);
  ASSERT_TRUE(rflat) << message();
  EXPECT_TRUE(same_bytes(rflat.get(), flat.get()));
  Tensor rdeclined = read(db, "declined", &constant);
  ASSERT_TRUE(rdeclined) << message();
  EXPECT_TRUE(same_bytes(rdeclined.get(), src.get()));
  // A decoder that does not know identifier 7 declines, and one byte is not a tensor.
  expect_read_fails(db, "flat", "declined identifier 7", &options);
}

int bad_identifier_encode(const void*, size_t, int, const int*, int, void*, void*, size_t* encoded_size,
                          ccv_nnc_tensor_param_t*, unsigned int* identifier) {
  *encoded_size = 1;
  *identifier = 0;
  return 1;
}
int oversize_encode(const void*, size_t data_size, int, const int*, int, void*, void*, size_t* encoded_size,
                    ccv_nnc_tensor_param_t*, unsigned int* identifier) {
  *encoded_size = data_size + 1;
  *identifier = 3;
  return 1;
}

TEST(TensorIo, MisbehavingEncodeHooksAreRefused) {
  TempPath file;
  Db db(file.str());
  std::mt19937_64 rng(9);
  Tensor src(random_tensor(params(CCV_8U, CCV_TENSOR_FORMAT_NHWC, {9}), rng));
  ccv_nnc_tensor_io_option_t zero{nullptr, bad_identifier_encode, nullptr};
  EXPECT_EQ(ccv_nnc_tensor_write(src.get(), db, "a", &zero), CCV_IO_ERROR);
  EXPECT_NE(message().find("identifier 0"), std::string::npos) << message();
  ccv_nnc_tensor_io_option_t big{nullptr, oversize_encode, nullptr};
  EXPECT_EQ(ccv_nnc_tensor_write(src.get(), db, "a", &big), CCV_IO_ERROR);
  EXPECT_NE(message().find("10 bytes in a buffer of 9"), std::string::npos) << message();
  EXPECT_FALSE(nnc::io::has_tensor(db, "a"));
}

TEST(TensorIo, NullsAndBadArguments) {
  TempPath file;
  Db db(file.str());
  std::mt19937_64 rng(10);
  Tensor src(random_tensor(params(CCV_32F, CCV_TENSOR_FORMAT_NHWC, {2}), rng));
  EXPECT_EQ(ccv_nnc_tensor_write(nullptr, db, "a", nullptr), CCV_IO_ERROR);
  EXPECT_NE(message().find("tensor is NULL"), std::string::npos) << message();
  EXPECT_EQ(ccv_nnc_tensor_write(src.get(), nullptr, "a", nullptr), CCV_IO_ERROR);
  EXPECT_NE(message().find("database handle is NULL"), std::string::npos) << message();
  EXPECT_EQ(ccv_nnc_tensor_write(src.get(), db, nullptr, nullptr), CCV_IO_ERROR);
  EXPECT_NE(message().find("name is NULL"), std::string::npos) << message();
  ccv_nnc_tensor_t* t = nullptr;
  EXPECT_EQ(ccv_nnc_tensor_read(nullptr, "a", nullptr, 0, nullptr, &t), CCV_IO_ERROR);
  EXPECT_NE(message().find("database handle is NULL"), std::string::npos) << message();
  EXPECT_EQ(ccv_nnc_tensor_read(db, nullptr, nullptr, 0, nullptr, &t), CCV_IO_ERROR);
  EXPECT_NE(message().find("name is NULL"), std::string::npos) << message();
  EXPECT_EQ(ccv_nnc_tensor_read(db, "a", nullptr, 0, nullptr, nullptr), CCV_IO_ERROR);
  EXPECT_NE(message().find("tensor_out is NULL"), std::string::npos) << message();
  EXPECT_EQ(t, nullptr);
  // An empty database, and a name that is not there.
  expect_read_fails(db, "a", "no NNC tensor table");
  ASSERT_EQ(ccv_nnc_tensor_write(src.get(), db, "a", nullptr), CCV_IO_FINAL);
  expect_read_fails(db, "b", "no tensor of that name");
  // A name with odd characters is just a key.
  const char* odd = "a'\"; DROP TABLE tensors; --\xc3\xa9";
  ASSERT_EQ(ccv_nnc_tensor_write(src.get(), db, odd, nullptr), CCV_IO_FINAL) << message();
  Tensor r = read(db, odd);
  ASSERT_TRUE(r) << message();
  EXPECT_TRUE(same_bytes(r.get(), src.get()));
  // A read-only handle reads but does not write.
  Db ro(file.str(), SQLITE_OPEN_READONLY);
  Tensor r2 = read(ro, "a");
  EXPECT_TRUE(r2) << message();
  EXPECT_EQ(ccv_nnc_tensor_write(src.get(), ro, "c", nullptr), CCV_IO_ERROR);
  EXPECT_NE(message().find("read-only"), std::string::npos) << message();
}

// Corrupt one row through SQL, then expect the read to fail with `needle`.
void corrupt_and_expect(const std::string& sql, const std::string& needle) {
  TempPath file;
  Db db(file.str());
  std::mt19937_64 rng(11);
  Tensor src(random_tensor(params(CCV_32F, CCV_TENSOR_FORMAT_NHWC, {16, 33}), rng));
  ASSERT_EQ(ccv_nnc_tensor_write(src.get(), db, "s", nullptr), CCV_IO_FINAL);
  ASSERT_EQ(db.exec(sql), SQLITE_OK) << sqlite3_errmsg(db);
  expect_read_fails(db, "s", needle);
  // Into a given tensor: refused too, and untouched.
  Tensor dst(ccv_nnc_tensor_new(nullptr, src->info, 0));
  std::memset(dst->data.u8, 0x77, bytes_of(src->info));
  ccv_nnc_tensor_t* out = dst.get();
  EXPECT_EQ(ccv_nnc_tensor_read(db, "s", nullptr, 0, nullptr, &out), CCV_IO_ERROR);
  for (size_t i = 0; i < bytes_of(src->info); i++) ASSERT_EQ(dst->data.u8[i], 0x77);
}

TEST(TensorIoCorrupt, FlippedByteInTheBlob) {
  // (SQL's || would turn the blob into text: the byte is set through a bound blob.)
  for (int bit : {0, 3, 7}) {
    TempPath file;
    Db db(file.str());
    std::mt19937_64 rng(11);
    Tensor src(random_tensor(params(CCV_32F, CCV_TENSOR_FORMAT_NHWC, {16, 33}), rng));
    ASSERT_EQ(ccv_nnc_tensor_write(src.get(), db, "s", nullptr), CCV_IO_FINAL);
    std::vector<unsigned char> bytes(src->data.u8, src->data.u8 + bytes_of(src->info));
    bytes[101 + bit * 200] ^= static_cast<unsigned char>(1 << bit);
    sqlite3_stmt* s = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "UPDATE tensors SET data = ?1", -1, &s, nullptr), SQLITE_OK);
    sqlite3_bind_blob(s, 1, bytes.data(), static_cast<int>(bytes.size()), SQLITE_STATIC);
    ASSERT_EQ(sqlite3_step(s), SQLITE_DONE);
    sqlite3_finalize(s);
    expect_read_fails(db, "s", "checksum mismatch");
  }
}
TEST(TensorIoCorrupt, TruncatedBlob) {
  corrupt_and_expect("UPDATE tensors SET data = substr(data, 1, 2000)", "truncated");
}
TEST(TensorIoCorrupt, MissingBlob) { corrupt_and_expect("UPDATE tensors SET data = NULL", "no data blob"); }
TEST(TensorIoCorrupt, WrongSchema) {
  corrupt_and_expect("UPDATE tensors SET schema = 2", "schema 2; this version of NNC reads schema 1");
}
TEST(TensorIoCorrupt, ChangedShapeOfTheSameSize) {
  // 33x16 holds as many bytes as 16x33: only the checksum tells.
  corrupt_and_expect("UPDATE tensors SET dims = X'2100000010000000'", "checksum mismatch");
}
TEST(TensorIoCorrupt, HugeShapeIsRefusedBeforeAllocating) {
  corrupt_and_expect("UPDATE tensors SET dims = X'ffffff7fffffff7fffffff7f'", "overflow");
  corrupt_and_expect("UPDATE tensors SET dims = X'00000040'", "needs 4294967296");
  corrupt_and_expect("UPDATE tensors SET dims = 'abcd'", "dims has the wrong type");
  corrupt_and_expect("UPDATE tensors SET dims = X'0000'", "shape field holds 2 bytes");
  corrupt_and_expect("UPDATE tensors SET dims = X'1000000001000000" + std::string(96, '0') + "'",
                     "shape field holds 56 bytes");
  corrupt_and_expect("UPDATE tensors SET dims = X'10000000fdffffff'", "dimension 1 is -3");
}
TEST(TensorIoCorrupt, BadHeaderFields) {
  corrupt_and_expect("UPDATE tensors SET datatype = 12345", "not supported");
  corrupt_and_expect("UPDATE tensors SET format = 9", "format 0x9");
  corrupt_and_expect("UPDATE tensors SET type = 0", "memory type");
  corrupt_and_expect("UPDATE tensors SET identifier = -1", "identifier -1 is out of range");
  corrupt_and_expect("UPDATE tensors SET datatype = 'x'", "wrong type");
  corrupt_and_expect("UPDATE tensors SET type = 1 + 4294967296", "out of range");
}

TEST(TensorIoCorrupt, ForeignDatabases) {
  {
    TempPath file;
    Db db(file.str());
    ASSERT_EQ(db.exec("CREATE TABLE tensors (name TEXT, value REAL); INSERT INTO tensors VALUES ('s', 1.5)"),
              SQLITE_OK);
    expect_read_fails(db, "s", "'tensors' table is not NNC's");
    std::mt19937_64 rng(12);
    Tensor src(random_tensor(params(CCV_32F, CCV_TENSOR_FORMAT_NHWC, {2}), rng));
    EXPECT_EQ(ccv_nnc_tensor_write(src.get(), db, "s", nullptr), CCV_IO_ERROR);
    EXPECT_NE(message().find("no column named"), std::string::npos) << message();
  }
  {
    TempPath file;
    Db db(file.str());
    ASSERT_EQ(db.exec("CREATE TABLE people (name TEXT); INSERT INTO people VALUES ('x')"), SQLITE_OK);
    expect_read_fails(db, "s", "no NNC tensor table");
  }
  {
    // libnnc-like columns (no schema number).
    TempPath file;
    Db db(file.str());
    ASSERT_EQ(db.exec("CREATE TABLE tensors (name TEXT, type INTEGER, format INTEGER, datatype INTEGER, dim BLOB, "
                      "data BLOB, PRIMARY KEY (name))"),
              SQLITE_OK);
    expect_read_fails(db, "s", "not NNC's");
  }
}

TEST(TensorIoCorrupt, NotAnSqliteFile) {
  TempPath file;
  {
    std::ofstream f(file.str(), std::ios::binary);
    std::mt19937_64 rng(13);
    for (int i = 0; i < 8192; i++) f.put(static_cast<char>(rng()));
  }
  Db db(file.str());
  ASSERT_TRUE(db.get());
  expect_read_fails(db, "s", "not a database");
  std::mt19937_64 rng(14);
  Tensor src(random_tensor(params(CCV_32F, CCV_TENSOR_FORMAT_NHWC, {2}), rng));
  EXPECT_EQ(ccv_nnc_tensor_write(src.get(), db, "s", nullptr), CCV_IO_ERROR);
  EXPECT_NE(message().find("not a database"), std::string::npos) << message();
  EXPECT_THROW(nnc::io::open_checkpoint(file.c_str(), false), nnc::Error);
}

std::vector<char> slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}
void spit(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Bytes flipped anywhere in the file, or the file cut short: every read
// either gives the exact tensor back (the damage missed it) or fails with a
// message. Never a crash, never wrong data.
TEST(TensorIoCorrupt, DamagedFileNeverGivesWrongData) {
  TempPath file;
  std::mt19937_64 rng(15);
  Tensor a(random_tensor(params(CCV_32F, CCV_TENSOR_FORMAT_NHWC, {40, 50}), rng));  // overflow pages
  Tensor b(random_tensor(params(CCV_8U, CCV_TENSOR_FORMAT_NHWC, {100}), rng));      // in a leaf page
  {
    Db db(file.str());
    ASSERT_EQ(ccv_nnc_tensor_write(a.get(), db, "a", nullptr), CCV_IO_FINAL);
    ASSERT_EQ(ccv_nnc_tensor_write(b.get(), db, "b", nullptr), CCV_IO_FINAL);
  }
  const std::vector<char> clean = slurp(file.str());
  ASSERT_GT(clean.size(), 8000u);
  int refused = 0, intact = 0;
  for (int trial = 0; trial < 300; trial++) {
    std::vector<char> bytes = clean;
    if (trial % 10 == 9) {
      bytes.resize(rng() % bytes.size());
    } else {
      const int flips = 1 + static_cast<int>(rng() % 3);
      for (int f = 0; f < flips; f++) bytes[rng() % bytes.size()] ^= static_cast<char>(1 + rng() % 255);
    }
    spit(file.str(), bytes);
    Db db(file.str(), SQLITE_OPEN_READONLY);
    if (!db.get()) {
      refused++;
      continue;
    }
    for (const Tensor* t : {&a, &b}) {
      const char* name = t == &a ? "a" : "b";
      ccv_nnc_tensor_t* r = nullptr;
      if (ccv_nnc_tensor_read(db, name, nullptr, 0, nullptr, &r) == CCV_IO_FINAL) {
        ASSERT_NE(r, nullptr);
        expect_same_header(r, (*t)->info);
        EXPECT_TRUE(same_bytes(r, t->get())) << "trial " << trial << ": wrong data for '" << name << "' was returned";
        ccv_nnc_tensor_free(r);
        intact++;
      } else {
        EXPECT_EQ(r, nullptr);
        EXPECT_FALSE(message().empty());
        refused++;
      }
    }
  }
  EXPECT_GT(refused, 0);
  EXPECT_GT(intact, 0);
}

TEST(TensorIo, TransactionsNestAndRollBack) {
  TempPath file;
  nnc::io::Database db = nnc::io::open_checkpoint(file.c_str());
  {
    // journal_mode=WAL and synchronous=FULL (2) as documented.
    Db check(file.str());
    sqlite3_stmt* s = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(check, "PRAGMA journal_mode", -1, &s, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
    EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)), "wal");
    sqlite3_finalize(s);
    ASSERT_EQ(sqlite3_prepare_v2(db.get(), "PRAGMA synchronous", -1, &s, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int(s, 0), 2);
    sqlite3_finalize(s);
  }
  std::mt19937_64 rng(16);
  Tensor a(random_tensor(params(CCV_32F, CCV_TENSOR_FORMAT_NHWC, {3}), rng));
  Tensor b(random_tensor(params(CCV_32F, CCV_TENSOR_FORMAT_NHWC, {3}), rng));
  {
    nnc::io::Transaction tx(db.get());
    nnc::io::write_tensor(db.get(), "a", a.get(), nullptr);
    ASSERT_EQ(ccv_nnc_tensor_write(b.get(), db.get(), "b", nullptr), CCV_IO_FINAL);
    EXPECT_TRUE(nnc::io::has_tensor(db.get(), "b"));
  }  // no commit: both gone
  EXPECT_FALSE(nnc::io::has_tensor(db.get(), "a"));
  EXPECT_FALSE(nnc::io::has_tensor(db.get(), "b"));
  {
    nnc::io::Transaction tx(db.get(), "outer");
    nnc::io::write_tensor(db.get(), "a", a.get(), nullptr);
    {
      nnc::io::Transaction inner(db.get(), "inner");
      nnc::io::write_tensor(db.get(), "b", b.get(), nullptr);
    }  // the inner one rolls back alone
    tx.commit();
  }
  EXPECT_TRUE(nnc::io::has_tensor(db.get(), "a"));
  EXPECT_FALSE(nnc::io::has_tensor(db.get(), "b"));
  // Inside a caller's own BEGIN ... ROLLBACK.
  ASSERT_EQ(sqlite3_exec(db.get(), "BEGIN", nullptr, nullptr, nullptr), SQLITE_OK);
  ASSERT_EQ(ccv_nnc_tensor_write(b.get(), db.get(), "b", nullptr), CCV_IO_FINAL);
  ASSERT_EQ(sqlite3_exec(db.get(), "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_FALSE(nnc::io::has_tensor(db.get(), "b"));
  // read_tensor_into through the C++ interface.
  Tensor dst(ccv_nnc_tensor_new(nullptr, a->info, 0));
  nnc::io::read_tensor_into(db.get(), "a", dst.get(), nullptr);
  EXPECT_TRUE(same_bytes(dst.get(), a.get()));
  EXPECT_THROW(nnc::io::read_tensor_into(db.get(), "b", dst.get(), nullptr), nnc::Error);
}

// ---- A writer killed with SIGKILL at random moments ----

constexpr int kCheckpoints = 100;
constexpr int kWeights = 4;
const char* const kWeightNames[kWeights] = {"w0", "w1", "w2", "w3"};

ccv_nnc_tensor_param_t weight_params(int k) {
  // Sizes that span several pages, one of them odd.
  static const int sizes[kWeights] = {20000, 7001, 16384, 333};
  return params(k % 2 ? CCV_32S : CCV_32F, CCV_TENSOR_FORMAT_NHWC, {sizes[k]});
}
// The content of weight k at a step: every element depends on both.
uint32_t weight_word(int step, int k, int i) {
  return static_cast<uint32_t>(step) * 2654435761u ^ static_cast<uint32_t>(k * 40503 + i);
}

// The child: resume after the last checkpoint in the file, write the rest,
// report each step on the pipe: -step when its transaction begins, step once
// it is committed.
[[noreturn]] void checkpoint_writer(const char* path, int report_fd) {
  try {
    nnc::io::Database db = nnc::io::open_checkpoint(path);
    int64_t step = 0;
    if (nnc::io::has_tensor(db.get(), "step")) {
      ccv_nnc_tensor_t* s = nnc::io::read_tensor(db.get(), "step", nullptr, 0, nullptr);
      step = s->data.i64[0];
      ccv_nnc_tensor_free(s);
    }
    std::vector<ccv_nnc_tensor_t*> w;
    for (int k = 0; k < kWeights; k++) w.push_back(ccv_nnc_tensor_new(nullptr, weight_params(k), 0));
    ccv_nnc_tensor_t* s = ccv_nnc_tensor_new(nullptr, params(CCV_64S, CCV_TENSOR_FORMAT_NHWC, {1}), 0);
    for (step = step + 1; step <= kCheckpoints; step++) {
      for (int k = 0; k < kWeights; k++)
        for (int i = 0; i < w[k]->info.dim[0]; i++)
          reinterpret_cast<uint32_t*>(w[k]->data.i32)[i] = weight_word(static_cast<int>(step), k, i);
      s->data.i64[0] = step;
      nnc::io::Transaction tx(db.get(), "checkpoint");
      const int32_t begun = -static_cast<int32_t>(step);
      if (write(report_fd, &begun, sizeof(begun)) != sizeof(begun)) _exit(3);
      // A pause after each tensor widens the window in which a kill finds the
      // checkpoint half written (as a writer of large tensors would).
      for (int k = 0; k < kWeights; k++) {
        nnc::io::write_tensor(db.get(), kWeightNames[k], w[k], nullptr);
        usleep(300);
      }
      nnc::io::write_tensor(db.get(), "step", s, nullptr);
      tx.commit();
      const int32_t done = static_cast<int32_t>(step);
      if (write(report_fd, &done, sizeof(done)) != sizeof(done)) _exit(3);
    }
    _exit(0);
  } catch (...) {
    _exit(2);
  }
}

// The checkpoint in the file: its step (0 for none), every tensor checked against it.
int verify_checkpoint(const char* path) {
  nnc::io::Database db = nnc::io::open_checkpoint(path);
  if (!nnc::io::has_tensor(db.get(), "step")) {
    for (int k = 0; k < kWeights; k++) EXPECT_FALSE(nnc::io::has_tensor(db.get(), kWeightNames[k]));
    return 0;
  }
  Tensor s(nnc::io::read_tensor(db.get(), "step", nullptr, 0, nullptr));
  const int step = static_cast<int>(s->data.i64[0]);
  for (int k = 0; k < kWeights; k++) {
    Tensor w(nnc::io::read_tensor(db.get(), kWeightNames[k], nullptr, 0, nullptr));
    int wrong = 0;
    for (int i = 0; i < w->info.dim[0]; i++)
      wrong += reinterpret_cast<const uint32_t*>(w->data.i32)[i] != weight_word(step, k, i);
    EXPECT_EQ(wrong, 0) << "weight " << k << " is not from step " << step;
  }
  return step;
}

TEST(TensorIoKill, SigkillLeavesTheLastCompleteCheckpoint) {
  TempPath file;
  std::mt19937 rng(17);
  int file_step = 0, kills = 0, rolled_back = 0;
  while (file_step < kCheckpoints) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      checkpoint_writer(file.c_str(), fds[1]);
    }
    close(fds[1]);
    // Let it commit 0 to 4 checkpoints, then kill it within 1.5 ms: mostly inside
    // the next one (its tensors take that long), sometimes before it starts.
    const int wait_for = static_cast<int>(rng() % 5);
    int reported = file_step, begun = file_step;
    int32_t done = 0;
    auto note = [&] {
      if (done < 0)
        begun = -done;
      else
        reported = done;
    };
    for (int i = 0; i < wait_for && ::read(fds[0], &done, sizeof(done)) == sizeof(done);) {
      note();
      if (done > 0) i++;
    }
    usleep(rng() % 1500);
    kill(pid, SIGKILL);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status))
      kills++;
    else
      ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the writer failed on its own: " << status;
    while (::read(fds[0], &done, sizeof(done)) == sizeof(done)) note();
    close(fds[0]);
    const int step = verify_checkpoint(file.c_str());
    if (HasFailure()) return;
    // Everything reported is there; at most one more committed whose report the kill cut off.
    ASSERT_GE(step, reported);
    ASSERT_LE(step, reported + 1);
    ASSERT_GE(step, file_step);
    // Killed inside a checkpoint's transaction, and the file kept the one before.
    if (begun > reported && step == reported) rolled_back++;
    file_step = step;
  }
  EXPECT_EQ(file_step, kCheckpoints);
  EXPECT_GE(kills, 10);
  EXPECT_GE(rolled_back, 5);
  std::printf(
      "[ kill test ] %d writers killed over %d checkpoints, %d of them inside a checkpoint that was rolled back\n",
      kills, kCheckpoints, rolled_back);
}

}  // namespace
