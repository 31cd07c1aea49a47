// edgeopt prune / edgeopt cluster end to end on the four real float models of issue 7: every
// written file runs in the reference TFLite 2.9 library with outputs matching edgeopt's, the
// compressed sizes shrink as promised (gzip of prune 50% <= 0.6x, of cluster 16 <= 0.4x the
// original's gzip; prune 50% + cluster 16 + int8 <= 0.15x the original bytes after zstd), and
// --encode sparse makes the file itself smaller. Prints a table of the sizes.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "format/reader.h"
#include "format/writer.h"
#include "optimize/cluster/cluster.h"
#include "optimize/compression.h"
#include "optimize/quantize/quantize.h"
#include "support/conformance.h"
#include "support/core/model_files.h"

namespace edgeopt {
namespace {

using testing::CliResult;
using testing::Describe;
using testing::RunEdgeopt;

std::vector<uint8_t> FileBytes(const std::string& path) {
  const std::string s = testing::ReadTextFile(path);
  return std::vector<uint8_t>(s.begin(), s.end());
}

optimize::CompressedSizes SizesOf(const std::string& path) { return optimize::MeasureCompression(FileBytes(path)); }

// The written model against TFLite 2.9 on seeded random inputs; float outputs within the
// real-model tolerance (1e-4 of the output range), integer outputs within 1 LSB.
void ExpectMatchesTflite29(const std::string& path) {
  testing::CompareOptions opts;
  opts.rtol = 1e-4;
  opts.atol = 1e-5;
  opts.max_lsb = 1;
  opts.oracle = testing::Oracle::kTflite29;
  testing::CompareReport r = testing::CompareModelFile(path, opts);
  EXPECT_TRUE(r.ok) << path << ": " << r.error << "\n" << r.Summary();
  EXPECT_EQ(r.oracle, "tflite-2.9") << path;
}

// Number of tensors with SparsityParameters in a model file.
int SparseTensorCount(const std::string& path) {
  auto g = ReadModelFile(path);
  if (!g.ok()) return -1;
  int n = 0;
  for (const auto& sg : g->subgraphs)
    for (const auto& t : sg.tensors)
      if (t.sparsity) ++n;
  return n;
}

const char* const kModels[] = {"mobilenet_v1_0.25_224_float", "vww_96_float", "cifar10_resnet8_float",
                               "toycar_autoencoder_float"};

TEST(PruneClusterCli, RealModelsRunInTflite29AndShrink) {
  EDGEOPT_REQUIRE_SHARED_MODELS();
  if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  const std::string dir = testing::MakeTempDir("prune_cluster");
  std::printf("\n%-30s %-22s %10s %8s %8s %8s\n", "model", "variant", "raw", "raw x", "gzip x", "zstd x");
  for (const char* name : kModels) {
    SCOPED_TRACE(name);
    const std::string in = testing::SharedModelsDir() + "/" + name + ".tflite";
    ASSERT_TRUE(std::filesystem::exists(in)) << in;
    const optimize::CompressedSizes orig = SizesOf(in);
    auto row = [&](const std::string& variant, const optimize::CompressedSizes& s) {
      std::printf("%-30s %-22s %10zu %8.3f %8.3f %8.3f\n", name, variant.c_str(), s.raw,
                  static_cast<double>(s.raw) / orig.raw, static_cast<double>(s.gzip) / orig.gzip,
                  static_cast<double>(s.zstd) / orig.raw);
    };
    row("original", orig);

    const std::string pruned = dir + "/" + name + "_p50.tflite";
    CliResult r = RunEdgeopt({"prune", in, "-o", pruned, "--sparsity", "0.5", "--num-samples", "2"});
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    EXPECT_NE(r.out.find("gzip"), std::string::npos) << r.out;
    ExpectMatchesTflite29(pruned);
    const auto p = SizesOf(pruned);
    row("prune 0.5", p);
    EXPECT_LE(p.gzip, 0.6 * orig.gzip);

    const std::string clustered = dir + "/" + name + "_c16.tflite";
    r = RunEdgeopt({"cluster", in, "-o", clustered, "--clusters", "16", "--num-samples", "2"});
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    ExpectMatchesTflite29(clustered);
    const auto c = SizesOf(clustered);
    row("cluster 16", c);
    EXPECT_LE(c.gzip, 0.4 * orig.gzip);

    // Stored sparse: the file itself shrinks and LiteRT runs it through DENSIFY.
    const std::string sparse = dir + "/" + name + "_p50_sparse.tflite";
    r = RunEdgeopt({"prune", in, "-o", sparse, "--sparsity", "0.5", "--encode", "sparse", "--num-samples", "2"});
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    EXPECT_GT(SparseTensorCount(sparse), 0);
    ExpectMatchesTflite29(sparse);
    const auto s = SizesOf(sparse);
    row("prune 0.5 sparse", s);
    EXPECT_LT(s.raw, orig.raw);

    // Chained: prune 50% -> cluster 16 keeping zeros -> full-integer int8 (quantize library).
    const std::string pc = dir + "/" + name + "_p50_c16.tflite";
    r = RunEdgeopt({"cluster", pruned, "-o", pc, "--clusters", "16", "--preserve-sparsity", "--num-samples", "2"});
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    auto g = ReadModelFile(pc);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    optimize::QuantizeOptions q;
    q.mode = optimize::QuantMode::kInt8;
    q.io = optimize::IoType::kInt8;
    testing::CompareOptions ro;
    for (int i = 0; i < 4; ++i) {
      ro.seed = 100 + i;
      std::vector<eval::HostTensor> sample;
      for (const auto& v : testing::RandomInputs(*g, ro)) {
        eval::HostTensor h;
        h.name = v.name;
        h.type = v.type;
        h.shape = v.shape;
        h.data = v.data;
        sample.push_back(std::move(h));
      }
      q.calibration.push_back(std::move(sample));
    }
    auto qr = optimize::QuantizeModel(*g, q);
    ASSERT_TRUE(qr.ok()) << qr.status().ToString();
    const std::string chained = dir + "/" + name + "_p50_c16_int8.tflite";
    ASSERT_TRUE(WriteModelFile(*g, chained).ok());
    ExpectMatchesTflite29(chained);
    const auto ch = SizesOf(chained);
    row("prune+cluster+int8", ch);
    EXPECT_LE(ch.zstd, 0.15 * orig.raw);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

// High sparsity stored sparse: edgeopt runs DENSIFY at prepare and the sparse FULLY_CONNECTED /
// 1x1 CONV_2D kernels; outputs still match TFLite 2.9.
TEST(PruneClusterCli, NinetyPercentSparseModelsMatchTflite29) {
  EDGEOPT_REQUIRE_SHARED_MODELS();
  if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  const std::string dir = testing::MakeTempDir("prune_sparse90");
  for (const char* name : {"mobilenet_v1_0.25_224_float", "toycar_autoencoder_float"}) {
    SCOPED_TRACE(name);
    const std::string in = testing::SharedModelsDir() + "/" + name + ".tflite";
    for (const char* encode : {"dense", "sparse"}) {
      const std::string out = dir + "/" + name + "_p90_" + encode + ".tflite";
      CliResult r = RunEdgeopt({"prune", in, "-o", out, "--sparsity", "0.9", "--encode", encode, "--num-samples", "1"});
      ASSERT_EQ(r.exit_code, 0) << Describe(r);
      ExpectMatchesTflite29(out);
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace edgeopt

namespace edgeopt {
namespace {

// Bad flag values are usage errors (exit 2) naming the flag, and nothing is written.
TEST(PruneClusterCli, BadFlagsAreUsageErrors) {
  const std::string dir = testing::MakeTempDir("prune_flags");
  const std::string in = testing::MakeExampleModel(dir);
  const std::string out = dir + "/out.tflite";
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const Case cases[] = {
      {{"prune", in, "-o", out, "--sparsity", "1.5"}, "--sparsity must be in [0, 1)"},
      {{"prune", in, "-o", out}, "--sparsity S is required"},
      {{"prune", in, "-o", out, "--sparsity", "0.5", "--structure", "3:7"}, "3:7"},
      {{"prune", in, "-o", out, "--sparsity", "0.5", "--encode", "zip"}, "--encode must be dense or sparse"},
      {{"prune", in, "-o", out, "--sparsity", "0.5", "--per-layer", "--global"}, "not both"},
      {{"prune", in, "-o", out, "--sparsity", "0.5", "--scope", "(["}, "--scope: invalid regular expression"},
      {{"prune", in, "-o", out, "--sparsity", "0.5", "--skip-op", "SOFTMAX"}, "is not an op with weights"},
      {{"prune", in, "-o", in, "--sparsity", "0.5"}, "refusing to overwrite the input model"},
      {{"cluster", in, "-o", out, "--clusters", "1"}, "--clusters K must be between 2 and 65536"},
      {{"cluster", in, "-o", out, "--clusters", "16", "--init", "best"}, "--init must be"},
      {{"cluster", in, "-o", out, "--clusters", "16", "--threads", "0"}, "--threads must be between 1 and 256"},
  };
  for (const auto& c : cases) {
    CliResult r = RunEdgeopt(c.args);
    EXPECT_FALSE(r.signaled) << Describe(r);
    EXPECT_EQ(r.exit_code, 2) << Describe(r);
    EXPECT_NE(r.err.find(c.message), std::string::npos) << Describe(r);
    EXPECT_FALSE(std::filesystem::exists(out)) << Describe(r);
  }
  // A missing output folder is an error (exit 1) that names it.
  CliResult r = RunEdgeopt({"cluster", in, "-o", dir + "/no/such/dir/out.tflite", "--clusters", "4"});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << Describe(r);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

// The example model end to end, with --json: sparsity and distinct values per layer are
// reported, and the written files match TFLite 2.9.
TEST(PruneClusterCli, JsonReportsOnTheExampleModel) {
  const std::string dir = testing::MakeTempDir("prune_json");
  const std::string in = testing::MakeExampleModel(dir);
  const std::string pruned = dir + "/p.tflite", clustered = dir + "/c.tflite";
  CliResult r = RunEdgeopt({"prune", in, "-o", pruned, "--sparsity", "0.6", "--json", "-", "--num-samples", "2"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  auto j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j["layers"].empty()) << r.out;
  for (const auto& l : j["layers"]) EXPECT_GE(l["sparsity"].get<double>(), 0.55) << l.dump();
  EXPECT_TRUE(j["file_size"].contains("gzip")) << r.out;
  EXPECT_EQ(j["agreement"]["samples"].get<int>(), 2) << r.out;
  r = RunEdgeopt({"cluster", in, "-o", clustered, "--clusters", "4", "--json", "-", "--num-samples", "2"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j["layers"].empty()) << r.out;
  for (const auto& l : j["layers"]) EXPECT_LE(l["distinct_after"].get<int64_t>(), 4) << l.dump();
  if (testing::Tflite29Available()) {
    ExpectMatchesTflite29(pruned);
    ExpectMatchesTflite29(clustered);
  } else {
    std::printf("TFLite 2.9 library absent: the written files are not run in the reference here\n");
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace edgeopt
