// BROADCAST_ARGS(s0, s1): the shape two shapes broadcast to (numpy rules, aligned at the
// right; a missing dimension counts as 1). Both inputs and the output are int32 or int64
// vectors of one type; the output has max(len(s0), len(s1)) values. Dimensions that differ
// with neither being 1 are an error (TFLite only DCHECKs it and writes one of them).
#include <algorithm>

#include "kernels/common/planned_kernel.h"
#include "kernels/sequence/sequence.h"

namespace edgeopt::kernels::sequence {
namespace {

class BroadcastArgsKernel : public PlannedKernel {
 public:
  BroadcastArgsKernel() : PlannedKernel("broadcast_args/any/ref", {}) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 2, 2, 1));
    const rt::RtTensor& a = *ctx.input(0);
    const rt::RtTensor& b = *ctx.input(1);
    if (a.type != DType::kInt32 && a.type != DType::kInt64)
      return ctx.UnsupportedError("input 0 " + Describe(a) + " must be int32 or int64");
    if (b.type != a.type) return ctx.Error("input 1 " + Describe(b) + " must have input 0's type " + TypeName(a.type));
    RETURN_IF_ERROR(CheckSameType(ctx, 0, 0));
    if (a.rank() != 1) return ctx.Error("input 0 " + Describe(a) + " must be a vector");
    if (b.rank() != 1) return ctx.Error("input 1 " + Describe(b) + " must be a vector");
    return Status::Ok();
  }
  Status Plan(rt::KernelContext& ctx) override {
    if (ValuesKnown(ctx, *ctx.input(0)) && ValuesKnown(ctx, *ctx.input(1)))
      RETURN_IF_ERROR(Compute(ctx, nullptr));  // constant shapes: incompatibility found at prepare
    return ctx.SetOutputShape(0, {std::max(ctx.input(0)->shape[0], ctx.input(1)->shape[0])});
  }
  Status Run(rt::KernelContext& ctx) override { return Compute(ctx, ctx.output(0)); }

 private:
  // Validates and, when `out` is given, writes the broadcast shape.
  static Status Compute(rt::KernelContext& ctx, rt::RtTensor* out) {
    const rt::RtTensor& a = *ctx.input(0);
    const rt::RtTensor& b = *ctx.input(1);
    const int64_t na = a.shape[0], nb = b.shape[0], n = std::max(na, nb);
    for (int64_t i = 0; i < n; ++i) {  // i counts from the right
      const int64_t x = i < na ? IndexAt(a, na - 1 - i) : 1;
      const int64_t y = i < nb ? IndexAt(b, nb - 1 - i) : 1;
      if (x != y && x != 1 && y != 1)
        return ctx.Error("shapes " + Describe(a) + " and " + Describe(b) + " are incompatible: dimension " +
                         std::to_string(x) + " vs " + std::to_string(y) + " (" + std::to_string(i + 1) +
                         " from the right)");
      if (!out) continue;
      const int64_t v = x == 1 ? y : x;
      if (out->type == DType::kInt64) out->data_as<int64_t>()[n - 1 - i] = v;
      else out->data_as<int32_t>()[n - 1 - i] = static_cast<int32_t>(v);
    }
    return Status::Ok();
  }
};

}  // namespace

void RegisterBroadcastArgs(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_BROADCAST_ARGS, MakeKernelFactory<BroadcastArgsKernel>());
}

}  // namespace edgeopt::kernels::sequence
