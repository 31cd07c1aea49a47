// Fast hybrid ("dynamic range") CONV_2D and FULLY_CONNECTED: float input and output, constant
// int8 weights. As the reference kernels (conv/ref_conv2d.cc, fully_connected/ref.cc) do, the
// input is quantized per batch at every invoke with LiteRT's own rounding (QuantizeRows, here
// vectorized: QuantizeRowsAvx512); the
// int8 x int8 dot products then run on AVX-512 VNNI (hybrid_dot.h) instead of scalar loops, and
// each output is scaled back exactly as the reference scales it — same integers, same float
// operations in the same order, so the outputs are the reference's bit for bit.
//
// CONV_2D gathers each output pixel's window (im2col) into a row of K = KH·KW·C bytes; a tap in
// the padding holds the input zero point, which contributes nothing once the zero point is
// subtracted (the reference skips those taps). Grouped convolution, non-constant weights and
// CPUs without AVX-512 VNNI stay with the reference kernel.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "kernels/common/fast_kernel.h"
#include "kernels/common/hybrid_quant.h"
#include "kernels/common/kernel_util.h"
#include "kernels/common/nn_util.h"
#include "kernels/gemm/f32_op_util.h"
#include "kernels/gemm_int8/qgemm_vnni.h"
#include "kernels/hybrid/hybrid_depthwise.h"
#include "kernels/hybrid/hybrid_dot.h"
#include "kernels/registration.h"
#include "runtime/cpu.h"

namespace edgeopt::kernels::hybrid {

PackedWeights PackedWeights::FromNK(const int8_t* w, int n, int k) {
  PackedWeights p;
  p.n = n;
  p.k = k;
  p.kp = (k + 3) / 4 * 4;
  p.w.assign(static_cast<size_t>(p.blocks()) * kUnits * p.kp, 0);
  p.sums.assign(static_cast<size_t>(p.blocks()) * kUnits, 0);
  for (int u = 0; u < n; ++u) {
    const int j = u / kUnits, lane = u % kUnits;
    int32_t sum = 0;
    for (int kk = 0; kk < k; ++kk) {
      const int8_t v = w[static_cast<size_t>(u) * k + kk];
      p.w[(static_cast<size_t>(j) * p.kp / 4 + kk / 4) * 64 + lane * 4 + kk % 4] = v;
      sum += v;
    }
    p.sums[u] = sum;
  }
  return p;
}

namespace {

// Rows of A (kp bytes each) → float outputs. Rows are split between threads when there are
// enough of them (each thread's rows gather their own A), blocks of units otherwise (one row:
// a FULLY_CONNECTED with batch 1).
struct Plan {
  int64_t row_tasks = 1, block_tasks = 1;
  int64_t tasks() const { return row_tasks * block_tasks; }
  // Task t's rows [*r0, *r1) and blocks [*j0, *j1) of `rows` rows and `blocks` blocks.
  void Range(int64_t t, int64_t rows, int blocks, int64_t* r0, int64_t* r1, int* j0, int* j1) const {
    *r0 = rows * (t / block_tasks) / row_tasks;
    *r1 = rows * (t / block_tasks + 1) / row_tasks;
    *j0 = static_cast<int>(blocks * (t % block_tasks) / block_tasks);
    *j1 = static_cast<int>(blocks * (t % block_tasks + 1) / block_tasks);
  }
};

// The bias (zeros without one) padded to whole blocks; false if its data is not there yet.
bool PaddedBias(const rt::KernelContext& ctx, int n, size_t padded, std::vector<float>* out) {
  out->assign(padded, 0.0f);
  const rt::RtTensor* bias = ctx.input(2);
  if (!bias) return true;
  if (!bias->data) return false;
  std::copy(bias->data_as<float>(), bias->data_as<float>() + n, out->begin());
  return true;
}

Plan SplitWork(rt::ThreadPool& pool, int64_t rows, int blocks, int64_t macs) {
  Plan p;
  const int threads = pool.num_threads();
  if (threads <= 1 || macs < (int64_t{1} << 16)) return p;
  const int64_t want = 4 * int64_t{threads};
  if (rows >= 4 * want) {
    p.row_tasks = want;
  } else {
    p.row_tasks = std::max<int64_t>(1, rows / 4);
    p.block_tasks = std::min<int64_t>(blocks, (want + p.row_tasks - 1) / p.row_tasks);
  }
  return p;
}

class HybridFullyConnected final : public FastKernel {
 public:
  explicit HybridFullyConnected(std::unique_ptr<rt::OpKernel> ref) : FastKernel(std::move(ref)) {}

 protected:
  Expected<bool> PrepareFast(rt::KernelContext& ctx) override {
    const auto& o = GetOptions<tflite::FullyConnectedOptionsT>(ctx.op());
    const rt::RtTensor* in = ctx.input(0);
    const rt::RtTensor* w = ctx.input(1);
    if (!w->data || w->rank() != 2 || !w->quant) return false;
    units_ = w->dim(0);
    depth_ = w->dim(1);
    if (units_ <= 0 || depth_ <= 0) return false;
    batches_ = in->num_elements() / depth_;
    asymmetric_ = o.asymmetric_quantize_inputs;
    RETURN_IF_ERROR(FloatActivation(ctx, o.fused_activation_function, &lo_, &hi_));
    scales_.assign(w->quant->scale.begin(), w->quant->scale.end());
    per_channel_ = w->per_channel();
    packed_ = GetOrPack<PackedWeights>(ctx, "hybrid-nk",
                                       [&] { return PackedWeights::FromNK(w->data_as<int8_t>(), units_, depth_); });
    q_.assign(static_cast<size_t>(batches_) * depth_, 0);
    a_.assign(static_cast<size_t>(batches_) * packed_->kp, 0);
    const size_t padded = static_cast<size_t>(packed_->blocks()) * kUnits;
    row_scale_.assign(static_cast<size_t>(batches_) * padded, 0.0f);
    if (!PaddedBias(ctx, units_, padded, &bias_)) return false;
    batch_scale_.assign(batches_, 0.0f);
    batch_zp_.assign(batches_, 0);
    return true;
  }

  Status InvokeFast(rt::KernelContext& ctx) override {
    const PackedWeights& p = *packed_;
    QuantizeRowsAvx512(ctx.input(0)->data_as<float>(), batches_, depth_, asymmetric_, q_.data(), batch_scale_.data(),
                 batch_zp_.data());
    for (int64_t r = 0; r < batches_; ++r)  // q + 128, as vpdpbusd takes it (vectorized)
      qgemm::CopyFlip(reinterpret_cast<const uint8_t*>(q_.data()) + r * depth_, depth_, 0x80, a_.data() + r * p.kp);
    float* out = ctx.output(0)->data_as<float>();
    const size_t padded = static_cast<size_t>(p.blocks()) * kUnits;
    for (int64_t r = 0; r < batches_; ++r)
      for (int u = 0; u < units_; ++u)  // as the reference: the batch scale times the weight scale
        row_scale_[r * padded + u] = per_channel_ ? batch_scale_[r] * scales_[u] : batch_scale_[r] * scales_[0];
    const Plan plan = SplitWork(ctx.threads(), batches_, p.blocks(), batches_ * int64_t{units_} * depth_);
    ctx.threads().ParallelTasks(plan.tasks(), [&](int64_t t) {
      int64_t r0, r1;
      int j0, j1;
      plan.Range(t, batches_, p.blocks(), &r0, &r1, &j0, &j1);
      // Every row is its own batch with its own scale and zero point: tiles of rows that read
      // each weight block once (a row at a time streamed all the weights per row).
      OutputStage os{row_scale_.data() + r0 * padded, bias_.data(), 0, lo_, hi_};
      os.row_zero_point = batch_zp_.data() + r0;
      os.scale_stride = padded;
      DotVnniFloat(p, a_.data() + r0 * p.kp, p.kp, static_cast<int>(r1 - r0), j0, j1, os, out + r0 * units_, units_);
    });
    return Status::Ok();
  }

  std::string FastVariant() const override { return "fully_connected/hybrid/avx512vnni"; }

 private:
  int units_ = 0, depth_ = 0;
  int64_t batches_ = 0;
  bool asymmetric_ = false, per_channel_ = false;
  float lo_ = 0, hi_ = 0;
  std::vector<float> scales_;
  std::shared_ptr<const PackedWeights> packed_;
  std::vector<int8_t> q_;
  std::vector<uint8_t> a_;
  std::vector<float> batch_scale_;
  std::vector<int32_t> batch_zp_;
  std::vector<float> row_scale_, bias_;  // per batch row / per unit, padded to whole blocks
};

class HybridConv2D final : public FastKernel {
 public:
  explicit HybridConv2D(std::unique_ptr<rt::OpKernel> ref) : FastKernel(std::move(ref)) {}

 protected:
  Expected<bool> PrepareFast(rt::KernelContext& ctx) override {
    const auto& o = GetOptions<tflite::Conv2DOptionsT>(ctx.op());
    const rt::RtTensor* in = ctx.input(0);
    const rt::RtTensor* f = ctx.input(1);
    if (!f->data || !f->quant || in->rank() != 4 || f->rank() != 4 || f->dim(3) != in->dim(3)) return false;
    g_.batch = in->dim(0);
    g_.h = in->dim(1);
    g_.w = in->dim(2);
    g_.c = in->dim(3);
    g_.kh = f->dim(1);
    g_.kw = f->dim(2);
    g_.sh = o.stride_h;
    g_.sw = o.stride_w;
    g_.dh = o.dilation_h_factor;
    g_.dw = o.dilation_w_factor;
    WindowGeometry wg;
    RETURN_IF_ERROR(ComputeConvWindow(ctx, o, g_.kh, g_.kw, g_.h, g_.w, &wg));
    g_.oh = wg.out_h;
    g_.ow = wg.out_w;
    g_.pad_top = wg.pad_h;
    g_.pad_left = wg.pad_w;
    out_c_ = f->dim(0);
    const int k = g_.kh * g_.kw * g_.c;
    RETURN_IF_ERROR(FloatActivation(ctx, o.fused_activation_function, &lo_, &hi_));
    scales_.assign(f->quant->scale.begin(), f->quant->scale.end());
    // As the reference: per-channel scales that are all equal count as per tensor (symmetric).
    per_channel_ = scales_.size() > 1 &&
                   std::any_of(scales_.begin(), scales_.end(), [&](float s) { return s != scales_[0]; });
    packed_ = GetOrPack<PackedWeights>(ctx, "hybrid-nk",
                                       [&] { return PackedWeights::FromNK(f->data_as<int8_t>(), out_c_, k); });
    const int64_t per_batch = int64_t{g_.h} * g_.w * g_.c;
    q_.assign(static_cast<size_t>(g_.batch * per_batch), 0);
    // A 1x1 convolution with stride 1 reads every pixel's channels as they are: its im2col rows
    // are the image's pixels, so the flipped image is A itself (when no padding bytes are needed).
    direct_ = g_.kh == 1 && g_.kw == 1 && g_.sh == 1 && g_.sw == 1 && g_.pad_top == 0 && g_.pad_left == 0 &&
              g_.oh == g_.h && g_.ow == g_.w && packed_->kp == k;
    a_.assign(direct_ ? 0 : static_cast<size_t>(Rows()) * packed_->kp, 0);
    batch_scale_.assign(g_.batch, 0.0f);
    batch_zp_.assign(g_.batch, 0);
    const size_t padded = static_cast<size_t>(packed_->blocks()) * kUnits;
    batch_scales_.assign(static_cast<size_t>(g_.batch) * padded, 0.0f);
    if (!PaddedBias(ctx, out_c_, padded, &bias_)) return false;
    return true;
  }

  Status InvokeFast(rt::KernelContext& ctx) override {
    const PackedWeights& p = *packed_;
    const int64_t per_batch = int64_t{g_.h} * g_.w * g_.c;
    QuantizeRowsAvx512(ctx.input(0)->data_as<float>(), g_.batch, per_batch, per_channel_, q_.data(), batch_scale_.data(),
                 batch_zp_.data(), &ctx.threads());
    float* out = ctx.output(0)->data_as<float>();
    const size_t padded = static_cast<size_t>(p.blocks()) * kUnits;
    for (int bi = 0; bi < g_.batch; ++bi)
      for (int u = 0; u < out_c_; ++u)  // as the reference multiplies them
        batch_scales_[bi * padded + u] = per_channel_ ? scales_[u] * batch_scale_[bi] : batch_scale_[bi] * scales_[0];
    const int64_t rows = Rows(), pixels = int64_t{g_.oh} * g_.ow;
    const Plan plan = SplitWork(ctx.threads(), rows, p.blocks(), rows * int64_t{out_c_} * p.k);
    {  // int8 q to the uint8 q + 128 that vpdpbusd takes, in place (im2col then copies bytes)
      uint8_t* q = reinterpret_cast<uint8_t*>(q_.data());
      qgemm::CopyFlip(q, static_cast<int64_t>(q_.size()), 0x80, q);
    }
    const uint8_t* a = direct_ ? reinterpret_cast<const uint8_t*>(q_.data()) : a_.data();
    // Each row task gathers its own rows; when blocks of units are split too (few rows), the
    // rows are gathered once before.
    if (plan.block_tasks > 1 && !direct_) Gather(0, rows);
    ctx.threads().ParallelTasks(plan.tasks(), [&](int64_t t) {
      int64_t r0, r1;
      int j0, j1;
      plan.Range(t, rows, p.blocks(), &r0, &r1, &j0, &j1);
      if (r0 == r1 || j0 == j1) return;
      if (plan.block_tasks == 1 && !direct_) Gather(r0, r1);
      for (int64_t r = r0; r < r1;) {  // by batch: each has its own scale and zero point
        const int bi = static_cast<int>(r / pixels);
        const int64_t end = std::min(r1, (bi + 1) * pixels);
        const OutputStage os{batch_scales_.data() + bi * padded, bias_.data(), batch_zp_[bi], lo_, hi_};
        DotVnniFloat(p, a + r * p.kp, p.kp, static_cast<int>(end - r), j0, j1, os, out + r * out_c_, out_c_);
        r = end;
      }
    });
    return Status::Ok();
  }

  std::string FastVariant() const override { return "conv2d/hybrid/avx512vnni"; }

 private:
  struct Geometry {
    int batch, h, w, c, kh, kw, sh, sw, dh, dw, oh, ow, pad_top, pad_left;
  };

  int64_t Rows() const { return int64_t{g_.batch} * g_.oh * g_.ow; }

  // im2col of output pixels [r0, r1) from the flipped image (q + 128, flipped in place before):
  // each tap's C bytes copied as they are; taps in the padding get the batch's zero point,
  // flipped likewise. (Flipping here byte by byte ran at ~1 byte per cycle: the byte stores may
  // alias everything, so the loop was neither vectorized nor kept its bounds in registers; 78%
  // of a 3x3 16 -> 16 layer on 32x32, ResNet-8 dynamic-range.)
  void Gather(int64_t r0, int64_t r1) {
    const Geometry& g = g_;
    const int kp = packed_->kp;
    const int64_t pixels = int64_t{g.oh} * g.ow;
    const size_t c = static_cast<size_t>(g.c), row_bytes = c * static_cast<size_t>(g.kw);
    int bi = static_cast<int>(r0 / pixels);
    int oy = static_cast<int>(r0 % pixels / g.ow), ox = static_cast<int>(r0 % pixels % g.ow);
    for (int64_t r = r0; r < r1; ++r) {
      const uint8_t pad = static_cast<uint8_t>(static_cast<int8_t>(batch_zp_[bi])) ^ 0x80;
      const uint8_t* image = reinterpret_cast<const uint8_t*>(q_.data()) + static_cast<int64_t>(bi) * g.h * g.w * g.c;
      uint8_t* dst = a_.data() + r * kp;
      const int ix0 = ox * g.sw - g.pad_left;
      // The filter row's taps are one run of kw * C input bytes (dilation 1, inside the row).
      const bool whole_rows = g.dw == 1 && ix0 >= 0 && ix0 + g.kw <= g.w;
      for (int ky = 0; ky < g.kh; ++ky) {
        const int iy = oy * g.sh - g.pad_top + ky * g.dh;
        if (iy < 0 || iy >= g.h) {
          std::memset(dst, pad, row_bytes);
          dst += row_bytes;
          continue;
        }
        const uint8_t* line = image + static_cast<int64_t>(iy) * g.w * g.c;
        if (whole_rows) {
          CopyBytes(dst, line + static_cast<int64_t>(ix0) * g.c, row_bytes);
          dst += row_bytes;
          continue;
        }
        for (int kx = 0; kx < g.kw; ++kx, dst += c) {
          const int ix = ix0 + kx * g.dw;
          if (ix < 0 || ix >= g.w) std::memset(dst, pad, c);
          else CopyBytes(dst, line + static_cast<int64_t>(ix) * g.c, c);
        }
      }
      if (++ox == g.ow) {
        ox = 0;
        if (++oy == g.oh) {
          oy = 0;
          ++bi;
        }
      }
    }
  }

  // n bytes in fixed-size pieces (moves the compiler inlines, not a library call per tap).
  static void CopyBytes(uint8_t* dst, const uint8_t* src, size_t n) {
    for (; n >= 32; n -= 32, dst += 32, src += 32) std::memcpy(dst, src, 32);
    if (n >= 16) {
      std::memcpy(dst, src, 16);
      n -= 16, dst += 16, src += 16;
    }
    if (n >= 8) {
      std::memcpy(dst, src, 8);
      n -= 8, dst += 8, src += 8;
    }
    for (; n > 0; --n) *dst++ = *src++;
  }

  Geometry g_{};
  int out_c_ = 0;
  bool per_channel_ = false, direct_ = false;
  float lo_ = 0, hi_ = 0;
  std::vector<float> scales_;
  std::shared_ptr<const PackedWeights> packed_;
  std::vector<int8_t> q_;
  std::vector<uint8_t> a_;
  std::vector<float> batch_scale_;
  std::vector<int32_t> batch_zp_;
  std::vector<float> batch_scales_, bias_;  // per batch x unit / per unit, padded to whole blocks
};

// Hybrid: float input and output, int8 weights (a float or absent bias), AVX-512 VNNI present.
bool IsHybrid(const rt::KernelCreateContext& cc) {
  if (cc.reference_only || !cc.cpu.has_avx512_vnni() || cc.num_inputs() < 2 || cc.num_outputs() != 1) return false;
  const Tensor* in = cc.input(0);
  const Tensor* w = cc.input(1);
  const Tensor* bias = cc.input(2);
  return in && w && in->type == DType::kFloat32 && w->type == DType::kInt8 && cc.output(0)->type == DType::kFloat32 &&
         (!bias || bias->type == DType::kFloat32);
}

std::unique_ptr<rt::OpKernel> MakeHybridFc(const rt::KernelCreateContext& cc, RefFactory reference) {
  if (!IsHybrid(cc)) return nullptr;
  const auto& o = GetOptions<tflite::FullyConnectedOptionsT>(cc.op);
  if (o.weights_format != tflite::FullyConnectedOptionsWeightsFormat_DEFAULT) return nullptr;
  auto ref = MakeReferenceKernel(cc, reference);
  return ref ? std::make_unique<HybridFullyConnected>(std::move(ref)) : nullptr;
}

std::unique_ptr<rt::OpKernel> MakeHybridConv(const rt::KernelCreateContext& cc, RefFactory reference) {
  if (!IsHybrid(cc)) return nullptr;
  auto ref = MakeReferenceKernel(cc, reference);
  return ref ? std::make_unique<HybridConv2D>(std::move(ref)) : nullptr;
}

}  // namespace
}  // namespace edgeopt::kernels::hybrid

namespace edgeopt::kernels {

void RegisterHybridKernels(rt::OpRegistry& r) {
  AddFastWithFallback(r, tflite::BuiltinOperator_FULLY_CONNECTED, hybrid::MakeHybridFc);
  AddFastWithFallback(r, tflite::BuiltinOperator_CONV_2D, hybrid::MakeHybridConv);
  AddFastWithFallback(r, tflite::BuiltinOperator_DEPTHWISE_CONV_2D, hybrid::MakeHybridDepthwise);
}

}  // namespace edgeopt::kernels
