// PAD / PADV2 by whole rows: the plan (made when the paddings are known) and the copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/tensor.h"
#include "runtime/thread_pool.h"

namespace edgeopt::kernels::transform {

struct PadRowPlan {
  struct Axis {
    int64_t before = 0, size = 0, out_size = 0, in_stride = 0;  // in_stride in elements
  };
  size_t elem = 0;
  std::vector<Axis> outer;  // the axes before the row, outermost first
  int64_t rows = 1;         // output rows (product of the outer out_size)
  int64_t before = 0, row_in = 0, after = 0;  // elements of one output row
};

// `pads` holds (before, after) per axis of `in_shape`, all >= 0.
PadRowPlan MakePadRowPlan(const rt::Shape& in_shape, const std::vector<int64_t>& pads, size_t elem);
void RunPadRows(const PadRowPlan& plan, const uint8_t* in, uint8_t* out, const uint8_t* value, bool avx512,
                rt::ThreadPool* pool);
// Rows [r0, r1) with AVX-512 moves (pad_rows_avx512.cc; plan.elem must divide 64).
void PadRowRangeAvx512(const PadRowPlan& plan, const uint8_t* in, uint8_t* out, const uint8_t* value, int64_t r0,
                       int64_t r1);
// Writes `count` copies of the elem-byte `value`.
void FillValue(uint8_t* dst, int64_t count, const uint8_t* value, size_t elem);

}  // namespace edgeopt::kernels::transform
