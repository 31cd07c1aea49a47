// PAD / PADV2 by whole rows (the fast path of ref_pad.cc's PadKernel).
//
// The trailing axes that are not padded are merged into one contiguous row, so an output row
// is [before fill | memcpy of one input row | after fill], or all fill when an outer index lies
// in the padding. Rows are spread over the interpreter's threads and run by the loop below, with
// library memcpy / memset, or by pad_rows_avx512.cc's (whole 64-byte pieces of rows).
#include "kernels/transform/pad_rows.h"

#include <algorithm>
#include <cstring>

#include "kernels/gemm/parallel.h"
#include "kernels/common/tensor_args.h"

namespace edgeopt::kernels::transform {

void FillValue(uint8_t* dst, int64_t count, const uint8_t* value, size_t elem) {
  if (count <= 0) return;
  const size_t bytes = static_cast<size_t>(count) * elem;
  if (std::all_of(value, value + elem, [&](uint8_t b) { return b == value[0]; })) {
    std::memset(dst, value[0], bytes);
    return;
  }
  std::memcpy(dst, value, elem);
  for (size_t done = elem; done < bytes;) {
    const size_t n = std::min(done, bytes - done);
    std::memcpy(dst + done, dst, n);
    done += n;
  }
}

PadRowPlan MakePadRowPlan(const rt::Shape& in_shape, const std::vector<int64_t>& pads, size_t elem) {
  PadRowPlan p;
  p.elem = elem;
  const int rank = static_cast<int>(in_shape.size());
  // Last padded axis: it and every axis after it form the row.
  int k = rank - 1;
  while (k > 0 && pads[2 * k] == 0 && pads[2 * k + 1] == 0) --k;
  int64_t unit = 1;  // elements per index of axis k
  for (int d = k + 1; d < rank; ++d) unit *= in_shape[d];
  if (rank == 0) {
    p.row_in = 1;
    return p;
  }
  p.before = pads[2 * k] * unit;
  p.row_in = in_shape[k] * unit;
  p.after = pads[2 * k + 1] * unit;
  int64_t in_stride = p.row_in;
  p.outer.resize(k);
  for (int d = k - 1; d >= 0; --d) {
    PadRowPlan::Axis& a = p.outer[d];
    a.before = pads[2 * d];
    a.size = in_shape[d];
    a.out_size = a.before + a.size + pads[2 * d + 1];
    a.in_stride = in_stride;
    in_stride *= in_shape[d];
  }
  // An unpadded outer axis joins the axis before it (its rows are contiguous in the input and in
  // the output alike), so channel padding of [N, H, W, C] steps one index per row, not three.
  for (size_t d = p.outer.size(); d-- > 1;) {
    PadRowPlan::Axis& inner = p.outer[d];
    if (inner.before != 0 || inner.out_size != inner.size) continue;
    PadRowPlan::Axis& a = p.outer[d - 1];
    a.before *= inner.size;
    a.size *= inner.size;
    a.out_size *= inner.size;
    a.in_stride = inner.in_stride;
    p.outer.erase(p.outer.begin() + static_cast<std::ptrdiff_t>(d));
  }
  p.rows = 1;
  for (const auto& a : p.outer) p.rows *= a.out_size;
  return p;
}

namespace {

// Rows [r0, r1) with library memcpy, and memset when all bytes of the pad value are equal.
void PadRowRangePortable(const PadRowPlan& p, const uint8_t* in, uint8_t* out, const uint8_t* value, int64_t r0,
                         int64_t r1) {
  const auto elem = static_cast<int64_t>(p.elem);
  const int64_t before = p.before * elem, row_in = p.row_in * elem;
  const int64_t row_out = before + row_in + p.after * elem;
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
      FillValue(dst, p.before + p.row_in + p.after, value, p.elem);
    } else {
      FillValue(dst, p.before, value, p.elem);
      std::memcpy(dst + before, in + src * elem, static_cast<size_t>(row_in));
      FillValue(dst + before + row_in, p.after, value, p.elem);
    }
    for (int d = nd - 1; d >= 0; --d) {
      if (++idx[d] < p.outer[d].out_size) break;
      idx[d] = 0;
    }
  }
}

}  // namespace

void RunPadRows(const PadRowPlan& p, const uint8_t* in, uint8_t* out, const uint8_t* value, bool avx512,
                rt::ThreadPool* pool) {
  const int64_t row_bytes = (p.before + p.row_in + p.after) * static_cast<int64_t>(p.elem);
  if (p.rows == 0 || row_bytes == 0) return;
  // 64 must be a multiple of the element size for the AVX-512 fill pattern (1..16 bytes are).
  auto* range = avx512 && 64 % p.elem == 0 ? PadRowRangeAvx512 : PadRowRangePortable;
  // Tasks of at least 64 KiB of output.
  const int threads = pool ? pool->num_threads() : 1;
  const int64_t tasks = TaskCount(threads, p.rows, std::max<int64_t>(1, (int64_t{64} << 10) / row_bytes));
  RunTasks(pool, tasks, [&](int64_t t) { range(p, in, out, value, p.rows * t / tasks, p.rows * (t + 1) / tasks); });
}

}  // namespace edgeopt::kernels::transform
