// The int8/uint8 3x3 dilation-1 loop's interface between its driver (depthwise_int8_avx2.cc:
// pair-row ring, batches of output rows) and its row kernels (AVX2 in depthwise_int8_avx2.cc,
// AVX-512 VNNI in depthwise_int8_avx512.cc). Internal to depthwise/.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/depthwise/depthwise_int8.h"

namespace edgeopt::kernels::dwq {

// A batch of output rows for the 3x3 loop: the pair rows of each (filter rows in the top/bottom
// padding point at the zero row) hold channels [cb, cb_end) only, entries c2 int16 apart.
constexpr int kMaxK3Batch = 62;
struct K3Batch {
  const Plan* p = nullptr;
  int n = 0;
  const int16_t* rows[kMaxK3Batch][3];
  uint8_t* out[kMaxK3Batch];
  int cb = 0, cb_end = 0;
  size_t c2 = 0;
};

// Requantization modes of the int8/uint8 rows (kRqFast2: the 3x3 loop only, doubled plans).
enum RqMode { kRqPlain = 0, kRqLeft = 1, kRqFast = 2, kRqFast2 = 3 };

// The requantization mode of a plan (kRqFast also for doubled plans).
inline int RqModeOf(const Plan& p) { return p.any_left_shift ? kRqLeft : p.fast_requant ? kRqFast : kRqPlain; }

using K3Fn = void (*)(const K3Batch&);

// Narrow stride-1 outputs (1 to kK3NarrowMax pixels wide: the last stages of most CNNs, audio and
// keyword-spotting maps) have their own instantiations of the rows with the width as a
// compile-time constant (AVX2 variants .../3x3s1/wN); 0 = any width, the generic row loop.
constexpr int kK3NarrowMax = 8;
inline int K3NarrowWidth(const Plan& p) {
  if (p.j_step != 2) return 0;
  return p.g.out_w >= 1 && p.g.out_w <= kK3NarrowMax ? p.g.out_w : 0;
}

// AVX-512 VNNI rows of the loop for a plan with Plan::avx512 set; kj = 2 for stride 1, 1 for
// stride 2 (depthwise_int8_avx512.cc).
K3Fn PickK3Avx512(const Plan& p, int kj);

// Plan::requant16 from Plan::requant (two 8-lane groups per 16-lane group).
void BuildRequant16(Plan* p);

}  // namespace edgeopt::kernels::dwq
