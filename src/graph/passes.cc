#include "graph/passes.h"

#include <algorithm>

namespace edgeopt {

void ReplaceTensorEverywhere(Graph& g, int subgraph, int32_t from, int32_t to) {
  Subgraph& sg = g.subgraphs[subgraph];
  sg.ReplaceTensorUses(from, to);
  for (auto& sig : g.signatures) {
    if (static_cast<int>(sig.subgraph_index) != subgraph) continue;
    for (auto& m : sig.outputs)
      if (static_cast<int32_t>(m.tensor_index) == from) m.tensor_index = static_cast<uint32_t>(to);
  }
}

void BypassOp(Graph& g, int subgraph, int op_index) {
  Subgraph& sg = g.subgraphs[subgraph];
  const int32_t in = sg.ops[op_index].inputs.at(0);
  const int32_t out = sg.ops[op_index].outputs.at(0);
  // Keep the output's name on the surviving tensor when it is a model output (users look it up).
  const bool out_is_model_output = std::find(sg.outputs.begin(), sg.outputs.end(), out) != sg.outputs.end();
  const bool in_is_model_input = std::find(sg.inputs.begin(), sg.inputs.end(), in) != sg.inputs.end();
  ReplaceTensorEverywhere(g, subgraph, out, in);
  if (out_is_model_output && !in_is_model_input) sg.tensors[in].name = sg.tensors[out].name;
  sg.RemoveOp(op_index);
}

tflite::ActivationFunctionType* FusedActivation(Operator& op) {
  void* v = op.options.value;
  if (!v) return nullptr;
#define EDGEOPT_ACT_CASE(Name)                                                                \
  case tflite::BuiltinOptions_##Name: {                                                       \
    auto* o = static_cast<tflite::Name##T*>(v);                                               \
    if constexpr (requires { o->fused_activation_function; }) return &o->fused_activation_function; \
    return nullptr;                                                                           \
  }
  switch (op.options.type) {
    EDGEOPT_ACT_CASE(Conv2DOptions)
    EDGEOPT_ACT_CASE(DepthwiseConv2DOptions)
    EDGEOPT_ACT_CASE(FullyConnectedOptions)
    EDGEOPT_ACT_CASE(AddOptions)
    EDGEOPT_ACT_CASE(SubOptions)
    EDGEOPT_ACT_CASE(MulOptions)
    EDGEOPT_ACT_CASE(DivOptions)
    EDGEOPT_ACT_CASE(Pool2DOptions)
    EDGEOPT_ACT_CASE(ConcatenationOptions)
    EDGEOPT_ACT_CASE(TransposeConvOptions)
    EDGEOPT_ACT_CASE(L2NormOptions)
    EDGEOPT_ACT_CASE(SVDFOptions)
    EDGEOPT_ACT_CASE(RNNOptions)
    EDGEOPT_ACT_CASE(SequenceRNNOptions)
    EDGEOPT_ACT_CASE(BidirectionalSequenceRNNOptions)
    EDGEOPT_ACT_CASE(LSTMOptions)
    EDGEOPT_ACT_CASE(UnidirectionalSequenceLSTMOptions)
    EDGEOPT_ACT_CASE(BidirectionalSequenceLSTMOptions)
    EDGEOPT_ACT_CASE(Conv3DOptions)
    default:
      return nullptr;
  }
#undef EDGEOPT_ACT_CASE
}

bool IsUnread(const Subgraph& sg, int32_t t) {
  if (std::find(sg.outputs.begin(), sg.outputs.end(), t) != sg.outputs.end()) return false;
  for (const auto& op : sg.ops)
    if (std::find(op.inputs.begin(), op.inputs.end(), t) != op.inputs.end()) return false;
  return true;
}

}  // namespace edgeopt
