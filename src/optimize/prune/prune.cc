#include "optimize/prune/prune.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "optimize/quantize/weights.h"
#include "optimize/sparse_encoding.h"

namespace edgeopt::optimize {

Status ParsePruneStructure(const std::string& s, PruneOptions* o) {
  if (s == "unstructured") {
    o->structure = PruneStructure::kUnstructured;
    return Status::Ok();
  }
  if (s == "2:4") {
    o->structure = PruneStructure::kTwoFour;
    return Status::Ok();
  }
  const std::string bad = "--structure must be unstructured, 2:4 or block:RxC (e.g. block:1x4, block:4x4), got '" + s + "'";
  if (s.rfind("block:", 0) != 0) return InvalidArgument(bad);
  const std::string dims = s.substr(6);
  const size_t x = dims.find('x');
  auto parse = [](const std::string& t, int* out) {
    if (t.empty() || t.size() > 3) return false;
    for (char c : t)
      if (c < '0' || c > '9') return false;
    *out = std::stoi(t);
    return true;
  };
  int r = 0, c = 0;
  if (x == std::string::npos || !parse(dims.substr(0, x), &r) || !parse(dims.substr(x + 1), &c)) return InvalidArgument(bad);
  if (r < 1 || c < 1 || r > 64 || c > 64)
    return InvalidArgument("--structure block:RxC wants 1 <= R, C <= 64, got '" + s + "'");
  if (r == 1 && c == 1) return InvalidArgument("--structure block:1x1 is unstructured pruning; say --structure unstructured");
  o->structure = PruneStructure::kBlock;
  o->block_rows = r;
  o->block_cols = c;
  return Status::Ok();
}

std::string PruneStructureName(const PruneOptions& o) {
  switch (o.structure) {
    case PruneStructure::kUnstructured: return "unstructured";
    case PruneStructure::kTwoFour: return "2:4";
    case PruneStructure::kBlock: return "block:" + std::to_string(o.block_rows) + "x" + std::to_string(o.block_cols);
  }
  return "?";
}

namespace {

// Magnitude used for ranking: NaN ranks above everything, so it is never pruned.
inline float Magnitude(float x) { return std::isnan(x) ? std::numeric_limits<float>::infinity() : std::fabs(x); }

int64_t CountZeros(std::span<const float> v) { return std::count(v.begin(), v.end(), 0.0f); }

// The [rows, cols] matrix view used by block pruning: output channels first when they lead the
// layout, else [everything but the last axis, last axis].
void MatrixView(const Tensor& t, const WeightRef& w, int64_t* rows, int64_t* cols) {
  const int64_t n = t.num_elements();
  if (t.shape.empty()) {
    *rows = 1;
    *cols = n;
  } else if (w.out_axis == 0) {
    *rows = t.shape[0];
    *cols = *rows ? n / *rows : 0;
  } else {
    *cols = t.shape.back();
    *rows = *cols ? n / *cols : 0;
  }
}

}  // namespace

void ZeroSmallestMagnitudes(std::span<float> v, int64_t k) {
  k = std::min<int64_t>(k, static_cast<int64_t>(v.size()));
  if (k <= 0) return;
  std::vector<int64_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::nth_element(idx.begin(), idx.begin() + (k - 1), idx.end(), [&](int64_t a, int64_t b) {
    const float fa = Magnitude(v[a]), fb = Magnitude(v[b]);
    return fa != fb ? fa < fb : a < b;
  });
  for (int64_t i = 0; i < k; ++i) v[idx[i]] = 0.0f;
}

void PruneTwoOfFour(std::span<float> v) {
  for (size_t g = 0; g + 4 <= v.size(); g += 4) {
    int order[4] = {0, 1, 2, 3};
    // Largest magnitude first; on ties the earlier position is kept.
    std::stable_sort(order, order + 4, [&](int a, int b) { return Magnitude(v[g + a]) > Magnitude(v[g + b]); });
    v[g + order[2]] = 0.0f;
    v[g + order[3]] = 0.0f;
  }
}

void PruneBlocks(std::span<float> v, int64_t rows, int64_t cols, int br, int bc, double sparsity) {
  if (rows <= 0 || cols <= 0 || br < 1 || bc < 1) return;
  const int64_t brows = (rows + br - 1) / br, bcols = (cols + bc - 1) / bc;
  std::vector<double> norm(static_cast<size_t>(brows * bcols), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const double x = v[r * cols + c];
      norm[(r / br) * bcols + c / bc] += std::isnan(x) ? std::numeric_limits<double>::infinity() : x * x;
    }
  const int64_t nblocks = static_cast<int64_t>(norm.size());
  const int64_t k = std::min<int64_t>(nblocks, std::llround(sparsity * static_cast<double>(nblocks)));
  if (k <= 0) return;
  std::vector<int64_t> idx(norm.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return norm[a] < norm[b]; });
  std::vector<char> drop(norm.size(), 0);
  for (int64_t i = 0; i < k; ++i) drop[idx[i]] = 1;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      if (drop[(r / br) * bcols + c / bc]) v[r * cols + c] = 0.0f;
}

Expected<PruneReport> PruneModel(Graph& g, const PruneOptions& o) {
  RETURN_IF_ERROR(RequireFloatModel(g, "prune"));
  if (o.structure != PruneStructure::kTwoFour && !(o.sparsity >= 0.0 && o.sparsity < 1.0))
    return InvalidArgument("--sparsity must be in [0, 1) (the fraction of weights set to zero), got " +
                           std::to_string(o.sparsity));
  if (o.structure == PruneStructure::kBlock && (o.block_rows < 1 || o.block_cols < 1))
    return InvalidArgument("block sizes must be positive");
  if (o.global && o.structure != PruneStructure::kUnstructured)
    return InvalidArgument("--global applies to unstructured pruning only");
  PruneReport report;
  ASSIGN_OR_RETURN(auto weights, SelectWeights(g, o.selection, &report.skipped));
  if (weights.empty())
    return InvalidArgument("no float32 weights to prune (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, TRANSPOSE_CONV, "
                           "BATCH_MATMUL, UNIDIRECTIONAL_SEQUENCE_LSTM" +
                           std::string(report.skipped.empty() ? ")" : "; all were left out by the selection)"));

  std::vector<std::vector<float>> values;
  values.reserve(weights.size());
  for (const auto& w : weights) values.push_back(ConstantAsFloat(g, g.subgraphs[w.subgraph].tensors[w.tensor]));

  // Global: one threshold T over all layers so that exactly k weights are zeroed: everything
  // below T, then entries equal to T in layer/position order until k are reached.
  float threshold = 0;
  int64_t equal_budget = 0;
  if (o.global) {
    std::vector<float> mags;
    for (const auto& v : values)
      for (float x : v) mags.push_back(Magnitude(x));
    const int64_t k = std::llround(o.sparsity * static_cast<double>(mags.size()));
    if (k > 0) {
      std::nth_element(mags.begin(), mags.begin() + (k - 1), mags.end());
      threshold = mags[k - 1];
      int64_t below = 0;
      for (const auto& v : values)
        for (float x : v) below += Magnitude(x) < threshold;
      equal_budget = k - below;
    } else {
      threshold = -1;  // nothing to prune
    }
  }

  std::vector<char> pruned(weights.size(), 0);
  for (size_t i = 0; i < weights.size(); ++i) {
    const WeightRef& w = weights[i];
    Tensor& t = g.subgraphs[w.subgraph].tensors[w.tensor];
    std::vector<float>& v = values[i];
    LayerSparsity layer;
    layer.tensor = t.name;
    layer.op = BuiltinName(w.op_code);
    layer.shape = t.shape;
    layer.params = static_cast<int64_t>(v.size());
    layer.zeros_before = CountZeros(v);
    layer.bytes_before = g.TensorData(t).size();
    switch (o.structure) {
      case PruneStructure::kUnstructured:
        if (o.global) {
          for (float& x : v) {
            const float m = Magnitude(x);
            if (m < threshold) {
              x = 0.0f;
            } else if (m == threshold && equal_budget > 0) {
              x = 0.0f;
              --equal_budget;
            }
          }
        } else {
          ZeroSmallestMagnitudes(v, std::llround(o.sparsity * static_cast<double>(v.size())));
        }
        break;
      case PruneStructure::kTwoFour: {
        const int rank = static_cast<int>(t.shape.size());
        if (w.in_axis < 0 || w.in_axis != rank - 1) {
          report.skipped.push_back("'" + t.name + "' (" + layer.op + "): 2:4 needs input channels as the innermost axis");
          continue;
        }
        if (t.shape.back() % 4 != 0) {
          report.skipped.push_back("'" + t.name + "' (" + layer.op + "): 2:4 needs input channels (" +
                                   std::to_string(t.shape.back()) + ") to be a multiple of 4");
          continue;
        }
        PruneTwoOfFour(v);
        break;
      }
      case PruneStructure::kBlock: {
        int64_t rows = 0, cols = 0;
        MatrixView(t, w, &rows, &cols);
        PruneBlocks(v, rows, cols, o.block_rows, o.block_cols, o.sparsity);
        break;
      }
    }
    layer.zeros_after = CountZeros(v);
    layer.bytes_after = layer.bytes_before;
    if (layer.zeros_after != layer.zeros_before) t.buffer = g.AddBuffer(Buffer::FromValues<float>(v));
    pruned[i] = 1;
    report.total_params += layer.params;
    report.total_zeros += layer.zeros_after;
    report.layers.push_back(std::move(layer));
  }
  if (report.layers.empty())
    return InvalidArgument("no layer could be pruned with --structure " + PruneStructureName(o) + " (see the skipped layers)");

  if (o.encode_sparse) {
    size_t li = 0;
    for (size_t i = 0; i < weights.size(); ++i) {
      if (!pruned[i]) continue;
      LayerSparsity& layer = report.layers[li++];
      const bool blocked = o.structure == PruneStructure::kBlock;
      ASSIGN_OR_RETURN(SparseEncodingResult enc, EncodeSparseWeight(g, weights[i].subgraph, weights[i].tensor,
                                                                    blocked ? o.block_rows : 1, blocked ? o.block_cols : 1));
      if (enc.encoded) {
        layer.sparse_encoded = true;
        layer.bytes_after = enc.sparse_bytes;
        ++report.sparse_encoded;
      }
    }
  }
  g.DropUnusedBuffers();  // the replaced dense buffers
  return report;
}

}  // namespace edgeopt::optimize
