// Automatic optimization within an accuracy budget (`edgeopt optimize`): builds candidate models
// from a float model (quantization modes, int8 with the most sensitive layers kept in float,
// optionally pruning and clustering), measures each one's size, latency on our runtime and
// accuracy on held-out data, and picks the smallest (or fastest) whose accuracy drop from the
// float model stays within the budget.
//
// Accuracy: top-1 accuracy on the labels when the evaluation data is labelled, else top-1
// agreement with the float model (the float model then scores 100%). The drop is in percentage
// points. Sensitivity of layers is measured on the calibration data, never on the evaluation
// data: int8 and the float model are compared layer by layer (eval/compare.h) and the layers
// with the lowest own SNR are kept in float, 1, 2, 4, ... at a time, until the budget holds.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "eval/dataset.h"
#include "graph/graph.h"

namespace edgeopt::optimize {

enum class Objective { kSize, kLatency };
bool ParseObjective(const std::string& s, Objective* out);

// Which size counts: the file as written, or compressed (what a download or OTA update costs;
// clustering only pays off compressed).
enum class SizeMetric { kRaw, kGzip, kZstd };
bool ParseSizeMetric(const std::string& s, SizeMetric* out);
const char* SizeMetricName(SizeMetric m);

struct AutoOptimizeOptions {
  double max_drop = 1.0;  // percentage points
  Objective objective = Objective::kSize;
  SizeMetric size_metric = SizeMetric::kRaw;
  // Quantization modes to try ("float16", "dynamic", "int8", "int16x8").
  std::vector<std::string> modes = {"float16", "dynamic", "int8", "int16x8"};
  bool float_fallback = true;   // int8 with the most sensitive layers in float, when int8 alone is over budget
  int max_fallback_layers = 16;
  int sensitivity_samples = 8;  // calibration samples used to rank layers
  std::vector<double> prune_sparsities;  // e.g. {0.5}: magnitude pruning, then the best quantization
  std::vector<int> cluster_counts;       // e.g. {16}: k-means weight clustering, then the best quantization
  // Ops producing a tensor that matches are kept in float in every quantized candidate (e.g. what
  // `edgeopt compare` suggests); empty: none.
  std::string skip_tensor_regex;
  eval::Preprocess pp;
  int threads = 1;              // evaluation threads
  int output = 0;               // output with the class scores
  int label_offset = 0;
  bool use_labels = true;       // false: agreement with the float model even when labelled
  double bench_seconds = 0.3;   // latency measurement time per candidate
  int bench_threads = 1;
  // Progress lines ("int8: quantizing", ...).
  std::function<void(const std::string&)> log;
};

struct AutoCandidate {
  std::string name;         // "int8", "int8 + 3 float layers", "dynamic", "prune 50% + int8"
  std::string recipe;       // equivalent edgeopt commands
  std::vector<std::string> float_layers;  // layers kept in float (reference tensor names)
  size_t file_bytes = 0;
  size_t size_bytes = 0;    // per size metric
  double latency_ms = 0;    // median of single-threaded invokes on our runtime
  double accuracy = 0;      // percent
  double drop = 0;          // baseline accuracy - accuracy, points
  double output_snr_db = 0; // output vs the float model's, over the evaluation data
  bool within_budget = false;
  bool chosen = false;
  std::string error;        // why the candidate could not be built or run (then nothing else is valid)
  std::vector<uint8_t> bytes;  // the .tflite file
};

struct AutoOptimizeResult {
  std::string metric;             // "top-1 accuracy (labels)" / "top-1 agreement with the float model"
  double baseline_accuracy = 0;
  double max_drop = 0;
  Objective objective = Objective::kSize;
  SizeMetric size_metric = SizeMetric::kRaw;
  size_t calibration_samples = 0;
  size_t eval_samples = 0;
  std::vector<AutoCandidate> candidates;  // [0] is the float model itself
  int chosen = -1;
  std::vector<std::string> notes;  // e.g. "int16x8: failed: ..." or sensitivity ranking
};

// `float_model` must be a float model (not already quantized). Calibration and evaluation data are
// opened for its inputs.
Expected<AutoOptimizeResult> AutoOptimize(const Graph& float_model, const eval::Dataset& calibration,
                                          const eval::Dataset& evaluation, const AutoOptimizeOptions& options);

struct ReportInfo {
  std::string input;    // model path
  std::string output;   // written model path
  std::string command;  // the command line
  std::string calibration;  // data descriptions
  std::string evaluation;
};

// A self-contained HTML page: the candidate table and two SVG scatter charts (accuracy vs latency,
// accuracy vs size) with the budget line and the chosen model marked. No scripts, no network.
std::string AutoReportHtml(const AutoOptimizeResult& r, const ReportInfo& info);

}  // namespace edgeopt::optimize
