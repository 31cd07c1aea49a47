#include "optimize/sparse_encoding.h"

#include "kernels/common/sparsity.h"

namespace edgeopt::optimize {

Expected<bool> EncodeSparseWeight(Graph& g, int subgraph, int32_t tensor, int block_rows, int block_cols) {
  Subgraph& sg = g.subgraphs[subgraph];
  const Tensor& t = sg.tensors[tensor];
  if (!g.IsConstant(t) || t.sparsity) return false;
  const int rank = static_cast<int>(t.shape.size());
  if (rank < 1) return false;
  kernels::SparseEncoding enc;
  if ((block_rows > 1 || block_cols > 1) && rank >= 2 && t.shape[0] % block_rows == 0 &&
      t.shape[rank - 1] % block_cols == 0) {
    enc.block_map = {0, rank - 1};
    enc.block_sizes = {block_rows, block_cols};
  }
  auto bytes = g.TensorData(t);
  ASSIGN_OR_RETURN(kernels::SparseTensor sp, kernels::Sparsify(bytes, t.shape, t.type, enc));
  // Sparse size: values + index metadata (approximate the flatbuffer overhead by the vectors).
  size_t meta = 0;
  for (const auto& dm : sp.params.dim_metadata) {
    auto vec_bytes = [](const tflite::SparseIndexVectorUnion& u) -> size_t {
      if (auto* v = u.AsInt32Vector()) return v->values.size() * 4;
      if (auto* v = u.AsUint16Vector()) return v->values.size() * 2;
      if (auto* v = u.AsUint8Vector()) return v->values.size();
      return 0;
    };
    meta += vec_bytes(dm->array_segments) + vec_bytes(dm->array_indices) + 16;
  }
  if (sp.values.size() + meta >= bytes.size()) return false;

  Tensor sparse = t;
  sparse.name = t.name + "/sparse";
  sparse.buffer = g.AddBuffer(Buffer::Owned(std::move(sp.values)));
  sparse.sparsity = std::make_shared<tflite::SparsityParametersT>(sp.params);
  const int32_t si = sg.AddTensor(std::move(sparse));
  sg.tensors[tensor].buffer = 0;
  Operator densify;
  densify.code = tflite::BuiltinOperator_DENSIFY;
  densify.inputs = {si};
  densify.outputs = {tensor};
  sg.ops.insert(sg.ops.begin(), std::move(densify));
  return true;
}

}  // namespace edgeopt::optimize
