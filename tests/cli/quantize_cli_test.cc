// edgeopt quantize / dequantize, end to end: every mode writes a model the runtime loads, the
// report says what changed, `--io int8 --integer-only` gives a model inspect calls "full integer
// int8 (int8 I/O)", and bad input (an already quantized model, calibration data of the wrong
// shape, an empty or unreadable calibration folder) fails with a clear message, a non-zero exit
// and no output file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"
#include "eval/npy.h"
#include "format/reader.h"

namespace edgeopt::testing {
namespace {

using Json = nlohmann::json;

// Writes `n` random [1,32,32,3] float samples (the example model's input) as .npy files.
std::string MakeNpyFolder(const std::string& dir, int n, std::vector<int32_t> shape = {1, 32, 32, 3}) {
  const std::string folder = dir + "/calib";
  std::filesystem::create_directories(folder);
  for (int s = 0; s < n; ++s) {
    eval::HostTensor t;
    t.type = DType::kFloat32;
    t.shape = shape;
    std::vector<float> v(static_cast<size_t>(t.num_elements()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(((i * 7919 + s * 104729) % 2001) / 1000.0 - 1.0);
    t.data.resize(v.size() * 4);
    std::memcpy(t.data.data(), v.data(), t.data.size());
    EXPECT_TRUE(eval::WriteNpy(folder + "/s" + std::to_string(s) + ".npy", t).ok());
  }
  return folder;
}

TEST(CliQuantize, EveryModeWritesAModelAndReportsIt) {
  const std::string dir = MakeTempDir("quantize_modes");
  const std::string in = MakeExampleModel(dir);
  const std::string data = MakeNpyFolder(dir, 6);
  const struct {
    const char* mode;
    const char* scheme;
    double max_ratio;
  } modes[] = {{"float16", "float16_weights", 0.9}, {"dynamic", "dynamic_range", 1.0},
               {"int8", "full_integer_int8", 1.2}, {"int16x8", "int16x8", 1.3}};
  for (const auto& m : modes) {
    SCOPED_TRACE(m.mode);
    const std::string out = dir + "/" + std::string(m.mode) + ".tflite";
    std::vector<std::string> args = {"quantize", in, "-o", out, "--mode", m.mode, "--json", "--calibration", data,
                                     "--samples", "3", "--min-elements", "16"};
    CliResult r = RunEdgeopt(args);
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    Json j = Json::parse(r.out);
    EXPECT_EQ(j["mode"], m.mode);
    EXPECT_EQ(j["scheme"], m.scheme) << j.dump(2);
    EXPECT_LE(j["file_size"]["ratio"].get<double>(), m.max_ratio);
    EXPECT_EQ(j["agreement"]["samples"].get<int>(), std::string(m.mode).find("int") == 0 ? 3 : 6);
    EXPECT_TRUE(j["agreement"]["outputs"][0].contains("top1_agreement"));
    if (std::string(m.mode).find("int") == 0) {
      EXPECT_EQ(j["calibration"]["samples"].get<int>(), 3);
      EXPECT_FALSE(j["ranges"].empty());
    }
    EXPECT_TRUE(ReadModelFile(out).ok());
  }
  // Text report.
  CliResult r = RunEdgeopt({"quantize", in, "-o", dir + "/t.tflite", "--mode", "int8", "--calibration", data,
                            "--samples", "2", "--ranges", "all"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  for (const char* s : {"edgeopt quantize: wrote", "file size", "weights after", "vs float", "SNR", "top-1 agrees",
                        "held-out samples", "Float islands (0)", "Conversion ops (2)", "Calibration ranges"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
}

// A float16-weight model (as MediaPipe ships them) is read as float32 and quantized from there,
// saying so; quantizing it to float16 again is refused like an integer model.
TEST(CliQuantize, Float16WeightsAreReadAsFloat32) {
  const std::string dir = MakeTempDir("quantize_fp16_in");
  const std::string in = MakeExampleModel(dir);
  const std::string data = MakeNpyFolder(dir, 6);
  const std::string fp16 = dir + "/fp16.tflite";
  ASSERT_EQ(RunEdgeopt({"quantize", in, "-o", fp16, "--mode", "float16", "--min-elements", "16"}).exit_code, 0);
  const std::string out = dir + "/int8.tflite";
  CliResult r = RunEdgeopt({"quantize", fp16, "-o", out, "--mode", "int8", "--calibration", data, "--samples", "3"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("float16 weights, read as float32"), std::string::npos) << r.out;
  CliResult j = RunEdgeopt({"quantize", fp16, "-o", dir + "/dyn.tflite", "--mode", "dynamic", "--json"});
  ASSERT_EQ(j.exit_code, 0) << Describe(j);
  EXPECT_TRUE(Json::parse(j.out)["float16_weights_read_as_float32"].get<bool>());
  CliResult i = RunEdgeopt({"inspect", out});
  EXPECT_NE(i.out.find("full integer int8"), std::string::npos) << i.out;
  const std::string again = dir + "/again.tflite";
  CliResult f = RunEdgeopt({"quantize", fp16, "-o", again, "--mode", "float16"});
  EXPECT_EQ(f.exit_code, 1) << Describe(f);
  EXPECT_NE(f.err.find("already quantized"), std::string::npos) << f.err;
  EXPECT_FALSE(std::filesystem::exists(again));
}

TEST(CliQuantize, Int8IoIntegerOnlyIsFullIntegerForInspect) {
  const std::string dir = MakeTempDir("quantize_int8io");
  const std::string in = MakeExampleModel(dir);
  const std::string data = MakeNpyFolder(dir, 3);
  const std::string out = dir + "/int8io.tflite";
  CliResult r = RunEdgeopt({"quantize", in, "-o", out, "--mode", "int8", "--calibration", data, "--io", "int8",
                            "--integer-only"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  CliResult i = RunEdgeopt({"inspect", out});
  ASSERT_EQ(i.exit_code, 0) << Describe(i);
  EXPECT_NE(i.out.find("full integer int8 (int8 I/O)"), std::string::npos) << i.out;
  // Not one float op or tensor: every op's precision is int8 and no op reads or writes float32.
  CliResult ij = RunEdgeopt({"inspect", out, "--json", "--ops", "all"});
  ASSERT_EQ(ij.exit_code, 0) << Describe(ij);
  const Json model = Json::parse(ij.out);
  EXPECT_EQ(model["quantization"]["ops_by_precision"].size(), 1u) << model["quantization"].dump();
  EXPECT_TRUE(model["quantization"]["ops_by_precision"].contains("int8")) << model["quantization"].dump();
  int ops = 0;
  for (const auto& op : model["subgraphs"][0]["ops"]) {
    ++ops;
    for (const char* side : {"inputs", "outputs"})
      for (const auto& t : op[side]) EXPECT_NE(t["dtype"], "float32") << op["op"] << " " << t["name"];
  }
  EXPECT_GT(ops, 0);
  for (const char* side : {"inputs", "outputs"})
    for (const auto& t : model["subgraphs"][0][side]) EXPECT_EQ(t["dtype"], "int8") << t["name"];
  // uint8 I/O too.
  r = RunEdgeopt({"quantize", in, "-o", dir + "/u8.tflite", "--mode", "int8", "--calibration", data, "--io", "uint8"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  i = RunEdgeopt({"inspect", dir + "/u8.tflite"});
  EXPECT_NE(i.out.find("uint8 I/O"), std::string::npos) << i.out;
}

TEST(CliQuantize, IntegerOnlyListsOpsThatCannotBeQuantized) {
  const std::string dir = MakeTempDir("quantize_intonly");
  GraphBuilder b(3);
  const auto x = b.Input("x", DType::kFloat32, {1, 8});
  const auto w = b.ConstRandom("w", DType::kFloat32, {8, 8});
  const auto bias = b.ConstRandom("b", DType::kFloat32, {8});
  const auto y = b.Tensor("fc", DType::kFloat32, {1, 8});
  b.Op(tflite::BuiltinOperator_FULLY_CONNECTED, {x, w, bias}, {y}, tflite::FullyConnectedOptionsT());
  const auto z = b.Tensor("exp", DType::kFloat32, {1, 8});
  b.Op(tflite::BuiltinOperator_EXP, {y}, {z}, tflite::ExpOptionsT());
  b.Output(z);
  const std::string in = dir + "/exp.tflite";
  WriteModelOrFail(b.Finish(), in);
  const std::string data = MakeNpyFolder(dir, 3, {1, 8});
  const std::string out = dir + "/out.tflite";
  CliResult r = RunEdgeopt({"quantize", in, "-o", out, "--mode", "int8", "--calibration", data, "--integer-only"});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_NE(r.err.find("--integer-only"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("op 1 (EXP)"), std::string::npos) << r.err;
  EXPECT_FALSE(FileExists(out));
  // Without it, EXP stays float and the report names the boundary.
  r = RunEdgeopt({"quantize", in, "-o", out, "--mode", "int8", "--calibration", data});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("Float islands (1)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("op 1 (EXP)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("DEQUANTIZE fc"), std::string::npos) << r.out;
}

TEST(CliQuantize, BadInputFailsClearlyAndLeavesNoFile) {
  const std::string dir = MakeTempDir("quantize_bad");
  const std::string in = MakeExampleModel(dir);
  const std::string good = MakeNpyFolder(dir, 2);
  const std::string out = dir + "/out.tflite";
  struct Case {
    std::string what;
    std::vector<std::string> args;
    int exit_code;
    std::string message;
  };
  // Wrong shape: [1,16,16,3] samples for a [1,32,32,3] input.
  const std::string wrong = dir + "/wrong";
  std::filesystem::create_directories(wrong);
  std::filesystem::rename(MakeNpyFolder(dir + "/w", 2, {1, 16, 16, 3}), wrong + "/x");
  const std::string empty = dir + "/empty";
  std::filesystem::create_directories(empty);
  const std::string corrupt = dir + "/corrupt.npy";
  std::ofstream(corrupt) << "not a numpy file";
  // An already quantized model.
  const std::string quantized = dir + "/q.tflite";
  ASSERT_EQ(RunEdgeopt({"quantize", in, "-o", quantized, "--mode", "int8", "--calibration", good}).exit_code, 0);
  const std::vector<Case> cases = {
      {"already quantized", {"quantize", quantized, "-o", out, "--mode", "int8", "--calibration", good}, 1,
       "edgeopt dequantize"},
      {"wrong shape", {"quantize", in, "-o", out, "--mode", "int8", "--calibration", wrong + "/x/s0.npy"}, 1,
       "[1,16,16,3]"},
      {"wrong shape folder", {"quantize", in, "-o", out, "--mode", "int8", "--calibration", wrong + "/x"}, 1,
       "needs [1,32,32,3]"},
      {"empty folder", {"quantize", in, "-o", out, "--mode", "int8", "--calibration", empty}, 1,
       "--calibration: folder"},
      {"missing folder", {"quantize", in, "-o", out, "--mode", "int8", "--calibration", dir + "/nope"}, 1,
       "does not exist"},
      {"unreadable file", {"quantize", in, "-o", out, "--mode", "int8", "--calibration", corrupt}, 1, "corrupt.npy"},
      {"no calibration", {"quantize", in, "-o", out, "--mode", "int8"}, 2, "needs representative data"},
      {"bad mode", {"quantize", in, "-o", out, "--mode", "int4"}, 2, "--mode must be"},
      {"io for dynamic", {"quantize", in, "-o", out, "--mode", "dynamic", "--io", "int8"}, 2, "--io"},
      {"bad calibrator", {"quantize", in, "-o", out, "--mode", "int8", "--calibration", good, "--calibrator", "x"}, 2,
       "--calibrator"},
      {"bad regex", {"quantize", in, "-o", out, "--mode", "int8", "--calibration", good, "--skip-tensor", "("}, 1,
       "regular expression"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    CliResult r = RunEdgeopt(c.args);
    EXPECT_EQ(r.exit_code, c.exit_code) << Describe(r);
    EXPECT_FALSE(r.signaled);
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_FALSE(FileExists(out)) << "a failed run left " << out;
  }
  for (const auto& name : DirEntries(dir)) EXPECT_EQ(name.find(".tmp"), std::string::npos) << name;
}

TEST(CliDequantize, QuantizedModelBecomesFloat) {
  const std::string dir = MakeTempDir("dequantize_cli");
  const std::string in = MakeExampleModel(dir);
  const std::string data = MakeNpyFolder(dir, 2);
  const std::string q = dir + "/q.tflite";
  ASSERT_EQ(RunEdgeopt({"quantize", in, "-o", q, "--mode", "int8", "--calibration", data, "--io", "int8"}).exit_code, 0);
  const std::string f = dir + "/f.tflite";
  CliResult r = RunEdgeopt({"dequantize", q, "-o", f});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("full integer int8 (int8 I/O) -> float32"), std::string::npos) << r.out;
  CliResult i = RunEdgeopt({"inspect", f, "--json"});
  ASSERT_EQ(i.exit_code, 0);
  EXPECT_EQ(Json::parse(i.out)["quantization"]["scheme"], "float32");
  // And it can be quantized again.
  r = RunEdgeopt({"quantize", f, "-o", dir + "/again.tflite", "--mode", "float16"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  // Errors.
  r = RunEdgeopt({"dequantize", dir + "/missing.tflite", "-o", dir + "/x.tflite"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_FALSE(FileExists(dir + "/x.tflite"));
}

}  // namespace
}  // namespace edgeopt::testing
