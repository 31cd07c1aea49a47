// The benchmark engine and its reports on a small generated model with one op folded at init:
// statistics, per-op profile, trace events, JSON keys, CSV, comparison text.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "eval/bench_report.h"
#include "eval/benchmark.h"
#include "format/writer.h"
#include "graph/builder.h"
#include "support/core/model_files.h"

namespace edgeopt::eval {
namespace {

// x[1,256] + dequantize(w16) -> * w -> + x: four ops, the DEQUANTIZE of constant float16 weights
// is folded at init.
Graph MakeModel() {
  GraphBuilder b(3);
  const auto x = b.Input("x", DType::kFloat32, {1, 256});
  const auto w16 = b.ConstRandom("w16", DType::kFloat16, {1, 256});
  const auto w = b.Tensor("w", DType::kFloat32, {1, 256});
  const auto y1 = b.Tensor("y1", DType::kFloat32, {1, 256});
  const auto y2 = b.Tensor("y2", DType::kFloat32, {1, 256});
  const auto y3 = b.Tensor("y3", DType::kFloat32, {1, 256});
  b.Op(tflite::BuiltinOperator_DEQUANTIZE, {w16}, {w});
  b.Op(tflite::BuiltinOperator_ADD, {x, w}, {y1}, tflite::AddOptionsT());
  b.Op(tflite::BuiltinOperator_MUL, {y1, w}, {y2}, tflite::MulOptionsT());
  b.Op(tflite::BuiltinOperator_ADD, {y2, x}, {y3}, tflite::AddOptionsT());
  b.Output(y3);
  return b.Finish();
}

class BenchmarkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("eval_bench");
    model_ = dir_ + "/m.tflite";
    ASSERT_TRUE(WriteModelFile(MakeModel(), model_).ok());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_, model_;
};

TEST(LatencyStats, PercentilesInterpolate) {
  const LatencyStats s = ComputeStats({10, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  EXPECT_EQ(s.count, 10);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 10);
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  EXPECT_DOUBLE_EQ(s.p50, 5.5);
  EXPECT_NEAR(s.p90, 9.1, 1e-12);
  EXPECT_NEAR(s.p99, 9.91, 1e-12);
  EXPECT_NEAR(s.std, 3.0276503540974917, 1e-12);
  EXPECT_EQ(ComputeStats({}).count, 0);
  EXPECT_DOUBLE_EQ(ComputeStats({4}).std, 0);
}

TEST(BenchOptionsCheck, NamesTheFlag) {
  BenchOptions o;
  o.runs = -1;
  EXPECT_NE(ValidateBenchOptions(o).message().find("--runs must be at least 1, got -1"), std::string::npos);
  o = {};
  o.threads = 0;
  EXPECT_NE(ValidateBenchOptions(o).message().find("--threads"), std::string::npos);
  o = {};
  o.warmup = -2;
  EXPECT_FALSE(ValidateBenchOptions(o).ok());
  o = {};
  o.max_secs = -1;
  EXPECT_FALSE(ValidateBenchOptions(o).ok());
  EXPECT_TRUE(ValidateBenchOptions(BenchOptions{}).ok());
}

TEST_F(BenchmarkTest, MeasuresWithoutProfile) {
  BenchOptions o;
  o.runs = 7;
  o.warmup = 2;
  auto r = RunBenchmark(model_, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->latency.count, 7);
  EXPECT_EQ(r->warmup_runs, 2);
  EXPECT_GT(r->latency.p50, 0);
  EXPECT_LE(r->latency.min, r->latency.p50);
  EXPECT_LE(r->latency.p50, r->latency.p90);
  EXPECT_FALSE(r->profiled);
  EXPECT_TRUE(r->ops.empty());
  EXPECT_GT(r->memory.arena_bytes, 0u);
  EXPECT_GT(r->memory.persistent_bytes, 0u);  // the folded DEQUANTIZE result
  EXPECT_GT(r->memory.peak_rss_bytes, 0u);
  EXPECT_EQ(r->randomized_inputs, std::vector<std::string>{"x"});
  const std::string text = FormatBenchText(*r);
  EXPECT_NE(text.find("latency (median): "), std::string::npos) << text;
  EXPECT_EQ(text.find("Per-op profile"), std::string::npos);
  const std::string csv = BenchCsv({*r});
  EXPECT_EQ(csv.rfind("model,threads,load_ms,init_ms,first_ms,mean_ms", 0), 0u) << csv;
}

TEST_F(BenchmarkTest, ProfileTraceAndReports) {
  BenchOptions o;
  o.runs = 5;
  o.warmup = 1;
  o.trace = true;
  int progress_calls = 0;
  o.progress = [&](const BenchProgress& p) {
    ++progress_calls;
    EXPECT_EQ(p.model, model_);
    EXPECT_LE(p.done, p.total);
  };
  auto r = RunBenchmark(model_, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GT(progress_calls, 0);
  ASSERT_TRUE(r->profiled);
  EXPECT_EQ(r->profile_runs, 5);
  ASSERT_EQ(r->ops.size(), 4u);
  EXPECT_TRUE(r->ops[0].folded);
  EXPECT_EQ(r->ops[0].type, "DEQUANTIZE");
  EXPECT_EQ(r->ops[0].avg_ms, 0);
  double percent = 0;
  for (size_t i = 1; i < 4; ++i) {
    EXPECT_FALSE(r->ops[i].folded);
    EXPECT_FALSE(r->ops[i].kernel.empty());
    percent += r->ops[i].percent;
  }
  EXPECT_NEAR(percent, 100.0, 1e-6);
  EXPECT_NEAR(r->ops.back().cumulative_percent, 100.0, 1e-6);
  EXPECT_GT(r->profiled_invoke_ms, 0);
  // Contiguous timestamps: the raw per-op times add up to the profiled invoke (exact up to
  // floating-point rounding of the averages).
  EXPECT_NEAR(r->profiled_raw_ops_sum_ms, r->profiled_invoke_ms, 1e-9 + 1e-9 * r->profiled_invoke_ms);
  // The profiler's own cost is measured, stated and subtracted from every op (never below 0).
  EXPECT_GT(r->profiler_clock_read_ns, 0);
  EXPECT_GE(r->profiler_cost_ns_per_op, 0);  // measured in the runs: 0 when profiling added nothing
  EXPECT_LE(r->profiler_cost_ns_per_op, r->profiler_clock_read_ns);
  EXPECT_FALSE(r->profiler_clock.empty());
  EXPECT_LE(r->profiled_ops_sum_ms, r->profiled_raw_ops_sum_ms);
  EXPECT_GE(r->profiled_ops_sum_ms, r->profiled_raw_ops_sum_ms - 3 * r->profiler_cost_ns_per_op / 1e6 - 1e-12);
  for (const auto& op : r->ops) EXPECT_GE(op.avg_ms, 0);
  EXPECT_GE(r->profile_runs_averaged, 1);
  EXPECT_LE(r->profile_runs_averaged, r->profile_runs);
  // The accounting: per-op sum + time outside ops = the unprofiled invoke they are checked
  // against, a mean of measured runs (so within their range).
  EXPECT_NEAR(r->profiled_ops_sum_ms + r->outside_ops_ms, r->unprofiled_invoke_ref_ms, 1e-12);
  EXPECT_GE(r->unprofiled_invoke_ref_ms, r->latency.min);
  EXPECT_LE(r->unprofiled_invoke_ref_ms, r->latency.max);
  EXPECT_NEAR(r->ops_coverage_pct(), 100.0 * r->profiled_ops_sum_ms / r->unprofiled_invoke_ref_ms, 1e-9);
  EXPECT_GT(r->profiled_invoke_ref_ms, 0);

  // Trace: one op event per run for each op that runs; one invoke event per run.
  std::map<int, std::map<int, int>> per_run;  // run -> op index -> events
  int invokes = 0;
  for (const auto& e : r->trace) {
    if (e.category == "op") ++per_run[e.run][e.op_index];
    if (e.category == "invoke") ++invokes;
  }
  EXPECT_EQ(invokes, 5);
  ASSERT_EQ(per_run.size(), 5u);
  for (const auto& [run, ops] : per_run) {
    EXPECT_EQ(ops.size(), 3u) << "run " << run;
    EXPECT_EQ(ops.count(0), 0u) << "the folded op has no events";
    for (const auto& [op, n] : ops) EXPECT_EQ(n, 1) << "run " << run << " op " << op;
  }
  auto doc = nlohmann::json::parse(TraceJson({*r}));
  ASSERT_TRUE(doc.contains("traceEvents"));
  int op_events = 0;
  for (const auto& e : doc["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph"));
    if (e["ph"] == "X") {
      EXPECT_TRUE(e.contains("ts") && e.contains("dur") && e.contains("pid") && e.contains("tid"));
      EXPECT_GE(e["ts"].get<double>(), 0.0);
    }
    if (e.value("cat", "") == "op") ++op_events;
  }
  EXPECT_EQ(op_events, 15);

  // JSON keys scripts depend on.
  const auto j = BenchJson({*r});
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 1u);
  for (const char* k : {"model", "threads", "init_ms", "first_ms", "latency_ms", "memory", "ops"}) EXPECT_TRUE(j[0].contains(k)) << k;
  for (const char* k : {"mean", "std", "min", "p50", "p90", "p99", "count"}) EXPECT_TRUE(j[0]["latency_ms"].contains(k)) << k;
  for (const char* k : {"arena_bytes", "packed_weight_bytes", "peak_rss_bytes"}) EXPECT_TRUE(j[0]["memory"].contains(k)) << k;
  for (const char* k : {"index", "type", "kernel", "ms", "percent", "macs"}) EXPECT_TRUE(j[0]["ops"][1].contains(k)) << k;
  for (const char* k : {"overhead_ns_per_op", "profiler_clock", "overhead_percent", "raw_ops_sum_ms", "ops_sum_ms",
                        "outside_ops_ns", "unprofiled_invoke_ref_ms", "profiled_invoke_ref_ms"})
    EXPECT_TRUE(j[0]["profile"].contains(k)) << k;
  EXPECT_NEAR(j[0]["profile"]["outside_ops_ns"].get<double>(), r->outside_ops_ms * 1e6, 1e-9);

  const std::string text = FormatBenchText(*r);
  const std::string averaged = "Per-op profile (mean of " + std::to_string(r->profile_runs_averaged) + " of 5 profiled runs";
  EXPECT_NE(text.find(averaged), std::string::npos) << text;
  for (const char* s : {"outside ops ", "ns per invoke (interpreter", "folded at init", "By op type", "Slowest 3 ops",
                        "per-op sum", "profiler overhead: ", "ns per op", "subtracted; profiled invoke ",
                        "latency (median): "})
    EXPECT_NE(text.find(s), std::string::npos) << s << "\n" << text;

  const std::string csv = BenchCsv({*r});
  EXPECT_EQ(csv.rfind("model,index,op,kernel,folded,inputs,outputs,ms", 0), 0u) << csv;
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5);
  EXPECT_NE(csv.find("\"float32[1,256]\""), std::string::npos) << "shapes with commas are quoted: " << csv;

  const std::vector<OpTypeSummary> types = SummarizeByType(*r);
  ASSERT_EQ(types.size(), 3u);
  for (const auto& t : types)
    if (t.type == "DEQUANTIZE") {
      EXPECT_EQ(t.count, 0);
      EXPECT_EQ(t.folded, 1);
    }
  const ConversionCost c = ConversionCostOf(*r);
  EXPECT_EQ(c.ops, 0);
  EXPECT_EQ(c.folded, 1);
}

TEST_F(BenchmarkTest, ComparisonAndThreadSweep) {
  BenchOptions o;
  o.runs = 3;
  o.warmup = 0;
  o.profile = true;
  auto a = RunBenchmark(model_, o);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  o.auto_threads = true;
  auto b = RunBenchmark(model_, o);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(static_cast<int>(b->sweep.size()), HardwareThreads());
  EXPECT_TRUE(b->profiled);
  const std::string cmp = FormatComparison({*a, *b});
  for (const char* s : {"Comparison", "latency (median)", "Time per op type", "Conversions between number formats", "In plain words"})
    EXPECT_NE(cmp.find(s), std::string::npos) << s << "\n" << cmp;
  EXPECT_EQ(ModelLetter(0), "A");
  EXPECT_EQ(ModelLetter(25), "Z");
  EXPECT_EQ(ModelLetter(26), "AA");
}

// RunInterleaved: rounds of blocks of each model in turn, a ratio of 1 for the first model and
// quartiles around the median; one model, or thread counts that do not match, are refused.
TEST_F(BenchmarkTest, InterleavedRounds) {
  BenchOptions o;
  o.runs = 30;
  o.warmup = 0;
  auto r = RunInterleaved({model_, model_, model_}, {1, 1, 1}, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->rounds, 10);  // blocks of 3 invokes (runs / 10)
  ASSERT_EQ(r->p50_ms.size(), 3u);
  EXPECT_EQ(r->ratio_p50[0], 1.0);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_GT(r->p50_ms[k], 0.0);
    EXPECT_LE(r->ratio_q1[k], r->ratio_p50[k]);
    EXPECT_GE(r->ratio_q3[k], r->ratio_p50[k]);
  }
  EXPECT_FALSE(RunInterleaved({model_}, {1}, o).ok());
  EXPECT_FALSE(RunInterleaved({model_, model_}, {1}, o).ok());
  o.runs = 0;
  EXPECT_FALSE(RunInterleaved({model_, model_}, {1, 1}, o).ok());
  o.runs = 5;
  auto missing = RunInterleaved({model_, dir_ + "/none.tflite"}, {1, 1}, o);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("none.tflite"), std::string::npos) << missing.status().ToString();
}

// A profiled op for the report tests.
OpProfile OpOf(int index, const char* type, const char* kernel, double ms, double percent = 0) {
  OpProfile p;
  p.index = index;
  p.type = type;
  p.kernel = kernel;
  p.avg_ms = ms;
  p.percent = percent;
  return p;
}

// Ops run inside fused kernels: the by-type summary counts them (merged: time booked on the
// run's first op; hosts: that first op), and a comparison that finds the type slower says the
// per-type times compare unlike work instead of blaming the other model's kernels alone.
TEST(BenchReport, FusedOpsAreNamedInSummariesAndComparisons) {
  const auto op = [](int index, const char* type, const char* kernel, double ms) { return OpOf(index, type, kernel, ms); };
  BenchResult a, b;
  for (BenchResult* r : {&a, &b}) {
    r->profiled = true;
    r->threads = 1;
  }
  a.ops = {op(0, "DEPTHWISE_CONV_2D", "fused/dw+pw/f32/avx512", 0.10), op(1, "CONV_2D", "fused into #0", 0),
           op(2, "CONV_2D", "fused/pw+dw+pw/f32/avx512", 0.30), op(3, "DEPTHWISE_CONV_2D", "fused into #2", 0),
           op(4, "CONV_2D", "fused into #2", 0), op(5, "DEPTHWISE_CONV_2D", "depthwise_conv2d/f32/avx512", 0.05)};
  a.profiled_ops_sum_ms = 0.45;
  a.latency.p50 = 0.46;
  b.ops = {op(0, "DEPTHWISE_CONV_2D", "depthwise_conv2d/int8/avx512/3x3s1/dp4", 0.08),
           op(1, "CONV_2D", "conv2d/int8/avx512vnni", 0.05),
           op(2, "CONV_2D", "conv2d/int8/avx512vnni", 0.05),
           op(3, "DEPTHWISE_CONV_2D", "depthwise_conv2d/int8/avx512/3x3s1/dp4", 0.08),
           op(4, "CONV_2D", "conv2d/int8/avx512vnni", 0.05),
           op(5, "DEPTHWISE_CONV_2D", "depthwise_conv2d/int8/avx512/3x3s1/dp4", 0.08)};
  b.profiled_ops_sum_ms = 0.39;
  b.latency.p50 = 0.40;
  std::map<std::string, OpTypeSummary> by;
  for (const auto& t : SummarizeByType(a)) by[t.type] = t;
  EXPECT_EQ(by["DEPTHWISE_CONV_2D"].count, 3);
  EXPECT_EQ(by["DEPTHWISE_CONV_2D"].merged, 1);
  EXPECT_EQ(by["DEPTHWISE_CONV_2D"].hosts, 1);
  EXPECT_EQ(by["CONV_2D"].merged, 2);
  EXPECT_EQ(by["CONV_2D"].hosts, 1);
  const std::string text = FormatBenchText(a);
  EXPECT_NE(text.find("3 (1 fused)"), std::string::npos) << text;
  const std::string cmp = FormatComparison({a, b});
  EXPECT_NE(cmp.find("slower in B (fused ops: see below)"), std::string::npos) << cmp;
  EXPECT_NE(cmp.find("A runs 1 of its 3 inside other ops' fused kernels (their time is counted there) and 1 as the "
                     "first op of a fused run"),
            std::string::npos)
      << cmp;
  EXPECT_NE(cmp.find("so compare the whole models"), std::string::npos) << cmp;
}

// A conversion op fused into the op it feeds (QUANTIZE uint8 -> int8 read by an int8 CONV_2D's
// kernel) holds the fused kernel's time, which is not conversion: it is listed as fused, and
// neither the conversion count nor the conversion time includes it.
TEST(BenchReport, FusedConversionsAreNotCountedAsConversionTime) {
  const auto op = [](int index, const char* type, const char* kernel, double ms) {
    return OpOf(index, type, kernel, ms, 100 * ms / 0.5);
  };
  BenchResult a, b;
  for (BenchResult* r : {&a, &b}) {
    r->profiled = true;
    r->threads = 1;
    r->profiled_ops_sum_ms = 0.5;
    r->latency.p50 = 0.5;
  }
  a.ops = {op(0, "CONV_2D", "conv2d/f32/avx512", 0.5)};
  b.ops = {op(0, "QUANTIZE", "fused/quantize+conv2d/int8/avx512vnni/direct", 0.3), op(1, "CONV_2D", "fused into #0", 0),
           op(2, "DEQUANTIZE", "dequantize/int8/avx2", 0.2)};
  const ConversionCost c = ConversionCostOf(b);
  EXPECT_EQ(c.ops, 1);
  EXPECT_EQ(c.fused, 1);
  EXPECT_DOUBLE_EQ(c.ms, 0.2);
  const std::string cmp = FormatComparison({a, b});
  EXPECT_NE(cmp.find("B  1 per inference, 0.200 ms"), std::string::npos) << cmp;
  EXPECT_NE(cmp.find("1 fused into the op they feed (no conversion pass)"), std::string::npos) << cmp;
  EXPECT_NE(cmp.find("fused/quantize+conv2d/int8/avx512vnni/direct"), std::string::npos) << cmp;
  EXPECT_NE(cmp.find("only in B; conversion; includes ops fused into it (B)"), std::string::npos) << cmp;
  EXPECT_NE(cmp.find("in 1 QUANTIZE/DEQUANTIZE/CAST op; 1 more runs inside the kernel of the op it feeds"),
            std::string::npos)
      << cmp;
  b.ops.pop_back();
  b.ops[0].kernel = "fused/quantize+conv2d/int8/avx512vnni/direct";
  EXPECT_EQ(ConversionCostOf(b).ops, 0);
  EXPECT_NE(FormatComparison({a, b}).find("B's 1 QUANTIZE/DEQUANTIZE/CAST op runs inside the kernel of the op it feeds"),
            std::string::npos)
      << FormatComparison({a, b});
}

TEST_F(BenchmarkTest, BadModelsAndInputsFail) {
  EXPECT_FALSE(RunBenchmark(dir_ + "/none.tflite", {}).ok());
  BenchOptions o;
  o.input_flags = {"nope=x.npy"};
  auto r = RunBenchmark(model_, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no input named 'nope'"), std::string::npos);
}

}  // namespace
}  // namespace edgeopt::eval
