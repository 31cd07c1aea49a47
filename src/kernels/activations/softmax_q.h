// The AVX-512 rows of the 8-bit SOFTMAX (softmax_q_avx512.cc), taken by ref_softmax.cc outside
// the reference mode on CPUs with AVX-512: bit-exact with its Quantized rows.
#pragma once

#include <cstdint>

namespace edgeopt::kernels::activations {

// `outer` rows of `depth` values; table: ref_softmax.cc's 256 exp values (table[255 - d] for a
// distance d below the row maximum).
template <typename In, typename Out>
void SoftmaxQuantRowsAvx512(const In* x, Out* y, int64_t outer, int64_t depth, const float* table, float out_scale,
                            int32_t out_zp);

// SOFTMAX int16 -> int16 (LiteRT's SoftmaxInt16, ref_softmax.cc's Int16 rows) on AVX-512, 16
// values per step: the scaled difference to the row maximum through the exact vector
// MultiplyByQuantizedMultiplier, each LUT lookup's two neighbouring entries in one gather, the
// interpolation, the row's int32 sum, the reference's scalar reciprocal, then each value again
// times it (the product fits int32: both factors are below 2^15). exp_lut / one_over_lut:
// ref_softmax.cc's 513-entry tables; (mult, shift) its input rescale, shift <= kSoftmax16MaxShift
// (so that a difference of -65535 shifted left stays within int32).
inline constexpr int kSoftmax16MaxShift = 14;
void SoftmaxInt16RowsAvx512(const int16_t* x, int16_t* y, int64_t outer, int64_t depth, const int16_t* exp_lut,
                            const int16_t* one_over_lut, int32_t mult, int shift);

}  // namespace edgeopt::kernels::activations
