// FULLY_CONNECTED int8 / uint8 / hybrid / 16x8 as an int16 GEMM (qgemm.h): M = batch rows,
// N = units, K = depth. Bit-exact with kernels/fully_connected/ref.cc.
#include <algorithm>

#include "kernels/common/hybrid_quant.h"
#include "kernels/common/kernel_util.h"
#include "kernels/common/nn_util.h"
#include "kernels/common/quant_utils.h"
#include "kernels/gemm_int8/ops_int8.h"
#include "kernels/gemm_int8/qgemm.h"
#include "kernels/gemm_int8/qgemm_ops_util.h"
#include "kernels/gemm_int8/qgemm_vnni.h"

namespace edgeopt::kernels {
namespace {

// Batch rows are contiguous input rows of `depth` values.
template <typename T>
class RowPacker final : public qgemm::APacker {
 public:
  RowPacker(const T* in, int64_t rows, int depth, int32_t zero_point, const int32_t* row_zero_points)
      : in_(in), in_end_(in + rows * depth), depth_(depth), zp_(zero_point), row_zp_(row_zero_points) {}
  void Pack(int64_t row0, int rows, int16_t* dst, int64_t lda) const override {
    for (int i = 0; i < rows; ++i) {
      const int64_t m = row0 + i;
      int16_t* row = dst + i * lda;
      qgemm::WidenSub(in_ + m * depth_, in_end_, depth_, row_zp_ ? row_zp_[m] : zp_, row);
      if (depth_ < lda) row[depth_] = 0;
    }
  }

 private:
  const T* in_;
  const T* in_end_;
  int depth_;
  int32_t zp_;
  const int32_t* row_zp_;
};

class FcQuantKernel final : public FastKernel {
 public:
  FcQuantKernel(std::unique_ptr<rt::OpKernel> ref, QuantKind kind, bool vnni)
      : FastKernel(std::move(ref)), kind_(kind), vnni_(vnni) {}
  size_t PackedBytes() const override { return packed8_ ? packed8_->bytes() : packed_ ? packed_->bytes() : 0; }

 protected:
  std::string FastVariant() const override {
    // The weights' form, then "/pairs" for the one-panel pair tiles (qgemm::PairTilesApply).
    const auto vnni = [&] {
      return std::string(qgemm::WeightFormSuffix(*packed8_)) +
             (qgemm::PairTilesApply(*packed8_, packed8_->packed_koff.data()) ? "/pairs" : "");
    };
    switch (kind_) {
      case QuantKind::kInt8:
        return use_vnni_ ? "fully_connected/int8/avx512vnni" + vnni() : "fully_connected/int8/avx2";
      case QuantKind::kUInt8:
        return use_vnni_ ? "fully_connected/uint8/avx512vnni" + vnni() : "fully_connected/uint8/avx2";
      case QuantKind::kHybrid: return "fully_connected/hybrid/avx2";
      case QuantKind::kInt16: return out_.use_i16v ? "fully_connected/int16x8/avx512vnni" : "fully_connected/int16x8/avx2";
    }
    return "fully_connected/avx2";
  }

  Expected<bool> PrepareFast(rt::KernelContext& ctx) override {
    const rt::RtTensor* input = ctx.input(0);
    const rt::RtTensor* weights = ctx.input(1);
    const rt::RtTensor* bias = ctx.input(2);
    if (!weights->data || (bias && !bias->data)) return false;
    const auto& o = GetOptions<tflite::FullyConnectedOptionsT>(ctx.op());
    units_ = weights->dim(0);
    depth_ = weights->dim(1);
    if (units_ <= 0 || depth_ <= 0) return false;
    batches_ = input->num_elements() / depth_;
    const bool per_channel = weights->per_channel();
    std::vector<int32_t> weight_zp = {0};
    if ((kind_ == QuantKind::kInt8 && !per_channel) || kind_ == QuantKind::kUInt8) weight_zp[0] = weights->zero_point();
    use_vnni_ = vnni_ && (kind_ == QuantKind::kInt8 || kind_ == QuantKind::kUInt8);
    if (use_vnni_) {
      packed8_ = GetPackedWeightsVnni(ctx, "fc", *weights, units_, depth_, weight_zp);
    } else {
      packed_ = GetPackedWeights(ctx, "fc", *weights, units_, depth_, weight_zp);
    }

    GemmOpSpec spec;
    spec.kind = kind_;
    spec.N = units_;
    spec.K = depth_;
    spec.abs_sum = use_vnni_ ? &packed8_->abs_sum : &packed_->abs_sum;
    spec.activation = o.fused_activation_function;
    spec.per_channel_multipliers = per_channel;
    spec.int16_int32_bias = spec.int16_no_bias = qgemm::Int16Rounding::kSingleRound;
    spec.int16_int64_bias = qgemm::Int16Rounding::kInt64Bias;
    spec.int16_vnni = vnni_;
    ASSIGN_OR_RETURN(const bool supported, PrepareGemmOutput(ctx, spec, &out_));
    if (!supported) return false;
    if (use_vnni_) {
      const int32_t z_u = input->zero_point() + (kind_ == QuantKind::kInt8 ? 128 : 0);
      qgemm::BuildVnniOutput(*packed8_, out_.q8, z_u, &vout_);
      RETURN_IF_ERROR(ctx.ReserveSlotScratch(qgemm::GemmVnniSlotBytes(*packed8_, batches_, ctx.threads().num_threads())));
      return true;
    }
    if (kind_ == QuantKind::kHybrid) {
      asymmetric_ = o.asymmetric_quantize_inputs;
      qin_scratch_ = ctx.RequestScratch(static_cast<size_t>(input->num_elements()));
      batch_scale_.assign(batches_, 0.0f);
      batch_zp_.assign(batches_, 0);
    }
    RETURN_IF_ERROR(ctx.ReserveSlotScratch(qgemm::GemmSlotBytes(*packed_, batches_, ctx.threads().num_threads())));
    return true;
  }

  Status InvokeFast(rt::KernelContext& ctx) override {
    const rt::RtTensor* input = ctx.input(0);
    if (ctx.output(0)->num_elements() == 0) return Status::Ok();
    if (use_vnni_) {
      qgemm::ContiguousRowsPacker8 pack(input->data, depth_, kind_ == QuantKind::kInt8 ? 0x80 : 0);
      qgemm::RunGemmVnni(ctx.threads(), batches_, *packed8_, pack, vout_, ctx.output(0)->data, units_);
      return Status::Ok();
    }
    switch (kind_) {
      case QuantKind::kInt8: {
        RowPacker<int8_t> pack(input->data_as<int8_t>(), batches_, depth_, input->zero_point(), nullptr);
        qgemm::RunGemm(ctx.threads(), batches_, *packed_, pack, MakeGemmOutput(out_, ctx, units_));
        break;
      }
      case QuantKind::kUInt8: {
        RowPacker<uint8_t> pack(input->data_as<uint8_t>(), batches_, depth_, input->zero_point(), nullptr);
        qgemm::RunGemm(ctx.threads(), batches_, *packed_, pack, MakeGemmOutput(out_, ctx, units_));
        break;
      }
      case QuantKind::kHybrid: {
        int8_t* q = ctx.Scratch<int8_t>(qin_scratch_);
        QuantizeRows(input->data_as<float>(), batches_, depth_, asymmetric_, q, batch_scale_.data(), batch_zp_.data());
        RowPacker<int8_t> pack(q, batches_, depth_, 0, batch_zp_.data());
        const auto out = MakeGemmOutput(out_, ctx, units_, batch_scale_.data(), 1);
        qgemm::RunGemm(ctx.threads(), batches_, *packed_, pack, out);
        break;
      }
      case QuantKind::kInt16: {
        RowPacker<int16_t> pack(input->data_as<int16_t>(), batches_, depth_, 0, nullptr);
        qgemm::RunGemm(ctx.threads(), batches_, *packed_, pack, MakeGemmOutput(out_, ctx, units_));
        break;
      }
    }
    return Status::Ok();
  }

 private:
  QuantKind kind_;
  bool vnni_ = false;      // the CPU runs the VNNI GEMM
  bool use_vnni_ = false;  // this op does (int8 / uint8)
  std::shared_ptr<const qgemm::PackedB8> packed8_;
  qgemm::VnniOutput vout_;
  int batches_ = 0, units_ = 0, depth_ = 0;
  std::shared_ptr<const qgemm::PackedB> packed_;
  GemmOpOutput out_;
  // Hybrid: the input quantized per batch row.
  bool asymmetric_ = false;
  int qin_scratch_ = -1;
  std::vector<float> batch_scale_;
  std::vector<int32_t> batch_zp_;
};

}  // namespace

std::unique_ptr<rt::OpKernel> MakeFullyConnectedQuant(const rt::KernelCreateContext& cc, RefFactory reference) {
  if (!GemmOpEligible(cc)) return nullptr;
  const Tensor* in = cc.input(0);
  const Tensor* w = cc.input(1);
  if (w->shape.size() != 2) return nullptr;
  const auto& o = GetOptions<tflite::FullyConnectedOptionsT>(cc.op);
  if (o.weights_format != tflite::FullyConnectedOptionsWeightsFormat_DEFAULT) return nullptr;
  const auto kind = ClassifyQuant(in->type, w->type, cc.output(0)->type);
  if (!kind) return nullptr;
  // Hybrid results differ from the reference in a few accumulators (not bit-exact yet): reference.
  if (*kind == QuantKind::kHybrid) return nullptr;
  auto ref = MakeReferenceKernel(cc, reference);
  if (!ref) return nullptr;
  return std::make_unique<FcQuantKernel>(std::move(ref), *kind, cc.cpu.has_avx512_vnni());
}

}  // namespace edgeopt::kernels
