// The fp32 requantization of float_requant.h on 16 int32 lanes, as the int8 kernels run it
// (qgemm_avx512vnni.cc's tiles) and as float_requant_test.cc checks it: floor(float(x) * s + c),
// the multiply-add and the conversion rounding down (embedded {rd-sae}). One asm block with one
// temporary and the constants in registers (with intrinsics GCC 12 reloaded them per row in the
// tiles). s and c are float vectors carried as __m512i.
#pragma once

#include <immintrin.h>

namespace edgeopt::kernels {

__attribute__((always_inline, target("avx512f"))) inline __m512i FloatRequant16(__m512i x, __m512i s, __m512i c) {
  __m512i t;
  asm("vcvtdq2ps %[x], %[t]\n\t"
      "vfmadd213ps %{rd-sae%}, %[c], %[s], %[t]\n\t"
      "vcvtps2dq %{rd-sae%}, %[t], %[x]"
      : [x] "+v"(x), [t] "=&v"(t)
      : [s] "v"(s), [c] "v"(c));
  return x;
}

// The bits form (float_requant.h FloatBits): x holds, read as a float, M + a exactly (the
// accumulators started kFloatBitsBase + M higher): floor(x * s + c_bits), no conversion first.
__attribute__((always_inline, target("avx512f"))) inline __m512i FloatRequantBits16(__m512i x, __m512i s, __m512i c) {
  asm("vfmadd213ps %{rd-sae%}, %[c], %[s], %[x]\n\t"
      "vcvtps2dq %{rd-sae%}, %[x], %[x]"
      : [x] "+v"(x)
      : [s] "v"(s), [c] "v"(c));
  return x;
}

// The two-multiply-add form (float_requant.h FloatRequantConstants2): floor(float(x) * s_hi +
// RN(float(x) * s_lo + c)), the inner multiply-add rounding to nearest whatever MXCSR says, the
// outer one and the conversion rounding down. Two temporaries: the converted x feeds both.
__attribute__((always_inline, target("avx512f"))) inline __m512i FloatRequant2x16(__m512i x, __m512i s_hi,
                                                                                   __m512i s_lo, __m512i c) {
  __m512i t, u;
  asm("vcvtdq2ps %[x], %[t]\n\t"
      "vmovaps %[c], %[u]\n\t"
      "vfmadd231ps %{rn-sae%}, %[lo], %[t], %[u]\n\t"
      "vfmadd231ps %{rd-sae%}, %[hi], %[t], %[u]\n\t"
      "vcvtps2dq %{rd-sae%}, %[u], %[x]"
      : [x] "+v"(x), [t] "=&v"(t), [u] "=&v"(u)
      : [hi] "v"(s_hi), [lo] "v"(s_lo), [c] "v"(c));
  return x;
}

}  // namespace edgeopt::kernels
