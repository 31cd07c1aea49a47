// Stores a pruned constant in the .tflite sparsity format behind a DENSIFY op (the way LiteRT
// reads sparse weights), so the file itself shrinks.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.h"
#include "graph/graph.h"

namespace edgeopt::optimize {

struct SparseEncodingResult {
  bool encoded = false;       // false: the sparse form would not be smaller; graph unchanged
  size_t dense_bytes = 0;     // the tensor's constant bytes before
  size_t sparse_bytes = 0;    // values + index vectors (+ a small per-level allowance for the flatbuffer tables)
  int32_t sparse_tensor = -1;  // the new sparse constant (when encoded)
  int densify_op = -1;         // index of the DENSIFY op (when encoded)
};

// Re-encodes constant `tensor` of subgraph `subgraph` as a sparse constant feeding a DENSIFY op
// (inserted just before the tensor's first consumer) that recreates the dense tensor; the
// original tensor keeps its name, shape and consumers but loses its data. Only the innermost
// dimension is stored SPARSE_CSR (all others DENSE), as TFLite's converter does. With
// block_rows x block_cols > 1 and a shape they divide (rows along axis 0, cols along the last
// axis), blocks are stored instead of single elements. Does nothing (encoded = false) when the
// sparse form would not be smaller, or when the tensor is not a plain dense constant.
Expected<SparseEncodingResult> EncodeSparseWeight(Graph& g, int subgraph, int32_t tensor, int block_rows = 1,
                                                  int block_cols = 1);

// Replaces every DENSIFY of a constant sparse tensor by the dense constant: the input tensor gets
// the dense values (its sparsity dropped) and the op's readers read it. For passes that need
// plain constant weights (quantizing a pruned or sparse model: its int8 kernels take dense
// weights). Returns how many ops were folded; an invalid sparse tensor is an error naming it.
Expected<int> FoldConstantDensify(Graph& g);

}  // namespace edgeopt::optimize
