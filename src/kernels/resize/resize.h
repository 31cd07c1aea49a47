// Internal to the resize family: registration per source file, called by
// RegisterResizeKernels (register.cc).
#pragma once

#include <cstdint>

#include "runtime/registry.h"

namespace edgeopt::kernels::resize {

void RegisterResize(rt::OpRegistry& r);      // ref_resize.cc: RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR
void RegisterSpaceDepth(rt::OpRegistry& r);  // ref_space.cc: DEPTH_TO_SPACE, SPACE_TO_DEPTH,
                                             // BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND

}  // namespace edgeopt::kernels::resize

namespace edgeopt::kernels::resize {

// Fast float32 RESIZE_BILINEAR rows (bilinear_row.h, compiled per instruction set). The
// reference kernel's arithmetic exactly: per output pixel the four corner weights
// (1-fy)(1-fx), (1-fy)fx, fy(1-fx), fy·fx, and the corner products added to 0 in the order
// top-left, top-right, bottom-left, bottom-right, each product rounded before its addition.
struct BilinearColumn {
  int64_t x0, x1;  // offsets (floats) of the left and right input pixels inside a row
  float fx;        // fraction between them
};
// One output row from input rows r0 (top) and r1 (bottom) at fraction fy.
using BilinearRowFn = void (*)(const float* r0, const float* r1, const BilinearColumn* cols, int32_t out_w,
                               int32_t depth, float fy, float* out);
BilinearRowFn BilinearRowAvx2();    // bilinear_f32_avx2.cc: needs AVX2
BilinearRowFn BilinearRowAvx512();  // bilinear_f32_avx512.cc: needs AVX-512 F/BW/VL/DQ

// int8 RESIZE_BILINEAR rows: the reference's 10-bit fixed point (BilinearInteger) exactly. Per
// output column the two input columns (offsets in elements) and the fraction dx (1/1024 units);
// per row dy. The reference's sum p00(1024-dy)(1024-dx) + p10·dy(1024-dx) + p01(1024-dy)dx +
// p11·dy·dx is computed as (1024-dx)(p00(1024-dy) + p10·dy) + dx(p01(1024-dy) + p11·dy): the same
// integer, and within int32 for int8 (|fractions| <= 1536 with half-pixel centers: < 2^31).
struct BilinearColumnQ {
  int64_t x0, x1;
  int32_t dx;
};
using BilinearRowInt8Fn = void (*)(const int8_t* r0, const int8_t* r1, const BilinearColumnQ* cols, int32_t out_w,
                                   int32_t depth, int32_t dy, int8_t* out);
BilinearRowInt8Fn BilinearRowInt8Avx2();    // bilinear_f32_avx2.cc
BilinearRowInt8Fn BilinearRowInt8Avx512();  // bilinear_f32_avx512.cc

// int16 (16x8 models) rows: the same arithmetic; the vertical blends fit int32 (|p| <= 2^15,
// weights <= 1536), the horizontal blend is taken in 64-bit lanes as the reference's int64 sum.
using BilinearRowInt16Fn = void (*)(const int16_t* r0, const int16_t* r1, const BilinearColumnQ* cols, int32_t out_w,
                                    int32_t depth, int32_t dy, int16_t* out);
BilinearRowInt16Fn BilinearRowInt16Avx512();  // bilinear_f32_avx512.cc

}  // namespace edgeopt::kernels::resize
