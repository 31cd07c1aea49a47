// Seeded random samples for a graph's first input, as the quantizer's calibration and agreement
// checks take them (tests of the optimizer on small generated graphs).
#pragma once

#include <cstdint>
#include <vector>

#include "eval/inputs.h"
#include "graph/graph.h"

namespace edgeopt::testing {

// n samples of input 0 of g's main subgraph, uniform in [lo, hi), sample i from seed + i.
inline std::vector<std::vector<eval::HostTensor>> RandomSamples(const Graph& g, int n, uint64_t seed, float lo, float hi) {
  const Tensor& t = g.main().tensors[g.main().inputs[0]];
  eval::InputSpec spec;
  spec.name = t.name;
  spec.type = t.type;
  spec.shape = t.shape;
  std::vector<std::vector<eval::HostTensor>> out;
  for (int i = 0; i < n; ++i) out.push_back({eval::RandomInput(spec, seed + i, lo, hi)});
  return out;
}

}  // namespace edgeopt::testing
