// Helpers for kernels whose behaviour depends on small integer tensors (axes, begin/size,
// paddings, shapes): reading them safely, resolving axes, and the protocol for outputs whose
// shape depends on input *values* (known in Prepare only when the input is constant).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "runtime/kernel.h"

namespace edgeopt::kernels {

// Bytes per element for types that data-movement kernels copy as raw bytes (1, 2, 4, 8 or 16);
// 0 for types without a fixed element size (string, int4, resource, variant).
size_t ElementBytes(DType t);

// True when the values of `t` can be read now: it is constant, or the kernel runs inside an
// invoke (its producer already ran). Otherwise the output shape must wait for Invoke.
inline bool ValuesKnown(const rt::KernelContext& ctx, const rt::RtTensor& t) {
  return t.is_constant() || ctx.in_invoke();
}

// Reads every element of an int32 or int64 tensor as int64. `what` names the input in errors
// ("SLICE: begin must be int32 or int64, is float32").
Status ReadIndexValues(const rt::KernelContext& ctx, const rt::RtTensor& t, const std::string& what,
                       std::vector<int64_t>* out);

// Reads a tensor holding exactly one int32/int64 value (any rank with one element).
Status ReadScalarIndex(const rt::KernelContext& ctx, const rt::RtTensor& t, const std::string& what, int64_t* out);

// Index arguments far outside any tensor (|v| > 2^40) are clamped to +-2^40 before
// arithmetic; every dimension is < 2^31, so this changes no result and rules out overflow.
constexpr int64_t kIndexLimit = int64_t{1} << 40;
inline int64_t ClampIndex(int64_t v) { return v < -kIndexLimit ? -kIndexLimit : v > kIndexLimit ? kIndexLimit : v; }

// Maps an axis in [-rank, rank) to [0, rank); fails naming `what` otherwise.
Status ResolveAxis(const rt::KernelContext& ctx, int64_t axis, int rank, const std::string& what, int* out);

// Fails unless every dimension fits int32 and the element count stays below 2^31 elements
// (the runtime's shape type and TFLite's int32 index arithmetic).
Status CheckShapeFits(const rt::KernelContext& ctx, const std::vector<int64_t>& dims, const std::string& what,
                      rt::Shape* out);

// Element i of an int32/int64 tensor (type checked by the caller), without copying.
inline int64_t IndexAt(const rt::RtTensor& t, int64_t i) {
  return t.type == DType::kInt64 ? t.data_as<int64_t>()[i] : t.data_as<int32_t>()[i];
}

// Per-dimension scratch for loops over tensors: on the stack up to 16 dimensions, so kernels do
// not allocate while running; larger ranks fall back to the heap.
template <typename T>
class DimBuffer {
 public:
  explicit DimBuffer(size_t n, T value = T()) {
    if (n > kStack) {
      heap_.assign(n, value);
      p_ = heap_.data();
    } else {
      for (size_t i = 0; i < n; ++i) stack_[i] = value;
      p_ = stack_;
    }
  }
  DimBuffer(const DimBuffer&) = delete;
  DimBuffer& operator=(const DimBuffer&) = delete;
  T& operator[](size_t i) { return p_[i]; }
  const T& operator[](size_t i) const { return p_[i]; }

 private:
  static constexpr size_t kStack = 16;
  T stack_[kStack];
  std::vector<T> heap_;
  T* p_;
};

// "[1,2,3]" for int64 vectors in messages.
std::string ValuesToString(const std::vector<int64_t>& v);

// Row-major element strides of a shape.
std::vector<int64_t> RowMajorStrides(const rt::Shape& shape);

}  // namespace edgeopt::kernels
