// edgeopt bench end to end: the --json keys scripts depend on, the --trace file (one event per op
// per profiled run), the float-vs-quantized comparison listing every QUANTIZE/DEQUANTIZE with its
// cost, --threads auto, and bad flags / models (clear error, exit code, no output files).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"

namespace edgeopt::testing {
namespace {

// float x -> QUANTIZE (int8) -> ADD int8 -> DEQUANTIZE -> float: two conversions per inference.
Graph MakeQuantizedAdd() {
  GraphBuilder b(5);
  const auto x = b.Input("x", DType::kFloat32, {1, 64});
  const auto q = b.Tensor("q", DType::kInt8, {1, 64}, Quant(0.02f, 0));
  const auto s = b.Tensor("s", DType::kInt8, {1, 64}, Quant(0.04f, 0));
  const auto y = b.Tensor("y", DType::kFloat32, {1, 64});
  b.Op(tflite::BuiltinOperator_QUANTIZE, {x}, {q});
  b.Op(tflite::BuiltinOperator_ADD, {q, q}, {s}, tflite::AddOptionsT());
  b.Op(tflite::BuiltinOperator_DEQUANTIZE, {s}, {y});
  b.Output(y);
  return b.Finish();
}

// The same computation in float: one ADD.
Graph MakeFloatAdd() {
  GraphBuilder b(5);
  const auto x = b.Input("x", DType::kFloat32, {1, 64});
  const auto y = b.Tensor("y", DType::kFloat32, {1, 64});
  b.Op(tflite::BuiltinOperator_ADD, {x, x}, {y}, tflite::AddOptionsT());
  b.Output(y);
  return b.Finish();
}

class CliBench : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("cli_bench");
    float_ = dir_ + "/add_float.tflite";
    quant_ = dir_ + "/add_int8.tflite";
    WriteModelOrFail(MakeFloatAdd(), float_);
    WriteModelOrFail(MakeQuantizedAdd(), quant_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_, float_, quant_;
};

TEST_F(CliBench, JsonKeysAndTraceEventsPerOpPerRun) {
  const std::string json = dir_ + "/r.json", trace = dir_ + "/t.json";
  CliResult r = RunEdgeopt({"bench", quant_, "--runs", "4", "--warmup", "1", "--profile", "--json", json, "--trace", trace});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("latency (median): "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Per-op profile"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("seeded random"), std::string::npos) << "random inputs are said on stderr: " << r.err;

  const auto j = nlohmann::json::parse(ReadTextFile(json));
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 1u);
  const auto& m = j[0];
  for (const char* k : {"model", "threads", "init_ms", "first_ms", "latency_ms", "memory", "ops"})
    ASSERT_TRUE(m.contains(k)) << k << "\n" << m.dump(2);
  EXPECT_EQ(m["model"], quant_);
  EXPECT_EQ(m["threads"], 1);
  for (const char* k : {"mean", "std", "min", "p50", "p90", "p99", "count"})
    EXPECT_TRUE(m["latency_ms"].contains(k)) << k;
  EXPECT_EQ(m["latency_ms"]["count"], 4);
  for (const char* k : {"arena_bytes", "packed_weight_bytes", "peak_rss_bytes"}) EXPECT_TRUE(m["memory"].contains(k)) << k;
  EXPECT_GT(m["memory"]["peak_rss_bytes"].get<double>(), 0);
  ASSERT_EQ(m["ops"].size(), 3u);
  const char* types[] = {"QUANTIZE", "ADD", "DEQUANTIZE"};
  for (int i = 0; i < 3; ++i) {
    const auto& op = m["ops"][i];
    for (const char* k : {"index", "type", "kernel", "ms", "percent", "macs"}) ASSERT_TRUE(op.contains(k)) << k;
    EXPECT_EQ(op["index"], i);
    EXPECT_EQ(op["type"], types[i]);
    EXPECT_FALSE(op["kernel"].get<std::string>().empty());
  }

  // The trace: every op has exactly one slice in each of the 4 profiled runs.
  const auto t = nlohmann::json::parse(ReadTextFile(trace));
  ASSERT_TRUE(t.contains("traceEvents")) << t.dump().substr(0, 400);
  std::map<int, std::map<int, int>> per_op;  // op index -> run -> events
  for (const auto& e : t["traceEvents"]) {
    if (e.value("cat", "") != "op") continue;
    ASSERT_EQ(e["ph"], "X");
    ASSERT_TRUE(e.contains("args") && e["args"].contains("op_index") && e["args"].contains("run")) << e.dump();
    ++per_op[e["args"]["op_index"].get<int>()][e["args"]["run"].get<int>()];
  }
  ASSERT_EQ(per_op.size(), 3u);
  for (const auto& [op, runs] : per_op) {
    EXPECT_EQ(runs.size(), 4u) << "op " << op;
    for (const auto& [run, n] : runs) EXPECT_EQ(n, 1) << "op " << op << " run " << run;
  }
}

TEST_F(CliBench, ComparisonListsConversionsWithTheirCost) {
  CliResult r = RunEdgeopt({"bench", float_, quant_, "--runs", "3", "--warmup", "0"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  for (const char* s : {"== A", "== B", "Comparison", "Time per op type", "Conversions between number formats", "QUANTIZE",
                        "DEQUANTIZE"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  // Each conversion op of B is listed by index (op 0 QUANTIZE, op 2 DEQUANTIZE).
  const size_t conv = r.out.find("Conversions between number formats");
  ASSERT_NE(conv, std::string::npos);
  const std::string tail = r.out.substr(conv);
  EXPECT_NE(tail.find("A  none"), std::string::npos) << tail;
  EXPECT_NE(tail.find("B  2 per inference"), std::string::npos) << tail;
  EXPECT_NE(tail.find("#0  QUANTIZE"), std::string::npos) << tail;
  EXPECT_NE(tail.find("#2  DEQUANTIZE"), std::string::npos) << tail;
  // The models timed in turn (RunInterleaved): a row of the table and a line in plain words.
  EXPECT_NE(r.out.find("interleaved (median)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Timed in turn with A (3 rounds"), std::string::npos) << r.out;
}

TEST_F(CliBench, ComparisonJsonHasTheInterleavedRatios) {
  const std::string json = dir_ + "/c.json";
  CliResult r = RunEdgeopt({"bench", float_, float_, "--runs", "4", "--warmup", "0", "--json", json});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const auto j = nlohmann::json::parse(ReadTextFile(json));
  ASSERT_EQ(j.size(), 2u);
  for (const auto& m : j) {
    ASSERT_TRUE(m.contains("interleaved")) << j.dump(2);
    EXPECT_EQ(m["interleaved"]["rounds"], 4);
    EXPECT_GT(m["interleaved"]["p50_ms"].get<double>(), 0.0);
  }
  EXPECT_EQ(j[0]["interleaved"]["ratio_to_first"]["p50"].get<double>(), 1.0);
  // The same model against itself: a ratio near 1 (a loose bound: a shared machine's noise).
  const double ratio = j[1]["interleaved"]["ratio_to_first"]["p50"].get<double>();
  EXPECT_GT(ratio, 0.2);
  EXPECT_LT(ratio, 5.0);
  EXPECT_LE(j[1]["interleaved"]["ratio_to_first"]["q1"].get<double>(), ratio);
  EXPECT_GE(j[1]["interleaved"]["ratio_to_first"]["q3"].get<double>(), ratio);
}

TEST_F(CliBench, ThreadsAutoPrintsTheSweep) {
  const std::string json = dir_ + "/r.json";
  CliResult r = RunEdgeopt({"bench", float_, "--threads", "auto", "--runs", "3", "--warmup", "0", "--json", json});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("Threads"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(ReadTextFile(json));
  ASSERT_TRUE(j[0].contains("thread_sweep")) << j.dump(2);
  EXPECT_GE(j[0]["thread_sweep"].size(), 1u);
}

TEST_F(CliBench, BadFlagsAndModelsFailClearlyAndWriteNothing) {
  const std::string json = dir_ + "/out.json";
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{float_, "--runs", "0"}, 2, "--runs must be at least 1"},
      {{float_, "--warmup", "-1"}, 2, "--warmup"},
      {{float_, "--threads", "zero"}, 2, "--threads expects a number of threads or 'auto'"},
      {{float_, "--threads", "0"}, 2, "--threads"},
      {{float_, "--max-secs", "-3"}, 2, "--max-secs"},
      {{float_, "--trace", dir_ + "/no/such/dir/t.json"}, 2, "does not exist"},
      {{float_, "--input", "nope=" + dir_ + "/x.npy"}, 2, "no input named 'nope'"},
      {{dir_ + "/none.tflite"}, 1, "none.tflite"},
      {{float_, "--frobnicate"}, 2, "--frobnicate"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"bench"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    args.push_back("--json");
    args.push_back(json);
    CliResult r = RunEdgeopt(args);
    SCOPED_TRACE(c.message);
    EXPECT_FALSE(r.signaled) << Describe(r);
    EXPECT_EQ(r.exit_code, c.code) << Describe(r);
    EXPECT_NE(r.err.find("edgeopt bench: error: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(json));
  }
  // A model with an op we lack: named with its index, when loaded.
  GraphBuilder b(1);
  const auto x = b.Input("x", DType::kFloat32, {1, 4});
  const auto y = b.Tensor("y", DType::kFloat32, {1, 4});
  b.CustomOp("NoSuchOp", {x}, {y});
  b.Output(y);
  const std::string custom = dir_ + "/custom.tflite";
  WriteModelOrFail(b.Finish(), custom);
  CliResult r = RunEdgeopt({"bench", custom, "--json", json});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_NE(r.err.find("NoSuchOp"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("op 0"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(json));
}

}  // namespace
}  // namespace edgeopt::testing
