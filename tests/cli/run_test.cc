// edgeopt run: the MobileNetV2 acceptance check against TFLite 2.9, output files, summaries for
// other output kinds, what is said on stderr, and bad input (clear error, exit code, no files).
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <sstream>

#include "cli/cli_test_util.h"
#include "eval/inputs.h"
#include "eval/npy.h"
#include "format/reader.h"
#include "support/conformance.h"

namespace edgeopt::testing {
namespace {

// Indices of the top-k table printed by `edgeopt run` (rows "  rank  index  score ...").
std::vector<int> PrintedTopK(const std::string& out) {
  std::vector<int> idx;
  std::istringstream in(out);
  std::string line;
  bool in_table = false;
  static const std::regex kRow(R"(^\s+(\d+)\s+(\d+)\s+\S+)");
  while (std::getline(in, line)) {
    if (line.find(": top ") != std::string::npos) {
      in_table = true;
      continue;
    }
    if (!in_table) continue;
    std::smatch m;
    if (line.find("rank") != std::string::npos) continue;
    if (!std::regex_search(line, m, kRow)) break;
    idx.push_back(std::stoi(m[2]));
  }
  return idx;
}

std::string Image(const std::string& name) { return SharedDataDir() + "/images/" + name; }
std::string Labels(const std::string& name) { return SharedDataDir() + "/labels/" + name; }

TEST(CliRun, MobileNetV2QuantOnCatMatchesTflite29Top5) {
  const std::string model = SharedModel("mobilenet_v2_1.0_224_quant.tflite");
  if (model.empty()) GTEST_SKIP() << "shared models absent";
  CliResult r = RunEdgeopt({"run", model, "--input", Image("cat.bmp"), "--labels", Labels("imagenet_labels.txt")});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_TRUE(r.err.empty()) << r.err;  // an image for a uint8 input needs no note, labels match

  // The first row names an Egyptian cat or a tabby.
  const size_t header = r.out.find("rank");
  ASSERT_NE(header, std::string::npos) << r.out;
  const size_t row_begin = r.out.find('\n', header) + 1;
  const std::string first_row = r.out.substr(row_begin, r.out.find('\n', row_begin) - row_begin);
  EXPECT_TRUE(first_row.find("Egyptian cat") != std::string::npos || first_row.find("tabby") != std::string::npos)
      << r.out;
  const std::vector<int> ours = PrintedTopK(r.out);
  ASSERT_EQ(ours.size(), 5u) << r.out;

  // The reference runtime on the same input bytes.
  if (!Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  auto graph = ReadModelFile(model);
  ASSERT_TRUE(graph.ok());
  const auto specs = eval::InputSpecsOf(*graph);
  ASSERT_EQ(specs.size(), 1u);
  auto in = eval::LoadInputFile(Image("cat.bmp"), specs[0], {});
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  TensorValue v;
  v.name = specs[0].name;
  v.type = in->tensor.type;
  v.shape = in->tensor.shape;
  v.data = in->tensor.data;
  auto ref = RunTflite29(ReadFileBytes(model), {v});
  ASSERT_TRUE(ref.ok()) << ref.status().ToString();
  ASSERT_EQ(ref->size(), 1u);
  eval::HostTensor h;
  h.type = (*ref)[0].type;
  h.shape = (*ref)[0].shape;
  h.data = (*ref)[0].data;
  h.scale = (*ref)[0].scale;
  h.zero_point = (*ref)[0].zero_point;
  std::vector<int> theirs;
  for (const auto& t : eval::TopKOf(h, 5)) theirs.push_back(t.index);
  EXPECT_EQ(ours, theirs) << r.out;
}

TEST(CliRun, WritesEveryOutputAsNpy) {
  const std::string model = SharedModel("ssd_mobilenet_v1_coco_quant.tflite");
  if (model.empty()) GTEST_SKIP() << "shared models absent";
  const std::string dir = MakeTempDir("run_outputs") + "/out";
  CliResult r = RunEdgeopt({"run", model, "--input", Image("cats_and_dogs.jpg"), "--output-dir", dir});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  auto graph = ReadModelFile(model);
  ASSERT_TRUE(graph.ok());
  const size_t n = graph->main().outputs.size();
  ASSERT_EQ(DirEntries(dir).size(), n) << r.out;
  for (size_t i = 0; i < n; ++i) {
    auto t = eval::ReadNpy(dir + "/output_" + std::to_string(i) + ".npy");
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_EQ(t->type, DType::kFloat32);
    EXPECT_NE(r.out.find("wrote   " + dir + "/output_" + std::to_string(i) + ".npy"), std::string::npos) << r.out;
  }
  // Several outputs: a summary per output, not a top-k.
  EXPECT_NE(r.out.find("outputs\n"), std::string::npos) << r.out;
  for (const char* col : {"name", "dtype", "shape", "min", "max", "mean"}) EXPECT_NE(r.out.find(col), std::string::npos) << col;
  EXPECT_EQ(r.out.find(": top "), std::string::npos) << r.out;
  std::filesystem::remove_all(std::filesystem::path(dir).parent_path());
}

TEST(CliRun, QuantizedNonClassifierOutputsAreDequantized) {
  const std::string model = SharedModel("hello_world_int8.tflite");
  if (model.empty()) GTEST_SKIP() << "shared models absent";
  CliResult r = RunEdgeopt({"run", model, "--seed", "3"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("int8 (scale"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dequantized"), std::string::npos) << r.out;
  // No input given: random values, said on stderr.
  EXPECT_NE(r.err.find("edgeopt run: no --input for"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("seed 3"), std::string::npos) << r.err;
}

TEST(CliRun, FloatImageInputSaysWhichNormalizationItUsed) {
  const std::string model = SharedModel("mobilenet_v1_0.25_224_float.tflite");
  if (model.empty()) GTEST_SKIP() << "shared models absent";
  CliResult r = RunEdgeopt({"run", model, "-i", Image("cat.bmp"), "--labels", Labels("imagenet_labels.txt"), "--top-k", "3"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.err.find("no --mean/--std or --range given; pixels mapped to range [-1,1] (default)"), std::string::npos)
      << r.err;
  EXPECT_EQ(PrintedTopK(r.out).size(), 3u) << r.out;
  CliResult given = RunEdgeopt({"run", model, "-i", Image("cat.bmp"), "--mean", "127.5", "--std", "127.5"});
  ASSERT_EQ(given.exit_code, 0) << Describe(given);
  EXPECT_TRUE(given.err.empty()) << given.err;
  EXPECT_NE(given.out.find("mean 127.5 std 127.5"), std::string::npos) << given.out;
  // The same preprocessing written two ways gives the same answer.
  CliResult range = RunEdgeopt({"run", model, "-i", Image("cat.bmp"), "--range", "-1,1"});
  ASSERT_EQ(range.exit_code, 0) << Describe(range);
  EXPECT_EQ(PrintedTopK(range.out), PrintedTopK(given.out));
}

TEST(CliRun, WavFeedsAWaveformInput) {
  const std::string model = SharedModel("yamnet_dynamic_range.tflite");
  if (model.empty()) GTEST_SKIP() << "shared models absent";
  CliResult r = RunEdgeopt({"run", model, "--input", SharedDataDir() + "/audio/speech.wav", "--labels",
                            Labels("yamnet_521_labels.txt"), "--top-k", "1"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.err.find("used the first 15600"), std::string::npos) << r.err;  // truncated, and said so
  EXPECT_NE(r.out.find("Speech"), std::string::npos) << r.out;
}

TEST(CliRun, LabelCountMismatchIsSaid) {
  const std::string model = SharedModel("mobilenet_v2_1.0_224_quant.tflite");
  if (model.empty()) GTEST_SKIP() << "shared models absent";
  const std::string dir = MakeTempDir("run_labels");
  {
    std::ofstream f(dir + "/three.txt");
    f << "a\nb\nc\n";
  }
  CliResult r = RunEdgeopt({"run", model, "--labels", dir + "/three.txt"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.err.find("has 3 lines but the output has 1001 classes"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("(no label: beyond the file)"), std::string::npos) << r.out;
  std::filesystem::remove_all(dir);
}

class CliRunBadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("run_bad");
    model_ = MakeExampleModel(dir_);  // input 'image' float32[1,32,32,3]
    out_ = dir_ + "/out";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Runs with --output-dir and checks: exit code, "edgeopt run: error:" + `message` on stderr,
  // nothing on stdout, and no output folder.
  void ExpectFailure(std::vector<std::string> args, int exit_code, const std::string& message) {
    SCOPED_TRACE(message);
    args.insert(args.begin(), "run");
    args.push_back("--output-dir");
    args.push_back(out_);
    CliResult r = RunEdgeopt(args);
    EXPECT_FALSE(r.signaled) << Describe(r);
    EXPECT_EQ(r.exit_code, exit_code) << Describe(r);
    EXPECT_EQ(r.err.rfind("edgeopt run: error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_FALSE(std::filesystem::exists(out_)) << "a failed run left " << out_;
  }
  std::string dir_, model_, out_;
};

TEST_F(CliRunBadInput, WrongShapeNpyNamesInputAndShapes) {
  eval::HostTensor t;
  t.shape = {1, 10};
  t.data.resize(40);
  ASSERT_TRUE(eval::WriteNpy(dir_ + "/x.npy", t).ok());
  ExpectFailure({model_, "--input", "image=" + dir_ + "/x.npy"}, 1,
                "input 'image' float32[1,32,32,3] expects shape [1,32,32,3], but '" + dir_ + "/x.npy' holds shape [1,10]");
}

TEST_F(CliRunBadInput, WrongDtypeNpy) {
  // Integer or bool data for a float input is converted (an image saved as uint8); float data for
  // an integer input (token ids) is refused.
  GraphBuilder b(1);
  const auto ids = b.Input("ids", DType::kInt32, {1, 4});
  const auto y = b.Tensor("y", DType::kInt32, {1, 4});
  b.Op(tflite::BuiltinOperator_ADD, {ids, ids}, {y}, tflite::AddOptionsT());
  b.Output(y);
  const std::string path = dir_ + "/ids.tflite";
  WriteModelOrFail(b.Finish(), path);
  eval::HostTensor t;
  t.type = DType::kFloat32;
  t.shape = {1, 4};
  t.data.resize(16);
  ASSERT_TRUE(eval::WriteNpy(dir_ + "/f.npy", t).ok());
  ExpectFailure({path, "--input", dir_ + "/f.npy"}, 1,
                "input 'ids' int32[1,4] expects int32 data, but '" + dir_ + "/f.npy' holds float32");
}

TEST_F(CliRunBadInput, MissingFilesAndUnknownNames) {
  ExpectFailure({model_, "--input", dir_ + "/none.jpg"}, 1, "'" + dir_ + "/none.jpg' for input 'image' float32[1,32,32,3]: no such file");
  ExpectFailure({model_, "--input", "photo=" + dir_ + "/x.jpg"}, 2, "the model has no input named 'photo' (inputs: 'image')");
  ExpectFailure({model_, "-i", "a.npy", "-i", "b.npy"}, 2, "more inputs given than the model has");
  ExpectFailure({dir_ + "/none.tflite"}, 1, "no such file");
  ExpectFailure({model_, "--labels", dir_ + "/none.txt"}, 1, "labels file '" + dir_ + "/none.txt': no such file");
}

TEST_F(CliRunBadInput, ImageThatIsNotAnImage) {
  {
    std::ofstream f(dir_ + "/fake.png");
    f << "not a png";
  }
  ExpectFailure({model_, "--input", dir_ + "/fake.png"}, 1, "cannot decode image");
}

TEST_F(CliRunBadInput, ModelWithAnOpWeLackNamesTheOp) {
  GraphBuilder b(1);
  const auto x = b.Input("x", DType::kFloat32, {1, 4});
  const auto y = b.Tensor("y", DType::kFloat32, {1, 4});
  b.CustomOp("NoSuchOp", {x}, {y});
  b.Output(y);
  const std::string path = dir_ + "/custom.tflite";
  WriteModelOrFail(b.Finish(), path);
  ExpectFailure({path}, 1, "NoSuchOp");
  CliResult r = RunEdgeopt({"run", path});
  EXPECT_NE(r.err.find("op 0"), std::string::npos) << r.err;
}

TEST_F(CliRunBadInput, BadFlags) {
  ExpectFailure({model_, "--top-k", "0"}, 2, "--top-k must be at least 1");
  ExpectFailure({model_, "--threads", "0"}, 2, "--threads must be at least 1");
  ExpectFailure({model_, "--range", "1,0"}, 2, "--range wants LO,HI with LO < HI");
  ExpectFailure({model_, "--mean", "1"}, 2, "--mean requires --std");
  ExpectFailure({model_, "--mean", "1", "--std", "0"}, 2, "--std must not be 0");
  ExpectFailure({model_, "--range", "0,1", "--mean", "1", "--std", "1"}, 2, "excludes");
  ExpectFailure({model_, "--frobnicate"}, 2, "--frobnicate");
  ExpectFailure({model_, "--input", dir_ + "/x.jpg", "--mean", "1,2", "--std", "1"}, 1, "no such file");
}

TEST_F(CliRunBadInput, OutputDirThatIsAFile) {
  {
    std::ofstream f(out_);
    f << "x";
  }
  CliResult r = RunEdgeopt({"run", model_, "--output-dir", out_});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_NE(r.err.find("exists and is not a directory"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

}  // namespace
}  // namespace edgeopt::testing
