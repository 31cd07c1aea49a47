// The inverse of quantization: any quantized or float16 model becomes a pure float32 model.
// Quantized constants are dequantized (per-tensor or per-axis), quantized activations become
// float32, int32/int64 biases become float, QUANTIZE/DEQUANTIZE ops disappear, LSTM
// intermediates (integer-only gate scales) are dropped, and the model's I/O becomes float.
#pragma once

#include "core/status.h"
#include "graph/graph.h"

namespace edgeopt::optimize {

struct DequantizeReport {
  int constants_dequantized = 0;
  int activations_converted = 0;
  int ops_removed = 0;
  size_t bytes_before = 0;  // constant bytes
  size_t bytes_after = 0;
};

Expected<DequantizeReport> DequantizeModel(Graph& g);

}  // namespace edgeopt::optimize
