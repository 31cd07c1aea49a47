// Helpers shared by the windowed neural-network kernels (convolutions, pooling, matmuls):
// window geometry with LiteRT's padding rules, fused activations with clear errors, and the
// validation of quantization parameters every quantized kernel needs.
#pragma once

#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "runtime/kernel.h"

namespace edgeopt::kernels {

// Requantization as TFLite 2.9's GEMM-based int8/uint8 kernels do it on x86 (CONV_2D, and the
// other ops routed through cpu_backend_gemm): ruy's AVX2 8-bit kernel rounds both steps half
// toward +infinity, (x * m + 2^30) >> 31 and then (v + 2^(s-1)) >> s, instead of the reference
// MultiplyByQuantizedMultiplier's ties away from zero. The two differ by 1 LSB on exact ties of
// the second step (about 1 output in 500), so kernels whose 2.9 counterpart runs through ruy use
// this one to stay bit-exact with it.
inline int32_t MultiplyByQuantizedMultiplierRuy(int32_t x, int32_t quantized_multiplier, int shift) {
  const int left = shift > 0 ? shift : 0;
  const int right = shift > 0 ? 0 : -shift;
  const auto shifted = static_cast<int32_t>(static_cast<uint32_t>(x) << left);
  const int64_t product = static_cast<int64_t>(shifted) * quantized_multiplier;
  const auto high = static_cast<int32_t>((product + (int64_t{1} << 30)) >> 31);
  if (right == 0) return high;
  const int32_t nudge = int32_t{1} << (right - 1);
  if (high > INT32_MAX - nudge) return int32_t{1} << (31 - right);  // ruy's overflow lane
  return (high + nudge) >> right;
}

// ruy's portable path (its kernels for sources wider than 8 bits, e.g. 16x8 FULLY_CONNECTED in
// 2.9): one rounding, half toward +infinity, of x * m * 2^(shift - 31).
inline int32_t MultiplyByQuantizedMultiplierSingleRound(int32_t x, int32_t quantized_multiplier, int shift) {
  const int total_shift = 31 - shift;
  const int64_t round = int64_t{1} << (total_shift - 1);
  return static_cast<int32_t>((static_cast<int64_t>(x) * quantized_multiplier + round) >> total_shift);
}

// Stride/dilation/filter of one spatial window; `padding` is tflite::Padding (SAME, VALID).
struct WindowSpec {
  int padding = 0;
  int stride_h = 1, stride_w = 1;
  int dilation_h = 1, dilation_w = 1;
  int filter_h = 1, filter_w = 1;
};

// Output size and leading padding of a window sliding over an in_h x in_w image.
struct WindowGeometry {
  int in_h = 0, in_w = 0;
  int out_h = 0, out_w = 0;
  int pad_h = 0, pad_w = 0;  // leading (top/left) padding; the trailing side gets the rest
};

// Validates the spec (positive strides, dilations and filter sizes, SAME or VALID padding) and
// computes the geometry as LiteRT's ComputePaddingHeightWidth. Errors name the op.
Status ComputeWindow(const rt::KernelContext& ctx, const WindowSpec& spec, int in_h, int in_w, WindowGeometry* g);

// Fused activation clamp bounds, or an Unsupported error naming the activation.
Status FloatActivation(const rt::KernelContext& ctx, int activation, float* lo, float* hi);
Status QuantizedActivation(const rt::KernelContext& ctx, int activation, const rt::RtTensor& output, int32_t* lo,
                           int32_t* hi);

// Name of a tflite::ActivationFunctionType ("RELU6").
std::string ActivationName(int activation);

// Requires a per-tensor scale and zero point on `t` (role names it in the message: "input").
Status RequirePerTensorQuant(const rt::KernelContext& ctx, const rt::RtTensor& t, const std::string& role);

// Requires quantization on weights `w`: one scale, or `channels` scales along `axis` (the
// per-channel case). With `symmetric`, every zero point must be 0 (int8/int16 weights).
Status RequireWeightQuant(const rt::KernelContext& ctx, const rt::RtTensor& w, int channels, int axis, bool symmetric);

// Weight scale of channel c (per-tensor weights: the one scale).
inline float WeightScale(const rt::RtTensor& w, int c) {
  return w.quant->scale.size() == 1 ? w.quant->scale[0] : w.quant->scale[c];
}

// LiteRT's uint8 kernels (GetQuantizedConvolutionMultipler) require a quantized bias to have scale
// input_scale * weight_scale (relative difference <= 1e-6). No-op when bias is null or unquantized.
Status CheckLegacyBiasScale(const rt::KernelContext& ctx, const rt::RtTensor& input, const rt::RtTensor& weights,
                            const rt::RtTensor* bias);

}  // namespace edgeopt::kernels
