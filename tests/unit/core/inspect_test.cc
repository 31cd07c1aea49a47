// ModelSummary (src/graph/inspect.h) on graphs built in code: the quantization scheme of each
// kind of model, the parameter and size rules, and robustness to inconsistent graphs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "graph/builder.h"
#include "graph/inspect.h"

namespace edgeopt {
namespace {

using tflite::BuiltinOperator_CONV_2D;
using tflite::BuiltinOperator_DEQUANTIZE;
using tflite::BuiltinOperator_FULLY_CONNECTED;
using tflite::BuiltinOperator_QUANTIZE;
using tflite::BuiltinOperator_SOFTMAX;

// x[1,8] -> FULLY_CONNECTED(w[4,8], b[4]) -> y[1,4], with the given types/quantization.
struct FcSpec {
  DType act = DType::kFloat32;
  DType weight = DType::kFloat32;
  DType bias = DType::kFloat32;
  bool float_io = false;  // QUANTIZE/DEQUANTIZE around an integer FC
  DType io = DType::kFloat32;  // I/O type when float_io is false and act is an integer type
};

Graph MakeFc(const FcSpec& s) {
  GraphBuilder b;
  const bool int_act = s.act != DType::kFloat32;
  const std::optional<QuantParams> aq = int_act ? std::optional(Quant(0.1f, 0)) : std::nullopt;
  const std::optional<QuantParams> wq =
      s.weight != DType::kFloat32 ? std::optional(QuantPerAxis({0.1f, 0.1f, 0.1f, 0.1f}, 0)) : std::nullopt;
  const std::optional<QuantParams> bq = s.bias == DType::kInt32 || s.bias == DType::kInt64
                                            ? std::optional(QuantPerAxis({0.01f, 0.01f, 0.01f, 0.01f}, 0))
                                            : std::nullopt;
  int32_t x;
  if (s.float_io) {
    const auto in = b.Input("in", DType::kFloat32, {1, 8});
    x = b.Tensor("x", s.act, {1, 8}, aq);
    b.Op(BuiltinOperator_QUANTIZE, {in}, {x});
  } else if (int_act && s.io != s.act) {
    const auto in = b.Input("in", s.io, {1, 8}, Quant(0.1f, 128));
    x = b.Tensor("x", s.act, {1, 8}, aq);
    b.Op(BuiltinOperator_QUANTIZE, {in}, {x});
  } else {
    x = b.Input("x", s.act, {1, 8}, aq);
  }
  const auto w = b.ConstRandom("w", s.weight, {4, 8}, -1, 1, wq);
  const auto bias = b.ConstRandom("b", s.bias, {4}, -1, 1, bq);
  const auto y = b.Tensor("y", s.act, {1, 4}, aq);
  b.Op(BuiltinOperator_FULLY_CONNECTED, {x, w, bias}, {y}, tflite::FullyConnectedOptionsT());
  if (s.float_io) {
    const auto out = b.Tensor("out", DType::kFloat32, {1, 4});
    b.Op(BuiltinOperator_DEQUANTIZE, {y}, {out});
    b.Output(out);
  } else if (int_act && s.io != s.act) {
    const auto out = b.Tensor("out", s.io, {1, 4}, Quant(0.1f, 128));
    b.Op(BuiltinOperator_QUANTIZE, {y}, {out});
    b.Output(out);
  } else {
    b.Output(y);
  }
  return b.Finish();
}

TEST(Inspect, Float32) {
  ModelSummary s = SummarizeModel(MakeFc({}));
  EXPECT_EQ(s.quantization.id, "float32");
  EXPECT_EQ(s.quantization.description, "float32");
  EXPECT_EQ(s.parameters, 36u);
  EXPECT_EQ(s.num_ops, 1u);
}

TEST(Inspect, DynamicRange) {
  ModelSummary s = SummarizeModel(MakeFc({DType::kFloat32, DType::kInt8, DType::kFloat32}));
  EXPECT_EQ(s.quantization.id, "dynamic_range");
  EXPECT_EQ(s.quantization.description, "dynamic range (int8 weights, float activations; 1 hybrid op)");
  ASSERT_EQ(s.subgraphs[0].ops.size(), 1u);
  EXPECT_EQ(s.subgraphs[0].ops[0].precision, "hybrid");
}

TEST(Inspect, FullIntegerInt8WithIntegerIo) {
  ModelSummary s = SummarizeModel(MakeFc({DType::kInt8, DType::kInt8, DType::kInt32, false, DType::kInt8}));
  EXPECT_EQ(s.quantization.id, "full_integer_int8");
  EXPECT_EQ(s.quantization.description, "full integer int8 (int8 I/O)");
  EXPECT_EQ(s.parameters, 36u);  // the quantized int32 bias counts
}

TEST(Inspect, FullIntegerInt8WithFloatIo) {
  ModelSummary s = SummarizeModel(MakeFc({DType::kInt8, DType::kInt8, DType::kInt32, true}));
  EXPECT_EQ(s.quantization.id, "full_integer_int8");
  EXPECT_EQ(s.quantization.description, "full integer int8 (float I/O with QUANTIZE/DEQUANTIZE at the edges)");
  EXPECT_EQ(s.quantization.ops_by_precision,
            (CountList{{"dequantize", 1}, {"int8", 1}, {"quantize", 1}}));
}

TEST(Inspect, FullIntegerInt8WithUint8Io) {
  ModelSummary s = SummarizeModel(MakeFc({DType::kInt8, DType::kInt8, DType::kInt32, false, DType::kUInt8}));
  EXPECT_EQ(s.quantization.id, "full_integer_int8");
  EXPECT_EQ(s.quantization.description, "full integer int8 (uint8 I/O with QUANTIZE at the edges)");
  EXPECT_EQ(s.quantization.ops_by_precision, (CountList{{"requantize", 2}, {"int8", 1}}));
}

TEST(Inspect, FullIntegerUint8) {
  ModelSummary s = SummarizeModel(MakeFc({DType::kUInt8, DType::kUInt8, DType::kInt32, false, DType::kUInt8}));
  EXPECT_EQ(s.quantization.id, "full_integer_uint8");
  EXPECT_EQ(s.quantization.description, "full integer uint8 (uint8 I/O)");
}

TEST(Inspect, SixteenByEight) {
  ModelSummary s = SummarizeModel(MakeFc({DType::kInt16, DType::kInt8, DType::kInt64, false, DType::kInt16}));
  EXPECT_EQ(s.quantization.id, "int16x8");
  EXPECT_EQ(s.quantization.description, "16x8 (int16 activations, int8 weights; int16 I/O)");
}

TEST(Inspect, Float16WeightsAndWeightOnlyInt8) {
  for (DType stored : {DType::kFloat16, DType::kInt8}) {
    GraphBuilder b;
    const auto x = b.Input("x", DType::kFloat32, {1, 8});
    std::optional<QuantParams> q;
    if (stored == DType::kInt8) q = Quant(0.1f, 0);
    const auto w16 = b.ConstRandom("w_stored", stored, {4, 8}, -1, 1, q);
    const auto w = b.Tensor("w", DType::kFloat32, {4, 8});
    b.Op(BuiltinOperator_DEQUANTIZE, {w16}, {w});
    const auto y = b.Tensor("y", DType::kFloat32, {1, 4});
    b.Op(BuiltinOperator_FULLY_CONNECTED, {x, w, kNoTensor}, {y}, tflite::FullyConnectedOptionsT());
    b.Output(y);
    ModelSummary s = SummarizeModel(b.Finish());
    if (stored == DType::kFloat16) {
      EXPECT_EQ(s.quantization.id, "float16_weights");
      EXPECT_EQ(s.quantization.description, "float16 weights (1 DEQUANTIZE), float32 compute");
    } else {
      EXPECT_EQ(s.quantization.id, "weight_only_int8");
    }
    EXPECT_EQ(s.parameters, 32u);
    // The omitted bias is listed as such.
    EXPECT_EQ(s.subgraphs[0].ops[1].inputs[2].index, kNoTensor);
  }
}

TEST(Inspect, MixedSaysWhereTheFloatOpsAre) {
  // int8 FC, then DEQUANTIZE and a float SOFTMAX: an int8 core with float post-processing.
  Graph g = MakeFc({DType::kInt8, DType::kInt8, DType::kInt32, true});
  Subgraph& sg = g.main();
  const int32_t out = sg.outputs[0];
  Tensor probs_tensor;
  probs_tensor.name = "probs";
  probs_tensor.shape = {1, 4};
  const int32_t probs = sg.AddTensor(probs_tensor);
  Operator softmax;
  softmax.code = BuiltinOperator_SOFTMAX;
  softmax.inputs = {out};
  softmax.outputs = {probs};
  sg.ops.push_back(softmax);
  sg.outputs = {probs};
  ModelSummary s = SummarizeModel(g);
  EXPECT_EQ(s.quantization.id, "mixed");
  EXPECT_EQ(s.quantization.description,
            "mixed: int8 core (1 op) with float post-processing (1 op); 2 QUANTIZE/DEQUANTIZE");
}

TEST(Inspect, SharedBuffersAreCountedOnce) {
  GraphBuilder b;
  const auto x = b.Input("x", DType::kFloat32, {1, 8});
  const auto w = b.ConstRandom("w", DType::kFloat32, {8, 8});
  const auto y1 = b.Tensor("y1", DType::kFloat32, {1, 8});
  const auto y2 = b.Tensor("y2", DType::kFloat32, {1, 8});
  b.Op(BuiltinOperator_FULLY_CONNECTED, {x, w, kNoTensor}, {y1}, tflite::FullyConnectedOptionsT());
  // A second tensor over the same buffer, read by the second op.
  const auto w2 = b.Tensor("w_shared", DType::kFloat32, {8, 8});
  b.current().tensors[w2].buffer = b.current().tensors[w].buffer;
  b.Op(BuiltinOperator_FULLY_CONNECTED, {y1, w2, kNoTensor}, {y2}, tflite::FullyConnectedOptionsT());
  // A shape constant (not a parameter) and an unused constant.
  b.Const<int32_t>("shape", DType::kInt32, {2}, {1, 8});
  b.Output(y2);
  ModelSummary s = SummarizeModel(b.Finish());
  EXPECT_EQ(s.parameters, 64u);
  EXPECT_EQ(s.constant_bytes, 64u * 4 + 8);
  EXPECT_EQ(s.unused_constant_bytes, 8u);
  EXPECT_EQ(s.unused_tensors, 1u);
  EXPECT_EQ(s.constant_bytes_by_op, (CountList{{"FULLY_CONNECTED", 256}}));
  EXPECT_EQ(s.constant_bytes_by_dtype, (CountList{{"float32", 256}, {"int32", 8}}));
}

TEST(Inspect, StringsForShapesAndQuantization) {
  EXPECT_EQ(ShapeString({1, -1, 3}), "[1,-1,3]");
  EXPECT_EQ(ShapeString({}), "[]");
  TensorSummary t;
  EXPECT_EQ(QuantizationString(t), "none");
  t.num_scales = 1;
  t.scale = 0.5f;
  t.zero_point = -3;
  EXPECT_EQ(QuantizationString(t), "scale 0.5, zero point -3");
  t.num_scales = 32;
  t.quant_axis = 3;
  EXPECT_EQ(QuantizationString(t), "per-channel (32 scales, axis 3)");
}

TEST(Inspect, ShapeSignatureGivesDynamicDimensions) {
  GraphBuilder b;
  const auto x = b.Input("x", DType::kFloat32, {1, 8});
  b.current().tensors[x].shape_signature = {-1, 8};
  b.Output(x);
  ModelSummary s = SummarizeModel(b.Finish());
  EXPECT_EQ(s.subgraphs[0].inputs[0].shape, (std::vector<int32_t>{-1, 8}));
}

TEST(Inspect, InconsistentGraphsDoNotCrash) {
  Graph g = MakeFc({});
  g.main().ops[0].inputs.push_back(999);
  g.main().outputs.push_back(-7);
  g.signatures.push_back({{{"bad", 12345}}, {}, "sig", 0});
  ModelSummary s = SummarizeModel(g);
  EXPECT_EQ(s.subgraphs[0].ops[0].inputs.back().name, "<invalid>");
  EXPECT_FALSE(SummaryToText(s).empty());
  EXPECT_FALSE(SummaryToJson(s).empty());
}

TEST(Inspect, JsonAndTextAgree) {
  Graph g = MakeFc({DType::kInt8, DType::kInt8, DType::kInt32, true});
  g.description = "bad \x01 bytes \xff in a name";
  ModelSummary s = SummarizeModel(g);
  auto j = nlohmann::json::parse(SummaryToJson(s));
  EXPECT_EQ(j["quantization"]["scheme"], "full_integer_int8");
  EXPECT_EQ(j["parameters"], s.parameters);
  EXPECT_EQ(j["op_histogram"]["FULLY_CONNECTED"], 1);
  EXPECT_EQ(j["subgraphs"][0]["ops"][1]["precision"], "int8");
  const std::string text = SummaryToText(s);
  EXPECT_NE(text.find("full integer int8 (float I/O with QUANTIZE/DEQUANTIZE at the edges)"), std::string::npos);
  EXPECT_EQ(text.find('\x01'), std::string::npos) << "control characters are not printed";
  SummaryTextOptions cut;
  cut.max_ops = 1;
  cut.truncation_hint = "see more";
  EXPECT_NE(SummaryToText(s, cut).find("... 2 more ops not shown (see more)"), std::string::npos);
}

}  // namespace
}  // namespace edgeopt
