// Full-integer post-training quantization (int8 and 16x8) following the LiteRT quantization
// spec: calibrated activation ranges, symmetric per-channel int8 weights, int32 (int64 for
// 16x8) biases with scale input×weight, fixed output parameters for SOFTMAX/LOGISTIC/TANH,
// shared parameters where the spec requires them, and QUANTIZE/DEQUANTIZE at float boundaries.
#pragma once

#include "core/status.h"
#include "graph/graph.h"
#include "optimize/quantize/quantize.h"

namespace edgeopt::optimize {

Status QuantizeFullInteger(Graph& g, const QuantizeOptions& options, QuantizeReport* report);

// Whether edgeopt's quantizer can quantize this op type in this mode (for reports and tools).
bool CanQuantizeOp(tflite::BuiltinOperator code, QuantMode mode);

}  // namespace edgeopt::optimize
