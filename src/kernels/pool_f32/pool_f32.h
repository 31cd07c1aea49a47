// Float32 average / max pooling over NHWC windows (LiteRT semantics: the average divides by the
// number of window positions inside the image; padding never contributes).
#pragma once

#include "kernels/gemm/gemm.h"

namespace edgeopt::kernels::pool {

struct Geometry {
  int batch = 0, h = 0, w = 0, c = 0;
  int oh = 0, ow = 0;
  int fh = 0, fw = 0, sh = 1, sw = 1;
  int pad_top = 0, pad_left = 0;
};

enum class Kind { kAverage, kMax };

// Output rows [row_begin, row_end) of the batch·oh rows.
void RowsAvx2(Kind kind, const Geometry& g, const float* in, float* out, int row_begin, int row_end, gemm::MinMax mm);
void RowsScalar(Kind kind, const Geometry& g, const float* in, float* out, int row_begin, int row_end,
                gemm::MinMax mm);

}  // namespace edgeopt::kernels::pool
