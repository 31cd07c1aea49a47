// Registration of the conversion family's parts (called by register.cc).
#pragma once

#include "runtime/registry.h"

namespace edgeopt::kernels::quantize {

void RegisterQuantizeDequantize(rt::OpRegistry& r);  // QUANTIZE DEQUANTIZE
void RegisterCast(rt::OpRegistry& r);                // CAST

}  // namespace edgeopt::kernels::quantize
