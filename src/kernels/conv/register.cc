#include "kernels/conv/conv_kernels.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {

void RegisterConvKernels(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_CONV_2D, CreateConv2D);
}

}  // namespace edgeopt::kernels
