// edgeopt inspect, end to end: text and JSON reports of the generated example model and of the
// real models in ../shared/models (quantization scheme of each, op counts, I/O, truncation).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"

namespace edgeopt::testing {
namespace {

using Json = nlohmann::json;

Json InspectJson(const std::string& model) {
  CliResult r = RunEdgeopt({"inspect", model, "--json"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  Json j = Json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << "not JSON:\n" << r.out;
  return j;
}

TEST(CliInspect, ExampleModelText) {
  const std::string model = MakeExampleModel(MakeTempDir("inspect_text"));
  CliResult r = RunEdgeopt({"inspect", model});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_TRUE(r.err.empty()) << r.err;
  for (const char* want : {"quantization  float32", "parameters    618", "schema        version 3",
                           "edgeopt example: tiny_cnn", "image  [1,32,32,3]  float32  none", "scores  [1,10]",
                           "CONV_2D            2", "'serving_default' (subgraph 0)", "min_runtime_version  6 B",
                           "Ops of subgraph 0 'main'",
                           "CONV_2D            float32    float32[1,32,32,3], const float32[8,3,3,3], const "
                           "float32[8] -> float32[1,16,16,8]"}) {
    EXPECT_NE(r.out.find(want), std::string::npos) << "missing '" << want << "' in:\n" << r.out;
  }
}

TEST(CliInspect, ExampleModelJson) {
  const std::string model = MakeExampleModel(MakeTempDir("inspect_json"));
  Json j = InspectJson(model);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["file_size"], std::filesystem::file_size(model));
  EXPECT_EQ(j["schema_version"], 3);
  EXPECT_EQ(j["num_ops"], 7);
  EXPECT_EQ(j["parameters"], 618);
  EXPECT_EQ(j["quantization"]["scheme"], "float32");
  EXPECT_EQ(j["quantization"]["ops_by_precision"]["float32"], 7);
  EXPECT_EQ(j["op_histogram"]["CONV_2D"], 2);
  EXPECT_EQ(j["op_histogram"]["SOFTMAX"], 1);
  ASSERT_EQ(j["inputs"].size(), 1u);
  EXPECT_EQ(j["inputs"][0]["name"], "image");
  EXPECT_EQ(j["inputs"][0]["shape"], Json::array({1, 32, 32, 3}));
  EXPECT_EQ(j["inputs"][0]["dtype"], "float32");
  EXPECT_EQ(j["inputs"][0]["quantization"]["type"], "none");
  EXPECT_EQ(j["constant_bytes_by_dtype"]["int32"], 8);  // the RESHAPE shape
  EXPECT_EQ(j["constant_bytes_by_dtype"]["float32"], 618 * 4);
  EXPECT_EQ(j["constant_bytes"], 618 * 4 + 8);
  EXPECT_EQ(j["signatures"][0]["key"], "serving_default");
  EXPECT_EQ(j["signatures"][0]["inputs"][0]["name"], "image");
  EXPECT_EQ(j["metadata"][0]["name"], "min_runtime_version");
  EXPECT_EQ(j["metadata"][0]["bytes"], 6);
  const Json& ops = j["subgraphs"][0]["ops"];
  ASSERT_EQ(ops.size(), 7u);
  EXPECT_EQ(ops[0]["op"], "CONV_2D");
  EXPECT_EQ(ops[0]["precision"], "float32");
  EXPECT_EQ(ops[0]["inputs"][1]["constant"], true);
  EXPECT_EQ(ops[0]["inputs"][1]["shape"], Json::array({8, 3, 3, 3}));
  EXPECT_EQ(ops[6]["outputs"][0]["name"], "scores");
}

TEST(CliInspect, JsonTopLevelKeysAreStable) {
  // The README documents these keys; renaming one breaks users' scripts.
  const std::string model = MakeExampleModel(MakeTempDir("inspect_keys"));
  Json j = InspectJson(model);
  std::set<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.insert(it.key());
  const std::set<std::string> expected = {
      "path", "file_size", "schema_version", "description", "quantization", "num_ops", "parameters",
      "constant_bytes", "unused_constant_bytes", "metadata_bytes", "constant_bytes_by_dtype", "constant_bytes_by_op",
      "num_buffers", "unused_tensors", "inputs", "outputs", "op_histogram", "subgraphs", "signatures", "metadata"};
  EXPECT_EQ(keys, expected);
  std::set<std::string> sub;
  for (auto it = j["subgraphs"][0].begin(); it != j["subgraphs"][0].end(); ++it) sub.insert(it.key());
  EXPECT_EQ(sub, (std::set<std::string>{"index", "name", "num_tensors", "num_ops", "inputs", "outputs", "ops"}));
}

TEST(CliInspect, MobilenetFloatOpHistogramAndParameters) {
  EDGEOPT_REQUIRE_SHARED_MODELS();
  const std::string model = SharedModel("mobilenet_v1_0.25_224_float.tflite");
  if (model.empty()) GTEST_SKIP() << "mobilenet_v1_0.25_224_float.tflite absent";
  Json j = InspectJson(model);
  EXPECT_EQ(j["op_histogram"]["CONV_2D"], 15);
  EXPECT_EQ(j["op_histogram"]["DEPTHWISE_CONV_2D"], 13);
  EXPECT_EQ(j["op_histogram"]["AVERAGE_POOL_2D"], 1);
  EXPECT_EQ(j["op_histogram"]["SOFTMAX"], 1);
  EXPECT_EQ(j["num_ops"], 31);
  EXPECT_EQ(j["inputs"][0]["shape"], Json::array({1, 224, 224, 3}));
  EXPECT_EQ(j["outputs"][0]["shape"], Json::array({1, 1001}));
  EXPECT_EQ(j["quantization"]["scheme"], "float32");
  // Parameters = elements of the float constants the ops read, recomputed from the op list.
  std::set<int> seen;
  uint64_t params = 0;
  for (const auto& op : j["subgraphs"][0]["ops"]) {
    for (const auto& t : op["inputs"]) {
      if (t.is_null() || !t["constant"].get<bool>() || t["dtype"] != "float32") continue;
      if (!seen.insert(t["index"].get<int>()).second) continue;
      uint64_t n = 1;
      for (int d : t["shape"]) n *= static_cast<uint64_t>(d);
      params += n;
    }
  }
  EXPECT_EQ(j["parameters"].get<uint64_t>(), params);
  EXPECT_GT(params, 400000u);  // MobileNet v1 0.25 has about 0.47 M parameters
  EXPECT_LT(params, 500000u);
}

TEST(CliInspect, QuantizationSchemeOfEveryRealModel) {
  EDGEOPT_REQUIRE_SHARED_MODELS();
  struct Expect {
    const char* scheme;
    const char* words;  // substring of the description
  };
  const std::map<std::string, Expect> expected = {
      {"blazeface_short_range_fp16.tflite", {"float16_weights", "float16 weights (74 DEQUANTIZE)"}},
      {"cifar10_resnet8_float.tflite", {"float32", "float32"}},
      {"cifar10_resnet8_int8.tflite", {"full_integer_int8", "full integer int8 (int8 I/O)"}},
      {"deeplabv3_257_float.tflite", {"float32", "float32"}},
      {"hello_world_float.tflite", {"float32", "float32"}},
      {"hello_world_int8.tflite", {"full_integer_int8", "full integer int8 (int8 I/O)"}},
      {"kws_dscnn_int8.tflite", {"full_integer_int8", "full integer int8 (int8 I/O)"}},
      {"kws_dscnn_mixed.tflite", {"dynamic_range", "dynamic range (int8 weights, float activations; 5 hybrid ops"}},
      {"micro_speech_int8.tflite", {"full_integer_int8", "full integer int8 (int8 I/O)"}},
      {"mnist_lstm_float.tflite", {"float32", "float32"}},
      {"mnist_lstm_int8.tflite", {"full_integer_int8", "full integer int8 (int8 I/O)"}},
      {"mobilenet_v1_0.25_224_float.tflite", {"float32", "float32"}},
      {"mobilenet_v1_0.25_224_quant.tflite", {"full_integer_uint8", "full integer uint8 (uint8 I/O)"}},
      {"mobilenet_v1_0.5_160_quant.tflite", {"full_integer_uint8", "full integer uint8 (uint8 I/O)"}},
      {"mobilenet_v2_1.0_224_ptq_int8.tflite",
       {"full_integer_int8", "full integer int8 (uint8 I/O with QUANTIZE at the edges)"}},
      {"mobilenet_v2_1.0_224_quant.tflite", {"full_integer_uint8", "full integer uint8 (uint8 I/O)"}},
      // int8 body whose keypoint decoding does a few float ops (CAST, SQRT, DIV) between int8 ops.
      {"movenet_single_pose_lightning_ptq.tflite", {"mixed", "int8 core (125 ops) with 6 float ops inside it"}},
      {"movie_review_text.tflite", {"float32", "float32"}},
      {"selfie_segmentation_fp16.tflite", {"float16_weights", "float16 weights (110 DEQUANTIZE)"}},
      {"ssd_mobilenet_v1_coco_quant.tflite", {"full_integer_uint8", "full integer uint8 (uint8 input, float32 outputs)"}},
      {"toycar_autoencoder_dynamic_range.tflite", {"dynamic_range", "dynamic range (int8 weights, float activations; 10 hybrid ops)"}},
      {"toycar_autoencoder_float.tflite", {"float32", "float32"}},
      {"toycar_autoencoder_int8.tflite",
       {"full_integer_int8", "full integer int8 (float I/O with QUANTIZE/DEQUANTIZE at the edges)"}},
      {"vww_96_float.tflite", {"float32", "float32"}},
      {"vww_96_int8.tflite", {"full_integer_int8", "full integer int8 (int8 I/O)"}},
      // Despite its name the file computes its conv stack in int8 (QUANTIZE after the float
      // spectrogram front end, DEQUANTIZE before the output): not hybrid ops.
      {"yamnet_dynamic_range.tflite", {"mixed", "int8 core (32 ops) with float pre-processing (12 ops)"}},
  };
  int checked = 0;
  for (const auto& [file, want] : expected) {
    const std::string model = SharedModel(file);
    if (model.empty()) continue;
    SCOPED_TRACE(file);
    Json j = InspectJson(model);
    EXPECT_EQ(j["quantization"]["scheme"], want.scheme);
    const std::string words = j["quantization"]["description"];
    EXPECT_NE(words.find(want.words), std::string::npos) << "description: " << words;
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

TEST(CliInspect, QuantizationParametersOfInputs) {
  EDGEOPT_REQUIRE_SHARED_MODELS();
  const std::string model = SharedModel("mobilenet_v1_0.25_224_quant.tflite");
  if (model.empty()) GTEST_SKIP() << "mobilenet_v1_0.25_224_quant.tflite absent";
  CliResult r = RunEdgeopt({"inspect", model, "--ops", "none"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("uint8  scale 0.0078125, zero point 128"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Ops of subgraph"), std::string::npos) << "--ops none lists no ops";
  Json j = InspectJson(model);
  EXPECT_EQ(j["inputs"][0]["quantization"]["type"], "per_tensor");
  EXPECT_EQ(j["inputs"][0]["quantization"]["scale"], 0.0078125);
  EXPECT_EQ(j["inputs"][0]["quantization"]["zero_point"], 128);
}

TEST(CliInspect, DynamicDimensionsShowAsMinusOne) {
  EDGEOPT_REQUIRE_SHARED_MODELS();
  const std::string model = SharedModel("cifar10_resnet8_float.tflite");
  if (model.empty()) GTEST_SKIP() << "cifar10_resnet8_float.tflite absent";
  Json j = InspectJson(model);
  EXPECT_EQ(j["inputs"][0]["shape"], Json::array({-1, 32, 32, 3}));
}

TEST(CliInspect, LongOpListsAreCutUnlessAskedForAll) {
  EDGEOPT_REQUIRE_SHARED_MODELS();
  const std::string model = SharedModel("mobilenet_v2_1.0_224_ptq_int8.tflite");
  if (model.empty()) GTEST_SKIP() << "mobilenet_v2_1.0_224_ptq_int8.tflite absent";
  CliResult cut = RunEdgeopt({"inspect", model});
  ASSERT_EQ(cut.exit_code, 0) << Describe(cut);
  EXPECT_NE(cut.out.find("(first 40 of 68)"), std::string::npos) << cut.out;
  EXPECT_NE(cut.out.find("... 28 more ops not shown (--ops all lists every op)"), std::string::npos) << cut.out;
  CliResult all = RunEdgeopt({"inspect", model, "--ops", "all"});
  ASSERT_EQ(all.exit_code, 0) << Describe(all);
  EXPECT_EQ(all.out.find("not shown"), std::string::npos);
  EXPECT_NE(all.out.find("\n  67  QUANTIZE "), std::string::npos) << all.out;
  CliResult five = RunEdgeopt({"inspect", model, "--ops", "5"});
  EXPECT_NE(five.out.find("(first 5 of 68)"), std::string::npos) << five.out;
}

TEST(CliInspect, EveryRealModelInBothModes) {
  EDGEOPT_REQUIRE_SHARED_MODELS();
  for (const std::string& model : AllRealModels()) {
    SCOPED_TRACE(model);
    CliResult text = RunEdgeopt({"inspect", model, "--ops", "all"});
    EXPECT_EQ(text.exit_code, 0) << Describe(text);
    EXPECT_NE(text.out.find("quantization  "), std::string::npos);
    Json j = InspectJson(model);
    ASSERT_TRUE(j.is_object());
    EXPECT_FALSE(j["quantization"]["scheme"].get<std::string>().empty());
    uint64_t hist = 0;
    for (const auto& [op, n] : j["op_histogram"].items()) hist += n.get<uint64_t>();
    EXPECT_EQ(hist, j["num_ops"].get<uint64_t>());
    uint64_t by_precision = 0;
    for (const auto& [p, n] : j["quantization"]["ops_by_precision"].items()) by_precision += n.get<uint64_t>();
    EXPECT_EQ(by_precision, j["num_ops"].get<uint64_t>());
    uint64_t by_dtype = 0;
    for (const auto& [d, n] : j["constant_bytes_by_dtype"].items()) by_dtype += n.get<uint64_t>();
    EXPECT_EQ(by_dtype, j["constant_bytes"].get<uint64_t>());
    uint64_t by_op = 0;
    for (const auto& [o, n] : j["constant_bytes_by_op"].items()) by_op += n.get<uint64_t>();
    EXPECT_EQ(by_op + j["unused_constant_bytes"].get<uint64_t>(), j["constant_bytes"].get<uint64_t>());
    EXPECT_LE(j["constant_bytes"].get<uint64_t>() + j["metadata_bytes"].get<uint64_t>(), j["file_size"].get<uint64_t>());
  }
}

}  // namespace
}  // namespace edgeopt::testing
