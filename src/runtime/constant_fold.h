// Which tensors hold the same values at every invoke without being stored in the file: outputs
// of chains of ops whose inputs are all constants (DEQUANTIZE of float16 weights, DENSIFY of a
// sparse constant, DENSIFY then DEQUANTIZE, ...). The interpreter folds such ops right after
// preparing them (SubgraphExec::FoldNode); kernels ask here at creation time whether a weight
// will be constant so that they can choose their packed fast path.
#pragma once

#include <cstdint>
#include <vector>

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

// The producers of a subgraph's tensors for the two lookups above, while the subgraph does not
// change: as long as one is alive on this thread (SubgraphExec::Init holds one over kernel
// creation and fusion), IsConstantOrFoldable finds a tensor's producer here instead of scanning
// the subgraph's ops for it. Fusion matchers ask at every op, each question following a chain of
// up to 8 producers, so the scans made interpreter creation quadratic in the op count (a
// 4,992-op float transformer: 310 ms, 70% in Subgraph::FindProducer).
class ScopedProducerIndex {
 public:
  explicit ScopedProducerIndex(const Subgraph& sg);
  ~ScopedProducerIndex();
  ScopedProducerIndex(const ScopedProducerIndex&) = delete;
  ScopedProducerIndex& operator=(const ScopedProducerIndex&) = delete;
  // The index alive on this thread for sg (the innermost), or nullptr.
  static const ScopedProducerIndex* For(const Subgraph& sg);
  // The op producing tensor t (the first, as Subgraph::FindProducer), or -1.
  int producer(int32_t t) const {
    return t >= 0 && static_cast<size_t>(t) < producer_.size() ? producer_[static_cast<size_t>(t)] : -1;
  }

 private:
  const Subgraph* sg_;
  std::vector<int> producer_;
  const ScopedProducerIndex* outer_;
};

}  // namespace edgeopt::rt
