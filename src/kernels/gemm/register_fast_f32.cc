// Registration of the fast float32 kernels. For each op the factory asks the fast path first
// (Make*F32) and falls back to the factory that was registered before (the reference family),
// so this must run after the reference families in register_all.cc. See README.md.
#include <string>

#include "kernels/gemm/ops_f32.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {

namespace {

using MakeFn = std::unique_ptr<rt::OpKernel> (*)(const rt::KernelCreateContext&);

const rt::KernelFactory* Existing(const rt::OpRegistry& r, tflite::BuiltinOperator code) {
  Operator op;
  op.code = code;
  return r.Find(op);
}

// Fast path first, then whatever was registered for the op before.
void AddFastFirst(rt::OpRegistry& r, tflite::BuiltinOperator code, MakeFn make) {
  const rt::KernelFactory* prev = Existing(r, code);
  rt::KernelFactory fallback = prev ? *prev : rt::KernelFactory();
  r.Add(code, [make, fallback](const rt::KernelCreateContext& cc) -> Expected<std::unique_ptr<rt::OpKernel>> {
    if (auto k = make(cc)) return k;
    if (fallback) return fallback(cc);
    return cc.Error("only float32 with constant weights and a clamp activation is supported (no reference kernel "
                    "registered for this op)");
  });
}

}  // namespace

void RegisterFastFloatKernels(rt::OpRegistry& r) {
  AddFastFirst(r, tflite::BuiltinOperator_CONV_2D, MakeConv2DF32);
  AddFastFirst(r, tflite::BuiltinOperator_FULLY_CONNECTED, MakeFullyConnectedF32);
  AddFastFirst(r, tflite::BuiltinOperator_DEPTHWISE_CONV_2D, MakeDepthwiseConv2DF32);
  AddFastFirst(r, tflite::BuiltinOperator_AVERAGE_POOL_2D, MakeAveragePool2DF32);
  AddFastFirst(r, tflite::BuiltinOperator_MAX_POOL_2D, MakeMaxPool2DF32);
  AddFastFirst(r, tflite::BuiltinOperator_ADD, MakeBinaryF32);
  AddFastFirst(r, tflite::BuiltinOperator_SUB, MakeBinaryF32);
  AddFastFirst(r, tflite::BuiltinOperator_MUL, MakeBinaryF32);
}

}  // namespace edgeopt::kernels
