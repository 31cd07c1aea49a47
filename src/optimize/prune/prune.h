// Post-training magnitude pruning: unstructured (per layer or global threshold), 2:4 structured
// along input channels, and block sparsity. Pruned weights stay float32 constants with exact
// zeros; `encode_sparse` stores them in the .tflite sparsity format behind a DENSIFY op so the
// file itself shrinks.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "graph/graph.h"
#include "optimize/weight_selection.h"

namespace edgeopt::optimize {

enum class PruneStructure { kUnstructured, kTwoFour, kBlock };

struct PruneOptions {
  double sparsity = 0.5;  // fraction of weights set to zero (unstructured / block)
  PruneStructure structure = PruneStructure::kUnstructured;
  int block_rows = 1, block_cols = 4;  // kBlock: over the [out, in...] 2-D view
  bool global = false;                 // one magnitude threshold across all selected layers
  WeightSelection selection;
  bool encode_sparse = false;
};

struct LayerSparsity {
  std::string tensor;
  std::string op;
  int64_t params = 0;
  int64_t zeros_before = 0;
  int64_t zeros_after = 0;
  bool sparse_encoded = false;
  size_t bytes_before = 0;
  size_t bytes_after = 0;
};

struct PruneReport {
  std::vector<LayerSparsity> layers;
  std::vector<std::string> skipped;
  int64_t total_params = 0;
  int64_t total_zeros = 0;
};

// Parses "unstructured", "2:4", "block:RxC".
Status ParsePruneStructure(const std::string& s, PruneOptions* o);

Expected<PruneReport> PruneModel(Graph& g, const PruneOptions& options);

}  // namespace edgeopt::optimize
