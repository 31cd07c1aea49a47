// Every real model: read -> write -> read preserves every field; the writer's output is aligned.
#include <gtest/gtest.h>

#include "format/reader.h"
#include "format/writer.h"
#include "graph/compare.h"
#include "support/core/model_files.h"

namespace edgeopt {
namespace {

using testing::AllRealModels;

TEST(FormatRoundTrip, EveryRealModelSurvivesReadWriteRead) {
  EDGEOPT_REQUIRE_SHARED_MODELS();
  for (const std::string& path : AllRealModels()) {
    SCOPED_TRACE(path);
    auto g = ReadModelFile(path);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    auto bytes = SerializeModel(*g);
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    auto g2 = ReadModelBytes(*bytes, path + " (rewritten)");
    ASSERT_TRUE(g2.ok()) << g2.status().ToString();
    auto diffs = DiffGraphs(*g, *g2);
    for (const auto& d : diffs) ADD_FAILURE() << d;
    // Constant buffers are 16-byte aligned relative to the file start.
    for (const auto& b : g2->buffers) {
      if (b.empty()) continue;
      EXPECT_EQ((b.bytes().data() - bytes->data()) % 16, 0);
    }
  }
}

TEST(FormatRoundTrip, ExternalBufferLayoutForLargeModels) {
  EDGEOPT_REQUIRE_SHARED_MODELS();
  // Forces the >2 GB layout (data after the flatbuffer, Buffer.offset/size) on a small model.
  auto path = testing::SharedModel("mobilenet_v1_0.25_224_float.tflite");
  if (path.empty()) GTEST_SKIP() << "mobilenet_v1_0.25_224_float.tflite absent";
  auto g = ReadModelFile(path);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  WriteOptions opts;
  opts.external_buffers_threshold = 0;
  auto bytes = SerializeModel(*g, opts);
  ASSERT_TRUE(bytes.ok());
  auto g2 = ReadModelBytes(*bytes, "external");
  ASSERT_TRUE(g2.ok()) << g2.status().ToString();
  EXPECT_TRUE(DiffGraphs(*g, *g2).empty());
  // Truncating the appended data must be caught by the offset check.
  std::vector<uint8_t> cut(bytes->begin(), bytes->end() - 100);
  auto g3 = ReadModelBytes(cut, "external-truncated");
  ASSERT_FALSE(g3.ok());
  EXPECT_NE(g3.status().message().find("past the end"), std::string::npos) << g3.status().message();
}

}  // namespace
}  // namespace edgeopt
