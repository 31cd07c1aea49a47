#include "eval/host_tensor.h"

#include <cstring>

#include "core/half.h"

namespace edgeopt::eval {

double HostTensor::At(int64_t i) const {
  const uint8_t* p = data.data();
  switch (type) {
    case DType::kFloat32: { float v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case DType::kFloat64: { double v; std::memcpy(&v, p + 8 * i, 8); return v; }
    case DType::kFloat16: { uint16_t v; std::memcpy(&v, p + 2 * i, 2); return HalfToFloat(v); }
    case DType::kBFloat16: { uint16_t v; std::memcpy(&v, p + 2 * i, 2); return BFloat16ToFloat(v); }
    case DType::kInt8: return static_cast<int8_t>(p[i]);
    case DType::kUInt8: return p[i];
    case DType::kBool: return p[i] != 0;
    case DType::kInt16: { int16_t v; std::memcpy(&v, p + 2 * i, 2); return v; }
    case DType::kUInt16: { uint16_t v; std::memcpy(&v, p + 2 * i, 2); return v; }
    case DType::kInt32: { int32_t v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case DType::kUInt32: { uint32_t v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case DType::kInt64: { int64_t v; std::memcpy(&v, p + 8 * i, 8); return static_cast<double>(v); }
    case DType::kUInt64: { uint64_t v; std::memcpy(&v, p + 8 * i, 8); return static_cast<double>(v); }
    default: return 0;
  }
}

std::vector<float> HostTensor::ToFloat() const {
  std::vector<float> out(static_cast<size_t>(num_elements()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(Real(static_cast<int64_t>(i)));
  return out;
}

}  // namespace edgeopt::eval
