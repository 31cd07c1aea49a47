#include "kernels/elementwise/ops.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {

void RegisterElementwiseKernels(rt::OpRegistry& r) {
  elementwise::RegisterBinary(r);
  elementwise::RegisterComparison(r);
  elementwise::RegisterLogical(r);
  elementwise::RegisterSelect(r);
  elementwise::RegisterMisc(r);
  elementwise::RegisterFastInt32Binary(r);
}

}  // namespace edgeopt::kernels
