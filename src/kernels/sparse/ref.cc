// DENSIFY: expands a constant tensor stored in the .tflite sparsity format into a dense
// tensor of the same type and shape. The input is validated completely when the op is
// prepared (kernels/common/sparsity.h); since the input is constant, the runtime folds the op
// once at allocation time.
#include "kernels/common/planned_kernel.h"
#include "kernels/common/sparsity.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {
namespace {

class DensifyKernel : public PlannedKernel {
 public:
  DensifyKernel() : PlannedKernel("densify/any/ref", {}) {}

 protected:
  bool AcceptsSparseInputs() const override { return true; }
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 1, 1, 1));
    const rt::RtTensor& in = *ctx.input(0);
    RETURN_IF_ERROR(CheckCopyableType(ctx, in, "input"));
    RETURN_IF_ERROR(CheckSameType(ctx, 0, 0));
    if (!in.def || !in.def->sparsity) return ctx.Error("input " + Describe(in) + " is not a sparse tensor");
    if (!in.is_constant()) return ctx.Error("input " + Describe(in) + " must be constant");
    return Status::Ok();
  }
  Status Plan(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    auto layout = ParseSparsity(*in.def->sparsity, in.def->shape);
    if (!layout.ok()) return ctx.Error(layout.status().message());
    layout_ = std::move(*layout);
    const size_t need = static_cast<size_t>(layout_.num_values) * ElementBytes(in.type);
    if (in.bytes < need)
      return ctx.Error("input " + Describe(in) + " stores " + std::to_string(in.bytes) + " bytes of values, its sparsity needs " +
                       std::to_string(need));
    return ctx.SetOutputShape(0, in.def->shape);
  }
  Status Run(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    rt::RtTensor& out = *ctx.output(0);
    const size_t elem = ElementBytes(in.type);
    Status st = Densify(layout_, {in.data, in.bytes}, elem, {out.data, rt::TensorBytes(out.type, out.shape)});
    if (!st.ok()) return ctx.Error(st.message());
    return Status::Ok();
  }

 private:
  SparseLayout layout_;
};

}  // namespace

void RegisterSparseKernels(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_DENSIFY, MakeKernelFactory<DensifyKernel>());
}

}  // namespace edgeopt::kernels
