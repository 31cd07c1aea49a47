#include "support/core/feature_models.h"

#include <cstring>

#include "graph/builder.h"

namespace edgeopt::testing {

std::shared_ptr<tflite::SparsityParametersT> CsrSparsity4x4() {
  auto sp = std::make_shared<tflite::SparsityParametersT>();
  sp->traversal_order = {0, 1};
  auto rows = std::make_unique<tflite::DimensionMetadataT>();
  rows->format = tflite::DimensionType_DENSE;
  rows->dense_size = 4;
  auto cols = std::make_unique<tflite::DimensionMetadataT>();
  cols->format = tflite::DimensionType_SPARSE_CSR;
  tflite::Int32VectorT segments;
  segments.values = {0, 1, 1, 3, 4};
  tflite::Uint8VectorT indices;
  indices.values = {2, 0, 3, 1};
  cols->array_segments.Set(std::move(segments));
  cols->array_indices.Set(std::move(indices));
  sp->dim_metadata.push_back(std::move(rows));
  sp->dim_metadata.push_back(std::move(cols));
  return sp;
}

std::vector<uint8_t> StringTensorBytes(const std::vector<std::string>& strings) {
  const int32_t n = static_cast<int32_t>(strings.size());
  std::vector<int32_t> header{n};
  int32_t offset = 4 * (n + 2);
  for (const auto& s : strings) {
    header.push_back(offset);
    offset += static_cast<int32_t>(s.size());
  }
  header.push_back(offset);
  std::vector<uint8_t> out(header.size() * 4);
  std::memcpy(out.data(), header.data(), out.size());
  for (const auto& s : strings) out.insert(out.end(), s.begin(), s.end());
  return out;
}

Graph EveryFeatureModel() {
  GraphBuilder b(11);
  b.SetDescription("every feature");
  // --- main subgraph
  int32_t x = b.Input("x", DType::kInt8, {1, 4, 4, 2}, Quant(0.05f, -3));
  b.current().tensors[x].shape_signature = {-1, 4, 4, 2};
  b.current().tensors[x].has_rank = true;
  int32_t w = b.ConstRandom("w", DType::kInt8, {3, 1, 1, 2}, -127, 127,
                            QuantPerAxis({0.01f, 0.02f, 0.03f}, 0));
  int32_t bias = b.ConstRandom("bias", DType::kInt32, {3}, -1000, 1000,
                               QuantPerAxis({0.0005f, 0.001f, 0.0015f}, 0));
  int32_t conv = b.Tensor("conv", DType::kInt8, {1, 4, 4, 3}, Quant(0.1f, 2));
  tflite::Conv2DOptionsT co;
  co.stride_w = co.stride_h = 1;
  co.fused_activation_function = tflite::ActivationFunctionType_RELU6;
  b.Op(tflite::BuiltinOperator_CONV_2D, {x, w, bias}, {conv}, co, 3);

  QuantParams minmax;
  minmax.min = {-1.5f};
  minmax.max = {2.5f};
  int32_t calibrated = b.Tensor("calibrated", DType::kFloat32, {1, 4, 4, 3}, minmax);
  b.Op(tflite::BuiltinOperator_DEQUANTIZE, {conv}, {calibrated}, 2);

  int32_t sparse = b.Tensor("sparse", DType::kFloat32, {4, 4});
  {
    std::vector<float> values{1.5f, -2.0f, 3.25f, 4.0f};
    b.current().tensors[sparse].buffer = b.graph().AddBuffer(Buffer::FromValues<float>(values));
    b.current().tensors[sparse].sparsity = CsrSparsity4x4();
  }
  int32_t dense = b.Tensor("dense", DType::kFloat32, {4, 4});
  b.Op(tflite::BuiltinOperator_DENSIFY, {sparse}, {dense});

  int32_t state = b.Variable("state", DType::kFloat32, {1, 3});
  int32_t variant = b.Tensor("list", DType::kVariant, {});
  b.current().tensors[variant].variant_tensors.push_back({{2, -1}, DType::kFloat32, true});
  b.current().tensors[variant].variant_tensors.push_back({{}, DType::kInt32, false});
  int32_t words = b.ConstBytes("words", DType::kString, {2}, StringTensorBytes({"edge", "opt"}));
  int32_t nibbles = b.ConstBytes("nibbles", DType::kInt4, {5}, {0x21, 0x43, 0x05});
  QuantParams custom_q = Quant(0.5f, 0);
  {
    tflite::CustomQuantizationT cq;
    cq.custom = {1, 2, 3, 4};
    custom_q.details.Set(std::move(cq));
  }
  int32_t customq = b.ConstRandom("custom_quant", DType::kUInt8, {4}, 0, 255, custom_q);
  int32_t scratch = b.Tensor("scratch", DType::kFloat32, {3});
  int32_t custom_out = b.Tensor("custom_out", DType::kFloat32, {1, 3});
  int op = b.CustomOp("EdgeoptTestOp", {calibrated, state, words, nibbles, customq, variant, kNoTensor},
                      {custom_out}, {0xde, 0xad, 0xbe, 0xef});
  b.current().ops[op].intermediates = {scratch};
  b.current().ops[op].mutating_variable_inputs = {false, true, false, false, false, false, false};

  int32_t concat = b.Tensor("concat", DType::kFloat32, {1, 6});
  tflite::StablehloConcatenateOptionsT so;
  so.dimension = 1;
  tflite::BuiltinOptions2Union o2;
  o2.Set(std::move(so));
  b.AddOp2(tflite::BuiltinOperator_STABLEHLO_CONCATENATE, {custom_out, custom_out}, {concat}, std::move(o2));

  int32_t cond = b.Input("cond", DType::kBool, {});
  int32_t branch_out = b.Tensor("branch_out", DType::kFloat32, {1, 6});
  tflite::IfOptionsT io;
  io.then_subgraph_index = 1;
  io.else_subgraph_index = 2;
  b.Op(tflite::BuiltinOperator_IF, {cond, concat}, {branch_out}, io);
  b.Output(branch_out);
  b.Output(dense);

  // --- branches: then negates, else is the identity through RESHAPE
  for (int sg = 1; sg <= 2; ++sg) {
    b.NewSubgraph(sg == 1 ? "then" : "else");
    int32_t in = b.Input("in", DType::kFloat32, {1, 6});
    int32_t out = b.Tensor("out", DType::kFloat32, {1, 6});
    if (sg == 1) {
      b.Op(tflite::BuiltinOperator_NEG, {in}, {out});
    } else {
      int32_t shape = b.Const<int32_t>("shape", DType::kInt32, {2}, std::vector<int32_t>{1, 6});
      tflite::ReshapeOptionsT r;
      r.new_shape = {1, 6};
      b.Op(tflite::BuiltinOperator_RESHAPE, {in, shape}, {out}, r);
    }
    b.Output(out);
  }
  b.SetSubgraph(0);
  b.AddSignature("serving_default", 0);
  b.AddSignature("negate", 1);
  b.AddMetadata("min_runtime_version", {'2', '.', '9', '.', '0', 0});
  b.AddMetadata("edgeopt_notes", {1, 2, 3});
  Graph g = b.Finish();
  g.metadata_buffer = {static_cast<int32_t>(g.metadata[0].buffer)};
  return g;
}

}  // namespace edgeopt::testing
