// NON_MAX_SUPPRESSION_V4 / V5 (kernels/nms): registration of the reference kernels.
#pragma once

#include "runtime/registry.h"

namespace edgeopt::kernels::nms {

void RegisterNonMaxSuppression(rt::OpRegistry& r);

}  // namespace edgeopt::kernels::nms
