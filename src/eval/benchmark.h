// Model benchmarking: timings, memory, per-op profile, trace events and thread sweeps. The
// `edgeopt bench` command is a thin layer over this.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "eval/host_tensor.h"
#include "runtime/interpreter.h"

namespace edgeopt::eval {

struct LatencyStats {
  double mean = 0, std = 0, min = 0, max = 0, p50 = 0, p90 = 0, p99 = 0;
  int count = 0;
};
LatencyStats ComputeStats(std::vector<double> ms);

struct OpProfile {
  int index = 0;
  std::string type;      // CONV_2D
  std::string kernel;    // conv2d/f32/avx2
  std::string backend;   // cpu / delegate name
  std::string inputs;    // "[1,224,224,3] float32, ..."
  std::string outputs;
  double avg_ms = 0;
  double percent = 0;
  double cumulative_percent = 0;
  int64_t macs = 0;
  double gops = 0;       // 2*MACs / time
  bool folded = false;   // computed once at init (all inputs constant)
};

struct TraceEvent {
  std::string name;
  int tid = 0;           // 0 = the invoking thread, k = worker k
  double ts_us = 0;
  double dur_us = 0;
  int run = 0;
  int op_index = -1;
};

struct MemoryReport {
  size_t arena_bytes = 0;
  size_t packed_weight_bytes = 0;
  size_t persistent_bytes = 0;   // variables and folded constants
  size_t mapped_model_bytes = 0;
  size_t peak_rss_bytes = 0;
};

struct BenchOptions {
  int threads = 1;
  int warmup = 5;
  int runs = 50;
  double max_secs = 0;         // stop the measured runs early after this long (0: no limit)
  bool profile = false;        // also do profiled runs and fill ops
  int profile_runs = 20;
  bool trace = false;          // record trace events during the profiled runs
  bool reference_kernels_only = false;
  std::vector<std::string> input_flags;  // --input NAME=FILE
  uint64_t seed = 1;
  // Called now and then during long phases: (phase, done, total).
  std::function<void(const std::string&, int, int)> progress;
};

struct BenchResult {
  std::string model;
  int threads = 1;
  double load_ms = 0;
  double init_ms = 0;   // interpreter creation: kernel selection, prepare, weight packing, folding
  double first_ms = 0;  // the first invoke
  LatencyStats latency;
  MemoryReport memory;
  std::vector<std::string> randomized_inputs;
  // Profile (when requested)
  std::vector<OpProfile> ops;
  double profiled_invoke_ms = 0;  // median invoke time with the profiler on
  double profiled_ops_sum_ms = 0; // sum of per-op averages
  double profiler_overhead_pct = 0;
  std::vector<TraceEvent> trace;
};

Expected<BenchResult> RunBenchmark(const std::string& model_path, const BenchOptions& options);

// Peak resident set size of this process so far.
size_t PeakRssBytes();

// Chrome trace-event JSON for one or more results (one process per model).
std::string TraceJson(const std::vector<BenchResult>& results);

}  // namespace edgeopt::eval
