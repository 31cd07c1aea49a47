#include "optimize/cluster/cluster.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <unordered_set>

#include "optimize/quantize/weights.h"

namespace edgeopt::optimize {

bool ParseClusterInit(const std::string& s, ClusterInit* out) {
  if (s == "linear") *out = ClusterInit::kLinear;
  else if (s == "density") *out = ClusterInit::kDensity;
  else if (s == "kmeans++") *out = ClusterInit::kKMeansPlusPlus;
  else if (s == "random") *out = ClusterInit::kRandom;
  else return false;
  return true;
}

const char* ClusterInitName(ClusterInit init) {
  switch (init) {
    case ClusterInit::kLinear: return "linear";
    case ClusterInit::kDensity: return "density";
    case ClusterInit::kKMeansPlusPlus: return "kmeans++";
    case ClusterInit::kRandom: return "random";
  }
  return "?";
}

namespace {

// Initial centroids from the sorted values (finite, more than k distinct).
std::vector<double> InitCentroids(const std::vector<float>& sorted, int k, ClusterInit init, std::mt19937_64& rng) {
  std::vector<double> c;
  const double lo = sorted.front(), hi = sorted.back();
  const size_t n = sorted.size();
  switch (init) {
    case ClusterInit::kLinear:
      for (int i = 0; i < k; ++i) c.push_back(lo + (hi - lo) * i / (k - 1));
      break;
    case ClusterInit::kDensity:
      // Evenly spaced quantiles of the weight distribution (its CDF).
      for (int i = 0; i < k; ++i) c.push_back(sorted[std::min(n - 1, (2 * static_cast<size_t>(i) + 1) * n / (2 * k))]);
      break;
    case ClusterInit::kRandom: {
      std::uniform_int_distribution<size_t> d(0, n - 1);
      for (int i = 0; i < k; ++i) c.push_back(sorted[d(rng)]);
      break;
    }
    case ClusterInit::kKMeansPlusPlus: {
      // D^2 sampling; distances to the nearest chosen centroid are updated incrementally (O(n k)).
      std::uniform_int_distribution<size_t> d(0, n - 1);
      c.push_back(sorted[d(rng)]);
      std::vector<double> dist(n);
      for (size_t i = 0; i < n; ++i) dist[i] = (sorted[i] - c[0]) * (sorted[i] - c[0]);
      while (static_cast<int>(c.size()) < k) {
        double total = 0;
        for (double x : dist) total += x;
        if (total <= 0) break;
        std::uniform_real_distribution<double> u(0, total);
        double r = u(rng);
        size_t pick = 0;
        for (; pick + 1 < n && r >= dist[pick]; ++pick) r -= dist[pick];
        const double cc = sorted[pick];
        c.push_back(cc);
        for (size_t i = 0; i < n; ++i) dist[i] = std::min(dist[i], (sorted[i] - cc) * (sorted[i] - cc));
      }
      break;
    }
  }
  std::sort(c.begin(), c.end());
  c.erase(std::unique(c.begin(), c.end()), c.end());
  return c;
}

// Nearest of the sorted centroids `c` (ties to the smaller).
size_t Nearest(const std::vector<float>& c, float v) {
  auto it = std::lower_bound(c.begin(), c.end(), v);
  size_t idx = it == c.end() ? c.size() - 1 : static_cast<size_t>(it - c.begin());
  if (idx > 0 && std::fabs(v - c[idx - 1]) <= std::fabs(v - c[idx])) --idx;
  return idx;
}

}  // namespace

std::vector<float> KMeans1D(const std::vector<float>& values, int k, ClusterInit init, int max_iterations, uint64_t seed,
                            std::vector<int>* assignment) {
  assignment->assign(values.size(), 0);
  if (values.empty() || k < 1) return {};
  std::vector<float> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  std::vector<float> distinct = sorted;
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  std::vector<float> result;
  if (static_cast<int>(distinct.size()) <= k || k == 1) {
    if (k == 1 && distinct.size() > 1) {
      double s = 0;
      for (float v : sorted) s += v;
      result.push_back(static_cast<float>(s / sorted.size()));
    } else {
      result = distinct;
    }
  } else {
    std::mt19937_64 rng(seed);
    std::vector<double> c = InitCentroids(sorted, k, init, rng);
    // Lloyd iterations on the sorted values: each cluster is the contiguous range between the
    // midpoints of neighbouring centroids, so a prefix sum gives every cluster's mean in O(k log n).
    std::vector<double> prefix(sorted.size() + 1, 0.0);
    for (size_t i = 0; i < sorted.size(); ++i) prefix[i + 1] = prefix[i] + sorted[i];
    for (int it = 0; it < max_iterations; ++it) {
      std::vector<double> next;
      size_t begin = 0;
      for (size_t j = 0; j < c.size(); ++j) {
        size_t end = sorted.size();
        if (j + 1 < c.size()) {
          const double mid = (c[j] + c[j + 1]) / 2;
          // Values at the midpoint go to the smaller centroid, as in the final assignment.
          end = static_cast<size_t>(std::upper_bound(sorted.begin() + begin, sorted.end(), mid,
                                                     [](double m, float v) { return m < v; }) -
                                    sorted.begin());
        }
        if (end > begin) next.push_back((prefix[end] - prefix[begin]) / static_cast<double>(end - begin));
        begin = end;
      }
      const bool changed = next != c;
      c = std::move(next);
      if (!changed) break;
    }
    for (double x : c) result.push_back(static_cast<float>(x));
    std::sort(result.begin(), result.end());
    result.erase(std::unique(result.begin(), result.end()), result.end());
  }
  for (size_t i = 0; i < values.size(); ++i) (*assignment)[i] = static_cast<int>(Nearest(result, values[i]));
  return result;
}

Expected<ClusterReport> ClusterModel(Graph& g, const ClusterOptions& o) {
  RETURN_IF_ERROR(RequireFloatModel(g, "cluster"));
  if (o.clusters < 2 || o.clusters > 65536)
    return InvalidArgument("--clusters must be between 2 and 65536, got " + std::to_string(o.clusters));
  ClusterReport report;
  ASSIGN_OR_RETURN(auto weights, SelectWeights(g, o.selection, &report.skipped));
  if (weights.empty())
    return InvalidArgument("no float32 weights to cluster (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, TRANSPOSE_CONV, "
                           "BATCH_MATMUL, UNIDIRECTIONAL_SEQUENCE_LSTM" +
                           std::string(report.skipped.empty() ? ")" : "; all were left out by the selection)"));
  int64_t zeros_lost = 0;
  int layers_losing_zeros = 0;
  for (const auto& w : weights) {
    Tensor& t = g.subgraphs[w.subgraph].tensors[w.tensor];
    const std::vector<float> v = ConstantAsFloat(g, t);
    LayerClusters layer;
    layer.tensor = t.name;
    layer.op = BuiltinName(w.op_code);
    layer.shape = t.shape;
    layer.params = static_cast<int64_t>(v.size());
    layer.zeros_before = std::count(v.begin(), v.end(), 0.0f);
    for (float x : v) layer.max_abs_weight = std::max(layer.max_abs_weight, static_cast<double>(std::fabs(x)));
    // Groups of weights clustered together: the whole layer, or each output channel.
    const bool per_channel = o.per_channel && w.out_axis >= 0;
    int64_t channels = 1, inner = 1;
    if (per_channel) {
      channels = t.shape[w.out_axis];
      for (size_t d = w.out_axis + 1; d < t.shape.size(); ++d) inner *= t.shape[d];
    }
    layer.groups = channels;
    auto group_of = [&](size_t i) -> size_t {
      return per_channel ? static_cast<size_t>((static_cast<int64_t>(i) / inner) % channels) : 0;
    };
    std::vector<std::vector<size_t>> members(static_cast<size_t>(channels));
    std::vector<char> has_zero(static_cast<size_t>(channels), 0);
    for (size_t i = 0; i < v.size(); ++i) {
      if (o.preserve_sparsity && v[i] == 0.0f) {
        has_zero[group_of(i)] = 1;
        continue;
      }
      if (!std::isfinite(v[i])) continue;  // NaN/inf weights are left as they are
      members[group_of(i)].push_back(i);
    }
    std::vector<float> out = v;
    double err = 0;
    for (size_t gi = 0; gi < members.size(); ++gi) {
      if (members[gi].empty()) continue;
      std::vector<float> vals;
      vals.reserve(members[gi].size());
      for (size_t i : members[gi]) vals.push_back(v[i]);
      // With preserved zeros, zero is one of the K values.
      const int k = has_zero[gi] ? o.clusters - 1 : o.clusters;
      std::vector<int> assign;
      const std::vector<float> c = KMeans1D(vals, k, o.init, o.max_iterations, o.seed + gi, &assign);
      for (size_t j = 0; j < members[gi].size(); ++j) {
        const float q = c[assign[j]];
        const size_t i = members[gi][j];
        err += (static_cast<double>(q) - v[i]) * (static_cast<double>(q) - v[i]);
        out[i] = q;
      }
    }
    layer.rmse = std::sqrt(err / static_cast<double>(std::max<size_t>(1, v.size())));
    layer.zeros_after = std::count(out.begin(), out.end(), 0.0f);
    // Distinct values per group (maximum over groups), before and after.
    auto max_distinct = [&](const std::vector<float>& x) {
      std::vector<std::unordered_set<float>> sets(static_cast<size_t>(channels));
      for (size_t i = 0; i < x.size(); ++i) sets[group_of(i)].insert(x[i] == 0.0f ? 0.0f : x[i]);
      int64_t m = 0;
      for (const auto& s : sets) m = std::max<int64_t>(m, static_cast<int64_t>(s.size()));
      return m;
    };
    layer.distinct_before = max_distinct(v);
    layer.distinct_after = max_distinct(out);
    if (layer.zeros_after < layer.zeros_before && layer.zeros_before * 10 >= layer.params) {
      zeros_lost += layer.zeros_before - layer.zeros_after;
      ++layers_losing_zeros;
    }
    if (out != v) t.buffer = g.AddBuffer(Buffer::FromValues<float>(out));
    report.layers.push_back(std::move(layer));
  }
  if (layers_losing_zeros > 0)
    report.notes.push_back(std::to_string(layers_losing_zeros) + " sparse layer(s) lost " + std::to_string(zeros_lost) +
                           " exact zeros to clustering; --preserve-sparsity keeps pruned weights at zero");
  g.DropUnusedBuffers();
  return report;
}

}  // namespace edgeopt::optimize
