#include "runtime/weight_memory.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>

namespace edgeopt::rt {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kAlign = 64;

size_t RoundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

bool HugePagesWanted() {
#if defined(__SANITIZE_ADDRESS__)
  return false;
#else
  const char* env = std::getenv("EDGEOPT_HUGE_PAGES");
  return !(env && std::strcmp(env, "0") == 0);
#endif
}

class ChunkAllocator {
 public:
  // bytes: a multiple of kAlign.
  void* Allocate(size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    if (current_ == chunks_.end() || current_->second.room() < bytes) {
      auto fresh = MapChunk(RoundUp(bytes, kHugePage));
      if (fresh == chunks_.end()) return nullptr;
      // Keep carving from whichever chunk has more room left.
      if (current_ == chunks_.end() || fresh->second.size - bytes > current_->second.room()) {
        current_ = fresh;
      } else {
        return Carve(fresh, bytes);
      }
    }
    return Carve(current_, bytes);
  }

  void Free(void* p) {
    if (!p) return;
    std::lock_guard<std::mutex> lock(mu_);
    const auto addr = reinterpret_cast<uintptr_t>(p);
    auto it = chunks_.upper_bound(addr);
    if (it == chunks_.begin()) return;  // not ours (cannot happen for blocks from Allocate)
    --it;
    if (addr >= it->first + it->second.size) return;
    if (--it->second.live > 0) return;
    munmap(reinterpret_cast<void*>(it->first), it->second.size);
    if (it == current_) current_ = chunks_.end();
    chunks_.erase(it);
  }

 private:
  struct Chunk {
    size_t size = 0;  // bytes mapped, a multiple of kHugePage
    size_t used = 0;  // bytes carved so far
    size_t live = 0;  // blocks not yet freed
    size_t room() const { return size - used; }
  };
  using Map = std::map<uintptr_t, Chunk>;

  // Maps `size` bytes at a 2 MB boundary (over-maps by 2 MB and trims) and asks for huge pages.
  Map::iterator MapChunk(size_t size) {
    void* raw = mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return chunks_.end();
    const auto start = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t base = RoundUp(start, kHugePage);
    if (base > start) munmap(raw, base - start);
    const uintptr_t end = start + size + kHugePage;
    if (end > base + size) munmap(reinterpret_cast<void*>(base + size), end - (base + size));
    madvise(reinterpret_cast<void*>(base), size, MADV_HUGEPAGE);  // advice only: may be refused
    return chunks_.emplace(base, Chunk{size, 0, 0}).first;
  }

  static void* Carve(Map::iterator it, size_t bytes) {
    void* p = reinterpret_cast<void*>(it->first + it->second.used);
    it->second.used += bytes;
    ++it->second.live;
    return p;  // fresh anonymous memory: already zero
  }

  std::mutex mu_;
  Map chunks_;
  Map::iterator current_ = chunks_.end();
};

ChunkAllocator& Chunks() {
  static auto* a = new ChunkAllocator();  // never destroyed: blocks may outlive static destructors
  return *a;
}

}  // namespace

bool WeightMemoryUsesHugePages() {
  static const bool on = HugePagesWanted();
  return on;
}

void* AllocateWeightMemory(size_t bytes) {
  const size_t n = RoundUp(bytes == 0 ? 1 : bytes, kAlign);
  if (WeightMemoryUsesHugePages()) return Chunks().Allocate(n);
  void* p = std::aligned_alloc(kAlign, n);
  if (p) std::memset(p, 0, n);
  return p;
}

void FreeWeightMemory(void* p) {
  if (WeightMemoryUsesHugePages()) {
    Chunks().Free(p);
  } else {
    std::free(p);
  }
}

}  // namespace edgeopt::rt
