// AVX2 int16 RELU family, LOGISTIC and TANH (act16.h).
#include <immintrin.h>

#include <algorithm>
#include <cstdlib>

#include "kernels/common/lut.h"
#include "kernels/common/quant_utils.h"
#include "kernels/quant_fast/act16.h"
#include "kernels/quant_fast/quant_avx2_util.h"

namespace edgeopt::kernels::act16 {
namespace {

using avx2q::Load8;

// 8 int32 lanes truncated to int16 (the values' low halves), stored.
inline void Store8Trunc(int16_t* p, __m256i v) {
  const __m256i lows = _mm256_shuffle_epi8(v, _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1,
                                                                0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1));
  const __m256i packed = _mm256_permute4x64_epi64(lows, 0x08);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(packed));
}

// Runs f over whole blocks of 8 and the tail through an 8-value buffer.
template <typename F>
void ForBlocks(const int16_t* x, int16_t* y, int64_t n, F&& f) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) f(x + i, y + i);
  if (i < n) {
    alignas(16) int16_t tx[8] = {}, ty[8];
    std::copy(x + i, x + n, tx);
    f(tx, ty);
    std::copy(ty, ty + (n - i), y + i);
  }
}

}  // namespace

void ReluRun(const int16_t* x, int16_t* y, int64_t n, int32_t mult, int shift, int32_t lo, int32_t hi) {
  const avx2q::Requant r(mult, shift);
  const __m256i vlo = _mm256_set1_epi32(lo), vhi = _mm256_set1_epi32(hi);
  ForBlocks(x, y, n, [&](const int16_t* px, int16_t* py) {
    // lo and hi lie in int16's range, so the saturating pack keeps the clamped values.
    avx2q::Store8(py, _mm256_min_epi32(_mm256_max_epi32(r(Load8(px)), vlo), vhi));
  });
}

bool SigmoidApplies(int32_t mult, int shift) { return mult >= 0 && mult <= 32767 && shift >= 0 && shift <= 31; }

void SigmoidRun(const int16_t* x, int16_t* y, int64_t n, bool tanh, int32_t mult, int shift) {
  const auto* table = reinterpret_cast<const int*>(SigmoidTableQ016().data());
  const __m256i vm = _mm256_set1_epi32(mult);
  const __m256i round = _mm256_set1_epi32(shift > 0 ? int32_t{1} << (shift - 1) : 0);
  const __m128i count = _mm_cvtsi32_si128(shift);
  // Logistic: 9 fraction bits per table step; tanh (2 * sigmoid(2x) - 1): 8.
  const int frac = tanh ? 8 : 9;
  const __m128i fcount = _mm_cvtsi32_si128(frac);
  const __m256i fmask = _mm256_set1_epi32((1 << frac) - 1);
  const __m256i last = _mm256_set1_epi32(254);
  const __m256i low16 = _mm256_set1_epi32(0xFFFF);
  // Saturated magnitude: 0x7FFF << 10 (logistic) or 0xFFFF << 8 (tanh).
  const __m256i sat_value = _mm256_set1_epi32(tanh ? 0xFFFF << 8 : 0x7FFF << 10);
  const __m256i zero = _mm256_setzero_si256();
  ForBlocks(x, y, n, [&](const int16_t* px, int16_t* py) {
    // x * mult fits int32 (|x| <= 2^15, mult < 2^15) and so does the sum with 2^(shift-1).
    const __m256i input = _mm256_sra_epi32(_mm256_add_epi32(_mm256_mullo_epi32(Load8(px), vm), round), count);
    const __m256i abs_input = _mm256_abs_epi32(input);
    const __m256i uh = _mm256_srl_epi32(abs_input, fcount);
    const __m256i ut = _mm256_and_si256(abs_input, fmask);
    const __m256i saturated = _mm256_cmpgt_epi32(uh, last);  // uh >= 255
    // Entries uh and uh + 1 in one 4-byte gather (uh clamped to 254 for the saturated lanes, so
    // that no read passes the table's 256 entries).
    const __m256i pair = _mm256_i32gather_epi32(table, _mm256_min_epi32(uh, last), 2);
    const __m256i ua = _mm256_and_si256(pair, low16), ub = _mm256_srli_epi32(pair, 16);
    __m256i result = _mm256_add_epi32(_mm256_sll_epi32(ua, fcount), _mm256_mullo_epi32(ut, _mm256_sub_epi32(ub, ua)));
    result = _mm256_blendv_epi8(result, sat_value, saturated);
    const __m256i negative = _mm256_cmpgt_epi32(zero, input);
    __m256i out;
    if (tanh) {
      // input >= 0: result - 2^23 + 2^7; else -result + 2^23 + 2^7 - 1; then >> 8 (arithmetic).
      const __m256i pos = _mm256_add_epi32(result, _mm256_set1_epi32(-(1 << 23) + (1 << 7)));
      const __m256i neg = _mm256_sub_epi32(_mm256_set1_epi32((1 << 23) + (1 << 7) - 1), result);
      out = _mm256_srai_epi32(_mm256_blendv_epi8(pos, neg, negative), 8);
    } else {
      // input >= 0: result + 2^9; else 2^25 - result + 2^9 - 1; then >> 10 (logical, uint32).
      const __m256i pos = _mm256_add_epi32(result, _mm256_set1_epi32(1 << 9));
      const __m256i neg = _mm256_sub_epi32(_mm256_set1_epi32((1 << 25) + (1 << 9) - 1), result);
      out = _mm256_srli_epi32(_mm256_blendv_epi8(pos, neg, negative), 10);
    }
    Store8Trunc(py, out);
  });
}

}  // namespace edgeopt::kernels::act16
