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
  FcQuantKernel(std::unique_ptr<rt::OpKernel> ref, QuantKind kind) : FastKernel(std::move(ref)), kind_(kind) {}
  size_t PackedBytes() const override { return packed_ ? packed_->bytes() : 0; }

 protected:
  std::string FastVariant() const override {
    switch (kind_) {
      case QuantKind::kInt8: return "fully_connected/int8/avx2";
      case QuantKind::kUInt8: return "fully_connected/uint8/avx2";
      case QuantKind::kHybrid: return "fully_connected/hybrid/avx2";
      case QuantKind::kInt16: return "fully_connected/int16x8/avx2";
    }
    return "fully_connected/avx2";
  }

  Expected<bool> PrepareFast(rt::KernelContext& ctx) override {
    const rt::RtTensor* input = ctx.input(0);
    const rt::RtTensor* weights = ctx.input(1);
    const rt::RtTensor* bias = ctx.input(2);
    const rt::RtTensor* output = ctx.output(0);
    if (!weights->data || (bias && !bias->data)) return false;
    const auto& o = GetOptions<tflite::FullyConnectedOptionsT>(ctx.op());
    units_ = weights->dim(0);
    depth_ = weights->dim(1);
    if (units_ <= 0 || depth_ <= 0) return false;
    batches_ = input->num_elements() / depth_;
    const bool per_channel = weights->per_channel();
    std::vector<int32_t> weight_zp = {0};
    if ((kind_ == QuantKind::kInt8 && !per_channel) || kind_ == QuantKind::kUInt8) weight_zp[0] = weights->zero_point();
    packed_ = GetPackedWeights(ctx, "fc", *weights, units_, depth_, weight_zp);

    switch (kind_) {
      case QuantKind::kInt8:
      case QuantKind::kUInt8: {
        std::vector<int32_t> mult;
        std::vector<int> shift;
        if (per_channel) {
          PerChannelQuant q = ComputePerChannelQuant(input->scale(), *weights, output->scale(), units_);
          mult = std::move(q.multiplier);
          shift = std::move(q.shift);
        } else {
          mult.assign(1, 0);
          shift.assign(1, 0);
          QuantizeMultiplier(LegacyConvMultiplier(input->scale(), weights->scale(), output->scale()), &mult[0],
                             &shift[0]);
        }
        if (!ShiftsSupported(shift)) return false;
        int32_t lo, hi;
        RETURN_IF_ERROR(QuantizedActivation(ctx, o.fused_activation_function, *output, &lo, &hi));
        qgemm::BuildRequant8(units_, bias ? bias->data_as<int32_t>() : nullptr, mult, shift, output->zero_point(), lo,
                             hi, &q8_);
        break;
      }
      case QuantKind::kHybrid: {
        RETURN_IF_ERROR(FloatActivation(ctx, o.fused_activation_function, &fact_min_, &fact_max_));
        asymmetric_ = o.asymmetric_quantize_inputs;
        const auto& scales = weights->quant->scale;
        col_scale_.assign(units_, scales[0]);
        if (per_channel)
          for (int n = 0; n < units_; ++n) col_scale_[n] = scales[n];
        qin_scratch_ = ctx.RequestScratch(static_cast<size_t>(input->num_elements()));
        batch_scale_.assign(batches_, 0.0f);
        batch_zp_.assign(batches_, 0);
        break;
      }
      case QuantKind::kInt16: {
        if (per_channel) {
          PerChannelQuant q = ComputePerChannelQuant(input->scale(), *weights, output->scale(), units_);
          mult_ = std::move(q.multiplier);
          shift_ = std::move(q.shift);
        } else {
          mult_.assign(units_, 0);
          shift_.assign(units_, 0);
          int32_t m;
          int s;
          QuantizeMultiplier(LegacyConvMultiplier(input->scale(), weights->scale(), output->scale()), &m, &s);
          mult_.assign(units_, m);
          shift_.assign(units_, s);
        }
        RETURN_IF_ERROR(QuantizedActivation(ctx, o.fused_activation_function, *output, &act_min_, &act_max_));
        if (bias && bias->type == DType::kInt64) {
          if (!Int16SumsFitInt32(weights->data_as<int8_t>(), units_, depth_)) return false;
          rounding_ = qgemm::Int16Rounding::kInt64Bias;
        } else {
          rounding_ = qgemm::Int16Rounding::kSingleRound;
        }
        break;
      }
    }
    gemm_scratch_ = ctx.RequestScratch(qgemm::GemmScratchBytes(*packed_, batches_, ctx.threads().num_threads()) + 64);
    return true;
  }

  Status InvokeFast(rt::KernelContext& ctx) override {
    const rt::RtTensor* input = ctx.input(0);
    const rt::RtTensor* bias = ctx.input(2);
    rt::RtTensor* output = ctx.output(0);
    if (output->num_elements() == 0) return Status::Ok();
    void* scratch = AlignScratch(ctx.Scratch(gemm_scratch_));
    qgemm::GemmOutput out;
    out.c = output->data;
    out.ldc = units_;
    switch (kind_) {
      case QuantKind::kInt8: {
        out.kind = qgemm::OutKind::kInt8;
        out.q8 = &q8_;
        RowPacker<int8_t> pack(input->data_as<int8_t>(), batches_, depth_, input->zero_point(), nullptr);
        qgemm::RunGemm(ctx.threads(), batches_, *packed_, pack, out, scratch);
        break;
      }
      case QuantKind::kUInt8: {
        out.kind = qgemm::OutKind::kUInt8;
        out.q8 = &q8_;
        RowPacker<uint8_t> pack(input->data_as<uint8_t>(), batches_, depth_, input->zero_point(), nullptr);
        qgemm::RunGemm(ctx.threads(), batches_, *packed_, pack, out, scratch);
        break;
      }
      case QuantKind::kHybrid: {
        int8_t* q = ctx.Scratch<int8_t>(qin_scratch_);
        QuantizeRows(input->data_as<float>(), batches_, depth_, asymmetric_, q, batch_scale_.data(), batch_zp_.data());
        out.kind = qgemm::OutKind::kFloat;
        out.f.col_scale = col_scale_.data();
        out.f.bias = bias ? bias->data_as<float>() : nullptr;
        out.f.act_min = fact_min_;
        out.f.act_max = fact_max_;
        out.row_scale = batch_scale_.data();
        out.rows_per_batch = 1;
        RowPacker<int8_t> pack(q, batches_, depth_, 0, batch_zp_.data());
        qgemm::RunGemm(ctx.threads(), batches_, *packed_, pack, out, scratch);
        break;
      }
      case QuantKind::kInt16: {
        out.kind = qgemm::OutKind::kInt16;
        out.i16.rounding = rounding_;
        out.i16.bias32 = bias && bias->type == DType::kInt32 ? bias->data_as<int32_t>() : nullptr;
        out.i16.bias64 = bias && bias->type == DType::kInt64 ? bias->data_as<int64_t>() : nullptr;
        out.i16.multiplier = mult_.data();
        out.i16.shift = shift_.data();
        out.i16.act_min = act_min_;
        out.i16.act_max = act_max_;
        RowPacker<int16_t> pack(input->data_as<int16_t>(), batches_, depth_, 0, nullptr);
        qgemm::RunGemm(ctx.threads(), batches_, *packed_, pack, out, scratch);
        break;
      }
    }
    return Status::Ok();
  }

 private:
  QuantKind kind_;
  int batches_ = 0, units_ = 0, depth_ = 0;
  std::shared_ptr<const qgemm::PackedB> packed_;
  qgemm::Requant8 q8_;
  int gemm_scratch_ = -1;
  // Hybrid.
  bool asymmetric_ = false;
  std::vector<float> col_scale_;
  float fact_min_ = 0, fact_max_ = 0;
  int qin_scratch_ = -1;
  std::vector<float> batch_scale_;
  std::vector<int32_t> batch_zp_;
  // 16x8.
  std::vector<int32_t> mult_;
  std::vector<int> shift_;
  qgemm::Int16Rounding rounding_ = qgemm::Int16Rounding::kSingleRound;
  int32_t act_min_ = 0, act_max_ = 0;
};

}  // namespace

std::unique_ptr<rt::OpKernel> MakeFullyConnectedQuant(const rt::KernelCreateContext& cc, RefFactory reference) {
  if (cc.reference_only || !cc.cpu.has_avx2_fma()) return nullptr;
  const Tensor* in = cc.input(0);
  const Tensor* w = cc.input(1);
  const Tensor* bias = cc.input(2);
  const Tensor* out = cc.output(0);
  if (!in || !w || !out || !cc.is_constant(1) || (bias && !cc.is_constant(2))) return nullptr;
  if (w->sparsity || w->shape.size() != 2) return nullptr;
  const auto& o = GetOptions<tflite::FullyConnectedOptionsT>(cc.op);
  if (o.weights_format != tflite::FullyConnectedOptionsWeightsFormat_DEFAULT) return nullptr;
  const auto kind = ClassifyQuant(in->type, w->type, out->type);
  if (!kind) return nullptr;
  // Hybrid results differ from the reference in a few accumulators (not bit-exact yet): reference.
  if (*kind == QuantKind::kHybrid) return nullptr;
  auto ref = MakeReferenceKernel(cc, reference);
  if (!ref) return nullptr;
  return std::make_unique<FcQuantKernel>(std::move(ref), *kind);
}

}  // namespace edgeopt::kernels
