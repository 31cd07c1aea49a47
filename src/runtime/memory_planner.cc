#include "runtime/memory_planner.h"

#include <algorithm>
#include <numeric>

namespace edgeopt::rt {

size_t PlanArena(const std::vector<PlanItem>& items, size_t alignment, std::vector<size_t>* offsets) {
  const size_t n = items.size();
  offsets->assign(n, 0);
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return items[a].bytes > items[b].bytes; });
  auto align = [&](size_t x) { return (x + alignment - 1) / alignment * alignment; };

  std::vector<size_t> placed;  // indices already placed, kept sorted by offset
  size_t arena = 0;
  std::vector<std::pair<size_t, size_t>> busy;  // [begin, end) of overlapping placed items
  for (size_t idx : order) {
    const PlanItem& it = items[idx];
    const size_t size = align(std::max<size_t>(it.bytes, 1));
    busy.clear();
    for (size_t p : placed) {
      const PlanItem& o = items[p];
      if (o.last < it.first || it.last < o.first) continue;  // lifetimes disjoint
      busy.emplace_back((*offsets)[p], (*offsets)[p] + align(std::max<size_t>(o.bytes, 1)));
    }
    std::sort(busy.begin(), busy.end());
    size_t candidate = 0;
    for (const auto& [b, e] : busy) {
      if (candidate + size <= b) break;
      candidate = std::max(candidate, e);
    }
    (*offsets)[idx] = candidate;
    placed.push_back(idx);
    arena = std::max(arena, candidate + size);
  }
  return arena;
}

}  // namespace edgeopt::rt
