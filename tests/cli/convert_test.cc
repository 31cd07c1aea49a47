// edgeopt convert, end to end: round trips preserve the model (checked field by field and, when
// the reference TFLite 2.9 library is present, by running both), --strip-unused/--dedupe shrink
// it and --verify accepts the result, and the input is never overwritten.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"
#include "format/reader.h"
#include "format/writer.h"
#include "graph/builder.h"
#include "graph/compare.h"
#include "support/tflite_oracle.h"

namespace edgeopt::testing {
namespace {

using Json = nlohmann::json;

size_t TotalTensors(const Graph& g) {
  size_t n = 0;
  for (const auto& sg : g.subgraphs) n += sg.tensors.size();
  return n;
}

TEST(CliConvert, RoundTripPreservesTheModel) {
  const std::string dir = MakeTempDir("convert_roundtrip");
  const std::string in = MakeExampleModel(dir);
  const std::string out = dir + "/copy.tflite";
  CliResult r = RunEdgeopt({"convert", in, "-o", out});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("edgeopt convert: wrote " + out), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tensors        17 -> 17"), std::string::npos) << r.out;
  auto a = ReadModelFile(in);
  auto b = ReadModelFile(out);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status().ToString() << b.status().ToString();
  auto diffs = DiffGraphs(*a, *b);  // includes the bytes of every constant tensor
  for (const auto& d : diffs) ADD_FAILURE() << d;
  EXPECT_EQ(ConstantBytes(*a), ConstantBytes(*b));
}

TEST(CliConvert, VerifyOnEveryRealModel) {
  EDGEOPT_REQUIRE_SHARED_MODELS();
  const std::string dir = MakeTempDir("convert_real");
  for (const std::string& model : AllSharedModels()) {
    SCOPED_TRACE(model);
    const std::string out = dir + "/" + Basename(model);
    CliResult r = RunEdgeopt({"convert", model, "-o", out, "--verify"});
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    EXPECT_NE(r.out.find("verify         ok (output re-read; identical to the input field by field)"), std::string::npos)
        << r.out;
    auto a = ReadModelFile(model);
    auto b = ReadModelFile(out);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_TRUE(DiffGraphs(*a, *b).empty());
    // Same weights byte for byte.
    EXPECT_EQ(ConstantBytes(*a), ConstantBytes(*b));
    std::filesystem::remove(out);
  }
}

TEST(CliConvert, ConvertedModelRunsIdenticallyInReferenceRuntime) {
  EDGEOPT_REQUIRE_SHARED_MODELS();
  if (!TfliteOracle::LibraryPresent()) GTEST_SKIP() << TfliteOracle::MissingReason();
  const std::string dir = MakeTempDir("convert_oracle");
  for (const char* file : {"mobilenet_v1_0.25_224_float.tflite", "blazeface_short_range_fp16.tflite"}) {
    const std::string model = SharedModel(file);
    if (model.empty()) continue;
    SCOPED_TRACE(file);
    const std::string out = dir + "/" + file;
    CliResult r = RunEdgeopt({"convert", model, "-o", out, "--strip-unused", "--dedupe", "--verify"});
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    auto session = OracleSession::Create(model);
    ASSERT_TRUE(session.ok()) << session.status().ToString();
    std::vector<OracleTensor> inputs = (*session)->inputs();
    for (auto& t : inputs) {
      t.data.resize(t.NumElements() * OracleTypeSize(t.type));
      for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = static_cast<uint8_t>((i * 37) % 61);  // small floats
      if (t.type == kOracleFloat32) {
        auto* f = reinterpret_cast<float*>(t.data.data());
        for (size_t i = 0; i < t.NumElements(); ++i) f[i] = static_cast<float>(i % 255) / 127.5f - 1.0f;
      }
    }
    auto expected = RunOnce(model, inputs);
    auto got = RunOnce(out, inputs);
    ASSERT_TRUE(expected.ok()) << expected.status().ToString();
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_EQ(expected->size(), got->size());
    for (size_t i = 0; i < expected->size(); ++i) EXPECT_EQ((*expected)[i].data, (*got)[i].data) << "output " << i;
  }
  std::filesystem::remove_all(dir);
}

TEST(CliConvert, StripUnusedAndDedupeShrinkAndVerify) {
  const std::string dir = MakeTempDir("convert_strip");
  const std::string in = dir + "/redundant.tflite";
  WriteModelOrFail(MakeRedundantModel(), in);
  const std::string out = dir + "/small.tflite";
  CliResult r = RunEdgeopt({"convert", in, "-o", out, "--strip-unused", "--dedupe", "--verify"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("tensors        6 -> 5 (-1), 1 unused removed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 unused removed, 1 duplicates merged"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("verify         ok (output re-read; same ops, wiring, tensors and constant bytes"),
            std::string::npos)
      << r.out;
  auto a = ReadModelFile(in);
  auto b = ReadModelFile(out);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(TotalTensors(*b), TotalTensors(*a) - 1);
  EXPECT_EQ(ConstantBytes(*b), ConstantBytes(*a) - 64 * 4 - 4 * 4);
  EXPECT_TRUE(DiffGraphsSemantic(*a, *b).empty());
  EXPECT_LT(std::filesystem::file_size(out), std::filesystem::file_size(in));

  CliResult j = RunEdgeopt({"convert", in, "-o", dir + "/small2.tflite", "--strip-unused", "--dedupe", "--json"});
  ASSERT_EQ(j.exit_code, 0) << Describe(j);
  Json doc = Json::parse(j.out);
  EXPECT_EQ(doc["unused_tensors_removed"], 1);
  EXPECT_EQ(doc["unused_buffers_removed"], 1);
  EXPECT_EQ(doc["duplicate_buffers_merged"], 1);
  EXPECT_EQ(doc["tensors"]["before"], 6);
  EXPECT_EQ(doc["tensors"]["after"], 5);
  EXPECT_EQ(doc["file_size"]["before"], std::filesystem::file_size(in));
  EXPECT_EQ(doc["file_size"]["after"], std::filesystem::file_size(dir + "/small2.tflite"));
}

TEST(CliConvert, RefusesToOverwriteTheInput) {
  const std::string dir = MakeTempDir("convert_same");
  const std::string in = MakeExampleModel(dir);
  const auto before = ReadFileBytes(in);
  CliResult r = RunEdgeopt({"convert", in, "-o", in});
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  EXPECT_NE(r.err.find("edgeopt convert: error: refusing to overwrite the input model"), std::string::npos) << r.err;
  // The same file under another name.
  const std::string link = dir + "/link.tflite";
  ASSERT_EQ(::symlink(in.c_str(), link.c_str()), 0);
  CliResult l = RunEdgeopt({"convert", in, "-o", link});
  EXPECT_EQ(l.exit_code, 2) << Describe(l);
  EXPECT_NE(l.err.find("refusing to overwrite the input model"), std::string::npos) << l.err;
  EXPECT_EQ(ReadFileBytes(in), before);
  EXPECT_EQ(DirEntries(dir).size(), 2u);  // the model and the link, no temporary files
}

TEST(CliConvert, UnwritableOutputLeavesNothingBehind) {
  const std::string dir = MakeTempDir("convert_unwritable");
  const std::string in = MakeExampleModel(dir);

  CliResult missing = RunEdgeopt({"convert", in, "-o", dir + "/no/such/dir/out.tflite"});
  EXPECT_EQ(missing.exit_code, 1) << Describe(missing);
  EXPECT_NE(missing.err.find("directory '" + dir + "/no/such/dir' does not exist"), std::string::npos) << missing.err;

  CliResult is_dir = RunEdgeopt({"convert", in, "-o", dir});
  EXPECT_EQ(is_dir.exit_code, 1) << Describe(is_dir);
  EXPECT_NE(is_dir.err.find("is a directory"), std::string::npos) << is_dir.err;

  // /proc refuses new files even for root.
  CliResult proc = RunEdgeopt({"convert", in, "-o", "/proc/edgeopt_test_out.tflite"});
  EXPECT_EQ(proc.exit_code, 1) << Describe(proc);
  EXPECT_NE(proc.err.find("edgeopt convert: error: cannot write '/proc/edgeopt_test_out.tflite'"), std::string::npos)
      << proc.err;

  if (::geteuid() != 0) {  // root ignores directory permissions
    const std::string ro = dir + "/readonly";
    std::filesystem::create_directory(ro);
    ::chmod(ro.c_str(), 0555);
    CliResult r = RunEdgeopt({"convert", in, "-o", ro + "/out.tflite"});
    EXPECT_EQ(r.exit_code, 1) << Describe(r);
    EXPECT_NE(r.err.find("is not writable"), std::string::npos) << r.err;
    EXPECT_TRUE(DirEntries(ro).empty());
    ::chmod(ro.c_str(), 0755);
  }
  EXPECT_EQ(DirEntries(dir).size(), std::filesystem::exists(dir + "/readonly") ? 2u : 1u);
}

// A StableHLO-era op keeps its builtin_options_2 through convert (and its cleanups): a
// STABLEHLO_COMPOSITE whose decomposition subgraph is x * x.
TEST(CliConvert, KeepsStablehloCompositeOptions) {
  GraphBuilder b;
  const int32_t x = b.Input("x", DType::kFloat32, {3});
  const int32_t y = b.Tensor("y", DType::kFloat32, {3});
  tflite::StableHLOCompositeOptionsT co;
  co.name = "odml.square";
  co.decomposition_subgraph_index = 1;
  co.composite_attributes = {0x00, 0x00, 0x24, 0x01};  // opaque to the writer
  co.version = 2;
  tflite::BuiltinOptions2Union u;
  u.Set(co);
  b.AddOp2(tflite::BuiltinOperator_STABLEHLO_COMPOSITE, {x}, {y}, std::move(u));
  b.Output(y);
  b.NewSubgraph("decomposition");
  const int32_t dx = b.Input("x", DType::kFloat32, {3});
  b.Const<float>("unused", DType::kFloat32, {2}, {1.0f, 2.0f});
  const int32_t sq = b.Tensor("sq", DType::kFloat32, {3});
  b.Op(tflite::BuiltinOperator_MUL, {dx, dx}, {sq}, tflite::MulOptionsT{});
  b.Output(sq);
  const std::string dir = MakeTempDir("convert_composite");
  const std::string in = dir + "/composite.tflite";
  ASSERT_TRUE(WriteModelFile(b.Finish(), in).ok());
  for (bool cleanups : {false, true}) {
    SCOPED_TRACE(cleanups ? "with cleanups" : "plain");
    const std::string out = dir + (cleanups ? "/clean.tflite" : "/copy.tflite");
    std::vector<std::string> args = {"convert", in, "-o", out, "--verify"};
    if (cleanups) args.insert(args.end(), {"--strip-unused", "--dedupe"});
    CliResult r = RunEdgeopt(args);
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    auto g = ReadModelFile(out);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    ASSERT_EQ(g->subgraphs.size(), 2u);
    const Operator& op = g->main().ops.at(0);
    EXPECT_EQ(op.code, tflite::BuiltinOperator_STABLEHLO_COMPOSITE);
    const auto* o = op.options2.AsStableHLOCompositeOptions();
    ASSERT_NE(o, nullptr);
    EXPECT_EQ(o->name, co.name);
    EXPECT_EQ(o->decomposition_subgraph_index, 1);
    EXPECT_EQ(o->composite_attributes, co.composite_attributes);
    EXPECT_EQ(o->version, 2);
    if (!cleanups) {
      auto a = ReadModelFile(in);
      ASSERT_TRUE(a.ok());
      EXPECT_TRUE(DiffGraphs(*a, *g).empty());
    }
  }
}

}  // namespace
}  // namespace edgeopt::testing
