// Model benchmarking: timings, memory, per-op profile, trace events and thread sweeps. The
// `edgeopt bench` command is a thin layer over this and eval/bench_report.h.
//
// What one benchmark does, in order (each phase timed separately):
//   load   Model::FromFile: map and verify the .tflite file
//   init   Interpreter::Create: kernel choice, weight packing, constant folding, memory planning
//   first  the first Invoke (cold caches)
//   warm-up W untimed invokes
//   steady R timed invokes -> LatencyStats (each run's time less the timer's own overhead,
//          TimerOverheadNs: two back-to-back reads of the cheap clock). With profiling on, each timed invoke is followed by a
//          profiled invoke: per-op times come from the profiled ones, and comparing the two
//          interleaved series measures the profiler's own overhead under the same conditions.
//
// Per-op times: the interpreter reads the clock once per op boundary, so the raw per-op times
// add up exactly to the profiled invoke. The profiler's own cost per op is what profiling adds
// to an invoke (profiled minus unprofiled median) per clock read, at most the cost of
// back-to-back reads (rt::ProfilerCostPerOpNs); it is subtracted from every op (never below 0)
// and what is left is compared with the unprofiled invoke; the difference is stated as the
// interpreter's time outside ops. Per-op averages, like the two invoke times they are compared
// with, are means over the runs around the median (the middle fifth ranked by total time,
// widened to the runs within a few clock steps of the median), so that runs disturbed by other
// processes do not dominate them and a clock that ticks in ~10 ns steps still resolves them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "eval/host_tensor.h"
#include "eval/image.h"
#include "runtime/interpreter.h"

namespace edgeopt::eval {

struct LatencyStats {
  double mean = 0, std = 0, min = 0, max = 0, p50 = 0, p90 = 0, p99 = 0;
  int count = 0;
};
// Percentiles interpolate linearly between the sorted samples; std is the sample std (n-1).
LatencyStats ComputeStats(std::vector<double> ms);

struct TensorBrief {
  DType type = DType::kFloat32;
  std::vector<int32_t> shape;
  bool constant = false;
  bool omitted = false;  // an optional input left out (-1)
};

struct OpProfile {
  int index = 0;
  std::string type;      // CONV_2D
  std::string kernel;    // conv2d/f32/avx2
  std::string backend;   // cpu / delegate name
  std::vector<TensorBrief> inputs;
  std::vector<TensorBrief> outputs;
  double avg_ms = 0;     // mean over the profiled runs around the median, profiler cost subtracted
  double percent = 0;    // of the sum of all ops
  double cumulative_percent = 0;
  int64_t macs = 0;
  double gops = 0;       // 2*MACs / time, 1e9 ops per second
  bool folded = false;   // computed once at init (all inputs constant): no time per inference
  int partition = -1;    // delegate partition (its time is on the partition's first op)
  int threads = 1;       // threads it ran on at the end (thread tuning keeps small ops on one)
};

struct TraceEvent {
  std::string name;
  std::string category;  // "op", "invoke" or "worker"
  int tid = 0;           // 0 = the invoking thread, k = worker k
  double ts_us = 0;      // since the first profiled run began
  double dur_us = 0;
  int run = 0;
  int op_index = -1;
  std::string kernel;
};

struct MemoryReport {
  size_t arena_bytes = 0;
  size_t packed_weight_bytes = 0;
  size_t persistent_bytes = 0;   // variables and folded constants
  size_t mapped_model_bytes = 0;
  size_t peak_rss_bytes = 0;
  bool peak_rss_reset = false;   // peak RSS was reset before this model was loaded
};

struct BenchProgress {
  std::string model;
  std::string phase;   // "warm-up", "measuring", "threads 2"
  int done = 0;
  int total = 0;
  double elapsed_s = 0;  // since this model's benchmark began
};

struct BenchOptions {
  int threads = 1;
  bool auto_threads = false;   // measure 1..HardwareThreads() and keep the fastest
  int warmup = 3;
  int runs = 50;
  double max_secs = 0;         // stop warm-up / measured runs after this many seconds (0: no limit)
  bool profile = false;        // interleave profiled runs and fill ops
  bool trace = false;          // record trace events during the profiled runs (implies profile)
  bool reference_kernels_only = false;
  std::vector<std::string> input_flags;  // --input NAME=FILE
  PixelNormalization norm;
  uint64_t seed = 1;
  // Called after every invoke of the long phases (cheap; the callee decides what to print).
  std::function<void(const BenchProgress&)> progress;
};

struct ThreadSweepPoint {
  int threads = 1;
  double init_ms = 0;
  LatencyStats latency;
};

struct BenchResult {
  std::string model;
  int threads = 1;
  int hardware_threads = 1;
  double load_ms = 0;
  double init_ms = 0;   // interpreter creation: kernel selection, prepare, weight packing, folding
  double first_ms = 0;  // the first invoke
  int warmup_runs = 0;
  double warmup_ms = 0;  // total
  LatencyStats latency;       // timer overhead subtracted from every run
  double timer_overhead_ns = 0;  // two back-to-back clock reads: what timing adds to a run
  bool stopped_by_max_secs = false;
  MemoryReport memory;
  std::vector<std::string> input_names, input_sources;  // where each input's values came from
  std::vector<std::string> notes;                       // defaults applied (say them on stderr)
  std::vector<std::string> randomized_inputs;
  std::vector<ThreadSweepPoint> sweep;  // with auto_threads
  // Profile (when requested).
  bool profiled = false;
  int profile_runs = 0;
  int profile_runs_averaged = 0;     // the runs averaged (the middle fifth, by total time)
  std::vector<OpProfile> ops;        // every op of the main subgraph, run order
  std::string profiler_clock;        // "tsc" or "steady_clock"
  double profiler_clock_read_ns = 0;   // cost of back-to-back clock reads + bookkeeping (upper bound)
  double profiler_cost_ns_per_op = 0;  // measured in the runs (see above); subtracted from every op
  double profiled_invoke_ms = 0;     // profiled invoke as the interpreter timed it (runs kept):
                                     // exactly the sum of the raw per-op times
  double profiled_raw_ops_sum_ms = 0;  // sum of the raw per-op means (= profiled_invoke_ms)
  double unprofiled_invoke_ms = 0;   // mean of the timed runs interleaved with them
  double profiled_ops_sum_ms = 0;    // sum of the per-op means, profiler cost subtracted
  double profiled_invoke_p50_ms = 0;    // medians of the same two series: outliers (a descheduled
  double unprofiled_invoke_p50_ms = 0;  // run on a busy machine) do not swamp the profiler's cost
  double profiler_overhead_pct = 0;  // profiled vs unprofiled, medians
  // The same two series reduced like the per-op times: mean of the runs around the median (the
  // middle fifth, widened to the runs within a few clock steps of the median). The profiler's
  // cost and the per-op check use these.
  double unprofiled_invoke_ref_ms = 0;
  double profiled_invoke_ref_ms = 0;
  // The unprofiled invoke less the per-op sum: the interpreter's own fixed cost per invoke that
  // no op's time holds (its entry and exit), plus what is left of measuring noise. Can be < 0.
  double outside_ops_ms = 0;
  std::vector<TraceEvent> trace;
  // Set when compared with other models (RunInterleaved): this model's interleaved median and the
  // median and quartiles of its per-round ratios to the first model (rounds 0: not measured).
  int interleaved_rounds = 0;
  double interleaved_p50_ms = 0, interleaved_ratio = 0, interleaved_ratio_q1 = 0, interleaved_ratio_q3 = 0;

  // Sum of per-op times (profiler cost subtracted) as a percentage of the measured, unprofiled
  // invoke time (unprofiled_invoke_ref_ms; 100 = the per-op times account for the invoke exactly;
  // the rest is outside_ops_ms).
  double ops_coverage_pct() const {
    return unprofiled_invoke_ref_ms > 0 ? 100.0 * profiled_ops_sum_ms / unprofiled_invoke_ref_ms : 0;
  }
};

Expected<BenchResult> RunBenchmark(const std::string& model_path, const BenchOptions& options);

// Several models timed in turn, in rounds of a block of invokes of each (up to 20, after two
// untimed ones that bring the model back into cache; the model that starts a round rotating),
// each with its own interpreter, inputs and thread count: a slow phase of a shared machine then
// slows every model alike, so the rounds' ratios to the first model (A) hold where the medians of
// separate series, measured a while apart, can differ by tens of percent. (Alternating single
// invokes would time every model with the other's weights in cache: on MobileNetV2 float vs int8
// both ran 3-7% slower, the smaller model more.)
struct InterleavedResult {
  int rounds = 0;
  std::vector<double> p50_ms;  // per model: median of its timed invokes
  // Per model: the rounds' ratios of its block median to A's (A: all 1), median and quartiles.
  std::vector<double> ratio_p50, ratio_q1, ratio_q3;
};
// threads[k]: model k's thread count. About o.runs timed invokes of each after o.warmup (o.max_secs
// caps the rounds; at least one).
Expected<InterleavedResult> RunInterleaved(const std::vector<std::string>& model_paths, const std::vector<int>& threads,
                                           const BenchOptions& o);

// Checks option values; the message names the flag ("--runs must be at least 1, got -1").
Status ValidateBenchOptions(const BenchOptions& options);

// Threads this process may run on (CPU affinity), at least 1.
int HardwareThreads();
// Peak resident set size of this process so far.
size_t PeakRssBytes();
// Resets the kernel's peak-RSS mark to the current RSS (Linux /proc/self/clear_refs); false when
// not possible, in which case PeakRssBytes() is the peak since the process started.
bool ResetPeakRss();

}  // namespace edgeopt::eval
