// Helpers shared by the windowed neural-network kernels (convolutions, pooling, matmuls):
// window geometry with LiteRT's padding rules, fused activations with clear errors, and the
// validation of quantization parameters every quantized kernel needs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "runtime/kernel.h"
#include "runtime/thread_pool.h"

namespace edgeopt::kernels {

// Stride/dilation/filter of one spatial window; `padding` is tflite::Padding (SAME, VALID).
struct WindowSpec {
  int padding = 0;
  int stride_h = 1, stride_w = 1;
  int dilation_h = 1, dilation_w = 1;
  int filter_h = 1, filter_w = 1;
};

// Output size and leading padding of a window sliding over an in_h x in_w image.
struct WindowGeometry {
  int in_h = 0, in_w = 0;
  int out_h = 0, out_w = 0;
  int pad_h = 0, pad_w = 0;  // leading (top/left) padding; the trailing side gets the rest
};

// One output pixel of a pooling window, clipped to the image: rows [fy_begin, fy_end) and
// columns [fx_begin, fx_end) of the filter lie inside, starting at image row y0 + fy_begin and
// column x0 + fx_begin of batch b.
struct ClippedWindow {
  int64_t row = 0;  // b * out_h + oy: output row over all batches
  int b = 0, ox = 0;
  int y0 = 0, x0 = 0;
  int fy_begin = 0, fy_end = 0, fx_begin = 0, fx_end = 0;
};

// Calls fn(const ClippedWindow&) once per output row of `batches` images with the row's fields
// set (row, b, y0, fy_begin, fy_end; the column fields 0), rows split over the thread pool.
template <typename Fn>
void ForEachClippedRow(rt::ThreadPool& threads, int batches, const WindowGeometry& g, const WindowSpec& s, Fn&& fn) {
  threads.ParallelFor(int64_t{batches} * g.out_h, 1, [&](int64_t begin, int64_t end) {
    ClippedWindow w;
    for (w.row = begin; w.row < end; ++w.row) {
      w.b = static_cast<int>(w.row / g.out_h);
      const int oy = static_cast<int>(w.row % g.out_h);
      w.y0 = oy * s.stride_h - g.pad_h;
      w.fy_begin = std::max(0, -w.y0);
      w.fy_end = std::min(s.filter_h, g.in_h - w.y0);
      fn(static_cast<const ClippedWindow&>(w));
    }
  });
}

// Calls fn(const ClippedWindow&) for every output pixel of `batches` images, output rows split
// over the thread pool (pooling: each window reads only the valid part of the image).
template <typename Fn>
void ForEachClippedWindow(rt::ThreadPool& threads, int batches, const WindowGeometry& g, const WindowSpec& s, Fn&& fn) {
  ForEachClippedRow(threads, batches, g, s, [&](const ClippedWindow& row) {
    ClippedWindow w = row;
    for (w.ox = 0; w.ox < g.out_w; ++w.ox) {
      w.x0 = w.ox * s.stride_w - g.pad_w;
      w.fx_begin = std::max(0, -w.x0);
      w.fx_end = std::min(s.filter_w, g.in_w - w.x0);
      fn(static_cast<const ClippedWindow&>(w));
    }
  });
}

// Validates the spec (positive strides, dilations and filter sizes, SAME or VALID padding) and
// computes the geometry as LiteRT's ComputePaddingHeightWidth. Errors name the op.
Status ComputeWindow(const rt::KernelContext& ctx, const WindowSpec& spec, int in_h, int in_w, WindowGeometry* g);

// "input 'x' int8, filter 'w' float32, output 'y' int8" for the tensors of `cc` given as
// (role, input index) pairs (index -1: output 0); omitted optional inputs are skipped.
std::string DescribeTypes(const rt::KernelCreateContext& cc, std::initializer_list<std::pair<const char*, int>> roles);

// Fused activation clamp bounds, or an Unsupported error naming the activation.
Status FloatActivation(const rt::KernelContext& ctx, int activation, float* lo, float* hi);
Status QuantizedActivation(const rt::KernelContext& ctx, int activation, const rt::RtTensor& output, int32_t* lo,
                           int32_t* hi);

// Name of a tflite::ActivationFunctionType ("RELU6").
std::string ActivationName(int activation);

// Requires a per-tensor scale and zero point on `t` (role names it in the message: "input").
Status RequirePerTensorQuant(const rt::KernelContext& ctx, const rt::RtTensor& t, const std::string& role);

// Requires quantization on weights `w`: one scale, or `channels` scales along `axis` (the
// per-channel case). With `symmetric`, every zero point must be 0 (int8/int16 weights).
Status RequireWeightQuant(const rt::KernelContext& ctx, const rt::RtTensor& w, int channels, int axis, bool symmetric);

// out[i * m + j] = in[i] for i < n, j < m: every value (channel) repeated m times, which turns a
// DEPTHWISE_CONV_2D with depth multiplier m into one with multiplier 1 over C·m channels.
template <typename T>
void RepeatEach(const T* in, int64_t n, int m, T* out) {
  for (int64_t i = 0; i < n; ++i) std::fill_n(out + i * m, m, in[i]);
}

// out[c * taps + t] = in[t * channels + c]: a depthwise filter [1][kh][kw][channels] (taps =
// kh·kw) over one input channel is the filter [channels][kh][kw][1] of a convolution with
// `channels` output channels.
template <typename T>
void DepthwiseFilterAsConv(const T* in, int taps, int channels, T* out) {
  for (int c = 0; c < channels; ++c)
    for (int t = 0; t < taps; ++t) out[static_cast<int64_t>(c) * taps + t] = in[static_cast<int64_t>(t) * channels + c];
}

// Weight scale of channel c (per-tensor weights: the one scale).
inline float WeightScale(const rt::RtTensor& w, int c) {
  return w.quant->scale.size() == 1 ? w.quant->scale[0] : w.quant->scale[c];
}

// LiteRT's uint8 kernels (GetQuantizedConvolutionMultipler) require a quantized bias to have scale
// input_scale * weight_scale (relative difference <= 1e-6). No-op when bias is null or unquantized.
Status CheckLegacyBiasScale(const rt::KernelContext& ctx, const rt::RtTensor& input, const rt::RtTensor& weights,
                            const rt::RtTensor* bias);

// Output requantization of a quantized convolution (CONV_2D, DEPTHWISE_CONV_2D). Validates the
// quantization of input and output (per tensor), filter (per tensor or `channels` scales along
// `channel_axis`; symmetric unless uint8) and, for uint8, the legacy bias scale; requires zero
// points 0 for int16 (16x8). Computes LiteRT's multipliers: uint8, one legacy per-tensor
// multiplier; int8/int16, one per output channel; and the fused activation's clamp bounds.
enum class ConvQuantType { kUInt8, kInt8, kInt16 };
struct ConvRequant {
  std::vector<int32_t> multiplier;
  std::vector<int> shift;
  int32_t act_min = 0, act_max = 0;
};
Status PrepareConvRequant(const rt::KernelContext& ctx, ConvQuantType type, const rt::RtTensor& input,
                          const rt::RtTensor& filter, const rt::RtTensor* bias, const rt::RtTensor& output,
                          int channels, int channel_axis, int activation, ConvRequant* rq);

// The window options of a CONV_2D, or of a DEPTHWISE_CONV_2D over one input channel run as a
// convolution (same field names as both option tables, so ComputeConvWindow reads any of them).
struct ConvOptions {
  tflite::Padding padding = tflite::Padding_SAME;
  int32_t stride_w = 1, stride_h = 1, dilation_w_factor = 1, dilation_h_factor = 1;
  tflite::ActivationFunctionType fused_activation_function = tflite::ActivationFunctionType_NONE;
};
template <class Options>
ConvOptions ConvOptionsOf(const Options& o) {
  ConvOptions c;
  c.padding = o.padding;
  c.stride_w = o.stride_w;
  c.stride_h = o.stride_h;
  c.dilation_w_factor = o.dilation_w_factor;
  c.dilation_h_factor = o.dilation_h_factor;
  c.fused_activation_function = o.fused_activation_function;
  return c;
}

// The window of a convolution from its options (Conv2DOptions, DepthwiseConv2DOptions: padding,
// strides, dilation factors) for a filter_h x filter_w filter over an in_h x in_w image.
template <class Options>
Status ComputeConvWindow(const rt::KernelContext& ctx, const Options& o, int filter_h, int filter_w, int in_h, int in_w,
                         WindowGeometry* g) {
  WindowSpec spec;
  spec.padding = o.padding;
  spec.stride_h = o.stride_h;
  spec.stride_w = o.stride_w;
  spec.dilation_h = o.dilation_h_factor;
  spec.dilation_w = o.dilation_w_factor;
  spec.filter_h = filter_h;
  spec.filter_w = filter_w;
  return ComputeWindow(ctx, spec, in_h, in_w, g);
}

// The same for the convolutions' dimension structs (reference and fast integer kernels): reads
// d->k_h, k_w, in_h, in_w and fills
// d's output size, leading padding, strides and dilations.
template <class Options, class Dims>
Status ComputeConvWindow(const rt::KernelContext& ctx, const Options& o, Dims* d) {
  WindowGeometry g;
  RETURN_IF_ERROR(ComputeConvWindow(ctx, o, d->k_h, d->k_w, d->in_h, d->in_w, &g));
  d->out_h = g.out_h;
  d->out_w = g.out_w;
  d->pad_h = g.pad_h;
  d->pad_w = g.pad_w;
  d->stride_h = o.stride_h;
  d->stride_w = o.stride_w;
  d->dil_h = o.dilation_h_factor;
  d->dil_w = o.dilation_w_factor;
  return Status::Ok();
}

}  // namespace edgeopt::kernels
