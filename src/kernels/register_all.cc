// The built-in kernel families. Each family registers its ops (reference kernels plus the
// optimized variants its factories may choose) in its own folder; add new families here.
#include "kernels/registration.h"

namespace edgeopt::rt {

void RegisterAllKernels(OpRegistry& r) {
  kernels::RegisterBasicKernels(r);
  kernels::RegisterSignalKernels(r);
  kernels::RegisterLstmKernels(r);
  kernels::RegisterControlFlowKernels(r);
  kernels::RegisterDetectionKernels(r);
  kernels::RegisterMediaPipeKernels(r);
  kernels::RegisterElementwiseKernels(r);
  kernels::RegisterUnaryKernels(r);
  kernels::RegisterActivationKernels(r);
  kernels::RegisterQuantizeKernels(r);
  kernels::RegisterNormalizationKernels(r);
  kernels::RegisterConvKernels(r);
  kernels::RegisterDepthwiseKernels(r);
  kernels::RegisterFullyConnectedKernels(r);
  kernels::RegisterMatMulKernels(r);
  kernels::RegisterPoolingKernels(r);
  kernels::RegisterTransformKernels(r);
  kernels::RegisterReduceKernels(r);
  kernels::RegisterResizeKernels(r);
  kernels::RegisterSparseKernels(r);
  kernels::RegisterIndexKernels(r);
  kernels::RegisterSequenceKernels(r);
  kernels::RegisterNmsKernels(r);
  kernels::RegisterBitwiseKernels(r);
  kernels::RegisterConv3dKernels(r);
  kernels::RegisterMiscKernels(r);
  kernels::RegisterHashtableKernels(r);
  // Last: puts the fast float32 kernels in front of the factories registered above.
  kernels::RegisterFastFloatKernels(r);
  // Then the fast integer kernels in front of those (they decline float ops).
  kernels::RegisterFastInt8Kernels(r);
  // Fast integer elementwise / quantize / pooling kernels (they decline float ops).
  kernels::RegisterFastQuantKernels(r);
  // Hybrid CONV_2D / FULLY_CONNECTED (they decline every other type combination).
  kernels::RegisterHybridKernels(r);
  // Last: the sparse float32 FC / 1x1 conv variants wrap the (fast or reference) dense kernel.
  kernels::RegisterSparseFloatKernels(r);
  // Fusions of consecutive ops, tried before the ops one by one.
  kernels::RegisterFusions(r);
}

}  // namespace edgeopt::rt
