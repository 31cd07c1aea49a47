// Cost of moving data between two CPUs of this machine: a cache-line round trip and the speed
// of reading a buffer another core has just written. Multi-threaded inference passes rows
// between cores at every op, so these bound what a second thread can give. On a VM they change
// while you watch: the host may place the two vCPUs on one die (here ~55-65 ns, ~60 GB/s) or on
// different dies (~250-1000 ns, ~25 GB/s), and 2-thread figures taken in the two states differ
// by up to 2x. Benchmarks print them next to multi-thread results.
#pragma once

#include <string>

namespace edgeopt::bench {

struct CoreLink {
  bool measured = false;  // false when the process may run on fewer than two CPUs
  int cpu_a = 0, cpu_b = 0;
  double roundtrip_ns = 0;       // one cache line there and back (median of 5 runs)
  double remote_read_gbs = 0;    // reading 4 MiB that the other CPU just wrote
  double local_read_gbs = 0;     // reading 4 MiB that this CPU just wrote
  std::string ToString() const;  // one line, or why it was not measured
};

// Measures between the first two CPUs this process may run on (takes ~50 ms).
CoreLink MeasureCoreLink();

}  // namespace edgeopt::bench
