// Thread tuning (InterpreterOptions::tune_op_threads) on real models: a 2-thread interpreter
// whose small ops move between running split and alone (timed pairs of invokes at start-up and
// then one pair in every 32) gives, at every invoke, outputs byte-identical to a 1-thread
// interpreter's and to a 2-thread one with tuning off. Which ops end alone depends on this
// machine's timing and is printed, not asserted (interpreter_test.cc checks the choice itself
// with ops of known cost).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "runtime/interpreter.h"
#include "support/core/model_files.h"

namespace edgeopt {
namespace {

std::vector<std::vector<uint8_t>> Outputs(rt::Interpreter& it) {
  std::vector<std::vector<uint8_t>> out;
  for (int i = 0; i < it.num_outputs(); ++i) {
    const rt::RtTensor* t = it.output(i);
    const auto* p = static_cast<const uint8_t*>(t->data);
    out.emplace_back(p, p + t->bytes);
  }
  return out;
}

void FillInputs(rt::Interpreter& it) {
  for (int i = 0; i < it.num_inputs(); ++i) {
    rt::RtTensor* t = it.input(i);
    auto* p = static_cast<uint8_t*>(t->data);
    if (t->type == DType::kFloat32) {
      float* f = reinterpret_cast<float*>(p);
      for (size_t j = 0; j < t->bytes / 4; ++j) f[j] = static_cast<float>((j * 2654435761u >> 11) % 2001) / 1000.0f - 1.0f;
    } else {
      for (size_t j = 0; j < t->bytes; ++j) p[j] = static_cast<uint8_t>(j * 2654435761u >> 13);
    }
  }
}

TEST(ThreadTuningRealModels, EveryInvokeMatchesOneThreadExactly) {
  EDGEOPT_REQUIRE_SHARED_MODELS();
  const char* const kModels[] = {"kws_dscnn_int8.tflite",  "cifar10_resnet8_int8.tflite", "vww_96_int8.tflite",
                                 "vww_96_float.tflite",    "cifar10_resnet8_float.tflite",
                                 "mobilenet_v1_0.25_224_float.tflite"};
  for (const char* name : kModels) {
    const std::string path = testing::SharedModel(name);
    ASSERT_TRUE(std::filesystem::exists(path)) << path << " missing from the shared models";
    auto model = rt::Model::FromFile(path);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    std::vector<std::vector<uint8_t>> want;
    {
      rt::InterpreterOptions o;
      o.num_threads = 1;
      auto one = rt::Interpreter::Create(*model, o);
      ASSERT_TRUE(one.ok()) << one.status().ToString();
      FillInputs(**one);
      ASSERT_TRUE((*one)->Invoke().ok());
      want = Outputs(**one);
    }
    for (bool tune : {true, false}) {
      rt::InterpreterOptions o;
      o.num_threads = 2;
      o.tune_op_threads = tune;
      auto two = rt::Interpreter::Create(*model, o);
      ASSERT_TRUE(two.ok()) << two.status().ToString();
      FillInputs(**two);
      // Past the start-up pairs (invokes 3-8) and the first steady pair (9, 10) into the next (41, 42).
      for (int k = 0; k < 45; ++k) {
        ASSERT_TRUE((*two)->Invoke().ok()) << name << " invoke " << k;
        ASSERT_TRUE(Outputs(**two) == want) << name << ": 2 threads, tuning " << (tune ? "on" : "off") << ", invoke "
                                            << k << " differs from 1 thread";
      }
      int alone = 0, total = 0;
      for (const rt::OpInfo& op : (*two)->ops()) {
        if (op.folded) continue;
        ++total;
        alone += op.threads == 1 ? 1 : 0;
      }
      if (tune) std::printf("%s: %d of %d ops run alone at 2 threads on this machine now\n", name, alone, total);
      else EXPECT_EQ(alone, 0) << name << ": tuning off yet an op runs alone";
    }
  }
}

}  // namespace
}  // namespace edgeopt
