// Real quantized models with the fast integer kernels (src/kernels/gemm_int8, depthwise_int8):
// - outputs byte-identical to edgeopt's reference kernels, 1 and 2 threads, and every int8/uint8
//   CONV_2D / DEPTHWISE_CONV_2D of the model really ran an AVX2 or AVX-512 integer variant;
// - outputs equal to TFLite 2.9's built-in kernels with 0 LSB tolerance (the general real-model
//   conformance test allows 1 LSB).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "runtime/interpreter.h"
#include "support/conformance.h"
#include "support/core/model_files.h"
#include "support/fast_vs_reference.h"

namespace edgeopt {
namespace {

const char* const kModels[] = {"mobilenet_v2_1.0_224_ptq_int8.tflite", "mobilenet_v2_1.0_224_quant.tflite",
                               "kws_dscnn_int8.tflite",  "cifar10_resnet8_int8.tflite",
                               "vww_96_int8.tflite",     "mobilenet_v1_0.25_224_quant.tflite",
                               // one-channel DEPTHWISE_CONV_2D run as a convolution
                               "micro_speech_int8.tflite"};

TEST(FastInt8RealModels, MatchReferenceKernelsAndTflite29Exactly) {
  EDGEOPT_REQUIRE_SHARED_MODELS();
  if (!testing::HaveAvx2()) GTEST_SKIP() << "no AVX2+FMA on this CPU: the fast integer kernels are not used";
  const bool have_tflite = testing::Tflite29Available();
  if (!have_tflite) std::printf("TFLite 2.9 library absent: only the fast-vs-reference-kernel half runs\n");
  for (const char* name : kModels) {
    const std::string path = testing::SharedModel(name);
    ASSERT_TRUE(std::filesystem::exists(path)) << path << " missing from the shared models";
    auto model = rt::Model::FromFile(path);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    for (int threads : {1, 2}) {
      testing::FastCheck check;
      check.threads = threads;
      check.op_type = "CONV_2D";
      check.more_op_types = {"DEPTHWISE_CONV_2D", "FULLY_CONNECTED"};
      check.variant = "8/avx";  // int8/avx2, uint8/avx2, int8/avx512vnni, depthwise int8/avx512, ...
      check.seed = 7;
      testing::ExpectFastMatchesReference(*model, name, check);
      if (!have_tflite) continue;
      testing::CompareOptions opts;
      opts.max_lsb = 0;
      opts.threads = threads;
      opts.oracle = testing::Oracle::kTflite29;
      opts.seed = 11;
      const testing::CompareReport r = testing::CompareModelFile(path, opts);
      EXPECT_TRUE(r.ok) << name << " (" << threads << " threads) vs TFLite 2.9, 0 LSB: " << r.error << "\n"
                        << r.Summary();
    }
  }
}

}  // namespace
}  // namespace edgeopt
