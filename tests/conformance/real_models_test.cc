// Every real model (../shared/models and the MediaPipe models fetched into .cache/models) runs in
// edgeopt and in a reference runtime on the same, realistic inputs, and every output agrees:
// integer outputs within 1 LSB, float outputs within a relative tolerance of the output range
// (for the few very deep float nets where TFLite's own built-in and XNNPACK kernels disagree by
// more than that, within 2x their disagreement of either of the two reference results).
// TFLite 2.9 is the oracle; models it cannot run (custom ops it lacks) go to LiteRT.js. The test
// prints a table: model, oracle, outputs, max error, verdict.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

#include "eval/audio.h"
#include "eval/image.h"
#include "eval/npy.h"
#include "format/reader.h"
#include "format/writer.h"
#include "support/conformance.h"
#include "support/core/model_files.h"
#include "support/tflite_oracle.h"

namespace edgeopt {
namespace {

using testing::TensorValue;

// Realistic inputs: photos for image-shaped inputs, speech for a waveform input, a digit for
// 28x28 inputs; seeded random values otherwise (small non-negative integers for index inputs).
std::vector<TensorValue> RealisticInputs(const Graph& g, std::string* source) {
  testing::CompareOptions o;
  o.int_lo = 0;
  o.int_hi = 9;
  std::vector<TensorValue> inputs = testing::RandomInputs(g, o);
  *source = "random";
  const Subgraph& sg = g.main();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = sg.tensors[sg.inputs[i]];
    const auto& s = t.shape;
    const QuantParams* q = t.quant ? &*t.quant : nullptr;
    if (s.size() == 4 && s[0] == 1 && (s[3] == 3) && s[1] >= 32 && s[2] >= 32) {
      auto img = eval::LoadImage(testing::SharedDataDir() + "/images/cat.bmp");
      if (!img.ok()) continue;
      eval::PixelNormalization n;
      auto v = eval::ImageToTensor(*img, s, t.type, q, n);
      if (!v.ok()) continue;
      inputs[i].data = v->data;
      *source = "cat.bmp";
    } else if (s.size() == 1 && t.type == DType::kFloat32 && s[0] >= 8000) {
      auto a = eval::LoadWav(testing::SharedDataDir() + "/audio/speech.wav");
      if (!a.ok()) continue;
      std::vector<float> w(s[0], 0.0f);
      std::copy_n(a->samples.begin(), std::min<size_t>(w.size(), a->samples.size()), w.begin());
      std::memcpy(inputs[i].data.data(), w.data(), w.size() * 4);
      *source = "speech.wav";
    } else if (t.num_elements() == 28 * 28 && (t.type == DType::kFloat32 || t.type == DType::kInt8)) {
      auto m = eval::ReadNpy(testing::SharedDataDir() + "/mnist/images_uint8.npy");
      if (!m.ok()) continue;
      std::vector<float> px(28 * 28);
      for (int k = 0; k < 28 * 28; ++k) px[k] = m->data[5000 * 28 * 28 + k] / 255.0f;
      auto v = eval::RealToTensor(px, s, t.type, q);
      inputs[i].data = v.data;
      *source = "mnist digit";
    }
  }
  return inputs;
}

TEST(RealModelConformance, EveryModelMatchesTheReference) {
  EDGEOPT_REQUIRE_SHARED_MODELS();
  if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  std::printf("\n%-42s %-12s %-11s %-7s %-14s %s\n", "model", "input", "oracle", "outputs", "max error", "verdict");
  int failures = 0;
  for (const std::string& path : testing::AllRealModels()) {
    auto g = ReadModelFile(path);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    std::string source;
    auto inputs = RealisticInputs(*g, &source);
    testing::CompareOptions opts;
    opts.max_lsb = 1;
    // Float models sum in a different order than TFLite's kernels through dozens of layers.
    opts.rtol = 1e-4;
    opts.atol = 1e-5;
    opts.threads = 2;
    testing::CompareReport r = testing::CompareModelFile(path, opts, inputs);
    // Float outputs of very deep nets: the reference runtime's own kernels disagree with each
    // other (built-in vs XNNPACK) by more than a fixed tolerance. Both are valid LiteRT results,
    // so each output must be within max(tolerance, 2x that spread) of one of them.
    if (!r.ok && r.oracle == "tflite-2.9" && r.error.empty()) {
      const auto bytes = testing::ReadFileBytes(path);
      auto model = rt::Model::FromFile(path);
      ASSERT_TRUE(model.ok()) << model.status().ToString();
      rt::InterpreterOptions io;
      io.num_threads = opts.threads;
      auto ours = testing::RunEdgeopt(*model, inputs, io);
      auto builtin = testing::RunTflite29(bytes, inputs);
      auto xnnpack = testing::RunTflite29(bytes, inputs, 1, true, testing::kXnnpackFlagQS8);
      if (ours.ok() && builtin.ok() && xnnpack.ok()) {
        testing::CompareOptions exact;
        exact.rtol = 0;
        exact.atol = 0;
        exact.max_lsb = 0;
        const testing::CompareReport spread = testing::CompareOutputs(*xnnpack, *builtin, exact);
        const testing::CompareReport vs_builtin = testing::CompareOutputs(*ours, *builtin, exact);
        const testing::CompareReport vs_xnnpack = testing::CompareOutputs(*ours, *xnnpack, exact);
        bool ok = spread.outputs.size() == r.outputs.size() && vs_builtin.outputs.size() == r.outputs.size() &&
                  vs_xnnpack.outputs.size() == r.outputs.size();
        for (size_t k = 0; ok && k < r.outputs.size(); ++k) {
          const auto& o = r.outputs[k];
          const bool is_float = o.type == DType::kFloat32;
          const double fixed = opts.atol + opts.rtol * o.reference_range;
          const double allowed = std::max(fixed, 2.0 * spread.outputs[k].max_abs_error);
          const double err = std::min(vs_builtin.outputs[k].max_abs_error, vs_xnnpack.outputs[k].max_abs_error);
          if (!o.problem.empty() || (is_float ? err > allowed : !o.ok)) ok = false;
          if (is_float && o.max_abs_error > fixed)
            std::printf("  %s output %zu: error %.3g vs built-in, %.3g vs XNNPACK; allowed %.3g (2x the reference's own "
                        "built-in vs XNNPACK spread %.3g)\n",
                        testing::Basename(path).c_str(), k, vs_builtin.outputs[k].max_abs_error,
                        vs_xnnpack.outputs[k].max_abs_error, allowed, spread.outputs[k].max_abs_error);
        }
        r.ok = ok;
      }
    }
    std::string err;
    for (const auto& o : r.outputs) {
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%s%.3g%s", err.empty() ? "" : ",", o.max_abs_error,
                    (o.type == DType::kInt8 || o.type == DType::kUInt8 || o.type == DType::kInt16) ? "lsb" : "");
      err += buf;
    }
    const std::string oracle = r.oracle.substr(0, r.oracle.find(' '));
    std::printf("%-42s %-12s %-11s %-7zu %-14s %s\n", testing::Basename(path).c_str(), source.c_str(), oracle.c_str(),
                r.outputs.size(), err.c_str(), r.ok ? "ok" : "FAIL");
    if (!r.ok) {
      ++failures;
      ADD_FAILURE() << testing::Basename(path) << "\n" << r.Summary();
    }
  }
  std::fflush(stdout);
  EXPECT_EQ(failures, 0);
}

}  // namespace
}  // namespace edgeopt

namespace edgeopt {
namespace {

// read -> write through the Graph IR gives a file the reference runtime runs with outputs
// bit-identical to the original's, for every real model.
TEST(RealModelConformance, RewrittenModelsRunBitIdenticallyInTheReference) {
  EDGEOPT_REQUIRE_SHARED_MODELS();
  if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  int compared = 0;
  for (const std::string& path : testing::AllRealModels()) {
    SCOPED_TRACE(path);
    auto g = ReadModelFile(path);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    auto rewritten = SerializeModel(*g);
    ASSERT_TRUE(rewritten.ok()) << rewritten.status().ToString();
    std::string source;
    auto inputs = RealisticInputs(*g, &source);
    auto a = testing::RunTflite29(testing::ReadFileBytes(path), inputs);
    if (!a.ok()) continue;  // models 2.9 cannot run (custom ops it lacks) are covered above via LiteRT.js
    auto b = testing::RunTflite29(*rewritten, inputs);
    ASSERT_TRUE(b.ok()) << "the rewritten model fails in TFLite 2.9: " << b.status().ToString();
    ASSERT_EQ(a->size(), b->size());
    for (size_t k = 0; k < a->size(); ++k) {
      EXPECT_EQ((*a)[k].shape, (*b)[k].shape);
      EXPECT_TRUE((*a)[k].data == (*b)[k].data) << "output " << k << " differs";
    }
    ++compared;
  }
  EXPECT_GT(compared, 20);
}

}  // namespace
}  // namespace edgeopt
