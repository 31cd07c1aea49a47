#include "runtime/cpu.h"

#include <cpuid.h>

#include <cstdlib>

namespace edgeopt::rt {
namespace {

bool OsSupportsAvx512State() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return false;  // OSXSAVE
  unsigned lo, hi;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  const unsigned avx_state = 0x6, avx512_state = 0xE0;
  return (lo & avx_state) == avx_state && (lo & avx512_state) == avx512_state;
}

bool OsSupportsAvxState() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return false;
  unsigned lo, hi;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (lo & 0x6) == 0x6;
}

// AMD's Zen 4 (family 0x19 with AVX-512) splits 512-bit operations into two 256-bit halves; Zen 5
// (family 0x1A) and Intel's AVX-512 cores run them at full width.
bool Avx512Halved(unsigned family_signature) {
  unsigned a, b, c, d;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return false;
  const bool amd = b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u;  // "AuthenticAMD"
  unsigned family = (family_signature >> 8) & 0xF;
  if (family == 0xF) family += (family_signature >> 20) & 0xFF;
  return amd && family == 0x19;
}

CpuFeatures Detect() {
  CpuFeatures f;
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const unsigned signature = a;
  const bool avx_os = OsSupportsAvxState();
  f.fma = avx_os && (c & (1u << 12));
  f.f16c = avx_os && (c & (1u << 29));
  if (__get_cpuid_max(0, nullptr) >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    f.avx2 = avx_os && (b & (1u << 5));
    const bool z = OsSupportsAvx512State();
    f.avx512f = z && (b & (1u << 16));
    f.avx512dq = z && (b & (1u << 17));
    f.avx512bw = z && (b & (1u << 30));
    f.avx512vl = z && (b & (1u << 31));
    f.avx512vnni = z && (c & (1u << 11));
    f.avx512vbmi = z && (c & (1u << 1));
    f.avx512fp16 = z && (d & (1u << 23));
    unsigned a1, b1, c1, d1;
    __cpuid_count(7, 1, a1, b1, c1, d1);
    f.avxvnni = avx_os && (a1 & (1u << 4));
    f.avx512bf16 = z && (a1 & (1u << 5));
  }
  f.avx512_halved = f.avx512f && Avx512Halved(signature);
  return f;
}

}  // namespace

CpuFeatures CapFeatures(CpuFeatures f, const std::string& level) {
  if (level == "generic" || level == "none" || level == "ref") return CpuFeatures{};
  if (level == "avx512-halved" || level == "avx512-full") {
    f.avx512_halved = f.avx512f && level == "avx512-halved";
    return f;
  }
  if (level == "avx2") {
    CpuFeatures g;
    g.avx2 = f.avx2;
    g.fma = f.fma;
    g.f16c = f.f16c;
    g.avxvnni = f.avxvnni;
    return g;
  }
  return f;
}

const CpuFeatures& CpuHardware() {
  static const CpuFeatures f = Detect();
  return f;
}

const CpuFeatures& Cpu() {
  static const CpuFeatures f = [] {
    const char* cap = std::getenv("EDGEOPT_CPU");
    return cap ? CapFeatures(CpuHardware(), cap) : CpuHardware();
  }();
  return f;
}

std::string CpuFeatures::ToString() const {
  std::string s;
  auto add = [&](bool on, const char* n) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += n;
  };
  add(avx2, "avx2");
  add(fma, "fma");
  add(f16c, "f16c");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512vl, "avx512vl");
  add(avx512dq, "avx512dq");
  add(avx512vnni, "avx512vnni");
  add(avx512vbmi, "avx512vbmi");
  add(avxvnni, "avxvnni");
  add(avx512fp16, "avx512fp16");
  add(avx512bf16, "avx512bf16");
  add(avx512_halved, "(512-bit ops as two halves)");
  return s.empty() ? "generic" : s;
}

}  // namespace edgeopt::rt
