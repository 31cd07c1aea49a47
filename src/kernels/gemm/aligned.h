// A 64-byte aligned float buffer (packed weights, zero rows): vector loads from it are aligned
// and it never shares a cache line with another allocation.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>

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
    const size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
    data_.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
    std::memset(data_.get(), 0, bytes);
  }
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  size_t size() const { return size_; }
  size_t bytes() const { return size_ * sizeof(float); }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float, Free> data_;
  size_t size_ = 0;
};

}  // namespace edgeopt::kernels
