// Measured per-core peaks: what "share of peak" in kernel benchmarks is relative to.
#pragma once

#include <cstdint>

namespace edgeopt::bench {

// Each returns operations per second on the calling thread (0 if the ISA is unavailable).
double PeakFp32FmaAvx2();       // 2 flops per FMA lane
double PeakInt8Avx2();          // vpmaddubsw + vpmaddwd: int8 MACs counted as 2 ops
double PeakInt8AvxVnni();       // vpdpbusd (AVX-VNNI, 256-bit)
double PeakFp32FmaAvx512();
double PeakInt8Avx512Vnni();    // vpdpbusd (512-bit)

}  // namespace edgeopt::bench
