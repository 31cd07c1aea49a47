// Weight clustering (k-means weight sharing): every weight of a layer (or of one output channel)
// is replaced by the nearest of K centroids. The file stays a standard dense .tflite with at most
// K distinct values per layer/channel, which compresses well and quantizes to a small palette.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "graph/graph.h"
#include "optimize/weight_selection.h"

namespace edgeopt::optimize {

enum class ClusterInit { kLinear, kDensity, kKMeansPlusPlus, kRandom };
bool ParseClusterInit(const std::string& s, ClusterInit* out);
const char* ClusterInitName(ClusterInit init);

struct ClusterOptions {
  int clusters = 16;
  ClusterInit init = ClusterInit::kKMeansPlusPlus;
  bool per_channel = false;
  bool preserve_sparsity = false;  // zeros stay exactly zero (one of the K values) and are not clustered
  int max_iterations = 300;
  uint64_t seed = 1;
  WeightSelection selection;
};

struct LayerClusters {
  std::string tensor;
  std::string op;
  std::vector<int32_t> shape;
  int64_t params = 0;
  int64_t groups = 1;          // 1, or the output channels with --per-channel
  int64_t distinct_before = 0;  // per layer, or the maximum over channels
  int64_t distinct_after = 0;
  int64_t zeros_before = 0;
  int64_t zeros_after = 0;
  double rmse = 0;         // weight reconstruction error
  double max_abs_weight = 0;
};

struct ClusterReport {
  std::vector<LayerClusters> layers;
  std::vector<std::string> skipped;
  std::vector<std::string> notes;  // e.g. zeros that were clustered away without --preserve-sparsity
};

Expected<ClusterReport> ClusterModel(Graph& g, const ClusterOptions& options);

// One-dimensional k-means (exposed for tests): returns at most k sorted centroids and assigns
// each value to its nearest centroid (ties to the smaller one). With k or fewer distinct values
// the centroids are those values (exact).
std::vector<float> KMeans1D(const std::vector<float>& values, int k, ClusterInit init, int max_iterations, uint64_t seed,
                            std::vector<int>* assignment);

}  // namespace edgeopt::optimize
