// int16 (16x8) RELU family, LOGISTIC and TANH on AVX2 (act16_avx2.cc), bit-exact with the
// reference kernels (activations/ref_relu.cc, ref_sigmoid.cc); act16_fast.cc wraps them.
#pragma once

#include <cstdint>

namespace edgeopt::kernels::act16 {

// y[i] = clamp(MultiplyByQuantizedMultiplier(x[i], mult, shift), lo, hi) (zero points 0).
void ReluRun(const int16_t* x, int16_t* y, int64_t n, int32_t mult, int shift, int32_t lo, int32_t hi);

// The reference's table path of int16 LOGISTIC (tanh = false) / TANH: the input rescaled,
// v = (x * mult + 2^(shift-1)) >> shift (exact in int32 for 0 <= mult <= 32767, shift <= 31),
// then linear interpolation in the 256-entry Q0.16 sigmoid table (lut.h SigmoidTableQ016),
// 8 values per step with one gather of each value's two neighbouring entries.
bool SigmoidApplies(int32_t mult, int shift);
void SigmoidRun(const int16_t* x, int16_t* y, int64_t n, bool tanh, int32_t mult, int shift);

}  // namespace edgeopt::kernels::act16
