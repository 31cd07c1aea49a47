// CONV_3D, CONV_3D_TRANSPOSE (kernels/conv3d).
#include "kernels/conv3d/conv3d.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {

void RegisterConv3dKernels(rt::OpRegistry& r) { conv3d::Register(r); }

}  // namespace edgeopt::kernels
