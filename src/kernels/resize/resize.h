// Internal to the resize family: registration per source file, called by
// RegisterResizeKernels (register.cc).
#pragma once

#include "runtime/registry.h"

namespace edgeopt::kernels::resize {

void RegisterResize(rt::OpRegistry& r);      // ref_resize.cc: RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR
void RegisterSpaceDepth(rt::OpRegistry& r);  // ref_space.cc: DEPTH_TO_SPACE, SPACE_TO_DEPTH,
                                             // BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND

}  // namespace edgeopt::kernels::resize
