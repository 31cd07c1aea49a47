// Tensor element types. Values equal the .tflite TensorType enum, so conversion is a cast.
// Public and dependency-free: part of the edgeopt C++ API (the C API mirrors it as EoType).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace edgeopt {

enum class DType : int8_t {
  kFloat32 = 0,
  kFloat16 = 1,
  kInt32 = 2,
  kUInt8 = 3,
  kInt64 = 4,
  kString = 5,
  kBool = 6,
  kInt16 = 7,
  kComplex64 = 8,
  kInt8 = 9,
  kFloat64 = 10,
  kComplex128 = 11,
  kUInt64 = 12,
  kResource = 13,
  kVariant = 14,
  kUInt32 = 15,
  kUInt16 = 16,
  kInt4 = 17,
  kBFloat16 = 18,
};

constexpr int kNumDTypes = 19;

// Bytes per element; 0 for types without a fixed size (string, resource, variant, int4 which
// packs two per byte: use DTypeBytes for buffers).
size_t DTypeSize(DType t);
// Bytes needed to store n elements (handles int4 packing, returns 0 for variable-size types).
size_t DTypeBytes(DType t, size_t n);
// Lower-case name as LiteRT prints it: "float32", "int8", ...
std::string_view DTypeName(DType t);
// Parses a DTypeName; returns false if unknown.
bool ParseDType(std::string_view name, DType* out);
bool IsValidDType(int value);
bool IsQuantizedIntType(DType t);  // int8, uint8, int16, int4, int32 (bias)
bool IsFloatType(DType t);         // float32, float16, bfloat16, float64

}  // namespace edgeopt
