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

void RegisterFastInt8Kernels(rt::OpRegistry& r) {
  AddFastWithFallback(r, tflite::BuiltinOperator_CONV_2D, MakeConv2DQuant);
  AddFastWithFallback(r, tflite::BuiltinOperator_FULLY_CONNECTED, MakeFullyConnectedQuant);
  AddFastWithFallback(r, tflite::BuiltinOperator_DEPTHWISE_CONV_2D, MakeDepthwiseQuant);
}

}  // namespace edgeopt::kernels
