#include "kernels/conv/conv_kernels.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {

void RegisterConvKernels(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_CONV_2D, CreateConv2D);
  r.Add(tflite::BuiltinOperator_TRANSPOSE_CONV, CreateTransposeConv);
  r.AddCustom("Convolution2DTransposeBias", CreateTransposeConvBias);
}

}  // namespace edgeopt::kernels
