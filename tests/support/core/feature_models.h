// Models made to cover the format rather than to compute anything: every tensor and model feature
// the writer and reader must carry through a round trip. Shared by the builder tests, the bad
// input tests (as a base to corrupt) and the fuzzer's seed corpus.
#pragma once

#include <memory>

#include "graph/graph.h"

namespace edgeopt::testing {

// Three subgraphs (main, then, else) with: per-axis quantized int8 weights and int32 bias,
// per-tensor and min/max-only quantization, custom quantization details, a CSR sparse constant,
// a variable tensor, a variant tensor with subtypes, shape_signature with a dynamic dim, has_rank,
// a string constant, an int4 constant, a custom op with custom options, intermediates and
// mutating-variable flags, a BuiltinOptions2 op (STABLEHLO_CONCATENATE), an IF op calling the
// other subgraphs, signatures, metadata, the legacy metadata_buffer and a description.
Graph EveryFeatureModel();

// A 4x4 float matrix stored as CSR: rows {0: [2], 1: [], 2: [0, 3], 3: [1]} (4 values).
std::shared_ptr<tflite::SparsityParametersT> CsrSparsity4x4();

// TFLite's string tensor encoding of `strings`.
std::vector<uint8_t> StringTensorBytes(const std::vector<std::string>& strings);

}  // namespace edgeopt::testing
