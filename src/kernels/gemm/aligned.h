// A 64-byte aligned float buffer (packed weights, zero rows): vector loads from it are aligned
// and it never shares a cache line with another allocation. The memory comes from
// rt::AllocateWeightMemory (huge pages where the system grants them: runtime/weight_memory.h).
#pragma once

#include <cstddef>
#include <memory>

#include "runtime/weight_memory.h"

namespace edgeopt::kernels {

class AlignedFloats {
 public:
  AlignedFloats() = default;
  explicit AlignedFloats(size_t n) { Reset(n); }

  // Resizes to n zero-filled floats (contents are not preserved).
  void Reset(size_t n) {
    size_ = n;
    if (n == 0) {
      data_.reset();
      return;
    }
    data_.reset(static_cast<float*>(rt::AllocateWeightMemory(n * sizeof(float))));
  }
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  size_t size() const { return size_; }
  size_t bytes() const { return size_ * sizeof(float); }

 private:
  struct Free {
    void operator()(float* p) const { rt::FreeWeightMemory(p); }
  };
  std::unique_ptr<float, Free> data_;
  size_t size_ = 0;
};

}  // namespace edgeopt::kernels
