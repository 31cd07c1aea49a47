// Parameters of the quantized RELU family and of int16 LOGISTIC / TANH, computed once here for
// the reference kernels (ref_relu.cc, ref_sigmoid.cc) and the fast int16 kernels
// (quant_fast/act16_fast.cc), so that both use the same expressions.
#pragma once

#include <cstdint>

#include "kernels/common/quant_utils.h"
#include "runtime/kernel.h"
#include "graph/graph.h"

namespace edgeopt::kernels::activations {

// RELU, RELU6, RELU_N1_TO_1, RELU_0_TO_1 on a quantized type: y = clamp(out_zp +
// MultiplyByQuantizedMultiplier(x - in_zp, multiplier, shift), act_min, act_max).
struct QuantReluParams {
  int32_t multiplier = 0;
  int shift = 0;
  int32_t act_min = 0, act_max = 0;
};
// The op's float bounds (lo, hi: hi infinite for RELU).
void ReluBounds(tflite::BuiltinOperator op, float* lo, float* hi);
QuantReluParams ComputeQuantRelu(tflite::BuiltinOperator op, DType type, const rt::RtTensor& in,
                                 const rt::RtTensor& out);

// LEAKY_RELU's two quantized slopes (as TFLite 2.9's leaky_relu.cc: float products, then
// QuantizeMultiplier): input >= zero point: in_scale / out_scale; below: in_scale * alpha / out_scale.
struct LeakyReluMultipliers {
  int32_t identity = 0, alpha = 0;
  int identity_shift = 0, alpha_shift = 0;
};
inline LeakyReluMultipliers ComputeLeakyReluMultipliers(float in_scale, float alpha, float out_scale) {
  LeakyReluMultipliers m;
  QuantizeMultiplier(static_cast<double>(in_scale * alpha / out_scale), &m.alpha, &m.alpha_shift);
  QuantizeMultiplier(static_cast<double>(in_scale / out_scale), &m.identity, &m.identity_shift);
  return m;
}

// int16 LOGISTIC / TANH (zero points 0, output 2^-15): pot when the input scale is a power of
// two the gemmlowp fixed-point path takes (left_shift then as that path uses it); otherwise the
// input is rescaled to 1/(3*4096) per unit, (x * multiplier + 2^(left_shift-1)) >> left_shift,
// with multiplier in (16383.5, 32767] unless the scale is large.
struct Int16SigmoidScale {
  bool pot = false;
  int32_t multiplier = 0;  // 0 when pot
  int left_shift = 0;
};
Int16SigmoidScale ComputeInt16SigmoidScale(float in_scale, bool tanh);

}  // namespace edgeopt::kernels::activations
