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

}  // namespace edgeopt::kernels::activations
