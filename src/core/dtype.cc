#include "core/dtype.h"

namespace edgeopt {

namespace {
struct DTypeInfo {
  std::string_view name;
  size_t size;
};
constexpr DTypeInfo kInfo[kNumDTypes] = {
    {"float32", 4}, {"float16", 2}, {"int32", 4},      {"uint8", 1},   {"int64", 8},
    {"string", 0},  {"bool", 1},    {"int16", 2},      {"complex64", 8}, {"int8", 1},
    {"float64", 8}, {"complex128", 16}, {"uint64", 8}, {"resource", 0}, {"variant", 0},
    {"uint32", 4},  {"uint16", 2},  {"int4", 0},       {"bfloat16", 2},
};
}  // namespace

bool IsValidDType(int value) { return value >= 0 && value < kNumDTypes; }

size_t DTypeSize(DType t) {
  int i = static_cast<int>(t);
  return IsValidDType(i) ? kInfo[i].size : 0;
}

size_t DTypeBytes(DType t, size_t n) {
  if (t == DType::kInt4) return (n + 1) / 2;
  return DTypeSize(t) * n;
}

std::string_view DTypeName(DType t) {
  int i = static_cast<int>(t);
  return IsValidDType(i) ? kInfo[i].name : std::string_view("invalid");
}

bool ParseDType(std::string_view name, DType* out) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (kInfo[i].name == name) {
      *out = static_cast<DType>(i);
      return true;
    }
  }
  return false;
}

bool IsQuantizedIntType(DType t) {
  return t == DType::kInt8 || t == DType::kUInt8 || t == DType::kInt16 || t == DType::kInt4 ||
         t == DType::kInt32;
}

bool IsFloatType(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16 ||
         t == DType::kFloat64;
}

}  // namespace edgeopt
