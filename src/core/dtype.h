// Tensor element types: defined in include/edgeopt/dtype.h because they are part of the public
// API; the implementation includes them from here.
#pragma once

#include "edgeopt/dtype.h"  // IWYU pragma: export
