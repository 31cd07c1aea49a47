#include "optimize/cluster/cluster.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

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

namespace {

std::vector<float> InitCentroids(const std::vector<float>& sorted, int k, ClusterInit init, std::mt19937_64& rng) {
  std::vector<float> c;
  const float lo = sorted.front(), hi = sorted.back();
  switch (init) {
    case ClusterInit::kLinear:
      for (int i = 0; i < k; ++i) c.push_back(k == 1 ? (lo + hi) / 2 : lo + (hi - lo) * i / (k - 1));
      break;
    case ClusterInit::kDensity:
      // Evenly spaced quantiles of the weight distribution (CDF-based).
      for (int i = 0; i < k; ++i) c.push_back(sorted[std::min(sorted.size() - 1, (2 * i + 1) * sorted.size() / (2 * k))]);
      break;
    case ClusterInit::kRandom: {
      std::uniform_int_distribution<size_t> d(0, sorted.size() - 1);
      for (int i = 0; i < k; ++i) c.push_back(sorted[d(rng)]);
      break;
    }
    case ClusterInit::kKMeansPlusPlus: {
      std::uniform_int_distribution<size_t> d(0, sorted.size() - 1);
      c.push_back(sorted[d(rng)]);
      std::vector<double> dist(sorted.size());
      while (static_cast<int>(c.size()) < k) {
        double total = 0;
        for (size_t i = 0; i < sorted.size(); ++i) {
          double best = 1e300;
          for (float cc : c) best = std::min(best, static_cast<double>(sorted[i] - cc) * (sorted[i] - cc));
          dist[i] = best;
          total += best;
        }
        if (total <= 0) break;
        std::uniform_real_distribution<double> u(0, total);
        double r = u(rng);
        size_t pick = 0;
        for (; pick + 1 < sorted.size() && r > dist[pick]; ++pick) r -= dist[pick];
        c.push_back(sorted[pick]);
      }
      break;
    }
  }
  std::sort(c.begin(), c.end());
  c.erase(std::unique(c.begin(), c.end()), c.end());
  return c;
}

}  // namespace

std::vector<float> KMeans1D(const std::vector<float>& values, int k, ClusterInit init, int max_iterations, uint64_t seed,
                            std::vector<int>* assignment) {
  assignment->assign(values.size(), 0);
  if (values.empty()) return {};
  std::vector<float> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  std::set<float> distinct(sorted.begin(), sorted.end());
  std::mt19937_64 rng(seed);
  std::vector<float> c;
  if (static_cast<int>(distinct.size()) <= k) {
    c.assign(distinct.begin(), distinct.end());
  } else {
    c = InitCentroids(sorted, k, init, rng);
    // Lloyd iterations on the sorted values: clusters are contiguous ranges between midpoints.
    for (int it = 0; it < max_iterations; ++it) {
      std::vector<double> sum(c.size(), 0.0);
      std::vector<int64_t> count(c.size(), 0);
      size_t j = 0;
      for (float v : sorted) {
        while (j + 1 < c.size() && std::fabs(v - c[j + 1]) < std::fabs(v - c[j])) ++j;
        sum[j] += v;
        ++count[j];
      }
      bool changed = false;
      std::vector<float> next;
      for (size_t i = 0; i < c.size(); ++i) {
        if (count[i] == 0) continue;  // drop empty clusters
        const float m = static_cast<float>(sum[i] / count[i]);
        if (m != c[i]) changed = true;
        next.push_back(m);
      }
      if (next.size() != c.size()) changed = true;
      c = std::move(next);
      if (!changed) break;
    }
  }
  for (size_t i = 0; i < values.size(); ++i) {
    auto it = std::lower_bound(c.begin(), c.end(), values[i]);
    size_t idx = it == c.end() ? c.size() - 1 : static_cast<size_t>(it - c.begin());
    if (idx > 0 && std::fabs(values[i] - c[idx - 1]) <= std::fabs(values[i] - c[idx])) --idx;
    (*assignment)[i] = static_cast<int>(idx);
  }
  return c;
}

Expected<ClusterReport> ClusterModel(Graph& g, const ClusterOptions& o) {
  if (o.clusters < 2 || o.clusters > 65536) return InvalidArgument("--clusters must be between 2 and 65536, got " + std::to_string(o.clusters));
  ClusterReport report;
  ASSIGN_OR_RETURN(auto weights, SelectWeights(g, o.selection, &report.skipped));
  if (weights.empty()) return InvalidArgument("no clusterable float32 weights found (is the model quantized? dequantize it first)");
  for (const auto& w : weights) {
    Tensor& t = g.subgraphs[w.subgraph].tensors[w.tensor];
    std::vector<float> v = ConstantAsFloat(g, t);
    LayerClusters layer;
    layer.tensor = t.name;
    layer.op = BuiltinName(w.op_code);
    layer.params = static_cast<int64_t>(v.size());
    layer.distinct_before = static_cast<int64_t>(std::set<float>(v.begin(), v.end()).size());
    // Groups of weights clustered together: the whole layer, or each output channel.
    const bool per_channel = o.per_channel && w.out_axis >= 0;
    int64_t channels = 1, inner = 1;
    if (per_channel) {
      channels = t.shape[w.out_axis];
      for (size_t d = w.out_axis + 1; d < t.shape.size(); ++d) inner *= t.shape[d];
    }
    std::vector<std::vector<size_t>> groups(static_cast<size_t>(channels));
    for (size_t i = 0; i < v.size(); ++i) {
      if (o.preserve_sparsity && v[i] == 0.0f) continue;
      groups[per_channel ? (static_cast<int64_t>(i) / inner) % channels : 0].push_back(i);
    }
    std::vector<float> out = v;
    double err = 0;
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      if (groups[gi].empty()) continue;
      std::vector<float> vals;
      for (size_t i : groups[gi]) vals.push_back(v[i]);
      std::vector<int> assign;
      // Zeros excluded: one cluster slot is the implicit zero.
      const int k = o.preserve_sparsity && vals.size() < v.size() ? std::max(1, o.clusters - 1) : o.clusters;
      auto c = KMeans1D(vals, k, o.init, o.max_iterations, o.seed + gi, &assign);
      for (size_t j = 0; j < groups[gi].size(); ++j) {
        const float q = c[assign[j]];
        err += static_cast<double>(q - v[groups[gi][j]]) * (q - v[groups[gi][j]]);
        out[groups[gi][j]] = q;
      }
    }
    layer.rmse = std::sqrt(err / std::max<size_t>(1, v.size()));
    layer.zeros = std::count(out.begin(), out.end(), 0.0f);
    if (per_channel) {
      for (int64_t c = 0; c < channels; ++c) {
        std::set<float> s;
        for (size_t i = 0; i < out.size(); ++i)
          if ((static_cast<int64_t>(i) / inner) % channels == c) s.insert(out[i]);
        layer.distinct_after = std::max<int64_t>(layer.distinct_after, static_cast<int64_t>(s.size()));
      }
    } else {
      layer.distinct_after = static_cast<int64_t>(std::set<float>(out.begin(), out.end()).size());
    }
    t.buffer = g.AddBuffer(Buffer::FromValues<float>(out));
    report.layers.push_back(std::move(layer));
  }
  g.DropUnused();
  return report;
}

}  // namespace edgeopt::optimize
