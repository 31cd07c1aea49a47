// Internal to the index family (TOPK_V2, EMBEDDING_LOOKUP, ONE_HOT, the segment reductions,
// BUCKETIZE): one registration function per source file, all called by RegisterIndexKernels
// (register.cc).
#pragma once

#include "runtime/registry.h"

namespace edgeopt::kernels::index_ops {

void RegisterTopK(rt::OpRegistry& r);       // ref_topk.cc: TOPK_V2
void RegisterLookup(rt::OpRegistry& r);     // ref_lookup.cc: EMBEDDING_LOOKUP, ONE_HOT
void RegisterSegment(rt::OpRegistry& r);    // ref_segment.cc: SEGMENT_SUM, UNSORTED_SEGMENT_SUM/MAX/MIN/PROD
void RegisterBucketize(rt::OpRegistry& r);  // ref_bucketize.cc: BUCKETIZE

}  // namespace edgeopt::kernels::index_ops
