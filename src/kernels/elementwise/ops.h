// Registration of the elementwise family's parts (called by register.cc).
#pragma once

#include "runtime/registry.h"

namespace edgeopt::kernels::elementwise {

void RegisterBinary(rt::OpRegistry& r);      // ADD SUB MUL DIV SQUARED_DIFFERENCE MAXIMUM MINIMUM POW FLOOR_DIV FLOOR_MOD
void RegisterComparison(rt::OpRegistry& r);  // EQUAL NOT_EQUAL LESS LESS_EQUAL GREATER GREATER_EQUAL
void RegisterLogical(rt::OpRegistry& r);     // LOGICAL_AND LOGICAL_OR LOGICAL_NOT
void RegisterSelect(rt::OpRegistry& r);      // SELECT SELECT_V2
void RegisterMisc(rt::OpRegistry& r);        // ADD_N ZEROS_LIKE FILL

}  // namespace edgeopt::kernels::elementwise
