// CUMSUM(input, axis): running sums along one axis, optionally exclusive (each output leaves out
// its own element) and/or reverse (summing from the end). Sums run in axis order, one
// accumulator per (outer, inner) position, as TFLite's kernel does, so float results match
// bit for bit. Integer sums wrap on overflow (two's complement, computed unsigned: no UB).
#include <type_traits>

#include "kernels/common/planned_kernel.h"
#include "kernels/sequence/sequence.h"

namespace edgeopt::kernels::sequence {
namespace {

// The accumulator type: T for floats, the unsigned type of T's width for integers.
template <typename T, bool = std::is_integral_v<T>>
struct AccumulatorOf {
  using type = T;
};
template <typename T>
struct AccumulatorOf<T, true> {
  using type = std::make_unsigned_t<T>;
};

template <typename T>
void CumsumOf(const T* in, int64_t outer, int64_t n, int64_t inner, bool exclusive, bool reverse, T* out) {
  // Integers accumulate in the unsigned type of the same width, so overflow wraps defined.
  using Acc = typename AccumulatorOf<T>::type;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      const T* src = in + o * n * inner + j;
      T* dst = out + o * n * inner + j;
      Acc acc = 0;
      for (int64_t k = 0; k < n; ++k) {
        const int64_t at = (reverse ? n - 1 - k : k) * inner;
        const Acc v = static_cast<Acc>(src[at]);
        if (exclusive) {
          dst[at] = static_cast<T>(acc);
          acc = static_cast<Acc>(acc + v);
        } else {
          acc = static_cast<Acc>(acc + v);
          dst[at] = static_cast<T>(acc);
        }
      }
    }
}

class CumsumKernel : public PlannedKernel {
 public:
  CumsumKernel() : PlannedKernel("cumsum/any/ref", {}) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 2, 2, 1));
    const DType t = ctx.input(0)->type;
    switch (t) {
      case DType::kFloat32: set_variant("cumsum/f32/ref"); break;
      case DType::kInt32: set_variant("cumsum/int32/ref"); break;
      case DType::kInt64: set_variant("cumsum/int64/ref"); break;
      default:
        return ctx.UnsupportedError("input of type " + TypeName(t) + " is not supported (float32, int32 or int64)");
    }
    RETURN_IF_ERROR(CheckSameType(ctx, 0, 0));
    const rt::RtTensor& axis = *ctx.input(1);
    if (axis.type != DType::kInt32 && axis.type != DType::kInt64)
      return ctx.Error("axis " + Describe(axis) + " must be int32 or int64");
    if (axis.num_elements() != 1)
      return ctx.Error("axis " + Describe(axis) + " must hold exactly one value");
    if (ctx.input(0)->rank() < 1) return ctx.Error("input " + Describe(*ctx.input(0)) + " must have rank >= 1");
    return Status::Ok();
  }
  Status Plan(rt::KernelContext& ctx) override {
    if (ValuesKnown(ctx, *ctx.input(1))) {  // a constant axis is checked at prepare
      int axis = 0;
      RETURN_IF_ERROR(ReadAxis(ctx, &axis));
    }
    return ctx.SetOutputShape(0, ctx.input(0)->shape);
  }
  Status Run(rt::KernelContext& ctx) override {
    int axis = 0;
    RETURN_IF_ERROR(ReadAxis(ctx, &axis));
    const rt::RtTensor& in = *ctx.input(0);
    rt::RtTensor& out = *ctx.output(0);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= in.shape[d];
    for (int d = axis + 1; d < in.rank(); ++d) inner *= in.shape[d];
    const int64_t n = in.shape[axis];
    const auto& o = GetOptions<tflite::CumsumOptionsT>(ctx.op());
    switch (in.type) {
      case DType::kFloat32:
        CumsumOf(in.data_as<float>(), outer, n, inner, o.exclusive, o.reverse, out.data_as<float>());
        break;
      case DType::kInt32:
        CumsumOf(in.data_as<int32_t>(), outer, n, inner, o.exclusive, o.reverse, out.data_as<int32_t>());
        break;
      default:
        CumsumOf(in.data_as<int64_t>(), outer, n, inner, o.exclusive, o.reverse, out.data_as<int64_t>());
        break;
    }
    return Status::Ok();
  }

 private:
  Status ReadAxis(rt::KernelContext& ctx, int* axis) {
    // Read in place (type and element count checked in Check): Invoke does not allocate.
    return ResolveAxis(ctx, IndexAt(*ctx.input(1), 0), ctx.input(0)->rank(), "axis", axis);
  }
};

}  // namespace

void RegisterCumsum(rt::OpRegistry& r) { r.Add(tflite::BuiltinOperator_CUMSUM, MakeKernelFactory<CumsumKernel>()); }

}  // namespace edgeopt::kernels::sequence
