// CPU features, detected once per process. Kernel variants are chosen from these at prepare
// time, never per call. EDGEOPT_CPU=generic|avx2|avx512 caps what is used (for tests and for
// comparing variants on one machine); avx512-halved / avx512-full override avx512_halved.
#pragma once

#include <string>

namespace edgeopt::rt {

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512vnni = false;
  bool avx512vbmi = false;  // vpermi2b / vpermb: byte-granular table lookups
  bool avxvnni = false;
  bool avx512fp16 = false;
  bool avx512bf16 = false;
  // The core executes a 512-bit multiply-add as two 256-bit halves (AMD Zen 4, CPUID family
  // 0x19): a zmm instruction then does no more work per cycle than a ymm one, so the float GEMM
  // keeps AVX2 tiles for shallow products there. Not a CPUID bit: read off the vendor and family.
  bool avx512_halved = false;

  // Convenience groups the kernels dispatch on.
  bool has_avx2_fma() const { return avx2 && fma && f16c; }
  bool has_avx512() const { return avx512f && avx512bw && avx512vl && avx512dq && has_avx2_fma(); }
  bool has_avx512_vnni() const { return has_avx512() && avx512vnni; }

  std::string ToString() const;  // "avx2 fma f16c avx512f ..."
};

// Features of this CPU after applying the EDGEOPT_CPU cap.
const CpuFeatures& Cpu();
// Features the hardware has, ignoring the cap.
const CpuFeatures& CpuHardware();
// The same cap applied to any feature set: "generic" clears all, "avx2" clears AVX-512.
CpuFeatures CapFeatures(CpuFeatures f, const std::string& level);

}  // namespace edgeopt::rt
