// The Graph IR: a mutable, in-memory form of a .tflite model.
//
// It mirrors the file's structure (subgraphs of tensors and operators, a shared buffer table,
// signatures, metadata) so that read -> write is lossless, while being easy to edit: operators
// carry their builtin code directly (the writer rebuilds the operator-code table), options are
// the schema's typed object-API unions, and constant data is a view into the mapped source file
// until a pass replaces it with owned bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "tflite_generated.h"

namespace edgeopt {

class MappedFile;

// Constant data. Index 0 of Graph::buffers is the empty sentinel that tensors without data
// point to, as in the file format.
class Buffer {
 public:
  Buffer() = default;
  static Buffer View(const uint8_t* data, size_t size) {
    Buffer b;
    b.view_ = data;
    b.view_size_ = size;
    return b;
  }
  static Buffer Owned(std::vector<uint8_t> bytes) {
    Buffer b;
    b.owned_ = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
    return b;
  }
  template <typename T>
  static Buffer FromValues(std::span<const T> values) {
    const auto* p = reinterpret_cast<const uint8_t*>(values.data());
    return Owned(std::vector<uint8_t>(p, p + values.size_bytes()));
  }

  std::span<const uint8_t> bytes() const {
    if (owned_) return {owned_->data(), owned_->size()};
    return {view_, view_size_};
  }
  size_t size() const { return owned_ ? owned_->size() : view_size_; }
  bool empty() const { return size() == 0; }
  bool is_view() const { return !owned_ && view_ != nullptr; }

  template <typename T>
  std::span<const T> as() const {
    auto b = bytes();
    return {reinterpret_cast<const T*>(b.data()), b.size() / sizeof(T)};
  }

 private:
  const uint8_t* view_ = nullptr;
  size_t view_size_ = 0;
  // Shared so that copying a Graph does not copy rewritten weights; passes replace, never mutate.
  std::shared_ptr<const std::vector<uint8_t>> owned_;
};

struct QuantParams {
  std::vector<float> scale;
  std::vector<int64_t> zero_point;
  std::vector<float> min;
  std::vector<float> max;
  int32_t quantized_dimension = 0;
  // Quantization details (custom, blockwise, multi-axis; rare), kept for a lossless round trip.
  tflite::QuantizationDetailsUnion details;

  bool has_scale() const { return !scale.empty(); }
  bool per_axis() const { return scale.size() > 1; }
  // Zero point for channel c (per-tensor when there is one).
  int64_t zp(size_t c = 0) const { return zero_point.empty() ? 0 : zero_point[zero_point.size() == 1 ? 0 : c]; }
  float sc(size_t c = 0) const { return scale[scale.size() == 1 ? 0 : c]; }
};

struct Tensor {
  std::string name;
  std::vector<int32_t> shape;
  std::vector<int32_t> shape_signature;  // -1 marks a dynamic dimension; empty if absent
  DType type = DType::kFloat32;
  uint32_t buffer = 0;  // index into Graph::buffers; 0 means no constant data
  std::optional<QuantParams> quant;  // present iff the file had a quantization table
  std::shared_ptr<const tflite::SparsityParametersT> sparsity;  // null for dense tensors
  bool is_variable = false;
  bool has_rank = false;
  struct VariantSubType {
    std::vector<int32_t> shape;
    DType type = DType::kFloat32;
    bool has_rank = false;
  };
  std::vector<VariantSubType> variant_tensors;
  uint32_t external_buffer = 0;  // index into Graph::external_buffers; 0 = uses `buffer`

  int64_t num_elements() const {
    int64_t n = 1;
    for (int32_t d : shape) n *= d;
    return n;
  }
  bool is_quantized() const { return quant && quant->has_scale(); }
};

constexpr int32_t kNoTensor = -1;  // an omitted optional operator input

struct Operator {
  tflite::BuiltinOperator code = tflite::BuiltinOperator_ADD;
  std::string custom_code;  // for BuiltinOperator_CUSTOM
  int32_t version = 1;
  std::vector<int32_t> inputs;
  std::vector<int32_t> outputs;
  std::vector<int32_t> intermediates;
  tflite::BuiltinOptionsUnion options;
  tflite::BuiltinOptions2Union options2;
  std::vector<uint8_t> custom_options;
  bool has_custom_options = false;  // distinguishes an empty vector from an absent one
  tflite::CustomOptionsFormat custom_options_format = tflite::CustomOptionsFormat_FLEXBUFFERS;
  std::vector<bool> mutating_variable_inputs;
  int32_t debug_metadata_index = -1;

  bool is_custom() const { return code == tflite::BuiltinOperator_CUSTOM; }
  // "CONV_2D", or the custom code for custom ops.
  std::string type_name() const;
};

struct TensorMap {
  std::string name;
  uint32_t tensor_index = 0;
};

struct SignatureDef {
  std::vector<TensorMap> inputs;
  std::vector<TensorMap> outputs;
  std::string signature_key;
  uint32_t subgraph_index = 0;
};

struct Metadata {
  std::string name;
  uint32_t buffer = 0;
};

struct Subgraph {
  std::string name;
  std::vector<Tensor> tensors;
  std::vector<int32_t> inputs;
  std::vector<int32_t> outputs;
  std::vector<Operator> ops;
  int32_t debug_metadata_index = -1;

  // Index of the op producing tensor t, or -1 (graph input, constant, variable).
  int FindProducer(int32_t t) const;
  // Indices of ops reading tensor t.
  std::vector<int> FindConsumers(int32_t t) const;
  // Index of a tensor by name, or -1.
  int FindTensor(const std::string& name) const;

  // Makes every reader of `from` (ops and subgraph outputs) read `to` instead.
  void ReplaceTensorUses(int32_t from, int32_t to);
  int32_t AddTensor(Tensor t);
  // Inserts before position `at` (ops.size() appends) and returns its index.
  int InsertOp(int at, Operator op);
  void RemoveOp(int index);
};

struct Graph {
  uint32_t version = 3;
  std::string description;
  std::vector<Subgraph> subgraphs;
  std::vector<Buffer> buffers;  // buffers[0] is the empty sentinel
  std::vector<Metadata> metadata;
  std::vector<SignatureDef> signatures;
  std::vector<int32_t> metadata_buffer;  // deprecated field, kept for round trip
  // Weights stored in separate files (newest LiteRT); kept for round trip, not loaded.
  std::vector<std::string> external_buffer_groups;
  struct ExternalBuffer {
    uint32_t id = 0;
    uint32_t group = 0;
    uint64_t offset = 0;
    uint64_t length = 0;
    std::string packing;
  };
  std::vector<ExternalBuffer> external_buffers;

  // Keeps the mapped file alive while any buffer views into it.
  std::shared_ptr<const MappedFile> source;

  Graph() { buffers.emplace_back(); }

  Subgraph& main() { return subgraphs.at(0); }
  const Subgraph& main() const { return subgraphs.at(0); }

  uint32_t AddBuffer(Buffer b) {
    buffers.push_back(std::move(b));
    return static_cast<uint32_t>(buffers.size() - 1);
  }
  // Constant bytes of a tensor (empty span when it has none).
  std::span<const uint8_t> TensorData(const Tensor& t) const {
    return t.buffer < buffers.size() ? buffers[t.buffer].bytes() : std::span<const uint8_t>();
  }
  bool IsConstant(const Tensor& t) const { return t.buffer != 0 && t.buffer < buffers.size() && !buffers[t.buffer].empty(); }

  // Drops tensors no op/input/output/signature references and buffers no tensor or metadata
  // references, renumbering the rest. Returns the counts removed.
  struct PruneStats {
    int tensors = 0;
    int buffers = 0;
  };
  PruneStats DropUnused();
  int DropUnusedTensors();
  int DropUnusedBuffers();
  // Makes tensors with byte-identical constant data share one buffer. Returns buffers merged.
  int DedupeBuffers();
};

// Name of a builtin operator as in the schema ("CONV_2D"); "UNKNOWN(<n>)" if out of range.
std::string BuiltinName(tflite::BuiltinOperator code);
// Total constant bytes referenced by tensors of `g` (each buffer counted once).
size_t ConstantBytes(const Graph& g);

}  // namespace edgeopt
