// Agreement of a transformed model (quantized, pruned, ...) with its float original on the same
// samples: signal-to-noise ratio of every output and, for classifier-shaped outputs, how often
// both pick the same top-1 class. Integer outputs are dequantized; integer inputs are fed the
// float sample quantized with the input's parameters.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "eval/host_tensor.h"
#include "eval/image.h"
#include "graph/graph.h"
#include "runtime/interpreter.h"

namespace edgeopt::eval {

struct OutputAgreement {
  std::string name;
  double snr_db = 0;           // as ErrorStats::snr_db (eval/metrics.h); +inf when identical
  double max_abs_error = 0;    // in real units
  bool classifier = false;     // one non-unit dimension of >= 2 classes
  int64_t top1_agree = 0;      // samples where both models' top-1 agree (classifiers)
  int64_t samples = 0;
};

struct AgreementReport {
  int64_t samples = 0;
  std::vector<OutputAgreement> outputs;
};

// Runs `reference` and `candidate` (same inputs and outputs, by position) on every sample
// (inputs as the reference model wants them), resetting variables before each.
Expected<AgreementReport> CompareModels(std::shared_ptr<const rt::Model> reference, std::shared_ptr<const rt::Model> candidate,
                                        const std::vector<std::vector<HostTensor>>& samples, int threads = 1);

// Sample inputs for the comparisons above (used by edgeopt prune / cluster): one sample per file
// in `paths` (images or .npy for the first input; a folder stands for the image/.npy files in it,
// sorted; other inputs get seeded random values), or, when `paths` is empty, `random_count`
// samples of seeded random values (floats in [random_lo, random_hi]).
using Sample = std::vector<HostTensor>;  // one value per model input, in input order
struct SampleOptions {
  std::vector<std::string> paths;
  int random_count = 8;
  float random_lo = -1.0f, random_hi = 1.0f;
  PixelNormalization norm;
  uint64_t seed = 1;
};
// `description` (optional) says where the samples came from ("8 seeded random input(s) ...").
Expected<std::vector<Sample>> MakeSamples(const Graph& g, const SampleOptions& options, std::string* description);

}  // namespace edgeopt::eval
