// Unary elementwise ops: EXP LOG SQRT RSQRT ABS NEG SIN COS FLOOR CEIL ROUND SQUARE SIGN.
// Float ops call the same libm functions TFLite 2.9 does (single precision). Quantized forms as
// in 2.9: ABS int8/int16 takes |x - zero_point| and rescales by in_scale/out_scale; RSQRT int8
// computes 1/sqrt(x - zero_point) with LiteRT's fixed-point inverse square root, then rescales
// by 1/(sqrt(in_scale)*out_scale), and rejects inputs below the zero point. Outside the reference
// kernels, int8 ABS and RSQRT look their 256 possible outputs up in a table built at Prepare from
// the same per-value code (byte_table.h: AVX-512 VBMI where the CPU has it).
#include <cmath>
#include <memory>

#include "kernels/common/byte_table.h"
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
  // table: the byte-table loop for int8 ABS / RSQRT, or null (the per-value loops).
  UnaryKernel(Op op, DType type, ApplyByteTableFn table)
      : op_(op), type_(type), table_fn_(type == DType::kInt8 ? table : nullptr) {}

  std::string variant() const override {
    return std::string(ShortName(op_)) + "/" + TypeName(type_) + "/" + ByteTableOrRefIsa(table_fn_);
  }

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
    if (table_fn_) {
      for (int v = -128; v <= 127; ++v) {
        const auto x = static_cast<int8_t>(v);
        int8_t y = 0;
        if (op_ == tflite::BuiltinOperator_ABS) QuantizedAbs<int8_t>(&x, &y, 1);
        else if (v >= in_zp_) RsqrtValues(&x, &y, 1);
        table_[static_cast<uint8_t>(x)] = static_cast<uint8_t>(y);
      }
    }
    return ctx.SetOutputShape(0, in->shape);
  }

  Status Invoke(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    rt::RtTensor& out = *ctx.output(0);
    const int64_t n = in.num_elements();
    if (table_fn_) {
      if (op_ == tflite::BuiltinOperator_RSQRT) RETURN_IF_ERROR(CheckRsqrtInput(ctx, in.data_as<int8_t>(), n));
      table_fn_(table_, static_cast<const uint8_t*>(in.data), static_cast<uint8_t*>(out.data), n);
      return Status::Ok();
    }
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
    QuantizedAbs<T>(in.data_as<T>(), out.data_as<T>(), in.num_elements());
    return Status::Ok();
  }
  template <typename T>
  void QuantizedAbs(const T* x, T* y, int64_t n) const {
    const int32_t lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
    for (int64_t i = 0; i < n; ++i) {
      const int32_t value = std::abs(static_cast<int32_t>(x[i]) - in_zp_);
      const int32_t o = needs_rescale_ ? MultiplyByQuantizedMultiplier(value, multiplier_, shift_) + out_zp_
                                       : value + out_zp_;
      y[i] = static_cast<T>(std::min(std::max(o, lo), hi));
    }
  }

  Status CheckRsqrtInput(rt::KernelContext& ctx, const int8_t* x, int64_t n) const {
    int32_t lowest = 127;
    for (int64_t i = 0; i < n; ++i) lowest = std::min<int32_t>(lowest, x[i]);
    if (n > 0 && lowest < in_zp_) return ctx.Error("defined only for inputs >= 0 (a quantized input is below the zero point)");
    return Status::Ok();
  }

  Status QuantizedRsqrt(rt::KernelContext& ctx, const rt::RtTensor& in, rt::RtTensor& out) const {
    const int64_t n = in.num_elements();
    RETURN_IF_ERROR(CheckRsqrtInput(ctx, in.data_as<int8_t>(), n));
    RsqrtValues(in.data_as<int8_t>(), out.data_as<int8_t>(), n);
    return Status::Ok();
  }
  // x >= in_zp_ (checked by the caller).
  void RsqrtValues(const int8_t* x, int8_t* y, int64_t n) const {
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
  }

  Op op_;
  DType type_;
  ApplyByteTableFn table_fn_;
  ByteTable table_{};
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
    return std::unique_ptr<rt::OpKernel>(new UnaryKernel(op, in->type, cc.reference_only ? nullptr : ByteTableFn(cc.cpu, false)));
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
