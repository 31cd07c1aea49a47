#include "kernels/common/quant_utils.h"

#include "tflite_generated.h"

namespace edgeopt::kernels {

bool QuantizedActivationRange(int activation, const rt::RtTensor& output, int32_t* act_min, int32_t* act_max) {
  const int32_t qmin = QMinOf(output.type);
  const int32_t qmax = QMaxOf(output.type);
  const float scale = output.scale();
  const int32_t zp = output.zero_point();
  auto quantize = [&](float f) { return zp + static_cast<int32_t>(std::round(f / scale)); };
  switch (activation) {
    case tflite::ActivationFunctionType_NONE:
      *act_min = qmin;
      *act_max = qmax;
      return true;
    case tflite::ActivationFunctionType_RELU:
      *act_min = std::max(qmin, quantize(0.0f));
      *act_max = qmax;
      return true;
    case tflite::ActivationFunctionType_RELU6:
      *act_min = std::max(qmin, quantize(0.0f));
      *act_max = std::min(qmax, quantize(6.0f));
      return true;
    case tflite::ActivationFunctionType_RELU_N1_TO_1:
      *act_min = std::max(qmin, quantize(-1.0f));
      *act_max = std::min(qmax, quantize(1.0f));
      return true;
    default:
      return false;
  }
}

bool FloatActivationRange(int activation, float* act_min, float* act_max) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  switch (activation) {
    case tflite::ActivationFunctionType_NONE:
      *act_min = -kInf;
      *act_max = kInf;
      return true;
    case tflite::ActivationFunctionType_RELU:
      *act_min = 0.0f;
      *act_max = kInf;
      return true;
    case tflite::ActivationFunctionType_RELU6:
      *act_min = 0.0f;
      *act_max = 6.0f;
      return true;
    case tflite::ActivationFunctionType_RELU_N1_TO_1:
      *act_min = -1.0f;
      *act_max = 1.0f;
      return true;
    default:
      return false;
  }
}

int ComputeOutSize(int padding, int image_size, int filter_size, int stride, int dilation) {
  const int effective = (filter_size - 1) * dilation + 1;
  if (stride == 0) return 0;
  if (padding == tflite::Padding_SAME) return (image_size + stride - 1) / stride;
  if (padding == tflite::Padding_VALID) return (image_size + stride - effective) / stride;
  return 0;
}

int ComputePadding(int stride, int dilation, int in_size, int filter_size, int out_size, int* offset) {
  const int effective = (filter_size - 1) * dilation + 1;
  int total = (out_size - 1) * stride + effective - in_size;
  total = total > 0 ? total : 0;
  *offset = total % 2;
  return total / 2;
}

PerChannelQuant ComputePerChannelQuant(float input_scale, const rt::RtTensor& filter, float output_scale,
                                       int num_channels) {
  PerChannelQuant q;
  q.multiplier.resize(num_channels);
  q.shift.resize(num_channels);
  const bool per_channel = filter.quant && filter.quant->scale.size() > 1;
  for (int c = 0; c < num_channels; ++c) {
    const float ws = filter.quant ? filter.quant->scale[per_channel ? c : 0] : 0.0f;
    const double eff = static_cast<double>(input_scale) * static_cast<double>(ws) / static_cast<double>(output_scale);
    QuantizeMultiplier(eff, &q.multiplier[c], &q.shift[c]);
  }
  return q;
}

double LegacyConvMultiplier(float input_scale, float filter_scale, float output_scale) {
  const double product = static_cast<double>(input_scale * filter_scale);
  return product / static_cast<double>(output_scale);
}

}  // namespace edgeopt::kernels
