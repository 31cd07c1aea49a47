// Memory for packed weights (the float GEMM's panels, the int8 GEMM's packed bytes): 64-byte
// aligned blocks carved from 2 MB-aligned chunks that the kernel is asked to back with
// transparent huge pages (madvise MADV_HUGEPAGE; Linux uses them when
// /sys/kernel/mm/transparent_hugepage/enabled is "madvise" or "always").
//
// Why: a model's packed weights are read once per invoke, megabytes of them, and on 4 KB pages
// every 4 KB is a TLB entry; under a hypervisor a TLB miss walks two page tables. Measured on
// MobileNetV2 float (AMD Zen 4 VM, 1 thread, two interpreters of the same model in one process
// alternated, per-op medians): the 7x7 1x1 convolutions (0.6-1.6 MB of weights each) 0.90-0.93x
// the time, the 1280 -> 1001 classifier (5 MB) 0.75x, the whole model ~0.95x. The arena of
// activations on huge pages measured no gain and stays on the heap.
//
// Blocks are never reused: a chunk is unmapped when its last block is freed. At most the unused
// tail of the newest chunk (< 2 MB) is mapped beyond what the blocks need. EDGEOPT_HUGE_PAGES=0
// turns this off (plain aligned heap blocks); so do builds with AddressSanitizer, which must see
// each block as its own allocation.
#pragma once

#include <cstddef>

namespace edgeopt::rt {

// A zero-filled block of at least `bytes` (>= 1) bytes, 64-byte aligned; nullptr if out of
// memory. Thread-safe.
void* AllocateWeightMemory(size_t bytes);
// Frees a block from AllocateWeightMemory (nullptr: no-op). Thread-safe.
void FreeWeightMemory(void* p);
// Whether blocks come from huge-page chunks (false under EDGEOPT_HUGE_PAGES=0 or ASan).
bool WeightMemoryUsesHugePages();

}  // namespace edgeopt::rt
