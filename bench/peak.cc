// edgeopt_peak: measures this core's fp32 FMA and int8 dot-product peaks with register-only
// loops (no memory traffic), for the "share of peak" figures in kernel benchmarks, and the cost
// of moving data between two CPUs, which bounds what a second thread gives.
#include "peak.h"

#include <cstdio>

#include "core_link.h"
#include "runtime/cpu.h"

int main() {
  using namespace edgeopt;
  const rt::CpuFeatures& hw = rt::CpuHardware();
  std::printf("CPU features: %s\n", hw.ToString().c_str());
  auto show = [](const char* name, bool have, double (*fn)()) {
    if (!have) {
      std::printf("%-34s not available on this CPU\n", name);
      return;
    }
    double best = 0;
    for (int i = 0; i < 5; ++i) best = std::max(best, fn());
    std::printf("%-34s %8.1f G%s/s (best of 5)\n", name, best / 1e9, "op");
  };
  show("fp32 FMA, AVX2 (flops)", hw.has_avx2_fma(), bench::PeakFp32FmaAvx2);
  show("int8 MAC*2, AVX2 maddubs (ops)", hw.has_avx2_fma(), bench::PeakInt8Avx2);
  show("int8 MAC*2, AVX-VNNI (ops)", hw.avxvnni, bench::PeakInt8AvxVnni);
  show("fp32 FMA, AVX-512 (flops)", hw.has_avx512(), bench::PeakFp32FmaAvx512);
  show("int8 MAC*2, AVX-512 VNNI (ops)", hw.has_avx512_vnni(), bench::PeakInt8Avx512Vnni);
  // Not a peak but the other bound of multi-threaded speed-ups (see core_link.h).
  std::printf("%s\n", bench::MeasureCoreLink().ToString().c_str());
  return 0;
}
