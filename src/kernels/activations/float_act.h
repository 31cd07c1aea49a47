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

namespace edgeopt::rt {
class ThreadPool;
}  // namespace edgeopt::rt

namespace edgeopt::kernels::activations {

// The unary math ops: SQRT, RSQRT (1 / sqrt), ABS, NEG, FLOOR, CEIL and SQUARE are one or two
// IEEE operations per element, bit-exact with the reference (unary/ref.cc); EXP and LOG are
// polynomial, within kExpMaxRelError / kLogMaxRelError relative error (or
// kFloatActMaxAbsError absolute) of std::exp / std::log over the same sweep, with the
// reference's special values (exp: 0 and inf beyond the range, denormal results kept; log:
// -inf at +-0, NaN below 0, inf at inf).
// GELU: the exact form x/2 (1 + erf(x / sqrt 2)) with erf from Abramowitz & Stegun 7.1.26
// (|error| <= 1.5e-7) on the vectorized exp, and 1 + erf taken as 2 - erfc for x >= 0 and erfc
// for x < 0 (no cancellation); the approximate form x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
// with the vectorized tanh. Both within kGeluMaxErrorPerX * |x| (or kFloatActMaxAbsError) of the
// reference's std::erf / std::tanh forms: an error relative to x, not to the output, which goes
// to 0 for large negative x while the reference's own 1 + erf cancels there.
enum class FloatAct {
  kClamp, kLeakyRelu, kHardSwish, kLogistic, kTanh,
  kSqrt, kRsqrt, kAbs, kNeg, kFloor, kCeil, kSquare, kExp, kLog,
  kGelu, kGeluApprox, kElu,
  // x * LOGISTIC(x) (SiLU / swish): the product of x and the kLogistic value, so bit-identical
  // with a LOGISTIC followed by a MUL of its input (kernels/fused/silu_f32.cc runs the pair as
  // one pass); against x * (1 / (1 + e^-x)) within kSiluMaxErrorPerX * |x| (as GELU, an error
  // relative to x: for x below -88 LOGISTIC's absolute error, up to kFloatActMaxAbsError, times
  // |x| where the reference's e^-x overflows to a product of exactly 0).
  kSilu
};

struct FloatActParams {
  FloatAct act = FloatAct::kClamp;
  float lo = 0, hi = 0;  // kClamp bounds (hi may be +inf)
  float alpha = 0;       // kLeakyRelu
};

// Bounds the test checks LOGISTIC / TANH against (see above).
constexpr double kLogisticMaxRelError = 2.5e-7;
constexpr double kTanhMaxRelError = 3e-7;
constexpr double kSiluMaxErrorPerX = 3.2e-7;
constexpr double kFloatActMaxAbsError = 1e-9;
constexpr double kExpMaxRelError = 3e-7;
constexpr double kLogMaxRelError = 3e-7;
// ELU (x > 0 ? x : e^x - 1): for x > -0.35 the Taylor series of e^x - 1 to x^8 (no
// cancellation), below that the vectorized exp minus 1; within kEluMaxRelError of std::expm1.
constexpr double kEluMaxRelError = 3e-7;  // measured 1.94e-7
constexpr double kGeluMaxErrorPerX = 4e-7;  // measured 2.94e-7 (exact form), 2.07e-7 (approximate)

using FloatActFn = void (*)(const FloatActParams& p, const float* x, float* y, int64_t n);

// SOFTMAX / LOG_SOFTMAX float32 over `rows` rows of `depth` (the reference: ref_softmax.cc):
// the row maximum as the reference finds it (NaN skipped, from the lowest float), then
// e^((x - max) * beta) with the exp above, summed in vector lanes, and y = e / sum, or for
// LOG_SOFTMAX x - max - log(sum). Against the reference (whose sum runs in order), a SOFTMAX
// output is within kSoftmaxMaxRelError relative or kFloatActMaxAbsError absolute error: the
// exp's error and two sums of the same terms in different orders (<= depth/lanes + lanes
// roundings each, relative to the sum). A LOG_SOFTMAX output differs only by log(sum)'s error,
// at most kSoftmaxMaxRelError absolute (relative to |y| >= log(sum) beyond 1). Terms below
// e^-87.3 count as 0 (the reference: 0 or a denormal). Rows holding NaN or +inf, or only -inf,
// give NaN as the reference does; -inf among finite values gives 0 (LOG_SOFTMAX: -inf).
struct SoftmaxParams {
  float beta = 1;
  bool log = false;
};
constexpr double kSoftmaxMaxRelError = 2e-6;
using SoftmaxFn = void (*)(const SoftmaxParams& p, const float* x, float* y, int64_t rows, int64_t depth);
void SoftmaxAvx2(const SoftmaxParams& p, const float* x, float* y, int64_t rows, int64_t depth);    // float_act_avx2.cc
void SoftmaxAvx512(const SoftmaxParams& p, const float* x, float* y, int64_t rows, int64_t depth);  // float_act_avx512.cc

// PRELU float32 (y = x >= 0 ? x : x * alpha, the reference's expression: bit-exact, NaN and -0
// included) over n elements with n alpha values; the kernel walks the input in runs along which
// alpha repeats (alpha broadcast over leading dimensions only).
using PreluFn = void (*)(const float* x, const float* alpha, float* y, int64_t n);
void PreluPortable(const float* x, const float* alpha, float* y, int64_t n);
void PreluAvx2(const float* x, const float* alpha, float* y, int64_t n);    // float_act_avx2.cc
void PreluAvx512(const float* x, const float* alpha, float* y, int64_t n);  // float_act_avx512.cc

// fn over n elements split into tasks of the pool (at least 4096 elements each for the
// transcendental acts, 32768 for the others; bounds on multiples of 16, so only the last task
// has a tail): what the float activation kernels and the fused SiLU run.
void RunFloatAct(rt::ThreadPool& pool, FloatActFn fn, const FloatActParams& p, const float* x, float* y, int64_t n);

void FloatActPortable(const FloatActParams& p, const float* x, float* y, int64_t n);
void FloatActAvx2(const FloatActParams& p, const float* x, float* y, int64_t n);    // float_act_avx2.cc
void FloatActAvx512(const FloatActParams& p, const float* x, float* y, int64_t n);  // float_act_avx512.cc

}  // namespace edgeopt::kernels::activations
