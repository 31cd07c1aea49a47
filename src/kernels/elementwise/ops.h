// Registration of the elementwise family's parts (called by register.cc).
#pragma once

#include <limits>

#include "runtime/registry.h"

namespace edgeopt::kernels::elementwise {

void RegisterBinary(rt::OpRegistry& r);      // ADD SUB MUL DIV SQUARED_DIFFERENCE MAXIMUM MINIMUM POW FLOOR_DIV FLOOR_MOD
void RegisterComparison(rt::OpRegistry& r);  // EQUAL NOT_EQUAL LESS LESS_EQUAL GREATER GREATER_EQUAL
void RegisterLogical(rt::OpRegistry& r);     // LOGICAL_AND LOGICAL_OR LOGICAL_NOT
void RegisterSelect(rt::OpRegistry& r);      // SELECT SELECT_V2
void RegisterMisc(rt::OpRegistry& r);        // ADD_N ZEROS_LIKE FILL
// int32 ADD SUB MUL fast path (int32_binary_fast.cc) in front of the reference kernels.
void RegisterFastInt32Binary(rt::OpRegistry& r);

// The clamp bounds of a fused activation on an integer (not quantized) output: NONE and
// unsupported ones the full range.
template <typename T>
void IntActivationRange(int activation, T* lo, T* hi) {
  *lo = std::numeric_limits<T>::lowest();
  *hi = std::numeric_limits<T>::max();
  if (activation == tflite::ActivationFunctionType_RELU) {
    *lo = 0;
  } else if (activation == tflite::ActivationFunctionType_RELU6) {
    *lo = 0;
    *hi = 6;
  } else if (activation == tflite::ActivationFunctionType_RELU_N1_TO_1) {
    *lo = -1;
    *hi = 1;
  }
}

}  // namespace edgeopt::kernels::elementwise
