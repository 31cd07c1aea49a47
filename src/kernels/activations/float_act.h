// Float32 elementwise activations (fast path of RELU, RELU6, RELU_N1_TO_1, RELU_0_TO_1,
// LEAKY_RELU, HARD_SWISH, LOGISTIC, TANH): the per-ISA loops and what they promise.
//
// Clamp, LEAKY_RELU and HARD_SWISH evaluate the reference formula operation by operation, so
// they are bit-exact with ref_relu.cc (NaN and -0 included). LOGISTIC and TANH use a vectorized
// exp (Cody-Waite reduction by ln 2, degree-6 polynomial, exponent bits for 2^n); their error
// against the reference's std::exp / std::tanh, measured over a dense sweep of all finite
// floats in [-100, 100] (activations/float_act_test.cc), is at most kLogisticMaxRelError /
// kTanhMaxRelError relative error or kFloatActMaxAbsError absolute error, whichever is larger
// (measured: 1.7e-7 and 2.7e-7 relative). +-inf map to the limits (0/1, -1/1), NaN stays NaN.
#pragma once

#include <cstdint>

namespace edgeopt::kernels::activations {

enum class FloatAct { kClamp, kLeakyRelu, kHardSwish, kLogistic, kTanh };

struct FloatActParams {
  FloatAct act = FloatAct::kClamp;
  float lo = 0, hi = 0;  // kClamp bounds (hi may be +inf)
  float alpha = 0;       // kLeakyRelu
};

// Bounds the test checks LOGISTIC / TANH against (see above).
constexpr double kLogisticMaxRelError = 2.5e-7;
constexpr double kTanhMaxRelError = 3e-7;
constexpr double kFloatActMaxAbsError = 1e-9;

using FloatActFn = void (*)(const FloatActParams& p, const float* x, float* y, int64_t n);

void FloatActPortable(const FloatActParams& p, const float* x, float* y, int64_t n);
void FloatActAvx2(const FloatActParams& p, const float* x, float* y, int64_t n);    // float_act_avx2.cc
void FloatActAvx512(const FloatActParams& p, const float* x, float* y, int64_t n);  // float_act_avx512.cc

}  // namespace edgeopt::kernels::activations
