#include "runtime/constant_fold.h"

namespace edgeopt::rt {

bool MayFold(const Operator& op) {
  switch (op.code) {
    case tflite::BuiltinOperator_CUSTOM:
    case tflite::BuiltinOperator_WHILE:
    case tflite::BuiltinOperator_IF:
    case tflite::BuiltinOperator_CALL_ONCE:
    case tflite::BuiltinOperator_CALL:
    case tflite::BuiltinOperator_STABLEHLO_COMPOSITE:  // runs a subgraph, which may hold state
    case tflite::BuiltinOperator_VAR_HANDLE:
    case tflite::BuiltinOperator_READ_VARIABLE:
    case tflite::BuiltinOperator_ASSIGN_VARIABLE:
    case tflite::BuiltinOperator_RANDOM_UNIFORM:
    case tflite::BuiltinOperator_RANDOM_STANDARD_NORMAL:
    case tflite::BuiltinOperator_MULTINOMIAL:
    case tflite::BuiltinOperator_HASHTABLE:
    case tflite::BuiltinOperator_HASHTABLE_FIND:
    case tflite::BuiltinOperator_HASHTABLE_IMPORT:
    case tflite::BuiltinOperator_HASHTABLE_SIZE:
      return false;
    default:
      return true;
  }
}

bool IsConstantOrFoldable(const Graph& graph, const Subgraph& sg, int32_t t, int max_depth) {
  if (t < 0 || static_cast<size_t>(t) >= sg.tensors.size()) return false;
  if (graph.IsConstant(sg.tensors[t])) return true;
  if (max_depth <= 0) return false;
  const ScopedProducerIndex* index = ScopedProducerIndex::For(sg);
  const int producer = index ? index->producer(t) : sg.FindProducer(t);
  if (producer < 0) return false;
  const Operator& op = sg.ops[producer];
  if (op.inputs.empty() || !MayFold(op)) return false;
  for (int32_t in : op.inputs)
    if (in >= 0 && !IsConstantOrFoldable(graph, sg, in, max_depth - 1)) return false;
  return true;
}

bool IsConstantOp(const Graph& graph, const Subgraph& sg, int k) {
  if (k < 0 || static_cast<size_t>(k) >= sg.ops.size()) return false;
  const Operator& op = sg.ops[static_cast<size_t>(k)];
  if (!MayFold(op) || op.inputs.empty()) return false;
  for (int32_t t : op.inputs)
    if (t >= 0 && !IsConstantOrFoldable(graph, sg, t)) return false;
  return true;
}

namespace {
thread_local const ScopedProducerIndex* g_innermost = nullptr;
}  // namespace

ScopedProducerIndex::ScopedProducerIndex(const Subgraph& sg)
    : sg_(&sg), producer_(sg.tensors.size(), -1), outer_(g_innermost) {
  for (size_t i = 0; i < sg.ops.size(); ++i)
    for (int32_t o : sg.ops[i].outputs)
      if (o >= 0 && static_cast<size_t>(o) < producer_.size() && producer_[static_cast<size_t>(o)] < 0)
        producer_[static_cast<size_t>(o)] = static_cast<int>(i);
  g_innermost = this;
}

ScopedProducerIndex::~ScopedProducerIndex() { g_innermost = outer_; }

const ScopedProducerIndex* ScopedProducerIndex::For(const Subgraph& sg) {
  for (const ScopedProducerIndex* s = g_innermost; s; s = s->outer_)
    if (s->sg_ == &sg) return s;
  return nullptr;
}

}  // namespace edgeopt::rt
