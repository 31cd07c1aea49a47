// Weight clustering (k-means weight sharing): every weight of a layer (or of one output channel)
// is replaced by the nearest of K centroids. The file stays a standard dense .tflite with K
// distinct values per layer/channel, which compresses well and quantizes to a small palette.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "graph/graph.h"
#include "optimize/weight_selection.h"

namespace edgeopt::optimize {

enum class ClusterInit { kLinear, kDensity, kKMeansPlusPlus, kRandom };
bool ParseClusterInit(const std::string& s, ClusterInit* out);

struct ClusterOptions {
  int clusters = 16;
  ClusterInit init = ClusterInit::kKMeansPlusPlus;
  bool per_channel = false;
  bool preserve_sparsity = false;  // zeros stay exactly zero and are not clustered
  int max_iterations = 50;
  uint64_t seed = 1;
  WeightSelection selection;
};

struct LayerClusters {
  std::string tensor;
  std::string op;
  int64_t params = 0;
  int64_t distinct_before = 0;
  int64_t distinct_after = 0;  // per layer (per channel: maximum over channels)
  double rmse = 0;             // weight reconstruction error
  int64_t zeros = 0;
};

struct ClusterReport {
  std::vector<LayerClusters> layers;
  std::vector<std::string> skipped;
};

Expected<ClusterReport> ClusterModel(Graph& g, const ClusterOptions& options);

// One-dimensional k-means (exposed for tests): returns centroids (sorted) and assigns each value.
std::vector<float> KMeans1D(const std::vector<float>& values, int k, ClusterInit init, int max_iterations, uint64_t seed,
                            std::vector<int>* assignment);

}  // namespace edgeopt::optimize
