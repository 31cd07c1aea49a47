// The .tflite sparse tensor format (SparsityParameters), both directions:
//  - ParseSparsity + Densify: decode a stored sparse tensor (DENSIFY kernel, loaders). Every
//    count, size, segment and index of the (untrusted) file is validated; bad data gives an
//    error, never an out-of-bounds access.
//  - Sparsify: encode a dense tensor (for the optimizer's pruning passes).
//
// Format recap. A tensor of dense shape S (rank n) may be blocked: block_map lists k original
// dimensions, each split into (S[d] / b, b). The resulting n + k "expanded" dimensions are
// stored in traversal_order (expanded dims n.. are the block dims, in block_map order). Each
// stored level is DENSE (dense_size = its size) or SPARSE_CSR: array_segments[p]..[p+1] bound
// the entries of parent position p in array_indices, which hold coordinates along that level.
// The tensor's buffer holds only the stored values, in traversal order.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "tflite_generated.h"

namespace edgeopt::kernels {

struct SparseLevel {
  bool sparse = false;
  int32_t size = 0;               // extent of this level's expanded dimension
  std::vector<int32_t> segments;  // sparse only: parents + 1 entries
  std::vector<int32_t> indices;   // sparse only
};

// A validated sparse layout.
struct SparseLayout {
  std::vector<int32_t> dense_shape;
  std::vector<int32_t> traversal_order;  // level -> expanded dimension
  std::vector<int32_t> block_map;        // block b splits original dimension block_map[b]
  std::vector<int32_t> block_sizes;      // size of block b
  std::vector<SparseLevel> levels;       // in traversal order
  int64_t num_values = 0;                // stored values (leaves)
  int64_t dense_elements = 0;
};

// Validates `params` for a tensor of `dense_shape`.
Expected<SparseLayout> ParseSparsity(const tflite::SparsityParametersT& params, const std::vector<int32_t>& dense_shape);

// Writes the dense row-major tensor: zeros, then every stored value at its position. `values`
// must hold at least num_values elements; `dense` exactly dense_elements.
Status Densify(const SparseLayout& layout, std::span<const uint8_t> values, size_t elem_bytes, std::span<uint8_t> dense);

// How to encode: expanded-dimension traversal order (empty: identity), blocked dimensions with
// their block sizes, and per level whether it is SPARSE_CSR (empty: only the last original
// dimension's level sparse, all block levels dense, as TFLite's sparsifier does for weights).
struct SparseEncoding {
  std::vector<int32_t> traversal_order;
  std::vector<int32_t> block_map;
  std::vector<int32_t> block_sizes;
  std::vector<bool> sparse_levels;
  // Index vector type for segments and indices; NONE picks the smallest that fits per vector.
  tflite::SparseIndexVector index_type = tflite::SparseIndexVector_NONE;
};

struct SparseTensor {
  tflite::SparsityParametersT params;
  std::vector<uint8_t> values;  // stored values, elem_bytes each
  int64_t num_values = 0;
};

// Encodes a dense row-major tensor of `type`. An element is zero when it compares equal to 0
// for its type (so -0.0f is zero). A subtree is stored under a sparse level only if it has a
// nonzero; dense levels store all their children (as TFLite's FormatConverter). Index vectors
// use encoding.index_type, or the smallest of uint8/uint16/int32 that holds their values; a
// forced type too small for the values is an error.
Expected<SparseTensor> Sparsify(std::span<const uint8_t> dense, const std::vector<int32_t>& shape, DType type,
                                const SparseEncoding& encoding);

}  // namespace edgeopt::kernels
