// ARG_MAX / ARG_MIN along one axis; the first position wins ties (strict comparison, as
// TFLite). Output int32 or int64 (the output tensor's type, i.e. the output_type option).
#include "kernels/common/planned_kernel.h"
#include "kernels/transform/transform.h"

namespace edgeopt::kernels::transform {
namespace {

template <typename T, typename I>
void ArgMinMax(const T* in, int64_t outer, int64_t axis, int64_t inner, bool is_max, I* out) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      const T* p = in + o * axis * inner + j;
      T best = p[0];
      I best_i = 0;
      for (int64_t i = 1; i < axis; ++i) {
        const T v = p[i * inner];
        if (is_max ? v > best : v < best) {
          best = v;
          best_i = static_cast<I>(i);
        }
      }
      out[o * inner + j] = best_i;
    }
}

template <typename T>
void Dispatch(const rt::RtTensor& in, rt::RtTensor& out, int64_t outer, int64_t axis, int64_t inner, bool is_max) {
  if (out.type == DType::kInt32) {
    ArgMinMax(in.data_as<T>(), outer, axis, inner, is_max, out.data_as<int32_t>());
  } else {
    ArgMinMax(in.data_as<T>(), outer, axis, inner, is_max, out.data_as<int64_t>());
  }
}

class ArgMinMaxKernel : public PlannedKernel {
 public:
  explicit ArgMinMaxKernel(bool is_max)
      : PlannedKernel(is_max ? "arg_max/any/ref" : "arg_min/any/ref", {1}), is_max_(is_max) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 2, 2, 1));
    switch (ctx.input(0)->type) {
      case DType::kFloat32: case DType::kInt8: case DType::kUInt8: case DType::kInt16: case DType::kInt32:
      case DType::kInt64: case DType::kBool:
        break;
      default:
        return ctx.UnsupportedError("input of type " + TypeName(ctx.input(0)->type) + " is not supported");
    }
    const DType ot = ctx.output(0)->type;
    if (ot != DType::kInt32 && ot != DType::kInt64)
      return ctx.UnsupportedError("output type " + TypeName(ot) + " is not supported (int32 or int64)");
    if (ctx.input(0)->rank() < 1) return ctx.Error("input must have rank >= 1");
    return Status::Ok();
  }
  Status Plan(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    int64_t axis = 0;
    RETURN_IF_ERROR(ReadScalarIndex(ctx, *ctx.input(1), "axis", &axis));
    RETURN_IF_ERROR(ResolveAxis(ctx, axis, in.rank(), "axis", &axis_));
    if (in.shape[axis_] == 0) return ctx.Error("cannot reduce the empty dimension " + std::to_string(axis_));
    rt::Shape out = in.shape;
    out.erase(out.begin() + axis_);
    return ctx.SetOutputShape(0, std::move(out));
  }
  Status Run(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    rt::RtTensor& out = *ctx.output(0);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis_; ++d) outer *= in.shape[d];
    for (int d = axis_ + 1; d < in.rank(); ++d) inner *= in.shape[d];
    const int64_t n = in.shape[axis_];
    switch (in.type) {
      case DType::kFloat32: Dispatch<float>(in, out, outer, n, inner, is_max_); break;
      case DType::kInt8: Dispatch<int8_t>(in, out, outer, n, inner, is_max_); break;
      case DType::kUInt8: Dispatch<uint8_t>(in, out, outer, n, inner, is_max_); break;
      case DType::kInt16: Dispatch<int16_t>(in, out, outer, n, inner, is_max_); break;
      case DType::kInt32: Dispatch<int32_t>(in, out, outer, n, inner, is_max_); break;
      case DType::kInt64: Dispatch<int64_t>(in, out, outer, n, inner, is_max_); break;
      default: Dispatch<uint8_t>(in, out, outer, n, inner, is_max_); break;  // bool: 0/1 bytes
    }
    return Status::Ok();
  }

 private:
  bool is_max_;
  int axis_ = 0;
};

}  // namespace

void RegisterArgMinMax(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_ARG_MAX, MakeKernelFactory<ArgMinMaxKernel>(true));
  r.Add(tflite::BuiltinOperator_ARG_MIN, MakeKernelFactory<ArgMinMaxKernel>(false));
}

}  // namespace edgeopt::kernels::transform
