#include "kernels/registration.h"
#include "kernels/transform/transform.h"

namespace edgeopt::kernels {

void RegisterTransformKernels(rt::OpRegistry& r) {
  transform::RegisterTranspose(r);
  transform::RegisterConcatPack(r);
  transform::RegisterSplitUnpack(r);
  transform::RegisterSlice(r);
  transform::RegisterPad(r);
  transform::RegisterTileBroadcast(r);
  transform::RegisterGather(r);
  transform::RegisterGatherFast(r);
  transform::RegisterShapeOps(r);
  transform::RegisterArgMinMax(r);
}

}  // namespace edgeopt::kernels
