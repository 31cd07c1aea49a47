// Unary elementwise ops: EXP LOG SQRT RSQRT ABS NEG SIN COS FLOOR CEIL ROUND SQUARE SIGN.
// Float ops call the same libm functions TFLite 2.9 does (single precision). Quantized forms as
// in 2.9: ABS int8/int16 takes |x - zero_point| and rescales by in_scale/out_scale; RSQRT int8
// computes 1/sqrt(x - zero_point) with LiteRT's fixed-point inverse square root, then rescales
// by 1/(sqrt(in_scale)*out_scale), and rejects inputs below the zero point.
#include <cmath>
#include <memory>

#include "kernels/common/elementwise_util.h"
#include "kernels/common/fixed_point.h"
#include "kernels/common/quant_utils.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {
namespace {

using Op = tflite::BuiltinOperator;

const char* ShortName(Op op) {
  switch (op) {
    case tflite::BuiltinOperator_EXP: return "exp";
    case tflite::BuiltinOperator_LOG: return "log";
    case tflite::BuiltinOperator_SQRT: return "sqrt";
    case tflite::BuiltinOperator_RSQRT: return "rsqrt";
    case tflite::BuiltinOperator_ABS: return "abs";
    case tflite::BuiltinOperator_NEG: return "neg";
    case tflite::BuiltinOperator_SIN: return "sin";
    case tflite::BuiltinOperator_COS: return "cos";
    case tflite::BuiltinOperator_FLOOR: return "floor";
    case tflite::BuiltinOperator_CEIL: return "ceil";
    case tflite::BuiltinOperator_ROUND: return "round";
    case tflite::BuiltinOperator_SQUARE: return "square";
    case tflite::BuiltinOperator_SIGN: return "sign";
    default: return "unary";
  }
}

std::vector<DType> SupportedTypes(Op op) {
  switch (op) {
    case tflite::BuiltinOperator_ABS: return {DType::kFloat32, DType::kInt8, DType::kInt16};
    case tflite::BuiltinOperator_RSQRT: return {DType::kFloat32, DType::kInt8};
    case tflite::BuiltinOperator_NEG: return {DType::kFloat32, DType::kInt32, DType::kInt64};
    case tflite::BuiltinOperator_SIGN: return {DType::kFloat32, DType::kFloat64, DType::kInt32};
    default: return {DType::kFloat32};
  }
}

// TFLite's RoundToNearest: half to even, computed from floor.
float RoundHalfEven(float value) {
  const float floor_val = std::floor(value);
  const float diff = value - floor_val;
  if (diff < 0.5f || (diff == 0.5f && std::fmod(floor_val, 2.0f) == 0.0f)) return floor_val;
  return floor_val + 1.0f;
}

float FloatFn(Op op, float x) {
  switch (op) {
    case tflite::BuiltinOperator_EXP: return std::exp(x);
    case tflite::BuiltinOperator_LOG: return std::log(x);
    case tflite::BuiltinOperator_SQRT: return std::sqrt(x);
    case tflite::BuiltinOperator_RSQRT: return 1.f / std::sqrt(x);
    case tflite::BuiltinOperator_ABS: return std::fabs(x);
    case tflite::BuiltinOperator_NEG: return -x;
    case tflite::BuiltinOperator_SIN: return std::sin(x);
    case tflite::BuiltinOperator_COS: return std::cos(x);
    case tflite::BuiltinOperator_FLOOR: return std::floor(x);
    case tflite::BuiltinOperator_CEIL: return std::ceil(x);
    case tflite::BuiltinOperator_ROUND: return RoundHalfEven(x);
    case tflite::BuiltinOperator_SQUARE: return x * x;
    case tflite::BuiltinOperator_SIGN: return static_cast<float>((0.0f < x) - (x < 0.0f));
    default: return x;
  }
}

class UnaryKernel : public rt::OpKernel {
 public:
  UnaryKernel(Op op, DType type) : op_(op), type_(type) {}

  std::string variant() const override { return std::string(ShortName(op_)) + "/" + TypeName(type_) + "/ref"; }

  Status Prepare(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckInputCount(ctx, 1, 1));
    RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
    ASSIGN_OR_RETURN(const rt::RtTensor* in, RequiredInput(ctx, 0));
    const rt::RtTensor* out = ctx.output(0);
    if (out->type != in->type) return ctx.Error("output " + Describe(*out) + " must have the input type " + TypeName(in->type));
    if (in->type == DType::kInt8 || in->type == DType::kInt16) {
      RETURN_IF_ERROR(RequirePerTensorQuant(ctx, *in, "input"));
      RETURN_IF_ERROR(RequirePerTensorQuant(ctx, *out, "output"));
      in_zp_ = in->zero_point();
      out_zp_ = out->zero_point();
      if (in->type == DType::kInt16 && (in_zp_ != 0 || out_zp_ != 0))
        return ctx.Error("int16 input and output must have zero point 0");
      const float in_scale = in->scale(), out_scale = out->scale();
      needs_rescale_ = in_scale != out_scale;
      if (op_ == tflite::BuiltinOperator_ABS && needs_rescale_) {
        QuantizeMultiplier(in_scale / out_scale, &multiplier_, &shift_);
      } else if (op_ == tflite::BuiltinOperator_RSQRT) {
        const double scale = 1. / static_cast<double>(std::sqrt(in_scale) * out_scale);
        QuantizeMultiplier(scale, &multiplier_, &shift_);
      }
    }
    return ctx.SetOutputShape(0, in->shape);
  }

  Status Invoke(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    rt::RtTensor& out = *ctx.output(0);
    const int64_t n = in.num_elements();
    switch (type_) {
      case DType::kFloat32: {
        const float* x = in.data_as<float>();
        float* y = out.data_as<float>();
        for (int64_t i = 0; i < n; ++i) y[i] = FloatFn(op_, x[i]);
        return Status::Ok();
      }
      case DType::kFloat64: {  // SIGN only
        const double* x = in.data_as<double>();
        double* y = out.data_as<double>();
        for (int64_t i = 0; i < n; ++i) y[i] = static_cast<double>((0.0 < x[i]) - (x[i] < 0.0));
        return Status::Ok();
      }
      case DType::kInt32: return IntOp<int32_t>(in, out);
      case DType::kInt64: return IntOp<int64_t>(in, out);
      case DType::kInt8:
        return op_ == tflite::BuiltinOperator_ABS ? QuantizedAbs<int8_t>(in, out) : QuantizedRsqrt(ctx, in, out);
      case DType::kInt16: return QuantizedAbs<int16_t>(in, out);
      default: return ctx.UnsupportedError(TypeName(type_) + " is not supported");
    }
  }

 private:
  template <typename T>
  Status IntOp(const rt::RtTensor& in, rt::RtTensor& out) const {
    const T* x = in.data_as<T>();
    T* y = out.data_as<T>();
    const int64_t n = in.num_elements();
    using U = std::make_unsigned_t<T>;
    for (int64_t i = 0; i < n; ++i) {
      if (op_ == tflite::BuiltinOperator_SIGN)
        y[i] = static_cast<T>((T(0) < x[i]) - (x[i] < T(0)));
      else  // NEG, wrapping like two's complement hardware
        y[i] = static_cast<T>(U(0) - static_cast<U>(x[i]));
    }
    return Status::Ok();
  }

  template <typename T>
  Status QuantizedAbs(const rt::RtTensor& in, rt::RtTensor& out) const {
    const T* x = in.data_as<T>();
    T* y = out.data_as<T>();
    const int64_t n = in.num_elements();
    const int32_t lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
    for (int64_t i = 0; i < n; ++i) {
      const int32_t value = std::abs(static_cast<int32_t>(x[i]) - in_zp_);
      const int32_t o = needs_rescale_ ? MultiplyByQuantizedMultiplier(value, multiplier_, shift_) + out_zp_
                                       : value + out_zp_;
      y[i] = static_cast<T>(std::min(std::max(o, lo), hi));
    }
    return Status::Ok();
  }

  Status QuantizedRsqrt(rt::KernelContext& ctx, const rt::RtTensor& in, rt::RtTensor& out) const {
    const int8_t* x = in.data_as<int8_t>();
    int8_t* y = out.data_as<int8_t>();
    const int64_t n = in.num_elements();
    for (int64_t i = 0; i < n; ++i)
      if (x[i] < in_zp_) return ctx.Error("defined only for inputs >= 0 (a quantized input is below the zero point)");
    constexpr int kShift = 20;  // keeps the intermediate an integer
    for (int64_t i = 0; i < n; ++i) {
      const int32_t value = x[i] - in_zp_;
      if (value == 0) {
        y[i] = 127;  // 1/sqrt(0): the largest output
        continue;
      }
      int32_t inv_sqrt_multiplier;
      int inv_sqrt_shift;
      fp::GetInvSqrtQuantizedMultiplierExp(value, -1, &inv_sqrt_multiplier, &inv_sqrt_shift);
      const int32_t data = MultiplyByQuantizedMultiplier(int32_t{1}, inv_sqrt_multiplier, inv_sqrt_shift + kShift);
      const int32_t o = MultiplyByQuantizedMultiplier(data, multiplier_, shift_ - kShift) + out_zp_;
      y[i] = static_cast<int8_t>(std::min(std::max(o, -128), 127));
    }
    return Status::Ok();
  }

  Op op_;
  DType type_;
  int32_t in_zp_ = 0, out_zp_ = 0, multiplier_ = 0;
  int shift_ = 0;
  bool needs_rescale_ = false;
};

rt::KernelFactory MakeFactory(Op op) {
  return [op](const rt::KernelCreateContext& cc) -> Expected<std::unique_ptr<rt::OpKernel>> {
    const Tensor* in = cc.input(0);
    if (!in) return cc.Error("input 0 is missing");
    const auto types = SupportedTypes(op);
    if (!TypeIn(in->type, types))
      return cc.Error("input type " + TypeName(in->type) + " is not supported (supported: " + TypeListText(types) + ")");
    return std::unique_ptr<rt::OpKernel>(new UnaryKernel(op, in->type));
  };
}

}  // namespace

void RegisterUnaryKernels(rt::OpRegistry& r) {
  for (Op op : {tflite::BuiltinOperator_EXP, tflite::BuiltinOperator_LOG, tflite::BuiltinOperator_SQRT,
                tflite::BuiltinOperator_RSQRT, tflite::BuiltinOperator_ABS, tflite::BuiltinOperator_NEG,
                tflite::BuiltinOperator_SIN, tflite::BuiltinOperator_COS, tflite::BuiltinOperator_FLOOR,
                tflite::BuiltinOperator_CEIL, tflite::BuiltinOperator_ROUND, tflite::BuiltinOperator_SQUARE,
                tflite::BuiltinOperator_SIGN})
    r.Add(op, MakeFactory(op));
}

}  // namespace edgeopt::kernels
