// The row loop of pad_rows.cc, written once over a policy `Ops` that each ISA file defines (in
// an anonymous namespace, so instantiations never collide): Ops::Copy(dst, src, bytes) and
// Ops::Fill(dst, bytes) with the pad value (bytes are multiples of the element size, and every
// destination offset is too).
#pragma once

#include "kernels/common/tensor_args.h"
#include "kernels/transform/pad_rows.h"

namespace edgeopt::kernels::transform {

template <class Ops>
void PadRowRange(const PadRowPlan& p, const uint8_t* in, uint8_t* out, const Ops& ops, int64_t r0, int64_t r1) {
  const auto elem = static_cast<int64_t>(p.elem);
  const int64_t before = p.before * elem, row_in = p.row_in * elem, after = p.after * elem;
  const int64_t row_out = before + row_in + after;
  const int nd = static_cast<int>(p.outer.size());
  // Index of row r0 along each outer axis, then stepped like an odometer.
  DimBuffer<int64_t> idx(static_cast<size_t>(nd), 0);
  for (int64_t d = nd - 1, rem = r0; d >= 0; --d) {
    idx[d] = rem % p.outer[d].out_size;
    rem /= p.outer[d].out_size;
  }
  uint8_t* dst = out + r0 * row_out;
  for (int64_t r = r0; r < r1; ++r, dst += row_out) {
    int64_t src = 0;
    bool pad_row = false;
    for (int d = 0; d < nd && !pad_row; ++d) {
      const int64_t i = idx[d] - p.outer[d].before;
      pad_row = i < 0 || i >= p.outer[d].size;
      src += i * p.outer[d].in_stride;
    }
    if (pad_row) {
      ops.Fill(dst, row_out);
    } else {
      if (before) ops.Fill(dst, before);
      ops.Copy(dst + before, in + src * elem, row_in);
      if (after) ops.Fill(dst + before + row_in, after);
    }
    for (int d = nd - 1; d >= 0; --d) {
      if (++idx[d] < p.outer[d].out_size) break;
      idx[d] = 0;
    }
  }
}

}  // namespace edgeopt::kernels::transform
