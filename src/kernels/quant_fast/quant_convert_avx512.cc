// AVX-512 QUANTIZE float32 -> int8 / uint8 / int16 (quant_convert.h), bit-exact with
// quantize/ref_quantize.cc without a division.
//
// The reference computes round_half_away(double(x) / scale). For |x / scale| < 2^28 this is
// round_half_away of the exact quotient t = x / s: x and s * (n + 1/2) are multiples of
// 2^min(ulp(x), ulp(s) / 2), so a t that is not a tie lies at least min(t, 1) * 2^-25 from every
// half-integer n + 1/2, far beyond the double quotient's error t * 2^-53, and a tie is exact in
// double. Its magnitude floor(|t| + 1/2) is computed in float: q = |x| * (1/s) is within
// |q| * 2^-23 of |t| (< 1/4 for q < 2^21), so with f = floor(q) the result is f + 1 where
// (f + 1/2) * s <= |x| and f otherwise, a comparison that one FMA decides exactly: the sign of
// fma(f + 1/2, s, -|x|) is the sign of the exact difference (f + 1/2 has at most 22 bits; for
// 2^-100 <= s <= 2^100 the difference, a multiple of 2^-149, neither underflows to zero nor
// overflows). Blocks with a lane of q >= 2^21, infinite or NaN go through the scalar formula.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>

// GCC 12's unmasked AVX-512 intrinsics start from a self-initialized "undefined" vector, which
// -Wmaybe-uninitialized reports at every inlined use (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/quant_fast/quant_convert.h"

namespace edgeopt::kernels::qconv {

bool QuantizeAvx512Applies(float scale) {
  return std::isfinite(scale) && scale >= 0x1p-100f && scale <= 0x1p100f;
}

namespace {

constexpr float kMaxQuotient = 0x1p21f;

// 16 results (int32, before the zero point); false when a lane is outside the fast range.
inline bool Quantize16(__m512 v, __m512 inv, __m512 s, __m512i* out) {
  const __m512 a = _mm512_abs_ps(v);
  const __m512 q = _mm512_mul_ps(a, inv);
  // Not below 2^21, or unordered (NaN): the scalar formula.
  if (_mm512_cmp_ps_mask(q, _mm512_set1_ps(kMaxQuotient), _CMP_NLT_UQ)) return false;
  const __m512 f = _mm512_roundscale_ps(q, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  const __m512 d = _mm512_fmsub_ps(_mm512_add_ps(f, _mm512_set1_ps(0.5f)), s, a);
  const __mmask16 up = _mm512_cmp_ps_mask(d, _mm512_setzero_ps(), _CMP_LE_OQ);
  __m512i m = _mm512_cvttps_epi32(f);
  m = _mm512_mask_add_epi32(m, up, m, _mm512_set1_epi32(1));
  // The sign of x (a negative x whose magnitude rounds to 0 gives 0 either way).
  const __mmask16 neg = _mm512_movepi32_mask(_mm512_castps_si512(v));
  *out = _mm512_mask_sub_epi32(m, neg, _mm512_setzero_si512(), m);
  return true;
}

// 16 results plus the zero point, saturated to T: results are at most 2^21 in magnitude, so
// + zp cannot wrap, and the saturating narrowing is the clamp to T's range (for uint8 after a
// max with 0, as the unsigned narrowing reads its input as unsigned).
template <typename T>
inline void Store16(T* y, __m512i r, __mmask16 k) {
  if constexpr (sizeof(T) == 2) {
    _mm512_mask_cvtsepi32_storeu_epi16(y, k, r);
  } else if constexpr (static_cast<T>(-1) < 0) {
    _mm512_mask_cvtsepi32_storeu_epi8(y, k, r);
  } else {
    _mm512_mask_cvtusepi32_storeu_epi8(y, k, _mm512_max_epi32(r, _mm512_setzero_si512()));
  }
}

}  // namespace

template <typename T>
void QuantizeFloatAvx512(const float* x, T* y, int64_t n, float scale, int32_t zero_point) {
  const __m512 s = _mm512_set1_ps(scale), inv = _mm512_set1_ps(1.0f / scale);
  const __m512i zp = _mm512_set1_epi32(zero_point);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512i r;
    if (Quantize16(_mm512_loadu_ps(x + i), inv, s, &r)) {
      Store16(y + i, _mm512_add_epi32(r, zp), 0xFFFF);
    } else {
      QuantizeFloatScalar(x + i, y + i, 16, scale, zero_point);
    }
  }
  if (i < n) {
    const __mmask16 k = static_cast<__mmask16>((1u << (n - i)) - 1);
    __m512i r;
    if (Quantize16(_mm512_maskz_loadu_ps(k, x + i), inv, s, &r)) {
      Store16(y + i, _mm512_add_epi32(r, zp), k);
    } else {
      QuantizeFloatScalar(x + i, y + i, n - i, scale, zero_point);
    }
  }
}

template void QuantizeFloatAvx512<int8_t>(const float*, int8_t*, int64_t, float, int32_t);
template void QuantizeFloatAvx512<uint8_t>(const float*, uint8_t*, int64_t, float, int32_t);
template void QuantizeFloatAvx512<int16_t>(const float*, int16_t*, int64_t, float, int32_t);

namespace {

// Byte-wise (int8 / uint8: 64 channels per vector) or word-wise (int16: 32) maxima of every
// channel over the window, clamped to [vlo, vhi] (set in T's lanes).
template <typename T>
__attribute__((always_inline)) inline void MaxPoolPixel(const T* in, int rows, int cols, int64_t row_stride,
                                                        int64_t col_stride, int channels, T* out, __m512i vlo,
                                                        __m512i vhi) {
  constexpr int kLanes = 64 / static_cast<int>(sizeof(T));
  using Mask = std::conditional_t<sizeof(T) == 2, __mmask32, __mmask64>;
  const auto load = [](Mask m, const T* p) {
    if constexpr (sizeof(T) == 2) return _mm512_maskz_loadu_epi16(m, p);
    else return _mm512_maskz_loadu_epi8(m, p);
  };
  const auto max = [](__m512i a, __m512i b) {
    if constexpr (sizeof(T) == 2) return _mm512_max_epi16(a, b);
    else if constexpr (std::is_signed_v<T>) return _mm512_max_epi8(a, b);
    else return _mm512_max_epu8(a, b);
  };
  const auto min = [](__m512i a, __m512i b) {
    if constexpr (sizeof(T) == 2) return _mm512_min_epi16(a, b);
    else if constexpr (std::is_signed_v<T>) return _mm512_min_epi8(a, b);
    else return _mm512_min_epu8(a, b);
  };
  for (int c = 0; c < channels; c += kLanes) {
    const Mask m = channels - c >= kLanes ? static_cast<Mask>(~Mask{0}) : static_cast<Mask>((Mask{1} << (channels - c)) - 1);
    // The window is never empty (ComputeWindow), so starting from its first value is exact.
    __m512i acc = load(m, in + c);
    for (int r = 0; r < rows; ++r) {
      const T* p = in + r * row_stride + c;
      for (int k = 0; k < cols; ++k, p += col_stride) acc = max(acc, load(m, p));
    }
    const __m512i y = min(max(acc, vlo), vhi);
    if constexpr (sizeof(T) == 2) _mm512_mask_storeu_epi16(out + c, m, y);
    else _mm512_mask_storeu_epi8(out + c, m, y);
  }
}

}  // namespace

template <typename T>
void MaxPoolRowAvx512(const T* in, int rows, int64_t row_stride, int in_w, int out_w, int stride_w, int pad_w,
                      int filter_w, int channels, T* out, int32_t lo, int32_t hi) {
  const __m512i vlo = sizeof(T) == 2 ? _mm512_set1_epi16(static_cast<int16_t>(lo)) : _mm512_set1_epi8(static_cast<char>(lo));
  const __m512i vhi = sizeof(T) == 2 ? _mm512_set1_epi16(static_cast<int16_t>(hi)) : _mm512_set1_epi8(static_cast<char>(hi));
  for (int ox = 0; ox < out_w; ++ox, out += channels) {
    const int x0 = ox * stride_w - pad_w;
    const int begin = std::max(0, x0), end = std::min(in_w, x0 + filter_w);
    MaxPoolPixel(in + int64_t{begin} * channels, rows, end - begin, row_stride, channels, channels, out, vlo, vhi);
  }
}

template void MaxPoolRowAvx512<int8_t>(const int8_t*, int, int64_t, int, int, int, int, int, int, int8_t*, int32_t,
                                       int32_t);
template void MaxPoolRowAvx512<uint8_t>(const uint8_t*, int, int64_t, int, int, int, int, int, int, uint8_t*, int32_t,
                                        int32_t);
template void MaxPoolRowAvx512<int16_t>(const int16_t*, int, int64_t, int, int, int, int, int, int, int16_t*, int32_t,
                                        int32_t);


namespace {

// 64 bytes as two vectors of 32 words (sign- or zero-extended), in byte order.
template <typename T>
inline void Widen64(const T* p, __m512i* lo, __m512i* hi) {
  const __m512i x = _mm512_loadu_si512(p);
  if constexpr (std::is_signed_v<T>) {
    *lo = _mm512_cvtepi8_epi16(_mm512_castsi512_si256(x));
    *hi = _mm512_cvtepi8_epi16(_mm512_extracti64x4_epi64(x, 1));
  } else {
    *lo = _mm512_cvtepu8_epi16(_mm512_castsi512_si256(x));
    *hi = _mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(x, 1));
  }
}

// 32 words added to 32 int32 sums in memory.
inline void AddWords(__m512i w, int32_t* acc) {
  const __m512i a = _mm512_cvtepi16_epi32(_mm512_castsi512_si256(w));
  const __m512i b = _mm512_cvtepi16_epi32(_mm512_extracti64x4_epi64(w, 1));
  _mm512_storeu_si512(acc, _mm512_add_epi32(_mm512_loadu_si512(acc), a));
  _mm512_storeu_si512(acc + 16, _mm512_add_epi32(_mm512_loadu_si512(acc + 16), b));
}

// Periods [0, periods) of kV 64-byte vectors each, per byte position summed into acc (kV * 64
// int32): word sums in registers over blocks of kBlock periods (|sum| <= 128 * 255 < 2^15), then
// widened into acc.
constexpr int64_t kBlock = 128;
template <typename T, int kV>
void SumPeriodsRegs(const T* x, int64_t periods, int32_t* acc) {
  for (int64_t p0 = 0; p0 < periods; p0 += kBlock) {
    __m512i w[2 * kV];
    for (auto& v : w) v = _mm512_setzero_si512();
    const int64_t p1 = std::min(periods, p0 + kBlock);
    for (int64_t p = p0; p < p1; ++p) {
      const T* q = x + p * kV * 64;
      for (int v = 0; v < kV; ++v) {
        __m512i lo, hi;
        Widen64(q + v * 64, &lo, &hi);
        w[2 * v] = _mm512_add_epi16(w[2 * v], lo);
        w[2 * v + 1] = _mm512_add_epi16(w[2 * v + 1], hi);
      }
    }
    for (int v = 0; v < 2 * kV; ++v) AddWords(w[v], acc + v * 32);
  }
}

// The same with the word sums in memory (longer periods).
template <typename T>
void SumPeriodsMemory(const T* x, int64_t periods, int vectors, int16_t* words, int32_t* acc) {
  for (int64_t p0 = 0; p0 < periods; p0 += kBlock) {
    std::fill_n(words, vectors * 64, int16_t{0});
    const int64_t p1 = std::min(periods, p0 + kBlock);
    for (int64_t p = p0; p < p1; ++p) {
      const T* q = x + p * vectors * 64;
      for (int v = 0; v < vectors; ++v) {
        __m512i lo, hi;
        Widen64(q + v * 64, &lo, &hi);
        int16_t* wv = words + v * 64;
        _mm512_storeu_si512(wv, _mm512_add_epi16(_mm512_loadu_si512(wv), lo));
        _mm512_storeu_si512(wv + 32, _mm512_add_epi16(_mm512_loadu_si512(wv + 32), hi));
      }
    }
    for (int v = 0; v < 2 * vectors; ++v) AddWords(_mm512_loadu_si512(words + v * 32), acc + v * 32);
  }
}

}  // namespace

template <typename T>
bool SumPixelsAvx512(const T* x, int64_t pixels, int channels, int32_t* sums) {
  static_assert(sizeof(T) == 1, "int8 or uint8");
  if (channels <= 0) return true;
  // The pixels are one run of bytes; byte k belongs to channel k mod channels, so every
  // lcm(channels, 64) bytes the pattern repeats: that many per-byte sums, then per channel.
  const int64_t period = std::lcm(int64_t{channels}, int64_t{64});
  if (period > kMaxSumPeriod) return false;
  const int vectors = static_cast<int>(period / 64);
  alignas(64) int32_t acc[kMaxSumPeriod];
  std::fill_n(acc, period, 0);
  const int64_t bytes = pixels * channels, periods = bytes / period;
  switch (vectors) {
    case 1: SumPeriodsRegs<T, 1>(x, periods, acc); break;
    case 2: SumPeriodsRegs<T, 2>(x, periods, acc); break;
    case 3: SumPeriodsRegs<T, 3>(x, periods, acc); break;
    case 4: SumPeriodsRegs<T, 4>(x, periods, acc); break;
    default: {
      alignas(64) int16_t words[kMaxSumPeriod];
      SumPeriodsMemory(x, periods, vectors, words, acc);
    }
  }
  for (int64_t k = periods * period; k < bytes; ++k) acc[k - periods * period] += x[k];
  for (int c = 0; c < channels; ++c) {
    uint32_t s = 0;  // wrapping, as the sequential int32 sum
    for (int64_t k = c; k < period; k += channels) s += static_cast<uint32_t>(acc[k]);
    sums[c] = static_cast<int32_t>(s);
  }
  return true;
}

template <typename T>
int32_t SumRowAvx512(const T* x, int64_t n) {
  static_assert(sizeof(T) == 1, "int8 or uint8");
  const __m512i flip = _mm512_set1_epi8(std::is_signed_v<T> ? static_cast<char>(0x80) : 0);
  const __m512i zero = _mm512_setzero_si512();
  __m512i acc = _mm512_setzero_si512();  // 8 qword sums of the (offset) bytes
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) acc = _mm512_add_epi64(acc, _mm512_sad_epu8(_mm512_xor_si512(_mm512_loadu_si512(x + i), flip), zero));
  if (i < n) {
    const __mmask64 k = (~__mmask64{0}) >> (64 - (n - i));
    // Masked-off bytes load as 0 and are flipped like the others: taken off with the offset below.
    acc = _mm512_add_epi64(acc, _mm512_sad_epu8(_mm512_xor_si512(_mm512_maskz_loadu_epi8(k, x + i), flip), zero));
  }
  int64_t total = _mm512_reduce_add_epi64(acc);
  if constexpr (std::is_signed_v<T>) total -= 128 * ((n + 63) / 64 * 64);
  return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(total)));
}

template int32_t SumRowAvx512<int8_t>(const int8_t*, int64_t);
template int32_t SumRowAvx512<uint8_t>(const uint8_t*, int64_t);
template bool SumPixelsAvx512<int8_t>(const int8_t*, int64_t, int, int32_t*);
template bool SumPixelsAvx512<uint8_t>(const uint8_t*, int64_t, int, int32_t*);

}  // namespace edgeopt::kernels::qconv
