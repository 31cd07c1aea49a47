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

// Serialized bytes of an op's builtin options (both unions), for equality checks.
std::vector<uint8_t> OptionsBytes(const Operator& op);

}  // namespace edgeopt
