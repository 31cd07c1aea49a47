// GraphBuilder: makes models in code (tests, generated cases, importers). Weights come from a
// seeded generator so every generated model is reproducible.
//
//   GraphBuilder b;
//   auto x = b.Input("x", DType::kFloat32, {1, 8, 8, 3});
//   auto w = b.ConstRandom("w", DType::kFloat32, {4, 3, 3, 3});
//   auto bias = b.ConstRandom("b", DType::kFloat32, {4});
//   auto y = b.Tensor("y", DType::kFloat32, {1, 8, 8, 4});
//   tflite::Conv2DOptionsT o; o.padding = tflite::Padding_SAME; o.stride_w = o.stride_h = 1;
//   b.Op(tflite::BuiltinOperator_CONV_2D, {x, w, bias}, {y}, o);
//   b.Output(y);
//   Graph g = b.Finish();
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace edgeopt {

// Per-tensor (one scale) or per-axis quantization for builder calls.
QuantParams Quant(float scale, int64_t zero_point);
QuantParams QuantPerAxis(std::vector<float> scales, int32_t axis, std::vector<int64_t> zero_points = {});

class GraphBuilder {
 public:
  explicit GraphBuilder(uint64_t seed = 1);

  // A subgraph input (non-constant, appended to the inputs list).
  int32_t Input(const std::string& name, DType type, std::vector<int32_t> shape,
                std::optional<QuantParams> quant = std::nullopt);
  // An intermediate or output tensor (no data).
  int32_t Tensor(const std::string& name, DType type, std::vector<int32_t> shape,
                 std::optional<QuantParams> quant = std::nullopt);
  // A constant from raw bytes (must match shape × type size, except sparse/int4/string).
  int32_t ConstBytes(const std::string& name, DType type, std::vector<int32_t> shape, std::vector<uint8_t> bytes,
                     std::optional<QuantParams> quant = std::nullopt);
  template <typename T>
  int32_t Const(const std::string& name, DType type, std::vector<int32_t> shape, const std::vector<T>& values,
                std::optional<QuantParams> quant = std::nullopt) {
    const auto* p = reinterpret_cast<const uint8_t*>(values.data());
    return ConstBytes(name, type, std::move(shape), std::vector<uint8_t>(p, p + values.size() * sizeof(T)),
                      std::move(quant));
  }
  // A constant with seeded random values: floats uniform in [lo, hi]; integer types uniform over
  // [lo, hi] rounded (clamped to the type's range); bool 0/1.
  int32_t ConstRandom(const std::string& name, DType type, std::vector<int32_t> shape, double lo = -1.0,
                      double hi = 1.0, std::optional<QuantParams> quant = std::nullopt);
  // A variable tensor (e.g. LSTM state), zero-initialized.
  int32_t Variable(const std::string& name, DType type, std::vector<int32_t> shape,
                   std::optional<QuantParams> quant = std::nullopt);

  // Adds an op; `options` is any schema options table (Conv2DOptionsT, AddOptionsT, ...).
  template <typename Options>
  int Op(tflite::BuiltinOperator code, std::vector<int32_t> inputs, std::vector<int32_t> outputs, Options options,
         int32_t version = 1) {
    tflite::BuiltinOptionsUnion u;
    u.Set(std::move(options));
    return AddOp(code, std::move(inputs), std::move(outputs), std::move(u), version);
  }
  // An op without options.
  int Op(tflite::BuiltinOperator code, std::vector<int32_t> inputs, std::vector<int32_t> outputs, int32_t version = 1) {
    return AddOp(code, std::move(inputs), std::move(outputs), tflite::BuiltinOptionsUnion(), version);
  }
  // An op with BuiltinOptions2 (StableHLO-era ops).
  int AddOp2(tflite::BuiltinOperator code, std::vector<int32_t> inputs, std::vector<int32_t> outputs,
             tflite::BuiltinOptions2Union options2, int32_t version = 1);
  int AddOp(tflite::BuiltinOperator code, std::vector<int32_t> inputs, std::vector<int32_t> outputs,
            tflite::BuiltinOptionsUnion options, int32_t version = 1);
  int CustomOp(const std::string& custom_code, std::vector<int32_t> inputs, std::vector<int32_t> outputs,
               std::vector<uint8_t> custom_options = {});

  void Output(int32_t tensor);

  // Starts a new subgraph (for control flow); subsequent calls add to it. Returns its index.
  int NewSubgraph(const std::string& name = "");
  void SetSubgraph(int index);
  void AddSignature(const std::string& key, int subgraph = 0);
  void SetDescription(std::string d) { graph_.description = std::move(d); }
  void AddMetadata(const std::string& name, std::vector<uint8_t> bytes);

  Subgraph& current() { return graph_.subgraphs[current_]; }
  Graph& graph() { return graph_; }
  std::mt19937_64& rng() { return rng_; }

  Graph Finish();

 private:
  Graph graph_;
  int current_ = 0;
  std::mt19937_64 rng_;
};

// Seeded random values, used for weights and test inputs.
std::vector<float> RandomFloats(std::mt19937_64& rng, size_t n, float lo, float hi);
std::vector<uint8_t> RandomBytesOfType(std::mt19937_64& rng, DType type, size_t n, double lo, double hi);

}  // namespace edgeopt
