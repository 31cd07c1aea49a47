#include "kernels/bitwise/bitwise.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {

void RegisterBitwiseKernels(rt::OpRegistry& r) {
  bitwise::RegisterAtan2(r);
  bitwise::RegisterBitwiseBinary(r);
  bitwise::RegisterBitcast(r);
}

}  // namespace edgeopt::kernels
