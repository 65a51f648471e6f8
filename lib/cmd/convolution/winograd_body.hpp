// The Winograd runs of winograd.hpp, written once against a vector traits
// type Simd and included by each instruction set's file (winograd_avx2.cpp,
// winograd_avx512.cpp) inside an anonymous namespace in nnc::conv, after it
// includes <immintrin.h>, <algorithm>, <atomic>, <new>, cmd/blas/sgemm.hpp
// and core/parallel.hpp and defines Simd (not V: V names the input tiles):
//
//   R, N                  the register type and its lanes (floats)
//   Mask, mask(valid)     the lanes [0, valid) of a vector, valid >= 1
//   load(mask, p), store(p, mask, v)   those lanes only: a load zeroes the
//                         rest, and neither touches memory past them
//   loadu(p), storeu(p, v)             a whole vector, unaligned
//   load_aligned(mask, p)              load, with p aligned to a whole vector
//   zero(), set1, add, sub, fmadd(a, b, c) = a·b + c, fmsub = a·b - c,
//   fnmadd = c - a·b
//   sgemm_pack, sgemm_packed, sgemm_serial   that set's GEMMs of sgemm.hpp
//
// It defines scratch_floats, forward, gradient_scratch_floats and gradient,
// which each file exports under its own names. Prefetches step one 64-byte
// line (16 floats) whatever the vector width.
//
// With d a 6 x 6 input patch, g an R x R filter and ⊙ the element-wise product,
//   Y (m x m) = Aᵀ [ (G g Gᵀ) ⊙ (Bᵀ d B) ] A.
// The matrices below come from the Toom-Cook construction on the points
// 0, 1, -1, 2, -2, ∞ (correlation as the transposed polynomial product):
// Bᵀ = (V₆⁻¹)ᵀ, G = V_R, Aᵀ = V_mᵀ, with V_n the 6 x n evaluation matrix
// (rows [1, a, a², ...] and [0, ..., 0, 1] at infinity), each row of Bᵀ
// scaled to small integers and G's row scaled inversely. Bᵀ is the same for
// both tile sizes.
//
// Every vector holds Simd::N channels (NHWC keeps them adjacent). Threads take
// blocks of TB tiles: transform the block's inputs into V[36][TB][C], run 36
// products M[ξν] = V[ξν] · U[ξν] (TB x C times C x K, U the transformed
// weights packed once for Simd::sgemm_packed), and transform M back into the
// output; V and M stay in the thread's L2.

constexpr int kAlpha = 6;
constexpr int kLanes = Simd::N;

template <int R>
struct Filter;  // G: 6 x R
template <>
struct Filter<3> {
  static constexpr int m = 4;
  static constexpr float G[6][3] = {{1.f / 4, 0, 0},
                                    {1.f / 6, 1.f / 6, 1.f / 6},
                                    {1.f / 6, -1.f / 6, 1.f / 6},
                                    {1.f / 24, 1.f / 12, 1.f / 6},
                                    {1.f / 24, -1.f / 12, 1.f / 6},
                                    {0, 0, 1}};
  static constexpr float AT[4][6] = {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}};
};
template <>
struct Filter<5> {
  static constexpr int m = 2;
  static constexpr float G[6][5] = {{1.f / 4, 0, 0, 0, 0},
                                    {1.f / 6, 1.f / 6, 1.f / 6, 1.f / 6, 1.f / 6},
                                    {1.f / 6, -1.f / 6, 1.f / 6, -1.f / 6, 1.f / 6},
                                    {1.f / 24, 1.f / 12, 1.f / 6, 1.f / 3, 2.f / 3},
                                    {1.f / 24, -1.f / 12, 1.f / 6, -1.f / 3, 2.f / 3},
                                    {0, 0, 0, 0, 1}};
  static constexpr float AT[2][6] = {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 1}};
};

// v = Bᵀ d for six vectors, Bᵀ =
//   [4  0 -5  0  1  0]
//   [0  4  4 -1 -1  0]
//   [0 -4  4  1 -1  0]
//   [0 -2 -1  2  1  0]
//   [0  2 -1 -2  1  0]
//   [0  4  0 -5  0  1]
inline void bt6(const Simd::R d[6], Simd::R v[6]) {
  const Simd::R four = Simd::set1(4.f), five = Simd::set1(-5.f), two = Simd::set1(2.f);
  v[0] = Simd::fmadd(four, d[0], Simd::fmadd(five, d[2], d[4]));
  const Simd::R s12 = Simd::add(d[1], d[2]), s34 = Simd::add(d[3], d[4]);
  v[1] = Simd::fmsub(four, s12, s34);
  const Simd::R d21 = Simd::sub(d[2], d[1]), d34 = Simd::sub(d[3], d[4]);
  v[2] = Simd::fmadd(four, d21, d34);
  const Simd::R d31 = Simd::sub(d[3], d[1]), d42 = Simd::sub(d[4], d[2]);
  v[3] = Simd::fmadd(two, d31, d42);
  v[4] = Simd::fnmadd(two, d31, d42);
  v[5] = Simd::fmadd(four, d[1], Simd::fmadd(five, d[3], d[5]));
}

// out = G · in · Gᵀ for a constant ROWS x N matrix G (its zeros skipped), on
// vectors: the weights' G g Gᵀ, the outputs' Aᵀ M A, the gradient tiles'
// G' g G'ᵀ and dw's A'ᵀ D A'.
template <int ROWS, int N>
[[gnu::always_inline]] inline void sandwich(const float (&G)[ROWS][N], const Simd::R (&in)[N][N],
                                            Simd::R (&out)[ROWS][ROWS]) {
  Simd::R t[ROWS][N];  // G · in
#pragma GCC unroll 6
  for (int x = 0; x < ROWS; x++)
#pragma GCC unroll 6
    for (int j = 0; j < N; j++) {
      Simd::R acc = Simd::zero();
#pragma GCC unroll 6
      for (int i = 0; i < N; i++)
        if (G[x][i] != 0) acc = Simd::fmadd(Simd::set1(G[x][i]), in[i][j], acc);
      t[x][j] = acc;
    }
#pragma GCC unroll 6
  for (int x = 0; x < ROWS; x++)
#pragma GCC unroll 6
    for (int y = 0; y < ROWS; y++) {
      Simd::R acc = Simd::zero();
#pragma GCC unroll 6
      for (int j = 0; j < N; j++)
        if (G[y][j] != 0) acc = Simd::fmadd(Simd::set1(G[y][j]), t[x][j], acc);
      out[x][y] = acc;
    }
}

// dst[q · stride] = lane q of v for q < valid.
inline void scatter(float* dst, int64_t stride, Simd::R v, int valid) {
  alignas(64) float lanes[kLanes];
  Simd::storeu(lanes, v);
  for (int q = 0; q < valid; q++) dst[q * stride] = lanes[q];
}

// Prefetch rows x cols pixels of `channels` floats each, rows `sh` and pixels
// `sw` floats apart: a tile's loads miss the caches where its pixels are new
// (7-12 % of a Winograd pass on the benchmark shapes).
// HINT is an int: GCC's hint type (enum _mm_hint) has another name in clang,
// where the hints are plain integers; decltype of one gives each its own.
template <int HINT>
inline void prefetch_pixels(const float* p, int rows, int cols, int64_t sh, int64_t sw, int channels) {
  for (int a = 0; a < rows; a++)
    for (int b = 0; b < cols; b++)
      for (int c = 0; c < channels; c += 16)
        _mm_prefetch(reinterpret_cast<const char*>(p + a * sh + b * sw + c), static_cast<decltype(_MM_HINT_T0)>(HINT));
}

// Tile `tile` of a grid of tiles_h x tiles_w per image.
struct TilePos {
  int n, th, tw;
};
inline TilePos tile_pos(int tile, int tiles_h, int tiles_w) {
  const int per_image = tiles_h * tiles_w;
  return {tile / per_image, (tile % per_image) / tiles_w, tile % tiles_w};
}

struct Layout {
  int m = 0, tiles_h = 0, tiles_w = 0, tiles = 0;
  int TB = 0;          // tiles per block (a multiple of 6)
  int ldm = 0;         // M's row length: K rounded up to whole vectors
  int64_t panel = 0;   // floats of one packed U[ξν]
  int threads = 1;
  int64_t u_floats = 0, uraw_floats = 0, v_floats = 0, m_floats = 0;
};

int64_t aligned(int64_t floats) { return (floats + 15) / 16 * 16; }

Layout layout(const WinogradRun& r) {
  Layout l;
  l.m = winograd_tile(r.R);
  l.tiles_h = (r.OH + l.m - 1) / l.m, l.tiles_w = (r.OW + l.m - 1) / l.m;
  l.tiles = r.N * l.tiles_h * l.tiles_w;
  l.ldm = (r.K + kLanes - 1) / kLanes * kLanes;
  // V and M of one block within about 768 KiB.
  const int64_t per_tile = int64_t{kAlpha} * kAlpha * (r.C + l.ldm) * 4;
  l.TB = static_cast<int>(std::clamp<int64_t>((768 << 10) / per_tile / 6 * 6, 6, 96));
  l.TB = std::min(l.TB, (l.tiles + 5) / 6 * 6);
  l.panel = aligned(gemm::sgemm_packed_floats(r.C, r.K));
  l.threads = r.threaded ? static_cast<int>(std::max<size_t>(1, thread_count())) : 1;
  l.u_floats = kAlpha * kAlpha * l.panel;
  l.uraw_floats = aligned(int64_t{kAlpha} * kAlpha * r.C * r.K);
  l.v_floats = aligned(int64_t{kAlpha} * kAlpha * l.TB * r.C);
  l.m_floats = aligned(int64_t{kAlpha} * kAlpha * l.TB * l.ldm);
  return l;
}

template <class F>
void parallel_parts(int parts, const F& f) {
  if (parts <= 1) return f(0);
  parallel_for(static_cast<size_t>(parts), 1, [&](size_t b, size_t e) {
    for (size_t t = b; t < e; t++) f(static_cast<int>(t));
  });
}

// uraw[ξν][c][k] = (G g Gᵀ)[ξ][ν] for g = w[k, :, :, c].
template <int R>
void transform_weights(const WinogradRun& r, int k0, int k1, float* uraw) {
  for (int k = k0; k < k1; k++)
    for (int c0 = 0; c0 < r.C; c0 += kLanes) {
      const Simd::Mask mask = Simd::mask(r.C - c0);
      Simd::R g[R][R], u[kAlpha][kAlpha];
      for (int i = 0; i < R; i++)
        for (int j = 0; j < R; j++)
          g[i][j] = Simd::load(mask, r.w + ((static_cast<int64_t>(k) * R + i) * R + j) * r.C + c0);
      sandwich(Filter<R>::G, g, u);
      for (int x = 0; x < kAlpha; x++)
        for (int y = 0; y < kAlpha; y++)
          scatter(uraw + (static_cast<int64_t>(x * kAlpha + y) * r.C + c0) * r.K + k, r.K, u[x][y],
                  std::min(kLanes, r.C - c0));
    }
}

// Where the tiles' 6 x 6 input patches are: a packed, padded NHWC buffer,
// tiles every m pixels, tiles_h x tiles_w per image.
struct Patches {
  const float* in;
  int in_h, in_w, C;
  int m, tiles_h, tiles_w;
};

// V[ξν][i][c] (rows TB apart) for the tiles first .. first + count - 1.
void transform_inputs(const Patches& r, int TB, int first, int count, float* V) {
  const int64_t row = static_cast<int64_t>(r.in_w) * r.C;
  for (int i = 0; i < count; i++) {
    const auto [n, th, tw] = tile_pos(first + i, r.tiles_h, r.tiles_w);
    const float* base = r.in + (static_cast<int64_t>(n) * r.in_h + th * r.m) * row + static_cast<int64_t>(tw) * r.m * r.C;
    if (i + 1 < count) {  // the next tile's pixels that this one does not load
      const auto [n1, th1, tw1] = tile_pos(first + i + 1, r.tiles_h, r.tiles_w);
      const int x0 = n1 == n && th1 == th ? kAlpha - r.m : 0;
      prefetch_pixels<_MM_HINT_T0>(
          r.in + (static_cast<int64_t>(n1) * r.in_h + th1 * r.m) * row + (static_cast<int64_t>(tw1) * r.m + x0) * r.C,
          kAlpha, kAlpha - x0, row, r.C, r.C);
    }
    for (int c0 = 0; c0 < r.C; c0 += kLanes) {
      const Simd::Mask mask = Simd::mask(r.C - c0);
      Simd::R w[kAlpha][kAlpha];  // w[y][x]: row y of d Bᵀ... stored column-wise below
      for (int y = 0; y < kAlpha; y++) {
        Simd::R d[kAlpha];
        for (int x = 0; x < kAlpha; x++) d[x] = Simd::load(mask, base + y * row + x * r.C + c0);
        bt6(d, w[y]);  // w[y][ν] = (d[y] B)[ν]
      }
      for (int x = 0; x < kAlpha; x++) {
        Simd::R col[kAlpha], v[kAlpha];
        for (int y = 0; y < kAlpha; y++) col[y] = w[y][x];
        bt6(col, v);  // v[ξ] = (Bᵀ d B)[ξ][x]
        for (int y = 0; y < kAlpha; y++)
          Simd::store(V + (static_cast<int64_t>(y * kAlpha + x) * TB + i) * r.C + c0, mask, v[y]);
      }
    }
  }
}

// Output tiles from M[ξν][i][k].
template <int R>
void transform_outputs(const WinogradRun& r, const Layout& l, int first, int count, const float* M) {
  constexpr int m = Filter<R>::m;
  for (int i = 0; i < count; i++) {
    const auto [n, th, tw] = tile_pos(first + i, l.tiles_h, l.tiles_w);
    const int rows = std::min(m, r.OH - th * m), cols = std::min(m, r.OW - tw * m);
    float* out = r.out + n * r.sn + th * m * r.sh + tw * m * r.sw;
    if (i + 1 < count) {  // the next tile's output lines, for writing
      const auto [n1, th1, tw1] = tile_pos(first + i + 1, l.tiles_h, l.tiles_w);
      prefetch_pixels<_MM_HINT_ET0>(r.out + n1 * r.sn + th1 * m * r.sh + tw1 * m * r.sw,
                                    std::min(m, r.OH - th1 * m), std::min(m, r.OW - tw1 * m), r.sh, r.sw, r.K);
    }
    for (int k0 = 0; k0 < r.K; k0 += kLanes) {
      const Simd::Mask mask = Simd::mask(r.K - k0);
      Simd::R mv[kAlpha][kAlpha], y[m][m];
#pragma GCC unroll 6
      for (int x = 0; x < kAlpha; x++)
#pragma GCC unroll 6
        for (int v = 0; v < kAlpha; v++)
          mv[x][v] = Simd::load_aligned(mask, M + (static_cast<int64_t>(x * kAlpha + v) * l.TB + i) * l.ldm + k0);
      sandwich(Filter<R>::AT, mv, y);
      const Simd::R bias = r.bias ? Simd::load(mask, r.bias + k0) : Simd::zero();
#pragma GCC unroll 4
      for (int a = 0; a < m; a++) {
        if (a >= rows) break;
#pragma GCC unroll 4
        for (int b = 0; b < m; b++) {
          if (b >= cols) break;
          Simd::store(out + a * r.sh + b * r.sw + k0, mask, Simd::add(y[a][b], bias));
        }
      }
    }
  }
}

template <int R>
void run(const WinogradRun& r, float* scratch) {
  const Layout l = layout(r);
  float* const U = scratch;
  float* const uraw = U + l.u_floats;
  float* const per_thread = uraw + l.uraw_floats;
  // Weights: transform (threads split the filters), then pack each U[ξν].
  parallel_parts(l.threads, [&](int t) {
    transform_weights<R>(r, static_cast<int>(int64_t{r.K} * t / l.threads),
                         static_cast<int>(int64_t{r.K} * (t + 1) / l.threads), uraw);
  });
  parallel_parts(l.threads, [&](int t) {
    for (int xy = t; xy < kAlpha * kAlpha; xy += l.threads) {
      gemm::Sgemm p;
      p.k = r.C, p.n = r.K;
      p.b = uraw + static_cast<int64_t>(xy) * r.C * r.K, p.brs = r.K, p.bcs = 1;
      Simd::sgemm_pack(p, U + xy * l.panel);
    }
  });
  const int blocks = (l.tiles + l.TB - 1) / l.TB;
  parallel_parts(l.threads, [&](int t) {
    float* const V = per_thread + t * (l.v_floats + l.m_floats);
    float* const M = V + l.v_floats;
    for (int b = t; b < blocks; b += l.threads) {
      const int first = b * l.TB, count = std::min(l.TB, l.tiles - first);
      transform_inputs({r.in, r.in_h, r.in_w, r.C, l.m, l.tiles_h, l.tiles_w}, l.TB, first, count, V);
      for (int xy = 0; xy < kAlpha * kAlpha; xy++)
        Simd::sgemm_packed(count, r.K, r.C, V + static_cast<int64_t>(xy) * l.TB * r.C, r.C, U + xy * l.panel,
                                  M + static_cast<int64_t>(xy) * l.TB * l.ldm, l.ldm);
      transform_outputs<R>(r, l, first, count, M);
    }
  });
}

// The weight gradient as F(R x R, m x m) on the same tiles and the same Bᵀ:
// g's m x m tile is the filter and dw's R x R the output, so G' = V_m and
// A'ᵀ = V_Rᵀ (G' rows scaled like G's above).
template <int R>
struct Gradient;
template <>
struct Gradient<3> {
  static constexpr int m = 4;
  static constexpr float G[6][4] = {{1.f / 4, 0, 0, 0},
                                    {1.f / 6, 1.f / 6, 1.f / 6, 1.f / 6},
                                    {1.f / 6, -1.f / 6, 1.f / 6, -1.f / 6},
                                    {1.f / 24, 1.f / 12, 1.f / 6, 1.f / 3},
                                    {1.f / 24, -1.f / 12, 1.f / 6, -1.f / 3},
                                    {0, 0, 0, 1}};
  static constexpr float AT[3][6] = {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 1}};
};
template <>
struct Gradient<5> {
  static constexpr int m = 2;
  static constexpr float G[6][2] = {{1.f / 4, 0}, {1.f / 6, 1.f / 6}, {1.f / 6, -1.f / 6}, {1.f / 24, 1.f / 12},
                                    {1.f / 24, -1.f / 12}, {0, 1}};
  static constexpr float AT[5][6] = {{1, 1, 1, 1, 1, 0},
                                     {0, 1, -1, 2, -2, 0},
                                     {0, 1, 1, 4, 4, 0},
                                     {0, 1, -1, 8, -8, 0},
                                     {0, 1, 1, 16, 16, 1}};
};

struct GradLayout {
  int m = 0, tiles_h = 0, tiles_w = 0, tiles = 0;
  int TB = 0;  // tiles per block
  int threads = 1;
  int64_t x_floats = 0, g_floats = 0, d_floats = 0, b_floats = 0;
};

GradLayout grad_layout(const WinogradGradRun& r) {
  GradLayout l;
  l.m = winograd_tile(r.R);
  l.tiles_h = (r.OH + l.m - 1) / l.m, l.tiles_w = (r.OW + l.m - 1) / l.m;
  l.tiles = r.N * l.tiles_h * l.tiles_w;
  // X and Gt of one block within about 768 KiB; the block is the products' depth.
  const int64_t per_tile = int64_t{kAlpha} * kAlpha * (r.C + r.K) * 4;
  l.TB = static_cast<int>(std::clamp<int64_t>((768 << 10) / per_tile, 16, 256));
  l.TB = std::min(l.TB, l.tiles);
  l.x_floats = aligned(int64_t{kAlpha} * kAlpha * l.TB * r.C);
  l.g_floats = aligned(int64_t{kAlpha} * kAlpha * l.TB * r.K);
  l.d_floats = aligned(int64_t{kAlpha} * kAlpha * r.C * r.K);
  // Each thread keeps its own 36 x C x K sums: no more threads than fit in
  // 256 MiB of them (6 for 512 x 512 channels), so wide layers stay lean.
  const int64_t fit = std::max<int64_t>(1, (int64_t{256} << 20) / (l.d_floats * 4));
  l.threads = r.threaded ? static_cast<int>(std::max<size_t>(1, thread_count())) : 1;
  l.threads = static_cast<int>(std::min<int64_t>({l.threads, (l.tiles + l.TB - 1) / l.TB, fit}));
  l.b_floats = aligned(r.K);
  return l;
}

// Gt[ξν][i][k] = (G' g G'ᵀ)[ξ][ν] for the tiles' m x m pieces of g (zero past
// OH, OW); db[k] += the pieces' sum (each g element is in one tile).
template <int R>
void transform_grads(const WinogradGradRun& r, const GradLayout& l, int first, int count, float* Gt, float* db) {
  constexpr int m = Gradient<R>::m;
  for (int i = 0; i < count; i++) {
    const auto [n, th, tw] = tile_pos(first + i, l.tiles_h, l.tiles_w);
    const int rows = std::min(m, r.OH - th * m), cols = std::min(m, r.OW - tw * m);
    const float* base = r.g + n * r.gsn + th * m * r.gsh + tw * m * r.gsw;
    if (i + 1 < count) {  // the next tile's piece of g
      const auto [n1, th1, tw1] = tile_pos(first + i + 1, l.tiles_h, l.tiles_w);
      prefetch_pixels<_MM_HINT_T0>(r.g + n1 * r.gsn + th1 * m * r.gsh + tw1 * m * r.gsw,
                                   std::min(m, r.OH - th1 * m), std::min(m, r.OW - tw1 * m), r.gsh, r.gsw, r.K);
    }
    for (int k0 = 0; k0 < r.K; k0 += kLanes) {
      const Simd::Mask mask = Simd::mask(r.K - k0);
      Simd::R gv[m][m], u[kAlpha][kAlpha];
      Simd::R sum = Simd::loadu(db + k0);
#pragma GCC unroll 4
      for (int a = 0; a < m; a++)
#pragma GCC unroll 4
        for (int b = 0; b < m; b++) {
          gv[a][b] = a < rows && b < cols ? Simd::load(mask, base + a * r.gsh + b * r.gsw + k0)
                                          : Simd::zero();
          sum = Simd::add(sum, gv[a][b]);
        }
      Simd::storeu(db + k0, sum);
      sandwich(Gradient<R>::G, gv, u);
#pragma GCC unroll 6
      for (int x = 0; x < kAlpha; x++)
#pragma GCC unroll 6
        for (int y = 0; y < kAlpha; y++)
          Simd::store(Gt + (static_cast<int64_t>(x * kAlpha + y) * l.TB + i) * r.K + k0, mask, u[x][y]);
    }
  }
}

// dw[k, i, j, c] = (A'ᵀ D[·][c][k] A')[i][j] for filters k0 .. k1 - 1.
template <int R>
void transform_dw(const WinogradGradRun& r, const float* D, int k0, int k1) {
  for (int kb = k0; kb < k1; kb += kLanes) {
    const int valid = std::min(kLanes, k1 - kb);
    const Simd::Mask mask = Simd::mask(valid);
    for (int c = 0; c < r.C; c++) {
      Simd::R d[kAlpha][kAlpha], y[R][R];
      for (int x = 0; x < kAlpha; x++)
        for (int v = 0; v < kAlpha; v++)
          d[x][v] = Simd::load(mask, D + (static_cast<int64_t>(x * kAlpha + v) * r.C + c) * r.K + kb);
      sandwich(Gradient<R>::AT, d, y);
      for (int i = 0; i < R; i++)
        for (int j = 0; j < R; j++)
          scatter(r.dw + ((static_cast<int64_t>(kb) * R + i) * R + j) * r.C + c, int64_t{R} * R * r.C, y[i][j],
                  valid);
    }
  }
}

template <int R>
void run_gradient(const WinogradGradRun& r, float* scratch) {
  const GradLayout l = grad_layout(r);
  const int64_t per_thread = l.x_floats + l.g_floats + l.d_floats + l.b_floats + kLanes;
  const int blocks = (l.tiles + l.TB - 1) / l.TB;
  const Patches patches{r.in, r.in_h, r.in_w, r.C, l.m, l.tiles_h, l.tiles_w};
  std::atomic<bool> failed{false};  // out of memory in a product (pool threads cannot throw)
  parallel_parts(l.threads, [&](int t) {
    float* const X = scratch + t * per_thread;
    float* const Gt = X + l.x_floats;
    float* const D = Gt + l.g_floats;
    float* const db = D + l.d_floats;  // b_floats + one vector of slack for the last masked lanes
    std::fill(D, D + l.d_floats + l.b_floats + kLanes, 0.0f);
    for (int b = t; b < blocks; b += l.threads) {
      const int first = b * l.TB, count = std::min(l.TB, l.tiles - first);
      transform_inputs(patches, l.TB, first, count, X);
      transform_grads<R>(r, l, first, count, Gt, db);
      for (int xy = 0; xy < kAlpha * kAlpha; xy++) {
        // D[ξν] (C x K) += X[ξν]ᵀ · Gt[ξν]
        gemm::Sgemm p;
        p.m = r.C, p.n = r.K, p.k = count;
        p.a = X + static_cast<int64_t>(xy) * l.TB * r.C, p.ars = 1, p.acs = r.C;
        p.b = Gt + static_cast<int64_t>(xy) * l.TB * r.K, p.brs = r.K, p.bcs = 1;
        p.beta = 1.0f;
        p.c = D + static_cast<int64_t>(xy) * r.C * r.K, p.ldc = r.K;
        if (!Simd::sgemm_serial(p)) failed = true;
      }
    }
  });
  if (failed) throw std::bad_alloc();
  // Sum the threads' D into the first, then transform (threads split the filters).
  const int64_t d = int64_t{kAlpha} * kAlpha * r.C * r.K;
  float* const D0 = scratch + l.x_floats + l.g_floats;
  if (l.threads > 1) {
    parallel_parts(l.threads, [&](int t) {
      const int64_t b = d * t / l.threads, e = d * (t + 1) / l.threads;
      for (int u = 1; u < l.threads; u++) {
        const float* Du = D0 + u * per_thread;
        for (int64_t q = b; q < e; q++) D0[q] += Du[q];
      }
    });
  }
  if (r.dbias) {
    for (int k = 0; k < r.K; k++) {
      float sum = 0;
      for (int u = 0; u < l.threads; u++) sum += D0[u * per_thread + l.d_floats + k];
      r.dbias[k] = sum;
    }
  }
  const int kblocks = (r.K + kLanes - 1) / kLanes;
  parallel_parts(l.threads, [&](int t) {
    const int b0 = kblocks * t / l.threads, b1 = kblocks * (t + 1) / l.threads;
    transform_dw<R>(r, D0, b0 * kLanes, std::min(r.K, b1 * kLanes));
  });
}

size_t scratch_floats(const WinogradRun& r) {
  const Layout l = layout(r);
  return static_cast<size_t>(l.u_floats + l.uraw_floats + l.threads * (l.v_floats + l.m_floats));
}

void forward(const WinogradRun& r, float* scratch) {
  if (r.R == 3) return run<3>(r, scratch);
  run<5>(r, scratch);
}

size_t gradient_scratch_floats(const WinogradGradRun& r) {
  const GradLayout l = grad_layout(r);
  return static_cast<size_t>(l.threads * (l.x_floats + l.g_floats + l.d_floats + l.b_floats + kLanes));
}

void gradient(const WinogradGradRun& r, float* scratch) {
  if (r.R == 3) return run_gradient<3>(r, scratch);
  run_gradient<5>(r, scratch);
}
