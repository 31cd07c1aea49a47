// AVX2 + FMA kernels of sparse_f32.h (compiled with -mavx2 -mfma; called only after CPU
// detection).
#include <immintrin.h>

#include <algorithm>

#include "kernels/fully_connected/sparse_f32.h"
#include "kernels/fully_connected/sparse_spmm_tiles.h"

namespace edgeopt::kernels::sparse {
namespace {

inline void Transpose8x8(__m256& r0, __m256& r1, __m256& r2, __m256& r3, __m256& r4, __m256& r5, __m256& r6,
                         __m256& r7) {
  const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
  const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
  const __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
  const __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  r0 = _mm256_permute2f128_ps(u0, u4, 0x20);
  r1 = _mm256_permute2f128_ps(u1, u5, 0x20);
  r2 = _mm256_permute2f128_ps(u2, u6, 0x20);
  r3 = _mm256_permute2f128_ps(u3, u7, 0x20);
  r4 = _mm256_permute2f128_ps(u0, u4, 0x31);
  r5 = _mm256_permute2f128_ps(u1, u5, 0x31);
  r6 = _mm256_permute2f128_ps(u2, u6, 0x31);
  r7 = _mm256_permute2f128_ps(u3, u7, 0x31);
}

// Clamp that lets NaN through (as the reference's std::min(std::max(x, lo), hi)): max/min
// return their second operand when one is NaN.
inline __m256 Clamp(__m256 x, __m256 lo, __m256 hi) { return _mm256_min_ps(hi, _mm256_max_ps(lo, x)); }

inline float ClampScalar(float x, float lo, float hi) { return std::min(std::max(x, lo), hi); }

// A tile of `mr` rows of A (starting at m0) into at[k * 32 + r]; rows mr..ceil8(mr) are zero.
void PackTile(const GemmArgs& g, int m0, int mr, int k_total, float* at) {
  const float* rows[kTileRows];
  for (int r = 0; r < mr; ++r) rows[r] = g.row(m0 + r);
  int r0 = 0;
  for (; r0 + 8 <= mr; r0 += 8) {
    int k = 0;
    for (; k + 8 <= k_total; k += 8) {
      __m256 x0 = _mm256_loadu_ps(rows[r0 + 0] + k), x1 = _mm256_loadu_ps(rows[r0 + 1] + k);
      __m256 x2 = _mm256_loadu_ps(rows[r0 + 2] + k), x3 = _mm256_loadu_ps(rows[r0 + 3] + k);
      __m256 x4 = _mm256_loadu_ps(rows[r0 + 4] + k), x5 = _mm256_loadu_ps(rows[r0 + 5] + k);
      __m256 x6 = _mm256_loadu_ps(rows[r0 + 6] + k), x7 = _mm256_loadu_ps(rows[r0 + 7] + k);
      Transpose8x8(x0, x1, x2, x3, x4, x5, x6, x7);
      float* o = at + static_cast<int64_t>(k) * kTileRows + r0;
      _mm256_storeu_ps(o + 0 * kTileRows, x0);
      _mm256_storeu_ps(o + 1 * kTileRows, x1);
      _mm256_storeu_ps(o + 2 * kTileRows, x2);
      _mm256_storeu_ps(o + 3 * kTileRows, x3);
      _mm256_storeu_ps(o + 4 * kTileRows, x4);
      _mm256_storeu_ps(o + 5 * kTileRows, x5);
      _mm256_storeu_ps(o + 6 * kTileRows, x6);
      _mm256_storeu_ps(o + 7 * kTileRows, x7);
    }
    for (; k < k_total; ++k)
      for (int i = 0; i < 8; ++i) at[static_cast<int64_t>(k) * kTileRows + r0 + i] = rows[r0 + i][k];
  }
  PackTileRest(rows, r0, mr, (mr + 7) / 8 * 8, k_total, kTileRows, at);
}

// ct[j][r] (j < nb columns, r < mr rows) into C rows m0.., columns n0..
void StoreTile(const float* ct, int nb, int mr, float* c, int64_t ldc) {
  int r0 = 0;
  if (nb == 8) {
    for (; r0 + 8 <= mr; r0 += 8) {
      __m256 x0 = _mm256_loadu_ps(ct + 0 * kTileRows + r0), x1 = _mm256_loadu_ps(ct + 1 * kTileRows + r0);
      __m256 x2 = _mm256_loadu_ps(ct + 2 * kTileRows + r0), x3 = _mm256_loadu_ps(ct + 3 * kTileRows + r0);
      __m256 x4 = _mm256_loadu_ps(ct + 4 * kTileRows + r0), x5 = _mm256_loadu_ps(ct + 5 * kTileRows + r0);
      __m256 x6 = _mm256_loadu_ps(ct + 6 * kTileRows + r0), x7 = _mm256_loadu_ps(ct + 7 * kTileRows + r0);
      Transpose8x8(x0, x1, x2, x3, x4, x5, x6, x7);
      float* o = c + r0 * ldc;
      _mm256_storeu_ps(o + 0 * ldc, x0);
      _mm256_storeu_ps(o + 1 * ldc, x1);
      _mm256_storeu_ps(o + 2 * ldc, x2);
      _mm256_storeu_ps(o + 3 * ldc, x3);
      _mm256_storeu_ps(o + 4 * ldc, x4);
      _mm256_storeu_ps(o + 5 * ldc, x5);
      _mm256_storeu_ps(o + 6 * ldc, x6);
      _mm256_storeu_ps(o + 7 * ldc, x7);
    }
  }
  StoreTileRest(ct, nb, r0, mr, kTileRows, c, ldc);
}

// The 8-lane vectors of SpmmTiles (sparse_spmm_tiles.h).
struct Avx2Vec {
  using Vec = __m256;
  static constexpr int kLanes = 8, kRows = kTileRows;
  static Vec Set1(float x) { return _mm256_set1_ps(x); }
  static Vec Zero() { return _mm256_setzero_ps(); }
  static Vec Load(const float* p) { return _mm256_loadu_ps(p); }
  static void Store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
  static Vec Fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
  static Vec Add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
  static Vec Clamp(Vec x, Vec lo, Vec hi) { return sparse::Clamp(x, lo, hi); }
  static void PackTile(const GemmArgs& g, int m0, int mr, int k_total, float* at) {
    sparse::PackTile(g, m0, mr, k_total, at);
  }
  static void StoreTile(const float* ct, int nb, int mr, float* c, int64_t ldc) { sparse::StoreTile(ct, nb, mr, c, ldc); }
};

inline float HorizontalSum(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 h = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(h, _mm_shuffle_ps(h, h, 1)));
}

}  // namespace

void SpmmAvx2(const CsrF32& w, const GemmArgs& g, int m_begin, int m_end, float* scratch) {
  SpmmTiles<Avx2Vec>(w, g, m_begin, m_end, scratch);
}

void SpmvAvx2(const CsrF32& w, const GemmArgs& g, int m, int n_begin, int n_end) {
  const float* a = g.row(m);
  float* c = g.c + static_cast<int64_t>(m) * g.ldc;
  const int32_t* col = w.col.data();
  const float* val = w.val.data();
  for (int n = n_begin; n < n_end; ++n) {
    int32_t j = w.row_start[n];
    const int32_t e = w.row_start[n + 1];
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (; j + 16 <= e; j += 16) {
      const __m256i i0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(col + j));
      const __m256i i1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(col + j + 8));
      acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(val + j), _mm256_i32gather_ps(a, i0, 4), acc0);
      acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(val + j + 8), _mm256_i32gather_ps(a, i1, 4), acc1);
    }
    if (j + 8 <= e) {
      const __m256i i0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(col + j));
      acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(val + j), _mm256_i32gather_ps(a, i0, 4), acc0);
      j += 8;
    }
    float tail = 0.0f;
    for (; j < e; ++j) tail += val[j] * a[col[j]];
    float acc = HorizontalSum(_mm256_add_ps(acc0, acc1)) + tail;
    if (g.bias) acc += g.bias[n];
    c[n] = ClampScalar(acc, g.lo, g.hi);
  }
}

// Dense baseline: MR rows x NP panels of 16 columns per step.
namespace {

template <int MR, int NP>
void DenseBlock(const DensePackedF32& w, const GemmArgs& g, int m0, int p0, __m256 lo, __m256 hi) {
  const float* rows[MR];
  for (int r = 0; r < MR; ++r) rows[r] = g.row(m0 + r);
  __m256 acc[MR][NP][2];
  for (int p = 0; p < NP; ++p) {
    const int n = (p0 + p) * 16;
    __m256 b0 = _mm256_setzero_ps(), b1 = _mm256_setzero_ps();
    if (g.bias) {
      alignas(32) float bias[16] = {};
      for (int i = 0; i < 16 && n + i < w.n; ++i) bias[i] = g.bias[n + i];
      b0 = _mm256_load_ps(bias);
      b1 = _mm256_load_ps(bias + 8);
    }
    for (int r = 0; r < MR; ++r) {
      acc[r][p][0] = b0;
      acc[r][p][1] = b1;
    }
  }
  const int64_t panel_stride = static_cast<int64_t>(w.k) * 16;
  const float* base = w.panels.data() + p0 * panel_stride;
  for (int k = 0; k < w.k; ++k) {
    __m256 b[NP][2];
    for (int p = 0; p < NP; ++p) {
      b[p][0] = _mm256_loadu_ps(base + p * panel_stride + k * 16);
      b[p][1] = _mm256_loadu_ps(base + p * panel_stride + k * 16 + 8);
    }
    for (int r = 0; r < MR; ++r) {
      const __m256 a = _mm256_broadcast_ss(rows[r] + k);
      for (int p = 0; p < NP; ++p) {
        acc[r][p][0] = _mm256_fmadd_ps(a, b[p][0], acc[r][p][0]);
        acc[r][p][1] = _mm256_fmadd_ps(a, b[p][1], acc[r][p][1]);
      }
    }
  }
  for (int r = 0; r < MR; ++r) {
    float* c = g.c + static_cast<int64_t>(m0 + r) * g.ldc;
    for (int p = 0; p < NP; ++p) {
      const int n = (p0 + p) * 16;
      const __m256 x0 = Clamp(acc[r][p][0], lo, hi), x1 = Clamp(acc[r][p][1], lo, hi);
      if (n + 16 <= w.n) {
        _mm256_storeu_ps(c + n, x0);
        _mm256_storeu_ps(c + n + 8, x1);
      } else {
        alignas(32) float tmp[16];
        _mm256_store_ps(tmp, x0);
        _mm256_store_ps(tmp + 8, x1);
        for (int i = 0; n + i < w.n; ++i) c[n + i] = tmp[i];
      }
    }
  }
}

template <int MR, int NP>
void DenseRows(const DensePackedF32& w, const GemmArgs& g, int m0, __m256 lo, __m256 hi) {
  const int panels = (w.n + 15) / 16;
  int p = 0;
  for (; p + NP <= panels; p += NP) DenseBlock<MR, NP>(w, g, m0, p, lo, hi);
  for (; p < panels; ++p) DenseBlock<MR, 1>(w, g, m0, p, lo, hi);
}

}  // namespace

void DenseGemmAvx2(const DensePackedF32& w, const GemmArgs& g, int m_begin, int m_end) {
  const __m256 lo = _mm256_set1_ps(g.lo), hi = _mm256_set1_ps(g.hi);
  int m = m_begin;
  for (; m + 6 <= m_end; m += 6) DenseRows<6, 1>(w, g, m, lo, hi);
  switch (m_end - m) {
    case 5: DenseRows<5, 1>(w, g, m, lo, hi); break;
    case 4: DenseRows<4, 1>(w, g, m, lo, hi); break;
    case 3: DenseRows<3, 1>(w, g, m, lo, hi); break;
    case 2: DenseRows<2, 2>(w, g, m, lo, hi); break;
    case 1: DenseRows<1, 4>(w, g, m, lo, hi); break;
    default: break;
  }
}

}  // namespace edgeopt::kernels::sparse
