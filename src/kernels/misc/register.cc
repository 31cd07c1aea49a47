#include "kernels/misc/misc.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {

void RegisterMiscKernels(rt::OpRegistry& r) {
  misc_ops::RegisterSparseToDense(r);
  misc_ops::RegisterUnique(r);
  misc_ops::RegisterFakeQuant(r);
}

}  // namespace edgeopt::kernels
