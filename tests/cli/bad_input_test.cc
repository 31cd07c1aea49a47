// Bad model files given to every command that reads a model: a clear "edgeopt <cmd>: error:"
// message naming the problem, exit code 1, nothing on stdout, no crash, and no output file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "cli/cli_test_util.h"

namespace edgeopt::testing {
namespace {

void WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

struct BadInput {
  std::string label;
  std::string path;
  std::string message;  // expected part of the error
};

std::vector<BadInput> MakeBadInputs(const std::string& dir) {
  const std::string good = MakeExampleModel(dir);
  const auto bytes = ReadFileBytes(good);
  std::vector<BadInput> cases;
  cases.push_back({"missing file", dir + "/does_not_exist.tflite", "'" + dir + "/does_not_exist.tflite': no such file"});
  std::filesystem::create_directory(dir + "/a_directory.tflite");
  cases.push_back({"directory", dir + "/a_directory.tflite", "is a directory, not a model file"});
  WriteBytes(dir + "/empty.tflite", {});
  cases.push_back({"empty file", dir + "/empty.tflite", "is empty (0 bytes)"});
  std::mt19937 rng(3);
  std::vector<uint8_t> noise(4096);
  for (auto& b : noise) b = static_cast<uint8_t>(rng());
  WriteBytes(dir + "/random.tflite", noise);
  cases.push_back({"random bytes", dir + "/random.tflite", "not a .tflite model (missing the 'TFL3' file identifier)"});
  WriteBytes(dir + "/truncated.tflite", std::vector<uint8_t>(bytes.begin(), bytes.begin() + bytes.size() / 2));
  cases.push_back({"truncated model", dir + "/truncated.tflite", "corrupt or truncated .tflite file"});
  WriteBytes(dir + "/tiny.tflite", {1, 2, 3});
  cases.push_back({"3-byte file", dir + "/tiny.tflite", "file too small to be a .tflite model"});
  std::filesystem::remove(good);
  return cases;
}

TEST(CliBadInput, InspectReportsTheReadersMessage) {
  const std::string dir = MakeTempDir("bad_inspect");
  for (const auto& c : MakeBadInputs(dir)) {
    SCOPED_TRACE(c.label);
    for (bool json : {false, true}) {
      std::vector<std::string> args = {"inspect", c.path};
      if (json) args.push_back("--json");
      CliResult r = RunEdgeopt(args);
      EXPECT_FALSE(r.signaled) << Describe(r);
      EXPECT_EQ(r.exit_code, 1) << Describe(r);
      EXPECT_EQ(r.err.rfind("edgeopt inspect: error: ", 0), 0u) << r.err;
      EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
      EXPECT_TRUE(r.out.empty()) << r.out;
    }
  }
}

TEST(CliBadInput, ConvertReportsTheReadersMessageAndWritesNothing) {
  const std::string dir = MakeTempDir("bad_convert");
  const auto cases = MakeBadInputs(dir);
  const std::string out_dir = dir + "/out";
  std::filesystem::create_directory(out_dir);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.label);
    CliResult r = RunEdgeopt({"convert", c.path, "-o", out_dir + "/out.tflite", "--verify"});
    EXPECT_FALSE(r.signaled) << Describe(r);
    EXPECT_EQ(r.exit_code, 1) << Describe(r);
    EXPECT_EQ(r.err.rfind("edgeopt convert: error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_TRUE(DirEntries(out_dir).empty()) << "a failed convert left a file behind";
  }
}

TEST(CliBadInput, PruneAndClusterReportTheReadersMessageAndWriteNothing) {
  const std::string dir = MakeTempDir("bad_prune");
  const auto cases = MakeBadInputs(dir);
  const std::string out_dir = dir + "/out";
  std::filesystem::create_directory(out_dir);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.label);
    const std::vector<std::vector<std::string>> runs = {
        {"prune", c.path, "-o", out_dir + "/out.tflite", "--sparsity", "0.5"},
        {"cluster", c.path, "-o", out_dir + "/out.tflite", "--clusters", "16"}};
    for (const auto& args : runs) {
      CliResult r = RunEdgeopt(args);
      EXPECT_FALSE(r.signaled) << Describe(r);
      EXPECT_EQ(r.exit_code, 1) << Describe(r);
      EXPECT_EQ(r.err.rfind("edgeopt " + args[0] + ": error: ", 0), 0u) << r.err;
      EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
      EXPECT_TRUE(DirEntries(out_dir).empty()) << "a failed " << args[0] << " left a file behind";
    }
  }
}

TEST(CliBadInput, DamagedModelsNeverCrash) {
  // Truncations at many lengths and random byte flips: every run ends with exit 0 or 1.
  const std::string dir = MakeTempDir("bad_damaged");
  const auto bytes = ReadFileBytes(MakeExampleModel(dir));
  ASSERT_FALSE(bytes.empty());
  std::mt19937 rng(11);
  const std::string path = dir + "/damaged.tflite";
  int failures = 0;
  for (int i = 0; i < 60; ++i) {
    std::vector<uint8_t> b = bytes;
    if (i % 3 == 0) {
      b.resize(rng() % bytes.size());
    } else {
      for (int k = 0; k < 1 + i % 4; ++k) b[rng() % b.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
    }
    WriteBytes(path, b);
    CliResult r = RunEdgeopt({"inspect", path, "--json"});
    EXPECT_FALSE(r.signaled) << "case " << i << ": " << Describe(r);
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << "case " << i << ": " << Describe(r);
    if (r.exit_code == 1) {
      ++failures;
      EXPECT_EQ(r.err.rfind("edgeopt inspect: error: ", 0), 0u) << r.err;
    }
  }
  EXPECT_GT(failures, 0);  // the truncations at least are rejected
}

}  // namespace
}  // namespace edgeopt::testing
