// Vector pieces of the fast QUANTIZE / DEQUANTIZE / pooling kernels (AVX2, in quant_convert_avx2.cc).
#pragma once

#include <cstdint>

namespace edgeopt::kernels::qconv {

// y[i] = x[i] ^ 0x80 (int8 <-> uint8 with equal scales and zero points 128 apart).
void FlipSignBit(const uint8_t* x, uint8_t* y, int64_t n);

// QUANTIZE float32 -> T (int8, uint8, int16) as quantize/ref_quantize.cc:
// clamp(TruncateToInt32(round_half_away(double(x) / scale)) + zero_point).
template <typename T>
void QuantizeFloat(const float* x, T* y, int64_t n, double scale, int32_t zero_point);

// QUANTIZE float32 -> T (int8, uint8, int16) on AVX-512 (quant_convert_avx512.cc), the same
// results without a division; only for scales where QuantizeAvx512Applies (normal, within
// [2^-100, 2^100]).
bool QuantizeAvx512Applies(float scale);
template <typename T>
void QuantizeFloatAvx512(const float* x, T* y, int64_t n, float scale, int32_t zero_point);
// The reference formula, one value at a time (quantize_fast.cc; the AVX-512 loop's rare lanes
// outside its range: |x / scale| >= 2^21, infinities, NaN).
template <typename T>
void QuantizeFloatScalar(const float* x, T* y, int64_t n, float scale, int32_t zero_point);

// DEQUANTIZE T (int8, uint8, int16) -> float32 as quantize/ref_quantize.cc: float(scale * (x -
// zero_point)) with the product in double.
template <typename T>
void DequantizeInt(const T* x, float* y, int64_t n, double scale, int32_t zero_point);

// DEQUANTIZE float16 -> float32 with F16C (quant_convert_avx2.cc): every binary16 value is exact
// in float32, so this equals core/half.h's HalfToFloat for every non-NaN input (a signaling NaN
// comes out quiet).
void HalfToFloatF16c(const uint16_t* x, float* y, int64_t n);

// One output pixel of an int8/uint8/int16 pool over channels [0, c8) (c8 a multiple of 8): `in` points
// at channel 0 of the window's first input pixel; rows/cols the in-bounds window, row_stride and
// col_stride in elements. Average: sum rounded half away from zero over count = rows * cols
// (exact in float for count <= kMaxAverageCount: |sum| + count / 2 < 2^24, so the float quotient
// of the two exact integers, rounded once, truncates to the integer quotient; uint8 sums reach
// 255 * 65536 + 32768 < 2^24); max: the largest. Then clamp to [lo, hi].
constexpr int kMaxAverageCount = 65536;
// int16: |sum| + count / 2 < 2^24 with values down to -32768.
constexpr int kMaxAverageCount16 = 511;
// int16 global pools (integer division): |sum| + count / 2 <= 2^31 - 1, as the reference's int32.
constexpr int kMaxGlobalCount16 = 65535;
template <typename T>
void PoolPixel(bool average, const T* in, int rows, int cols, int64_t row_stride, int64_t col_stride, T* out, int c8,
               int32_t lo, int32_t hi);

// MAX_POOL_2D of one output row on AVX-512 (quant_convert_avx512.cc): per pixel the byte-wise
// (int16: word-wise, 32 per vector) maximum of every channel (64 per vector, masked tail) over the in-bounds window, clamped to
// [lo, hi]; out_w pixels, `channels` apart in `out`. `in` points at channel 0 of the image row
// of the windows' first in-bounds filter row, `rows` of them lie inside, row_stride elements
// apart; window ox starts at column ox * stride_w - pad_w and spans filter_w columns (clipped to
// [0, in_w)). One call per row: per pixel, the call and its setup cost more than a 2x2 window's
// four loads.
template <typename T>
void MaxPoolRowAvx512(const T* in, int rows, int64_t row_stride, int in_w, int out_w, int stride_w, int pad_w,
                      int filter_w, int channels, T* out, int32_t lo, int32_t hi);

}  // namespace edgeopt::kernels::qconv

namespace edgeopt::kernels::qconv {

// sums[c] = wrapping int32 sum of x[p * channels + c] over p < pixels (T int8, uint8, int16).
template <typename T>
void SumPixels(const T* x, int64_t pixels, int channels, int32_t* sums);

// The last step of a MEAN over H and W (4D, keep_dims) with signed T (int8, int16) as
// reduce/quant_mean.h's FinishQuantizedMean does it, 8 outputs at a time (bit-exact): y[o] =
// clamp(trunc((v +- n/2) / n) + out_zp), v = MultiplyByQuantizedMultiplier(raw_sum[o] -
// centered_offset, mult, shift), + for v > 0. n_out a multiple of 8 (the caller finishes the
// rest with the reference's loop). AVX2 (quant_convert_avx2.cc).
template <typename T>
void FinishCenteredMean(const int32_t* raw_sum, int64_t n_out, uint32_t centered_offset, int32_t mult, int shift,
                        int32_t n, int32_t out_zp, T* y);

// The same for int8 / uint8 on AVX-512 BW (quant_convert_avx512.cc): the pixels read as one run
// of bytes, 64 at a time, summed per byte position over lcm(channels, 64) positions in 16-bit
// lanes (128 at a time) and then per channel; false (nothing written) when lcm(channels, 64)
// exceeds kMaxSumPeriod.
constexpr int64_t kMaxSumPeriod = 8192;
template <typename T>
bool SumPixelsAvx512(const T* x, int64_t pixels, int channels, int32_t* sums);

// The wrapping int32 sum of n int8 / uint8 values on AVX-512 BW (quant_convert_avx512.cc): 64
// bytes at a time by vpsadbw (int8 offset by 128 into uint8 and the offset taken off at the end).
template <typename T>
int32_t SumRowAvx512(const T* x, int64_t n);

// The wrapping int32 sum of n values (T int8, uint8, int16): one row of a MEAN over the last axis.
template <typename T>
inline int32_t SumRow(const T* x, int64_t n, bool avx512) {
  if constexpr (sizeof(T) == 1) {
    if (avx512) return SumRowAvx512<T>(x, n);
  }
  uint32_t s = 0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<uint32_t>(static_cast<int32_t>(x[i]));
  return static_cast<int32_t>(s);
}

}  // namespace edgeopt::kernels::qconv
