// dequantize: quantized real models become float32 models that the reference runtime runs and
// that agree with their quantized originals.
#include <gtest/gtest.h>

#include <cmath>

#include "eval/image.h"
#include "format/reader.h"
#include "format/writer.h"
#include "optimize/quantize/dequantize.h"
#include "support/conformance.h"
#include "support/core/model_files.h"

namespace edgeopt {
namespace {

using testing::TensorValue;

// The real value of a quantized input element, for feeding the float twin the same signal.
TensorValue ToRealInput(const TensorValue& q, const Tensor& def) {
  TensorValue f;
  f.name = q.name;
  f.type = DType::kFloat32;
  f.shape = q.shape;
  f.data.resize(static_cast<size_t>(q.num_elements()) * 4);
  for (int64_t i = 0; i < q.num_elements(); ++i) {
    float v = def.is_quantized() ? static_cast<float>((q.At(i) - def.quant->zp()) * def.quant->sc()) : static_cast<float>(q.At(i));
    std::memcpy(f.data.data() + 4 * i, &v, 4);
  }
  return f;
}

// The shared model `name` read into *original and dequantized into *f (false, with a failure
// recorded, when that does not work; false quietly when the file is absent).
bool Dequantized(const char* name, Graph* original, Graph* f, optimize::DequantizeReport* report) {
  const std::string path = testing::SharedModel(name);
  if (path.empty()) return false;
  auto g = ReadModelFile(path);
  if (!g.ok()) {
    ADD_FAILURE() << g.status().ToString();
    return false;
  }
  *original = *g;
  *f = *g;
  auto r = optimize::DequantizeModel(*f);
  if (!r.ok()) {
    ADD_FAILURE() << r.status().ToString();
    return false;
  }
  *report = *r;
  return true;
}

// Every quantized model in ../shared/models becomes a float model that TFLite 2.9 loads and runs
// (MoveNet's int8 CONCATENATION with a [0, x] output range once came out with a fused RELU, which
// TFLite's float CONCATENATION refuses).
TEST(Dequantize, EverySharedQuantizedModelRunsInTheReferenceRuntime) {
  EDGEOPT_REQUIRE_SHARED_MODELS();
  if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent";
  int checked = 0;
  for (const char* name : {"movenet_single_pose_lightning_ptq.tflite", "ssd_mobilenet_v1_coco_quant.tflite",
                           "kws_dscnn_int8.tflite", "vww_96_int8.tflite", "cifar10_resnet8_int8.tflite",
                           "mobilenet_v1_0.5_160_quant.tflite", "micro_speech_int8.tflite",
                           "toycar_autoencoder_int8.tflite", "hello_world_int8.tflite", "blazeface_short_range_fp16.tflite",
                           "selfie_segmentation_fp16.tflite"}) {
    SCOPED_TRACE(name);
    Graph original, f;
    optimize::DequantizeReport report;
    if (!Dequantized(name, &original, &f, &report)) continue;
    auto bytes = SerializeModel(f);
    ASSERT_TRUE(bytes.ok());
    testing::CompareOptions o;
    const auto inputs = testing::RandomInputs(f, o);
    auto out = testing::RunTflite29(*bytes, inputs);
    if (!out.ok() && out.status().ToString().find("Convolution2DTransposeBias") != std::string::npos) continue;
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    ++checked;
  }
  EXPECT_GT(checked, 5);
}

TEST(Dequantize, QuantizedClassifiersBecomeAgreeingFloatModels) {
  EDGEOPT_REQUIRE_SHARED_MODELS();
  if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent";
  const std::string image = testing::SharedDataDir() + "/images/cat.bmp";
  for (const char* name : {"mobilenet_v2_1.0_224_ptq_int8.tflite", "mobilenet_v2_1.0_224_quant.tflite",
                           "mobilenet_v1_0.25_224_quant.tflite"}) {
    SCOPED_TRACE(name);
    Graph original, f;
    optimize::DequantizeReport report;
    if (!Dequantized(name, &original, &f, &report)) continue;
    const std::string path = testing::SharedModel(name);
    const Graph* g = &original;
    EXPECT_GT(report.constants_dequantized, 10);
    // Pure float32 now: no integer activations or quantized tensors left.
    for (const auto& t : f.main().tensors) EXPECT_FALSE(t.is_quantized()) << t.name;
    for (const auto& op : f.main().ops) {
      EXPECT_NE(op.code, tflite::BuiltinOperator_QUANTIZE);
      EXPECT_NE(op.code, tflite::BuiltinOperator_DEQUANTIZE);
    }
    EXPECT_EQ(f.main().tensors[f.main().inputs[0]].type, DType::kFloat32);
    auto bytes = SerializeModel(f);
    ASSERT_TRUE(bytes.ok());
    // Same image through both in the reference runtime.
    auto img = eval::LoadImage(image);
    ASSERT_TRUE(img.ok());
    const Tensor& in_def = g->main().tensors[g->main().inputs[0]];
    auto qin = eval::ImageToTensor(*img, in_def.shape, in_def.type, in_def.quant ? &*in_def.quant : nullptr, {});
    ASSERT_TRUE(qin.ok());
    TensorValue q;
    q.type = qin->type;
    q.shape = qin->shape;
    q.data = qin->data;
    auto qout = testing::RunTflite29(testing::ReadFileBytes(path), {q});
    auto fout = testing::RunTflite29(*bytes, {ToRealInput(q, in_def)});
    ASSERT_TRUE(qout.ok()) << qout.status().ToString();
    ASSERT_TRUE(fout.ok()) << fout.status().ToString();
    const TensorValue& a = (*qout)[0];
    const TensorValue& b = (*fout)[0];
    ASSERT_EQ(a.num_elements(), b.num_elements());
    int64_t top_a = 0, top_b = 0;
    for (int64_t i = 0; i < a.num_elements(); ++i) {
      if (a.At(i) > a.At(top_a)) top_a = i;
      if (b.At(i) > b.At(top_b)) top_b = i;
    }
    EXPECT_EQ(top_a, top_b) << "quantized top-1 " << top_a << ", float top-1 " << top_b;
  }
}

}  // namespace
}  // namespace edgeopt
