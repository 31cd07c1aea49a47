// The data-movement engine shared by the transform kernels (and the space/depth ops in
// resize/). An output element is a copy of one input element whose offset is the *sum* of one
// table entry per output axis:
//
//   out[o_0, ..., o_{r-1}] = in[ table[0][o_0] + ... + table[r-1][o_{r-1}] ]
//
// or a pad value when any entry is kPadEntry. Transpose, slice, strided slice, reverse, tile,
// broadcast, pad, mirror pad, depth<->space and batch<->space are all such tables, so each
// kernel only builds tables (and validates them); the copy itself is written once. Kernels are
// dtype-generic: elements are copied as 1/2/4/8/16-byte units.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "runtime/tensor.h"

namespace edgeopt::kernels {

constexpr int64_t kPadEntry = std::numeric_limits<int64_t>::min();

using AxisTables = std::vector<std::vector<int64_t>>;

// Entries start, start + step, ... (size of them).
std::vector<int64_t> AffineTable(int32_t size, int64_t start, int64_t step);

// Copies per the tables. `pad_value` (elem_bytes bytes) is required when a table holds
// kPadEntry. The caller guarantees every non-pad sum is a valid input offset.
// inner_contiguous: the caller knows the innermost table steps by one element (an affine table
// of step 1, as slices build), so its rows are copied whole without scanning the table first.
void CopyByAxisTables(size_t elem_bytes, const rt::Shape& out_shape, const AxisTables& tables, const uint8_t* in,
                      uint8_t* out, const uint8_t* pad_value = nullptr, bool inner_contiguous = false);

// Largest and smallest sum the tables can produce (ignoring pad entries); for validation.
void TableOffsetRange(const AxisTables& tables, int64_t* min_offset, int64_t* max_offset);

// Copies n elements of elem_bytes each.
void CopyElements(size_t elem_bytes, const uint8_t* src, uint8_t* dst, int64_t n);
// Writes n copies of one element.
void FillElements(size_t elem_bytes, const uint8_t* value, uint8_t* dst, int64_t n);

}  // namespace edgeopt::kernels
