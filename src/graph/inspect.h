// ModelSummary: what a model is, computed from a Graph (no runtime needed). `edgeopt inspect`
// prints it as text or JSON; other tools and tests use the struct directly.
//
// Rules worth knowing (also in the README):
//  * Parameters are the elements of constant tensors that an op reads and that hold weights:
//    floating-point tensors, int8/uint8/int16/int4 tensors, and int32/int64 tensors that carry
//    quantization parameters (biases). Unquantized integer constants (shapes, axes, paddings,
//    indices), bool and string constants are not parameters. A buffer shared by several
//    tensors is counted once.
//  * Each op gets a precision from the types of its non-constant float/quantized tensors and of
//    its constant weights (see OpPrecision below); the model's quantization scheme is derived
//    from the counts of ops per precision and the dtypes of the main subgraph's inputs/outputs.
//  * Constant bytes are attributed to the first op (in subgraph order) that reads them, so a
//    buffer shared by several ops or tensors is counted once.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "graph/graph.h"

namespace edgeopt {

struct TensorSummary {
  int32_t index = kNoTensor;  // kNoTensor: an omitted optional op input
  std::string name;
  std::vector<int32_t> shape;  // from shape_signature when present (-1 = dynamic), else shape
  DType dtype = DType::kFloat32;
  bool constant = false;
  // Quantization: none, one scale (per-tensor) or several (per-channel along quant_axis).
  size_t num_scales = 0;
  float scale = 0.0f;       // the first scale
  int64_t zero_point = 0;   // the first zero point
  int32_t quant_axis = 0;

  bool per_channel() const { return num_scales > 1; }
};

// Precision classes of ops (strings so that JSON and text agree):
//   "float32", "float16", ...   compute on float activations of that type, float or no weights
//   "hybrid"                    float activations, int8/uint8/int4 constant weights (dynamic range)
//   "int8", "uint8", "int16"    compute on quantized activations of that type
//   "quantize"                  QUANTIZE from float to an integer type (model edge)
//   "requantize"                QUANTIZE between integer types (e.g. uint8 input to int8)
//   "dequantize"                DEQUANTIZE of activations (integer to float; model edge)
//   "dequantize_weights_fp16"   DEQUANTIZE of constant float16 weights (float16 weight storage)
//   "dequantize_weights_int8"   DEQUANTIZE of constant int8/uint8 weights (weight-only int8)
//   "other"                     no float or quantized tensors (shape math, int32/bool logic), or
//                               a type conversion such as CAST between float and integer
struct OpSummary {
  int index = 0;
  std::string type;  // "CONV_2D", or the custom code for custom ops
  int32_t version = 1;
  std::vector<TensorSummary> inputs;
  std::vector<TensorSummary> outputs;
  std::string precision;
};

struct SubgraphSummary {
  int index = 0;
  std::string name;
  size_t num_tensors = 0;
  std::vector<TensorSummary> inputs;
  std::vector<TensorSummary> outputs;
  std::vector<OpSummary> ops;
};

struct SignatureSummary {
  std::string key;
  uint32_t subgraph = 0;
  struct Entry {
    std::string name;
    uint32_t tensor = 0;
  };
  std::vector<Entry> inputs;
  std::vector<Entry> outputs;
};

struct MetadataSummary {
  std::string name;
  uint64_t bytes = 0;
};

// Counts, in a fixed order for stable output.
using CountList = std::vector<std::pair<std::string, uint64_t>>;

struct QuantizationScheme {
  // Stable identifier: "float32", "float16", "float16_weights", "weight_only_int8",
  // "dynamic_range", "full_integer_int8", "full_integer_uint8", "int16x8", "mixed", "none".
  std::string id;
  // In words, e.g. "full integer int8 (uint8 I/O with QUANTIZE at the edges)".
  std::string description;
  CountList ops_by_precision;  // precision -> op count (all subgraphs), most frequent first
};

struct ModelSummary {
  std::string path;         // the file read ("" for in-memory graphs)
  uint64_t file_size = 0;   // bytes of the file (0 for in-memory graphs)
  uint32_t schema_version = 0;
  std::string description;  // producer, e.g. "TOCO Converted." or "MLIR Converted."
  std::vector<SubgraphSummary> subgraphs;
  CountList op_histogram;   // op type -> count over all subgraphs, most frequent first
  uint64_t num_ops = 0;     // over all subgraphs
  uint64_t parameters = 0;  // see the rule at the top of this file
  uint64_t constant_bytes = 0;         // constant data of tensors, each buffer once
  uint64_t unused_constant_bytes = 0;  // part of constant_bytes that no op reads
  uint64_t metadata_bytes = 0;
  CountList constant_bytes_by_dtype;   // dtype -> bytes, largest first
  CountList constant_bytes_by_op;      // op type -> bytes of constants it reads, largest first
  size_t num_buffers = 0;              // entries in the buffer table, including the empty buffer 0
  size_t unused_tensors = 0;           // tensors that no op, input, output or signature refers to
  std::vector<SignatureSummary> signatures;
  std::vector<MetadataSummary> metadata;
  QuantizationScheme quantization;
};

// Computes the summary. Tolerates graphs that a reader would reject (out-of-range indices are
// shown as "<invalid>"), so it can describe graphs under construction too.
ModelSummary SummarizeModel(const Graph& graph);

// Shape as "[1,224,224,3]" ("[]" for scalars, -1 for dynamic dimensions).
std::string ShapeString(const std::vector<int32_t>& shape);
// "none", "scale 0.0078125, zero point 128" or "per-channel (32 scales, axis 3)".
std::string QuantizationString(const TensorSummary& t);

struct SummaryTextOptions {
  // Ops listed for `ops_subgraph`: -1 lists all, 0 none; longer lists are cut with a note.
  int max_ops = 40;
  int ops_subgraph = 0;
  // Appended to the "... N more ops not shown" note, e.g. how to see them all.
  std::string truncation_hint;
};
// Human-readable report (several sections, aligned tables).
std::string SummaryToText(const ModelSummary& s, const SummaryTextOptions& options = {});
// JSON document with the keys documented in the README ("edgeopt inspect --json").
std::string SummaryToJson(const ModelSummary& s, int indent = 2);

}  // namespace edgeopt
