// AVX2 QUANTIZE float -> int, int8 <-> uint8 sign flips and int8/uint8 pooling (quant_convert.h),
// bit-exact with the reference kernels.
#include <cstring>
#include <limits>

#include "kernels/quant_fast/quant_avx2_util.h"
#include "kernels/quant_fast/quant_convert.h"

namespace edgeopt::kernels::qconv {

void FlipSignBit(const uint8_t* x, uint8_t* y, int64_t n) {
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  int64_t i = 0;
  for (; i + 32 <= n; i += 32)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i),
                        _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)), flip));
  for (; i < n; ++i) y[i] = static_cast<uint8_t>(x[i] ^ 0x80);
}

namespace {

// round half away from zero of double lanes: truncate, then step by one where the dropped
// fraction is at least one half (t - trunc(t) is exact).
inline __m256d RoundHalfAway(__m256d t) {
  const __m256d tr = _mm256_round_pd(t, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256d frac = _mm256_sub_pd(t, tr);
  const __m256d one = _mm256_set1_pd(1.0);
  const __m256d up = _mm256_and_pd(_mm256_cmp_pd(frac, _mm256_set1_pd(0.5), _CMP_GE_OQ), one);
  const __m256d down = _mm256_and_pd(_mm256_cmp_pd(frac, _mm256_set1_pd(-0.5), _CMP_LE_OQ), one);
  return _mm256_sub_pd(_mm256_add_pd(tr, up), down);
}

}  // namespace

template <typename T>
void QuantizeFloat(const float* x, T* y, int64_t n, double scale, int32_t zero_point) {
  constexpr int32_t kLo = sizeof(T) == 2 ? -32768 : static_cast<T>(-1) < 0 ? -128 : 0;
  constexpr int32_t kHi = sizeof(T) == 2 ? 32767 : static_cast<T>(-1) < 0 ? 127 : 255;
  const __m256d s = _mm256_set1_pd(scale);
  const __m256i zp = _mm256_set1_epi32(zero_point);
  const __m256i lo = _mm256_set1_epi32(kLo), hi = _mm256_set1_epi32(kHi);
  auto block = [&](const float* px, T* py) {
    const __m256 v = _mm256_loadu_ps(px);
    // cvttpd gives INT32_MIN for NaN and out-of-range values, as TruncateToInt32.
    const __m128i q0 = _mm256_cvttpd_epi32(RoundHalfAway(_mm256_div_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)), s)));
    const __m128i q1 = _mm256_cvttpd_epi32(RoundHalfAway(_mm256_div_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)), s)));
    const __m256i q = _mm256_add_epi32(_mm256_set_m128i(q1, q0), zp);
    avx2q::Store8(py, _mm256_min_epi32(_mm256_max_epi32(q, lo), hi));
  };
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) block(x + i, y + i);
  if (i < n) {
    float tx[8] = {};
    T ty[8];
    std::memcpy(tx, x + i, (n - i) * sizeof(float));
    block(tx, ty);
    std::memcpy(y + i, ty, (n - i) * sizeof(T));
  }
}

template void QuantizeFloat<int8_t>(const float*, int8_t*, int64_t, double, int32_t);
template void QuantizeFloat<uint8_t>(const float*, uint8_t*, int64_t, double, int32_t);
template void QuantizeFloat<int16_t>(const float*, int16_t*, int64_t, double, int32_t);

template <typename T>
void DequantizeInt(const T* x, float* y, int64_t n, double scale, int32_t zero_point) {
  // The reference multiplies in double and rounds to float: with a float scale (24 bits) and
  // x - zero_point of at most 17 bits the double product is exact, so its rounding to float is
  // the single rounding of the float product (x - zero_point is exact in float too).
  const float scale_f = static_cast<float>(scale);
  const bool float_exact = static_cast<double>(scale_f) == scale;
  const __m256 sf = _mm256_set1_ps(scale_f);
  const __m256d s = _mm256_set1_pd(scale);
  const __m256i zp = _mm256_set1_epi32(zero_point);
  auto block = [&](const T* px, float* py) {
    const __m256i v = _mm256_sub_epi32(avx2q::Load8(px), zp);
    if (float_exact) {
      _mm256_storeu_ps(py, _mm256_mul_ps(_mm256_cvtepi32_ps(v), sf));
      return;
    }
    // int32 -> double is exact; the double product and its rounding to float are the reference's.
    const __m128 lo = _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(v)), s));
    const __m128 hi = _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(v, 1)), s));
    _mm256_storeu_ps(py, _mm256_set_m128(hi, lo));
  };
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) block(x + i, y + i);
  if (i < n) {
    T tx[8] = {};
    float ty[8];
    std::memcpy(tx, x + i, (n - i) * sizeof(T));
    block(tx, ty);
    std::memcpy(y + i, ty, (n - i) * sizeof(float));
  }
}

template void DequantizeInt<int8_t>(const int8_t*, float*, int64_t, double, int32_t);
template void DequantizeInt<uint8_t>(const uint8_t*, float*, int64_t, double, int32_t);
template void DequantizeInt<int16_t>(const int16_t*, float*, int64_t, double, int32_t);

template <typename T>
void PoolPixel(bool average, const T* in, int rows, int cols, int64_t row_stride, int64_t col_stride, T* out, int c8,
               int32_t lo, int32_t hi) {
  const __m256i vlo = _mm256_set1_epi32(lo), vhi = _mm256_set1_epi32(hi);
  const int count = rows * cols;
  const __m256 fcount = _mm256_set1_ps(static_cast<float>(count));
  const __m256i half = _mm256_set1_epi32(count / 2);
  for (int c = 0; c < c8; c += 8) {
    __m256i acc = average ? _mm256_setzero_si256() : _mm256_set1_epi32(INT32_MIN);
    for (int r = 0; r < rows; ++r) {
      const T* p = in + r * row_stride + c;
      for (int k = 0; k < cols; ++k, p += col_stride)
        acc = average ? _mm256_add_epi32(acc, avx2q::Load8(p)) : _mm256_max_epi32(acc, avx2q::Load8(p));
    }
    if (average) {
      // (sum + count/2) / count for sum > 0, (sum - count/2) / count otherwise, truncating: the
      // numerator is below 2^24 in magnitude (count <= kMaxAverageCount), so the float quotient,
      // correctly rounded, is within (sum / count) 2^-24 < 1 / count of the exact one and
      // truncates to the integer quotient.
      const __m256i positive = _mm256_cmpgt_epi32(acc, _mm256_setzero_si256());
      const __m256i num = _mm256_blendv_epi8(_mm256_sub_epi32(acc, half), _mm256_add_epi32(acc, half), positive);
      acc = _mm256_cvttps_epi32(_mm256_div_ps(_mm256_cvtepi32_ps(num), fcount));
    }
    avx2q::Store8(out + c, _mm256_min_epi32(_mm256_max_epi32(acc, vlo), vhi));
  }
}

template void PoolPixel<int8_t>(bool, const int8_t*, int, int, int64_t, int64_t, int8_t*, int, int32_t, int32_t);
template void PoolPixel<uint8_t>(bool, const uint8_t*, int, int, int64_t, int64_t, uint8_t*, int, int32_t, int32_t);
template void PoolPixel<int16_t>(bool, const int16_t*, int, int, int64_t, int64_t, int16_t*, int, int32_t, int32_t);

}  // namespace edgeopt::kernels::qconv

namespace edgeopt::kernels::qconv {

template <typename T>
void SumPixels(const T* x, int64_t pixels, int channels, int32_t* sums) {
  const int c8 = channels / 8 * 8;
  for (int c = 0; c < c8; c += 8) {
    __m256i acc = _mm256_setzero_si256();
    const T* p = x + c;
    for (int64_t i = 0; i < pixels; ++i, p += channels) acc = _mm256_add_epi32(acc, avx2q::Load8(p));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(sums + c), acc);
  }
  for (int c = c8; c < channels; ++c) {
    uint32_t acc = 0;
    for (int64_t i = 0; i < pixels; ++i) acc += static_cast<uint32_t>(static_cast<int32_t>(x[i * channels + c]));
    sums[c] = static_cast<int32_t>(acc);
  }
}

template <typename T>
void FinishCenteredMean(const int32_t* raw_sum, int64_t n_out, uint32_t centered_offset, int32_t mult, int shift,
                        int32_t n, int32_t out_zp, T* y) {
  const avx2q::Requant r(mult, shift);
  const __m256i off = _mm256_set1_epi32(static_cast<int32_t>(centered_offset)), zp = _mm256_set1_epi32(out_zp);
  const __m256i lo = _mm256_set1_epi32(std::numeric_limits<T>::min()), hi = _mm256_set1_epi32(std::numeric_limits<T>::max());
  const __m256d half = _mm256_set1_pd(n / 2), neg_half = _mm256_set1_pd(-(n / 2)), dn = _mm256_set1_pd(n),
                zero = _mm256_setzero_pd();
  // trunc((v + n/2) / n) for v > 0, trunc((v - n/2) / n) otherwise, on 4 lanes: v and n/2 are
  // exact doubles and so is their sum (|sum| < 2^33), and the division and the truncation are
  // the scalar code's.
  const auto quotient = [&](__m128i v4) {
    const __m256d v = _mm256_cvtepi32_pd(v4);
    const __m256d add = _mm256_blendv_pd(neg_half, half, _mm256_cmp_pd(v, zero, _CMP_GT_OQ));
    return _mm256_cvttpd_epi32(_mm256_div_pd(_mm256_add_pd(v, add), dn));
  };
  for (int64_t o = 0; o < n_out; o += 8) {
    const __m256i v = r(_mm256_sub_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(raw_sum + o)), off));
    const __m256i q = _mm256_set_m128i(quotient(_mm256_extracti128_si256(v, 1)), quotient(_mm256_castsi256_si128(v)));
    avx2q::Store8(y + o, _mm256_min_epi32(_mm256_max_epi32(_mm256_add_epi32(q, zp), lo), hi));
  }
}

template void FinishCenteredMean<int8_t>(const int32_t*, int64_t, uint32_t, int32_t, int, int32_t, int32_t, int8_t*);
template void FinishCenteredMean<int16_t>(const int32_t*, int64_t, uint32_t, int32_t, int, int32_t, int32_t, int16_t*);

template void SumPixels<int8_t>(const int8_t*, int64_t, int, int32_t*);
template void SumPixels<uint8_t>(const uint8_t*, int64_t, int, int32_t*);
template void SumPixels<int16_t>(const int16_t*, int64_t, int, int32_t*);

}  // namespace edgeopt::kernels::qconv

namespace edgeopt::kernels::qconv {

void HalfToFloatF16c(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
  if (i < n) {
    alignas(16) uint16_t tail[8] = {};
    alignas(32) float out[8];
    std::memcpy(tail, x + i, static_cast<size_t>(n - i) * sizeof(uint16_t));
    _mm256_store_ps(out, _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(tail))));
    std::memcpy(y + i, out, static_cast<size_t>(n - i) * sizeof(float));
  }
}

}  // namespace edgeopt::kernels::qconv
