// The model zoo's networks are valid .tflite files for the reference runtime: TFLite 2.9 loads,
// prepares and runs each of them, and the outputs are finite probabilities. (Comparing against
// edgeopt's own kernels belongs to the kernel conformance tests.)
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "format/reader.h"
#include "format/writer.h"
#include "graph/compare.h"
#include "graph/model_zoo.h"
#include "support/tflite_oracle.h"

namespace edgeopt {
namespace {

using testing::OracleSession;
using testing::TfliteOracle;

struct ZooCase {
  std::string name;
  Graph (*build)(const ZooOptions&);
  ZooOptions options;
  int classes;
  bool int8 = false;
};

void PrintTo(const ZooCase& c, std::ostream* os) { *os << c.name; }

std::vector<ZooCase> Cases() {
  return {
      {"MobileNetV2Like_224", MobileNetV2Like, {}, 1001},
      {"MobileNetV2LikeInt8_224", MobileNetV2LikeInt8, {}, 1001, true},
      {"MobileNetV2LikeInt8_224_int8io", MobileNetV2LikeInt8, {.int8_io = true}, 1001, true},
      {"MobileNetV2Like_96_alpha035_mean", MobileNetV2Like,
       {.seed = 7, .input_size = 96, .width_multiplier = 0.35f, .num_classes = 10, .pool_with_mean = true}, 10},
      {"MobileNetV2LikeInt8_128_alpha14_batch2", MobileNetV2LikeInt8,
       {.seed = 3, .input_size = 128, .width_multiplier = 1.4f, .num_classes = 5, .batch = 2}, 5, true},
      {"MobileNetV2LikeInt8_96_mean", MobileNetV2LikeInt8,
       {.input_size = 96, .width_multiplier = 0.5f, .num_classes = 7, .pool_with_mean = true}, 7, true},
      {"TinyCnn", TinyCnn, {.input_size = 16, .num_classes = 10}, 10},
      {"TinyCnn_mean_batch3", TinyCnn, {.input_size = 9, .num_classes = 4, .batch = 3, .pool_with_mean = true}, 4},
      {"TinyMlp", TinyMlp, {.input_size = 16, .num_classes = 10}, 10},
  };
}

class ModelZooTflite29 : public ::testing::TestWithParam<ZooCase> {};

TEST_P(ModelZooTflite29, LoadsAndRunsWithFiniteProbabilities) {
  if (!TfliteOracle::LibraryPresent()) GTEST_SKIP() << TfliteOracle::MissingReason();
  const ZooCase& c = GetParam();
  Graph g = c.build(c.options);
  auto bytes = SerializeModel(g);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  // Our own reader takes it back unchanged.
  auto back = ReadModelBytes(*bytes, c.name);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(DiffGraphs(g, *back).empty());

  auto session = OracleSession::CreateFromBuffer(bytes->data(), bytes->size(), {}, nullptr, c.name);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  auto inputs = (*session)->inputs();
  ASSERT_EQ(inputs.size(), 1u);
  std::mt19937 rng(42);
  const auto& in = inputs[0];
  std::vector<uint8_t> data;
  if (in.type == testing::kOracleFloat32) {
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    std::vector<float> v(in.NumElements());
    for (auto& x : v) x = d(rng);
    data.assign(reinterpret_cast<uint8_t*>(v.data()), reinterpret_cast<uint8_t*>(v.data() + v.size()));
  } else {
    ASSERT_EQ(in.type, testing::kOracleInt8) << testing::OracleTypeName(in.type);
    std::uniform_int_distribution<int> d(-128, 127);
    data.resize(in.NumElements());
    for (auto& x : data) x = static_cast<uint8_t>(d(rng));
  }
  ASSERT_TRUE((*session)->SetInput(0, data.data(), data.size()).ok());
  Status st = (*session)->Invoke();
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto outs = (*session)->GetOutputs();
  ASSERT_TRUE(outs.ok()) << outs.status().ToString();
  ASSERT_EQ(outs->size(), 1u);
  const auto& out = (*outs)[0];
  ASSERT_EQ(out.shape, (std::vector<int>{c.options.batch, c.classes}));
  std::vector<double> probs;
  if (out.type == testing::kOracleFloat32) {
    for (float v : out.Values<float>()) probs.push_back(v);
  } else {
    ASSERT_EQ(out.type, testing::kOracleInt8);
    for (int8_t v : out.Values<int8_t>()) probs.push_back((v - out.zero_point) * static_cast<double>(out.scale));
  }
  for (int b = 0; b < c.options.batch; ++b) {
    double sum = 0;
    for (int k = 0; k < c.classes; ++k) {
      double p = probs[static_cast<size_t>(b * c.classes + k)];
      ASSERT_TRUE(std::isfinite(p));
      EXPECT_GE(p, 0.0);
      EXPECT_LE(p, 1.0);
      sum += p;
    }
    // int8 probabilities are multiples of 1/256, so each may be off by that much.
    EXPECT_NEAR(sum, 1.0, c.int8 ? c.classes / 256.0 + 1e-6 : 1e-4);
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, ModelZooTflite29, ::testing::ValuesIn(Cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace edgeopt
