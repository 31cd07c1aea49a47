// Helpers for the end-to-end CLI tests: run build/edgeopt (or another built tool) as a child
// process with captured stdout/stderr and exit status, and write small test models.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "format/writer.h"
#include "graph/builder.h"
#include "support/core/model_files.h"

extern char** environ;

namespace edgeopt::testing {

struct CliResult {
  int exit_code = -1;    // the process's exit status; 128 + signal number if it was killed
  bool signaled = false;  // true if it died from a signal (a crash: never acceptable)
  std::string out;
  std::string err;
};

inline std::string ReadTextFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Runs `binary args...` with stdin from /dev/null and stdout/stderr captured through files.
inline CliResult RunBinary(const std::string& binary, const std::vector<std::string>& args) {
  CliResult r;
  const std::string dir = MakeTempDir("cli_capture");
  static int counter = 0;
  const std::string out_path = dir + "/out" + std::to_string(counter) + ".txt";
  const std::string err_path = dir + "/err" + std::to_string(counter++) + ".txt";

  std::vector<std::string> argv_storage;
  argv_storage.push_back(binary);
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, binary.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    r.err = "posix_spawn(" + binary + ") failed: " + std::to_string(rc);
    return r;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.signaled = true;
    r.exit_code = 128 + WTERMSIG(status);
  }
  r.out = ReadTextFile(out_path);
  r.err = ReadTextFile(err_path);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return r;
}

inline std::string EdgeoptBinary() { return BinaryDir() + "/edgeopt"; }
inline CliResult RunEdgeopt(const std::vector<std::string>& args) { return RunBinary(EdgeoptBinary(), args); }

// For failure messages: the whole invocation result.
inline std::string Describe(const CliResult& r) {
  return "exit " + std::to_string(r.exit_code) + (r.signaled ? " (killed by a signal)" : "") + "\n--- stdout\n" +
         r.out + "--- stderr\n" + r.err;
}

// Names of the entries in `dir` (to check that failures leave no files behind).
inline std::vector<std::string> DirEntries(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) names.push_back(e.path().filename().string());
  return names;
}

// A tiny float model with one unused constant tensor and two constants holding identical bytes
// (so --strip-unused removes 1 tensor + 1 buffer and --dedupe merges 1 buffer).
inline Graph MakeRedundantModel() {
  GraphBuilder b(7);
  b.SetDescription("edgeopt test: redundant");
  const auto x = b.Input("x", DType::kFloat32, {1, 4});
  const std::vector<float> same = {1.0f, 2.0f, 3.0f, 4.0f};
  const auto c1 = b.Const<float>("c1", DType::kFloat32, {1, 4}, same);
  const auto c2 = b.Const<float>("c2", DType::kFloat32, {1, 4}, same);
  b.ConstRandom("unused", DType::kFloat32, {64});
  const auto y1 = b.Tensor("y1", DType::kFloat32, {1, 4});
  const auto y2 = b.Tensor("y2", DType::kFloat32, {1, 4});
  b.Op(tflite::BuiltinOperator_ADD, {x, c1}, {y1}, tflite::AddOptionsT());
  b.Op(tflite::BuiltinOperator_MUL, {y1, c2}, {y2}, tflite::MulOptionsT());
  b.Output(y2);
  b.AddSignature("serving_default");
  return b.Finish();
}

// Writes `g` to `path`, failing the test on error.
inline void WriteModelOrFail(const Graph& g, const std::string& path) {
  Status st = WriteModelFile(g, path);
  ASSERT_TRUE(st.ok()) << st.ToString();
}

// Makes build/edgeopt_make_example write the example model into `dir`; returns its path.
inline std::string MakeExampleModel(const std::string& dir) {
  const std::string path = dir + "/tiny_cnn.tflite";
  CliResult r = RunBinary(BinaryDir() + "/edgeopt_make_example", {path});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  return path;
}

}  // namespace edgeopt::testing
