// Which constant tensors count as prunable/clusterable weights, shared by prune and cluster.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "graph/graph.h"

namespace edgeopt::optimize {

struct WeightRef {
  int subgraph = 0;
  int32_t tensor = 0;
  int op = 0;  // first consumer
  tflite::BuiltinOperator op_code = tflite::BuiltinOperator_CONV_2D;
  // Axis of output channels and of input channels in the weight's layout (-1 if none).
  int out_axis = 0;
  int in_axis = -1;
};

struct WeightSelection {
  std::string scope_regex;            // tensor names to include (empty: all); searched, not fully matched
  std::vector<std::string> skip_ops;  // op types to leave alone ("DEPTHWISE_CONV_2D")
  int64_t min_params = 0;             // skip smaller tensors
};

// Float32 constant weights of CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, TRANSPOSE_CONV,
// BATCH_MATMUL (constant right-hand operand) and UNIDIRECTIONAL_SEQUENCE_LSTM (input, recurrent
// and projection weights), honouring the selection. Biases are never included. A tensor read by
// several ops is listed once, under its first consumer. Tensors left out by the selection are
// described in *skipped. Errors: a bad regex, an unknown --skip-op name.
Expected<std::vector<WeightRef>> SelectWeights(const Graph& g, const WeightSelection& sel,
                                               std::vector<std::string>* skipped);

// Op type names SelectWeights looks at (for --skip-op validation and help text).
const std::vector<std::string>& WeightOpNames();

// Ok for a float model; an error suggesting `edgeopt dequantize` when the model already has
// quantized (int8/uint8/int16/int4) or float16 weights. `what` names the pass ("prune").
Status RequireFloatModel(const Graph& g, const std::string& what);

}  // namespace edgeopt::optimize
