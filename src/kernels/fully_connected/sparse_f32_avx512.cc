// AVX-512 SpMM of sparse_f32.h (compiled with AVX-512 flags; called only after CPU detection):
// the AVX2 SpMM's scheme on 16-lane vectors. Tiles of up to 64 rows of A are transposed into
// [K][64] (16x16 transposes), then for each output column n and each nonzero w of W[n, :] one
// broadcast of w feeds up to 4 FMAs over the 64 rows; 16 columns are gathered in a [16][64] block
// and transposed back into C's rows. Twice the rows per FMA of the AVX2 kernel, for the same
// broadcasts and index loads: on this Zen 5 the AVX2 SpMM lost to the AVX-512 dense kernels up
// to 80-90% zeros (bench/micro/sparse_runtime_bench.cc).

#include <algorithm>

#include "kernels/common/avx512_intrin.h"
#include "kernels/fully_connected/sparse_f32.h"
#include "kernels/fully_connected/sparse_spmm_tiles.h"

namespace edgeopt::kernels::sparse {
namespace {

constexpr int kRows = kTileRows512;

// r[i] (16 floats each) transposed in place: r[i][j] <- r[j][i].
inline void Transpose16x16(__m512 (&r)[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  // Per 128-bit lane: rows 4q..4q+3 of the lane's 4 columns.
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  // r[4q + c] lane l: rows 4q..4q+3 of column 4l + c. Gather the four row groups per column.
  for (int c = 0; c < 4; ++c) {
    const __m512 a = _mm512_shuffle_f32x4(r[c], r[4 + c], _MM_SHUFFLE(2, 0, 2, 0));       // lanes 0,2 of r[c], r[4+c]
    const __m512 b = _mm512_shuffle_f32x4(r[c], r[4 + c], _MM_SHUFFLE(3, 1, 3, 1));       // lanes 1,3
    const __m512 d = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], _MM_SHUFFLE(2, 0, 2, 0));
    const __m512 e = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], _MM_SHUFFLE(3, 1, 3, 1));
    t[c] = _mm512_shuffle_f32x4(a, d, _MM_SHUFFLE(2, 0, 2, 0));       // column c
    t[8 + c] = _mm512_shuffle_f32x4(a, d, _MM_SHUFFLE(3, 1, 3, 1));   // column 8 + c
    t[4 + c] = _mm512_shuffle_f32x4(b, e, _MM_SHUFFLE(2, 0, 2, 0));   // column 4 + c
    t[12 + c] = _mm512_shuffle_f32x4(b, e, _MM_SHUFFLE(3, 1, 3, 1));  // column 12 + c
  }
  for (int i = 0; i < 16; ++i) r[i] = t[i];
}

// Clamp that lets NaN through (as the reference's std::min(std::max(x, lo), hi)).
inline __m512 Clamp(__m512 x, __m512 lo, __m512 hi) { return _mm512_min_ps(hi, _mm512_max_ps(lo, x)); }

// A tile of `mr` rows of A (starting at m0) into at[k * 64 + r]; rows mr..ceil16(mr) are zero.
void PackTile(const GemmArgs& g, int m0, int mr, int k_total, float* at) {
  const float* rows[kRows];
  for (int r = 0; r < mr; ++r) rows[r] = g.row(m0 + r);
  int r0 = 0;
  for (; r0 + 16 <= mr; r0 += 16) {
    int k = 0;
    for (; k + 16 <= k_total; k += 16) {
      __m512 x[16];
      for (int i = 0; i < 16; ++i) x[i] = _mm512_loadu_ps(rows[r0 + i] + k);
      Transpose16x16(x);
      float* o = at + static_cast<int64_t>(k) * kRows + r0;
      for (int i = 0; i < 16; ++i) _mm512_storeu_ps(o + i * kRows, x[i]);
    }
    for (; k < k_total; ++k)
      for (int i = 0; i < 16; ++i) at[static_cast<int64_t>(k) * kRows + r0 + i] = rows[r0 + i][k];
  }
  PackTileRest(rows, r0, mr, (mr + 15) / 16 * 16, k_total, kRows, at);
}

// ct[j][r] (j < nb columns, r < mr rows) into C rows m0.., columns n0..
void StoreTile(const float* ct, int nb, int mr, float* c, int64_t ldc) {
  const __mmask16 m = static_cast<__mmask16>((1u << nb) - 1u);
  int r0 = 0;
  for (; r0 + 16 <= mr; r0 += 16) {
    __m512 x[16];
    // Columns past nb were not computed in this block: zeros (masked out of the stores anyway).
    for (int j = 0; j < 16; ++j) x[j] = j < nb ? _mm512_loadu_ps(ct + j * kRows + r0) : _mm512_setzero_ps();
    Transpose16x16(x);
    for (int i = 0; i < 16; ++i) _mm512_mask_storeu_ps(c + (r0 + i) * ldc, m, x[i]);
  }
  StoreTileRest(ct, nb, r0, mr, kRows, c, ldc);
}

// The 16-lane vectors of SpmmTiles (sparse_spmm_tiles.h).
struct Avx512Vec {
  using Vec = __m512;
  static constexpr int kLanes = 16, kRows = kTileRows512;
  static Vec Set1(float x) { return _mm512_set1_ps(x); }
  static Vec Zero() { return _mm512_setzero_ps(); }
  static Vec Load(const float* p) { return _mm512_loadu_ps(p); }
  static void Store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
  static Vec Fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
  static Vec Add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
  static Vec Clamp(Vec x, Vec lo, Vec hi) { return sparse::Clamp(x, lo, hi); }
  static void PackTile(const GemmArgs& g, int m0, int mr, int k_total, float* at) {
    sparse::PackTile(g, m0, mr, k_total, at);
  }
  static void StoreTile(const float* ct, int nb, int mr, float* c, int64_t ldc) { sparse::StoreTile(ct, nb, mr, c, ldc); }
};

}  // namespace

void SpmmAvx512(const CsrF32& w, const GemmArgs& g, int m_begin, int m_end, float* scratch) {
  SpmmTiles<Avx512Vec>(w, g, m_begin, m_end, scratch);
}

}  // namespace edgeopt::kernels::sparse
