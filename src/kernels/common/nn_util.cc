#include "kernels/common/nn_util.h"

#include <algorithm>
#include <cmath>

#include "kernels/common/kernel_util.h"
#include "kernels/common/quant_utils.h"

namespace edgeopt::kernels {

Status ComputeWindow(const rt::KernelContext& ctx, const WindowSpec& spec, int in_h, int in_w, WindowGeometry* g) {
  if (spec.padding != tflite::Padding_SAME && spec.padding != tflite::Padding_VALID)
    return ctx.Error("unknown padding " + std::to_string(spec.padding) + " (expected SAME or VALID)");
  if (spec.stride_h <= 0 || spec.stride_w <= 0)
    return ctx.Error("strides must be positive, got " + std::to_string(spec.stride_h) + "x" +
                     std::to_string(spec.stride_w));
  if (spec.dilation_h <= 0 || spec.dilation_w <= 0)
    return ctx.Error("dilation factors must be positive, got " + std::to_string(spec.dilation_h) + "x" +
                     std::to_string(spec.dilation_w));
  if (spec.filter_h <= 0 || spec.filter_w <= 0)
    return ctx.Error("filter size must be positive, got " + std::to_string(spec.filter_h) + "x" +
                     std::to_string(spec.filter_w));
  g->in_h = in_h;
  g->in_w = in_w;
  g->out_h = ComputeOutSize(spec.padding, in_h, spec.filter_h, spec.stride_h, spec.dilation_h);
  g->out_w = ComputeOutSize(spec.padding, in_w, spec.filter_w, spec.stride_w, spec.dilation_w);
  if (g->out_h < 0 || g->out_w < 0)
    return ctx.Error("the " + std::to_string((spec.filter_h - 1) * spec.dilation_h + 1) + "x" +
                     std::to_string((spec.filter_w - 1) * spec.dilation_w + 1) +
                     " window (with dilation) does not fit the " + std::to_string(in_h) + "x" + std::to_string(in_w) +
                     " input with VALID padding");
  int unused_offset = 0;
  g->pad_h = ComputePadding(spec.stride_h, spec.dilation_h, in_h, spec.filter_h, g->out_h, &unused_offset);
  g->pad_w = ComputePadding(spec.stride_w, spec.dilation_w, in_w, spec.filter_w, g->out_w, &unused_offset);
  return Status::Ok();
}

std::string DescribeTypes(const rt::KernelCreateContext& cc, std::initializer_list<std::pair<const char*, int>> roles) {
  std::string s;
  for (const auto& [role, index] : roles) {
    const Tensor* t = index < 0 ? cc.output(0) : cc.input(index);
    if (!t) continue;
    if (!s.empty()) s += ", ";
    s += std::string(role) + " '" + t->name + "' " + TypeName(t->type);
  }
  return s;
}

std::string ActivationName(int activation) {
  if (activation >= tflite::ActivationFunctionType_MIN && activation <= tflite::ActivationFunctionType_MAX)
    return tflite::EnumNameActivationFunctionType(static_cast<tflite::ActivationFunctionType>(activation));
  return "activation " + std::to_string(activation);
}

Status FloatActivation(const rt::KernelContext& ctx, int activation, float* lo, float* hi) {
  if (!FloatActivationRange(activation, lo, hi))
    return ctx.UnsupportedError("fused activation " + ActivationName(activation) + " is not supported");
  return Status::Ok();
}

Status QuantizedActivation(const rt::KernelContext& ctx, int activation, const rt::RtTensor& output, int32_t* lo,
                           int32_t* hi) {
  if (!QuantizedActivationRange(activation, output, lo, hi))
    return ctx.UnsupportedError("fused activation " + ActivationName(activation) + " is not supported on " +
                                TypeName(output.type) + " outputs");
  return Status::Ok();
}

Status RequirePerTensorQuant(const rt::KernelContext& ctx, const rt::RtTensor& t, const std::string& role) {
  if (!t.quant || t.quant->scale.empty())
    return ctx.Error(role + " " + Describe(t) + " has no quantization parameters");
  if (t.quant->scale.size() != 1)
    return ctx.UnsupportedError(role + " " + Describe(t) + " has " + std::to_string(t.quant->scale.size()) +
                                " scales; only per-tensor quantization is supported here");
  if (!(t.quant->scale[0] > 0))
    return ctx.Error(role + " " + Describe(t) + " has non-positive scale " + std::to_string(t.quant->scale[0]));
  if (t.quant->zero_point.size() > 1)
    return ctx.Error(role + " " + Describe(t) + " has several zero points but one scale");
  return Status::Ok();
}

Status RequireWeightQuant(const rt::KernelContext& ctx, const rt::RtTensor& w, int channels, int axis, bool symmetric) {
  if (!w.quant || w.quant->scale.empty())
    return ctx.Error("weights " + Describe(w) + " have no quantization parameters");
  const QuantParams& q = *w.quant;
  const size_t n = q.scale.size();
  if (n != 1 && n != static_cast<size_t>(channels))
    return ctx.Error("weights " + Describe(w) + " have " + std::to_string(n) + " scales, expected 1 or " +
                     std::to_string(channels));
  if (n > 1 && q.quantized_dimension != axis)
    return ctx.UnsupportedError("weights " + Describe(w) + " are quantized along axis " +
                                std::to_string(q.quantized_dimension) + "; only axis " + std::to_string(axis) +
                                " is supported");
  if (!q.zero_point.empty() && q.zero_point.size() != 1 && q.zero_point.size() != n)
    return ctx.Error("weights " + Describe(w) + " have " + std::to_string(q.zero_point.size()) + " zero points for " +
                     std::to_string(n) + " scales");
  for (float s : q.scale)
    if (!(s > 0)) return ctx.Error("weights " + Describe(w) + " have a non-positive scale " + std::to_string(s));
  if (symmetric)
    for (int64_t z : q.zero_point)
      if (z != 0)
        return ctx.UnsupportedError("weights " + Describe(w) + " have zero point " + std::to_string(z) + "; " +
                                    TypeName(w.type) + " weights must be symmetric (zero point 0)");
  return Status::Ok();
}

Status CheckLegacyBiasScale(const rt::KernelContext& ctx, const rt::RtTensor& input, const rt::RtTensor& weights,
                            const rt::RtTensor* bias) {
  if (!bias || !bias->quant || bias->quant->scale.empty()) return Status::Ok();
  const double product = static_cast<double>(input.scale() * weights.scale());
  const double bias_scale = bias->quant->scale[0];
  if (std::fabs(product - bias_scale) > 1e-6 * std::min(product, bias_scale))
    return ctx.Error("bias " + Describe(*bias) + " has scale " + std::to_string(bias_scale) +
                     ", expected input scale x weight scale = " + std::to_string(product));
  return Status::Ok();
}

Status PrepareConvRequant(const rt::KernelContext& ctx, ConvQuantType type, const rt::RtTensor& input,
                          const rt::RtTensor& filter, const rt::RtTensor* bias, const rt::RtTensor& output,
                          int channels, int channel_axis, int activation, ConvRequant* rq) {
  RETURN_IF_ERROR(RequirePerTensorQuant(ctx, input, "input"));
  RETURN_IF_ERROR(RequirePerTensorQuant(ctx, output, "output"));
  RETURN_IF_ERROR(RequireWeightQuant(ctx, filter, channels, channel_axis, type != ConvQuantType::kUInt8));
  if (type == ConvQuantType::kInt16 && (input.zero_point() != 0 || output.zero_point() != 0))
    return ctx.Error("int16 input and output must have zero point 0 (input " + std::to_string(input.zero_point()) +
                     ", output " + std::to_string(output.zero_point()) + ")");
  if (type == ConvQuantType::kUInt8) {
    if (filter.per_channel())
      return ctx.UnsupportedError("uint8 filter " + Describe(filter) + " must be quantized per tensor");
    RETURN_IF_ERROR(CheckLegacyBiasScale(ctx, input, filter, bias));
    rq->multiplier.assign(1, 0);
    rq->shift.assign(1, 0);
    QuantizeMultiplier(LegacyConvMultiplier(input.scale(), filter.scale(), output.scale()), &rq->multiplier[0],
                       &rq->shift[0]);
  } else {
    PerChannelQuant q = ComputePerChannelQuant(input.scale(), filter, output.scale(), channels);
    rq->multiplier = std::move(q.multiplier);
    rq->shift = std::move(q.shift);
  }
  return QuantizedActivation(ctx, activation, output, &rq->act_min, &rq->act_max);
}

}  // namespace edgeopt::kernels
