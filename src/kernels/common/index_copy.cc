#include "kernels/common/index_copy.h"

#include <algorithm>
#include <cstring>

#include "kernels/common/tensor_args.h"

namespace edgeopt::kernels {
namespace {

template <size_t N>
struct Unit {
  uint8_t b[N];
};

template <size_t N>
void CopyRow(const uint8_t* in, int64_t base, const int64_t* offsets, int64_t count, uint8_t* out,
             const uint8_t* pad) {
  auto* dst = reinterpret_cast<Unit<N>*>(out);
  for (int64_t i = 0; i < count; ++i) {
    const int64_t off = offsets[i];
    if (off == kPadEntry) {
      std::memcpy(dst + i, pad, N);
    } else {
      std::memcpy(dst + i, in + (base + off) * static_cast<int64_t>(N), N);
    }
  }
}

template <size_t N>
void CopyTables(const rt::Shape& out_shape, const AxisTables& tables, const uint8_t* in, uint8_t* out,
                const uint8_t* pad, bool inner_contiguous) {
  const int rank = static_cast<int>(out_shape.size());
  if (rank == 0) {
    std::memcpy(out, in, N);
    return;
  }
  for (int32_t d : out_shape)
    if (d == 0) return;
  const int64_t inner = out_shape[rank - 1];
  const int64_t* inner_offsets = tables[rank - 1].data();
  // An innermost table that steps by one element (slices, pads and tiles of whole rows, depth
  // <-> space channel runs, most transposes that keep the last axis): each row is one memcpy.
  // (A scan of the table on every copy: a 15600-element 1-D slice spent more time here than in
  // its memcpy; slices say so instead.)
  bool contiguous = inner_contiguous || inner > 1;
  for (int64_t i = 0; contiguous && !inner_contiguous && i < inner; ++i) contiguous = inner_offsets[i] == inner_offsets[0] + i;
  auto copy_row = [&](int64_t b, uint8_t* dst) {
    if (b == kPadEntry) {
      for (int64_t i = 0; i < inner; ++i) std::memcpy(dst + i * N, pad, N);
    } else if (contiguous) {
      std::memcpy(dst, in + (b + inner_offsets[0]) * static_cast<int64_t>(N), static_cast<size_t>(inner) * N);
    } else {
      CopyRow<N>(in, b, inner_offsets, inner, dst, pad);
    }
  };
  if (rank == 1) return copy_row(0, out);
  // The last two axes are plain loops (rows of axis rank - 2 need no odometer step: a single
  // element per row, as a transpose moving the last axis has, costs no more than one row);
  // axes 0..rank-3 step an odometer with partial sums base[d] over axes 0..d-1 (kPadEntry once
  // any is padding).
  const int outer_axes = rank - 2;
  DimBuffer<int32_t> idx(std::max(outer_axes, 1), 0);
  DimBuffer<int64_t> base(rank - 1, 0);
  auto recompute = [&](int from) {
    for (int d = from; d < outer_axes; ++d) {
      const int64_t prev = base[d];
      const int64_t t = tables[d][idx[d]];
      base[d + 1] = (prev == kPadEntry || t == kPadEntry) ? kPadEntry : prev + t;
    }
  };
  recompute(0);
  const int64_t mid = out_shape[rank - 2];
  const int64_t* mid_offsets = tables[rank - 2].data();
  const int64_t row_bytes = inner * static_cast<int64_t>(N);
  uint8_t* dst = out;
  while (true) {
    const int64_t b0 = base[outer_axes];
    for (int64_t j = 0; j < mid; ++j, dst += row_bytes) {
      const int64_t t = mid_offsets[j];
      copy_row(b0 == kPadEntry || t == kPadEntry ? kPadEntry : b0 + t, dst);
    }
    int d = outer_axes - 1;
    for (; d >= 0; --d) {
      if (++idx[d] < out_shape[d]) break;
      idx[d] = 0;
    }
    if (d < 0) break;
    recompute(d);
  }
}

}  // namespace

std::vector<int64_t> AffineTable(int32_t size, int64_t start, int64_t step) {
  std::vector<int64_t> t(static_cast<size_t>(std::max(size, 0)));
  for (int32_t i = 0; i < size; ++i) t[i] = start + i * step;
  return t;
}

void CopyByAxisTables(size_t elem_bytes, const rt::Shape& out_shape, const AxisTables& tables, const uint8_t* in,
                      uint8_t* out, const uint8_t* pad_value, bool inner_contiguous) {
  switch (elem_bytes) {
    case 1: return CopyTables<1>(out_shape, tables, in, out, pad_value, inner_contiguous);
    case 2: return CopyTables<2>(out_shape, tables, in, out, pad_value, inner_contiguous);
    case 4: return CopyTables<4>(out_shape, tables, in, out, pad_value, inner_contiguous);
    case 8: return CopyTables<8>(out_shape, tables, in, out, pad_value, inner_contiguous);
    case 16: return CopyTables<16>(out_shape, tables, in, out, pad_value, inner_contiguous);
    default: return;
  }
}

void TableOffsetRange(const AxisTables& tables, int64_t* min_offset, int64_t* max_offset) {
  int64_t lo = 0, hi = 0;
  for (const auto& t : tables) {
    int64_t tlo = 0, thi = 0;
    bool any = false;
    for (int64_t v : t) {
      if (v == kPadEntry) continue;
      tlo = any ? std::min(tlo, v) : v;
      thi = any ? std::max(thi, v) : v;
      any = true;
    }
    lo += tlo;
    hi += thi;
  }
  *min_offset = lo;
  *max_offset = hi;
}

void CopyElements(size_t elem_bytes, const uint8_t* src, uint8_t* dst, int64_t n) {
  if (n > 0 && src != dst) std::memmove(dst, src, elem_bytes * static_cast<size_t>(n));
}

void FillElements(size_t elem_bytes, const uint8_t* value, uint8_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * static_cast<int64_t>(elem_bytes), value, elem_bytes);
}

}  // namespace edgeopt::kernels
