// Binary arithmetic with numpy broadcasting: ADD SUB MUL DIV SQUARED_DIFFERENCE MAXIMUM MINIMUM
// POW FLOOR_DIV FLOOR_MOD. Semantics and integer arithmetic follow TFLite 2.9:
// - ADD/SUB on int8/uint8 (and int16 with general scales): both inputs are rescaled to a common
//   scale after a left shift of 20 bits (15 for int16), added, then rescaled to the output.
// - int16 ADD/SUB with power-of-two scales and pot_scale_int16 (the default): one input is
//   shifted right to the output scale and the sum saturates (LSTM-style fixed point).
// - MUL: (a - za) * (b - zb) times one multiplier in_scale1*in_scale2/out_scale.
// - DIV uint8: a reciprocal of the divisor in fixed point, then one multiplier.
// - SQUARED_DIFFERENCE int8: inputs rescaled after a left shift of 7, difference squared.
// Multipliers are computed from the same float/double expressions TFLite uses (for example the
// MUL scale product is a float product), because a different rounding there changes results.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#include "kernels/common/elementwise_util.h"
#include "kernels/common/fixed_point.h"
#include "kernels/common/lut.h"
#include "kernels/common/quant_utils.h"
#include "kernels/elementwise/ops.h"
#include "kernels/quant_fast/quant_binary.h"

namespace edgeopt::kernels::elementwise {
namespace {

using Op = tflite::BuiltinOperator;

const char* ShortName(Op op) {
  switch (op) {
    case tflite::BuiltinOperator_ADD: return "add";
    case tflite::BuiltinOperator_SUB: return "sub";
    case tflite::BuiltinOperator_MUL: return "mul";
    case tflite::BuiltinOperator_DIV: return "div";
    case tflite::BuiltinOperator_SQUARED_DIFFERENCE: return "squared_difference";
    case tflite::BuiltinOperator_MAXIMUM: return "maximum";
    case tflite::BuiltinOperator_MINIMUM: return "minimum";
    case tflite::BuiltinOperator_POW: return "pow";
    case tflite::BuiltinOperator_FLOOR_DIV: return "floor_div";
    case tflite::BuiltinOperator_FLOOR_MOD: return "floor_mod";
    default: return "binary";
  }
}

// The dtypes each op supports (as TFLite 2.9's built-in kernels).
std::vector<DType> SupportedTypes(Op op) {
  using D = DType;
  switch (op) {
    case tflite::BuiltinOperator_ADD:
    case tflite::BuiltinOperator_SUB:
      return {D::kFloat32, D::kInt32, D::kInt64, D::kUInt8, D::kInt8, D::kInt16};
    case tflite::BuiltinOperator_MUL:
      return {D::kFloat32, D::kInt32, D::kInt64, D::kUInt8, D::kInt8, D::kInt16};
    case tflite::BuiltinOperator_DIV:
      return {D::kFloat32, D::kInt32, D::kUInt8};
    case tflite::BuiltinOperator_SQUARED_DIFFERENCE:
      return {D::kFloat32, D::kInt32, D::kInt8};
    case tflite::BuiltinOperator_MAXIMUM:
    case tflite::BuiltinOperator_MINIMUM:
      return {D::kFloat32, D::kUInt8, D::kInt8, D::kInt16, D::kInt32, D::kInt64};
    case tflite::BuiltinOperator_POW:
      return {D::kFloat32, D::kInt32};
    case tflite::BuiltinOperator_FLOOR_DIV:
      return {D::kFloat32, D::kInt32};
    case tflite::BuiltinOperator_FLOOR_MOD:
      return {D::kFloat32, D::kInt32, D::kInt64};
    default:
      return {};
  }
}

int FusedActivation(const Operator& op) {
  switch (op.code) {
    case tflite::BuiltinOperator_ADD: return GetOptions<tflite::AddOptionsT>(op).fused_activation_function;
    case tflite::BuiltinOperator_SUB: return GetOptions<tflite::SubOptionsT>(op).fused_activation_function;
    case tflite::BuiltinOperator_MUL: return GetOptions<tflite::MulOptionsT>(op).fused_activation_function;
    case tflite::BuiltinOperator_DIV: return GetOptions<tflite::DivOptionsT>(op).fused_activation_function;
    default: return tflite::ActivationFunctionType_NONE;
  }
}

bool PotScaleInt16Option(const Operator& op) {
  if (op.code == tflite::BuiltinOperator_ADD) return GetOptions<tflite::AddOptionsT>(op).pot_scale_int16;
  if (op.code == tflite::BuiltinOperator_SUB) return GetOptions<tflite::SubOptionsT>(op).pot_scale_int16;
  return false;
}

class BinaryKernel : public rt::OpKernel {
 public:
  BinaryKernel(Op op, DType type) : op_(op), type_(type) {}

  std::string variant() const override {
    const char* t = type_ == DType::kInt16 && pot_int16_ ? "int16_pot" : DTypeName(type_).data();
    return std::string(ShortName(op_)) + "/" + t + "/ref";
  }

  Status Prepare(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckInputCount(ctx, 2, 2));
    RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
    ASSIGN_OR_RETURN(const rt::RtTensor* a, RequiredInput(ctx, 0));
    ASSIGN_OR_RETURN(const rt::RtTensor* b, RequiredInput(ctx, 1));
    const rt::RtTensor* out = ctx.output(0);
    if (a->type != b->type)
      return ctx.Error("inputs must have the same type, got " + Describe(*a) + " and " + Describe(*b));
    if (out->type != a->type)
      return ctx.Error("output " + Describe(*out) + " must have the input type " + TypeName(a->type));
    if (!MakeBroadcastPlan(a->shape, b->shape, &plan_))
      return ctx.Error("shapes " + rt::ShapeToString(a->shape) + " and " + rt::ShapeToString(b->shape) +
                       " are not broadcastable");
    activation_ = FusedActivation(ctx.op());
    float flo, fhi;
    if (!FloatActivationRange(activation_, &flo, &fhi))
      return ctx.UnsupportedError(std::string("fused activation ") +
                                  tflite::EnumNameActivationFunctionType(
                                      static_cast<tflite::ActivationFunctionType>(activation_)) +
                                  " is not supported");
    float_min_ = flo;
    float_max_ = fhi;
    if (type_ == DType::kUInt8 || type_ == DType::kInt8 || type_ == DType::kInt16) {
      RETURN_IF_ERROR(PrepareQuantized(ctx, *a, *b, *out));
    }
    return ctx.SetOutputShape(0, plan_.out);
  }

  Status Invoke(rt::KernelContext& ctx) override {
    const rt::RtTensor& a = *ctx.input(0);
    const rt::RtTensor& b = *ctx.input(1);
    rt::RtTensor& out = *ctx.output(0);
    switch (type_) {
      case DType::kFloat32: return EvalFloat(ctx, a, b, out);
      case DType::kInt32: return EvalInt<int32_t>(ctx, a, b, out);
      case DType::kInt64: return EvalInt<int64_t>(ctx, a, b, out);
      case DType::kUInt8: return EvalQuantized<uint8_t>(ctx, a, b, out);
      case DType::kInt8: return EvalQuantized<int8_t>(ctx, a, b, out);
      case DType::kInt16: return EvalQuantized<int16_t>(ctx, a, b, out);
      default: return ctx.UnsupportedError(TypeName(type_) + " is not supported");
    }
  }

 private:
  Status PrepareQuantized(rt::KernelContext& ctx, const rt::RtTensor& a, const rt::RtTensor& b,
                          const rt::RtTensor& out) {
    // MAXIMUM/MINIMUM compare raw values and need no parameters.
    if (op_ == tflite::BuiltinOperator_MAXIMUM || op_ == tflite::BuiltinOperator_MINIMUM) return Status::Ok();
    RETURN_IF_ERROR(RequirePerTensorQuant(ctx, a, "input 0"));
    RETURN_IF_ERROR(RequirePerTensorQuant(ctx, b, "input 1"));
    RETURN_IF_ERROR(RequirePerTensorQuant(ctx, out, "output"));
    RETURN_IF_ERROR(RequireZeroPointInRange(ctx, a, "input 0"));
    RETURN_IF_ERROR(RequireZeroPointInRange(ctx, b, "input 1"));
    RETURN_IF_ERROR(RequireZeroPointInRange(ctx, out, "output"));
    if (!QuantizedActivationRange(activation_, out, &act_min_, &act_max_))
      return ctx.UnsupportedError("fused activation is not supported on quantized outputs");
    const float sa = a.scale(), sb = b.scale(), so = out.scale();
    in1_offset_ = -a.zero_point();
    in2_offset_ = -b.zero_point();
    out_offset_ = out.zero_point();
    pot_int16_ = false;
    const bool add_sub = op_ == tflite::BuiltinOperator_ADD || op_ == tflite::BuiltinOperator_SUB;
    if (type_ == DType::kInt16 && (add_sub || op_ == tflite::BuiltinOperator_MUL)) {
      if (a.zero_point() != 0 || b.zero_point() != 0 || out.zero_point() != 0)
        return ctx.Error("int16 inputs and output must have zero point 0 (symmetric quantization)");
    }
    if (add_sub && type_ == DType::kInt16 && PotScaleInt16Option(ctx.op())) {
      int la, lb, lo;
      if (CheckedLog2(sa, &la) && CheckedLog2(sb, &lb) && CheckedLog2(so, &lo)) {
        pot_int16_ = true;
        in1_shift_ = la - lo;
        in2_shift_ = lb - lo;
        if (!(in1_shift_ == 0 || in2_shift_ == 0) || in1_shift_ > 0 || in2_shift_ > 0)
          return ctx.Error("int16 power-of-two scales: one input must have the output scale and the other a smaller "
                           "one (input shifts " + std::to_string(in1_shift_) + ", " + std::to_string(in2_shift_) + ")");
        return Status::Ok();
      }
    }
    switch (op_) {
      case tflite::BuiltinOperator_ADD:
      case tflite::BuiltinOperator_SUB: {
        QuantBinaryParams q;
        ComputeAddSubMultipliers(sa, sb, so, type_ == DType::kInt16 ? 15 : 20, &q);
        TakeMultipliers(q);
        return Status::Ok();
      }
      case tflite::BuiltinOperator_MUL: {
        QuantBinaryParams q;
        ComputeMulMultiplier(sa, sb, so, &q);
        out_mult_ = q.out_mult;
        out_shift_ = q.out_shift;
        return Status::Ok();
      }
      case tflite::BuiltinOperator_DIV: {
        const double real = static_cast<double>(sa / (sb * so));
        QuantizeMultiplier(real, &out_mult_, &out_shift_);
        return Status::Ok();
      }
      case tflite::BuiltinOperator_SQUARED_DIFFERENCE: {
        QuantBinaryParams q;
        ComputeSquaredDifferenceMultipliers(sa, sb, so, &q);
        TakeMultipliers(q);
        // SQUARED_DIFFERENCE has no fused activation: clamp to the type range.
        act_min_ = QMinOf(type_);
        act_max_ = QMaxOf(type_);
        return Status::Ok();
      }
      default:
        return ctx.UnsupportedError(TypeName(type_) + " is not supported");
    }
  }

  // The shifts and multipliers of both inputs and the output.
  void TakeMultipliers(const QuantBinaryParams& q) {
    left_shift_ = q.left_shift;
    in1_mult_ = q.in1_mult;
    in1_shift_ = q.in1_shift;
    in2_mult_ = q.in2_mult;
    in2_shift_ = q.in2_shift;
    out_mult_ = q.out_mult;
    out_shift_ = q.out_shift;
  }

  Status EvalFloat(rt::KernelContext& ctx, const rt::RtTensor& a, const rt::RtTensor& b, rt::RtTensor& out) const {
    const float* x = a.data_as<float>();
    const float* y = b.data_as<float>();
    float* o = out.data_as<float>();
    const float lo = float_min_, hi = float_max_;
    auto act = [lo, hi](float v) { return std::min(std::max(v, lo), hi); };
    switch (op_) {
      case tflite::BuiltinOperator_ADD: BroadcastBinary(plan_, x, y, o, [&](float p, float q) { return act(p + q); }); break;
      case tflite::BuiltinOperator_SUB: BroadcastBinary(plan_, x, y, o, [&](float p, float q) { return act(p - q); }); break;
      case tflite::BuiltinOperator_MUL: BroadcastBinary(plan_, x, y, o, [&](float p, float q) { return act(p * q); }); break;
      case tflite::BuiltinOperator_DIV: BroadcastBinary(plan_, x, y, o, [&](float p, float q) { return act(p / q); }); break;
      case tflite::BuiltinOperator_SQUARED_DIFFERENCE:
        BroadcastBinary(plan_, x, y, o, [](float p, float q) { const float d = p - q; return d * d; });
        break;
      case tflite::BuiltinOperator_MAXIMUM: BroadcastBinary(plan_, x, y, o, [](float p, float q) { return p > q ? p : q; }); break;
      case tflite::BuiltinOperator_MINIMUM: BroadcastBinary(plan_, x, y, o, [](float p, float q) { return p < q ? p : q; }); break;
      case tflite::BuiltinOperator_POW: BroadcastBinary(plan_, x, y, o, [](float p, float q) { return std::pow(p, q); }); break;
      case tflite::BuiltinOperator_FLOOR_DIV: {
        for (float v : b.span<float>())
          if (v == 0.0f) return ctx.Error("division by zero");
        BroadcastBinary(plan_, x, y, o, [](float p, float q) {
          return static_cast<float>(std::floor(static_cast<double>(p) / static_cast<double>(q)));
        });
        break;
      }
      case tflite::BuiltinOperator_FLOOR_MOD:
        BroadcastBinary(plan_, x, y, o, [](float p, float q) {
          const float m = std::fmod(p, q);
          return (m != 0 && ((q < 0) != (m < 0))) ? m + q : m;
        });
        break;
      default: return ctx.UnsupportedError("float32 is not supported");
    }
    return Status::Ok();
  }

  template <typename T>
  Status EvalInt(rt::KernelContext& ctx, const rt::RtTensor& a, const rt::RtTensor& b, rt::RtTensor& out) const {
    const T* x = a.data_as<T>();
    const T* y = b.data_as<T>();
    T* o = out.data_as<T>();
    T lo, hi;
    IntActivationRange<T>(activation_, &lo, &hi);
    using U = std::make_unsigned_t<T>;
    auto act = [lo, hi](T v) { return std::min(std::max(v, lo), hi); };
    auto check_nonzero = [&]() -> Status {
      for (T v : b.span<T>())
        if (v == 0) return ctx.Error("division by zero");
      return Status::Ok();
    };
    switch (op_) {
      // Wrapping arithmetic (two's complement), as the reference runtime's integer ops behave.
      case tflite::BuiltinOperator_ADD:
        BroadcastBinary(plan_, x, y, o, [&](T p, T q) { return act(static_cast<T>(static_cast<U>(p) + static_cast<U>(q))); });
        break;
      case tflite::BuiltinOperator_SUB:
        BroadcastBinary(plan_, x, y, o, [&](T p, T q) { return act(static_cast<T>(static_cast<U>(p) - static_cast<U>(q))); });
        break;
      case tflite::BuiltinOperator_MUL:
        BroadcastBinary(plan_, x, y, o, [&](T p, T q) { return act(static_cast<T>(static_cast<U>(p) * static_cast<U>(q))); });
        break;
      case tflite::BuiltinOperator_DIV:
        RETURN_IF_ERROR(check_nonzero());
        BroadcastBinary(plan_, x, y, o, [&](T p, T q) {
          if (q == -1) return act(static_cast<T>(U(0) - static_cast<U>(p)));  // avoids the INT_MIN / -1 trap
          return act(static_cast<T>(p / q));
        });
        break;
      case tflite::BuiltinOperator_SQUARED_DIFFERENCE:
        BroadcastBinary(plan_, x, y, o, [](T p, T q) {
          const U d = static_cast<U>(p) - static_cast<U>(q);
          return static_cast<T>(d * d);
        });
        break;
      case tflite::BuiltinOperator_MAXIMUM: BroadcastBinary(plan_, x, y, o, [](T p, T q) { return p > q ? p : q; }); break;
      case tflite::BuiltinOperator_MINIMUM: BroadcastBinary(plan_, x, y, o, [](T p, T q) { return p < q ? p : q; }); break;
      case tflite::BuiltinOperator_POW: {
        for (T v : b.span<T>())
          if (v < 0) return ctx.Error("negative exponents are not supported for " + TypeName(type_));
        // TFLite evaluates the power in double and converts back.
        BroadcastBinary(plan_, x, y, o, [](T p, T q) {
          return static_cast<T>(TruncateToInt32(std::pow(static_cast<double>(p), static_cast<double>(q))));
        });
        break;
      }
      case tflite::BuiltinOperator_FLOOR_DIV:
        RETURN_IF_ERROR(check_nonzero());
        BroadcastBinary(plan_, x, y, o, [](T p, T q) {
          return static_cast<T>(TruncateToInt64(std::floor(static_cast<double>(p) / static_cast<double>(q))));
        });
        break;
      case tflite::BuiltinOperator_FLOOR_MOD:
        RETURN_IF_ERROR(check_nonzero());
        BroadcastBinary(plan_, x, y, o, [](T p, T q) {
          const T m = q == -1 ? T(0) : static_cast<T>(p % q);
          return (m != 0 && ((q < 0) != (m < 0))) ? static_cast<T>(m + q) : m;
        });
        break;
      default: return ctx.UnsupportedError(TypeName(type_) + " is not supported");
    }
    return Status::Ok();
  }

  // TFLite 2.9's DIV uint8 ends with a rounding right shift by -total_shift, which exceeds 31
  // when the numerator is tiny next to the divisor (then the exact quotient rounds to 0). The
  // shift is undefined in C++; on the reference x86 build it shifts by the count modulo 32 with
  // a mask of all ones, so 2.9 outputs (x >> (count % 32)) + (x >= 0). Reproduced here on
  // purpose, for bit-exactness with the oracle; the result is meaningless either way.
  int32_t X86WideRightShift(int32_t unscaled, int exponent) const {
    const int32_t x = SaturatingRoundingDoublingHighMul(unscaled, out_mult_);
    return (x >> (exponent & 31)) + (x >= 0 ? 1 : 0);
  }

  template <typename T>
  T Clamp(int32_t v) const {
    return static_cast<T>(std::min(act_max_, std::max(act_min_, v)));
  }

  template <typename T>
  Status EvalQuantized(rt::KernelContext& ctx, const rt::RtTensor& a, const rt::RtTensor& b, rt::RtTensor& out) const {
    const T* x = a.data_as<T>();
    const T* y = b.data_as<T>();
    T* o = out.data_as<T>();
    switch (op_) {
      case tflite::BuiltinOperator_MAXIMUM: BroadcastBinary(plan_, x, y, o, [](T p, T q) { return p > q ? p : q; }); return Status::Ok();
      case tflite::BuiltinOperator_MINIMUM: BroadcastBinary(plan_, x, y, o, [](T p, T q) { return p < q ? p : q; }); return Status::Ok();
      case tflite::BuiltinOperator_ADD:
      case tflite::BuiltinOperator_SUB: {
        const bool sub = op_ == tflite::BuiltinOperator_SUB;
        if (pot_int16_) {
          // One input is already on the output scale; the other is shifted right onto it.
          // (2.9 runs this path without broadcasting, reading past the smaller input when
          // shapes differ; here it broadcasts like every other path.)
          const int s1 = -in1_shift_, s2 = -in2_shift_;
          BroadcastBinary(plan_, x, y, o, [&](T p, T q) {
            const int32_t v1 = s1 ? fp::RoundingDivByPOT<int32_t>(p, s1) : p;
            const int32_t v2 = s2 ? fp::RoundingDivByPOT<int32_t>(q, s2) : q;
            int32_t r = sub ? v1 - v2 : v1 + v2;
            r = std::min(32767, std::max(-32768, r));
            return Clamp<T>(r);
          });
          return Status::Ok();
        }
        const int32_t left = 1 << left_shift_;
        BroadcastBinary(plan_, x, y, o, [&](T p, T q) {
          const int32_t v1 = MultiplyByQuantizedMultiplier((in1_offset_ + p) * left, in1_mult_, in1_shift_);
          const int32_t v2 = MultiplyByQuantizedMultiplier((in2_offset_ + q) * left, in2_mult_, in2_shift_);
          const int32_t raw = sub ? v1 - v2 : v1 + v2;
          return Clamp<T>(MultiplyByQuantizedMultiplier(raw, out_mult_, out_shift_) + out_offset_);
        });
        return Status::Ok();
      }
      case tflite::BuiltinOperator_MUL:
        BroadcastBinary(plan_, x, y, o, [&](T p, T q) {
          const int32_t prod = (in1_offset_ + p) * (in2_offset_ + q);
          return Clamp<T>(out_offset_ + MultiplyByQuantizedMultiplier(prod, out_mult_, out_shift_));
        });
        return Status::Ok();
      case tflite::BuiltinOperator_DIV: {
        for (T v : b.span<T>())
          if (v == 0) return ctx.Error("division by zero (a raw divisor value of 0)");
        BroadcastBinary(plan_, x, y, o, [&](T p, T q) {
          int32_t v1 = in1_offset_ + p;
          int32_t v2 = in2_offset_ + q;
          if (v2 == 0) return Clamp<T>(v1 == 0 ? out_offset_ : (v1 > 0 ? act_max_ : act_min_));
          if (v2 < 0) {
            v1 = -v1;
            v2 = -v2;
          }
          int recip_shift;
          const int32_t inv = fp::GetReciprocal(v2, 31, &recip_shift);
          const int headroom = fp::CountLeadingSignBits32(v1);
          const int32_t unscaled = SaturatingRoundingDoublingHighMul(
              static_cast<int32_t>(static_cast<uint32_t>(v1) << headroom), inv);
          const int total_shift = out_shift_ - recip_shift - headroom;
          if (total_shift < -31) return Clamp<T>(out_offset_ + X86WideRightShift(unscaled, -total_shift));
          return Clamp<T>(out_offset_ + MultiplyByQuantizedMultiplier(unscaled, out_mult_, total_shift));
        });
        return Status::Ok();
      }
      case tflite::BuiltinOperator_SQUARED_DIFFERENCE: {
        const int32_t left = 1 << left_shift_;
        BroadcastBinary(plan_, x, y, o, [&](T p, T q) {
          const int32_t v1 = MultiplyByQuantizedMultiplier((in1_offset_ + p) * left, in1_mult_, in1_shift_);
          const int32_t v2 = MultiplyByQuantizedMultiplier((in2_offset_ + q) * left, in2_mult_, in2_shift_);
          const int32_t d = v1 - v2;
          return Clamp<T>(MultiplyByQuantizedMultiplier(d * d, out_mult_, out_shift_) + out_offset_);
        });
        return Status::Ok();
      }
      default: return ctx.UnsupportedError(TypeName(type_) + " is not supported");
    }
  }

  Op op_;
  DType type_;
  BroadcastPlan plan_;
  int activation_ = 0;
  float float_min_ = 0, float_max_ = 0;
  // Quantized parameters.
  bool pot_int16_ = false;
  int32_t in1_offset_ = 0, in2_offset_ = 0, out_offset_ = 0;
  int32_t in1_mult_ = 0, in2_mult_ = 0, out_mult_ = 0;
  int in1_shift_ = 0, in2_shift_ = 0, out_shift_ = 0, left_shift_ = 0;
  int32_t act_min_ = 0, act_max_ = 0;
};

rt::KernelFactory MakeFactory(Op op) {
  return [op](const rt::KernelCreateContext& cc) -> Expected<std::unique_ptr<rt::OpKernel>> {
    const Tensor* a = cc.input(0);
    if (!a) return cc.Error("input 0 is missing");
    const auto types = SupportedTypes(op);
    if (!TypeIn(a->type, types))
      return cc.Error("input type " + TypeName(a->type) + " is not supported (supported: " + TypeListText(types) + ")");
    return std::unique_ptr<rt::OpKernel>(new BinaryKernel(op, a->type));
  };
}

}  // namespace

void RegisterBinary(rt::OpRegistry& r) {
  for (Op op : {tflite::BuiltinOperator_ADD, tflite::BuiltinOperator_SUB, tflite::BuiltinOperator_MUL,
                tflite::BuiltinOperator_DIV, tflite::BuiltinOperator_SQUARED_DIFFERENCE, tflite::BuiltinOperator_MAXIMUM,
                tflite::BuiltinOperator_MINIMUM, tflite::BuiltinOperator_POW, tflite::BuiltinOperator_FLOOR_DIV,
                tflite::BuiltinOperator_FLOOR_MOD})
    r.Add(op, MakeFactory(op));
}

}  // namespace edgeopt::kernels::elementwise
