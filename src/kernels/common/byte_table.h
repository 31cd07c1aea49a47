// Applying a 256-entry byte table (the 8-bit LOGISTIC / TANH / ELU / GELU kernels and the 8-bit
// requantizing QUANTIZE are one table lookup per element).
//
// ByteTableFn picks the loop once, at kernel creation: with AVX-512 VBMI two vpermi2b look up 64
// elements in the table's low and high halves and the input's top bit blends them (~20x the
// scalar loop: 174K bytes in 5.5 vs 93 us); otherwise, or for the reference kernels, a plain
// loop.
#pragma once

#include <array>
#include <cstdint>

#include "runtime/cpu.h"

namespace edgeopt::kernels {

using ByteTable = std::array<uint8_t, 256>;
using ApplyByteTableFn = void (*)(const ByteTable& table, const uint8_t* in, uint8_t* out, int64_t n);

inline void ApplyByteTableScalar(const ByteTable& table, const uint8_t* in, uint8_t* out, int64_t n) {
  const uint8_t* t = table.data();
  for (int64_t i = 0; i < n; ++i) out[i] = t[in[i]];
}
// Needs CpuFeatures::avx512vbmi (and AVX-512 BW): select through ByteTableFn.
void ApplyByteTableVbmi(const ByteTable& table, const uint8_t* in, uint8_t* out, int64_t n);

// The VBMI loop when the CPU has it and the kernel is not a reference-only one.
inline ApplyByteTableFn ByteTableFn(const rt::CpuFeatures& cpu, bool reference_only) {
  return !reference_only && cpu.has_avx512() && cpu.avx512vbmi ? ApplyByteTableVbmi : ApplyByteTableScalar;
}
// The last part of a variant name for the loop `fn` (e.g. "logistic/int8/" + ...).
inline const char* ByteTableIsa(ApplyByteTableFn fn) { return fn == ApplyByteTableVbmi ? "avx512vbmi" : "ref"; }
// The same for kernels that keep the reference's per-value code beside the table (null `fn`):
// "ref" for that code, "avx512vbmi" or "table" for the table loops.
inline const char* ByteTableOrRefIsa(ApplyByteTableFn fn) {
  return fn == nullptr ? "ref" : fn == ApplyByteTableVbmi ? "avx512vbmi" : "table";
}

}  // namespace edgeopt::kernels
