#include "kernels/quantize/ops.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {

void RegisterQuantizeKernels(rt::OpRegistry& r) {
  quantize::RegisterQuantizeDequantize(r);
  quantize::RegisterCast(r);
}

}  // namespace edgeopt::kernels
