// Runtime tensors: shape, type, quantization and where the bytes live during execution.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "graph/graph.h"

namespace edgeopt::rt {

using Shape = std::vector<int32_t>;

inline int64_t NumElements(const Shape& s) {
  int64_t n = 1;
  for (int32_t d : s) n *= d;
  return n;
}
std::string ShapeToString(const Shape& s);  // "[1,224,224,3]"

enum class Allocation : uint8_t {
  kNone,        // not yet allocated (or an omitted optional tensor)
  kConstant,    // view into the model's constant data (never written)
  kArena,       // planned into the interpreter arena; valid while the plan holds
  kDynamic,     // heap storage owned by the tensor; its shape is known only at invoke time
  kPersistent,  // variable tensors (LSTM state): live across invokes, own storage
  kUser,        // a caller-bound buffer (zero-copy input/output)
};

struct RtTensor {
  DType type = DType::kFloat32;
  Shape shape;
  uint8_t* data = nullptr;
  size_t bytes = 0;
  Allocation alloc = Allocation::kNone;
  // Quantization from the model (null when absent). Scales/zero points live in the Graph.
  const QuantParams* quant = nullptr;
  const Tensor* def = nullptr;  // the graph tensor this was made from
  std::vector<uint8_t> owned;   // storage for kDynamic / kPersistent
  // String tensors (DType::kString) keep LiteRT's packed layout in `owned`.

  int64_t num_elements() const { return NumElements(shape); }
  int rank() const { return static_cast<int>(shape.size()); }
  int32_t dim(int i) const { return shape[i < 0 ? i + rank() : i]; }
  const std::string& name() const {
    static const std::string kEmpty;
    return def ? def->name : kEmpty;
  }
  bool is_constant() const { return alloc == Allocation::kConstant; }

  template <typename T>
  T* data_as() { return reinterpret_cast<T*>(data); }
  template <typename T>
  const T* data_as() const { return reinterpret_cast<const T*>(data); }
  template <typename T>
  std::span<T> span() { return {data_as<T>(), static_cast<size_t>(num_elements())}; }
  template <typename T>
  std::span<const T> span() const { return {data_as<T>(), static_cast<size_t>(num_elements())}; }

  // Per-tensor quantization helpers (scale 0 / zero point 0 when absent).
  float scale() const { return quant && !quant->scale.empty() ? quant->scale[0] : 0.0f; }
  int32_t zero_point() const {
    return quant && !quant->zero_point.empty() ? static_cast<int32_t>(quant->zero_point[0]) : 0;
  }
  bool per_channel() const { return quant && quant->scale.size() > 1; }
};

// Bytes needed for `shape` of `type` (strings excluded). A resource tensor holds one int32
// handle id per element, as in LiteRT.
inline size_t TensorBytes(DType type, const Shape& shape) {
  const auto n = static_cast<size_t>(NumElements(shape));
  return type == DType::kResource ? n * sizeof(int32_t) : DTypeBytes(type, n);
}

}  // namespace edgeopt::rt
