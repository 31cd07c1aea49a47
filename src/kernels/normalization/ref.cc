// L2_NORMALIZATION (float32, uint8, int8) and LOCAL_RESPONSE_NORMALIZATION (float32) over the
// last dimension, as TFLite 2.9:
// - L2 float: x / max(sqrt(sum x^2), 1e-6). Quantized: the sum of squared (x - zero_point) in
//   int32 and LiteRT's fixed-point inverse square root; output scale 1/128 with zero point
//   128 (uint8) or 0 (int8). Inputs of rank at most 4; no fused activation.
// - LRN: x * (bias + alpha * sum_{|k-c| <= radius} x_k^2)^-beta on 4-D input (the window is
//   inclusive on both sides, as 2.9's built-in kernel computes it).
#include <cmath>
#include <memory>

#include "kernels/common/elementwise_util.h"
#include "kernels/common/fixed_point.h"
#include "kernels/common/quant_utils.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {
namespace {

class L2NormKernel : public rt::OpKernel {
 public:
  explicit L2NormKernel(DType type) : type_(type) {}
  std::string variant() const override { return "l2_normalization/" + TypeName(type_) + "/ref"; }

  Status Prepare(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckInputCount(ctx, 1, 1));
    RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
    ASSIGN_OR_RETURN(const rt::RtTensor* in, RequiredInput(ctx, 0));
    const rt::RtTensor& out = *ctx.output(0);
    if (out.type != in->type) return ctx.Error("output " + Describe(out) + " must have the input type " + TypeName(in->type));
    if (in->rank() < 1 || in->rank() > 4) return ctx.Error("input must have 1 to 4 dimensions, got " + Describe(*in));
    if (GetOptions<tflite::L2NormOptionsT>(ctx.op()).fused_activation_function != tflite::ActivationFunctionType_NONE)
      return ctx.UnsupportedError("fused activations are not supported");
    if (type_ != DType::kFloat32) {
      RETURN_IF_ERROR(RequirePerTensorQuant(ctx, *in, "input"));
      RETURN_IF_ERROR(RequirePerTensorQuant(ctx, out, "output"));
      const int want_zp = type_ == DType::kUInt8 ? 128 : 0;
      if (static_cast<double>(out.scale()) != 1. / 128 || out.zero_point() != want_zp)
        return ctx.Error("output quantization must be scale 1/128, zero point " + std::to_string(want_zp));
    }
    return ctx.SetOutputShape(0, in->shape);
  }

  Status Invoke(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    rt::RtTensor& out = *ctx.output(0);
    const int64_t depth = in.shape.back();
    const int64_t outer = depth ? in.num_elements() / depth : 0;
    if (type_ == DType::kFloat32) {
      const float* x = in.data_as<float>();
      float* y = out.data_as<float>();
      for (int64_t i = 0; i < outer; ++i, x += depth, y += depth) {
        float sq = 0;
        for (int64_t c = 0; c < depth; ++c) sq += x[c] * x[c];
        const float norm = std::max(std::sqrt(sq), 1e-6f);
        for (int64_t c = 0; c < depth; ++c) y[c] = x[c] / norm;
      }
      return Status::Ok();
    }
    if (type_ == DType::kUInt8) {
      Quantized<uint8_t>(in, out, outer, depth);
    } else {
      Quantized<int8_t>(in, out, outer, depth);
    }
    return Status::Ok();
  }

 private:
  template <typename T>
  void Quantized(const rt::RtTensor& in, rt::RtTensor& out, int64_t outer, int64_t depth) const {
    const T* x = in.data_as<T>();
    T* y = out.data_as<T>();
    const int32_t zp = in.zero_point();
    for (int64_t i = 0; i < outer; ++i, x += depth, y += depth) {
      int32_t acc = 0;
      for (int64_t c = 0; c < depth; ++c) {
        const int32_t d = static_cast<int32_t>(x[c]) - zp;
        acc += d * d;
      }
      int32_t inv_mult;
      int inv_shift;
      fp::GetInvSqrtQuantizedMultiplierExp(acc, -1, &inv_mult, &inv_shift);
      for (int64_t c = 0; c < depth; ++c) {
        const int32_t d = static_cast<int32_t>(x[c]) - zp;
        int32_t o;
        if constexpr (std::is_same_v<T, uint8_t>) {
          o = 128 + MultiplyByQuantizedMultiplier(128 * d, inv_mult, inv_shift);
          o = std::min(255, std::max(0, o));
        } else {
          o = MultiplyByQuantizedMultiplier(d, inv_mult, inv_shift + 7);  // output in Q0.7
          o = std::min(127, std::max(-128, o));
        }
        y[c] = static_cast<T>(o);
      }
    }
  }

  DType type_;
};

class LrnKernel : public rt::OpKernel {
 public:
  std::string variant() const override { return "local_response_normalization/float32/ref"; }

  Status Prepare(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckInputCount(ctx, 1, 1));
    RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
    ASSIGN_OR_RETURN(const rt::RtTensor* in, RequiredInput(ctx, 0));
    if (ctx.output(0)->type != DType::kFloat32) return ctx.Error("output must be float32");
    if (in->rank() != 4) return ctx.Error("input must be 4-D, got " + Describe(*in));
    const auto& o = GetOptions<tflite::LocalResponseNormalizationOptionsT>(ctx.op());
    if (o.radius < 0) return ctx.Error("radius must be >= 0, got " + std::to_string(o.radius));
    radius_ = o.radius;
    bias_ = o.bias;
    alpha_ = o.alpha;
    beta_ = o.beta;
    return ctx.SetOutputShape(0, in->shape);
  }

  Status Invoke(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    const float* x = in.data_as<float>();
    float* y = ctx.output(0)->data_as<float>();
    const int64_t depth = in.shape.back();
    const int64_t outer = depth ? in.num_elements() / depth : 0;
    for (int64_t i = 0; i < outer; ++i, x += depth, y += depth) {
      for (int64_t c = 0; c < depth; ++c) {
        const int64_t lo = std::max<int64_t>(0, c - radius_), hi = std::min<int64_t>(depth - 1, c + radius_);
        float acc = 0;
        for (int64_t k = lo; k <= hi; ++k) acc += x[k] * x[k] * alpha_;
        const float s = bias_ + acc;
        if (beta_ == 1.0f) {
          y[c] = x[c] * (1.0f / s);
        } else if (beta_ == 0.5f) {
          y[c] = x[c] * (1.0f / std::sqrt(s));
        } else {
          y[c] = x[c] * std::pow(s, -beta_);
        }
      }
    }
    return Status::Ok();
  }

 private:
  int radius_ = 0;
  float bias_ = 0, alpha_ = 0, beta_ = 0;
};

Expected<std::unique_ptr<rt::OpKernel>> MakeL2(const rt::KernelCreateContext& cc) {
  const Tensor* in = cc.input(0);
  if (!in) return cc.Error("input 0 is missing");
  const std::vector<DType> types = {DType::kFloat32, DType::kUInt8, DType::kInt8};
  if (!TypeIn(in->type, types))
    return cc.Error("input type " + TypeName(in->type) + " is not supported (supported: " + TypeListText(types) + ")");
  return std::unique_ptr<rt::OpKernel>(new L2NormKernel(in->type));
}

Expected<std::unique_ptr<rt::OpKernel>> MakeLrn(const rt::KernelCreateContext& cc) {
  const Tensor* in = cc.input(0);
  if (!in) return cc.Error("input 0 is missing");
  if (in->type != DType::kFloat32) return cc.Error("input type " + TypeName(in->type) + " is not supported (supported: float32)");
  return std::unique_ptr<rt::OpKernel>(new LrnKernel());
}

}  // namespace

void RegisterNormalizationKernels(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_L2_NORMALIZATION, MakeL2);
  r.Add(tflite::BuiltinOperator_LOCAL_RESPONSE_NORMALIZATION, MakeLrn);
}

}  // namespace edgeopt::kernels
