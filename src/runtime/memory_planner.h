// Offline arena planning: tensors (and scratch buffers) whose lifetimes do not overlap share
// memory. Greedy by size, as in TFLite Micro's planner: the largest buffers are placed first at
// the lowest offset that does not collide with an already placed, time-overlapping buffer.
#pragma once

#include <cstddef>
#include <vector>

namespace edgeopt::rt {

struct PlanItem {
  int first = 0;  // first step using the buffer (-1: before the first op)
  int last = 0;   // last step using it (inclusive)
  size_t bytes = 0;
};

// Fills offsets (one per item, each a multiple of `alignment`) and returns the arena size.
size_t PlanArena(const std::vector<PlanItem>& items, size_t alignment, std::vector<size_t>* offsets);

}  // namespace edgeopt::rt
