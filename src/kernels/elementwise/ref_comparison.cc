// EQUAL NOT_EQUAL LESS LESS_EQUAL GREATER GREATER_EQUAL with broadcasting; bool output.
// Quantized inputs (int8/uint8) are compared on a common scale as TFLite 2.9 does: each value
// minus its zero point, shifted left by 8 bits, times a Q31 multiplier for its scale (so inputs
// with different quantization compare by real value, up to that fixed-point precision).
#include <memory>

#include "kernels/common/elementwise_util.h"
#include "kernels/common/quant_utils.h"
#include "kernels/elementwise/ops.h"

namespace edgeopt::kernels::elementwise {
namespace {

using Op = tflite::BuiltinOperator;

const char* ShortName(Op op) {
  switch (op) {
    case tflite::BuiltinOperator_EQUAL: return "equal";
    case tflite::BuiltinOperator_NOT_EQUAL: return "not_equal";
    case tflite::BuiltinOperator_LESS: return "less";
    case tflite::BuiltinOperator_LESS_EQUAL: return "less_equal";
    case tflite::BuiltinOperator_GREATER: return "greater";
    case tflite::BuiltinOperator_GREATER_EQUAL: return "greater_equal";
    default: return "comparison";
  }
}

std::vector<DType> SupportedTypes(Op op) {
  if (op == tflite::BuiltinOperator_EQUAL || op == tflite::BuiltinOperator_NOT_EQUAL)
    return {DType::kBool, DType::kFloat32, DType::kInt32, DType::kInt64, DType::kUInt8, DType::kInt8};
  return {DType::kFloat32, DType::kInt32, DType::kInt64, DType::kUInt8, DType::kInt8};
}

template <typename T>
bool Compare(Op op, T a, T b) {
  switch (op) {
    case tflite::BuiltinOperator_EQUAL: return a == b;
    case tflite::BuiltinOperator_NOT_EQUAL: return a != b;
    case tflite::BuiltinOperator_LESS: return a < b;
    case tflite::BuiltinOperator_LESS_EQUAL: return a <= b;
    case tflite::BuiltinOperator_GREATER: return a > b;
    case tflite::BuiltinOperator_GREATER_EQUAL: return a >= b;
    default: return false;
  }
}

class ComparisonKernel : public rt::OpKernel {
 public:
  ComparisonKernel(Op op, DType type) : op_(op), type_(type) {}

  std::string variant() const override { return std::string(ShortName(op_)) + "/" + TypeName(type_) + "/ref"; }

  Status Prepare(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckInputCount(ctx, 2, 2));
    RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
    ASSIGN_OR_RETURN(const rt::RtTensor* a, RequiredInput(ctx, 0));
    ASSIGN_OR_RETURN(const rt::RtTensor* b, RequiredInput(ctx, 1));
    if (a->type != b->type)
      return ctx.Error("inputs must have the same type, got " + Describe(*a) + " and " + Describe(*b));
    if (ctx.output(0)->type != DType::kBool) return ctx.Error("output must be bool, got " + Describe(*ctx.output(0)));
    if (!MakeBroadcastPlan(a->shape, b->shape, &plan_))
      return ctx.Error("shapes " + rt::ShapeToString(a->shape) + " and " + rt::ShapeToString(b->shape) +
                       " are not broadcastable");
    if (type_ == DType::kUInt8 || type_ == DType::kInt8) {
      RETURN_IF_ERROR(RequirePerTensorQuant(ctx, *a, "input 0"));
      RETURN_IF_ERROR(RequirePerTensorQuant(ctx, *b, "input 1"));
      in1_offset_ = -a->zero_point();
      in2_offset_ = -b->zero_point();
      QuantizeMultiplier(a->scale(), &in1_mult_, &in1_shift_);
      QuantizeMultiplier(b->scale(), &in2_mult_, &in2_shift_);
    }
    return ctx.SetOutputShape(0, plan_.out);
  }

  Status Invoke(rt::KernelContext& ctx) override {
    const rt::RtTensor& a = *ctx.input(0);
    const rt::RtTensor& b = *ctx.input(1);
    bool* o = ctx.output(0)->data_as<bool>();
    switch (type_) {
      case DType::kBool: Run<bool>(a, b, o); break;
      case DType::kFloat32: Run<float>(a, b, o); break;
      case DType::kInt32: Run<int32_t>(a, b, o); break;
      case DType::kInt64: Run<int64_t>(a, b, o); break;
      case DType::kUInt8: RunQuantized<uint8_t>(a, b, o); break;
      case DType::kInt8: RunQuantized<int8_t>(a, b, o); break;
      default: return ctx.UnsupportedError(TypeName(type_) + " is not supported");
    }
    return Status::Ok();
  }

 private:
  template <typename T>
  void Run(const rt::RtTensor& a, const rt::RtTensor& b, bool* o) const {
    const Op op = op_;
    BroadcastBinary(plan_, a.data_as<T>(), b.data_as<T>(), o, [op](T p, T q) { return Compare(op, p, q); });
  }

  template <typename T>
  void RunQuantized(const rt::RtTensor& a, const rt::RtTensor& b, bool* o) const {
    constexpr int kLeftShift = 8;
    const Op op = op_;
    BroadcastBinary(plan_, a.data_as<T>(), b.data_as<T>(), o, [&](T p, T q) {
      const int32_t v1 = MultiplyByQuantizedMultiplier((in1_offset_ + p) * (1 << kLeftShift), in1_mult_, in1_shift_);
      const int32_t v2 = MultiplyByQuantizedMultiplier((in2_offset_ + q) * (1 << kLeftShift), in2_mult_, in2_shift_);
      return Compare(op, v1, v2);
    });
  }

  Op op_;
  DType type_;
  BroadcastPlan plan_;
  int32_t in1_offset_ = 0, in2_offset_ = 0, in1_mult_ = 0, in2_mult_ = 0;
  int in1_shift_ = 0, in2_shift_ = 0;
};

rt::KernelFactory MakeFactory(Op op) {
  return [op](const rt::KernelCreateContext& cc) -> Expected<std::unique_ptr<rt::OpKernel>> {
    const Tensor* a = cc.input(0);
    if (!a) return cc.Error("input 0 is missing");
    const auto types = SupportedTypes(op);
    if (!TypeIn(a->type, types))
      return cc.Error("input type " + TypeName(a->type) + " is not supported (supported: " + TypeListText(types) + ")");
    return std::unique_ptr<rt::OpKernel>(new ComparisonKernel(op, a->type));
  };
}

}  // namespace

void RegisterComparison(rt::OpRegistry& r) {
  for (Op op : {tflite::BuiltinOperator_EQUAL, tflite::BuiltinOperator_NOT_EQUAL, tflite::BuiltinOperator_LESS,
                tflite::BuiltinOperator_LESS_EQUAL, tflite::BuiltinOperator_GREATER,
                tflite::BuiltinOperator_GREATER_EQUAL})
    r.Add(op, MakeFactory(op));
}

}  // namespace edgeopt::kernels::elementwise
