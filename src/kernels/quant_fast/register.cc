// Registration of the fast integer elementwise / quantize / pooling kernels, in front of the
// factories registered before (same pattern as RegisterFastInt8Kernels: the fast factory is asked
// first, declines with nullptr, and the earlier factory takes the op).
#include "kernels/quant_fast/quant_fast.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {
namespace {

using MakeFn = std::unique_ptr<rt::OpKernel> (*)(const rt::KernelCreateContext&, RefFactory);

void AddFastFirst(rt::OpRegistry& r, tflite::BuiltinOperator code, MakeFn make) {
  Operator op;
  op.code = code;
  const rt::KernelFactory* prev = r.Find(op);
  rt::KernelFactory fallback = prev ? *prev : rt::KernelFactory();
  r.Add(code, [make, fallback](const rt::KernelCreateContext& cc) -> Expected<std::unique_ptr<rt::OpKernel>> {
    if (!fallback) return cc.Error("no kernel registered for this op");
    if (auto k = make(cc, fallback)) return k;
    return fallback(cc);
  });
}

}  // namespace

void RegisterFastQuantKernels(rt::OpRegistry& r) {
  AddFastFirst(r, tflite::BuiltinOperator_ADD, MakeQuantBinaryFast);
  AddFastFirst(r, tflite::BuiltinOperator_SUB, MakeQuantBinaryFast);
  AddFastFirst(r, tflite::BuiltinOperator_MUL, MakeQuantBinaryFast);
  AddFastFirst(r, tflite::BuiltinOperator_QUANTIZE, MakeQuantizeFast);
  AddFastFirst(r, tflite::BuiltinOperator_DEQUANTIZE, MakeDequantizeFast);
  AddFastFirst(r, tflite::BuiltinOperator_AVERAGE_POOL_2D, MakePoolFast);
  AddFastFirst(r, tflite::BuiltinOperator_MAX_POOL_2D, MakePoolFast);
  AddFastFirst(r, tflite::BuiltinOperator_MEAN, MakeMeanFast);
}

}  // namespace edgeopt::kernels
