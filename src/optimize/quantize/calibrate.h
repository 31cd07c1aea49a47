// Calibration: run the float model on representative samples and choose a range for every
// float activation tensor (minmax, percentile, entropy/KL, or MSE-optimal clipping).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "graph/graph.h"
#include "optimize/quantize/quantize.h"

namespace edgeopt::optimize {

struct Range {
  float min = 0;
  float max = 0;
  bool valid = false;
};

// Ranges of float32 activations of the main subgraph, keyed by tensor index. Samples must
// match the model's inputs (count, dtype, shape); errors say which sample and input is wrong.
Expected<std::map<int32_t, Range>> Calibrate(const Graph& g, const QuantizeOptions& options);

// Range chosen from a histogram of values over [lo, hi] (exposed for tests).
Range ChooseRange(const std::vector<double>& histogram, float lo, float hi, Calibrator c, double percentile, int levels);

}  // namespace edgeopt::optimize
