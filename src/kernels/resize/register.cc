#include "kernels/registration.h"
#include "kernels/resize/resize.h"

namespace edgeopt::kernels {

void RegisterResizeKernels(rt::OpRegistry& r) {
  resize::RegisterResize(r);
  resize::RegisterSpaceDepth(r);
}

}  // namespace edgeopt::kernels
