// AVX2 dot products of the integer LSTM's matrix-vector products (lstm_math.h, IntRowsDotFn):
// int8 x int8 widened to int16, pairs summed by vpmaddwd into int32 lanes. Every product is at
// most 2^14 and every pair sum at most 2^15, and integer sums are exact in any order: the same
// int32 as the scalar loop (modulo 2^32 like it, for rows too long for int32).
#include <immintrin.h>

#include <cstring>

#include "kernels/lstm/lstm_math.h"

namespace edgeopt::kernels::lstm {
namespace {

// The 8 int32 lanes of each of a, b, c, d summed: lane j of the result is the sum of the j-th
// vector (j < 4).
inline __m128i Sum4(__m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i ab = _mm256_hadd_epi32(a, b), cd = _mm256_hadd_epi32(c, d);
  const __m256i abcd = _mm256_hadd_epi32(ab, cd);  // per 128-bit half: a, b, c, d partial sums
  return _mm_add_epi32(_mm256_castsi256_si128(abcd), _mm256_extracti128_si256(abcd, 1));
}

}  // namespace

void DotRowsS8Avx2(const int8_t* x, const int8_t* w, int n, int rows, int32_t* sums) {
  // x widened once: whole chunks of 16, and (n % 16 != 0) the tail as the chunk that ends at n,
  // its columns before the last whole chunk's end zeroed (read from each row at n - 16, inside
  // the row). Rows shorter than 16 take the portable loop; rows longer than kMaxChunks chunks
  // are summed one at a time, x widened as they go.
  constexpr int kMaxChunks = 64;
  if (n < 16) return DotRowsS8(x, w, n, rows, sums);
  const int whole = n / 16, tail = n % 16;
  if (whole > kMaxChunks) {
    for (int r = 0; r < rows; ++r) {
      const int8_t* wr = w + static_cast<int64_t>(r) * n;
      __m256i acc = _mm256_setzero_si256();
      int c = 0;
      for (; c + 16 <= n; c += 16)
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + c))),
                                                      _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wr + c)))));
      auto s = static_cast<uint32_t>(_mm_cvtsi128_si32(Sum4(acc, acc, acc, acc)));
      for (; c < n; ++c) s += static_cast<uint32_t>(int32_t{x[c]} * wr[c]);
      sums[r] = static_cast<int32_t>(s);
    }
    return;
  }
  __m256i xv[kMaxChunks + 1];
  for (int k = 0; k < whole; ++k) xv[k] = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + 16 * k)));
  if (tail) {
    alignas(16) int8_t t[16];
    std::memcpy(t, x + n - 16, 16);
    std::memset(t, 0, static_cast<size_t>(16 - tail));  // columns the whole chunks already hold
    xv[whole] = _mm256_cvtepi8_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(t)));
  }
  const auto row_acc = [&](const int8_t* wr) {
    __m256i acc = _mm256_setzero_si256();
    for (int k = 0; k < whole; ++k)
      acc = _mm256_add_epi32(acc, _mm256_madd_epi16(xv[k], _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wr + 16 * k)))));
    if (tail)
      acc = _mm256_add_epi32(acc, _mm256_madd_epi16(xv[whole], _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wr + n - 16)))));
    return acc;
  };
  int r = 0;
  for (; r + 4 <= rows; r += 4) {
    const int8_t* wr = w + static_cast<int64_t>(r) * n;
    const __m128i s = Sum4(row_acc(wr), row_acc(wr + n), row_acc(wr + 2 * n), row_acc(wr + 3 * n));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(sums + r), s);
  }
  for (; r < rows; ++r) {
    const __m256i a = row_acc(w + static_cast<int64_t>(r) * n);
    sums[r] = _mm_cvtsi128_si32(Sum4(a, a, a, a));
  }
}

}  // namespace edgeopt::kernels::lstm
