// Fast quantized ADD / SUB / MUL (int8, uint8, int16), AVX2 runs from quant_binary_avx2.cc (ADD/SUB
// but int16 pot_scale_int16: 16-lane AVX-512 runs from quant_binary_avx512.cc where the CPU has them),
// bit-exact with elementwise/ref_binary.cc. Same-shape inputs and a single-element input run
// as one stretch (split over threads); a per-channel vector over the last dimension is scaled
// once per invoke and added to every row (split over threads), repeated over lcm(channels, 16)
// values so that rows are whole vectors; an outer sum / product ([R, 1] against [C]) spreads
// its row values over a small buffer and runs the same way; any other broadcast runs
// innermost-dimension stretches. int16 ADD/SUB on
// power-of-two scales (pot_scale_int16) runs the reference's shift-and-saturate path. CPUs
// without AVX2 keep the reference kernel.
#include "kernels/quant_fast/quant_fast.h"

#include <numeric>
#include <type_traits>

#include "kernels/common/broadcast.h"
#include "kernels/common/kernel_util.h"
#include "kernels/common/lut.h"
#include "kernels/quant_fast/quant_binary.h"

namespace edgeopt::kernels {
namespace {

int FusedActivation(const Operator& op) {
  switch (op.code) {
    case tflite::BuiltinOperator_ADD: return GetOptions<tflite::AddOptionsT>(op).fused_activation_function;
    case tflite::BuiltinOperator_SUB: return GetOptions<tflite::SubOptionsT>(op).fused_activation_function;
    case tflite::BuiltinOperator_MUL: return GetOptions<tflite::MulOptionsT>(op).fused_activation_function;
    default: return tflite::ActivationFunctionType_NONE;
  }
}

bool PotScaleInt16(const Operator& op) {
  if (op.code == tflite::BuiltinOperator_ADD) return GetOptions<tflite::AddOptionsT>(op).pot_scale_int16;
  if (op.code == tflite::BuiltinOperator_SUB) return GetOptions<tflite::SubOptionsT>(op).pot_scale_int16;
  return false;
}

class QuantBinaryKernel final : public FastKernel {
 public:
  QuantBinaryKernel(std::unique_ptr<rt::OpKernel> ref, tflite::BuiltinOperator op, DType type, bool cpu_avx512,
                    bool cpu_vbmi)
      : FastKernel(std::move(ref)), op_(op), type_(type), cpu_avx512_(cpu_avx512), cpu_vbmi_(cpu_vbmi) {}

 protected:
  std::string FastVariant() const override {
    const char* name = op_ == tflite::BuiltinOperator_ADD ? "add" : op_ == tflite::BuiltinOperator_SUB ? "sub" : "mul";
    return std::string(name) + "/" + (p_.pot_int16 ? std::string("int16_pot") : TypeName(type_)) +
           (avx512_ ? "/avx512" : "/avx2") +
           (UsesFloat512() ? "/float" : UsesLinear512() ? (linear512_.lut ? "/lut" : "/lin") : "");
  }

  Expected<bool> PrepareFast(rt::KernelContext& ctx) override {
    const rt::RtTensor& a = *ctx.input(0);
    const rt::RtTensor& b = *ctx.input(1);
    const rt::RtTensor& out = *ctx.output(0);
    const bool add_sub = op_ != tflite::BuiltinOperator_MUL;
    p_ = QuantBinaryParams();
    if (add_sub && type_ == DType::kInt16 && PotScaleInt16(ctx.op())) {
      // The reference Prepare already checked the shifts (one input on the output scale, the
      // other on a smaller one).
      int la, lb, lo;
      if (CheckedLog2(a.scale(), &la) && CheckedLog2(b.scale(), &lb) && CheckedLog2(out.scale(), &lo)) {
        p_.pot_int16 = true;
        p_.in1_pot_shift = lo - la;
        p_.in2_pot_shift = lo - lb;
      }
    }
    p_.sub = op_ == tflite::BuiltinOperator_SUB;
    p_.in1_offset = -a.zero_point();
    p_.in2_offset = -b.zero_point();
    p_.out_offset = out.zero_point();
    if (!QuantizedActivationRange(FusedActivation(ctx.op()), out, &p_.act_min, &p_.act_max)) return false;
    if (add_sub) ComputeAddSubMultipliers(a.scale(), b.scale(), out.scale(), type_ == DType::kInt16 ? 15 : 20, &p_);
    else ComputeMulMultiplier(a.scale(), b.scale(), out.scale(), &p_);
    // An output multiplier of 2^32 or more (an output scale below 2^-32 of the inputs' product)
    // shifts left by 32 or more, which the reference does as x86 does (the count taken mod 32)
    // and the vector shifts do not: left to the reference kernel.
    if (p_.out_shift > 31) return false;
    // 16 lanes on AVX-512 CPUs (ADD/SUB int16: the general form, not pot_int16), within the
    // bounds their exactness needs.
    avx512_ = cpu_avx512_ && (add_sub ? qbin::AddSubAvx512Applies(p_) : qbin::MulAvx512Applies(p_));
    linear512_ = {};
    if (avx512_) {
      if (type_ == DType::kInt8) linear512_ = qbin::PlanAddSubLinear512<int8_t>(p_, cpu_vbmi_);
      if (type_ == DType::kUInt8) linear512_ = qbin::PlanAddSubLinear512<uint8_t>(p_, cpu_vbmi_);
    }
    out_shape_ = out.shape;
    n_ = out.num_elements();
    const int64_t na = a.num_elements(), nb = b.num_elements();
    a_step_ = na == n_ ? 1 : 0;
    b_step_ = nb == n_ ? 1 : 0;
    flat_ = (na == n_ || na == 1) && (nb == n_ || nb == 1);
    // Same-shape 8-bit ADD / SUB: the fp32 form where its constants pass the check of every pair.
    float512_ = {};
    if (avx512_ && add_sub && flat_ && a_step_ && b_step_ && n_ >= kFloatMinElements) {
      if (type_ == DType::kInt8) float512_ = qbin::PlanAddSubFloat512<int8_t>(p_, linear512_);
      if (type_ == DType::kUInt8) float512_ = qbin::PlanAddSubFloat512<uint8_t>(p_, linear512_);
    }
    channel_vector_ = outer_ = false;
    if (!flat_) {
      sa_ = BroadcastStrides(a.shape, out.shape);
      sb_ = BroadcastStrides(b.shape, out.shape);
      // One input full, the other one value per channel of the last dimension.
      const int channels = out.shape.empty() ? 1 : out.shape.back();
      const rt::RtTensor& small = na == n_ ? b : a;
      if ((na == n_ || nb == n_) && small.num_elements() == channels && channels > 1 &&
          (small.shape.empty() ? false : small.shape.back() == channels) && !p_.pot_int16) {
        channel_vector_ = true;
        vec_is_b_ = na == n_;
        channels_ = channels;
        SetPeriod();
      }
      // An outer sum / product: one input one value per row ([R, 1]), the other one value per
      // channel ([C]). Runs of C values each paid a call; instead the row values are spread
      // over their rows in a small buffer per group of periods, which then runs as the full
      // input of the per-channel form.
      const std::vector<BroadcastDim> dims = CollapseBroadcast(a.shape, b.shape, out.shape);
      if (!channel_vector_ && !p_.pot_int16 && dims.size() == 2 && dims[0].size > 1 && dims[1].size > 1 &&
          dims[1].size <= kOuterMaxChannels) {
        const bool a_rows = dims[0].a_stride == 1 && dims[1].a_stride == 0 && dims[0].b_stride == 0 && dims[1].b_stride == 1;
        const bool b_rows = dims[0].b_stride == 1 && dims[1].b_stride == 0 && dims[0].a_stride == 0 && dims[1].a_stride == 1;
        if (a_rows || b_rows) {
          channel_vector_ = outer_ = true;
          vec_is_b_ = a_rows;  // the vector is the input that is not per row
          channels_ = static_cast<int>(dims[1].size);
          SetPeriod();
        }
      }
    }
    return true;
  }

  Status InvokeFast(rt::KernelContext& ctx) override {
    switch (type_) {
      case DType::kInt8: Run<int8_t>(ctx); break;
      case DType::kUInt8: Run<uint8_t>(ctx); break;
      case DType::kInt16: Run<int16_t>(ctx); break;
      default: return ctx.UnsupportedError(TypeName(type_) + " is not supported");
    }
    return Status::Ok();
  }

 private:
  template <typename T>
  void RunSpan(const T* a, int a_step, const T* b, int b_step, T* o, int64_t n) const {
    if (op_ == tflite::BuiltinOperator_MUL) {
      if (avx512_) qbin::MulRun512<T>(a, a_step, b, b_step, o, n, p_);
      else qbin::MulRun<T>(a, a_step, b, b_step, o, n, p_);
    } else if constexpr (std::is_same_v<T, int16_t>) {
      if (p_.pot_int16) qbin::AddSubPotInt16Run(a, a_step, b, b_step, o, n, p_);
      else if (avx512_) qbin::AddSubRun512<T>(a, a_step, b, b_step, o, n, p_);
      else qbin::AddSubRun<T>(a, a_step, b, b_step, o, n, p_);
    } else {
      if (float512_.ok && a_step && b_step) qbin::AddSubFloatRun512<T>(a, b, o, n, float512_);
      else if (linear512_.ok && a_step && b_step) qbin::AddSubLinearRun512<T>(a, b, o, n, linear512_);
      else if (avx512_) qbin::AddSubRun512<T>(a, a_step, b, b_step, o, n, p_);
      else qbin::AddSubRun<T>(a, a_step, b, b_step, o, n, p_);
    }
  }

  // The fp32 form's check runs 65536 pairs through both forms (~40 us): for ADDs of fewer values
  // than that the integer forms stay.
  static constexpr int64_t kFloatMinElements = 4096;
  bool UsesFloat512() const { return float512_.ok && flat_ && a_step_ && b_step_; }

  // Same-shape inputs on the 16-lane linear form (AddSubLinear512).
  bool UsesLinear512() const { return linear512_.ok && flat_ && a_step_ && b_step_; }

  template <typename T>
  void Run(rt::KernelContext& ctx) {
    const T* a = ctx.input(0)->data_as<T>();
    const T* b = ctx.input(1)->data_as<T>();
    T* o = ctx.output(0)->data_as<T>();
    if (n_ == 0) return;
    if (flat_) {
      // Chunks of whole 8-element blocks so only the last one has a tail.
      constexpr int64_t kBlock = 8;
      const int64_t blocks = (n_ + kBlock - 1) / kBlock;
      ctx.threads().ParallelFor(blocks, 512, [&](int64_t begin, int64_t end) {
        const int64_t i = begin * kBlock, e = std::min(n_, end * kBlock);
        RunSpan<T>(a + i * a_step_, a_step_, b + i * b_step_, b_step_, o + i, e - i);
      });
      return;
    }
    if (channel_vector_) {
      const T* full = vec_is_b_ ? a : b;
      const T* small = vec_is_b_ ? b : a;
      const bool mul = op_ == tflite::BuiltinOperator_MUL;
      for (int c = 0; c < channels_; ++c) {
        const int32_t offset = vec_is_b_ ? p_.in2_offset : p_.in1_offset;
        vec_[c] = mul ? offset + small[c]
                      : vec_is_b_ ? AddSubScaledInput(small[c], offset, p_.left_shift, p_.in2_mult, p_.in2_shift)
                                  : AddSubScaledInput(small[c], offset, p_.left_shift, p_.in1_mult, p_.in1_shift);
      }
      for (int c = channels_; c < period_; ++c) vec_[c] = vec_[c - channels_];
      const bool full_is_first = vec_is_b_;  // the vector is input 1, so the full tensor is input 0
      // `rows` rows of `channels` values of `f` (the full input from element `off` on, or a
      // buffer of spread row values) into the output from element `off` on.
      auto rows_from = [&](int64_t off, int64_t rows, int channels, const T* f) {
        if (mul && avx512_) qbin::MulChannelRows512<T>(f, full_is_first, vec_.data(), o + off, rows, channels, p_);
        else if (mul) qbin::MulChannelRows<T>(f, full_is_first, vec_.data(), o + off, rows, channels, p_);
        else if (avx512_) qbin::AddSubChannelRows512<T>(f, full_is_first, vec_.data(), o + off, rows, channels, p_);
        else qbin::AddSubChannelRows<T>(f, full_is_first, vec_.data(), o + off, rows, channels, p_);
      };
      if (outer_) {
        RunOuter<T>(ctx, full, rows_from);
        return;
      }
      // Whole periods over the threads, then the rows left (fewer than one period).
      const int64_t periods = n_ / period_;
      ctx.threads().ParallelFor(periods, std::max<int64_t>(1, 16384 / period_), [&](int64_t begin, int64_t end) {
        rows_from(begin * period_, end - begin, period_, full + begin * period_);
      });
      if (const int64_t done = periods * period_; done < n_) rows_from(done, (n_ - done) / channels_, channels_, full + done);
      return;
    }
    ForEachBroadcastRun(out_shape_, sa_, sb_,
                        [&](int64_t o_off, int64_t a_off, int64_t b_off, int64_t count, int64_t as, int64_t bs) {
                          RunSpan<T>(a + a_off, static_cast<int>(as), b + b_off, static_cast<int>(bs), o + o_off, count);
                        });
  }

  // Rows of a channel count that is not a multiple of 16 end in a masked vector (3 of 16 lanes
  // busy for RGB): the vector repeated over lcm(channels, 16) values (up to 1024) makes each
  // "row" whole vectors (RGB: 16 pixels in 3 vectors). Sizes vec_ for it.
  void SetPeriod() {
    period_ = channels_;
    if (channels_ % 16 != 0 && std::lcm(channels_, 16) <= 1024) period_ = std::lcm(channels_, 16);
    vec_.assign(static_cast<size_t>((period_ + 15) / 16 * 16), 0);
  }

  // The outer form: groups of whole periods (about kOuterGroup values), each with its rows'
  // values spread over a buffer on the stack, run as the per-channel form; the rows after the
  // last whole period likewise.
  template <typename T, typename RowsFrom>
  void RunOuter(rt::KernelContext& ctx, const T* row_values, const RowsFrom& rows_from) const {
    const int64_t c = channels_, rows_per_period = period_ / c;
    const int64_t group_rows = std::max<int64_t>(1, kOuterGroup / period_) * rows_per_period;
    const int64_t rows = n_ / c, groups = (rows + group_rows - 1) / group_rows;
    ctx.threads().ParallelFor(groups, std::max<int64_t>(1, 16384 / (group_rows * c)), [&](int64_t g0, int64_t g1) {
      alignas(64) T spread[kOuterGroup + kOuterMaxChannels];
      for (int64_t g = g0; g < g1; ++g) {
        const int64_t r0 = g * group_rows, r1 = std::min(rows, r0 + group_rows);
        for (int64_t r = r0; r < r1; ++r) {  // 8 values at a time, past the row into the slack
          T* d = spread + (r - r0) * c;
          const T v = row_values[r];
          for (int64_t j = 0; j < c; j += 8)
            for (int k = 0; k < 8; ++k) d[j + k] = v;
        }
        const int64_t whole = (r1 - r0) / rows_per_period;
        if (whole) rows_from(r0 * c, whole, period_, spread);
        if (const int64_t left = r1 - r0 - whole * rows_per_period)
          rows_from((r0 + whole * rows_per_period) * c, left, channels_, spread + whole * period_);
      }
    });
  }

  // The outer form's limits: channels per row, and values per group (a multiple of period_).
  static constexpr int64_t kOuterMaxChannels = 1024;
  static constexpr int64_t kOuterGroup = 4096;

  tflite::BuiltinOperator op_;
  DType type_;
  bool cpu_avx512_;
  bool cpu_vbmi_;  // the table form (/lut) needs AVX-512 VBMI
  QuantBinaryParams p_;
  rt::Shape out_shape_;
  int64_t n_ = 0;
  int a_step_ = 1, b_step_ = 1;
  bool flat_ = true;
  bool avx512_ = false;
  qbin::AddSubLinear512 linear512_;
  qbin::AddSubFloat512 float512_;
  std::vector<int64_t> sa_, sb_;
  // Per-channel vector broadcast: the small input's scaled values, repeated over period_ and
  // padded to a multiple of 16.
  bool channel_vector_ = false, vec_is_b_ = true;
  bool outer_ = false;  // the full input is one value per row, spread by RunOuter
  int channels_ = 0;
  int period_ = 0;  // values per vector period: channels_, or lcm(channels_, 16)
  std::vector<int32_t> vec_;
};

}  // namespace

std::unique_ptr<rt::OpKernel> MakeQuantBinaryFast(const rt::KernelCreateContext& cc, RefFactory reference) {
  if (cc.reference_only || !cc.cpu.has_avx2_fma()) return nullptr;
  const Tensor* a = cc.input(0);
  if (!a || !(a->type == DType::kInt8 || a->type == DType::kUInt8 || a->type == DType::kInt16)) return nullptr;
  auto ref = MakeReferenceKernel(cc, reference);
  if (!ref) return nullptr;
  return std::make_unique<QuantBinaryKernel>(std::move(ref), cc.op.code, a->type, cc.cpu.has_avx512(),
                                             cc.cpu.avx512vbmi);
}

}  // namespace edgeopt::kernels
