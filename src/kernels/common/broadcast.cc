#include "kernels/common/broadcast.h"

#include <algorithm>

namespace edgeopt::kernels {

bool BroadcastShape(const rt::Shape& a, const rt::Shape& b, rt::Shape* out) {
  const size_t rank = std::max(a.size(), b.size());
  rt::Shape r(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int32_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int32_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db || db == 1) {
      r[i] = da;
    } else if (da == 1) {
      r[i] = db;
    } else {
      return false;
    }
  }
  *out = std::move(r);
  return true;
}

std::vector<int64_t> BroadcastStrides(const rt::Shape& in, const rt::Shape& out) {
  const size_t rank = out.size();
  std::vector<int64_t> s(rank, 0);
  int64_t stride = 1;
  for (size_t k = 0; k < in.size(); ++k) {
    const size_t i = in.size() - 1 - k;
    const size_t o = rank - 1 - k;
    s[o] = in[i] == 1 && out[o] != 1 ? 0 : stride;
    stride *= in[i];
  }
  return s;
}

std::vector<BroadcastDim> CollapseBroadcast(const rt::Shape& a, const rt::Shape& b, const rt::Shape& out) {
  const int rank = static_cast<int>(out.size());
  auto broadcast = [&](const rt::Shape& s, int d) {
    const int i = d - (rank - static_cast<int>(s.size()));
    return i < 0 || s[i] == 1;
  };
  std::vector<BroadcastDim> dims;
  std::vector<std::pair<bool, bool>> flags;  // (a broadcast, b broadcast) per collapsed dimension
  for (int d = 0; d < rank; ++d) {
    if (out[d] == 1) continue;
    const std::pair<bool, bool> f{broadcast(a, d), broadcast(b, d)};
    if (!dims.empty() && flags.back() == f) {
      dims.back().size *= out[d];
    } else {
      dims.push_back({out[d], 0, 0});
      flags.push_back(f);
    }
  }
  int64_t sa = 1, sb = 1;
  for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
    dims[i].a_stride = flags[i].first ? 0 : sa;
    dims[i].b_stride = flags[i].second ? 0 : sb;
    if (!flags[i].first) sa *= dims[i].size;
    if (!flags[i].second) sb *= dims[i].size;
  }
  if (dims.empty()) dims.push_back({1, 0, 0});
  return dims;
}

}  // namespace edgeopt::kernels
