// Elementwise work over a collapsed broadcast (broadcast.h's CollapseBroadcast) cut into tasks
// over the interpreter's threads: blocks of whole innermost rows, or pieces of one long row, of
// about 16384 output elements each.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/common/broadcast.h"
#include "kernels/gemm/parallel.h"

namespace edgeopt::kernels {

// fn(a_offset, b_offset, out_offset, count): `count` output elements from out_offset on, the
// operands from their offsets with the innermost strides dims.back().a_stride / b_stride (0 or 1).
template <typename F>
void ForEachBroadcastPiece(rt::ThreadPool& threads, const std::vector<BroadcastDim>& dims, F&& fn) {
  const BroadcastDim& inner = dims.back();
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < dims.size(); ++d) rows *= dims[d].size;
  if (rows == 0 || inner.size == 0) return;
  constexpr int64_t kUnit = 16384;
  const int64_t pieces = std::max<int64_t>(1, inner.size / kUnit);
  const int64_t rows_per_unit = std::max<int64_t>(1, kUnit / inner.size);
  const int64_t units = pieces > 1 ? rows * pieces : (rows + rows_per_unit - 1) / rows_per_unit;
  const int64_t tasks = TaskCount(threads.num_threads(), units, 1, 2);
  RunTasks(&threads, tasks, [&](int64_t t) {
    for (int64_t u = units * t / tasks; u < units * (t + 1) / tasks; ++u) {
      const int64_t r0 = pieces > 1 ? u / pieces : u * rows_per_unit;
      const int64_t r1 = pieces > 1 ? r0 + 1 : std::min(rows, r0 + rows_per_unit);
      const int64_t i0 = pieces > 1 ? inner.size * (u % pieces) / pieces : 0;
      const int64_t i1 = pieces > 1 ? inner.size * (u % pieces + 1) / pieces : inner.size;
      ForEachBroadcastRow(dims, r0, r1, [&](int64_t r, int64_t oa, int64_t ob) {
        fn(oa + i0 * inner.a_stride, ob + i0 * inner.b_stride, r * inner.size + i0, i1 - i0);
      });
    }
  });
}

}  // namespace edgeopt::kernels
