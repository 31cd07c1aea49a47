#include "kernels/misc/misc.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {

void RegisterMiscKernels(rt::OpRegistry& r) {
  misc_ops::RegisterSparseToDense(r);
  misc_ops::RegisterUnique(r);
}

}  // namespace edgeopt::kernels
