#include <algorithm>

// GCC 12's unmasked AVX-512 intrinsics start from a self-initialized "undefined" vector, which
// -Wmaybe-uninitialized reports at every inlined use (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/common/lanes16_avx512.h"
#include "kernels/gemm/gemm.h"

namespace edgeopt::kernels::gemm {
namespace {

// TAPS > 0: taps == TAPS and kc in (16 (BLOCKS - 1), 16 BLOCKS], the weights held in
// registers and two independent sums per row; TAPS == 0: any shape.
template <int TAPS, int BLOCKS>
void Rows(const float* const* ind, int mr, size_t m0, size_t m1, int taps, int kc, const float* w, float bias,
          MinMax mm, float* c) {
  const int blocks = (kc + 15) / 16;
  const __mmask16 last = static_cast<__mmask16>(kc % 16 == 0 ? 0xFFFF : (1u << (kc % 16)) - 1);
  const __m512 vb = _mm512_set1_ps(bias), lo = _mm512_set1_ps(mm.min), hi = _mm512_set1_ps(mm.max);
  constexpr int kVectors = TAPS > 0 ? TAPS * BLOCKS : 1;
  __m512 wv[kVectors];
  if constexpr (TAPS > 0) {
    for (int t = 0; t < TAPS; ++t)
      for (int b = 0; b < BLOCKS; ++b)
        wv[t * BLOCKS + b] = b + 1 < BLOCKS ? _mm512_loadu_ps(w + t * kc + 16 * b) : _mm512_maskz_loadu_ps(last, w + t * kc + 16 * b);
  }
  const size_t tile_stride = static_cast<size_t>(taps) * static_cast<size_t>(mr);
  size_t tile = m0 / static_cast<size_t>(mr);
  int r = static_cast<int>(m0 % static_cast<size_t>(mr));
  for (size_t p0 = m0; p0 < m1; p0 += 16) {
    const int n = static_cast<int>(std::min<size_t>(16, m1 - p0));
    __m512 acc[16];
    for (int j = 0; j < 16; ++j) acc[j] = _mm512_setzero_ps();
    for (int j = 0; j < n; ++j) {
      const float* const* tap = ind + tile * tile_stride + r;
      if (++r == mr) {
        r = 0;
        ++tile;
      }
      if constexpr (TAPS > 0) {
        __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
        _Pragma("GCC unroll 16")
        for (int i = 0; i < kVectors; ++i) {
          const int t = i / BLOCKS, b = i % BLOCKS;
          const float* x = tap[static_cast<size_t>(t) * mr] + 16 * b;
          const __m512 v = b + 1 < BLOCKS ? _mm512_loadu_ps(x) : _mm512_maskz_loadu_ps(last, x);
          if (i % 2 == 0) s0 = _mm512_fmadd_ps(v, wv[i], s0);
          else s1 = _mm512_fmadd_ps(v, wv[i], s1);
        }
        acc[j] = _mm512_add_ps(s0, s1);
      } else {
        __m512 sum = _mm512_setzero_ps();
        const float* wt = w;
        for (int t = 0; t < taps; ++t, wt += kc) {
          const float* x = tap[static_cast<size_t>(t) * mr];
          int b = 0;
          for (; b + 1 < blocks; ++b) sum = _mm512_fmadd_ps(_mm512_loadu_ps(x + 16 * b), _mm512_loadu_ps(wt + 16 * b), sum);
          sum = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(last, x + 16 * b), _mm512_maskz_loadu_ps(last, wt + 16 * b), sum);
        }
        acc[j] = sum;
      }
    }
    const __m512 y = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(ReduceLanes16(acc, [](__m512 x, __m512 y) { return _mm512_add_ps(x, y); }), vb), lo), hi);
    _mm512_mask_storeu_ps(c + p0, static_cast<__mmask16>((1u << n) - 1), y);
  }
}

template <int BLOCKS>
void ByTaps(const float* const* ind, int mr, size_t m0, size_t m1, int taps, int kc, const float* w, float bias,
            MinMax mm, float* c) {
  switch (taps) {
    case 1: return Rows<1, BLOCKS>(ind, mr, m0, m1, taps, kc, w, bias, mm, c);
    case 3: return Rows<3, BLOCKS>(ind, mr, m0, m1, taps, kc, w, bias, mm, c);
    case 5: return Rows<5, BLOCKS>(ind, mr, m0, m1, taps, kc, w, bias, mm, c);
    case 7: return Rows<7, BLOCKS>(ind, mr, m0, m1, taps, kc, w, bias, mm, c);
    default: return Rows<0, 1>(ind, mr, m0, m1, taps, kc, w, bias, mm, c);
  }
}

}  // namespace

void SingleChannelConvAvx512(const float* const* ind, int mr, size_t m0, size_t m1, int taps, int kc, const float* w,
                             float bias, MinMax mm, float* c) {
  switch ((kc + 15) / 16) {
    case 1: return ByTaps<1>(ind, mr, m0, m1, taps, kc, w, bias, mm, c);
    case 2: return ByTaps<2>(ind, mr, m0, m1, taps, kc, w, bias, mm, c);
    default: return Rows<0, 1>(ind, mr, m0, m1, taps, kc, w, bias, mm, c);
  }
}

}  // namespace edgeopt::kernels::gemm
