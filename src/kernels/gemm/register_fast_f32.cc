// Temporary registration of the fast float32 kernels as the factories of their ops, so that
// models run end to end before the reference families are merged. See README.md for how the
// reference factories take these over.
#include <string>

#include "kernels/gemm/ops_f32.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {
namespace {

using MakeFn = std::unique_ptr<rt::OpKernel> (*)(const rt::KernelCreateContext&);

rt::KernelFactory FastOnly(MakeFn make) {
  return [make](const rt::KernelCreateContext& cc) -> Expected<std::unique_ptr<rt::OpKernel>> {
    if (auto k = make(cc)) return k;
    return cc.Error(cc.reference_only ? "no reference kernel on this branch yet (only the fast float32 path)"
                                      : "only float32 with constant weights and a clamp activation is supported "
                                        "(fast float32 path; reference kernels not merged yet)");
  };
}

}  // namespace

// softmax_tmp.cc (temporary, see there).
std::unique_ptr<rt::OpKernel> MakeSoftmaxF32Tmp(const rt::KernelCreateContext& cc);

void RegisterFastFloatKernels(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_CONV_2D, FastOnly(MakeConv2DF32));
  r.Add(tflite::BuiltinOperator_FULLY_CONNECTED, FastOnly(MakeFullyConnectedF32));
  r.Add(tflite::BuiltinOperator_DEPTHWISE_CONV_2D, FastOnly(MakeDepthwiseConv2DF32));
  r.Add(tflite::BuiltinOperator_AVERAGE_POOL_2D, FastOnly(MakeAveragePool2DF32));
  r.Add(tflite::BuiltinOperator_MAX_POOL_2D, FastOnly(MakeMaxPool2DF32));
  r.Add(tflite::BuiltinOperator_ADD, FastOnly(MakeBinaryF32));
  r.Add(tflite::BuiltinOperator_SUB, FastOnly(MakeBinaryF32));
  r.Add(tflite::BuiltinOperator_MUL, FastOnly(MakeBinaryF32));
  // TEMPORARY until the SOFTMAX family is merged (float32 only, plain loops).
  r.Add(tflite::BuiltinOperator_SOFTMAX, [](const rt::KernelCreateContext& cc) -> Expected<std::unique_ptr<rt::OpKernel>> {
    if (auto k = MakeSoftmaxF32Tmp(cc)) return k;
    return cc.Error("only float32 is supported by the temporary SOFTMAX on this branch");
  });
}

}  // namespace edgeopt::kernels
