// Reports of benchmark results (eval/benchmark.h): the text `edgeopt bench` prints, its --json,
// --csv and --trace files, and the side-by-side comparison of several models (float vs int8:
// totals, time per op type, every QUANTIZE/DEQUANTIZE/CAST boundary and what it costs).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/benchmark.h"

namespace edgeopt::eval {

// Per-op times must add up to the invoke time within this share (checked and printed).
inline constexpr double kOpsCoverageTolerancePct = 5.0;

struct OpTypeSummary {
  std::string type;
  int count = 0;         // ops run per inference
  int folded = 0;        // ops of this type folded at init
  // Ops run inside another op's kernel (a fused run or a delegate partition: their time and work
  // are booked on the run's first op, usually of another type); included in count.
  int merged = 0;
  int hosts = 0;  // ops whose time includes a fused run's other ops (kernel "fused/...")
  double ms = 0;         // summed per-op means
  double percent = 0;    // of all ops
  int64_t macs = 0;
  double gops = 0;
  std::set<std::string> kernels;  // variants chosen for the ops that run
};
// Op types by time, largest first.
std::vector<OpTypeSummary> SummarizeByType(const BenchResult& r);

// QUANTIZE, DEQUANTIZE and CAST: the boundaries between number formats.
bool IsConversionOp(const std::string& type);
struct ConversionCost {
  int ops = 0;         // run per inference
  int folded = 0;      // folded at init (e.g. DEQUANTIZE of float16 weights): free per inference
  int fused = 0;       // run inside a fused kernel with the op they feed (no pass of their own; the
                       // kernel's time, shown at its first op, is the two ops' together)
  double ms = 0;
  double percent = 0;  // of all op time
};
ConversionCost ConversionCostOf(const BenchResult& r);

// "A", "B", ... for model k.
std::string ModelLetter(size_t k);

struct TextReportOptions {
  int max_op_rows = -1;  // -1: every op
};
// Things worth a warning on stderr: more threads slower than fewer, per-op times that do not add
// up to the invoke time within kOpsCoverageTolerancePct, --max-secs cutting the runs short.
std::vector<std::string> BenchWarnings(const BenchResult& r);

// One model: inputs, timings, the latency line, memory; with a profile the per-op table, the
// summary by op type, the 10 slowest ops and the coverage / overhead check.
std::string FormatBenchText(const BenchResult& r, const TextReportOptions& options = {});
// Several models: side-by-side totals, time per op type with ratios to model A (op types that got
// slower flagged), conversion ops of every model with their cost, and a plain-words verdict.
std::string FormatComparison(const std::vector<BenchResult>& results);

// --json: an array with one object per model (keys in README.md; tests check them).
nlohmann::ordered_json BenchJson(const std::vector<BenchResult>& results);
// --csv: the per-op table when profiled (one row per op, all models), else one summary row per model.
std::string BenchCsv(const std::vector<BenchResult>& results);
// --trace: Chrome trace-event JSON (Perfetto / chrome://tracing): one process per model, the
// invoking thread's ops on track 0, pool workers on their own tracks.
std::string TraceJson(const std::vector<BenchResult>& results);

// "[1,224,224,3]" list of an op's non-constant inputs -> outputs: "[1,112,112,32] -> [1,112,112,16]"
std::string OpShapes(const OpProfile& op);

}  // namespace edgeopt::eval
