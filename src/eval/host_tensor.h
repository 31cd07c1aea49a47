// A tensor held by the caller (inputs read from files, outputs copied out of an interpreter).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace edgeopt::eval {

struct HostTensor {
  std::string name;
  DType type = DType::kFloat32;
  std::vector<int32_t> shape;
  std::vector<uint8_t> data;
  // Quantization of the tensor it came from (per-tensor), 0/0 when none.
  float scale = 0;
  int32_t zero_point = 0;

  int64_t num_elements() const {
    int64_t n = 1;
    for (int32_t d : shape) n *= d;
    return n;
  }
  // Element i as double (float16 decoded; quantized values raw, see Dequantized).
  double At(int64_t i) const;
  // Element i in real units (dequantized when scale != 0).
  double Real(int64_t i) const { return scale != 0 ? (At(i) - zero_point) * scale : At(i); }
  std::vector<float> ToFloat() const;  // Real() for all elements
};

}  // namespace edgeopt::eval
