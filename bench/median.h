// The median the benchmark programs report (the mean of the two middle values for an even count;
// 0 for none).
#pragma once

#include <algorithm>
#include <vector>

namespace edgeopt::bench {

inline double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace edgeopt::bench
