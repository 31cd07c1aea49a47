// Fast quantized PRELU (int8 / uint8), bit-exact with the reference (activations/ref_relu.cc):
//   v = x - in_zp;  y = clamp(MBQM(v, m1, s1) + out_zp)                 for v >= 0,
//                   y = clamp(MBQM(v * (a - alpha_zp), m2, s2) + out_zp)  for v < 0,
// MBQM = MultiplyByQuantizedMultiplier, clamped to the type. Both branches are MUL's arithmetic
// ((x1 + offset1) * (x2 + offset2) through the same output step, quant_binary.h). The positive
// one depends on x alone: a 256-entry byte table built at Prepare with the reference's formula
// (common/byte_table.h: vpermi2b with AVX-512 VBMI). The negative one is a MUL by the per-channel
// vector a - alpha_zp with the second multiplier (the 16-lane MUL rows). Each thread computes both
// for a chunk of rows into two small buffers (in L1) and keeps, value by value, the one the sign
// of v picks.
// Alpha must broadcast over leading dimensions only (per channel, per position, one value, the
// same shape), as for the float32 path; its values are read at every invoke (it may be a
// runtime tensor). Other broadcasts, and multipliers outside MUL's vector forms, stay on the
// reference kernel. Before it, a MediaPipe face mesh (face_landmark) quantized to int8 by
// `edgeopt quantize` ran 5.4x slower than its float32 original, 86% of it in 23 PRELU ops.
#include <algorithm>
#include <numeric>
#include <vector>

#include "kernels/common/broadcast.h"
#include "kernels/common/byte_table.h"
#include "kernels/common/kernel_util.h"
#include "kernels/common/quant_utils.h"
#include "kernels/gemm/parallel.h"
#include "kernels/quant_fast/quant_binary.h"
#include "kernels/quant_fast/prelu_fast.h"
#include "kernels/quant_fast/quant_fast.h"

namespace edgeopt::kernels {
namespace {

class PreluQuantKernel final : public FastKernel {
 public:
  PreluQuantKernel(std::unique_ptr<rt::OpKernel> ref, DType type, bool avx512, ApplyByteTableFn table_fn)
      : FastKernel(std::move(ref)), type_(type), avx512_(avx512), table_fn_(table_fn) {}

 protected:
  std::string FastVariant() const override {
    return "prelu/" + TypeName(type_) + (use512_ ? "/avx512" : "/avx2") + (table_fn_ == ApplyByteTableVbmi ? "/vbmi" : "");
  }

  Expected<bool> PrepareFast(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    const rt::RtTensor& alpha = *ctx.input(1);
    const rt::RtTensor& out = *ctx.output(0);
    if (!in.quant || !alpha.quant || !out.quant) return false;
    // Alpha over trailing dimensions only: it repeats every `channels_` values of the input.
    if (alpha.num_elements() == 0 || alpha.num_elements() > (int64_t{1} << 30) ||
        !BroadcastsOverLeadingDims(in.shape, alpha.shape))
      return false;
    channels_ = static_cast<int>(alpha.num_elements());
    n_ = in.num_elements();
    if (n_ % channels_ != 0) return false;
    // The reference's multipliers, from the same float expressions.
    int32_t mult1 = 0, mult2 = 0;
    int shift1 = 0, shift2 = 0;
    QuantizeMultiplier(static_cast<double>(in.scale() / out.scale()), &mult1, &shift1);
    QuantizeMultiplier(static_cast<double>(in.scale() * alpha.scale() / out.scale()), &mult2, &shift2);
    const int32_t lo = type_ == DType::kInt8 ? -128 : 0, hi = type_ == DType::kInt8 ? 127 : 255;
    neg_ = QuantBinaryParams();
    neg_.in1_offset = -in.zero_point();
    neg_.out_offset = out.zero_point();
    neg_.act_min = lo;
    neg_.act_max = hi;
    neg_.out_mult = mult2;
    neg_.out_shift = shift2;
    use512_ = avx512_ && qbin::MulAvx512Applies(neg_);
    in_zp_ = in.zero_point();
    alpha_zp_ = alpha.zero_point();
    // Whole vectors per row: the per-channel vectors repeated over lcm(channels, 16) values
    // when that is short (as quant_binary_fast.cc does), each padded to a multiple of 16.
    period_ = channels_;
    if (channels_ % 16 != 0 && std::lcm(channels_, 16) <= 1024 && n_ % std::lcm(channels_, 16) == 0)
      period_ = std::lcm(channels_, 16);
    const size_t padded = static_cast<size_t>((period_ + 15) / 16 * 16);
    slopes_.assign(padded, 0);
    for (int b = 0; b < 256; ++b) {
      const int32_t v = (type_ == DType::kInt8 ? static_cast<int32_t>(static_cast<int8_t>(b)) : b) - in_zp_;
      const int32_t o = v >= 0 ? MultiplyByQuantizedMultiplier(v, mult1, shift1) + out.zero_point() : 0;
      positive_[static_cast<size_t>(b)] = static_cast<uint8_t>(std::clamp(o, lo, hi));
    }
    // Row chunks of about kChunk values per task, two buffers each.
    chunk_rows_ = std::max<int64_t>(1, kChunk / period_);
    tasks_max_ = static_cast<int>(std::max(1, ctx.threads().pool_threads()) * 4);
    buffers_.assign(static_cast<size_t>(tasks_max_) * 2 * static_cast<size_t>(chunk_rows_ * period_), 0);
    return true;
  }

  Status InvokeFast(rt::KernelContext& ctx) override {
    if (type_ == DType::kInt8) Run<int8_t>(ctx);
    else Run<uint8_t>(ctx);
    return Status::Ok();
  }

 private:
  static constexpr int64_t kChunk = 4096;

  template <typename T>
  void Run(rt::KernelContext& ctx) {
    const T* x = ctx.input(0)->data_as<T>();
    const T* a = ctx.input(1)->data_as<T>();
    T* y = ctx.output(0)->data_as<T>();
    for (int c = 0; c < period_; ++c) slopes_[c] = static_cast<int32_t>(a[c % channels_]) - alpha_zp_;
    const int period = period_;
    const int64_t rows = n_ / period, chunk_rows = chunk_rows_;
    const int64_t chunks = (rows + chunk_rows - 1) / chunk_rows;
    const int64_t tasks = std::min<int64_t>(tasks_max_, TaskCount(ctx.threads().num_threads(), chunks, 4, 2));
    const size_t per_task = 2 * static_cast<size_t>(chunk_rows * period);
    const int32_t zp = in_zp_;
    const bool use512 = use512_;
    RunTasks(&ctx.threads(), tasks, [&](int64_t t) {
      T* pos = reinterpret_cast<T*>(buffers_.data() + per_task * static_cast<size_t>(t));
      T* neg = pos + chunk_rows * period;
      for (int64_t ch = chunks * t / tasks; ch < chunks * (t + 1) / tasks; ++ch) {
        const int64_t r0 = ch * chunk_rows, r = std::min(chunk_rows, rows - r0);
        const T* xs = x + r0 * period;
        T* ys = y + r0 * period;
        table_fn_(positive_, reinterpret_cast<const uint8_t*>(xs), reinterpret_cast<uint8_t*>(pos), r * period);
        if (use512) {
          qbin::MulChannelRows512<T>(xs, true, slopes_.data(), neg, r, period, neg_);
          PreluMergeAvx512<T>(xs, pos, neg, ys, r * period, zp);
        } else {
          qbin::MulChannelRows<T>(xs, true, slopes_.data(), neg, r, period, neg_);
          PreluMerge<T>(xs, pos, neg, ys, r * period, zp);
        }
      }
    });
  }

  DType type_;
  bool avx512_;
  ApplyByteTableFn table_fn_;
  bool use512_ = false;  // the AVX-512 MUL rows for the negative branch (qbin::MulAvx512Applies)
  QuantBinaryParams neg_;
  ByteTable positive_{};  // the positive branch by input byte
  int32_t in_zp_ = 0, alpha_zp_ = 0;
  int channels_ = 1, period_ = 1;
  int64_t n_ = 0, chunk_rows_ = 1;
  int tasks_max_ = 1;
  std::vector<int32_t> slopes_;
  std::vector<uint8_t> buffers_;
};

}  // namespace

std::unique_ptr<rt::OpKernel> MakePreluQuantFast(const rt::KernelCreateContext& cc, RefFactory reference) {
  if (cc.reference_only || !cc.cpu.has_avx2_fma() || cc.num_inputs() != 2 || cc.num_outputs() != 1) return nullptr;
  const Tensor* in = cc.input(0);
  const Tensor* alpha = cc.input(1);
  const Tensor* out = cc.output(0);
  if (!in || !alpha || !out || !(in->type == DType::kInt8 || in->type == DType::kUInt8) || alpha->type != in->type ||
      out->type != in->type)
    return nullptr;
  auto ref = MakeReferenceKernel(cc, reference);
  if (!ref) return nullptr;
  return std::make_unique<PreluQuantKernel>(std::move(ref), in->type, cc.cpu.has_avx512(), ByteTableFn(cc.cpu, false));
}

}  // namespace edgeopt::kernels
