// Calibration: run the float model on representative samples and choose a range for every
// float activation tensor (minmax, percentile, entropy/KL, or MSE-optimal clipping).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "graph/graph.h"
#include "optimize/quantize/lstm_replay.h"
#include "optimize/quantize/quantize.h"
#include "runtime/interpreter.h"

namespace edgeopt::optimize {

struct Range {
  float min = 0;
  float max = 0;
  bool valid = false;
};

struct CalibrationResult {
  // Float32 activations of the main subgraph, keyed by tensor index.
  std::map<int32_t, Range> ranges;
  // Internal values of UNIDIRECTIONAL_SEQUENCE_LSTM ops, keyed by op index (min/max whatever the
  // calibrator: they set power-of-two and hidden-state scales).
  std::map<int, LstmStats> lstm;
  // Calibration samples left out of the ranges (FindOutlierSamples), and every sample's inflation.
  std::vector<size_t> outlier_samples;
  std::vector<double> sample_inflation;
};

// Outlier detection needs at least this many samples (a median of fewer says nothing).
constexpr size_t kMinSamplesForOutliers = 4;

// Calibration samples whose activations are far larger than the other samples' throughout the
// network. per_sample[s][k] is sample s's own range of tensor k. For each tensor computed on every
// sample, a sample's magnitude max(|min|, |max|) is divided by the median sample's; a sample's
// inflation is the upper quartile of these ratios over the tensors (so one large tensor does not make an
// outlier, a network-wide blow-up does). Samples whose inflation exceeds `factor` are outliers,
// unless they would be half of the samples or more (or there are fewer than
// kMinSamplesForOutliers samples, or factor <= 0: none). `inflation` (optional) receives every
// sample's inflation.
std::vector<size_t> FindOutlierSamples(const std::vector<std::vector<Range>>& per_sample, double factor,
                                       std::vector<double>* inflation = nullptr);

// Runs the float model on every sample (variables reset before each: a sample is one whole
// sequence) and chooses ranges. Samples must match the model's inputs (count, dtype, shape);
// errors say which sample and input is wrong.
Expected<CalibrationResult> Calibrate(const Graph& g, const QuantizeOptions& options);

// A float interpreter over `g` that keeps every tensor readable after Invoke, and one run of
// calibration sample `s` on it (variables reset first; shape/dtype errors name the sample).
Expected<std::unique_ptr<rt::Interpreter>> MakeCalibrationInterpreter(const Graph& g, const QuantizeOptions& o);
Status FeedCalibrationSample(rt::Interpreter& interp, const QuantizeOptions& o, size_t s);

// Range chosen from a histogram of values over [lo, hi] (exposed for tests).
Range ChooseRange(const std::vector<double>& histogram, float lo, float hi, Calibrator c, double percentile, int levels);

}  // namespace edgeopt::optimize
