// PAD / PADV2 by whole rows (the fast path of ref_pad.cc's PadKernel).
//
// The trailing axes that are not padded are merged into one contiguous row, so an output row
// is [before fill | memcpy of one input row | after fill], or all fill when an outer index lies
// in the padding. Fills write the pad value once and double it with memcpy (memset when all
// its bytes are equal, as for zero). Rows are spread over the interpreter's threads.
#include "kernels/transform/pad_rows.h"

#include <algorithm>
#include <cstring>

#include "kernels/common/tensor_args.h"
#include "kernels/gemm/parallel.h"

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
  p.rows = 1;
  for (const auto& a : p.outer) p.rows *= a.out_size;
  return p;
}

void RunPadRows(const PadRowPlan& p, const uint8_t* in, uint8_t* out, const uint8_t* value, rt::ThreadPool* pool) {
  const int64_t row_out = p.before + p.row_in + p.after;
  if (p.rows == 0 || row_out == 0) return;
  const size_t elem = p.elem;
  const int nd = static_cast<int>(p.outer.size());
  auto run = [&](int64_t r0, int64_t r1) {
    // Index of row r0 along each outer axis, then stepped like an odometer.
    DimBuffer<int64_t> idx(static_cast<size_t>(nd), 0);
    for (int64_t d = nd - 1, rem = r0; d >= 0; --d) {
      idx[d] = rem % p.outer[d].out_size;
      rem /= p.outer[d].out_size;
    }
    uint8_t* dst = out + r0 * row_out * static_cast<int64_t>(elem);
    for (int64_t r = r0; r < r1; ++r) {
      int64_t src = 0;
      bool pad_row = false;
      for (int d = 0; d < nd; ++d) {
        const int64_t i = idx[d] - p.outer[d].before;
        if (i < 0 || i >= p.outer[d].size) {
          pad_row = true;
          break;
        }
        src += i * p.outer[d].in_stride;
      }
      if (pad_row) {
        FillValue(dst, row_out, value, elem);
      } else {
        FillValue(dst, p.before, value, elem);
        std::memcpy(dst + p.before * elem, in + src * static_cast<int64_t>(elem), static_cast<size_t>(p.row_in) * elem);
        FillValue(dst + (p.before + p.row_in) * elem, p.after, value, elem);
      }
      dst += row_out * static_cast<int64_t>(elem);
      for (int d = nd - 1; d >= 0; --d) {
        if (++idx[d] < p.outer[d].out_size) break;
        idx[d] = 0;
      }
    }
  };
  // Tasks of at least 64 KiB of output.
  const int64_t row_bytes = row_out * static_cast<int64_t>(elem);
  const int threads = pool ? pool->num_threads() : 1;
  const int64_t tasks = TaskCount(threads, p.rows, std::max<int64_t>(1, (int64_t{64} << 10) / row_bytes));
  RunTasks(pool, tasks, [&](int64_t t) { run(p.rows * t / tasks, p.rows * (t + 1) / tasks); });
}

}  // namespace edgeopt::kernels::transform
