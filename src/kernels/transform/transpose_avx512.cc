// AVX-512 2-D transposes of 4-byte elements for TRANSPOSE (transform.h): 16x16 tiles loaded,
// transposed in registers and stored, masked at the edges.
#include <algorithm>
#include <cstdint>

// GCC 12's unmasked AVX-512 intrinsics start from a self-initialized "undefined" vector, which
// -Wmaybe-uninitialized reports at every inlined use (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/common/lanes16_avx512.h"
#include "kernels/transform/transform.h"

namespace edgeopt::kernels::transform {

void Transpose2D32Avx512(const uint32_t* a, int64_t a_stride, uint32_t* b, int64_t b_stride, int64_t rows,
                         int64_t cols) {
  for (int64_t i0 = 0; i0 < rows; i0 += 16) {
    const int ni = static_cast<int>(std::min<int64_t>(16, rows - i0));
    const auto mi = static_cast<__mmask16>(ni == 16 ? 0xFFFF : (1u << ni) - 1u);
    for (int64_t j0 = 0; j0 < cols; j0 += 16) {
      const int nj = static_cast<int>(std::min<int64_t>(16, cols - j0));
      const auto mj = static_cast<__mmask16>(nj == 16 ? 0xFFFF : (1u << nj) - 1u);
      __m512 v[16];
      for (int r = 0; r < 16; ++r)
        v[r] = r < ni ? _mm512_castsi512_ps(_mm512_maskz_loadu_epi32(mj, a + (i0 + r) * a_stride + j0)) : _mm512_setzero_ps();
      Transpose16(v);
      for (int c = 0; c < nj; ++c) _mm512_mask_storeu_epi32(b + (j0 + c) * b_stride + i0, mi, _mm512_castps_si512(v[c]));
    }
  }
}

}  // namespace edgeopt::kernels::transform
