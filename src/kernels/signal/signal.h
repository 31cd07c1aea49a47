// Internal to the signal family.
#pragma once

#include "runtime/registry.h"

namespace edgeopt::kernels {

// RFFT2D's fast path (rfft2d_fast.cc), put in front of the reference kernel registered before.
void RegisterFastRfft2d(rt::OpRegistry& r);

}  // namespace edgeopt::kernels
