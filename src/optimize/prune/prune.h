// Post-training magnitude pruning: unstructured (per layer or one global threshold), 2:4
// structured along input channels, and block sparsity. Pruned weights stay float32 constants
// with exact zeros (a standard .tflite that compresses well); `encode_sparse` stores them in the
// .tflite sparsity format behind a DENSIFY op so the file itself shrinks.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "graph/graph.h"
#include "optimize/weight_selection.h"

namespace edgeopt::optimize {

enum class PruneStructure { kUnstructured, kTwoFour, kBlock };

struct PruneOptions {
  double sparsity = 0.5;  // fraction of weights set to zero (unstructured / block); 2:4 is always 0.5
  PruneStructure structure = PruneStructure::kUnstructured;
  int block_rows = 1, block_cols = 4;  // kBlock: over the [output channels, everything else] view
  bool global = false;                 // unstructured: one magnitude threshold across all selected layers
  WeightSelection selection;
  bool encode_sparse = false;
};

struct LayerSparsity {
  std::string tensor;
  std::string op;  // first consumer's type
  std::vector<int32_t> shape;
  int64_t params = 0;
  int64_t zeros_before = 0;
  int64_t zeros_after = 0;
  bool sparse_encoded = false;
  size_t bytes_before = 0;  // constant bytes of the weight
  size_t bytes_after = 0;   // dense bytes, or the sparse form's bytes when encoded
  double sparsity() const { return params ? static_cast<double>(zeros_after) / params : 0.0; }
};

struct PruneReport {
  std::vector<LayerSparsity> layers;
  std::vector<std::string> skipped;  // "'name' (OP): why"
  int64_t total_params = 0;          // of the pruned layers
  int64_t total_zeros = 0;
  int sparse_encoded = 0;
  double sparsity() const { return total_params ? static_cast<double>(total_zeros) / total_params : 0.0; }
};

// Parses "unstructured", "2:4", "block:RxC" (1 <= R, C <= 64; not 1x1).
Status ParsePruneStructure(const std::string& s, PruneOptions* o);
std::string PruneStructureName(const PruneOptions& o);  // "unstructured", "2:4", "block:1x4"

// Prunes `g` in place. Errors (graph untouched): a quantized model, sparsity outside [0, 1),
// a bad selection, no weights to prune.
Expected<PruneReport> PruneModel(Graph& g, const PruneOptions& options);

// The magnitude-pruning primitives (exposed for tests). Each keeps NaN weights (never pruned).
// Zeroes exactly min(k, n) entries: the smallest magnitudes, ties broken by position.
void ZeroSmallestMagnitudes(std::span<float> v, int64_t k);
// Keeps the 2 largest magnitudes of every group of 4 consecutive values (v.size() % 4 == 0).
void PruneTwoOfFour(std::span<float> v);
// Zeroes round(sparsity * #blocks) blocks of block_rows x block_cols with the smallest L2 norm
// over the row-major [rows, cols] matrix `v` (edge blocks may be partial).
void PruneBlocks(std::span<float> v, int64_t rows, int64_t cols, int block_rows, int block_cols, double sparsity);

}  // namespace edgeopt::optimize
