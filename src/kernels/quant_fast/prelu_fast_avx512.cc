// AVX-512 BW part of the quantized PRELU (prelu_fast.cc): per byte, the positive branch where
// x >= the input zero point, else the negative one, 64 values at a time.
#include <immintrin.h>

#include <cstdint>
#include <type_traits>

#include "kernels/quant_fast/prelu_fast.h"

namespace edgeopt::kernels {

template <typename T>
void PreluMergeAvx512(const T* x, const T* pos, const T* neg, T* y, int64_t n, int32_t zp) {
  const __m512i z = _mm512_set1_epi8(static_cast<char>(zp));
  for (int64_t i = 0; i < n; i += 64) {
    const __mmask64 k = n - i >= 64 ? ~__mmask64{0} : (~__mmask64{0}) >> (64 - (n - i));
    const __m512i v = _mm512_maskz_loadu_epi8(k, x + i);
    const __mmask64 ge = std::is_signed_v<T> ? _mm512_cmpge_epi8_mask(v, z) : _mm512_cmpge_epu8_mask(v, z);
    const __m512i r = _mm512_mask_blend_epi8(ge, _mm512_maskz_loadu_epi8(k, neg + i), _mm512_maskz_loadu_epi8(k, pos + i));
    _mm512_mask_storeu_epi8(y + i, k, r);
  }
}

template void PreluMergeAvx512<int8_t>(const int8_t*, const int8_t*, const int8_t*, int8_t*, int64_t, int32_t);
template void PreluMergeAvx512<uint8_t>(const uint8_t*, const uint8_t*, const uint8_t*, uint8_t*, int64_t, int32_t);

}  // namespace edgeopt::kernels
