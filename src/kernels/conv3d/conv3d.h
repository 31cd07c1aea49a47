// CONV_3D and CONV_3D_TRANSPOSE (float32, TFLite 2.9 semantics): shared geometry, the
// reference loops and the fast CONV_3D factory.
#pragma once

#include <cstdint>
#include <memory>

#include "runtime/kernel.h"
#include "runtime/registry.h"
#include "runtime/thread_pool.h"
#include "graph/graph.h"

namespace edgeopt::kernels::conv3d {

// A 3-D window: NDHWC input [batch, in_d, in_h, in_w, in_c] against a KD x KH x KW filter,
// giving [batch, out_d, out_h, out_w, out_c]. pad_*: leading padding (LiteRT's
// ComputePadding3DValues; the trailing side gets the rest).
struct Dims {
  int batch = 0;
  int in_d = 0, in_h = 0, in_w = 0, in_c = 0;
  int k_d = 0, k_h = 0, k_w = 0;
  int out_d = 0, out_h = 0, out_w = 0, out_c = 0;
  int stride_d = 1, stride_h = 1, stride_w = 1;
  int dil_d = 1, dil_h = 1, dil_w = 1;
  int pad_d = 0, pad_h = 0, pad_w = 0;
  int64_t taps() const { return int64_t{k_d} * k_h * k_w; }
  int64_t out_pixels() const { return int64_t{batch} * out_d * out_h * out_w; }
};

// Validates Conv3DOptions (padding SAME / VALID, strides and dilations >= 1) and fills the
// stride, dilation and padding fields of `d` for a window over an image of size
// (img_d, img_h, img_w) given the filter size in d; the sizes the window produces go to
// (*win_d, *win_h, *win_w). For CONV_3D the image is the input and the window sizes the
// output; for CONV_3D_TRANSPOSE the image is the requested output and the window sizes must
// equal the input's. Errors name the values.
Status ComputeGeometry(const rt::KernelContext& ctx, const tflite::Conv3DOptionsT& o, int img_d, int img_h, int img_w,
                       Dims* d, int* win_d, int* win_h, int* win_w);

// Reads and validates CONV_3D's tensors (input [N,D,H,W,Cin] float32, filter
// [KD,KH,KW,Cin,Cout] float32, optional bias [Cout] float32, output float32) and its options;
// fills `d` and the fused activation's clamp bounds, and sets the output shape.
Status PrepareConv3D(rt::KernelContext& ctx, Dims* d, float* act_min, float* act_max);

// The reference CONV_3D: out = clamp(sum + bias); for each output pixel the Cout sums are
// accumulated together (filter rows are Cout-contiguous), the pixels split over the pool.
void Conv3DRef(const Dims& d, const float* in, const float* filter, const float* bias, float act_min, float act_max,
               float* out, rt::ThreadPool& pool);

// The fast CONV_3D (indirect packed GEMM, conv3d_f32.cc) when it applies (float32, constant
// or folded filter and bias, not reference_only), else null.
std::unique_ptr<rt::OpKernel> MakeConv3DF32(const rt::KernelCreateContext& cc);

// Adds the CONV_3D and CONV_3D_TRANSPOSE factories (ref.cc).
void Register(rt::OpRegistry& r);

}  // namespace edgeopt::kernels::conv3d
