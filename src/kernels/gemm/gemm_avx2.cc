// AVX2 + FMA micro-kernels: 6×16 tiles (12 accumulators, two B vectors, one broadcast of A: 15
// of the 16 ymm registers), broadcast-A / load-B, whole panels computed, masked partial stores.
// A tile of fewer than 6 rows runs an instance compiled for exactly that many rows, and a last
// panel of at most 8 columns skips the upper half, so no multiply-add is wasted on padding.
#include <immintrin.h>

#include <algorithm>

#include "kernels/gemm/gemm.h"

namespace edgeopt::kernels::gemm {
namespace {

constexpr int kMr = 6;

// mask for the first n (0..8) lanes
inline __m256i LaneMask(size_t n) {
  alignas(32) static const int32_t kTable[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kTable + 8 - n));
}

template <int MR, bool kHalf>
struct Tile {
  __m256 acc[MR][2];

  inline void Init(const float* bias, float* const* c, size_t cols) {
    if (bias) {
      const __m256 b0 = _mm256_load_ps(bias);
      const __m256 b1 = kHalf ? _mm256_setzero_ps() : _mm256_load_ps(bias + 8);
      for (int r = 0; r < MR; ++r) {
        acc[r][0] = b0;
        acc[r][1] = b1;
      }
    } else if (cols == kNr) {
      for (int r = 0; r < MR; ++r) {
        acc[r][0] = _mm256_loadu_ps(c[r]);
        acc[r][1] = _mm256_loadu_ps(c[r] + 8);
      }
    } else {
      const __m256i m0 = LaneMask(std::min<size_t>(cols, 8));
      const __m256i m1 = LaneMask(cols > 8 ? cols - 8 : 0);
      for (int r = 0; r < MR; ++r) {
        acc[r][0] = _mm256_maskload_ps(c[r], m0);
        acc[r][1] = kHalf ? _mm256_setzero_ps() : _mm256_maskload_ps(c[r] + 8, m1);
      }
    }
  }

  inline void Step(const float* w, const float* const* a, size_t k) {
    const __m256 b0 = _mm256_load_ps(w);
    if (kHalf) {
      for (int r = 0; r < MR; ++r) acc[r][0] = _mm256_fmadd_ps(_mm256_broadcast_ss(a[r] + k), b0, acc[r][0]);
    } else {
      const __m256 b1 = _mm256_load_ps(w + 8);
      for (int r = 0; r < MR; ++r) {
        const __m256 va = _mm256_broadcast_ss(a[r] + k);
        acc[r][0] = _mm256_fmadd_ps(va, b0, acc[r][0]);
        acc[r][1] = _mm256_fmadd_ps(va, b1, acc[r][1]);
      }
    }
  }

  inline void Store(float* const* c, size_t cols, MinMax mm) {
    const __m256 vmin = _mm256_set1_ps(mm.min), vmax = _mm256_set1_ps(mm.max);
    for (int r = 0; r < MR; ++r) {
      // max(min, x) then min(max, x): a NaN accumulator stays NaN, as with std::min/std::max.
      acc[r][0] = _mm256_min_ps(vmax, _mm256_max_ps(vmin, acc[r][0]));
      if (!kHalf) acc[r][1] = _mm256_min_ps(vmax, _mm256_max_ps(vmin, acc[r][1]));
    }
    if (cols == kNr) {
      for (int r = 0; r < MR; ++r) {
        _mm256_storeu_ps(c[r], acc[r][0]);
        _mm256_storeu_ps(c[r] + 8, acc[r][1]);
      }
    } else if (cols == 8) {
      for (int r = 0; r < MR; ++r) _mm256_storeu_ps(c[r], acc[r][0]);
    } else {
      const __m256i m0 = LaneMask(std::min<size_t>(cols, 8));
      const __m256i m1 = LaneMask(cols > 8 ? cols - 8 : 0);
      for (int r = 0; r < MR; ++r) {
        _mm256_maskstore_ps(c[r], m0, acc[r][0]);
        if (!kHalf && cols > 8) _mm256_maskstore_ps(c[r] + 8, m1, acc[r][1]);
      }
    }
  }
};

template <int MR, bool kHalf>
inline void GemmPanel(size_t kc, const float* const* a, const float* w, const float* bias, float* const* c,
                      size_t cols, MinMax mm) {
  Tile<MR, kHalf> t;
  t.Init(bias, c, cols);
  size_t k = 0;
  for (; k + 2 <= kc; k += 2, w += 2 * kNr) {
    t.Step(w, a, k);
    t.Step(w + kNr, a, k + 1);
  }
  if (k < kc) t.Step(w, a, k);
  t.Store(c, cols, mm);
}

template <int MR>
void GemmMr(size_t nc, size_t kc, const float* a, size_t a_stride, const float* w, size_t w_stride,
            const float* bias, float* c, size_t c_stride, MinMax mm) {
  const float* ar[MR];
  float* cr[MR];
  for (int r = 0; r < MR; ++r) {
    ar[r] = a + r * a_stride;
    cr[r] = c + r * c_stride;
  }
  while (nc > 0) {
    const size_t cols = std::min<size_t>(kNr, nc);
    if (cols <= 8)
      GemmPanel<MR, true>(kc, ar, w, bias, cr, cols, mm);
    else
      GemmPanel<MR, false>(kc, ar, w, bias, cr, cols, mm);
    nc -= cols;
    w += w_stride;
    if (bias) bias += kNr;
    for (int r = 0; r < MR; ++r) cr[r] += kNr;
  }
}

void Gemm6x16(size_t mr, size_t nc, size_t kc, const float* a, size_t a_stride, const float* w, size_t w_stride,
              const float* bias, float* c, size_t c_stride, MinMax mm) {
  switch (mr) {
    case 6: return GemmMr<6>(nc, kc, a, a_stride, w, w_stride, bias, c, c_stride, mm);
    case 5: return GemmMr<5>(nc, kc, a, a_stride, w, w_stride, bias, c, c_stride, mm);
    case 4: return GemmMr<4>(nc, kc, a, a_stride, w, w_stride, bias, c, c_stride, mm);
    case 3: return GemmMr<3>(nc, kc, a, a_stride, w, w_stride, bias, c, c_stride, mm);
    case 2: return GemmMr<2>(nc, kc, a, a_stride, w, w_stride, bias, c, c_stride, mm);
    case 1: return GemmMr<1>(nc, kc, a, a_stride, w, w_stride, bias, c, c_stride, mm);
    default: return;
  }
}

template <int MR, bool kHalf>
inline void IgemmPanel(size_t kc, size_t taps, const float* const* ind, const float* w, const float* bias,
                       float* const* c, size_t cols, MinMax mm) {
  Tile<MR, kHalf> t;
  t.Init(bias, c, cols);
  for (size_t tap = 0; tap < taps; ++tap, ind += kMr) {
    const float* a[MR];
    for (int r = 0; r < MR; ++r) a[r] = ind[r];
    size_t k = 0;
    for (; k + 2 <= kc; k += 2, w += 2 * kNr) {
      t.Step(w, a, k);
      t.Step(w + kNr, a, k + 1);
    }
    if (k < kc) {
      t.Step(w, a, k);
      w += kNr;
    }
  }
  t.Store(c, cols, mm);
}

template <int MR>
void IgemmMr(size_t nc, size_t kc, size_t taps, const float* const* ind, const float* w, size_t w_stride,
             const float* bias, float* c, size_t c_stride, MinMax mm) {
  float* cr[MR];
  for (int r = 0; r < MR; ++r) cr[r] = c + r * c_stride;
  while (nc > 0) {
    const size_t cols = std::min<size_t>(kNr, nc);
    if (cols <= 8)
      IgemmPanel<MR, true>(kc, taps, ind, w, bias, cr, cols, mm);
    else
      IgemmPanel<MR, false>(kc, taps, ind, w, bias, cr, cols, mm);
    nc -= cols;
    w += w_stride;
    bias += kNr;
    for (int r = 0; r < MR; ++r) cr[r] += kNr;
  }
}

void Igemm6x16(size_t mr, size_t nc, size_t kc, size_t taps, const float* const* ind, const float* w,
               size_t w_stride, const float* bias, float* c, size_t c_stride, MinMax mm) {
  switch (mr) {
    case 6: return IgemmMr<6>(nc, kc, taps, ind, w, w_stride, bias, c, c_stride, mm);
    case 5: return IgemmMr<5>(nc, kc, taps, ind, w, w_stride, bias, c, c_stride, mm);
    case 4: return IgemmMr<4>(nc, kc, taps, ind, w, w_stride, bias, c, c_stride, mm);
    case 3: return IgemmMr<3>(nc, kc, taps, ind, w, w_stride, bias, c, c_stride, mm);
    case 2: return IgemmMr<2>(nc, kc, taps, ind, w, w_stride, bias, c, c_stride, mm);
    case 1: return IgemmMr<1>(nc, kc, taps, ind, w, w_stride, bias, c, c_stride, mm);
    default: return;
  }
}

// One row: four panels at a time (eight accumulators, four weight streams), then one panel at
// a time with K unrolled by two (four accumulators) to hide the FMA latency.
inline __m256 ClampV(__m256 x, __m256 vmin, __m256 vmax) { return _mm256_min_ps(vmax, _mm256_max_ps(vmin, x)); }

void Gemv1x16(size_t nc, size_t kc, const float* a, const float* w, size_t w_stride, const float* bias, float* c,
              MinMax mm) {
  const __m256 vmin = _mm256_set1_ps(mm.min), vmax = _mm256_set1_ps(mm.max);
  for (; nc >= 4 * kNr; nc -= 4 * kNr, w += 4 * w_stride, bias += 4 * kNr, c += 4 * kNr) {
    __m256 acc[8];
    for (int j = 0; j < 8; ++j) acc[j] = _mm256_load_ps(bias + 8 * j);
    const float* w0 = w;
    const float* w1 = w + w_stride;
    const float* w2 = w + 2 * w_stride;
    const float* w3 = w + 3 * w_stride;
    for (size_t k = 0; k < kc; ++k) {
      const __m256 va = _mm256_broadcast_ss(a + k);
      const size_t o = k * kNr;
      acc[0] = _mm256_fmadd_ps(va, _mm256_load_ps(w0 + o), acc[0]);
      acc[1] = _mm256_fmadd_ps(va, _mm256_load_ps(w0 + o + 8), acc[1]);
      acc[2] = _mm256_fmadd_ps(va, _mm256_load_ps(w1 + o), acc[2]);
      acc[3] = _mm256_fmadd_ps(va, _mm256_load_ps(w1 + o + 8), acc[3]);
      acc[4] = _mm256_fmadd_ps(va, _mm256_load_ps(w2 + o), acc[4]);
      acc[5] = _mm256_fmadd_ps(va, _mm256_load_ps(w2 + o + 8), acc[5]);
      acc[6] = _mm256_fmadd_ps(va, _mm256_load_ps(w3 + o), acc[6]);
      acc[7] = _mm256_fmadd_ps(va, _mm256_load_ps(w3 + o + 8), acc[7]);
    }
    for (int j = 0; j < 8; ++j) _mm256_storeu_ps(c + 8 * j, ClampV(acc[j], vmin, vmax));
  }
  for (; nc > 0; w += w_stride, bias += kNr, c += kNr) {
    __m256 a0 = _mm256_load_ps(bias), a1 = _mm256_load_ps(bias + 8);
    __m256 a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    size_t k = 0;
    for (; k + 2 <= kc; k += 2) {
      const __m256 v0 = _mm256_broadcast_ss(a + k), v1 = _mm256_broadcast_ss(a + k + 1);
      a0 = _mm256_fmadd_ps(v0, _mm256_load_ps(w + k * kNr), a0);
      a1 = _mm256_fmadd_ps(v0, _mm256_load_ps(w + k * kNr + 8), a1);
      a2 = _mm256_fmadd_ps(v1, _mm256_load_ps(w + k * kNr + 16), a2);
      a3 = _mm256_fmadd_ps(v1, _mm256_load_ps(w + k * kNr + 24), a3);
    }
    if (k < kc) {
      const __m256 v0 = _mm256_broadcast_ss(a + k);
      a0 = _mm256_fmadd_ps(v0, _mm256_load_ps(w + k * kNr), a0);
      a1 = _mm256_fmadd_ps(v0, _mm256_load_ps(w + k * kNr + 8), a1);
    }
    a0 = ClampV(_mm256_add_ps(a0, a2), vmin, vmax);
    a1 = ClampV(_mm256_add_ps(a1, a3), vmin, vmax);
    const size_t cols = std::min<size_t>(kNr, nc);
    if (cols == kNr) {
      _mm256_storeu_ps(c, a0);
      _mm256_storeu_ps(c + 8, a1);
    } else {
      _mm256_maskstore_ps(c, LaneMask(std::min<size_t>(cols, 8)), a0);
      if (cols > 8) _mm256_maskstore_ps(c + 8, LaneMask(cols - 8), a1);
    }
    nc -= cols;
  }
}

}  // namespace

const Ukernels& Avx2Ukernels() {
  static const Ukernels k{"avx2", kMr, kNr, Gemm6x16, Igemm6x16, Gemv1x16};
  return k;
}

}  // namespace edgeopt::kernels::gemm
