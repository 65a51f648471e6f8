// The channels-inner (NHWC) batch-norm loops both ISA headers declare
// (norm_avx2.hpp, norm_avx512.hpp), included by each *inside its own
// namespace*; norm_body.hpp defines them. Rows of K floats, packed; K a
// multiple of the ISA's vector width.

// y[r, j] = (x[r, j] - c[j]) * a[j] + b[j] for r < rows, j < K, with
// non-temporal stores (stream_ok(y, K)).
void col_affine_stream(const float* x, float* y, size_t rows, size_t K, const float* c, const float* a, const float* b);

// dx[r, j] = a[j] g[r, j] + b[j] (x[r, j] - m[j]) + c[j], streamed the same.
void col_axpbypc_stream(const float* g, const float* x, float* dx, size_t rows, size_t K, const float* m,
                        const float* a, const float* b, const float* c);

// Sums with the accumulators in registers over all the rows (K at most the
// ISA's kSumsMaxK): acc[j] += (x - c[j])^2 and dev[j] += x - c[j] over the
// rows (col_sqdev), or sg[j] += g and sgx[j] += g (x - c[j]) (col_dot2).
void col_sqdev_regs(const float* x, size_t rows, size_t K, const float* c, float* acc, float* dev);
void col_dot2_regs(const float* g, const float* x, size_t rows, size_t K, const float* c, float* sg, float* sgx);
