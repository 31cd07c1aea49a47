// Registration of the fast float32 kernels. For each op the factory asks the fast path first
// (Make*F32) and falls back to the factory that was registered before (the reference family),
// so this must run after the reference families in register_all.cc. See README.md.

#include "kernels/common/fast_kernel.h"
#include "kernels/gemm/ops_f32.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {

namespace {

// The float fast paths need no reference kernel beside them: AddFastWithFallback's `make`
// without its reference factory.
template <std::unique_ptr<rt::OpKernel> (*Make)(const rt::KernelCreateContext&)>
std::unique_ptr<rt::OpKernel> FastOnly(const rt::KernelCreateContext& cc, RefFactory) {
  return Make(cc);
}

}  // namespace

void RegisterFastFloatKernels(rt::OpRegistry& r) {
  AddFastWithFallback(r, tflite::BuiltinOperator_CONV_2D, FastOnly<MakeConv2DF32>);
  AddFastWithFallback(r, tflite::BuiltinOperator_FULLY_CONNECTED, FastOnly<MakeFullyConnectedF32>);
  AddFastWithFallback(r, tflite::BuiltinOperator_DEPTHWISE_CONV_2D, FastOnly<MakeDepthwiseConv2DF32>);
  AddFastWithFallback(r, tflite::BuiltinOperator_AVERAGE_POOL_2D, FastOnly<MakeAveragePool2DF32>);
  AddFastWithFallback(r, tflite::BuiltinOperator_MAX_POOL_2D, FastOnly<MakeMaxPool2DF32>);
  AddFastWithFallback(r, tflite::BuiltinOperator_ADD, FastOnly<MakeBinaryF32>);
  AddFastWithFallback(r, tflite::BuiltinOperator_SUB, FastOnly<MakeBinaryF32>);
  AddFastWithFallback(r, tflite::BuiltinOperator_MUL, FastOnly<MakeBinaryF32>);
  AddFastWithFallback(r, tflite::BuiltinOperator_DIV, FastOnly<MakeBinaryF32>);
  AddFastWithFallback(r, tflite::BuiltinOperator_SQUARED_DIFFERENCE, FastOnly<MakeBinaryF32>);
  AddFastWithFallback(r, tflite::BuiltinOperator_MAXIMUM, FastOnly<MakeBinaryF32>);
  AddFastWithFallback(r, tflite::BuiltinOperator_MINIMUM, FastOnly<MakeBinaryF32>);
}

}  // namespace edgeopt::kernels
