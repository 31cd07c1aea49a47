#include "optimize/sparse_encoding.h"

#include <algorithm>

#include "graph/passes.h"
#include "kernels/common/sparsity.h"

namespace edgeopt::optimize {
namespace {

size_t IndexVectorBytes(const tflite::SparseIndexVectorUnion& u) {
  if (auto* v = u.AsInt32Vector()) return v->values.size() * 4;
  if (auto* v = u.AsUint16Vector()) return v->values.size() * 2;
  if (auto* v = u.AsUint8Vector()) return v->values.size();
  return 0;
}

// Flatbuffer tables, vtables and vector headers per DimensionMetadata, roughly.
constexpr size_t kPerLevelOverhead = 32;

}  // namespace

Expected<SparseEncodingResult> EncodeSparseWeight(Graph& g, int subgraph, int32_t tensor, int block_rows,
                                                  int block_cols) {
  SparseEncodingResult r;
  if (subgraph < 0 || static_cast<size_t>(subgraph) >= g.subgraphs.size())
    return InvalidArgument("sparse encoding: no subgraph " + std::to_string(subgraph));
  Subgraph& sg = g.subgraphs[subgraph];
  if (tensor < 0 || static_cast<size_t>(tensor) >= sg.tensors.size())
    return InvalidArgument("sparse encoding: no tensor " + std::to_string(tensor));
  const Tensor& t = sg.tensors[tensor];
  const int rank = static_cast<int>(t.shape.size());
  const auto bytes = g.TensorData(t);
  r.dense_bytes = bytes.size();
  if (!g.IsConstant(t) || t.sparsity || rank < 1 || t.is_variable) return r;
  if (bytes.size() != static_cast<size_t>(t.num_elements()) * DTypeSize(t.type)) return r;
  const std::vector<int> consumers = sg.FindConsumers(tensor);
  if (consumers.empty()) return r;
  // Subgraph outputs or signature entries that are constants stay as they are.
  if (std::find(sg.outputs.begin(), sg.outputs.end(), tensor) != sg.outputs.end()) return r;

  kernels::SparseEncoding enc;
  if ((block_rows > 1 || block_cols > 1) && rank >= 2 && t.shape[0] % block_rows == 0 &&
      t.shape[rank - 1] % block_cols == 0) {
    enc.block_map = {0, rank - 1};
    enc.block_sizes = {block_rows, block_cols};
  }
  ASSIGN_OR_RETURN(kernels::SparseTensor sp, kernels::Sparsify(bytes, t.shape, t.type, enc));
  size_t meta = 0;
  for (const auto& dm : sp.params.dim_metadata)
    meta += IndexVectorBytes(dm->array_segments) + IndexVectorBytes(dm->array_indices) + kPerLevelOverhead;
  r.sparse_bytes = sp.values.size() + meta;
  if (r.sparse_bytes >= bytes.size()) return r;

  Tensor sparse;
  sparse.name = t.name + "_sparse";
  sparse.shape = t.shape;
  sparse.shape_signature = t.shape_signature;
  sparse.type = t.type;
  sparse.quant = t.quant;
  sparse.has_rank = t.has_rank;
  sparse.buffer = g.AddBuffer(Buffer::Owned(std::move(sp.values)));
  sparse.sparsity = std::make_shared<tflite::SparsityParametersT>(std::move(sp.params));
  const int32_t si = sg.AddTensor(std::move(sparse));
  sg.tensors[tensor].buffer = 0;
  Operator densify;
  densify.code = tflite::BuiltinOperator_DENSIFY;
  densify.inputs = {si};
  densify.outputs = {tensor};
  const int at = *std::min_element(consumers.begin(), consumers.end());
  r.densify_op = sg.InsertOp(at, std::move(densify));
  r.sparse_tensor = si;
  r.encoded = true;
  return r;
}

Expected<int> FoldConstantDensify(Graph& g) {
  int folded = 0;
  for (size_t si = 0; si < g.subgraphs.size(); ++si) {
    Subgraph& sg = g.subgraphs[si];
    for (int i = static_cast<int>(sg.ops.size()) - 1; i >= 0; --i) {
      const Operator& op = sg.ops[i];
      if (op.code != tflite::BuiltinOperator_DENSIFY || op.inputs.size() != 1 || op.outputs.size() != 1) continue;
      const int32_t in = op.inputs[0];
      if (in < 0 || static_cast<size_t>(in) >= sg.tensors.size()) continue;
      Tensor& t = sg.tensors[in];
      if (!g.IsConstant(t) || !t.sparsity || t.is_variable) continue;
      // Another reader of the sparse tensor (not a DENSIFY) would see dense data: leave it.
      if (sg.FindConsumers(in).size() != 1) continue;
      const size_t elem = DTypeSize(t.type);
      if (elem == 0 || t.type == DType::kInt4 || t.type == DType::kString) continue;  // no whole-byte values
      // An invalid layout, or fewer stored values than it needs (Densify checks), names the tensor.
      const std::string what = "sparse constant '" + t.name + "'";
      auto layout = kernels::ParseSparsity(*t.sparsity, t.shape);
      if (!layout.ok()) return layout.status().WithContext(what);
      std::vector<uint8_t> dense(static_cast<size_t>(layout->dense_elements) * elem);
      if (Status st = kernels::Densify(*layout, g.TensorData(t), elem, dense); !st.ok()) return st.WithContext(what);
      t.buffer = g.AddBuffer(Buffer::Owned(std::move(dense)));
      t.sparsity.reset();
      // The dense weight keeps the name its readers knew (EncodeSparseWeight's "..._sparse" goes).
      const int32_t out = op.outputs[0];
      if (out >= 0 && static_cast<size_t>(out) < sg.tensors.size()) t.name = sg.tensors[out].name;
      BypassOp(g, static_cast<int>(si), i);
      ++folded;
    }
  }
  return folded;
}

}  // namespace edgeopt::optimize
