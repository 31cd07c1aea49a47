#include "kernels/activations/ops.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {

void RegisterActivationKernels(rt::OpRegistry& r) {
  activations::RegisterRelu(r);
  activations::RegisterSigmoid(r);
  activations::RegisterSoftmax(r);
  activations::RegisterFastFloatActivations(r);
}

}  // namespace edgeopt::kernels
