// AVX-512 2-D transposes of 1-, 2- and 4-byte elements for TRANSPOSE (transform.h): 16x16 tiles
// loaded (narrow elements widened to 32 bits), transposed in registers and stored, masked at the
// edges.
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

namespace {

// One 16-lane row of a tile: n elements from p widened to 32 bits (zeros past n), and back.
inline __m512 LoadRow(const uint32_t* p, __mmask16 k) { return _mm512_castsi512_ps(_mm512_maskz_loadu_epi32(k, p)); }
inline __m512 LoadRow(const uint16_t* p, __mmask16 k) {
  return _mm512_castsi512_ps(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(k, p)));
}
inline __m512 LoadRow(const uint8_t* p, __mmask16 k) {
  return _mm512_castsi512_ps(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(k, p)));
}
inline void StoreRow(uint32_t* p, __mmask16 k, __m512 v) { _mm512_mask_storeu_epi32(p, k, _mm512_castps_si512(v)); }
inline void StoreRow(uint16_t* p, __mmask16 k, __m512 v) { _mm512_mask_cvtepi32_storeu_epi16(p, k, _mm512_castps_si512(v)); }
inline void StoreRow(uint8_t* p, __mmask16 k, __m512 v) { _mm512_mask_cvtepi32_storeu_epi8(p, k, _mm512_castps_si512(v)); }

template <typename T>
void Transpose2D(const T* a, int64_t a_stride, T* b, int64_t b_stride, int64_t rows, int64_t cols) {
  for (int64_t i0 = 0; i0 < rows; i0 += 16) {
    const int ni = static_cast<int>(std::min<int64_t>(16, rows - i0));
    const auto mi = static_cast<__mmask16>(ni == 16 ? 0xFFFF : (1u << ni) - 1u);
    for (int64_t j0 = 0; j0 < cols; j0 += 16) {
      const int nj = static_cast<int>(std::min<int64_t>(16, cols - j0));
      const auto mj = static_cast<__mmask16>(nj == 16 ? 0xFFFF : (1u << nj) - 1u);
      __m512 v[16];
      for (int r = 0; r < 16; ++r) v[r] = r < ni ? LoadRow(a + (i0 + r) * a_stride + j0, mj) : _mm512_setzero_ps();
      Transpose16(v);
      for (int c = 0; c < nj; ++c) StoreRow(b + (j0 + c) * b_stride + i0, mi, v[c]);
    }
  }
}

}  // namespace

void Transpose2D32Avx512(const uint32_t* a, int64_t a_stride, uint32_t* b, int64_t b_stride, int64_t rows,
                         int64_t cols) {
  Transpose2D(a, a_stride, b, b_stride, rows, cols);
}
void Transpose2D16Avx512(const uint16_t* a, int64_t a_stride, uint16_t* b, int64_t b_stride, int64_t rows,
                         int64_t cols) {
  Transpose2D(a, a_stride, b, b_stride, rows, cols);
}
void Transpose2D8Avx512(const uint8_t* a, int64_t a_stride, uint8_t* b, int64_t b_stride, int64_t rows,
                        int64_t cols) {
  Transpose2D(a, a_stride, b, b_stride, rows, cols);
}

}  // namespace edgeopt::kernels::transform
