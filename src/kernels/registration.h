// Registration entry points of the kernel families (called from register_all.cc).
#pragma once

#include "runtime/registry.h"

namespace edgeopt::kernels {

void RegisterBasicKernels(rt::OpRegistry& r);
// RFFT2D, COMPLEX_ABS, REAL, IMAG (kernels/signal).
void RegisterSignalKernels(rt::OpRegistry& r);
// UNIDIRECTIONAL_SEQUENCE_LSTM, LSTM, BIDIRECTIONAL_SEQUENCE_LSTM, UNIDIRECTIONAL_SEQUENCE_RNN, RNN,
// SVDF (kernels/lstm).
void RegisterLstmKernels(rt::OpRegistry& r);
// WHILE, IF, CALL_ONCE, VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE, STABLEHLO_COMPOSITE (kernels/control_flow).
void RegisterControlFlowKernels(rt::OpRegistry& r);
// Custom op TFLite_Detection_PostProcess (kernels/detection).
void RegisterDetectionKernels(rt::OpRegistry& r);
// MediaPipe custom ops Landmarks2TransformMatrix, TransformTensorBilinear, TransformLandmarks (kernels/mediapipe).
void RegisterMediaPipeKernels(rt::OpRegistry& r);
// elementwise/: binary arithmetic, comparisons, logical ops, SELECT, ADD_N, ZEROS_LIKE, FILL.
void RegisterElementwiseKernels(rt::OpRegistry& r);
// unary/: EXP LOG SQRT RSQRT ABS NEG SIN COS FLOOR CEIL ROUND SQUARE SIGN.
void RegisterUnaryKernels(rt::OpRegistry& r);
// activations/: RELU family, LEAKY_RELU, PRELU, ELU, HARD_SWISH, GELU, LOGISTIC, TANH, SOFTMAX, LOG_SOFTMAX.
void RegisterActivationKernels(rt::OpRegistry& r);
// quantize/: QUANTIZE, DEQUANTIZE, CAST.
void RegisterQuantizeKernels(rt::OpRegistry& r);
// normalization/: L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION.
void RegisterNormalizationKernels(rt::OpRegistry& r);
// Neural-network families: conv/ (CONV_2D, TRANSPOSE_CONV, Convolution2DTransposeBias),
// depthwise/, fully_connected/, matmul/ (BATCH_MATMUL), pooling/.
void RegisterConvKernels(rt::OpRegistry& r);
void RegisterDepthwiseKernels(rt::OpRegistry& r);
void RegisterFullyConnectedKernels(rt::OpRegistry& r);
void RegisterMatMulKernels(rt::OpRegistry& r);
void RegisterPoolingKernels(rt::OpRegistry& r);
// transform/: TRANSPOSE, CONCATENATION, PACK, UNPACK, SPLIT, SPLIT_V, SLICE, STRIDED_SLICE, PAD,
// PADV2, MIRROR_PAD, TILE, BROADCAST_TO, REVERSE_V2, GATHER, GATHER_ND, SCATTER_ND, SHAPE, RANK,
// RANGE, WHERE, ARG_MAX, ARG_MIN.
void RegisterTransformKernels(rt::OpRegistry& r);
// reduce/: MEAN, SUM, REDUCE_PROD, REDUCE_MAX, REDUCE_MIN, REDUCE_ANY, REDUCE_ALL.
void RegisterReduceKernels(rt::OpRegistry& r);
// resize/: RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR, DEPTH_TO_SPACE, SPACE_TO_DEPTH,
// BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND.
void RegisterResizeKernels(rt::OpRegistry& r);
// sparse/: DENSIFY.
void RegisterSparseKernels(rt::OpRegistry& r);
// index/: TOPK_V2, EMBEDDING_LOOKUP, ONE_HOT, SEGMENT_SUM, UNSORTED_SEGMENT_SUM/MAX/MIN/PROD, BUCKETIZE.
void RegisterIndexKernels(rt::OpRegistry& r);
// sequence/: CUMSUM, DYNAMIC_UPDATE_SLICE, REVERSE_SEQUENCE, BROADCAST_ARGS, MATRIX_DIAG, MATRIX_SET_DIAG.
void RegisterSequenceKernels(rt::OpRegistry& r);
// nms/: NON_MAX_SUPPRESSION_V4, NON_MAX_SUPPRESSION_V5 (float32).
void RegisterNmsKernels(rt::OpRegistry& r);
// bitwise/: ATAN2, BITWISE_XOR, RIGHT_SHIFT, BITCAST.
void RegisterBitwiseKernels(rt::OpRegistry& r);
// conv3d/: CONV_3D, CONV_3D_TRANSPOSE (float32).
void RegisterConv3dKernels(rt::OpRegistry& r);
// misc/: SPARSE_TO_DENSE, UNIQUE, FAKE_QUANT.
void RegisterMiscKernels(rt::OpRegistry& r);
// hashtable/: HASHTABLE, HASHTABLE_IMPORT, HASHTABLE_FIND, HASHTABLE_SIZE (int64 <-> string tables).
void RegisterHashtableKernels(rt::OpRegistry& r);
// Fast float32 kernels in front of the factories registered before (kernels/gemm/README.md):
// call after the reference families.
void RegisterFastFloatKernels(rt::OpRegistry& r);
// After RegisterFastFloatKernels: fast integer CONV_2D / FULLY_CONNECTED / DEPTHWISE_CONV_2D
// (gemm_int8/register_fast_int8.cc) in front of the factories registered before.
void RegisterFastInt8Kernels(rt::OpRegistry& r);
// After the reference families: fast int8/uint8/int16 ADD, SUB, MUL, QUANTIZE, DEQUANTIZE,
// AVERAGE/MAX_POOL_2D and spatial MEAN (quant_fast/register.cc) in front of the factories
// registered before.
void RegisterFastQuantKernels(rt::OpRegistry& r);
// Hybrid (dynamic-range: float activations, int8 weights) CONV_2D / FULLY_CONNECTED on
// AVX-512 VNNI (kernels/hybrid), in front of the factories registered before.
void RegisterHybridKernels(rt::OpRegistry& r);
// Last: float32 FULLY_CONNECTED / 1x1 CONV_2D with sparse constant weights wrap whatever kernel
// the earlier factories made in the sparse variant (fully_connected/sparse_op.h), which decides
// at prepare time between sparse and dense.
void RegisterSparseFloatKernels(rt::OpRegistry& r);
// fused/: matchers for runs of ops one kernel computes together (fused/fused.h).
void RegisterFusions(rt::OpRegistry& r);

}  // namespace edgeopt::kernels
