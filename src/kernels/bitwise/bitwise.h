// ATAN2, BITWISE_XOR, RIGHT_SHIFT and BITCAST (kernels/bitwise): registration of the reference
// kernels, one function per source file.
#pragma once

#include "runtime/registry.h"

namespace edgeopt::kernels::bitwise {

void RegisterAtan2(rt::OpRegistry& r);          // ref_binary.cc
void RegisterBitwiseBinary(rt::OpRegistry& r);  // ref_binary.cc: BITWISE_XOR, RIGHT_SHIFT
void RegisterBitcast(rt::OpRegistry& r);        // ref_bitcast.cc

}  // namespace edgeopt::kernels::bitwise
