// Registration of the sparse float32 FULLY_CONNECTED / 1x1 CONV_2D variants. Runs after
// RegisterFastFloatKernels: the earlier factory (fast kernel first, reference as its fallback)
// makes the dense kernel, and when the op is a sparse candidate that kernel is wrapped in the
// sparse variant, which measures the weights at prepare time and runs sparse only when that wins.
#include "kernels/fully_connected/sparse_op.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {
namespace {

using WrapFn = std::unique_ptr<rt::OpKernel> (*)(const rt::KernelCreateContext&, std::unique_ptr<rt::OpKernel>);

void AddSparseWrapper(rt::OpRegistry& r, tflite::BuiltinOperator code, WrapFn wrap) {
  Operator op;
  op.code = code;
  const rt::KernelFactory* prev = r.Find(op);
  if (!prev) return;  // nothing to wrap: no dense kernel registered for the op
  rt::KernelFactory dense_factory = *prev;
  r.Add(code, [wrap, dense_factory](const rt::KernelCreateContext& cc) -> Expected<std::unique_ptr<rt::OpKernel>> {
    auto dense = dense_factory(cc);
    if (!dense.ok()) return dense;
    return wrap(cc, std::move(dense).value());
  });
}

}  // namespace

void RegisterSparseFloatKernels(rt::OpRegistry& r) {
  AddSparseWrapper(r, tflite::BuiltinOperator_FULLY_CONNECTED, MaybeSparseFullyConnected);
  AddSparseWrapper(r, tflite::BuiltinOperator_CONV_2D, MaybeSparseConv1x1);
}

}  // namespace edgeopt::kernels
