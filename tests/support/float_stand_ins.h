// Stand-in float32 kernels for ops whose families are not merged yet (RESIZE_BILINEAR,
// CONCATENATION, MEAN), for tests and benchmarks that run whole float models. Pass the registry
// as InterpreterOptions::op_resolver; it holds only the ops the built-in registry lacks, so it
// never replaces a real kernel.
#pragma once

#include <memory>

#include "runtime/registry.h"

namespace edgeopt::testing {

std::shared_ptr<const rt::OpRegistry> FloatStandInsForMissingOps();

}  // namespace edgeopt::testing
