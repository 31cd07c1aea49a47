// DEPTHWISE_CONV_2D reference kernels, TFLite 2.9 semantics. Output channel oc = ic * M + m of
// input channel ic (M = depth multiplier = filter channels / input channels); the filter is
// [1, KH, KW, C*M] and per-channel quantization runs along axis 3.
//   float32          out = clamp(sum(in * w) + bias)
//   uint8            per-tensor, asymmetric weights, legacy multiplier (float in*w scale)
//   int8             int8 weights per channel or per tensor (zero point 0), int32 bias,
//                    multiplier double(in) * double(w[c]) / double(out)
//   int16 x int8     zero points 0, int64 bias
//   hybrid           float input/output, int8 weights with one scale per output channel (or
//                    one in total, an extension: 2.9 reads past the single scale): the input is
//                    quantized asymmetrically per batch at every invoke;
//                    out = sum(w * (q - zp)) * (w_scale[c] * in_scale) + bias
// Requantization is the reference (gemmlowp) MultiplyByQuantizedMultiplier: 2.9's depthwise
// kernels on x86 are plain C, not ruy.
#include <algorithm>
#include <type_traits>

#include "kernels/common/hybrid_quant.h"
#include "kernels/common/kernel_util.h"
#include "kernels/common/nn_util.h"
#include "kernels/common/quant_utils.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {
namespace {

enum class DwKind { kFloat, kHybrid, kUInt8, kInt8, kInt16 };

struct DwDims {
  int batches = 0, in_h = 0, in_w = 0, in_c = 0;
  int out_h = 0, out_w = 0, out_c = 0, multiplier = 1;
  int k_h = 0, k_w = 0;
  int stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1, pad_h = 0, pad_w = 0;
};

// Hands every output element's accumulator to finish(b, out_index, oc, acc). Integer paths add
// (in + in_offset) * (w + w_offset) over the taps inside the image (padding contributes zero).
template <typename Acc, typename In, typename W, typename InOffset, typename Finish>
void DepthwiseAccumulate(const DwDims& d, const In* in, const W* w, int32_t w_offset, InOffset in_offset_of,
                         rt::ThreadPool& pool, Finish&& finish) {
  pool.ParallelFor(int64_t{d.batches} * d.out_h, 1, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int b = static_cast<int>(row / d.out_h);
      const int oy = static_cast<int>(row % d.out_h);
      const Acc in_off = static_cast<Acc>(in_offset_of(b));
      const int iy0 = oy * d.stride_h - d.pad_h;
      for (int ox = 0; ox < d.out_w; ++ox) {
        const int ix0 = ox * d.stride_w - d.pad_w;
        const int64_t out_base = (row * d.out_w + ox) * d.out_c;
        for (int oc = 0; oc < d.out_c; ++oc) {
          const int ic = oc / d.multiplier;
          Acc acc = 0;
          for (int fy = 0; fy < d.k_h; ++fy) {
            const int iy = iy0 + fy * d.dil_h;
            if (iy < 0 || iy >= d.in_h) continue;
            for (int fx = 0; fx < d.k_w; ++fx) {
              const int ix = ix0 + fx * d.dil_w;
              if (ix < 0 || ix >= d.in_w) continue;
              const In v = in[((int64_t{b} * d.in_h + iy) * d.in_w + ix) * d.in_c + ic];
              const W f = w[(int64_t{fy} * d.k_w + fx) * d.out_c + oc];
              if constexpr (std::is_floating_point_v<Acc>) {
                acc += v * f;
              } else {
                acc += (static_cast<Acc>(v) + in_off) * (static_cast<Acc>(f) + w_offset);
              }
            }
          }
          finish(b, out_base + oc, oc, acc);
        }
      }
    }
  });
}

class DepthwiseKernel : public rt::OpKernel {
 public:
  explicit DepthwiseKernel(DwKind kind) : kind_(kind) {}
  Status Prepare(rt::KernelContext& ctx) override;
  Status Invoke(rt::KernelContext& ctx) override;
  std::string variant() const override {
    switch (kind_) {
      case DwKind::kFloat: return "depthwise_conv2d/f32/ref";
      case DwKind::kHybrid: return "depthwise_conv2d/hybrid/ref";
      case DwKind::kUInt8: return "depthwise_conv2d/uint8/ref";
      case DwKind::kInt8: return "depthwise_conv2d/int8/ref";
      case DwKind::kInt16: return "depthwise_conv2d/int16x8/ref";
    }
    return "depthwise_conv2d/ref";
  }
  int64_t Macs(const rt::KernelContext&) const override {
    return int64_t{d_.batches} * d_.out_h * d_.out_w * d_.out_c * d_.k_h * d_.k_w;
  }

 private:
  Status InvokeHybrid(rt::KernelContext& ctx);

  DwKind kind_;
  DwDims d_;
  ConvRequant rq_;  // quantized kinds: output multipliers and activation bounds
  float fact_min_ = 0, fact_max_ = 0;
  int quantized_input_scratch_ = -1;
  std::vector<float> batch_scale_;
  std::vector<int32_t> batch_zero_point_;
};

Status DepthwiseKernel::Prepare(rt::KernelContext& ctx) {
  RETURN_IF_ERROR(CheckInputCount(ctx, 2, 3));
  RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
  ASSIGN_OR_RETURN(rt::RtTensor * input, RequiredInput(ctx, 0));
  ASSIGN_OR_RETURN(rt::RtTensor * filter, RequiredInput(ctx, 1));
  const rt::RtTensor* bias = ctx.input(2);
  const rt::RtTensor* output = ctx.output(0);
  if (input->rank() != 4) return ctx.Error("input " + Describe(*input) + " must have rank 4 (NHWC)");
  if (filter->rank() != 4) return ctx.Error("filter " + Describe(*filter) + " must have rank 4 ([1, KH, KW, C*M])");
  if (filter->dim(0) != 1) return ctx.Error("filter " + Describe(*filter) + " must have 1 as its first dimension");
  const auto& o = GetOptions<tflite::DepthwiseConv2DOptionsT>(ctx.op());

  DwDims d;
  d.batches = input->dim(0);
  d.in_h = input->dim(1);
  d.in_w = input->dim(2);
  d.in_c = input->dim(3);
  d.k_h = filter->dim(1);
  d.k_w = filter->dim(2);
  d.out_c = filter->dim(3);
  if (d.in_c <= 0 || d.out_c % d.in_c != 0)
    return ctx.Error("filter channels " + std::to_string(d.out_c) + " (" + Describe(*filter) +
                     ") are not a multiple of the input channels " + std::to_string(d.in_c) + " (" + Describe(*input) +
                     ")");
  d.multiplier = d.out_c / d.in_c;
  if (o.depth_multiplier != 0 && o.depth_multiplier != d.multiplier)
    return ctx.Error("depth_multiplier " + std::to_string(o.depth_multiplier) + " does not match the filter: " +
                     std::to_string(d.out_c) + " channels for " + std::to_string(d.in_c) + " input channels");
  if (bias && bias->num_elements() != d.out_c)
    return ctx.Error("bias " + Describe(*bias) + " must have " + std::to_string(d.out_c) + " elements");

  RETURN_IF_ERROR(ComputeConvWindow(ctx, o, &d));
  d_ = d;

  constexpr int kChannelAxis = 3;
  switch (kind_) {
    case DwKind::kFloat:
      RETURN_IF_ERROR(FloatActivation(ctx, o.fused_activation_function, &fact_min_, &fact_max_));
      break;
    case DwKind::kHybrid:
      RETURN_IF_ERROR(FloatActivation(ctx, o.fused_activation_function, &fact_min_, &fact_max_));
      RETURN_IF_ERROR(RequireWeightQuant(ctx, *filter, d.out_c, kChannelAxis, /*symmetric=*/true));
      quantized_input_scratch_ = ctx.RequestScratch(static_cast<size_t>(input->num_elements()));
      batch_scale_.assign(d.batches, 0.0f);
      batch_zero_point_.assign(d.batches, 0);
      break;
    case DwKind::kUInt8:
    case DwKind::kInt8:
    case DwKind::kInt16: {
      const ConvQuantType type = kind_ == DwKind::kUInt8  ? ConvQuantType::kUInt8
                                 : kind_ == DwKind::kInt16 ? ConvQuantType::kInt16
                                                          : ConvQuantType::kInt8;
      RETURN_IF_ERROR(PrepareConvRequant(ctx, type, *input, *filter, bias, *output, d.out_c, kChannelAxis,
                                         o.fused_activation_function, &rq_));
      break;
    }
  }
  return ctx.SetOutputShape(0, {d.batches, d.out_h, d.out_w, d.out_c});
}

Status DepthwiseKernel::Invoke(rt::KernelContext& ctx) {
  const rt::RtTensor* input = ctx.input(0);
  const rt::RtTensor* filter = ctx.input(1);
  const rt::RtTensor* bias = ctx.input(2);
  rt::RtTensor* output = ctx.output(0);
  if (output->num_elements() == 0) return Status::Ok();
  auto& pool = ctx.threads();
  const auto no_offset = [](int) { return 0; };
  switch (kind_) {
    case DwKind::kFloat: {
      const float* b = bias ? bias->data_as<float>() : nullptr;
      float* out = output->data_as<float>();
      const float lo = fact_min_, hi = fact_max_;
      DepthwiseAccumulate<float>(d_, input->data_as<float>(), filter->data_as<float>(), 0, no_offset, pool,
                                 [&](int, int64_t i, int oc, float acc) {
                                   if (b) acc += b[oc];
                                   out[i] = std::min(std::max(acc, lo), hi);
                                 });
      return Status::Ok();
    }
    case DwKind::kHybrid: return InvokeHybrid(ctx);
    case DwKind::kUInt8: {
      const int32_t* b = bias ? bias->data_as<int32_t>() : nullptr;
      uint8_t* out = output->data_as<uint8_t>();
      const int32_t in_off = -input->zero_point(), w_off = -static_cast<int32_t>(filter->quant->zp(0));
      const int32_t out_off = output->zero_point();
      DepthwiseAccumulate<int64_t>(
          d_, input->data_as<uint8_t>(), filter->data_as<uint8_t>(), w_off, [&](int) { return in_off; }, pool,
          [&](int, int64_t i, int oc, int64_t acc) {
            if (b) acc += b[oc];
            int32_t v = MultiplyByQuantizedMultiplier(WrapToInt32(acc), rq_.multiplier[0], rq_.shift[0]);
            out[i] = static_cast<uint8_t>(std::clamp(v + out_off, rq_.act_min, rq_.act_max));
          });
      return Status::Ok();
    }
    case DwKind::kInt8: {
      const int32_t* b = bias ? bias->data_as<int32_t>() : nullptr;
      int8_t* out = output->data_as<int8_t>();
      const int32_t in_off = -input->zero_point(), out_off = output->zero_point();
      DepthwiseAccumulate<int64_t>(
          d_, input->data_as<int8_t>(), filter->data_as<int8_t>(), 0, [&](int) { return in_off; }, pool,
          [&](int, int64_t i, int oc, int64_t acc) {
            if (b) acc += b[oc];
            int32_t v = MultiplyByQuantizedMultiplier(WrapToInt32(acc), rq_.multiplier[oc], rq_.shift[oc]);
            out[i] = static_cast<int8_t>(std::clamp(v + out_off, rq_.act_min, rq_.act_max));
          });
      return Status::Ok();
    }
    case DwKind::kInt16: {
      int16_t* out = output->data_as<int16_t>();
      const int64_t* b = bias ? bias->data_as<int64_t>() : nullptr;
      DepthwiseAccumulate<int64_t>(d_, input->data_as<int16_t>(), filter->data_as<int8_t>(), 0, no_offset, pool,
                                   [&](int, int64_t i, int oc, int64_t acc) {
                                     if (b) acc += b[oc];
                                     const int32_t v = MultiplyByQuantizedMultiplier(acc, rq_.multiplier[oc], rq_.shift[oc]);
                                     out[i] = static_cast<int16_t>(std::clamp(v, rq_.act_min, rq_.act_max));
                                   });
      return Status::Ok();
    }
  }
  return Status::Ok();
}

Status DepthwiseKernel::InvokeHybrid(rt::KernelContext& ctx) {
  const rt::RtTensor* input = ctx.input(0);
  const rt::RtTensor* filter = ctx.input(1);
  const rt::RtTensor* bias = ctx.input(2);
  rt::RtTensor* output = ctx.output(0);
  int8_t* q = ctx.Scratch<int8_t>(quantized_input_scratch_);
  const int64_t per_batch = int64_t{d_.in_h} * d_.in_w * d_.in_c;
  QuantizeRows(input->data_as<float>(), d_.batches, per_batch, /*asymmetric=*/true, q, batch_scale_.data(),
               batch_zero_point_.data());
  const float* b = bias ? bias->data_as<float>() : nullptr;
  float* out = output->data_as<float>();
  const float lo = fact_min_, hi = fact_max_;
  const rt::RtTensor& w = *filter;
  DepthwiseAccumulate<int64_t>(
      d_, q, filter->data_as<int8_t>(), 0, [&](int bi) { return -batch_zero_point_[bi]; }, ctx.threads(),
      [&](int bi, int64_t i, int oc, int64_t acc) {
        float v = static_cast<float>(WrapToInt32(acc)) * (WeightScale(w, oc) * batch_scale_[bi]);
        if (b) v += b[oc];
        out[i] = std::min(std::max(v, lo), hi);
      });
  return Status::Ok();
}

Expected<std::unique_ptr<rt::OpKernel>> CreateDepthwise(const rt::KernelCreateContext& cc) {
  const Tensor* in = cc.input(0);
  const Tensor* w = cc.input(1);
  const Tensor* bias = cc.input(2);
  const Tensor* out = cc.output(0);
  if (!in || !w || !out) return cc.Error("needs input, filter and output tensors");
  auto unsupported = [&]() -> Expected<std::unique_ptr<rt::OpKernel>> {
    return cc.Error(DescribeTypes(cc, {{"input", 0}, {"filter", 1}, {"bias", 2}, {"output", -1}}) +
                    " is not supported");
  };
  DwKind kind;
  DType bias_type;
  if (in->type == DType::kFloat32 && w->type == DType::kFloat32) {
    kind = DwKind::kFloat;
    bias_type = DType::kFloat32;
  } else if (in->type == DType::kFloat32 && w->type == DType::kInt8) {
    kind = DwKind::kHybrid;
    bias_type = DType::kFloat32;
  } else if (in->type == DType::kUInt8 && w->type == DType::kUInt8) {
    kind = DwKind::kUInt8;
    bias_type = DType::kInt32;
  } else if (in->type == DType::kInt8 && w->type == DType::kInt8) {
    kind = DwKind::kInt8;
    bias_type = DType::kInt32;
  } else if (in->type == DType::kInt16 && w->type == DType::kInt8) {
    kind = DwKind::kInt16;
    bias_type = DType::kInt64;  // LiteRT has no 16x8 depthwise with an int32 bias
  } else {
    return unsupported();
  }
  if (out->type != in->type || (bias && bias->type != bias_type)) return unsupported();
  return std::unique_ptr<rt::OpKernel>(new DepthwiseKernel(kind));
}

}  // namespace

void RegisterDepthwiseKernels(rt::OpRegistry& r) { r.Add(tflite::BuiltinOperator_DEPTHWISE_CONV_2D, CreateDepthwise); }

}  // namespace edgeopt::kernels
