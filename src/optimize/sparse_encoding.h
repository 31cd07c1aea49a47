// Stores a pruned constant in the .tflite sparsity format behind a DENSIFY op (the way LiteRT
// reads sparse weights), so the file itself shrinks.
#pragma once

#include "core/status.h"
#include "graph/graph.h"

namespace edgeopt::optimize {

// Re-encodes constant `tensor` of subgraph `subgraph` as a sparse constant feeding a DENSIFY
// op that recreates the dense tensor. Returns false (and leaves the graph unchanged) when the
// sparse form would not be smaller. Block sizes (rows along axis 0, cols along the last axis)
// of 1x1 mean plain element sparsity.
Expected<bool> EncodeSparseWeight(Graph& g, int subgraph, int32_t tensor, int block_rows = 1, int block_cols = 1);

}  // namespace edgeopt::optimize
