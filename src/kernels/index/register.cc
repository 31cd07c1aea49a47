#include "kernels/index/index.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {

void RegisterIndexKernels(rt::OpRegistry& r) {
  index_ops::RegisterTopK(r);
  index_ops::RegisterLookup(r);
  index_ops::RegisterSegment(r);
  index_ops::RegisterBucketize(r);
}

}  // namespace edgeopt::kernels
