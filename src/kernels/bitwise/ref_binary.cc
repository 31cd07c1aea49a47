// Two-input elementwise ops with numpy broadcasting, output of the inputs' type:
// - ATAN2(y, x) = std::atan2(y, x) on float32 / float64 (TFLite's atan2.cc: same types). LiteRT
//   does not broadcast ATAN2: it rejects unequal ranks and, for equal ranks, walks y's elements
//   (wrong for other shapes). Here shapes broadcast as in TensorFlow's atan2, which gives
//   LiteRT's result wherever that is defined (equal shapes).
// - BITWISE_XOR on int8/uint8/int16/uint16/int32/uint32 (bitwise_xor.cc).
// - RIGHT_SHIFT(x, y) on the same types (right_shift.cc): the shift amount is clamped to
//   [0, bits - 1] (a negative amount shifts by 0, a large one by bits - 1), and signed values
//   shift arithmetically (the sign fills in).
// TFLite broadcasts the integer ops up to rank 4 (BroadcastBinaryFunction4DSlow); any rank here.
#include <climits>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/bitwise/bitwise.h"
#include "kernels/common/elementwise_util.h"
#include "kernels/common/planned_kernel.h"

namespace edgeopt::kernels::bitwise {
namespace {

enum class BinOp { kAtan2, kXor, kRightShift };

template <typename T>
T ShiftRight(T x, T y) {
  constexpr T kMaxShift = static_cast<T>(sizeof(T) * CHAR_BIT - 1);
  T s = y;
  if constexpr (std::is_signed_v<T>) {
    if (s < 0) s = 0;
  }
  if (s > kMaxShift) s = kMaxShift;
  return static_cast<T>(x >> s);  // arithmetic for signed types (C++20)
}

class BinaryKernel : public PlannedKernel {
 public:
  explicit BinaryKernel(BinOp op) : PlannedKernel(Name(op) + "/any/ref", {}), op_(op) {}

 protected:
  static std::string Name(BinOp op) {
    switch (op) {
      case BinOp::kAtan2: return "atan2";
      case BinOp::kXor: return "bitwise_xor";
      default: return "right_shift";
    }
  }

  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 2, 2, 1));
    const rt::RtTensor& a = *ctx.input(0);
    const rt::RtTensor& b = *ctx.input(1);
    const std::vector<DType> types =
        op_ == BinOp::kAtan2 ? std::vector<DType>{DType::kFloat32, DType::kFloat64}
                             : std::vector<DType>{DType::kInt8,  DType::kUInt8,  DType::kInt16,
                                                  DType::kUInt16, DType::kInt32, DType::kUInt32};
    if (!TypeIn(a.type, types))
      return ctx.UnsupportedError("input 0 of type " + TypeName(a.type) + " is not supported (" + TypeListText(types) +
                                  ")");
    if (b.type != a.type) return ctx.Error("inputs must have the same type, got " + Describe(a) + " and " + Describe(b));
    RETURN_IF_ERROR(CheckSameType(ctx, 0, 0));
    set_variant(Name(op_) + "/" + TypeName(a.type) + "/ref");
    return Status::Ok();
  }

  Status Plan(rt::KernelContext& ctx) override {
    const rt::Shape& a = ctx.input(0)->shape;
    const rt::Shape& b = ctx.input(1)->shape;
    if (!MakeBroadcastPlan(a, b, &plan_))
      return ctx.Error("shapes " + rt::ShapeToString(a) + " and " + rt::ShapeToString(b) + " are not broadcastable");
    return ctx.SetOutputShape(0, plan_.out);
  }

  Status Run(rt::KernelContext& ctx) override {
    switch (ctx.input(0)->type) {
      case DType::kFloat32: return Floats<float>(ctx);
      case DType::kFloat64: return Floats<double>(ctx);
      case DType::kInt8: return Ints<int8_t>(ctx);
      case DType::kUInt8: return Ints<uint8_t>(ctx);
      case DType::kInt16: return Ints<int16_t>(ctx);
      case DType::kUInt16: return Ints<uint16_t>(ctx);
      case DType::kInt32: return Ints<int32_t>(ctx);
      default: return Ints<uint32_t>(ctx);
    }
  }

 private:
  template <typename T>
  Status Floats(rt::KernelContext& ctx) {
    BroadcastBinary(plan_, ctx.input(0)->data_as<T>(), ctx.input(1)->data_as<T>(), ctx.output(0)->data_as<T>(),
                    [](T y, T x) { return std::atan2(y, x); });
    return Status::Ok();
  }
  template <typename T>
  Status Ints(rt::KernelContext& ctx) {
    const T* a = ctx.input(0)->data_as<T>();
    const T* b = ctx.input(1)->data_as<T>();
    T* o = ctx.output(0)->data_as<T>();
    if (op_ == BinOp::kXor) BroadcastBinary(plan_, a, b, o, [](T x, T y) { return static_cast<T>(x ^ y); });
    else BroadcastBinary(plan_, a, b, o, [](T x, T y) { return ShiftRight(x, y); });
    return Status::Ok();
  }

  BinOp op_;
  BroadcastPlan plan_;
};

}  // namespace

void RegisterAtan2(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_ATAN2, MakeKernelFactory<BinaryKernel>(BinOp::kAtan2));
}

void RegisterBitwiseBinary(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_BITWISE_XOR, MakeKernelFactory<BinaryKernel>(BinOp::kXor));
  r.Add(tflite::BuiltinOperator_RIGHT_SHIFT, MakeKernelFactory<BinaryKernel>(BinOp::kRightShift));
}

}  // namespace edgeopt::kernels::bitwise
