// rt::AllocateWeightMemory: aligned, zero-filled, disjoint blocks of any size (within a chunk,
// across chunk boundaries, larger than a chunk), freed in any order and from several threads,
// and the chunks marked for huge pages (VmFlags "hg" in /proc/self/smaps) unless turned off.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/weight_memory.h"

namespace edgeopt::rt {
namespace {

struct Block {
  uint8_t* p;
  size_t bytes;
  uint8_t tag;
};

Block Make(size_t bytes, uint8_t tag) {
  auto* p = static_cast<uint8_t*>(AllocateWeightMemory(bytes));
  EXPECT_NE(p, nullptr) << bytes;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << bytes;
  // Zero-filled over the whole requested size.
  EXPECT_TRUE(std::all_of(p, p + bytes, [](uint8_t v) { return v == 0; })) << bytes;
  std::memset(p, tag, bytes);
  return {p, bytes, tag};
}

bool Intact(const Block& b) {
  return std::all_of(b.p, b.p + b.bytes, [&](uint8_t v) { return v == b.tag; });
}

TEST(WeightMemory, BlocksAreAlignedZeroedAndDisjoint) {
  std::mt19937 rng(7);
  const size_t sizes[] = {1, 63, 64, 65, 4096, 100000, (size_t{3} << 19), (size_t{2} << 20) - 64,
                          (size_t{2} << 20), (size_t{5} << 20) + 3};
  std::vector<Block> blocks;
  for (int round = 0; round < 3; ++round) {
    for (size_t s : sizes) blocks.push_back(Make(s, static_cast<uint8_t>(blocks.size() % 251 + 1)));
    for (int i = 0; i < 100; ++i) {
      blocks.push_back(Make(1 + rng() % 300000, static_cast<uint8_t>(blocks.size() % 251 + 1)));
    }
    // Every block still holds its own pattern: none overlaps another.
    for (const Block& b : blocks) ASSERT_TRUE(Intact(b)) << b.bytes;
    // Free a random half, then allocate again (round 2, 3) beside the survivors.
    std::shuffle(blocks.begin(), blocks.end(), rng);
    const size_t keep = blocks.size() / 2;
    for (size_t i = keep; i < blocks.size(); ++i) FreeWeightMemory(blocks[i].p);
    blocks.resize(keep);
  }
  for (const Block& b : blocks) {
    EXPECT_TRUE(Intact(b)) << b.bytes;
    FreeWeightMemory(b.p);
  }
  FreeWeightMemory(nullptr);  // a no-op
}

TEST(WeightMemory, ThreadsAllocateAndFreeConcurrently) {
  auto work = [](unsigned seed, bool* ok) {
    std::mt19937 rng(seed);
    std::vector<Block> live;
    *ok = true;
    for (int i = 0; i < 400; ++i) {
      const size_t bytes = 1 + rng() % 70000;
      auto* p = static_cast<uint8_t*>(AllocateWeightMemory(bytes));
      if (!p || reinterpret_cast<uintptr_t>(p) % 64 != 0) {
        *ok = false;
        return;
      }
      const auto tag = static_cast<uint8_t>(1 + (seed * 31 + i) % 250);
      std::memset(p, tag, bytes);
      live.push_back({p, bytes, tag});
      if (rng() % 3 == 0) {
        const size_t j = rng() % live.size();
        *ok = *ok && Intact(live[j]);
        FreeWeightMemory(live[j].p);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(j));
      }
    }
    for (const Block& b : live) {
      *ok = *ok && Intact(b);
      FreeWeightMemory(b.p);
    }
  };
  bool ok1 = false, ok2 = false;
  std::thread t1(work, 1u, &ok1), t2(work, 2u, &ok2);
  t1.join();
  t2.join();
  EXPECT_TRUE(ok1);
  EXPECT_TRUE(ok2);
}

// VmFlags of the mapping that holds `p` (empty if not found).
std::string VmFlagsOf(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto addr = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-' && line.find(':') > line.find(' ')) {
      inside = addr >= lo && addr < hi;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

TEST(WeightMemory, ChunksAreMarkedForHugePages) {
  void* p = AllocateWeightMemory(size_t{3} << 20);
  ASSERT_NE(p, nullptr);
  const std::string flags = VmFlagsOf(p);
  if (flags.empty()) {
    FreeWeightMemory(p);
    GTEST_SKIP() << "/proc/self/smaps not readable here: cannot see the mapping's flags";
  }
  if (WeightMemoryUsesHugePages()) {
    EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
  } else {
    std::printf("huge pages off (EDGEOPT_HUGE_PAGES=0 or AddressSanitizer): heap block, flags %s\n", flags.c_str());
    EXPECT_EQ(flags.find(" hg"), std::string::npos) << flags;
  }
  FreeWeightMemory(p);
}

}  // namespace
}  // namespace edgeopt::rt
