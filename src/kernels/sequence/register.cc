#include "kernels/registration.h"
#include "kernels/sequence/sequence.h"

namespace edgeopt::kernels {

void RegisterSequenceKernels(rt::OpRegistry& r) {
  sequence::RegisterCumsum(r);
  sequence::RegisterDynamicUpdateSlice(r);
  sequence::RegisterReverseSequence(r);
  sequence::RegisterBroadcastArgs(r);
  sequence::RegisterMatrixDiag(r);
}

}  // namespace edgeopt::kernels
