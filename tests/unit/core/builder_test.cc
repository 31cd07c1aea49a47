// GraphBuilder -> writer -> reader keeps every feature; the builder is seeded and reproducible;
// WriteModelFile is atomic and never overwrites its input; the model zoo has the real topology.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>

#include "flatbuffers/flatbuffers.h"
#include "format/reader.h"
#include "format/writer.h"
#include "graph/builder.h"
#include "graph/compare.h"
#include "graph/model_zoo.h"
#include "support/core/feature_models.h"
#include "support/core/model_files.h"

namespace edgeopt {
namespace {

namespace fs = std::filesystem;

Graph RoundTrip(const Graph& g, const WriteOptions& wo = {}) {
  auto bytes = SerializeModel(g, wo);
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto back = ReadModelBytes(*bytes, "round-trip");
  EXPECT_TRUE(back.ok()) << back.status().ToString();
  return back.ok() ? std::move(*back) : Graph();
}

class EveryFeature : public ::testing::TestWithParam<bool> {};  // param: external buffer layout

TEST_P(EveryFeature, SurvivesWriteAndRead) {
  const Graph g = testing::EveryFeatureModel();
  WriteOptions wo;
  if (GetParam()) wo.external_buffers_threshold = 0;
  const Graph r = RoundTrip(g, wo);
  for (const auto& d : DiffGraphs(g, r)) ADD_FAILURE() << d;
  ASSERT_EQ(r.subgraphs.size(), 3u);
  EXPECT_EQ(r.description, "every feature");
  EXPECT_EQ(r.subgraphs[1].name, "then");
  EXPECT_EQ(r.subgraphs[2].name, "else");
  const Subgraph& sg = r.main();
  auto tensor = [&](const char* name) -> const Tensor& {
    int i = sg.FindTensor(name);
    EXPECT_GE(i, 0) << name;
    return sg.tensors.at(static_cast<size_t>(i));
  };
  // Per-axis quantization.
  const Tensor& w = tensor("w");
  ASSERT_TRUE(w.quant);
  EXPECT_EQ(w.quant->scale, (std::vector<float>{0.01f, 0.02f, 0.03f}));
  EXPECT_EQ(w.quant->zero_point, (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(w.quant->quantized_dimension, 0);
  EXPECT_TRUE(w.quant->per_axis());
  EXPECT_EQ(tensor("x").quant->zp(), -3);
  // Min/max-only quantization and custom details.
  const Tensor& cal = tensor("calibrated");
  ASSERT_TRUE(cal.quant);
  EXPECT_FALSE(cal.is_quantized());
  EXPECT_EQ(cal.quant->min, std::vector<float>{-1.5f});
  const auto* cq = tensor("custom_quant").quant->details.AsCustomQuantization();
  ASSERT_NE(cq, nullptr);
  EXPECT_EQ(cq->custom, (std::vector<uint8_t>{1, 2, 3, 4}));
  // Sparsity.
  const Tensor& sp = tensor("sparse");
  ASSERT_TRUE(sp.sparsity);
  EXPECT_EQ(sp.sparsity->traversal_order, (std::vector<int32_t>{0, 1}));
  ASSERT_EQ(sp.sparsity->dim_metadata.size(), 2u);
  EXPECT_EQ(sp.sparsity->dim_metadata[0]->dense_size, 4);
  ASSERT_NE(sp.sparsity->dim_metadata[1]->array_segments.AsInt32Vector(), nullptr);
  EXPECT_EQ(sp.sparsity->dim_metadata[1]->array_segments.AsInt32Vector()->values, (std::vector<int32_t>{0, 1, 1, 3, 4}));
  ASSERT_NE(sp.sparsity->dim_metadata[1]->array_indices.AsUint8Vector(), nullptr);
  EXPECT_EQ(r.buffers[sp.buffer].as<float>()[2], 3.25f);
  // Variable, shape signature, rank, variants, strings, int4.
  EXPECT_TRUE(tensor("state").is_variable);
  EXPECT_EQ(tensor("x").shape_signature, (std::vector<int32_t>{-1, 4, 4, 2}));
  EXPECT_TRUE(tensor("x").has_rank);
  const Tensor& list = tensor("list");
  EXPECT_EQ(list.type, DType::kVariant);
  ASSERT_EQ(list.variant_tensors.size(), 2u);
  EXPECT_EQ(list.variant_tensors[0].shape, (std::vector<int32_t>{2, -1}));
  EXPECT_TRUE(list.variant_tensors[0].has_rank);
  EXPECT_EQ(list.variant_tensors[1].type, DType::kInt32);
  auto words = r.TensorData(tensor("words"));
  EXPECT_EQ(std::vector<uint8_t>(words.begin(), words.end()), testing::StringTensorBytes({"edge", "opt"}));
  auto nibbles = r.TensorData(tensor("nibbles"));
  EXPECT_EQ(std::vector<uint8_t>(nibbles.begin(), nibbles.end()), (std::vector<uint8_t>{0x21, 0x43, 0x05}));
  // Ops: custom op with options, intermediates, mutating inputs; BuiltinOptions2; IF.
  std::map<std::string, const Operator*> ops;
  for (const auto& op : sg.ops) ops[op.type_name()] = &op;
  ASSERT_TRUE(ops.count("EdgeoptTestOp"));
  const Operator& custom = *ops["EdgeoptTestOp"];
  EXPECT_TRUE(custom.is_custom());
  EXPECT_TRUE(custom.has_custom_options);
  EXPECT_EQ(custom.custom_options, (std::vector<uint8_t>{0xde, 0xad, 0xbe, 0xef}));
  EXPECT_EQ(custom.intermediates.size(), 1u);
  EXPECT_EQ(custom.mutating_variable_inputs[1], true);
  EXPECT_EQ(custom.inputs.back(), kNoTensor);
  ASSERT_TRUE(ops.count("STABLEHLO_CONCATENATE"));
  const auto* concat = ops["STABLEHLO_CONCATENATE"]->options2.AsStablehloConcatenateOptions();
  ASSERT_NE(concat, nullptr);
  EXPECT_EQ(concat->dimension, 1);
  ASSERT_TRUE(ops.count("IF"));
  EXPECT_EQ(ops["IF"]->options.AsIfOptions()->else_subgraph_index, 2);
  EXPECT_EQ(ops["CONV_2D"]->version, 3);
  EXPECT_EQ(ops["CONV_2D"]->options.AsConv2DOptions()->fused_activation_function,
            tflite::ActivationFunctionType_RELU6);
  // Signatures and metadata.
  ASSERT_EQ(r.signatures.size(), 2u);
  EXPECT_EQ(r.signatures[1].signature_key, "negate");
  EXPECT_EQ(r.signatures[1].subgraph_index, 1u);
  EXPECT_EQ(r.signatures[0].inputs.size(), 2u);
  ASSERT_EQ(r.metadata.size(), 2u);
  EXPECT_EQ(r.metadata[0].name, "min_runtime_version");
  EXPECT_EQ(r.buffers[r.metadata[0].buffer].size(), 6u);
  ASSERT_EQ(r.metadata_buffer.size(), 1u);
  EXPECT_EQ(static_cast<uint32_t>(r.metadata_buffer[0]), r.metadata[0].buffer);
  // Constant data is 16-byte aligned views into the bytes.
  for (const auto& b : r.buffers) {
    if (!b.empty()) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(b.bytes().data()) % 16, 0u);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, EveryFeature, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "DataAfterFlatbuffer" : "Inline"; });

TEST(Reader, CustomCodeOnABuiltinOpIsIgnored) {
  // A builtin op's custom_code means nothing and cannot be written back; the reader drops it so
  // that read -> write -> read is stable.
  flatbuffers::FlatBufferBuilder fbb;
  auto code = tflite::CreateOperatorCode(fbb, 0, fbb.CreateString("stray"), 1, tflite::BuiltinOperator_ADD);
  auto x = tflite::CreateTensor(fbb, fbb.CreateVector(std::vector<int32_t>{2}), tflite::TensorType_FLOAT32, 0,
                                fbb.CreateString("x"));
  auto op = tflite::CreateOperator(fbb, 0, fbb.CreateVector(std::vector<int32_t>{0, 0}),
                                   fbb.CreateVector(std::vector<int32_t>{0}));
  auto sg = tflite::CreateSubGraph(fbb, fbb.CreateVector(std::vector<flatbuffers::Offset<tflite::Tensor>>{x}),
                                   fbb.CreateVector(std::vector<int32_t>{0}), fbb.CreateVector(std::vector<int32_t>{0}),
                                   fbb.CreateVector(std::vector<flatbuffers::Offset<tflite::Operator>>{op}));
  auto model = tflite::CreateModel(
      fbb, 3, fbb.CreateVector(std::vector<flatbuffers::Offset<tflite::OperatorCode>>{code}),
      fbb.CreateVector(std::vector<flatbuffers::Offset<tflite::SubGraph>>{sg}), 0,
      fbb.CreateVector(std::vector<flatbuffers::Offset<tflite::Buffer>>{tflite::CreateBuffer(fbb)}));
  fbb.Finish(model, tflite::ModelIdentifier());
  auto g = ReadModelBytes(std::span<const uint8_t>(fbb.GetBufferPointer(), fbb.GetSize()), "stray");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->main().ops[0].type_name(), "ADD");
  EXPECT_TRUE(g->main().ops[0].custom_code.empty());
  EXPECT_TRUE(DiffGraphs(*g, RoundTrip(*g)).empty());
}

TEST(Builder, SeededAndReproducible) {
  auto make = [](uint64_t seed) {
    GraphBuilder b(seed);
    int32_t w = b.ConstRandom("w", DType::kInt8, {64}, -5, 5);
    int32_t f = b.ConstRandom("f", DType::kFloat32, {64}, 0.5, 1.5);
    int32_t y = b.Tensor("y", DType::kFloat32, {64});
    b.Op(tflite::BuiltinOperator_ADD, {w, f}, {y});
    b.Output(y);
    return b.Finish();
  };
  Graph a = make(3), b = make(3), c = make(4);
  EXPECT_EQ(*SerializeModel(a), *SerializeModel(b));
  EXPECT_NE(*SerializeModel(a), *SerializeModel(c));
  for (int8_t v : a.buffers[a.main().tensors[0].buffer].as<int8_t>()) {
    EXPECT_GE(v, -5);
    EXPECT_LE(v, 5);
  }
  for (float v : a.buffers[a.main().tensors[1].buffer].as<float>()) {
    EXPECT_GE(v, 0.5f);
    EXPECT_LE(v, 1.5f);
  }
}

TEST(Builder, ConstantsInputsOutputsAndSignature) {
  GraphBuilder b;
  int32_t x = b.Input("x", DType::kFloat32, {1, 3});
  int32_t k = b.Const<int32_t>("k", DType::kInt32, {2}, std::vector<int32_t>{3, 1});
  int32_t y = b.Tensor("y", DType::kFloat32, {3, 1});
  b.Op(tflite::BuiltinOperator_RESHAPE, {x, k}, {y});
  b.Output(y);
  b.AddSignature("serving_default");
  Graph g = b.Finish();
  EXPECT_EQ(g.main().inputs, std::vector<int32_t>{x});
  EXPECT_EQ(g.main().outputs, std::vector<int32_t>{y});
  EXPECT_EQ(g.buffers[g.main().tensors[k].buffer].as<int32_t>()[0], 3);
  ASSERT_EQ(g.signatures.size(), 1u);
  EXPECT_EQ(g.signatures[0].inputs[0].name, "x");
  EXPECT_EQ(g.signatures[0].outputs[0].tensor_index, static_cast<uint32_t>(y));
  EXPECT_TRUE(DiffGraphs(g, RoundTrip(g)).empty());
}

// Names in `dir` (to check for leftover temporary files).
std::vector<std::string> Listing(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(WriteModelFile, AtomicAndLeavesNoTemporaryFiles) {
  auto dir = testing::MakeTempDir("write_atomic");
  const std::string path = dir + "/model.tflite";
  Graph g = TinyCnn();
  ASSERT_TRUE(WriteModelFile(g, path).ok());
  EXPECT_EQ(Listing(dir), std::vector<std::string>{"model.tflite"});
  // Overwriting an existing (unmapped) file replaces it whole.
  Graph other = TinyMlp();
  ASSERT_TRUE(WriteModelFile(other, path).ok());
  EXPECT_EQ(Listing(dir), std::vector<std::string>{"model.tflite"});
  auto back = ReadModelFile(path);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(DiffGraphs(other, *back).empty());
  // A failing write (missing folder) reports the path and leaves nothing behind.
  Status st = WriteModelFile(g, dir + "/missing/model.tflite");
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find(dir + "/missing/model.tflite"), std::string::npos) << st.message();
  EXPECT_EQ(Listing(dir), std::vector<std::string>{"model.tflite"});
  // A graph the writer refuses leaves the old file intact.
  Graph bad = TinyCnn();
  bad.main().ops[0].outputs = {12345};
  EXPECT_FALSE(WriteModelFile(bad, path).ok());
  EXPECT_EQ(Listing(dir), std::vector<std::string>{"model.tflite"});
  EXPECT_TRUE(DiffGraphs(other, *ReadModelFile(path)).empty());
}

TEST(WriteModelFile, RefusesToOverwriteTheMappedInput) {
  auto dir = testing::MakeTempDir("write_input");
  const std::string path = dir + "/in.tflite";
  ASSERT_TRUE(WriteModelFile(TinyCnn(), path).ok());
  auto g = ReadModelFile(path);
  ASSERT_TRUE(g.ok());
  const auto before = testing::ReadFileBytes(path);
  Status st = WriteModelFile(*g, path);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("refusing to overwrite the input model"), std::string::npos) << st.message();
  // Also through another name for the same file.
  fs::create_symlink(path, dir + "/alias.tflite");
  EXPECT_FALSE(WriteModelFile(*g, dir + "/alias.tflite").ok());
  ASSERT_EQ(::link(path.c_str(), (dir + "/hard.tflite").c_str()), 0);
  EXPECT_FALSE(WriteModelFile(*g, dir + "/hard.tflite").ok());
  EXPECT_EQ(testing::ReadFileBytes(path), before);
  // Writing elsewhere works, and the views into the input stay valid.
  ASSERT_TRUE(WriteModelFile(*g, dir + "/out.tflite").ok());
  auto out = ReadModelFile(dir + "/out.tflite");
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(DiffGraphs(*g, *out).empty());
  EXPECT_TRUE(g->buffers[1].is_view());
}

std::map<std::string, int> OpCounts(const Graph& g) {
  std::map<std::string, int> n;
  for (const auto& op : g.main().ops) ++n[op.type_name()];
  return n;
}

int64_t ParameterCount(const Graph& g) {
  int64_t n = 0;
  for (const auto& t : g.main().tensors)
    if (g.IsConstant(t) && t.type != DType::kInt32) n += t.num_elements();
  for (const auto& t : g.main().tensors)  // biases (int32 in the int8 model)
    if (g.IsConstant(t) && t.type == DType::kInt32 && t.name.find("/bias") != std::string::npos) n += t.num_elements();
  return n;
}

TEST(ModelZoo, MobileNetV2HasTheReferenceTopology) {
  Graph g = MobileNetV2Like();
  auto n = OpCounts(g);
  EXPECT_EQ(n["CONV_2D"], 35);  // stem + 16 expand + 17 project + final 1x1
  EXPECT_EQ(n["DEPTHWISE_CONV_2D"], 17);
  EXPECT_EQ(n["ADD"], 10);
  EXPECT_EQ(n["AVERAGE_POOL_2D"], 1);
  EXPECT_EQ(n["FULLY_CONNECTED"], 1);
  EXPECT_EQ(n["SOFTMAX"], 1);
  // 3.5 M parameters as in the reference (without batch norm, which TFLite folds anyway).
  const int64_t params = ParameterCount(g);
  EXPECT_GT(params, 3'400'000);
  EXPECT_LT(params, 3'600'000);
  const Subgraph& sg = g.main();
  EXPECT_EQ(sg.tensors[sg.inputs[0]].shape, (std::vector<int32_t>{1, 224, 224, 3}));
  EXPECT_EQ(sg.tensors[sg.outputs[0]].shape, (std::vector<int32_t>{1, 1001}));
  // The 7x7x1280 feature map before pooling, as in the reference.
  EXPECT_EQ(sg.tensors[sg.FindTensor("MobilenetV2/Conv_1/Relu6")].shape, (std::vector<int32_t>{1, 7, 7, 1280}));
  EXPECT_EQ(OpCounts(MobileNetV2Like({.pool_with_mean = true}))["MEAN"], 1);
}

TEST(ModelZoo, MobileNetV2Int8IsQuantizedLikeTheConverterDoesIt) {
  Graph g = MobileNetV2LikeInt8({.input_size = 96, .width_multiplier = 0.5f, .num_classes = 10});
  const Subgraph& sg = g.main();
  auto n = OpCounts(g);
  EXPECT_EQ(n["QUANTIZE"], 1);
  EXPECT_EQ(n["DEQUANTIZE"], 1);
  EXPECT_EQ(sg.tensors[sg.inputs[0]].type, DType::kFloat32);
  EXPECT_EQ(sg.tensors[sg.outputs[0]].type, DType::kFloat32);
  int checked = 0;
  for (const auto& op : sg.ops) {
    if (op.code != tflite::BuiltinOperator_CONV_2D && op.code != tflite::BuiltinOperator_DEPTHWISE_CONV_2D) continue;
    const Tensor& in = sg.tensors[op.inputs[0]];
    const Tensor& w = sg.tensors[op.inputs[1]];
    const Tensor& b = sg.tensors[op.inputs[2]];
    EXPECT_EQ(in.type, DType::kInt8);
    EXPECT_EQ(w.type, DType::kInt8);
    EXPECT_EQ(b.type, DType::kInt32);
    ASSERT_TRUE(w.is_quantized() && b.is_quantized());
    const int axis = op.code == tflite::BuiltinOperator_CONV_2D ? 0 : 3;
    EXPECT_EQ(w.quant->quantized_dimension, axis);
    ASSERT_EQ(static_cast<int32_t>(w.quant->scale.size()), w.shape[axis]);
    for (size_t c = 0; c < w.quant->scale.size(); ++c) {
      EXPECT_EQ(w.quant->zp(c), 0);
      EXPECT_FLOAT_EQ(b.quant->sc(c), in.quant->sc() * w.quant->sc(c));
    }
    for (int8_t v : g.buffers[w.buffer].as<int8_t>()) EXPECT_GE(v, -127);
    ++checked;
  }
  EXPECT_EQ(checked, 52);
  Graph io = MobileNetV2LikeInt8({.input_size = 96, .width_multiplier = 0.5f, .num_classes = 10, .int8_io = true});
  EXPECT_EQ(io.main().tensors[io.main().inputs[0]].type, DType::kInt8);
  EXPECT_EQ(io.main().tensors[io.main().outputs[0]].type, DType::kInt8);
  EXPECT_EQ(OpCounts(io)["QUANTIZE"], 0);
}

TEST(ModelZoo, SeededReproducibleAndReadable) {
  for (auto build : {MobileNetV2Like, MobileNetV2LikeInt8}) {
    const ZooOptions o{.seed = 9, .input_size = 32, .width_multiplier = 0.35f, .num_classes = 10};
    auto a = SerializeModel(build(o));
    ZooOptions other = o;
    other.seed = 10;
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(*a, *SerializeModel(build(o)));
    EXPECT_NE(*a, *SerializeModel(build(other)));
    auto g = ReadModelBytes(*a, "zoo");
    ASSERT_TRUE(g.ok()) << g.status().ToString();
  }
  for (auto build : {TinyCnn, TinyMlp}) {
    Graph g = build({.input_size = 16, .num_classes = 10});
    EXPECT_TRUE(DiffGraphs(g, RoundTrip(g)).empty());
  }
}

}  // namespace
}  // namespace edgeopt
