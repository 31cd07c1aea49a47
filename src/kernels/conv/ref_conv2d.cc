// CONV_2D reference kernels, TFLite 2.9 semantics:
//   float32                 out = clamp(sum(in * w) + bias)
//   uint8                   per-tensor, asymmetric weights, legacy multiplier (float in*w scale)
//   int8                    int8 weights per channel or per tensor (zero point 0), int32 bias,
//                           multiplier double(in) * double(w[c]) / double(out)
//   (uint8 and int8 requantize with ruy's rounding, as 2.9's im2col + GEMM kernels on x86 do:
//   see MultiplyByQuantizedMultiplierRuy)
//   int16 x int8 (16x8)     zero points 0; int64 bias with the 64-bit requantization, or int32
//                           bias (newer LiteRT, quantized_bias_type INT32) accumulating in int32
//   hybrid                  float input/output, int8 weights: the input is quantized per batch
//                           at every invoke. Per-tensor weights (or per-channel scales that are all
//                           equal): symmetric, out = dot * (in_scale * w_scale) + bias. Per-channel
//                           weights: asymmetric, out = (dot - zp * sum(w)) * (w_scale[c] * in_scale)
//                           + bias, where padded taps contribute nothing.
// Grouped convolution: input channels = filter input channels x groups.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/common/hybrid_quant.h"
#include "kernels/common/kernel_util.h"
#include "kernels/common/nn_util.h"
#include "kernels/common/quant_utils.h"
#include "kernels/conv/conv_kernels.h"

namespace edgeopt::kernels {
namespace {

enum class ConvKind { kFloat, kHybrid, kUInt8, kInt8, kInt16 };

struct ConvDims {
  int batches = 0, in_h = 0, in_w = 0, in_c = 0;
  int out_h = 0, out_w = 0, out_c = 0;
  int k_h = 0, k_w = 0, k_c = 0;  // filter height, width, input channels per group
  int groups = 1, filters_per_group = 0;
  int stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1, pad_h = 0, pad_w = 0;
};

// Computes every output element's accumulator and hands it to finish(b, out_index, oc, acc).
// Integer accumulators add (in + in_offset) * (w + w_offset) over the taps inside the image;
// padded taps are skipped (they contribute zero). in_offset may vary per batch (hybrid).
template <typename Acc, typename In, typename W, typename InOffset, typename Finish>
void ConvAccumulate(const ConvDims& d, const In* in, const W* w, int32_t w_offset, InOffset in_offset_of,
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
          const int group = oc / d.filters_per_group;
          Acc acc = 0;
          for (int fy = 0; fy < d.k_h; ++fy) {
            const int iy = iy0 + fy * d.dil_h;
            if (iy < 0 || iy >= d.in_h) continue;
            for (int fx = 0; fx < d.k_w; ++fx) {
              const int ix = ix0 + fx * d.dil_w;
              if (ix < 0 || ix >= d.in_w) continue;
              const In* ip = in + ((int64_t{b} * d.in_h + iy) * d.in_w + ix) * d.in_c + int64_t{group} * d.k_c;
              const W* wp = w + ((int64_t{oc} * d.k_h + fy) * d.k_w + fx) * d.k_c;
              if constexpr (std::is_floating_point_v<Acc>) {
                for (int ic = 0; ic < d.k_c; ++ic) acc += ip[ic] * wp[ic];
              } else {
                for (int ic = 0; ic < d.k_c; ++ic)
                  acc += (static_cast<Acc>(ip[ic]) + in_off) * (static_cast<Acc>(wp[ic]) + w_offset);
              }
            }
          }
          finish(b, out_base + oc, oc, acc);
        }
      }
    }
  });
}

class Conv2DKernel : public rt::OpKernel {
 public:
  explicit Conv2DKernel(ConvKind kind) : kind_(kind) {}

  Status Prepare(rt::KernelContext& ctx) override;
  Status Invoke(rt::KernelContext& ctx) override;
  std::string variant() const override;
  int64_t Macs(const rt::KernelContext&) const override {
    return int64_t{d_.batches} * d_.out_h * d_.out_w * d_.out_c * d_.k_h * d_.k_w * d_.k_c;
  }

 private:
  Status InvokeHybrid(rt::KernelContext& ctx);

  ConvKind kind_;
  ConvDims d_;
  // Quantized paths.
  ConvRequant rq_;  // quantized kinds: output multipliers and activation bounds
  bool int16_bias32_ = false;  // 16x8 with an int32 bias: int32 accumulation (newer LiteRT)
  // Float and hybrid paths.
  float fact_min_ = 0, fact_max_ = 0;
  // Hybrid.
  bool hybrid_per_channel_ = false;
  int quantized_input_scratch_ = -1;
  std::vector<float> batch_scale_;
  std::vector<int32_t> batch_zero_point_;
};

std::string Conv2DKernel::variant() const {
  switch (kind_) {
    case ConvKind::kFloat: return "conv2d/f32/ref";
    case ConvKind::kHybrid: return hybrid_per_channel_ ? "conv2d/hybrid_per_channel/ref" : "conv2d/hybrid/ref";
    case ConvKind::kUInt8: return "conv2d/uint8/ref";
    case ConvKind::kInt8: return "conv2d/int8/ref";
    case ConvKind::kInt16: return "conv2d/int16x8/ref";
  }
  return "conv2d/ref";
}

Status Conv2DKernel::Prepare(rt::KernelContext& ctx) {
  RETURN_IF_ERROR(CheckInputCount(ctx, 2, 3));
  RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
  ASSIGN_OR_RETURN(rt::RtTensor * input, RequiredInput(ctx, 0));
  ASSIGN_OR_RETURN(rt::RtTensor * filter, RequiredInput(ctx, 1));
  const rt::RtTensor* bias = ctx.input(2);
  const rt::RtTensor* output = ctx.output(0);
  if (input->rank() != 4) return ctx.Error("input " + Describe(*input) + " must have rank 4 (NHWC)");
  if (filter->rank() != 4) return ctx.Error("filter " + Describe(*filter) + " must have rank 4 (OHWI)");
  const auto& o = GetOptions<tflite::Conv2DOptionsT>(ctx.op());

  ConvDims d;
  d.batches = input->dim(0);
  d.in_h = input->dim(1);
  d.in_w = input->dim(2);
  d.in_c = input->dim(3);
  d.out_c = filter->dim(0);
  d.k_h = filter->dim(1);
  d.k_w = filter->dim(2);
  d.k_c = filter->dim(3);
  if (d.k_c <= 0 || d.in_c % d.k_c != 0)
    return ctx.Error("input channels " + std::to_string(d.in_c) + " of " + Describe(*input) +
                     " are not a multiple of the filter's input channels " + std::to_string(d.k_c) + " (" +
                     Describe(*filter) + ")");
  d.groups = d.in_c / d.k_c;
  if (d.out_c % d.groups != 0)
    return ctx.Error("output channels " + std::to_string(d.out_c) + " are not a multiple of the " +
                     std::to_string(d.groups) + " groups");
  d.filters_per_group = d.out_c / d.groups;
  if (bias && bias->num_elements() != d.out_c)
    return ctx.Error("bias " + Describe(*bias) + " must have " + std::to_string(d.out_c) + " elements");

  RETURN_IF_ERROR(ComputeConvWindow(ctx, o, &d));
  d_ = d;

  switch (kind_) {
    case ConvKind::kFloat:
      RETURN_IF_ERROR(FloatActivation(ctx, o.fused_activation_function, &fact_min_, &fact_max_));
      break;
    case ConvKind::kHybrid: {
      RETURN_IF_ERROR(FloatActivation(ctx, o.fused_activation_function, &fact_min_, &fact_max_));
      RETURN_IF_ERROR(RequireWeightQuant(ctx, *filter, d.out_c, 0, /*symmetric=*/true));
      // LiteRT treats per-channel scales that are all equal as per-tensor (symmetric path).
      const auto& scales = filter->quant->scale;
      hybrid_per_channel_ =
          scales.size() > 1 && std::any_of(scales.begin(), scales.end(), [&](float s) { return s != scales[0]; });
      quantized_input_scratch_ = ctx.RequestScratch(static_cast<size_t>(input->num_elements()));
      batch_scale_.assign(d.batches, 0.0f);
      batch_zero_point_.assign(d.batches, 0);
      break;
    }
    case ConvKind::kUInt8:
    case ConvKind::kInt8:
    case ConvKind::kInt16: {
      const ConvQuantType type = kind_ == ConvKind::kUInt8  ? ConvQuantType::kUInt8
                                 : kind_ == ConvKind::kInt16 ? ConvQuantType::kInt16
                                                          : ConvQuantType::kInt8;
      RETURN_IF_ERROR(PrepareConvRequant(ctx, type, *input, *filter, bias, *output, d.out_c, 0,
                                         o.fused_activation_function, &rq_));
      int16_bias32_ = kind_ == ConvKind::kInt16 && bias && bias->type == DType::kInt32;
      break;
    }
  }
  return ctx.SetOutputShape(0, {d.batches, d.out_h, d.out_w, d.out_c});
}

Status Conv2DKernel::Invoke(rt::KernelContext& ctx) {
  const rt::RtTensor* input = ctx.input(0);
  const rt::RtTensor* filter = ctx.input(1);
  const rt::RtTensor* bias = ctx.input(2);
  rt::RtTensor* output = ctx.output(0);
  if (output->num_elements() == 0) return Status::Ok();
  auto& pool = ctx.threads();
  const auto no_offset = [](int) { return 0; };
  switch (kind_) {
    case ConvKind::kFloat: {
      const float* b = bias ? bias->data_as<float>() : nullptr;
      float* out = output->data_as<float>();
      const float lo = fact_min_, hi = fact_max_;
      ConvAccumulate<float>(d_, input->data_as<float>(), filter->data_as<float>(), 0, no_offset, pool,
                            [&](int, int64_t i, int oc, float acc) {
                              if (b) acc += b[oc];
                              out[i] = std::min(std::max(acc, lo), hi);
                            });
      return Status::Ok();
    }
    case ConvKind::kHybrid: return InvokeHybrid(ctx);
    case ConvKind::kUInt8: {
      const int32_t* b = bias ? bias->data_as<int32_t>() : nullptr;
      uint8_t* out = output->data_as<uint8_t>();
      const int32_t in_off = -input->zero_point(), w_off = -static_cast<int32_t>(filter->quant->zp(0));
      const int32_t out_off = output->zero_point();
      ConvAccumulate<int64_t>(
          d_, input->data_as<uint8_t>(), filter->data_as<uint8_t>(), w_off, [&](int) { return in_off; }, pool,
          [&](int, int64_t i, int oc, int64_t acc) {
            if (b) acc += b[oc];
            int32_t v = MultiplyByQuantizedMultiplierRuy(WrapToInt32(acc), rq_.multiplier[0], rq_.shift[0]);
            v = std::clamp(v + out_off, rq_.act_min, rq_.act_max);
            out[i] = static_cast<uint8_t>(v);
          });
      return Status::Ok();
    }
    case ConvKind::kInt8: {
      const int32_t* b = bias ? bias->data_as<int32_t>() : nullptr;
      int8_t* out = output->data_as<int8_t>();
      const int32_t in_off = -input->zero_point(), out_off = output->zero_point();
      ConvAccumulate<int64_t>(
          d_, input->data_as<int8_t>(), filter->data_as<int8_t>(), 0, [&](int) { return in_off; }, pool,
          [&](int, int64_t i, int oc, int64_t acc) {
            if (b) acc += b[oc];
            int32_t v = MultiplyByQuantizedMultiplierRuy(WrapToInt32(acc), rq_.multiplier[oc], rq_.shift[oc]);
            v = std::clamp(v + out_off, rq_.act_min, rq_.act_max);
            out[i] = static_cast<int8_t>(v);
          });
      return Status::Ok();
    }
    case ConvKind::kInt16: {
      int16_t* out = output->data_as<int16_t>();
      if (int16_bias32_) {
        const int32_t* b = bias->data_as<int32_t>();
        ConvAccumulate<int64_t>(d_, input->data_as<int16_t>(), filter->data_as<int8_t>(), 0, no_offset, pool,
                                [&](int, int64_t i, int oc, int64_t acc) {
                                  const int32_t a = WrapToInt32(acc + b[oc]);
                                  const int32_t v = MultiplyByQuantizedMultiplier(a, rq_.multiplier[oc], rq_.shift[oc]);
                                  out[i] = static_cast<int16_t>(std::clamp(v, rq_.act_min, rq_.act_max));
                                });
      } else {
        const int64_t* b = bias ? bias->data_as<int64_t>() : nullptr;
        ConvAccumulate<int64_t>(d_, input->data_as<int16_t>(), filter->data_as<int8_t>(), 0, no_offset, pool,
                                [&](int, int64_t i, int oc, int64_t acc) {
                                  if (b) acc += b[oc];
                                  const int32_t v = MultiplyByQuantizedMultiplier(acc, rq_.multiplier[oc], rq_.shift[oc]);
                                  out[i] = static_cast<int16_t>(std::clamp(v, rq_.act_min, rq_.act_max));
                                });
      }
      return Status::Ok();
    }
  }
  return Status::Ok();
}

Status Conv2DKernel::InvokeHybrid(rt::KernelContext& ctx) {
  const rt::RtTensor* input = ctx.input(0);
  const rt::RtTensor* filter = ctx.input(1);
  const rt::RtTensor* bias = ctx.input(2);
  rt::RtTensor* output = ctx.output(0);
  int8_t* q = ctx.Scratch<int8_t>(quantized_input_scratch_);
  const int64_t per_batch = int64_t{d_.in_h} * d_.in_w * d_.in_c;
  QuantizeRows(input->data_as<float>(), d_.batches, per_batch, /*asymmetric=*/hybrid_per_channel_, q,
               batch_scale_.data(), batch_zero_point_.data());
  const float* b = bias ? bias->data_as<float>() : nullptr;
  float* out = output->data_as<float>();
  const float lo = fact_min_, hi = fact_max_;
  const auto& w_scales = filter->quant->scale;
  if (hybrid_per_channel_) {
    ConvAccumulate<int64_t>(
        d_, q, filter->data_as<int8_t>(), 0, [&](int bi) { return -batch_zero_point_[bi]; }, ctx.threads(),
        [&](int bi, int64_t i, int oc, int64_t acc) {
          float v = static_cast<float>(WrapToInt32(acc)) * (w_scales[oc] * batch_scale_[bi]);
          if (b) v += b[oc];
          out[i] = std::min(std::max(v, lo), hi);
        });
  } else {
    const float w_scale = w_scales[0];
    ConvAccumulate<int64_t>(
        d_, q, filter->data_as<int8_t>(), 0, [](int) { return 0; }, ctx.threads(),
        [&](int bi, int64_t i, int oc, int64_t acc) {
          float v = static_cast<float>(WrapToInt32(acc)) * (batch_scale_[bi] * w_scale);
          if (b) v += b[oc];
          out[i] = std::min(std::max(v, lo), hi);
        });
  }
  return Status::Ok();
}

}  // namespace

Expected<std::unique_ptr<rt::OpKernel>> CreateConv2D(const rt::KernelCreateContext& cc) {
  const Tensor* in = cc.input(0);
  const Tensor* w = cc.input(1);
  const Tensor* bias = cc.input(2);
  const Tensor* out = cc.output(0);
  if (!in || !w || !out) return cc.Error("needs input, filter and output tensors");
  auto unsupported = [&]() -> Expected<std::unique_ptr<rt::OpKernel>> {
    return cc.Error(DescribeTypes(cc, {{"input", 0}, {"filter", 1}, {"bias", 2}, {"output", -1}}) +
                    " is not supported");
  };
  ConvKind kind;
  if (in->type == DType::kFloat32 && w->type == DType::kFloat32) {
    kind = ConvKind::kFloat;
    if (bias && bias->type != DType::kFloat32) return unsupported();
  } else if (in->type == DType::kFloat32 && w->type == DType::kInt8) {
    kind = ConvKind::kHybrid;
    if (bias && bias->type != DType::kFloat32) return unsupported();
  } else if (in->type == DType::kUInt8 && w->type == DType::kUInt8) {
    kind = ConvKind::kUInt8;
    if (bias && bias->type != DType::kInt32) return unsupported();
  } else if (in->type == DType::kInt8 && w->type == DType::kInt8) {
    kind = ConvKind::kInt8;
    if (bias && bias->type != DType::kInt32) return unsupported();
  } else if (in->type == DType::kInt16 && w->type == DType::kInt8) {
    kind = ConvKind::kInt16;
    if (bias && bias->type != DType::kInt64 && bias->type != DType::kInt32) return unsupported();
  } else {
    return unsupported();
  }
  if (out->type != in->type) return unsupported();
  return std::unique_ptr<rt::OpKernel>(new Conv2DKernel(kind));
}

}  // namespace edgeopt::kernels
