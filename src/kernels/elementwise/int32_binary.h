// The int32 ADD / SUB / MUL fast path (int32_binary_fast.cc): one contiguous run of a broadcast
// binary op, per ISA. Wrapping two's-complement arithmetic (as ref_binary.cc), then a clamp to
// [lo, hi] (the fused activation), so results are bit-exact with the reference kernel.
#pragma once

#include <cstdint>

namespace edgeopt::kernels::elementwise {

enum class Int32Op { kAdd, kSub, kMul };

struct Int32Run {
  Int32Op op = Int32Op::kAdd;
  int32_t lo = INT32_MIN, hi = INT32_MAX;
};

// out[i] = clamp(a[a_scalar ? 0 : i] op b[b_scalar ? 0 : i]) for i < n.
using Int32RunFn = void (*)(const Int32Run& r, const int32_t* a, bool a_scalar, const int32_t* b, bool b_scalar,
                            int32_t* out, int64_t n);
void Int32RunPortable(const Int32Run& r, const int32_t* a, bool a_scalar, const int32_t* b, bool b_scalar,
                      int32_t* out, int64_t n);
void Int32RunAvx2(const Int32Run& r, const int32_t* a, bool a_scalar, const int32_t* b, bool b_scalar, int32_t* out,
                  int64_t n);
void Int32RunAvx512(const Int32Run& r, const int32_t* a, bool a_scalar, const int32_t* b, bool b_scalar,
                    int32_t* out, int64_t n);

}  // namespace edgeopt::kernels::elementwise
