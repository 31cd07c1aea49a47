#include "kernels/nms/nms.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {

void RegisterNmsKernels(rt::OpRegistry& r) { nms::RegisterNonMaxSuppression(r); }

}  // namespace edgeopt::kernels
