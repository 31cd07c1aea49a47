// Layer-by-layer comparison of two models on the same inputs: the quantization debugger behind
// `edgeopt compare`. Both models run with every intermediate tensor preserved; tensors are
// matched (by name, else by the position of the producing op) and compared in real units.
//
// Matching, for each tensor computed by an op of the reference's main subgraph:
//   1. a candidate tensor of the same name (when it is the output of a DEQUANTIZE, the integer
//      tensor it reads, so a quantized layer is seen as quantized), else the name with the
//      quantizer's suffix (`_int8`, `_int16`);
//   2. else the same output of the candidate op aligned with the reference op: the two lists of
//      compute ops (QUANTIZE/DEQUANTIZE and ops on constants only left out) are aligned by op type
//      (longest common subsequence), which tolerates inserted conversion ops and renamed tensors.
// Model inputs match the candidate's quantized twin of the input when there is one (so input
// quantization shows up as a row), model outputs match by position. A quantized candidate tensor
// whose only reader is a RELU / RELU6 / RELU_N1_TO_1 with its parameters holds that activation's
// range by construction (the quantizer gives a conv the parameters of its only activation, as
// TFLite's converter does): the reference tensor is compared after the same clamp.
//
// Which layers lose accuracy: error propagated from earlier layers must not count against a
// layer. Each layer's noise (relative to its signal, 10^(-SNR/10)) is split into what its inputs
// already carried (the worst of their relative noise) and what it added; the added part gives the
// layer's own SNR, the SNR it would have with exact inputs (estimated: it assumes the relative
// error passes through the layer unchanged). The quantized layers with the lowest own SNR are the
// worst; they are suggested to be kept in float as `edgeopt quantize --skip-tensor REGEX`
// matching their output tensors.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "eval/dataset.h"
#include "eval/metrics.h"
#include "graph/graph.h"
#include "runtime/interpreter.h"

namespace edgeopt::eval {

struct LayerMatch {
  int32_t ref_tensor = -1;
  int32_t cand_tensor = -1;
  int ref_op = -1;   // producer in the reference (-1: model input)
  int cand_op = -1;  // producer in the candidate (-1: model input)
  std::string method;  // "name", "position", "input", "output"
  bool is_output = false;
};

// Matches the tensors of `ref` to those of `cand` (main subgraphs), in reference op order.
std::vector<LayerMatch> MatchLayers(const Graph& ref, const Graph& cand, int* unmatched = nullptr);

struct LayerComparison {
  int ref_op = -1;
  std::string op;            // reference op type ("CONV_2D"; "input" for a model input)
  std::string tensor;        // reference tensor name
  std::string cand_tensor;   // candidate tensor name
  std::string cand_op;       // candidate op type
  std::vector<int32_t> shape;
  std::string cand_dtype;    // "int8", "float32", ...
  bool cand_quantized = false;
  std::string method;
  bool is_output = false;
  ErrorStats stats;
  double input_snr_db = 0;   // worst SNR of the layer's inputs (inf: exact inputs)
  double snr_drop_db = 0;    // max(0, input_snr_db - stats.snr_db)
  double own_snr_db = 0;     // estimated SNR with exact inputs (inf: the layer adds no error)
  bool flagged = false;      // quantized and RMSE/scale > kRmseOverScaleFlag
  // The candidate tensor is the reference times a positive factor per channel (last axis), as
  // cross-layer equalization leaves a producer's output: `stats` (and the SNRs) are then measured
  // after undoing the fitted factors, and the factors' range and the SNR as matched are kept.
  bool rescaled = false;
  double rescale_min = 1, rescale_max = 1;  // fitted reference/candidate factors per channel
  double snr_as_matched_db = std::numeric_limits<double>::infinity();
};

// Whether per-channel factors explain a tensor's error: fitting one positive factor per channel
// (reference ~ factor * candidate, least squares) must leave at most kRescaleResidualRatio of the
// error a single factor for the whole tensor leaves, and the factors must be far from 1 (one at
// least kRescaleFactorFar away, as a ratio). Quantization noise alone fits neither way.
// A fit needs many values per channel: with few, one factor per channel fits noise too (a
// 1001-class output over 8 samples would "fit" with factors from 0.3 to 5).
constexpr double kRescaleResidualRatio = 0.25;
constexpr double kRescaleFactorFar = 1.25;
constexpr int64_t kRescaleMinValuesPerChannel = 64;

// Per-channel sums for that fit, channel = index modulo the last dimension.
class ChannelFit {
 public:
  void Add(std::span<const float> ref, std::span<const float> cand, size_t channels);
  void Merge(const ChannelFit& o);
  // The fitted factors when the rule above holds, else empty.
  std::vector<float> RescaleFactors() const;

 private:
  std::vector<double> xx_, xy_, yy_;  // sum ref^2, ref*cand, cand^2 per channel
  int64_t values_ = 0;
};

struct OutputComparison {
  std::string name;
  std::vector<int32_t> shape;
  ErrorStats stats;
  bool classifier = false;
  AgreementAccumulator agreement;  // top-1 / top-5 agreement (classifier outputs)
};

struct CompareOptions {
  Preprocess pp;
  int threads = 1;          // samples compared in parallel (two interpreters each)
  int suggest = 3;          // layers to suggest keeping in float
  int worst = 5;            // layers to list as the worst
  std::function<void(size_t, size_t)> progress;  // (done, total)
};

struct CompareReport {
  size_t samples = 0;
  std::vector<LayerComparison> layers;  // reference op order (inputs first)
  std::vector<OutputComparison> outputs;
  int unmatched = 0;                    // reference tensors without a counterpart
  std::vector<size_t> worst;            // indices into `layers`, lowest own SNR first (quantized layers)
  std::vector<std::string> suggested_tensors;  // reference tensor names to keep in float
  std::string suggestion;               // "--skip-tensor '^(a|b)$'" (empty: nothing to suggest)
};

Expected<CompareReport> CompareLayers(std::shared_ptr<const rt::Model> ref, std::shared_ptr<const rt::Model> cand,
                                      const Dataset& data, const CompareOptions& options);

// A regular expression matching exactly the given names ("^(a|b\.c)$"), metacharacters escaped.
std::string ExactNamesRegex(const std::vector<std::string>& names);
// The same quoted for a POSIX shell.
std::string ShellQuote(const std::string& s);

}  // namespace edgeopt::eval
