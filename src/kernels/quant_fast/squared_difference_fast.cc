// Fast int8 SQUARED_DIFFERENCE (AVX-512), bit-exact with elementwise/ref_binary.cc: the reference
// Prepare validates the op, the multipliers come from the same ComputeSquaredDifferenceMultipliers,
// and the broadcast is reduced to its fewest dimensions (CollapseBroadcast), whose innermost rows
// run 16 lanes at a time in pieces over the threads. LayerNorm written out in int8 (MEAN,
// SQUARED_DIFFERENCE against the mean, MEAN, RSQRT) reads [.., C] against [.., 1]: rows of C
// values against one. Other CPUs, and parameters outside the lanes' int32 bounds, keep the
// reference kernel.
#include <memory>
#include <vector>

#include "kernels/common/broadcast_parallel.h"
#include "kernels/quant_fast/quant_binary.h"
#include "kernels/quant_fast/quant_fast.h"

namespace edgeopt::kernels {
namespace {

class SquaredDifferenceQuantKernel final : public FastKernel {
 public:
  explicit SquaredDifferenceQuantKernel(std::unique_ptr<rt::OpKernel> ref) : FastKernel(std::move(ref)) {}

 protected:
  std::string FastVariant() const override { return "squared_difference/int8/avx512"; }

  Expected<bool> PrepareFast(rt::KernelContext& ctx) override {
    const rt::RtTensor& a = *ctx.input(0);
    const rt::RtTensor& b = *ctx.input(1);
    const rt::RtTensor& out = *ctx.output(0);
    p_ = QuantBinaryParams();
    p_.in1_offset = -a.zero_point();
    p_.in2_offset = -b.zero_point();
    p_.out_offset = out.zero_point();
    ComputeSquaredDifferenceMultipliers(a.scale(), b.scale(), out.scale(), &p_);
    if (!qbin::SquaredDifferenceAvx512Applies(p_)) return false;
    dims_ = CollapseBroadcast(a.shape, b.shape, out.shape);
    return true;
  }

  Status InvokeFast(rt::KernelContext& ctx) override {
    const int8_t* a = ctx.input(0)->data_as<int8_t>();
    const int8_t* b = ctx.input(1)->data_as<int8_t>();
    int8_t* o = ctx.output(0)->data_as<int8_t>();
    const int a_step = dims_.back().a_stride != 0, b_step = dims_.back().b_stride != 0;
    ForEachBroadcastPiece(ctx.threads(), dims_, [&](int64_t oa, int64_t ob, int64_t off, int64_t n) {
      qbin::SquaredDifferenceRun512(a + oa, a_step, b + ob, b_step, o + off, n, p_);
    });
    return Status::Ok();
  }

 private:
  QuantBinaryParams p_;
  std::vector<BroadcastDim> dims_;
};

}  // namespace

std::unique_ptr<rt::OpKernel> MakeSquaredDifferenceQuantFast(const rt::KernelCreateContext& cc, RefFactory reference) {
  if (cc.reference_only || !cc.cpu.has_avx512() || cc.num_inputs() != 2 || cc.num_outputs() != 1) return nullptr;
  for (const Tensor* t : {cc.input(0), cc.input(1), cc.output(0)})
    if (!t || t->type != DType::kInt8) return nullptr;
  auto ref = MakeReferenceKernel(cc, reference);
  if (!ref) return nullptr;
  return std::make_unique<SquaredDifferenceQuantKernel>(std::move(ref));
}

}  // namespace edgeopt::kernels
