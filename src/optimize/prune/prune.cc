#include "optimize/prune/prune.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <regex>

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
  std::smatch m;
  static const std::regex kBlock("block:(\\d+)x(\\d+)");
  if (std::regex_match(s, m, kBlock)) {
    o->structure = PruneStructure::kBlock;
    o->block_rows = std::stoi(m[1]);
    o->block_cols = std::stoi(m[2]);
    if (o->block_rows < 1 || o->block_cols < 1 || o->block_rows > 64 || o->block_cols > 64)
      return InvalidArgument("--structure block:RxC wants 1 <= R, C <= 64, got '" + s + "'");
    return Status::Ok();
  }
  return InvalidArgument("--structure must be unstructured, 2:4 or block:RxC (e.g. block:1x4), got '" + s + "'");
}

namespace {

int64_t CountZeros(const std::vector<float>& v) { return std::count(v.begin(), v.end(), 0.0f); }

// Zeroes the `k` smallest-magnitude entries of `v` (ties broken by position, so exactly k).
void ZeroSmallest(std::vector<float>& v, int64_t k) {
  if (k <= 0) return;
  std::vector<int64_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  k = std::min<int64_t>(k, static_cast<int64_t>(v.size()));
  std::nth_element(idx.begin(), idx.begin() + (k - 1), idx.end(), [&](int64_t a, int64_t b) {
    const float fa = std::fabs(v[a]), fb = std::fabs(v[b]);
    return fa != fb ? fa < fb : a < b;
  });
  for (int64_t i = 0; i < k; ++i) v[idx[i]] = 0.0f;
}

// 2 of every 4 consecutive weights along the input-channel axis (the innermost axis in TFLite
// conv/FC layouts) are kept: the two largest in magnitude.
Status TwoFour(std::vector<float>& v, const Tensor& t, const WeightRef& w) {
  if (w.in_axis < 0 || w.in_axis != static_cast<int>(t.shape.size()) - 1)
    return Unsupported("2:4 needs input channels as the innermost axis");
  const int64_t inner = t.shape.back();
  if (inner % 4 != 0) return Unsupported("input channels (" + std::to_string(inner) + ") not a multiple of 4");
  for (size_t g = 0; g + 4 <= v.size(); g += 4) {
    int order[4] = {0, 1, 2, 3};
    std::sort(order, order + 4, [&](int a, int b) { return std::fabs(v[g + a]) > std::fabs(v[g + b]); });
    v[g + order[2]] = 0.0f;
    v[g + order[3]] = 0.0f;
  }
  return Status::Ok();
}

// Blocks of R×C over the [out_channels, everything else] view; the lowest-L2 blocks are zeroed.
void BlockPrune(std::vector<float>& v, const Tensor& t, const WeightRef& w, int br, int bc, double sparsity) {
  const int64_t rows = w.out_axis == 0 ? t.shape[0] : 1;
  const int64_t cols = static_cast<int64_t>(v.size()) / rows;
  const int64_t brows = (rows + br - 1) / br, bcols = (cols + bc - 1) / bc;
  std::vector<double> norm(static_cast<size_t>(brows * bcols), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) norm[(r / br) * bcols + c / bc] += static_cast<double>(v[r * cols + c]) * v[r * cols + c];
  const int64_t k = static_cast<int64_t>(std::llround(sparsity * brows * bcols));
  std::vector<int64_t> idx(norm.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return norm[a] < norm[b]; });
  std::vector<char> drop(norm.size(), 0);
  for (int64_t i = 0; i < k && i < static_cast<int64_t>(idx.size()); ++i) drop[idx[i]] = 1;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      if (drop[(r / br) * bcols + c / bc]) v[r * cols + c] = 0.0f;
}

}  // namespace

Expected<PruneReport> PruneModel(Graph& g, const PruneOptions& o) {
  if (!(o.sparsity >= 0.0 && o.sparsity < 1.0) && o.structure != PruneStructure::kTwoFour)
    return InvalidArgument("--sparsity must be in [0, 1), got " + std::to_string(o.sparsity));
  PruneReport report;
  ASSIGN_OR_RETURN(auto weights, SelectWeights(g, o.selection, &report.skipped));
  if (weights.empty()) return InvalidArgument("no prunable float32 weights found (is the model quantized? dequantize it first)");

  std::vector<std::vector<float>> values;
  for (const auto& w : weights) values.push_back(ConstantAsFloat(g, g.subgraphs[w.subgraph].tensors[w.tensor]));

  float global_threshold = -1;
  if (o.global && o.structure == PruneStructure::kUnstructured) {
    std::vector<float> all;
    for (const auto& v : values)
      for (float x : v) all.push_back(std::fabs(x));
    const size_t k = static_cast<size_t>(std::llround(o.sparsity * all.size()));
    if (k > 0) {
      std::nth_element(all.begin(), all.begin() + (k - 1), all.end());
      global_threshold = all[k - 1];
    }
  }

  for (size_t i = 0; i < weights.size(); ++i) {
    const WeightRef& w = weights[i];
    Subgraph& sg = g.subgraphs[w.subgraph];
    Tensor& t = sg.tensors[w.tensor];
    std::vector<float>& v = values[i];
    LayerSparsity layer;
    layer.tensor = t.name;
    layer.op = BuiltinName(w.op_code);
    layer.params = static_cast<int64_t>(v.size());
    layer.zeros_before = CountZeros(v);
    layer.bytes_before = g.TensorData(t).size();
    switch (o.structure) {
      case PruneStructure::kUnstructured:
        if (global_threshold >= 0) {
          for (float& x : v)
            if (std::fabs(x) <= global_threshold) x = 0.0f;
        } else {
          ZeroSmallest(v, static_cast<int64_t>(std::llround(o.sparsity * v.size())));
        }
        break;
      case PruneStructure::kTwoFour: {
        Status st = TwoFour(v, t, w);
        if (!st.ok()) {
          report.skipped.push_back("'" + t.name + "' (" + layer.op + "): " + st.message());
          continue;
        }
        break;
      }
      case PruneStructure::kBlock:
        BlockPrune(v, t, w, o.block_rows, o.block_cols, o.sparsity);
        break;
    }
    layer.zeros_after = CountZeros(v);
    t.buffer = g.AddBuffer(Buffer::FromValues<float>(v));
    layer.bytes_after = v.size() * 4;
    report.total_params += layer.params;
    report.total_zeros += layer.zeros_after;
    report.layers.push_back(std::move(layer));
  }
  if (o.encode_sparse) {
    for (size_t i = 0; i < report.layers.size(); ++i) {
      // Layers skipped above have no entry; find the weight by name.
      for (const auto& w : weights) {
        Tensor& t = g.subgraphs[w.subgraph].tensors[w.tensor];
        if (t.name != report.layers[i].tensor) continue;
        const bool blocked = o.structure == PruneStructure::kBlock;
        ASSIGN_OR_RETURN(bool encoded, EncodeSparseWeight(g, w.subgraph, w.tensor, blocked ? o.block_rows : 1,
                                                          blocked ? o.block_cols : 1));
        report.layers[i].sparse_encoded = encoded;
        if (encoded) {
          const Subgraph& sg = g.subgraphs[w.subgraph];
          report.layers[i].bytes_after = g.TensorData(sg.tensors[sg.ops.front().inputs[0]]).size();
        }
      }
    }
  }
  g.DropUnused();
  return report;
}

}  // namespace edgeopt::optimize
