// CONV_3D float32 on the packed GEMM (kernels/gemm), for constant (or folded) filter and bias.
//
// The filter [KD, KH, KW, Cin, Cout] is already B[K, N] with K = KD·KH·KW·Cin in (kd, kh, kw, ci)
// order, packed once (PackedB::FromKN, shared through the model's packed-weight cache).
//   gemm    1x1x1 filter, stride 1: the NDHWC input is A[N·D·H·W, Cin] as is.
//   igemm   anything else: an indirection buffer holds, per output pixel and filter tap, a
//           pointer to the input pixel's Cin channels or to a zero row (padding). Sized at
//           prepare, filled at the first invoke and again only if the input moves.
// Bias and the fused clamp are applied by the GEMM's micro-kernels. The same products as the
// reference loop summed in another order (and with FMA where the CPU has it).
#include <algorithm>
#include <vector>

#include "kernels/common/kernel_util.h"
#include "kernels/common/quant_utils.h"
#include "kernels/conv3d/conv3d.h"
#include "kernels/gemm/aligned.h"
#include "kernels/gemm/f32_op_util.h"
#include "kernels/gemm/gemm.h"

namespace edgeopt::kernels::conv3d {
namespace {

using gemm::MinMax;
using gemm::PackedB;

class Conv3DF32 : public rt::OpKernel {
 public:
  explicit Conv3DF32(const rt::CpuFeatures& cpu) : cpu_(cpu) {}

  Status Prepare(rt::KernelContext& ctx) override {
    float lo = 0, hi = 0;
    RETURN_IF_ERROR(PrepareConv3D(ctx, &d_, &lo, &hi));
    mm_ = {lo, hi};
    const int64_t k = d_.taps() * d_.in_c;
    uk_ = &gemm::SelectUkernels(cpu_, k, d_.out_c);
    if (!packed_) packed_ = Pack(ctx);
    direct_ = d_.taps() == 1 && d_.stride_d == 1 && d_.stride_h == 1 && d_.stride_w == 1;
    indirection_base_ = nullptr;
    if (direct_) {
      indirection_.clear();
    } else {
      if (!uk_->igemm) return ctx.Error(std::string("internal: the ") + uk_->isa + " kernels have no indirect GEMM");
      indirection_.assign(gemm::IndirectionSize(static_cast<size_t>(d_.out_pixels()), d_.taps(), uk_->mr), nullptr);
      if (zero_.size() < static_cast<size_t>(d_.in_c)) zero_.Reset(d_.in_c);
    }
    return Status::Ok();
  }

  Status Invoke(rt::KernelContext& ctx) override {
    if (!packed_ && !(packed_ = Pack(ctx))) return ctx.Error("filter has no data");
    const float* in = ctx.input(0)->data_as<float>();
    float* out = ctx.output(0)->data_as<float>();
    const size_t m = static_cast<size_t>(d_.out_pixels());
    if (m == 0 || d_.out_c == 0) return Status::Ok();
    if (d_.in_c == 0) {  // empty sums: bias, clamped
      const float* b = packed_->bias();
      for (size_t p = 0; p < m; ++p)
        for (int c = 0; c < d_.out_c; ++c) out[p * d_.out_c + c] = ApplyFloatActivation(b[c], mm_.min, mm_.max);
      return Status::Ok();
    }
    if (direct_) {
      gemm::Gemm(*uk_, &ctx.threads(), m, in, d_.in_c, *packed_, out, d_.out_c, mm_);
      return Status::Ok();
    }
    if (in != indirection_base_) BuildIndirection(in);
    gemm::IGemm(*uk_, &ctx.threads(), m, static_cast<size_t>(d_.taps()), indirection_.data(), *packed_, out,
                d_.out_c, mm_);
    return Status::Ok();
  }

  std::string variant() const override {
    return std::string("conv3d/f32/") + (direct_ ? "gemm_" : "igemm_") + (uk_ ? uk_->isa : "?");
  }
  bool ReadsInputAtInvoke(int input) const override { return input == 0 || !packed_; }
  int64_t Macs(const rt::KernelContext&) const override { return d_.out_pixels() * d_.taps() * d_.in_c * d_.out_c; }
  size_t PackedBytes() const override {
    return (packed_ ? packed_->bytes() : 0) + indirection_.size() * sizeof(void*) + zero_.bytes();
  }

 private:
  // Packs filter and bias once their data exists (Prepare for constants, first Invoke for
  // folded ones).
  std::shared_ptr<const PackedB> Pack(rt::KernelContext& ctx) {
    const rt::RtTensor* w = ctx.input(1);
    const rt::RtTensor* bias = ctx.input(2);
    if (!w->data || (bias && !bias->data)) return nullptr;
    const int n = d_.out_c, k = static_cast<int>(d_.taps() * d_.in_c);
    return GetOrPack<PackedB>(ctx, "f32conv3d-kn", [&] {
      return PackedB::FromKN(w->data_as<float>(), bias ? bias->data_as<float>() : nullptr, n, k);
    });
  }

  void BuildIndirection(const float* in) {
    const Dims& d = d_;
    const int mr = uk_->mr;
    const size_t m = static_cast<size_t>(d.out_pixels());
    const size_t taps = static_cast<size_t>(d.taps());
    for (size_t tile = 0; tile * mr < m; ++tile)
      for (int r = 0; r < mr; ++r) {
        const size_t p = std::min(m - 1, tile * mr + r);  // tail rows repeat the last pixel
        const int ow = static_cast<int>(p % d.out_w);
        const int oh = static_cast<int>(p / d.out_w % d.out_h);
        const int od = static_cast<int>(p / (static_cast<size_t>(d.out_w) * d.out_h) % d.out_d);
        const int n = static_cast<int>(p / (static_cast<size_t>(d.out_w) * d.out_h * d.out_d));
        size_t t = 0;
        for (int kd = 0; kd < d.k_d; ++kd) {
          const int id = od * d.stride_d - d.pad_d + kd * d.dil_d;
          for (int kh = 0; kh < d.k_h; ++kh) {
            const int ih = oh * d.stride_h - d.pad_h + kh * d.dil_h;
            for (int kw = 0; kw < d.k_w; ++kw, ++t) {
              const int iw = ow * d.stride_w - d.pad_w + kw * d.dil_w;
              const float* ptr = zero_.data();
              if (id >= 0 && id < d.in_d && ih >= 0 && ih < d.in_h && iw >= 0 && iw < d.in_w)
                ptr = in + (((static_cast<size_t>(n) * d.in_d + id) * d.in_h + ih) * d.in_w + iw) * d.in_c;
              indirection_[(tile * taps + t) * mr + r] = ptr;
            }
          }
        }
      }
    indirection_base_ = in;
  }

  const rt::CpuFeatures cpu_;  // a copy: the interpreter's may not outlive the kernel
  const gemm::Ukernels* uk_ = nullptr;
  MinMax mm_{0, 0};
  Dims d_;
  bool direct_ = false;
  std::shared_ptr<const PackedB> packed_;
  std::vector<const float*> indirection_;
  const float* indirection_base_ = nullptr;
  AlignedFloats zero_;
};

}  // namespace

std::unique_ptr<rt::OpKernel> MakeConv3DF32(const rt::KernelCreateContext& cc) {
  // Filter [KD, KH, KW, Cin, Cout]: the bias has Cout elements.
  if (cc.num_inputs() > 3 || !FloatWeightsAndBias(cc, 5, 4)) return nullptr;
  const auto& o = GetOptions<tflite::Conv3DOptionsT>(cc.op);
  float lo = 0, hi = 0;
  if (!FloatActivationRange(o.fused_activation_function, &lo, &hi)) return nullptr;  // the reference reports it
  return std::make_unique<Conv3DF32>(cc.cpu);
}

}  // namespace edgeopt::kernels::conv3d
