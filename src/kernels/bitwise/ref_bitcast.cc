// BITCAST: the input's bytes reinterpreted as the output's type (TFLite's bitcast.cc). Shapes:
// equal element sizes keep the shape; a larger input element appends a dimension of
// in_size / out_size; a smaller one requires the last dimension to be out_size / in_size and
// drops it. Any fixed-size type (bool, float16, complex64, ...) on either side.
#include <cstring>

#include "kernels/bitwise/bitwise.h"
#include "kernels/common/planned_kernel.h"

namespace edgeopt::kernels::bitwise {
namespace {

class BitcastKernel : public PlannedKernel {
 public:
  BitcastKernel() : PlannedKernel("bitcast/any/ref", {}) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 1, 1, 1));
    RETURN_IF_ERROR(CheckCopyableType(ctx, *ctx.input(0), "input"));
    RETURN_IF_ERROR(CheckCopyableType(ctx, *ctx.output(0), "output"));
    return Status::Ok();
  }

  Status Plan(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    const size_t in_size = ElementBytes(in.type);
    const size_t out_size = ElementBytes(ctx.output(0)->type);
    rt::Shape shape = in.shape;
    if (in_size > out_size) {
      shape.push_back(static_cast<int32_t>(in_size / out_size));
    } else if (in_size < out_size) {
      const auto ratio = static_cast<int32_t>(out_size / in_size);
      if (in.rank() == 0 || in.shape.back() != ratio)
        return ctx.Error("input " + Describe(in) + " as " + TypeName(ctx.output(0)->type) +
                         ": the last dimension must be " + std::to_string(ratio) + " (" +
                         std::to_string(out_size) + " / " + std::to_string(in_size) + " bytes)");
      shape.pop_back();
    }
    return ctx.SetOutputShape(0, std::move(shape));
  }

  Status Run(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    rt::RtTensor& out = *ctx.output(0);
    const size_t n = rt::TensorBytes(in.type, in.shape);
    if (n && out.data != in.data) std::memcpy(out.data, in.data, n);
    return Status::Ok();
  }
};

}  // namespace

void RegisterBitcast(rt::OpRegistry& r) { r.Add(tflite::BuiltinOperator_BITCAST, MakeKernelFactory<BitcastKernel>()); }

}  // namespace edgeopt::kernels::bitwise
