// Registration of the fast integer kernels (int8, uint8, hybrid, 16x8 CONV_2D, FULLY_CONNECTED,
// DEPTHWISE_CONV_2D). Same pattern as RegisterFastFloatKernels: for each op the fast factory is
// asked first; it declines (nullptr) what it does not handle and the factory registered before
// (the float fast path, then the reference family) takes the op. The fast integer kernels wrap
// the earlier factory's reference kernel (created with reference_only), see fast_kernel.h.
// Must run after the reference families and the float registration in register_all.cc.
#include "kernels/depthwise/depthwise_int8.h"
#include "kernels/gemm_int8/ops_int8.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {

namespace {

using MakeFn = std::unique_ptr<rt::OpKernel> (*)(const rt::KernelCreateContext&, RefFactory);

void AddInt8First(rt::OpRegistry& r, tflite::BuiltinOperator code, MakeFn make) {
  Operator op;
  op.code = code;
  const rt::KernelFactory* prev = r.Find(op);
  rt::KernelFactory fallback = prev ? *prev : rt::KernelFactory();
  r.Add(code, [make, fallback](const rt::KernelCreateContext& cc) -> Expected<std::unique_ptr<rt::OpKernel>> {
    if (fallback) {
      if (auto k = make(cc, fallback)) return k;
      return fallback(cc);
    }
    return cc.Error("no kernel registered for this op");
  });
}

}  // namespace

void RegisterFastInt8Kernels(rt::OpRegistry& r) {
  AddInt8First(r, tflite::BuiltinOperator_CONV_2D, MakeConv2DQuant);
  AddInt8First(r, tflite::BuiltinOperator_FULLY_CONNECTED, MakeFullyConnectedQuant);
  AddInt8First(r, tflite::BuiltinOperator_DEPTHWISE_CONV_2D, MakeDepthwiseQuant);
}

}  // namespace edgeopt::kernels
