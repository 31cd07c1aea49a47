// Internal to the signal family.
#pragma once

#include <cstdint>

#include "runtime/registry.h"

namespace edgeopt::kernels {

// RFFT2D's fast path (rfft2d_fast.cc), put in front of the reference kernel registered before.
void RegisterFastRfft2d(rt::OpRegistry& r);
// COMPLEX_ABS's (complex_abs_fast.cc), likewise.
void RegisterFastComplexAbs(rt::OpRegistry& r);
// |z| of n complex64 values (interleaved re, im) as the reference computes it (needs AVX-512;
// complex_abs_avx512.cc).
void ComplexAbsAvx512(const float* interleaved, float* out, int64_t n);

// The butterfly stages of span 8 .. n of an n-point forward complex FFT on split arrays whose
// elements are in bit-reversed order and went through the spans 2 and 4 already. Stage `len`
// uses twiddles exp(-2πik/len), k < len/2, at tw_re/tw_im[len/2 - 1 + k].
using RowStagesFn = void (*)(double* re, double* im, int n, const double* tw_re, const double* tw_im);
void RowStagesPortable(double* re, double* im, int n, const double* tw_re, const double* tw_im);
void RowStagesAvx512(double* re, double* im, int n, const double* tw_re, const double* tw_im);  // rfft2d_avx512.cc

}  // namespace edgeopt::kernels
