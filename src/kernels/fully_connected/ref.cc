// FULLY_CONNECTED reference kernels, TFLite 2.9 semantics. Weights are [units, depth]; the input
// is flattened to [elements / depth, depth] (or, with keep_num_dims, keeps its leading dims and
// must end in depth). The bias is optional.
//   float32        out = act(bias + sum(in * w))
//   uint8 / int8   per-tensor activations; weights per tensor with a zero point (LiteRT's
//                  legacy multiplier: float(in_scale * w_scale) / out_scale), requantized with
//                  ruy's rounding as 2.9's GEMM kernel on x86 does (MultiplyByQuantizedMultiplierRuy)
//   int8 per-channel weights (newer LiteRT; 2.9 reads the legacy scale, 0 for per-axis tensors):
//                  multiplier double(in) * double(w[c]) / double(out), same rounding
//   int16 x int8   zero points 0; with an int64 bias the reference kernel (64-bit
//                  requantization); with an int32 bias or none, int32 accumulators and ruy's
//                  portable single rounding, as 2.9 routes that form through ruy
//   hybrid         float input/output, int8 weights: each batch row quantized at every invoke,
//                  symmetric, or asymmetric with asymmetric_quantize_inputs;
//                  out = act(bias + (dot - zp * rowsum(w)) * (in_scale * w_scale)).
//                  Per-channel weights (newer LiteRT) use w_scale[unit].
#include <algorithm>
#include <cmath>

#include "kernels/common/hybrid_quant.h"
#include "kernels/common/kernel_util.h"
#include "kernels/common/nn_util.h"
#include "kernels/common/quant_utils.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {
namespace {

enum class FcKind { kFloat, kHybrid, kUInt8, kInt8, kInt16 };

class FullyConnectedKernel : public rt::OpKernel {
 public:
  explicit FullyConnectedKernel(FcKind kind) : kind_(kind) {}
  Status Prepare(rt::KernelContext& ctx) override;
  Status Invoke(rt::KernelContext& ctx) override;
  std::string variant() const override {
    switch (kind_) {
      case FcKind::kFloat: return "fully_connected/f32/ref";
      case FcKind::kHybrid: return "fully_connected/hybrid/ref";
      case FcKind::kUInt8: return "fully_connected/uint8/ref";
      case FcKind::kInt8: return "fully_connected/int8/ref";
      case FcKind::kInt16: return "fully_connected/int16x8/ref";
    }
    return "fully_connected/ref";
  }
  int64_t Macs(const rt::KernelContext&) const override { return int64_t{batches_} * units_ * depth_; }

 private:
  // Visits every output element with its integer dot product:
  // finish(batch, unit, sum((in + in_offset(batch)) * (w + w_offset))).
  template <typename In, typename W, typename InOffset, typename Finish>
  void Dot(rt::KernelContext& ctx, const In* in, const W* w, int32_t w_offset, InOffset in_offset_of,
           Finish&& finish) const {
    const int units = units_, depth = depth_;
    ctx.threads().ParallelFor(int64_t{batches_} * units, 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const int b = static_cast<int>(i / units), u = static_cast<int>(i % units);
        const In* x = in + int64_t{b} * depth;
        const W* row = w + int64_t{u} * depth;
        const int64_t in_off = in_offset_of(b);
        int64_t acc = 0;
        for (int k = 0; k < depth; ++k) acc += (x[k] + in_off) * (int64_t{row[k]} + w_offset);
        finish(b, u, acc);
      }
    });
  }

  FcKind kind_;
  int batches_ = 0, units_ = 0, depth_ = 0;
  std::vector<int32_t> multiplier_;
  std::vector<int> shift_;
  int32_t act_min_ = 0, act_max_ = 0;
  float fact_min_ = 0, fact_max_ = 0;
  bool asymmetric_inputs_ = false;
  int quantized_input_scratch_ = -1;
  std::vector<float> batch_scale_;
  std::vector<int32_t> batch_zero_point_;
};

Status FullyConnectedKernel::Prepare(rt::KernelContext& ctx) {
  RETURN_IF_ERROR(CheckInputCount(ctx, 2, 3));
  RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
  ASSIGN_OR_RETURN(rt::RtTensor * input, RequiredInput(ctx, 0));
  ASSIGN_OR_RETURN(rt::RtTensor * weights, RequiredInput(ctx, 1));
  const rt::RtTensor* bias = ctx.input(2);
  const rt::RtTensor* output = ctx.output(0);
  const auto& o = GetOptions<tflite::FullyConnectedOptionsT>(ctx.op());
  if (weights->rank() != 2) return ctx.Error("weights " + Describe(*weights) + " must have rank 2 ([units, depth])");
  units_ = weights->dim(0);
  depth_ = weights->dim(1);
  if (bias && bias->num_elements() != units_)
    return ctx.Error("bias " + Describe(*bias) + " must have " + std::to_string(units_) + " elements");
  const int64_t elements = input->num_elements();
  rt::Shape out_shape;
  if (o.keep_num_dims) {
    if (input->rank() < 1 || input->dim(-1) != depth_)
      return ctx.Error("with keep_num_dims the input " + Describe(*input) + " must end in the weights' depth " +
                       std::to_string(depth_));
    out_shape = input->shape;
    out_shape.back() = units_;
  } else {
    if (depth_ <= 0 || elements % depth_ != 0)
      return ctx.Error("input " + Describe(*input) + " has " + std::to_string(elements) +
                       " elements, not a multiple of the weights' depth " + std::to_string(depth_) + " (" +
                       Describe(*weights) + ")");
    out_shape = {static_cast<int32_t>(elements / std::max(depth_, 1)), units_};
  }
  batches_ = depth_ > 0 ? static_cast<int>(elements / depth_) : 0;

  switch (kind_) {
    case FcKind::kFloat:
      RETURN_IF_ERROR(FloatActivation(ctx, o.fused_activation_function, &fact_min_, &fact_max_));
      break;
    case FcKind::kHybrid:
      RETURN_IF_ERROR(FloatActivation(ctx, o.fused_activation_function, &fact_min_, &fact_max_));
      RETURN_IF_ERROR(RequireWeightQuant(ctx, *weights, units_, 0, /*symmetric=*/true));
      asymmetric_inputs_ = o.asymmetric_quantize_inputs;
      quantized_input_scratch_ = ctx.RequestScratch(static_cast<size_t>(elements));
      batch_scale_.assign(batches_, 0.0f);
      batch_zero_point_.assign(batches_, 0);
      break;
    case FcKind::kUInt8:
    case FcKind::kInt8:
    case FcKind::kInt16: {
      RETURN_IF_ERROR(RequirePerTensorQuant(ctx, *input, "input"));
      RETURN_IF_ERROR(RequirePerTensorQuant(ctx, *output, "output"));
      // int8 weights may carry a (per-tensor) zero point in LiteRT's FULLY_CONNECTED.
      RETURN_IF_ERROR(RequireWeightQuant(ctx, *weights, units_, 0, /*symmetric=*/kind_ == FcKind::kInt16));
      if (weights->per_channel() && kind_ == FcKind::kUInt8)
        return ctx.UnsupportedError("uint8 weights " + Describe(*weights) + " must be quantized per tensor");
      if (weights->per_channel())
        for (int64_t z : weights->quant->zero_point)
          if (z != 0) return ctx.UnsupportedError("per-channel weights " + Describe(*weights) + " must be symmetric");
      if (kind_ == FcKind::kInt16 && (input->zero_point() != 0 || output->zero_point() != 0))
        return ctx.Error("int16 input and output must have zero point 0 (input " + std::to_string(input->zero_point()) +
                         ", output " + std::to_string(output->zero_point()) + ")");
      if (weights->per_channel()) {
        PerChannelQuant q = ComputePerChannelQuant(input->scale(), *weights, output->scale(), units_);
        multiplier_ = std::move(q.multiplier);
        shift_ = std::move(q.shift);
      } else {
        RETURN_IF_ERROR(CheckLegacyBiasScale(ctx, *input, *weights, kind_ == FcKind::kInt16 ? nullptr : bias));
        multiplier_.assign(1, 0);
        shift_.assign(1, 0);
        QuantizeMultiplier(LegacyConvMultiplier(input->scale(), weights->scale(), output->scale()), &multiplier_[0],
                           &shift_[0]);
      }
      RETURN_IF_ERROR(QuantizedActivation(ctx, o.fused_activation_function, *output, &act_min_, &act_max_));
      break;
    }
  }
  return ctx.SetOutputShape(0, std::move(out_shape));
}

Status FullyConnectedKernel::Invoke(rt::KernelContext& ctx) {
  const rt::RtTensor* input = ctx.input(0);
  const rt::RtTensor* weights = ctx.input(1);
  const rt::RtTensor* bias = ctx.input(2);
  rt::RtTensor* output = ctx.output(0);
  if (output->num_elements() == 0) return Status::Ok();
  const int units = units_, depth = depth_;
  switch (kind_) {
    case FcKind::kFloat: {
      const float* x = input->data_as<float>();
      const float* w = weights->data_as<float>();
      const float* b = bias ? bias->data_as<float>() : nullptr;
      float* out = output->data_as<float>();
      ctx.threads().ParallelFor(int64_t{batches_} * units, 16, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const float* xr = x + (i / units) * depth;
          const float* wr = w + (i % units) * depth;
          float acc = 0;
          for (int k = 0; k < depth; ++k) acc += xr[k] * wr[k];
          if (b) acc += b[i % units];
          out[i] = std::min(std::max(acc, fact_min_), fact_max_);
        }
      });
      return Status::Ok();
    }
    case FcKind::kHybrid: {
      int8_t* q = ctx.Scratch<int8_t>(quantized_input_scratch_);
      QuantizeRows(input->data_as<float>(), batches_, depth, asymmetric_inputs_, q, batch_scale_.data(),
                   batch_zero_point_.data());
      const float* b = bias ? bias->data_as<float>() : nullptr;
      float* out = output->data_as<float>();
      const rt::RtTensor& w = *weights;
      const bool per_channel = w.per_channel();
      Dot(
          ctx, q, weights->data_as<int8_t>(), 0, [&](int bi) { return -batch_zero_point_[bi]; },
          [&](int bi, int u, int64_t acc) {
            // LiteRT folds the weight scale into the batch scale (per-tensor) or multiplies the
            // two per unit (per-channel): the same float product either way.
            const float scale =
                per_channel ? batch_scale_[bi] * w.quant->scale[u] : batch_scale_[bi] * w.quant->scale[0];
            float v = static_cast<float>(WrapToInt32(acc)) * scale;
            if (b) v = b[u] + v;
            out[int64_t{bi} * units + u] = std::min(std::max(v, fact_min_), fact_max_);
          });
      return Status::Ok();
    }
    case FcKind::kUInt8: {
      const int32_t* b = bias ? bias->data_as<int32_t>() : nullptr;
      uint8_t* out = output->data_as<uint8_t>();
      const int32_t in_off = -input->zero_point(), w_off = -static_cast<int32_t>(weights->quant->zp(0));
      const int32_t out_off = output->zero_point();
      Dot(
          ctx, input->data_as<uint8_t>(), weights->data_as<uint8_t>(), w_off, [&](int) { return in_off; },
          [&](int bi, int u, int64_t acc) {
            if (b) acc += b[u];
            const int32_t v = MultiplyByQuantizedMultiplierRuy(WrapToInt32(acc), multiplier_[0], shift_[0]);
            out[int64_t{bi} * units + u] = static_cast<uint8_t>(std::clamp(v + out_off, act_min_, act_max_));
          });
      return Status::Ok();
    }
    case FcKind::kInt8: {
      const int32_t* b = bias ? bias->data_as<int32_t>() : nullptr;
      int8_t* out = output->data_as<int8_t>();
      const int32_t in_off = -input->zero_point(), w_off = -static_cast<int32_t>(weights->quant->zp(0));
      const int32_t out_off = output->zero_point();
      const bool per_channel = multiplier_.size() > 1;
      Dot(
          ctx, input->data_as<int8_t>(), weights->data_as<int8_t>(), per_channel ? 0 : w_off,
          [&](int) { return in_off; },
          [&](int bi, int u, int64_t acc) {
            if (b) acc += b[u];
            const int c = per_channel ? u : 0;
            const int32_t v = MultiplyByQuantizedMultiplierRuy(WrapToInt32(acc), multiplier_[c], shift_[c]);
            out[int64_t{bi} * units + u] = static_cast<int8_t>(std::clamp(v + out_off, act_min_, act_max_));
          });
      return Status::Ok();
    }
    case FcKind::kInt16: {
      int16_t* out = output->data_as<int16_t>();
      const bool per_channel = multiplier_.size() > 1;
      if (bias && bias->type == DType::kInt64) {
        const int64_t* b = bias->data_as<int64_t>();
        Dot(
            ctx, input->data_as<int16_t>(), weights->data_as<int8_t>(), 0, [](int) { return 0; },
            [&](int bi, int u, int64_t acc) {
              const int c = per_channel ? u : 0;
              const int32_t v = MultiplyByQuantizedMultiplier(acc + b[u], multiplier_[c], shift_[c]);
              out[int64_t{bi} * units + u] = static_cast<int16_t>(std::clamp(v, act_min_, act_max_));
            });
      } else {
        // 2.9 runs this form through ruy (int32 accumulators), whose portable path handles int16
        // sources: single rounding.
        const int32_t* b = bias ? bias->data_as<int32_t>() : nullptr;
        Dot(
            ctx, input->data_as<int16_t>(), weights->data_as<int8_t>(), 0, [](int) { return 0; },
            [&](int bi, int u, int64_t acc) {
              if (b) acc += b[u];
              const int c = per_channel ? u : 0;
              const int32_t v = MultiplyByQuantizedMultiplierSingleRound(WrapToInt32(acc), multiplier_[c], shift_[c]);
              out[int64_t{bi} * units + u] = static_cast<int16_t>(std::clamp(v, act_min_, act_max_));
            });
      }
      return Status::Ok();
    }
  }
  return Status::Ok();
}

Expected<std::unique_ptr<rt::OpKernel>> CreateFullyConnected(const rt::KernelCreateContext& cc) {
  const Tensor* in = cc.input(0);
  const Tensor* w = cc.input(1);
  const Tensor* bias = cc.input(2);
  const Tensor* out = cc.output(0);
  if (!in || !w || !out) return cc.Error("needs input, weights and output tensors");
  const auto& o = GetOptions<tflite::FullyConnectedOptionsT>(cc.op);
  if (o.weights_format != tflite::FullyConnectedOptionsWeightsFormat_DEFAULT)
    return cc.Error(std::string("weights format ") +
                    tflite::EnumNameFullyConnectedOptionsWeightsFormat(o.weights_format) +
                    " is not supported (only DEFAULT)");
  if (w->sparsity) return cc.Error("sparse weights '" + w->name + "' are not supported");
  auto unsupported = [&]() -> Expected<std::unique_ptr<rt::OpKernel>> {
    return cc.Error(DescribeTypes(cc, {{"input", 0}, {"weights", 1}, {"bias", 2}, {"output", -1}}) +
                    " is not supported");
  };
  FcKind kind;
  DType bias_type;
  if (in->type == DType::kFloat32 && w->type == DType::kFloat32) {
    kind = FcKind::kFloat;
    bias_type = DType::kFloat32;
  } else if (in->type == DType::kFloat32 && w->type == DType::kInt8) {
    kind = FcKind::kHybrid;
    bias_type = DType::kFloat32;
  } else if (in->type == DType::kUInt8 && w->type == DType::kUInt8) {
    kind = FcKind::kUInt8;
    bias_type = DType::kInt32;
  } else if (in->type == DType::kInt8 && w->type == DType::kInt8) {
    kind = FcKind::kInt8;
    bias_type = DType::kInt32;
  } else if (in->type == DType::kInt16 && w->type == DType::kInt8) {
    kind = FcKind::kInt16;
    bias_type = bias && bias->type == DType::kInt32 ? DType::kInt32 : DType::kInt64;
  } else {
    return unsupported();
  }
  if (out->type != in->type || (bias && bias->type != bias_type)) return unsupported();
  return std::unique_ptr<rt::OpKernel>(new FullyConnectedKernel(kind));
}

}  // namespace

void RegisterFullyConnectedKernels(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_FULLY_CONNECTED, CreateFullyConnected);
}

}  // namespace edgeopt::kernels
