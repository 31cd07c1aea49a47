// Field-by-field comparison of two Graphs: tensors, ops, options, quantization, buffer bytes,
// signatures and metadata. Used by the round-trip tests and `edgeopt convert --verify`.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"

namespace edgeopt {

// Returns human-readable differences (at most `max_diffs`); empty when the graphs are equal.
// Buffers are compared by the bytes each tensor/metadata entry refers to, so renumbering or
// deduplicating buffers is not a difference.
std::vector<std::string> DiffGraphs(const Graph& a, const Graph& b, size_t max_diffs = 20);

// Compares what two graphs compute rather than how they are laid out: model fields, subgraph
// inputs/outputs, ops in order (code, version, options) and the tensors each op reads and writes,
// matched through the wiring and compared by content (name, shape, type, quantization, sparsity,
// constant bytes), plus signatures and metadata. Tensors and buffers that nothing refers to and
// the numbering of tensors and buffers are ignored, so Graph::DropUnused and DedupeBuffers leave
// no differences; two ops reading tensors that are distinct in one graph but one tensor in the
// other do differ. Used by `edgeopt convert --verify` after --strip-unused/--dedupe.
std::vector<std::string> DiffGraphsSemantic(const Graph& a, const Graph& b, size_t max_diffs = 20);

// Serialized bytes of an op's builtin options (both unions), for equality checks.
std::vector<uint8_t> OptionsBytes(const Operator& op);

}  // namespace edgeopt
