// TRANSPOSE_CONV and MediaPipe's Convolution2DTransposeBias reference kernels.
//
// TRANSPOSE_CONV (TFLite 2.9 semantics): inputs output_shape (int32 [4]), weights
// [out_c, KH, KW, in_c], input [N, H, W, in_c], optional bias [out_c]. Every input pixel
// scatters input * weights into the output window at (iy * stride - pad, ix * stride - pad); the
// leading padding is the one a convolution over the requested output size would use (LiteRT
// computes it from output_shape, not from the input). Computed here in gather form: each output
// element sums the (input pixel, tap) pairs that reach it, so no scratch is needed.
//   float32        plain sums + bias
//   uint8          per-tensor, asymmetric weights, legacy multiplier
//   int8           per-channel (or per-tensor) int8 weights, int32 bias, multiplier
//                  double(in) * double(w[c]) / double(out)
//   int16 x int8   zero points 0; int64 bias: 64-bit requantization; int32 bias or none: int32
//                  accumulation, 32-bit requantization (as 2.9 does)
// Quantized outputs use the reference rounding, as 2.9's kernels do (the GEMM there produces
// int32 columns; requantization is plain C). Outside the reference mode, float runs on
// TransposeConvF32 and int8 / uint8 on TransposeConvQ (transpose_conv.h), both with constant
// weights and output shape. The fused activation (newer LiteRT, op version 4)
// is applied; 2.9 has no such option and its models leave it NONE. A non-constant output_shape
// makes the output dynamic (shape set at invoke).
//
// Convolution2DTransposeBias (MediaPipe custom op, float32 only): inputs input, weights, bias;
// custom options are the raw 12-byte TfLiteTransposeConvParams {padding (1 SAME, 2 VALID),
// stride_width, stride_height}. The output size is stride * (in - 1) + kernel - pad_total with
// pad_total = SAME ? max(0, kernel - (in - 1) % stride - 1) : 0; the leading padding is half of it.
//
// Float32 with constant (or folded) weights and a constant output shape runs on the packed
// GEMM instead when the CPU has AVX2 (transpose_conv.h; variant `.../f32/gemm_avx512`): the same
// products summed in another order, within float rounding of these loops.
#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/common/kernel_util.h"
#include "kernels/common/nn_util.h"
#include "kernels/common/quant_utils.h"
#include "kernels/conv/conv_kernels.h"
#include "kernels/conv/transpose_conv.h"

namespace edgeopt::kernels {
namespace {

// finish(out_index, oc, acc) for every output element, where acc sums
// (in + in_offset) * (w + w_offset) over the (input pixel, tap) pairs landing on it.
template <typename Acc, typename In, typename W, typename Finish>
void TransposeConvGather(const TransposeDims& d, const In* in, int32_t in_offset, const W* w, int32_t w_offset,
                         rt::ThreadPool& pool, Finish&& finish) {
  pool.ParallelFor(int64_t{d.batches} * d.out_h, 1, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int b = static_cast<int>(row / d.out_h);
      const int oy = static_cast<int>(row % d.out_h);
      for (int ox = 0; ox < d.out_w; ++ox) {
        const int64_t out_base = (row * d.out_w + ox) * d.out_c;
        for (int oc = 0; oc < d.out_c; ++oc) {
          Acc acc = 0;
          for (int fy = 0; fy < d.k_h; ++fy) {
            const int ty = oy + d.pad_h - fy;  // = iy * stride_h for a contributing input row
            if (ty < 0 || ty % d.stride_h != 0) continue;
            const int iy = ty / d.stride_h;
            if (iy >= d.in_h) continue;
            for (int fx = 0; fx < d.k_w; ++fx) {
              const int tx = ox + d.pad_w - fx;
              if (tx < 0 || tx % d.stride_w != 0) continue;
              const int ix = tx / d.stride_w;
              if (ix >= d.in_w) continue;
              const In* ip = in + ((int64_t{b} * d.in_h + iy) * d.in_w + ix) * d.in_c;
              const W* wp = w + ((int64_t{oc} * d.k_h + fy) * d.k_w + fx) * d.in_c;
              if constexpr (std::is_floating_point_v<Acc>) {
                for (int ic = 0; ic < d.in_c; ++ic) acc += ip[ic] * wp[ic];
              } else {
                for (int ic = 0; ic < d.in_c; ++ic)
                  acc += (static_cast<Acc>(ip[ic]) + in_offset) * (static_cast<Acc>(wp[ic]) + w_offset);
              }
            }
          }
          finish(out_base + oc, oc, acc);
        }
      }
    }
  });
}

enum class TcKind { kFloat, kUInt8, kInt8, kInt16 };

class TransposeConvKernel : public rt::OpKernel {
 public:
  // fast: the float GEMM engine (transpose_conv.h), or null.
  // qfast: the 8-bit engine (int8 / uint8), or null.
  TransposeConvKernel(TcKind kind, std::unique_ptr<TransposeConvF32> fast, std::unique_ptr<TransposeConvQ> qfast)
      : kind_(kind), fast_(std::move(fast)), qfast_(std::move(qfast)) {}
  Status Prepare(rt::KernelContext& ctx) override;
  Status Invoke(rt::KernelContext& ctx) override;
  std::string variant() const override {
    switch (kind_) {
      case TcKind::kFloat: return use_fast_ ? "transpose_conv/f32/" + fast_->path() : "transpose_conv/f32/ref";
      case TcKind::kUInt8: return use_fast_ ? "transpose_conv/uint8/gemm_avx512" : "transpose_conv/uint8/ref";
      case TcKind::kInt8: return use_fast_ ? "transpose_conv/int8/gemm_avx512" : "transpose_conv/int8/ref";
      case TcKind::kInt16: return "transpose_conv/int16x8/ref";
    }
    return "transpose_conv/ref";
  }
  int64_t Macs(const rt::KernelContext&) const override {
    return int64_t{d_.batches} * d_.in_h * d_.in_w * d_.in_c * d_.k_h * d_.k_w * d_.out_c;
  }

 private:
  // Reads output_shape (data must be present), checks it and fills d_.
  Status ResolveOutput(rt::KernelContext& ctx);
  // The 8-bit engine with this invoke's bias.
  template <typename T>
  void RunQuantFast(rt::KernelContext& ctx, const int32_t* bias) {
    TransposeRequant& q = qfast_->requant();
    for (int c = 0; c < d_.out_c; ++c) q.bias[static_cast<size_t>(c)] = bias ? bias[c] : 0;
    qfast_->Run<T>(ctx, *ctx.input(1), ctx.input(2)->data_as<T>(), ctx.input(2)->zero_point(), ctx.output(0)->data_as<T>());
  }

  TcKind kind_;
  std::unique_ptr<TransposeConvF32> fast_;
  std::unique_ptr<TransposeConvQ> qfast_;
  bool use_fast_ = false;  // float / 8-bit with a constant output shape and weights
  TransposeDims d_;
  bool dynamic_output_ = false;
  std::vector<int32_t> multiplier_;
  std::vector<int> shift_;
  int32_t act_min_ = 0, act_max_ = 0;
  float fact_min_ = 0, fact_max_ = 0;
};

Status TransposeConvKernel::ResolveOutput(rt::KernelContext& ctx) {
  const rt::RtTensor* shape_t = ctx.input(0);
  const rt::RtTensor* weights = ctx.input(1);
  const rt::RtTensor* input = ctx.input(2);
  const int32_t* s = shape_t->data_as<int32_t>();
  const auto& o = GetOptions<tflite::TransposeConvOptionsT>(ctx.op());
  TransposeDims d;
  d.batches = input->dim(0);
  d.in_h = input->dim(1);
  d.in_w = input->dim(2);
  d.in_c = input->dim(3);
  d.out_c = weights->dim(0);
  d.k_h = weights->dim(1);
  d.k_w = weights->dim(2);
  const rt::Shape out = {s[0], s[1], s[2], s[3]};
  if (out[0] != d.batches || out[3] != d.out_c || out[1] < 0 || out[2] < 0)
    return ctx.Error("output_shape " + rt::ShapeToString(out) + " must be [" + std::to_string(d.batches) + ", H, W, " +
                     std::to_string(d.out_c) + "] for input " + Describe(*input) + " and weights " +
                     Describe(*weights));
  d.out_h = out[1];
  d.out_w = out[2];
  // LiteRT's padding: that of a convolution over the requested output size.
  WindowSpec spec;
  spec.padding = o.padding;
  spec.stride_h = o.stride_h;
  spec.stride_w = o.stride_w;
  spec.filter_h = d.k_h;
  spec.filter_w = d.k_w;
  WindowGeometry g;
  RETURN_IF_ERROR(ComputeWindow(ctx, spec, d.out_h, d.out_w, &g));
  d.stride_h = o.stride_h;
  d.stride_w = o.stride_w;
  d.pad_h = g.pad_h;
  d.pad_w = g.pad_w;
  d_ = d;
  return ctx.SetOutputShape(0, out);
}

Status TransposeConvKernel::Prepare(rt::KernelContext& ctx) {
  RETURN_IF_ERROR(CheckInputCount(ctx, 3, 4));
  RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
  ASSIGN_OR_RETURN(rt::RtTensor * shape_t, RequiredInput(ctx, 0));
  ASSIGN_OR_RETURN(rt::RtTensor * weights, RequiredInput(ctx, 1));
  ASSIGN_OR_RETURN(rt::RtTensor * input, RequiredInput(ctx, 2));
  const rt::RtTensor* bias = ctx.input(3);
  const rt::RtTensor* output = ctx.output(0);
  if (shape_t->type != DType::kInt32 || shape_t->rank() != 1 || shape_t->num_elements() != 4)
    return ctx.Error("output_shape " + Describe(*shape_t) + " must be a 1-D int32 tensor of 4 values");
  if (input->rank() != 4) return ctx.Error("input " + Describe(*input) + " must have rank 4 (NHWC)");
  if (weights->rank() != 4) return ctx.Error("weights " + Describe(*weights) + " must have rank 4 (OHWI)");
  if (input->dim(3) != weights->dim(3))
    return ctx.Error("input " + Describe(*input) + " has " + std::to_string(input->dim(3)) + " channels, the weights " +
                     Describe(*weights) + " expect " + std::to_string(weights->dim(3)));
  const int out_c = weights->dim(0);
  if (bias && bias->num_elements() != out_c)
    return ctx.Error("bias " + Describe(*bias) + " must have " + std::to_string(out_c) + " elements");
  const auto& o = GetOptions<tflite::TransposeConvOptionsT>(ctx.op());

  switch (kind_) {
    case TcKind::kFloat:
      RETURN_IF_ERROR(FloatActivation(ctx, o.fused_activation_function, &fact_min_, &fact_max_));
      break;
    case TcKind::kUInt8:
    case TcKind::kInt8:
    case TcKind::kInt16:
      RETURN_IF_ERROR(RequirePerTensorQuant(ctx, *input, "input"));
      RETURN_IF_ERROR(RequirePerTensorQuant(ctx, *output, "output"));
      RETURN_IF_ERROR(RequireWeightQuant(ctx, *weights, out_c, 0, kind_ != TcKind::kUInt8));
      if (kind_ == TcKind::kInt16 && (input->zero_point() != 0 || output->zero_point() != 0))
        return ctx.Error("int16 input and output must have zero point 0 (input " + std::to_string(input->zero_point()) +
                         ", output " + std::to_string(output->zero_point()) + ")");
      if (kind_ == TcKind::kUInt8) {
        if (weights->per_channel())
          return ctx.UnsupportedError("uint8 weights " + Describe(*weights) + " must be quantized per tensor");
        RETURN_IF_ERROR(CheckLegacyBiasScale(ctx, *input, *weights, bias));
        multiplier_.assign(1, 0);
        shift_.assign(1, 0);
        QuantizeMultiplier(LegacyConvMultiplier(input->scale(), weights->scale(), output->scale()), &multiplier_[0],
                           &shift_[0]);
      } else {
        PerChannelQuant q = ComputePerChannelQuant(input->scale(), *weights, output->scale(), out_c);
        multiplier_ = std::move(q.multiplier);
        shift_ = std::move(q.shift);
      }
      RETURN_IF_ERROR(QuantizedActivation(ctx, o.fused_activation_function, *output, &act_min_, &act_max_));
      break;
  }
  dynamic_output_ = !shape_t->is_constant() && !ctx.in_invoke();
  use_fast_ = false;
  if (dynamic_output_) {
    ctx.MarkOutputDynamic(0);
    return Status::Ok();
  }
  if (!shape_t->data) return ctx.Error("output_shape " + Describe(*shape_t) + " has no data");
  RETURN_IF_ERROR(ResolveOutput(ctx));
  use_fast_ = kind_ == TcKind::kFloat && fast_ && !ctx.in_invoke() && fast_->Prepare(ctx, d_, *weights);
  if ((kind_ == TcKind::kInt8 || kind_ == TcKind::kUInt8) && qfast_ && !ctx.in_invoke()) {
    const int32_t w_zp = kind_ == TcKind::kUInt8 ? static_cast<int32_t>(weights->quant->zp(0)) : 0;
    use_fast_ = qfast_->Prepare(ctx, d_, *weights, w_zp);
    if (use_fast_) {
      TransposeRequant& q = qfast_->requant();
      q.oc = d_.out_c;
      const size_t padded = static_cast<size_t>((d_.out_c + 15) / 16 * 16);
      q.bias.assign(padded, 0);
      q.mult.assign(padded, 0);
      q.left.assign(padded, 0);
      q.right.assign(padded, 0);
      for (int c = 0; c < d_.out_c; ++c) {
        const size_t i = multiplier_.size() == 1 ? 0 : static_cast<size_t>(c);
        q.mult[static_cast<size_t>(c)] = multiplier_[i];
        q.left[static_cast<size_t>(c)] = std::max(shift_[i], 0);
        q.right[static_cast<size_t>(c)] = std::max(-shift_[i], 0);
      }
      q.out_zp = output->zero_point();
      q.lo = act_min_;
      q.hi = act_max_;
      // The vector stage's Srdhm needs multipliers >= 0 and right shifts up to 31.
      for (size_t c = 0; c < padded; ++c)
        if (q.mult[c] < 0 || q.right[c] > 31) use_fast_ = false;
    }
  }
  return Status::Ok();
}

Status TransposeConvKernel::Invoke(rt::KernelContext& ctx) {
  if (dynamic_output_) RETURN_IF_ERROR(ResolveOutput(ctx));
  const rt::RtTensor* weights = ctx.input(1);
  const rt::RtTensor* input = ctx.input(2);
  const rt::RtTensor* bias = ctx.input(3);
  rt::RtTensor* output = ctx.output(0);
  if (output->num_elements() == 0) return Status::Ok();
  auto& pool = ctx.threads();
  switch (kind_) {
    case TcKind::kFloat: {
      const float* b = bias ? bias->data_as<float>() : nullptr;
      float* out = output->data_as<float>();
      if (use_fast_) {
        fast_->Run(ctx, *weights, input->data_as<float>(), b, fact_min_, fact_max_, out);
        return Status::Ok();
      }
      TransposeConvGather<float>(d_, input->data_as<float>(), 0, weights->data_as<float>(), 0, pool,
                                 [&](int64_t i, int oc, float acc) {
                                   if (b) acc += b[oc];
                                   out[i] = std::min(std::max(acc, fact_min_), fact_max_);
                                 });
      return Status::Ok();
    }
    case TcKind::kUInt8: {
      const int32_t* b = bias ? bias->data_as<int32_t>() : nullptr;
      uint8_t* out = output->data_as<uint8_t>();
      const int32_t out_off = output->zero_point();
      if (use_fast_) {
        RunQuantFast<uint8_t>(ctx, b);
        return Status::Ok();
      }
      TransposeConvGather<int64_t>(
          d_, input->data_as<uint8_t>(), -input->zero_point(), weights->data_as<uint8_t>(),
          -static_cast<int32_t>(weights->quant->zp(0)), pool, [&](int64_t i, int oc, int64_t acc) {
            if (b) acc += b[oc];
            const int32_t v = MultiplyByQuantizedMultiplier(WrapToInt32(acc), multiplier_[0], shift_[0]);
            out[i] = static_cast<uint8_t>(std::clamp(v + out_off, act_min_, act_max_));
          });
      return Status::Ok();
    }
    case TcKind::kInt8: {
      const int32_t* b = bias ? bias->data_as<int32_t>() : nullptr;
      int8_t* out = output->data_as<int8_t>();
      const int32_t out_off = output->zero_point();
      if (use_fast_) {
        RunQuantFast<int8_t>(ctx, b);
        return Status::Ok();
      }
      TransposeConvGather<int64_t>(d_, input->data_as<int8_t>(), -input->zero_point(), weights->data_as<int8_t>(), 0,
                                   pool, [&](int64_t i, int oc, int64_t acc) {
                                     if (b) acc += b[oc];
                                     const int32_t v =
                                         MultiplyByQuantizedMultiplier(WrapToInt32(acc), multiplier_[oc], shift_[oc]);
                                     out[i] = static_cast<int8_t>(std::clamp(v + out_off, act_min_, act_max_));
                                   });
      return Status::Ok();
    }
    case TcKind::kInt16: {
      int16_t* out = output->data_as<int16_t>();
      if (bias && bias->type == DType::kInt64) {
        const int64_t* b = bias->data_as<int64_t>();
        TransposeConvGather<int64_t>(
            d_, input->data_as<int16_t>(), 0, weights->data_as<int8_t>(), 0, pool, [&](int64_t i, int oc, int64_t acc) {
              const int32_t v = MultiplyByQuantizedMultiplier(acc + b[oc], multiplier_[oc], shift_[oc]);
              out[i] = static_cast<int16_t>(std::clamp(v, act_min_, act_max_));
            });
      } else {
        // Without an int64 bias 2.9 accumulates in int32 and requantizes with the 32-bit
        // reference multiplier.
        const int32_t* b = bias ? bias->data_as<int32_t>() : nullptr;
        TransposeConvGather<int64_t>(
            d_, input->data_as<int16_t>(), 0, weights->data_as<int8_t>(), 0, pool, [&](int64_t i, int oc, int64_t acc) {
              if (b) acc += b[oc];
              const int32_t v = MultiplyByQuantizedMultiplier(WrapToInt32(acc), multiplier_[oc], shift_[oc]);
              out[i] = static_cast<int16_t>(std::clamp(v, act_min_, act_max_));
            });
      }
      return Status::Ok();
    }
  }
  return Status::Ok();
}

// MediaPipe's Convolution2DTransposeBias.
class TransposeConvBiasKernel : public rt::OpKernel {
 public:
  // fast: the float GEMM engine (transpose_conv.h), or null.
  explicit TransposeConvBiasKernel(std::unique_ptr<TransposeConvF32> fast) : fast_(std::move(fast)) {}
  Status Prepare(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckInputCount(ctx, 3, 3));
    RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
    ASSIGN_OR_RETURN(rt::RtTensor * input, RequiredInput(ctx, 0));
    ASSIGN_OR_RETURN(rt::RtTensor * weights, RequiredInput(ctx, 1));
    ASSIGN_OR_RETURN(rt::RtTensor * bias, RequiredInput(ctx, 2));
    if (input->rank() != 4) return ctx.Error("input " + Describe(*input) + " must have rank 4 (NHWC)");
    if (weights->rank() != 4) return ctx.Error("weights " + Describe(*weights) + " must have rank 4 (OHWI)");
    if (bias->rank() != 1 || bias->dim(0) != weights->dim(0))
      return ctx.Error("bias " + Describe(*bias) + " must be 1-D with " + std::to_string(weights->dim(0)) + " values");
    if (input->dim(3) != weights->dim(3))
      return ctx.Error("input " + Describe(*input) + " has " + std::to_string(input->dim(3)) +
                       " channels, the weights " + Describe(*weights) + " expect " + std::to_string(weights->dim(3)));
    const auto& opt = ctx.op().custom_options;
    if (opt.size() < 12)
      return ctx.Error("custom options must hold TfLiteTransposeConvParams (12 bytes), got " +
                       std::to_string(opt.size()));
    int32_t params[3];
    std::memcpy(params, opt.data(), sizeof(params));
    const int32_t padding = params[0], stride_w = params[1], stride_h = params[2];
    if (padding != 1 && padding != 2)
      return ctx.Error("padding " + std::to_string(padding) + " is neither SAME (1) nor VALID (2)");
    if (stride_w <= 0 || stride_h <= 0)
      return ctx.Error("strides must be positive, got " + std::to_string(stride_h) + "x" + std::to_string(stride_w));
    TransposeDims d;
    d.batches = input->dim(0);
    d.in_h = input->dim(1);
    d.in_w = input->dim(2);
    d.in_c = input->dim(3);
    d.out_c = weights->dim(0);
    d.k_h = weights->dim(1);
    d.k_w = weights->dim(2);
    d.stride_h = stride_h;
    d.stride_w = stride_w;
    int pad_total_h = 0, pad_total_w = 0;
    if (padding == 1) {
      pad_total_h = std::max(0, d.k_h - (d.in_h - 1) % stride_h - 1);
      pad_total_w = std::max(0, d.k_w - (d.in_w - 1) % stride_w - 1);
    }
    d.out_h = stride_h * (d.in_h - 1) + d.k_h - pad_total_h;
    d.out_w = stride_w * (d.in_w - 1) + d.k_w - pad_total_w;
    d.pad_h = pad_total_h / 2;
    d.pad_w = pad_total_w / 2;
    if (d.in_h <= 0 || d.in_w <= 0 || d.out_h < 0 || d.out_w < 0)
      return ctx.Error("input " + Describe(*input) + " gives no valid output size");
    d_ = d;
    RETURN_IF_ERROR(ctx.SetOutputShape(0, {d.batches, d.out_h, d.out_w, d.out_c}));
    use_fast_ = fast_ && !ctx.in_invoke() && fast_->Prepare(ctx, d_, *weights);
    return Status::Ok();
  }
  Status Invoke(rt::KernelContext& ctx) override {
    const float* b = ctx.input(2)->data_as<float>();
    float* out = ctx.output(0)->data_as<float>();
    if (ctx.output(0)->num_elements() == 0) return Status::Ok();
    if (use_fast_) {
      const float inf = std::numeric_limits<float>::infinity();
      fast_->Run(ctx, *ctx.input(1), ctx.input(0)->data_as<float>(), b, -inf, inf, out);
      return Status::Ok();
    }
    TransposeConvGather<float>(d_, ctx.input(0)->data_as<float>(), 0, ctx.input(1)->data_as<float>(), 0, ctx.threads(),
                               [&](int64_t i, int oc, float acc) { out[i] = b[oc] + acc; });
    return Status::Ok();
  }
  std::string variant() const override {
    return use_fast_ ? "transpose_conv_bias/f32/" + fast_->path() : "transpose_conv_bias/f32/ref";
  }
  int64_t Macs(const rt::KernelContext&) const override {
    return int64_t{d_.batches} * d_.in_h * d_.in_w * d_.in_c * d_.k_h * d_.k_w * d_.out_c;
  }

 private:
  std::unique_ptr<TransposeConvF32> fast_;
  bool use_fast_ = false;
  TransposeDims d_;
};

}  // namespace

Expected<std::unique_ptr<rt::OpKernel>> CreateTransposeConv(const rt::KernelCreateContext& cc) {
  const Tensor* w = cc.input(1);
  const Tensor* in = cc.input(2);
  const Tensor* bias = cc.input(3);
  const Tensor* out = cc.output(0);
  if (!w || !in || !out) return cc.Error("needs output_shape, weights, input and output tensors");
  auto unsupported = [&]() -> Expected<std::unique_ptr<rt::OpKernel>> {
    return cc.Error(DescribeTypes(cc, {{"weights", 1}, {"input", 2}, {"bias", 3}, {"output", -1}}) +
                    " is not supported");
  };
  TcKind kind;
  DType bias_type;
  if (in->type == DType::kFloat32 && w->type == DType::kFloat32) {
    kind = TcKind::kFloat;
    bias_type = DType::kFloat32;
  } else if (in->type == DType::kUInt8 && w->type == DType::kUInt8) {
    kind = TcKind::kUInt8;
    bias_type = DType::kInt32;
  } else if (in->type == DType::kInt8 && w->type == DType::kInt8) {
    kind = TcKind::kInt8;
    bias_type = DType::kInt32;
  } else if (in->type == DType::kInt16 && w->type == DType::kInt8) {
    kind = TcKind::kInt16;
    bias_type = bias && bias->type == DType::kInt32 ? DType::kInt32 : DType::kInt64;
  } else {
    return unsupported();
  }
  if (out->type != in->type || (bias && bias->type != bias_type)) return unsupported();
  return std::unique_ptr<rt::OpKernel>(
      new TransposeConvKernel(kind, kind == TcKind::kFloat ? MakeTransposeConvF32(cc) : nullptr,
                              kind == TcKind::kInt8 || kind == TcKind::kUInt8 ? MakeTransposeConvQ(cc) : nullptr));
}

Expected<std::unique_ptr<rt::OpKernel>> CreateTransposeConvBias(const rt::KernelCreateContext& cc) {
  for (int i = 0; i < cc.num_inputs(); ++i) {
    const Tensor* t = cc.input(i);
    if (t && t->type != DType::kFloat32)
      return cc.Error("input " + std::to_string(i) + " '" + t->name + "' is " + TypeName(t->type) +
                      "; only float32 is supported");
  }
  if (cc.output(0) && cc.output(0)->type != DType::kFloat32) return cc.Error("only float32 outputs are supported");
  return std::unique_ptr<rt::OpKernel>(new TransposeConvBiasKernel(MakeTransposeConvF32(cc)));
}

}  // namespace edgeopt::kernels
