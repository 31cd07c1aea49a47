// AVX-512 VNNI dot products for the hybrid kernels (hybrid_dot.h): tiles of up to 4 rows x 16
// units, one weight load and four vpdpbusd per group of 4 depths.
// GCC 12's AVX-512 intrinsics start "undefined" vectors with a self-assignment that
// -Wuninitialized reports (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "kernels/hybrid/hybrid_dot.h"

namespace edgeopt::kernels::hybrid {
namespace {

template <int MR>
void Tile(const PackedWeights& p, const uint8_t* a, size_t a_stride, int j0, int j1, int32_t* sums,
          size_t sums_stride) {
  const int groups = p.kp / 4;
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
    for (int r = 0; r < MR; ++r) _mm512_storeu_si512(sums + r * sums_stride + static_cast<size_t>(j) * kUnits, acc[r]);
  }
}

}  // namespace

void DotVnni(const PackedWeights& p, const uint8_t* a, size_t a_stride, int rows, int j0, int j1, int32_t* sums,
             size_t sums_stride) {
  int r = 0;
  for (; r + 4 <= rows; r += 4) Tile<4>(p, a + r * a_stride, a_stride, j0, j1, sums + r * sums_stride, sums_stride);
  switch (rows - r) {
    case 3: Tile<3>(p, a + r * a_stride, a_stride, j0, j1, sums + r * sums_stride, sums_stride); break;
    case 2: Tile<2>(p, a + r * a_stride, a_stride, j0, j1, sums + r * sums_stride, sums_stride); break;
    case 1: Tile<1>(p, a + r * a_stride, a_stride, j0, j1, sums + r * sums_stride, sums_stride); break;
    default: break;
  }
}

}  // namespace edgeopt::kernels::hybrid
