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

}  // namespace edgeopt::kernels
