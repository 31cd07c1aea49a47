// Numpy-style broadcasting shared by elementwise kernels.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/common/tensor_args.h"
#include "runtime/tensor.h"

namespace edgeopt::kernels {

// Broadcast result of two shapes; false if some dimension pair is neither equal nor 1.
bool BroadcastShape(const rt::Shape& a, const rt::Shape& b, rt::Shape* out);

// Whether `small` broadcasts to `full` over leading dimensions only: right-aligned, its dimensions
// are 1 up to the first that is not, and from there equal to full's (e.g. [C], [1, 1, C],
// [H, W, C] or [1] against [N, H, W, C]), so that along full's flat elements its values repeat
// with a period of its element count (PRELU's alpha in the fast kernels).
inline bool BroadcastsOverLeadingDims(const rt::Shape& full, const rt::Shape& small) {
  if (small.size() > full.size()) return false;
  const size_t lead = full.size() - small.size();
  size_t j = 0;
  while (j < small.size() && small[j] == 1) ++j;
  for (; j < small.size(); ++j)
    if (small[j] != full[lead + j]) return false;
  return true;
}

// Element strides of `in` viewed with shape `out` (left-padded with size-1 dims; 0 where broadcast).
std::vector<int64_t> BroadcastStrides(const rt::Shape& in, const rt::Shape& out);

// Visits `out` in row-major order as runs along the innermost dimension:
// fn(out_offset, a_offset, b_offset, count, a_step, b_step), where steps are 0 or 1.
template <typename F>
void ForEachBroadcastRun(const rt::Shape& out, const std::vector<int64_t>& sa, const std::vector<int64_t>& sb, F&& fn) {
  const int rank = static_cast<int>(out.size());
  int64_t total = 1;
  for (int32_t d : out) total *= d;
  if (total == 0) return;
  if (rank == 0) {
    fn(int64_t{0}, int64_t{0}, int64_t{0}, int64_t{1}, int64_t{0}, int64_t{0});
    return;
  }
  const int64_t inner = out[rank - 1];
  const int64_t a_step = sa[rank - 1], b_step = sb[rank - 1];
  // The odometer: on the stack up to rank 8 (an invoke allocates nothing), else on the heap.
  int32_t small[8] = {};
  std::vector<int32_t> large(rank > 8 ? rank : 0, 0);
  int32_t* idx = rank > 8 ? large.data() : small;
  int64_t a_off = 0, b_off = 0;
  for (int64_t o = 0; o < total; o += inner) {
    fn(o, a_off, b_off, inner, a_step, b_step);
    // advance the outer index (dims 0..rank-2)
    for (int d = rank - 2; d >= 0; --d) {
      ++idx[d];
      a_off += sa[d];
      b_off += sb[d];
      if (idx[d] < out[d]) break;
      a_off -= sa[d] * out[d];
      b_off -= sb[d] * out[d];
      idx[d] = 0;
    }
  }
}

// Two operands broadcast to `out`, as few dimensions as the broadcast allows: size-1 dimensions
// dropped, neighbours with the same broadcast pattern merged; outermost first, never empty (a
// scalar output is one dimension of size 1). Strides in elements, 0 where that operand is
// broadcast. Elementwise kernels run the last dimension as a contiguous row.
struct BroadcastDim {
  int64_t size;
  int64_t a_stride;
  int64_t b_stride;
};
std::vector<BroadcastDim> CollapseBroadcast(const rt::Shape& a, const rt::Shape& b, const rt::Shape& out);

// Rows r0 .. r1 - 1 of the collapsed dimensions but the last, in order: fn(row, a_offset,
// b_offset) with the element offsets of that row's first element; stepped like an odometer.
template <typename F>
void ForEachBroadcastRow(const std::vector<BroadcastDim>& dims, int64_t r0, int64_t r1, F&& fn) {
  const int nd = static_cast<int>(dims.size()) - 1;
  DimBuffer<int64_t> idx(static_cast<size_t>(std::max(nd, 1)), 0);
  int64_t oa = 0, ob = 0;
  int64_t rem = r0;
  for (int d = nd - 1; d >= 0; --d) {
    idx[d] = rem % dims[d].size;
    rem /= dims[d].size;
    oa += idx[d] * dims[d].a_stride;
    ob += idx[d] * dims[d].b_stride;
  }
  for (int64_t r = r0; r < r1; ++r) {
    fn(r, oa, ob);
    for (int d = nd - 1; d >= 0; --d) {
      oa += dims[d].a_stride;
      ob += dims[d].b_stride;
      if (++idx[d] < dims[d].size) break;
      oa -= dims[d].a_stride * dims[d].size;
      ob -= dims[d].b_stride * dims[d].size;
      idx[d] = 0;
    }
  }
}

}  // namespace edgeopt::kernels
