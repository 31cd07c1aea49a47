// Fast quantized ADD / SUB / MUL (int8, uint8, int16), AVX2 runs from quant_binary_avx2.cc,
// bit-exact with elementwise/ref_binary.cc. Same-shape inputs and a single-element input run
// as one stretch (split over threads); any other broadcast runs innermost-dimension stretches
// (a per-channel vector over the last dimension is one stretch of C per pixel). int16 ADD/SUB on
// power-of-two scales (pot_scale_int16) runs the reference's shift-and-saturate path. CPUs
// without AVX2 keep the reference kernel.
#include "kernels/quant_fast/quant_fast.h"

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
  QuantBinaryKernel(std::unique_ptr<rt::OpKernel> ref, tflite::BuiltinOperator op, DType type)
      : FastKernel(std::move(ref)), op_(op), type_(type) {}

 protected:
  std::string FastVariant() const override {
    const char* name = op_ == tflite::BuiltinOperator_ADD ? "add" : op_ == tflite::BuiltinOperator_SUB ? "sub" : "mul";
    return std::string(name) + "/" + (p_.pot_int16 ? std::string("int16_pot") : TypeName(type_)) + "/avx2";
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
    out_shape_ = out.shape;
    n_ = out.num_elements();
    const int64_t na = a.num_elements(), nb = b.num_elements();
    a_step_ = na == n_ ? 1 : 0;
    b_step_ = nb == n_ ? 1 : 0;
    flat_ = (na == n_ || na == 1) && (nb == n_ || nb == 1);
    if (!flat_) {
      sa_ = BroadcastStrides(a.shape, out.shape);
      sb_ = BroadcastStrides(b.shape, out.shape);
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
      qbin::MulRun<T>(a, a_step, b, b_step, o, n, p_);
    } else if constexpr (std::is_same_v<T, int16_t>) {
      if (p_.pot_int16) qbin::AddSubPotInt16Run(a, a_step, b, b_step, o, n, p_);
      else qbin::AddSubRun<T>(a, a_step, b, b_step, o, n, p_);
    } else {
      qbin::AddSubRun<T>(a, a_step, b, b_step, o, n, p_);
    }
  }

  template <typename T>
  void Run(rt::KernelContext& ctx) const {
    const T* a = ctx.input(0)->data_as<T>();
    const T* b = ctx.input(1)->data_as<T>();
    T* o = ctx.output(0)->data_as<T>();
    if (n_ == 0) return;
    if (flat_) {
      // Chunks of whole 8-element blocks so only the last one has a tail.
      constexpr int64_t kBlock = 8;
      const int64_t blocks = (n_ + kBlock - 1) / kBlock;
      ctx.threads().ParallelFor(blocks, 2048, [&](int64_t begin, int64_t end) {
        const int64_t i = begin * kBlock, e = std::min(n_, end * kBlock);
        RunSpan<T>(a + i * a_step_, a_step_, b + i * b_step_, b_step_, o + i, e - i);
      });
      return;
    }
    ForEachBroadcastRun(out_shape_, sa_, sb_,
                        [&](int64_t o_off, int64_t a_off, int64_t b_off, int64_t count, int64_t as, int64_t bs) {
                          RunSpan<T>(a + a_off, static_cast<int>(as), b + b_off, static_cast<int>(bs), o + o_off, count);
                        });
  }

  tflite::BuiltinOperator op_;
  DType type_;
  QuantBinaryParams p_;
  rt::Shape out_shape_;
  int64_t n_ = 0;
  int a_step_ = 1, b_step_ = 1;
  bool flat_ = true;
  std::vector<int64_t> sa_, sb_;
};

}  // namespace

std::unique_ptr<rt::OpKernel> MakeQuantBinaryFast(const rt::KernelCreateContext& cc, RefFactory reference) {
  if (cc.reference_only || !cc.cpu.has_avx2_fma()) return nullptr;
  const Tensor* a = cc.input(0);
  if (!a || !(a->type == DType::kInt8 || a->type == DType::kUInt8 || a->type == DType::kInt16)) return nullptr;
  auto ref = MakeReferenceKernel(cc, reference);
  if (!ref) return nullptr;
  return std::make_unique<QuantBinaryKernel>(std::move(ref), cc.op.code, a->type);
}

}  // namespace edgeopt::kernels
