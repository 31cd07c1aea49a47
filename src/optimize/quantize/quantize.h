// Post-training quantization of float .tflite graphs: float16, dynamic range, full integer int8
// and 16x8, writing models the official LiteRT runtime runs unchanged.
#pragma once

#include <functional>
#include <regex>
#include <string>
#include <vector>

#include "core/status.h"
#include "eval/host_tensor.h"
#include "graph/graph.h"

namespace edgeopt::optimize {

enum class QuantMode { kFloat16, kDynamic, kInt8, kInt16x8 };
const char* QuantModeName(QuantMode m);
bool ParseQuantMode(const std::string& s, QuantMode* out);

enum class Calibrator { kMinMax, kPercentile, kEntropy, kMse };
const char* CalibratorName(Calibrator c);
bool ParseCalibrator(const std::string& s, Calibrator* out);

// Model I/O type after full-integer quantization.
enum class IoType { kFloat, kInt8, kUInt8 };
bool ParseIoType(const std::string& s, IoType* out);

struct QuantizeOptions {
  QuantMode mode = QuantMode::kInt8;
  // Full integer: calibration samples (one vector of input tensors per sample, in input order).
  std::vector<std::vector<eval::HostTensor>> calibration;
  Calibrator calibrator = Calibrator::kMinMax;
  double percentile = 99.99;
  IoType io = IoType::kFloat;
  bool integer_only = false;            // fail instead of leaving float islands
  std::vector<std::string> skip_ops;    // op type names kept float ("SOFTMAX")
  std::string skip_tensor_regex;        // ops producing a matching tensor are kept float
  int64_t dynamic_min_elements = 1024;  // dynamic range: smaller weights stay float
  bool per_channel = true;              // conv/depthwise weights per output channel
  // Full integer: cross-layer range equalization of producer->consumer pairs before calibration,
  // and empirical correction of the bias for the mean error of weight quantization.
  bool equalize = true;
  bool bias_correction = true;
  // int8: calibration samples whose activations are, over a good part of the network, more than
  // this many times the median sample's are left out of the ranges (0: keep every sample; int16x8
  // always keeps them).
  double outlier_factor = 4.0;
  bool asymmetric_inputs = true;        // dynamic range: hybrid ops quantize activations asymmetrically
  int threads = 1;                      // calibration inference threads
  // Progress of calibration: (done, total).
  std::function<void(int, int)> progress;
};

struct TensorRange {
  std::string name;
  float min = 0, max = 0;
  float scale = 0;
  int64_t zero_point = 0;
};

struct QuantizeReport {
  QuantMode mode = QuantMode::kInt8;
  size_t constant_bytes_before = 0;
  size_t constant_bytes_after = 0;
  int weights_quantized = 0;
  int weights_kept_float = 0;  // (dynamic) too small or consumed by unsupported ops
  int ops_quantized = 0;
  std::vector<std::string> float_ops;        // "op 12 (RFFT2D)" left in float
  std::vector<std::string> conversion_ops;   // QUANTIZE/DEQUANTIZE inserted at float boundaries
  std::vector<TensorRange> ranges;           // calibration ranges per activation tensor
  int calibration_samples = 0;
  // Calibration samples (indices into options.calibration) left out of the ranges as outliers,
  // with their inflation (upper quartile over tensors of magnitude / the median sample's magnitude).
  std::vector<std::pair<size_t, double>> outlier_samples;
  int equalized_pairs = 0;     // producer->consumer pairs rescaled by cross-layer equalization
  int bias_corrected_ops = 0;  // ops whose bias absorbed the mean weight-quantization error
  int densified = 0;           // DENSIFY ops of sparse constant weights folded into dense weights
};

// Quantizes `g` (a float model) in place.
Expected<QuantizeReport> QuantizeModel(Graph& g, const QuantizeOptions& options);

// True if the model already has quantized weights or activations (int8/uint8/int16 tensors
// with scales, or float16 constants): quantizing again needs `edgeopt dequantize` first.
bool IsAlreadyQuantized(const Graph& g, std::string* why);

}  // namespace edgeopt::optimize
