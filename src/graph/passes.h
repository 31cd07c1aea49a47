// Graph rewrites shared by the optimizer passes.
#pragma once

#include "graph/graph.h"

namespace edgeopt {

// Removes op `op_index` whose output equals its first input (QUANTIZE/DEQUANTIZE after
// dequantization, identity RESHAPE...): readers of the output, subgraph outputs and signature
// entries are redirected to the input.
void BypassOp(Graph& g, int subgraph, int op_index);

// Redirects every reader of tensor `from` (ops, subgraph outputs, signature outputs) to `to`.
void ReplaceTensorEverywhere(Graph& g, int subgraph, int32_t from, int32_t to);

// The op's fused activation field, or nullptr if its options have none.
tflite::ActivationFunctionType* FusedActivation(Operator& op);
inline const tflite::ActivationFunctionType* FusedActivation(const Operator& op) {
  return FusedActivation(const_cast<Operator&>(op));
}

// True if `t` is read by no op and is not a subgraph output.
bool IsUnread(const Subgraph& sg, int32_t t);

}  // namespace edgeopt
