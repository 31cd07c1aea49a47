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
  int op = 0;                      // first consumer
  tflite::BuiltinOperator op_code;
  // Axis of output channels and of input channels in the weight's layout (-1 if none).
  int out_axis = 0;
  int in_axis = -1;
};

struct WeightSelection {
  std::string scope_regex;            // tensor names to include (empty: all)
  std::vector<std::string> skip_ops;  // op types to leave alone
  int64_t min_params = 0;             // skip smaller tensors
};

// Float32 constant weights of CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, TRANSPOSE_CONV,
// BATCH_MATMUL (constant operand) and UNIDIRECTIONAL_SEQUENCE_LSTM, honouring the selection.
// Biases are never included. Errors: bad regex.
Expected<std::vector<WeightRef>> SelectWeights(const Graph& g, const WeightSelection& sel, std::vector<std::string>* skipped);

}  // namespace edgeopt::optimize
