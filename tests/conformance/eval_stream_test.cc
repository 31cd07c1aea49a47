// `edgeopt eval --keep-state`: the recurrent state streams from sample to sample through one
// interpreter, as a TFLite app invoking one interpreter per sample would. Checked against the
// reference runtime (TFLite 2.9 C library) fed the same samples in the same shuffled order
// without resets.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "eval/accuracy.h"
#include "eval/dataset.h"
#include "support/conformance.h"
#include "support/core/model_files.h"
#include "support/tflite_oracle.h"

namespace edgeopt::testing {
namespace {

TEST(EvalKeepState, MnistLstmStreamMatchesTflite29InAShuffledOrder) {
  EDGEOPT_REQUIRE_SHARED_MODELS();
  if (!Tflite29Available()) GTEST_SKIP() << TfliteOracle::MissingReason();
  const std::string mnist = SharedDataDir() + "/mnist";
  if (!FileExists(mnist + "/images_uint8.npy")) GTEST_SKIP() << mnist << "/images_uint8.npy absent";
  constexpr size_t kSamples = 120;
  constexpr uint64_t kSeed = 5;
  for (const char* name : {"mnist_lstm_float.tflite", "mnist_lstm_int8.tflite"}) {
    SCOPED_TRACE(name);
    const std::string path = SharedModelsDir() + "/" + name;
    auto model = rt::Model::FromFile(path);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    auto specs = eval::InputSpecsOf(*model);
    ASSERT_TRUE(specs.ok());
    auto all = eval::Dataset::Open({mnist}, *specs);
    ASSERT_TRUE(all.ok()) << all.status().ToString();
    const eval::Dataset data = all->Spread(kSamples);  // every class, still sorted by label
    eval::RunOptions o;
    o.pp.norm.kind = eval::PixelNormalization::Kind::kRange;
    o.pp.norm.lo = 0;
    o.pp.norm.hi = 1;
    o.shuffle_seed = kSeed;
    o.threads = 2;  // ignored with keep_state: one stream
    o.keep_state = true;
    auto kept = eval::RunDataset(*model, data, o);
    ASSERT_TRUE(kept.ok()) << kept.status().ToString();
    o.keep_state = false;
    auto reset = eval::RunDataset(*model, data, o);
    ASSERT_TRUE(reset.ok()) << reset.status().ToString();

    auto session = OracleSession::Create(path);
    ASSERT_TRUE(session.ok()) << session.status().ToString();
    const std::vector<size_t> order = eval::SampleOrder(data.size(), kSeed);
    ASSERT_EQ(order.size(), kSamples);
    double max_err = 0, max_state_effect = 0;
    for (size_t i : order) {
      auto in = data.Load(i, *specs, o.pp);
      ASSERT_TRUE(in.ok()) << in.status().ToString();
      ASSERT_TRUE((*session)->SetInput(0, (*in)[0].data.data(), (*in)[0].data.size()).ok());
      ASSERT_TRUE((*session)->Invoke().ok());
      auto out = (*session)->GetOutput(0);
      ASSERT_TRUE(out.ok());
      std::vector<float> ref;
      if (out->type == kOracleFloat32) {
        ref = out->Values<float>();
      } else {
        for (int8_t q : out->Values<int8_t>()) ref.push_back((q - out->zero_point) * out->scale);
      }
      const std::vector<float>& ours = (*kept)[i][0];
      ASSERT_EQ(ours.size(), ref.size());
      for (size_t k = 0; k < ref.size(); ++k) {
        max_err = std::max(max_err, static_cast<double>(std::fabs(ours[k] - ref[k])));
        max_state_effect = std::max(max_state_effect, static_cast<double>(std::fabs(ours[k] - (*reset)[i][0][k])));
      }
    }
    // Float: the same arithmetic up to summation order; int8: bit-exact.
    EXPECT_LE(max_err, 1e-4) << "kept-state outputs differ from TFLite 2.9 streaming the same order";
    // The state really carries over: outputs differ from the per-sample reset ones.
    EXPECT_GT(max_state_effect, 1e-3);
  }
}

TEST(EvalKeepState, SampleOrderIsAFixedPermutation) {
  const std::vector<size_t> a = eval::SampleOrder(50, 3), b = eval::SampleOrder(50, 3), c = eval::SampleOrder(50, 4);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  std::vector<size_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) EXPECT_EQ(sorted[i], i);
  const std::vector<size_t> identity = eval::SampleOrder(5, 0);
  EXPECT_EQ(identity, (std::vector<size_t>{0, 1, 2, 3, 4}));
}

}  // namespace
}  // namespace edgeopt::testing
