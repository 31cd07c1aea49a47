// One inference on user inputs and a readable account of its outputs: the library side of
// `edgeopt run`. The CLI only parses flags, calls these in order and prints.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "eval/host_tensor.h"
#include "eval/inputs.h"
#include "runtime/interpreter.h"

namespace edgeopt::eval {

// A copy of a runtime tensor (name, dtype, current shape, bytes, per-tensor quantization).
HostTensor CopyTensor(const rt::RtTensor& t);
std::vector<HostTensor> CopyOutputs(rt::Interpreter& interp);

// Min / max / mean over the real (dequantized) values; NaN and infinities are counted, not used.
struct ValueStats {
  double min = 0, max = 0, mean = 0;
  int64_t count = 0;      // finite values
  int64_t nonfinite = 0;  // NaN / inf
};
ValueStats StatsOf(const HostTensor& t);

// A classifier-like result: exactly one output, shaped [N] or [1,N] with N > 1, numeric.
bool IsClassifierLike(const std::vector<HostTensor>& outputs);

// "uint8[1,1001] (scale 0.00390625, zero point 0)"
std::string DescribeTensor(const HostTensor& t);

struct RunReportOptions {
  std::string model;
  int top_k = 5;
  const std::vector<std::string>* labels = nullptr;  // index i <-> line i
  std::string labels_path;
  double invoke_ms = 0;
  int threads = 1;
  std::vector<std::string> written;  // files written (listed at the end)
};
// The summary printed by `edgeopt run`: inputs (where each came from), the invoke time, then the
// top-k with labels for a classifier-like output, otherwise name/shape/dtype/min/max/mean of each
// output (dequantized values for quantized tensors).
std::string FormatRunReport(const std::vector<LoadedInput>& inputs, const std::vector<HostTensor>& outputs,
                            const RunReportOptions& options);
// A warning when the labels file does not have one line per class ("" when it matches).
std::string LabelCountWarning(size_t num_labels, int64_t num_classes, const std::string& labels_path);

// Writes outputs[i] to DIR/output_<i>.npy (raw values in the output's dtype). Creates DIR. All or
// nothing: every file is first written completely to a temporary name, then all are renamed; on
// any failure the temporaries (and DIR, if this call created it) are removed. Returns the paths.
Expected<std::vector<std::string>> WriteOutputsNpy(const std::string& dir, const std::vector<HostTensor>& outputs);

}  // namespace edgeopt::eval
