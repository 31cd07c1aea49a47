// Fused kernels: runs of consecutive ops that one kernel computes together so that the tensors
// between them never go to memory. The interpreter asks the matchers registered here
// (OpRegistry::AddFusion) at each op, before resolving it on its own; a match takes the run's ops
// and gives them one kernel and a synthetic operator (the run's outside inputs and its output).
// Off with InterpreterOptions::fuse_ops = false or EDGEOPT_FUSE=0 (for A/B runs), and whenever
// the interpreter must keep every tensor (preserve_all_tensors) or use reference kernels only.
//
// `bench --profile` shows a run once, on its first op, with the fused variant (e.g.
// "fused/pw+dw+pw/f32/avx512"); the other ops of the run read "fused into #<first op>".
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/nn_util.h"
#include "kernels/gemm/gemm.h"
#include "runtime/registry.h"

namespace edgeopt::kernels::fused {

// Float32 MobileNet blocks: [CONV_2D ->] DEPTHWISE_CONV_2D (depth multiplier 1, vector
// kernels) -> 1×1 CONV_2D, constant weights (or outputs of constant ops: float16 weights'
// DEQUANTIZE, also between the block's ops, NextOp), clamp activations, the first CONV_2D 1×1 or any
// filter up to 16 rows without dilation (a stem), each intermediate read only by
// the next op and not a subgraph output, the largest of them (static shapes) at least
// limits.min_inner_bytes (dw_chain_f32.cc). A residual ADD of the chain's input right after
// the project joins the run ("fused/pw+dw+pw+add/..."), and so does a standalone RELU / RELU6 /
// RELU_N1_TO_1 after the chain when its last step has no activation ("fused/dw+pw+relu/..."),
// and a PAD of rows and columns right before a VALID depthwise op, after the expansion or at the
// chain's start, as the depthwise filter's explicit padding ("fused/pad+dw+pw/..."). A dilated
// depthwise filter (DeepLab's atrous blocks) only starts a chain: its expansion stays its own op.
// With more than one thread, small images whose expansion fits 1 MB run in two phases
// (".../shared": the expansion once in chunks shared by the threads, SharedChunks, then each
// thread's output pixels) instead of bands of rows per thread.
rt::FusedRun MatchDwChainF32(const rt::KernelCreateContext& cc, const rt::FusionLimits& limits);

// The same blocks quantized on AVX-512 VNNI CPUs: [1×1 CONV_2D ->] DEPTHWISE_CONV_2D (depth
// multiplier 1, stride 1 or 2, a filter one of the depthwise row loops takes: 3×3, 5×5, 7×7,
// dilated 3×3, packed 4- and 8-channel layers) -> 1×1 CONV_2D [-> ADD of the chain's input], all
// int8 (constant symmetric weights, one scale or one per output channel) or all uint8 (one scale
// and zero point per weight tensor), int32 biases, clamp activations, the largest intermediate
// at least limits.min_inner_bytes (int8: limits.min_inner_bytes_int8, by default none; dw_chain_int8.cc),
// a trailing clamp op and a PAD before the depthwise op as in the float chains. int8 depthwise
// rows store the band the projection reads in the uint8 domain of its VNNI GEMM (Plan::flip_output).
// Shown as "fused/pw+dw+pw+add/int8/avx512vnni/<depthwise loop>[/shared]" (the two-phase form of
// small images with more than one thread, as the float chains); the same bits as the unfused ops.
rt::FusedRun MatchDwChainInt8(const rt::KernelCreateContext& cc, const rt::FusionLimits& limits);

// A RELU / RELU6 / RELU_N1_TO_1 right after a CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, ADD,
// SUB or MUL without an activation of its own becomes its fused activation (float32, or
// quantized with equal input and output parameters; act_into_producer.cc). Shown as
// "fused/<producer's variant>+relu".
rt::FusedRun MatchActivationIntoProducer(const rt::KernelCreateContext& cc, const rt::FusionLimits& limits);

// A 1×1 CONV_2D into which a channel CONCATENATION feeds, when some of the concatenated inputs
// are the same at every pixel (RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR of a 1×1 map: the image
// pooling branch of DeepLab's ASPP head): their share of the convolution is one matrix-vector
// product per image, added to the bias, and only the other inputs go through the GEMM
// (concat_conv_f32.cc). Shown as "fused/concat+pw/f32/...".
rt::FusedRun MatchConcatPointwiseF32(const rt::KernelCreateContext& cc, const rt::FusionLimits& limits);

// LOGISTIC(x) then MUL(x, LOGISTIC(x)) (SiLU / swish): float32 one pass y = x * LOGISTIC(x), the
// same bits as the two fast ops; int8 / uint8 one 256-entry table from both ops' reference
// formulas (silu.cc). Shown as "fused/logistic+mul/<type>/...".
rt::FusedRun MatchSilu(const rt::KernelCreateContext& cc, const rt::FusionLimits& limits);

// A PAD whose spatial paddings are SAME's for the VALID CONV_2D / DEPTHWISE_CONV_2D reading it:
// the convolution with SAME padding on the PAD's input (pad_into_conv.cc). Shown as
// "fused/pad+<the convolution's variant>".
rt::FusedRun MatchPadIntoConv(const rt::KernelCreateContext& cc, const rt::FusionLimits& limits);

// A QUANTIZE uint8 -> int8 of the same scale (zero points 128 apart: the bytes flipped) read only
// by an int8 CONV_2D right after it: the convolution reads the uint8 tensor, its VNNI paths
// without the flip (quantize_into_conv.cc). Shown as "fused/quantize+<the convolution's variant>".
rt::FusedRun MatchQuantizeIntoConv(const rt::KernelCreateContext& cc, const rt::FusionLimits& limits);

// A 1×1 stride-1 CONV_2D run as a GEMM: float32, constant weights [N,1,1,K] and bias (or none),
// a clamp activation. MatchPointwise fills op, mm and uk (for the op's own K, N and pixels).
struct Pointwise {
  int op = -1;  // graph op index
  gemm::MinMax mm{};
  const gemm::Ukernels* uk = nullptr;
  std::shared_ptr<const gemm::PackedB> packed;
};
// folded_ok: the weights may also be outputs of constant ops (float16 weights' DEQUANTIZE), whose
// data exists once the interpreter folded them (the caller then packs at Prepare, or at the first
// Invoke if folding did not happen).
bool MatchPointwise(const rt::KernelCreateContext& cc, Pointwise* pw, bool folded_ok = false);

// A float32 PAD that adds channels after the input's (last axis only) read only by the ADD right
// after it, whose other operand has the padded shape: one pass, the same sums (pad_add_f32.cc;
// AVX-512 CPUs). A standalone clamp after an ADD without one joins. Shown as
// "fused/pad+add/f32/avx512[+relu]".
rt::FusedRun MatchChannelPadAddF32(const rt::KernelCreateContext& cc, const rt::FusionLimits& limits);
// Its loop: out[p][c] = clamp(full[p][c] + (c < cin ? x[p][c] : +0.0)) over `pixels` rows of c
// channels (x: rows of cin), in the ADD's operand order (padded_first: the PAD's output is its
// input 0). Needs AVX-512 (pad_add_avx512.cc).
void ChannelPadAddAvx512(const float* x, int cin, const float* full, int c, bool padded_first, float* out,
                         int64_t pixels, gemm::MinMax mm);

// A float32 same-shape ADD read only by the PRELU right after it, whose alpha has one value per
// channel: one pass, the same sum and product (add_prelu_f32.cc; AVX-512 CPUs). Shown as
// "fused/add+prelu/f32/avx512".
rt::FusedRun MatchAddPreluF32(const rt::KernelCreateContext& cc, const rt::FusionLimits& limits);
// Op `prelu` is a float32 PRELU of the output of op `producer` alone (PrivateLink), of its shape,
// with one alpha per channel, constant or folded from constants.
bool ChannelPreluAfter(const rt::KernelCreateContext& cc, int producer, int prelu);
// In place over `pixels` rows of c channels: x = x >= 0 ? x : x * alpha[c] (AVX-512).
void PreluChannelsAvx512(float* x, const float* alpha, int c, int64_t pixels);
// Its loop over `pixels` rows of c channels: s = clamp(a + b); out = s >= 0 ? s : s * alpha[c].
void AddPreluAvx512(const float* a, const float* b, const float* alpha, int c, float* out, int64_t pixels,
                    gemm::MinMax mm);

// A fused run computed by the kernel of one of its ops, made for a rewritten copy of that op (the
// activation fusion, the PAD folding), shown as prefix + that kernel's variant + suffix.
class RenamedKernel final : public rt::OpKernel {
 public:
  RenamedKernel(std::unique_ptr<rt::OpKernel> inner, std::string prefix, std::string suffix)
      : inner_(std::move(inner)), prefix_(std::move(prefix)), suffix_(std::move(suffix)) {}
  Status Prepare(rt::KernelContext& ctx) override { return inner_->Prepare(ctx); }
  Status Invoke(rt::KernelContext& ctx) override { return inner_->Invoke(ctx); }
  std::string variant() const override { return prefix_ + inner_->variant() + suffix_; }
  int64_t Macs(const rt::KernelContext& ctx) const override { return inner_->Macs(ctx); }
  size_t PackedBytes() const override { return inner_->PackedBytes(); }
  bool ReadsInputAtInvoke(int input) const override { return inner_->ReadsInputAtInvoke(input); }

 private:
  std::unique_ptr<rt::OpKernel> inner_;
  std::string prefix_, suffix_;
};

// The op's fused activation field (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, ADD, SUB, MUL),
// or null when it has none (or no options table).
tflite::ActivationFunctionType* ActivationField(Operator& op);

// Op act_op is a RELU / RELU6 / RELU_N1_TO_1 of the output of op `producer` alone (PrivateLink),
// with input and output quantized alike (SameQuantization): *fused is that clamp as a fused
// activation, *name its name for variants ("relu"). The producer's own activation is not checked.
bool ClampAfter(const Subgraph& s, int producer, int act_op, tflite::ActivationFunctionType* fused, const char** name);

// Tensors a and b hold values the same way: both float32, or both int8 / uint8 / int16 with
// the same single scale and zero point (act_into_producer.cc).
bool SameQuantization(const Tensor& a, const Tensor& b);

// cc for op `op` of the same subgraph.
rt::KernelCreateContext ContextOf(const rt::KernelCreateContext& cc, int op);

// The op after op k that is not a constant op (rt::IsConstantOp: float16 weights' DEQUANTIZE,
// which converters put between the layers): the next op of a fused run, which leaves such ops to
// run before it (rt::FusedRun::ops). s.ops.size() when there is none.
int NextOp(const rt::KernelCreateContext& cc, int k);

// The output of op `producer` is read by op `consumer` alone, as one of its inputs (once), and is
// neither a subgraph output nor a variable: a fused kernel may keep it to itself.
bool OnlyReader(const Subgraph& s, int producer, int consumer);
// The same, read as the consumer's input 0.
bool PrivateLink(const Subgraph& s, int producer, int consumer);

// The PAD at cc (paddings: input 1) has constant int32 paddings for `rank` axes: *pads gets them
// ([before, after] per axis).
bool ConstantPaddings(const rt::KernelCreateContext& cc, size_t rank, std::vector<int32_t>* pads);

// Op `add` is an ADD of the output y of op `producer` (read by nothing else, not a subgraph
// output) and tensor x, in either order, y, x and the sum of one type and one static shape: a
// chain's residual connection.
bool ResidualAdd(const Subgraph& s, int producer, int add, int32_t x);
// The tensor a chain from op i to op `producer` adds in the residual ADD `add`: x (the chain's
// input) when ResidualAdd(s, producer, add, x) holds, else the ADD's other operand when it holds
// for that one and it is computed before op i (or is an input or a constant); -1: none.
int32_t ResidualOperand(const Subgraph& s, int i, int producer, int add, int32_t x);

// A PAD of rows and columns before a chain's depthwise op (top, bottom, left, right), taken as
// the depthwise filter's explicit padding.
struct SpatialPad {
  int top = 0, bottom = 0, left = 0, right = 0;
};
// Op `pad` is a PAD of NHWC rows and columns (constant paddings, none on the batch or channels,
// output quantized as the input: float32 zeros, or 8-bit values filled with the zero point, as a
// convolution's padding contributes nothing), read only by op `dw`, a VALID DEPTHWISE_CONV_2D.
bool MatchSpatialPad(const rt::KernelCreateContext& cc, int pad, int dw, SpatialPad* sp);
// The depthwise op of a chain whose op after the expansion (or whose first op) is k: k itself,
// or the op after it when k is a PAD that MatchSpatialPad takes (then *pad is its padding and
// *pad_op = k).
int DepthwiseAfterPad(const rt::KernelCreateContext& cc, int k, std::optional<SpatialPad>* pad, int* pad_op);
// The depthwise window of a VALID filter over the padded rows and columns, read as the filter's
// own leading padding: rows and columns past the image read as padding either way, and none past
// the PAD's are read. out_h / out_w 0 when the padded input is smaller than the filter.
WindowGeometry PaddedValidWindow(const SpatialPad& pad, int h, int w, int kh, int kw, int sh, int sw, int dh, int dw);

// A chain's expansion buffer E in a thread's loop over consecutive bands: it holds input rows
// [lo, hi) of image `image`. Next(b, lo, hi, ...) makes it hold the next band's rows: the rows
// that band shares with the one before move to the front of buf (row_bytes each), and it returns
// the first row still to compute (lo when nothing is kept).
struct BandRows {
  int image = -1, lo = 0, hi = 0;
  int Next(int b, int new_lo, int new_hi, void* buf, size_t row_bytes);
};

// The input rows [lo, hi) of an image of in_h rows that the filter's output rows [oy0, oy1)
// read (stride, top padding, k rows dilated by dil), clipped to the image.
inline std::pair<int, int> FilterInputRows(int oy0, int oy1, int stride, int pad, int k, int dil, int in_h) {
  const int lo = std::clamp(oy0 * stride - pad, 0, in_h);
  return {lo, std::clamp((oy1 - 1) * stride - pad + (k - 1) * dil + 1, lo, in_h)};
}

// Task t's share of the oh x ow output pixels of one image, [N t / tasks, N (t + 1) / tasks),
// in bands of at most band_rows rows: band(o0, o1, p0, p1) for rows [o0, o1) and the share's
// pixels [p0, p1) among them (a row cut between two shares is in both tasks' bands).
template <typename Band>
void ForShareBands(int t, int tasks, int oh, int ow, int band_rows, const Band& band) {
  const int64_t out_px = int64_t{oh} * ow;
  const int64_t q0 = out_px * t / tasks, q1 = out_px * (t + 1) / tasks;
  if (q1 <= q0) return;
  const int oy_end = static_cast<int>((q1 - 1) / ow) + 1;
  for (int o0 = static_cast<int>(q0 / ow); o0 < oy_end;) {
    const int o1 = std::min(oy_end, o0 + band_rows);
    band(o0, o1, std::max<int64_t>(q0, int64_t{o0} * ow), std::min<int64_t>(q1, int64_t{o1} * ow));
    o0 = o1;
  }
}

// The expansion of a whole image computed once by several threads in chunks of pixels (the
// chains' two-phase form, SharedRows in dw_chain_f32.cc / dw_chain_int8.cc): a chunk is computed
// by whichever thread claims it first. Plan(px, want, multiple) cuts px pixels into chunks of
// about `want` pixels (rounded up to `multiple`); Reset() before every invoke; a task first runs
// ClaimAll (the chunks from its share of the list on, wrapping around), then Ready(p0, p1) for the
// pixels each of its bands reads: chunks still free are computed there, chunks another thread is
// computing are waited for. compute(p0, n) computes pixels [p0, p0 + n).
class SharedChunks {
 public:
  void Plan(int64_t px, int64_t want, int64_t multiple);
  void Reset();
  template <typename Compute>
  void ClaimAll(int task, int tasks, const Compute& compute) {
    const int first = static_cast<int>(int64_t{chunks_} * task / tasks);
    for (int i = 0; i < chunks_; ++i) Claim((first + i) % chunks_, compute);
  }
  template <typename Compute>
  void Ready(int64_t p0, int64_t p1, const Compute& compute) {
    if (p1 <= p0) return;
    for (int k = static_cast<int>(p0 / chunk_px_), end = static_cast<int>((p1 - 1) / chunk_px_); k <= end; ++k)
      if (!Claim(k, compute)) Wait(k);
  }

 private:
  // Claims chunk k and computes it; false if another thread has claimed it.
  template <typename Compute>
  bool Claim(int k, const Compute& compute) {
    if (!TryClaim(k)) return false;
    const int64_t p0 = int64_t{k} * chunk_px_;
    compute(p0, std::min<int64_t>(chunk_px_, px_ - p0));
    Done(k);
    return true;
  }
  bool TryClaim(int k);
  void Done(int k);
  void Wait(int k) const;
  int64_t px_ = 0;
  int chunk_px_ = 1, chunks_ = 0;
  std::unique_ptr<std::atomic<uint8_t>[]> state_;  // 0 free, 1 claimed, 2 done
};

// Elements of a depthwise chain's largest intermediate (static shapes): the depthwise output (op
// dw), and with an expansion (op i != dw) the expansion's output.
int64_t ChainInnerElements(const Subgraph& s, int i, int dw);
// The synthetic operator of a chain [op i as expansion ->] depthwise (op dw; dw == i: no
// expansion) -> project [-> ADD]: op i's input, then the weights and bias (-1 if none) of each
// convolution in order; the output of op `last` (the project or the ADD).
// expands: op i is the chain's expansion (else, with dw != i, a PAD the chain starts with, whose
// input is the chain's).
std::unique_ptr<Operator> ChainOp(const Subgraph& s, int i, int dw, int project, int last, std::string custom_code,
                                  bool expands = true);
// The ops of such a chain (rt::FusedRun::ops): i, [pad,] [dw,] project[, last][, act] (act: a
// trailing activation op whose output the chain writes, ChainOp's `last` then; pad: a PAD
// between the expansion and the depthwise op; -1 for none).
std::vector<int> ChainOps(int i, int dw, int project, int last, int act = -1, int pad = -1);

}  // namespace edgeopt::kernels::fused
