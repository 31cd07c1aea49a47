// AVX-512 VNNI dot products for the hybrid kernels (hybrid_dot.h): tiles of up to 4 rows x 16
// units, one weight load and four vpdpbusd per group of 4 depths, then the float output stage.
// GCC 12's AVX-512 intrinsics start "undefined" vectors with a self-assignment that
// -Wuninitialized reports (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "kernels/hybrid/hybrid_dot.h"

namespace edgeopt::kernels::hybrid {
namespace {

// The products of MR rows x one block, then the output stage (hybrid_dot.h), stored as floats.
template <int MR>
void TileFloat(const PackedWeights& p, const uint8_t* a, size_t a_stride, int j0, int j1, const OutputStage& os,
               float* out, size_t out_stride) {
  const int groups = p.kp / 4;
  const __m512i zp = _mm512_set1_epi32(128 + os.zero_point);
  const __m512 lo = _mm512_set1_ps(os.lo), hi = _mm512_set1_ps(os.hi);
  for (int j = j0; j < j1; ++j) {
    const int8_t* w = p.w.data() + static_cast<size_t>(j) * p.kp * kUnits;
    __m512i acc[MR];
    for (int r = 0; r < MR; ++r) acc[r] = _mm512_setzero_si512();
    for (int g = 0; g < groups; ++g) {
      const __m512i wv = _mm512_loadu_si512(w + static_cast<size_t>(g) * 64);
      for (int r = 0; r < MR; ++r) {
        int32_t four;
        std::memcpy(&four, a + r * a_stride + static_cast<size_t>(g) * 4, 4);
        acc[r] = _mm512_dpbusd_epi32(acc[r], _mm512_set1_epi32(four), wv);
      }
    }
    const size_t u0 = static_cast<size_t>(j) * kUnits;
    // sum - (128 + zp)·Σw, wrapping like the reference's WrapToInt32.
    const __m512i bias_sum = _mm512_mullo_epi32(zp, _mm512_loadu_si512(p.sums.data() + u0));
    const __m512 scale = _mm512_loadu_ps(os.scale + u0), bias = _mm512_loadu_ps(os.bias + u0);
    const int left = p.n - static_cast<int>(u0);
    const __mmask16 m = left >= kUnits ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1u);
    for (int r = 0; r < MR; ++r) {
      const __m512 v = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc[r], bias_sum));
      // The product is not fused into the bias addition (kept apart by the asm barrier).
      __m512 prod = _mm512_mul_ps(v, scale);
      asm("" : "+v"(prod));
      // std::max(v, lo) is (v < lo ? lo : v), vmaxps(lo, v) the same (NaN stays), likewise min.
      const __m512 o = _mm512_min_ps(hi, _mm512_max_ps(lo, _mm512_add_ps(prod, bias)));
      _mm512_mask_storeu_ps(out + r * out_stride + u0, m, o);
    }
  }
}

}  // namespace

void DotVnniFloat(const PackedWeights& p, const uint8_t* a, size_t a_stride, int rows, int j0, int j1,
                  const OutputStage& os, float* out, size_t out_stride) {
  int r = 0;
  for (; r + 4 <= rows; r += 4) TileFloat<4>(p, a + r * a_stride, a_stride, j0, j1, os, out + r * out_stride, out_stride);
  switch (rows - r) {
    case 3: TileFloat<3>(p, a + r * a_stride, a_stride, j0, j1, os, out + r * out_stride, out_stride); break;
    case 2: TileFloat<2>(p, a + r * a_stride, a_stride, j0, j1, os, out + r * out_stride, out_stride); break;
    case 1: TileFloat<1>(p, a + r * a_stride, a_stride, j0, j1, os, out + r * out_stride, out_stride); break;
    default: break;
  }
}

}  // namespace edgeopt::kernels::hybrid
