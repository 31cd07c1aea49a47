// Which tensors hold the same values at every invoke without being stored in the file: outputs
// of chains of ops whose inputs are all constants (DEQUANTIZE of float16 weights, DENSIFY of a
// sparse constant, DENSIFY then DEQUANTIZE, ...). The interpreter folds such ops right after
// preparing them (SubgraphExec::FoldNode); kernels ask here at creation time whether a weight
// will be constant so that they can choose their packed fast path.
#pragma once

#include <cstdint>

#include "graph/graph.h"

namespace edgeopt::rt {

// False for ops whose result is not a pure function of their inputs, or that run other
// subgraphs: the interpreter never folds them.
bool MayFold(const Operator& op);

// Tensor t of subgraph sg is a file constant, or the output of a foldable op whose inputs are
// all (recursively) such tensors. The chain is followed at most `max_depth` producers up.
bool IsConstantOrFoldable(const Graph& graph, const Subgraph& sg, int32_t t, int max_depth = 8);

// Op k of sg only computes constants: it may be folded (MayFold) and each of its inputs is a
// constant or (IsConstantOrFoldable) the output of such ops. A fused run may leave such ops
// inside its range to run before it (FusedRun::ops).
bool IsConstantOp(const Graph& graph, const Subgraph& sg, int k);

}  // namespace edgeopt::rt
