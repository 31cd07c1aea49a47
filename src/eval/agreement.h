// Model-vs-model agreement: runs an original and an optimized model (pruned, clustered,
// quantized...) on the same sample inputs with edgeopt and says how closely the optimized one
// follows: SNR of every output in real units, and top-1 agreement for classifier outputs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "eval/host_tensor.h"
#include "eval/image.h"
#include "graph/graph.h"

namespace edgeopt::eval {

using Sample = std::vector<HostTensor>;  // one value per model input, in input order

struct OutputAgreement {
  std::string name;
  bool classifier = false;  // produced by SOFTMAX / LOG_SOFTMAX (possibly through DEQUANTIZE/RESHAPE)
  double snr_db = 0;        // 10 log10(sum ref^2 / sum (opt - ref)^2) over all samples; +inf if identical
  double max_abs_error = 0;
  int top1_agree = 0;  // classifier outputs: samples (x batch rows) whose arg-max agrees
  int top1_total = 0;
};

struct AgreementReport {
  int samples = 0;
  std::string inputs;  // where the samples came from ("8 seeded random inputs", "24 files from DIR")
  std::vector<OutputAgreement> outputs;
};

// Sample inputs for `g`: one sample per file in `paths` (images or .npy for the first input;
// a folder stands for the image/.npy files in it, sorted; other inputs get seeded random values),
// or, when `paths` is empty, `random_count` samples of seeded random values (floats in
// [random_lo, random_hi]).
struct SampleOptions {
  std::vector<std::string> paths;
  int random_count = 8;
  float random_lo = -1.0f, random_hi = 1.0f;
  PixelNormalization norm;
  uint64_t seed = 1;
};
Expected<std::vector<Sample>> MakeSamples(const Graph& g, const SampleOptions& options, std::string* description);

// Runs both graphs (same inputs/outputs) on every sample and compares outputs position by position.
Expected<AgreementReport> CompareModelOutputs(const Graph& original, const Graph& optimized,
                                              const std::vector<Sample>& samples, int threads = 1);

// Runs one graph on the samples and returns each sample's outputs (for accuracy loops).
Expected<std::vector<std::vector<HostTensor>>> RunSamples(const Graph& g, const std::vector<Sample>& samples,
                                                          int threads = 1);

// Whether output `i` of subgraph 0 is a classifier's probability/logit vector.
bool IsClassifierOutput(const Graph& g, int output_index);

}  // namespace edgeopt::eval
