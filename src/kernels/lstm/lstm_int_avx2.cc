// AVX2 dot product of the integer LSTM's matrix-vector products (lstm_math.h, IntDotFn): int8 x
// int8 widened to int16, pairs summed by vpmaddwd into int32 lanes. Every product is at most 2^14
// and every pair sum at most 2^15, and integer sums are exact in any order: the same int32 as the
// scalar loop (modulo 2^32 like it, for rows too long for int32).
#include <immintrin.h>

#include "kernels/lstm/lstm_math.h"

namespace edgeopt::kernels::lstm {

int32_t DotS8Avx2(const int8_t* a, const int8_t* b, int n) {
  __m256i acc = _mm256_setzero_si256();
  int c = 0;
  for (; c + 16 <= n; c += 16) {
    const __m256i va = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + c)));
    const __m256i vb = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + c)));
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(va, vb));
  }
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  uint32_t sum = static_cast<uint32_t>(_mm_cvtsi128_si32(s));
  for (; c < n; ++c) sum += static_cast<uint32_t>(int32_t{a[c]} * b[c]);
  return static_cast<int32_t>(sum);
}

}  // namespace edgeopt::kernels::lstm
