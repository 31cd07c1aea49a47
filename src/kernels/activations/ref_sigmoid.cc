// LOGISTIC and TANH. What TFLite 2.9's built-in (kGenericOptimized) kernels compute:
// - float32: 1/(1+exp(-x)) and tanh(x) (2.9 uses Eigen's vectorized forms: within 1e-6).
// - int8/uint8: a 256-entry table filled in Prepare from the float function on every
//   dequantized input (LOGISTIC requires an output scale of exactly 1/256).
// - int16, power-of-two input scale 2^-12 (TANH also 2^-11): gemmlowp fixed-point
//   logistic/tanh on Q3.12 inputs (fixed_point.h), output Q0.15.
// - int16, any other input scale: the input is rescaled to 1/(3*4096) per unit and looked up
//   with linear interpolation in the Q0.16 sigmoid(i/24) table (tanh(x) = 2*sigmoid(2x) - 1).
// int16 requires zero points 0 and an output scale of 2^-15.
#include <cmath>
#include <memory>

#include "kernels/common/byte_table.h"
#include "kernels/common/elementwise_util.h"
#include "kernels/common/fixed_point.h"
#include "kernels/common/lut.h"
#include "kernels/activations/ops.h"
#include "kernels/activations/quant_act_params.h"

namespace edgeopt::kernels::activations {

Int16SigmoidScale ComputeInt16SigmoidScale(float in_scale, bool tanh) {
  Int16SigmoidScale s;
  constexpr int kInputIntegerBits = 3;
  int in_log2;
  s.pot = CheckedLog2(in_scale, &in_log2);
  s.left_shift = (15 - kInputIntegerBits) + in_log2;
  s.pot = s.pot && (tanh ? (s.left_shift == 0 || s.left_shift == 1) : s.left_shift == 0);
  if (!s.pot) {
    // Rescale the input so that 1.0 is 3*4096 (the table spans [-10.7, 10.7]).
    double multiplier = static_cast<double>(in_scale) * 4096.0 * 3.0;
    s.left_shift = 0;
    while (multiplier <= 32767.0 / 2.0 && s.left_shift <= 30) {
      ++s.left_shift;
      multiplier *= 2.0;
    }
    s.multiplier = static_cast<int32_t>(multiplier);
  }
  return s;
}

namespace {

float LogisticF(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float TanhF(float x) { return std::tanh(x); }

class SigmoidKernel : public rt::OpKernel {
 public:
  SigmoidKernel(bool tanh, DType type, ApplyByteTableFn apply) : tanh_(tanh), type_(type), apply_(apply) {}

  std::string variant() const override {
    // int16_pot: the gemmlowp fixed-point path for power-of-two input scales.
    const bool pot = type_ == DType::kInt16 && int16_multiplier_ == 0;
    const bool table = type_ == DType::kInt8 || type_ == DType::kUInt8;
    return std::string(tanh_ ? "tanh/" : "logistic/") + TypeName(type_) + (pot ? "_pot" : "") + "/" +
           (table ? ByteTableIsa(apply_) : "ref");
  }

  Status Prepare(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckInputCount(ctx, 1, 1));
    RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
    ASSIGN_OR_RETURN(const rt::RtTensor* in, RequiredInput(ctx, 0));
    const rt::RtTensor* out = ctx.output(0);
    if (out->type != in->type) return ctx.Error("output " + Describe(*out) + " must have the input type " + TypeName(in->type));
    if (type_ != DType::kFloat32) {
      RETURN_IF_ERROR(RequirePerTensorQuant(ctx, *in, "input"));
      RETURN_IF_ERROR(RequirePerTensorQuant(ctx, *out, "output"));
      RETURN_IF_ERROR(RequireZeroPointInRange(ctx, *in, "input"));
      RETURN_IF_ERROR(RequireZeroPointInRange(ctx, *out, "output"));
    }
    if (type_ == DType::kInt8 || type_ == DType::kUInt8) {
      if (!tanh_ && static_cast<double>(out->scale()) != 1. / 256)
        return ctx.Error("output scale must be 1/256, got " + std::to_string(out->scale()));
      auto f = tanh_ ? TanhF : LogisticF;
      table_ = type_ == DType::kInt8
                   ? BuildLut8<int8_t>(in->scale(), in->zero_point(), out->scale(), out->zero_point(), f)
                   : BuildLut8<uint8_t>(in->scale(), in->zero_point(), out->scale(), out->zero_point(), f);
    } else if (type_ == DType::kInt16) {
      RETURN_IF_ERROR(PrepareInt16(ctx, *in, *out));
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
        for (int64_t i = 0; i < n; ++i) y[i] = tanh_ ? TanhF(x[i]) : LogisticF(x[i]);
        break;
      }
      case DType::kInt8:
      case DType::kUInt8:
        apply_(table_, in.data, out.data, n);
        break;
      case DType::kInt16: {
        const int16_t* x = in.data_as<int16_t>();
        int16_t* y = out.data_as<int16_t>();
        if (int16_multiplier_ == 0) {
          for (int64_t i = 0; i < n; ++i) y[i] = FixedPoint16(x[i]);
        } else {
          for (int64_t i = 0; i < n; ++i) y[i] = tanh_ ? TanhLut16(x[i]) : LogisticLut16(x[i]);
        }
        break;
      }
      default: return ctx.UnsupportedError(TypeName(type_) + " is not supported");
    }
    return Status::Ok();
  }

 private:
  Status PrepareInt16(rt::KernelContext& ctx, const rt::RtTensor& in, const rt::RtTensor& out) {
    if (in.zero_point() != 0 || out.zero_point() != 0) return ctx.Error("int16 input and output must have zero point 0");
    if (!tanh_ && static_cast<double>(out.scale()) != 1. / 32768)
      return ctx.Error("int16 output scale must be 1/32768, got " + std::to_string(out.scale()));
    int out_log2;
    if (!CheckedLog2(out.scale(), &out_log2) || out_log2 != -15)
      return ctx.Error("int16 output scale must be 2^-15, got " + std::to_string(out.scale()));
    const Int16SigmoidScale s = ComputeInt16SigmoidScale(in.scale(), tanh_);
    int16_multiplier_ = s.multiplier;
    input_left_shift_ = s.left_shift;
    return Status::Ok();
  }

  int16_t FixedPoint16(int16_t x) const {
    using F3 = fp::FixedPoint<int16_t, 3>;
    if (tanh_) {
      const int16_t v = input_left_shift_ == 1 ? fp::SaturatingRoundingMulByPOT<int16_t>(x, 1) : x;
      return fp::Tanh(F3::FromRaw(v)).raw;
    }
    return fp::Logistic(F3::FromRaw(x)).raw;
  }

  int32_t ScaledInput(int16_t x) const {
    const int32_t round = input_left_shift_ > 0 ? 1 << (input_left_shift_ - 1) : 0;
    return static_cast<int32_t>((static_cast<int64_t>(x) * int16_multiplier_ + round) >> input_left_shift_);
  }

  int16_t LogisticLut16(int16_t x) const {
    const auto& table = SigmoidTableQ016();
    const int32_t input = ScaledInput(x);
    const uint32_t abs_input = static_cast<uint32_t>(std::abs(input));
    const uint32_t uh = abs_input >> 9;
    uint32_t result;
    if (uh >= 255) {
      result = 0x7FFFu << 10;
    } else {
      const uint32_t ua = table[uh], ub = table[uh + 1];
      const uint32_t ut = abs_input & 0x1ff;
      result = (ua << 9) + ut * (ub - ua);
    }
    result = input >= 0 ? result + (1u << 9) : (1u << (16 + 9)) - result + (1u << 9) - 1;
    return static_cast<int16_t>(result >> 10);
  }

  int16_t TanhLut16(int16_t x) const {
    const auto& table = SigmoidTableQ016();
    const int32_t input = ScaledInput(x);
    const uint32_t abs_input = static_cast<uint32_t>(std::abs(input));
    const uint32_t uh = abs_input >> 8;
    int32_t result;
    if (uh >= 255) {
      result = 0xFFFF << 8;
    } else {
      const uint32_t ua = table[uh], ub = table[uh + 1];
      const uint32_t ut = abs_input & 0xFF;
      result = static_cast<int32_t>((ua << 8) + ut * (ub - ua));
    }
    result = input >= 0 ? result - (1 << (14 + 9)) + (1 << (9 - 2)) : -result + (1 << (14 + 9)) + (1 << (9 - 2)) - 1;
    return static_cast<int16_t>(result >> (9 - 1));
  }

  bool tanh_;
  DType type_;
  ApplyByteTableFn apply_;
  ByteTable table_{};
  int32_t int16_multiplier_ = 0;  // 0: the power-of-two fixed-point path
  int input_left_shift_ = 0;
};

rt::KernelFactory MakeFactory(bool tanh) {
  return [tanh](const rt::KernelCreateContext& cc) -> Expected<std::unique_ptr<rt::OpKernel>> {
    const Tensor* in = cc.input(0);
    if (!in) return cc.Error("input 0 is missing");
    const std::vector<DType> types = {DType::kFloat32, DType::kUInt8, DType::kInt8, DType::kInt16};
    if (!TypeIn(in->type, types))
      return cc.Error("input type " + TypeName(in->type) + " is not supported (supported: " + TypeListText(types) + ")");
    return std::unique_ptr<rt::OpKernel>(new SigmoidKernel(tanh, in->type, ByteTableFn(cc.cpu, cc.reference_only)));
  };
}

}  // namespace

void RegisterSigmoid(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_LOGISTIC, MakeFactory(false));
  r.Add(tflite::BuiltinOperator_TANH, MakeFactory(true));
}

}  // namespace edgeopt::kernels::activations
