#include "kernels/gemm_int8/qgemm_ops_util.h"

#include <algorithm>
#include <type_traits>

#include "kernels/common/kernel_util.h"
#include "kernels/common/nn_util.h"
#include "kernels/common/quant_utils.h"

namespace edgeopt::kernels {

namespace {

// Weights packed by pack(w, N, K, zero_points, Packed*) for int8 or uint8 weights, once per model
// and op (through the model's packed-weight cache when there is one).
template <typename Packed, typename Pack>
std::shared_ptr<const Packed> CachedPacking(rt::KernelContext& ctx, const std::string& key_prefix,
                                            const rt::RtTensor& weights, int N, int K,
                                            const std::vector<int32_t>& zero_points, Pack pack) {
  auto make = [&]() -> std::shared_ptr<const void> {
    auto p = std::make_shared<Packed>();
    if (weights.type == DType::kUInt8) {
      pack(weights.data_as<uint8_t>(), N, K, zero_points, p.get());
    } else {
      pack(weights.data_as<int8_t>(), N, K, zero_points, p.get());
    }
    return p;
  };
  rt::PackedWeightCache* cache = ctx.host()->packed_cache();
  if (!cache) return std::static_pointer_cast<const Packed>(make());
  const std::string key = key_prefix + "/sg" + std::to_string(ctx.host()->subgraph_index()) + "/op" +
                          std::to_string(ctx.graph_op_index()) + "/" + std::to_string(N) + "x" + std::to_string(K);
  return std::static_pointer_cast<const Packed>(cache->GetOrCreate(key, make));
}

// The 16x8 output stage's parameters (the bias read from its tensor, null when absent).
qgemm::Int16Out Int16OutOf(const GemmOpOutput& st, const rt::RtTensor* bias) {
  qgemm::Int16Out q;
  q.rounding = st.rounding;
  q.bias32 = bias && bias->type == DType::kInt32 ? bias->data_as<int32_t>() : nullptr;
  q.bias64 = bias && bias->type == DType::kInt64 ? bias->data_as<int64_t>() : nullptr;
  q.multiplier = st.mult.data();
  q.shift = st.shift.data();
  q.act_min = st.act_min;
  q.act_max = st.act_max;
  return q;
}

// Per channel |acc[n]| <= abs_sum[n] * max_in for inputs with |x - zero point| <= max_in; empty
// when the operator gives no abs sums (then no stage relies on a bound).
std::vector<int64_t> AccBounds(const GemmOpSpec& spec, int N, int64_t max_in) {
  std::vector<int64_t> bound;
  if (spec.abs_sum && static_cast<int>(spec.abs_sum->size()) == N) {
    bound.resize(static_cast<size_t>(N));
    for (int n = 0; n < N; ++n) bound[static_cast<size_t>(n)] = (*spec.abs_sum)[static_cast<size_t>(n)] * max_in;
  }
  return bound;
}

}  // namespace

std::shared_ptr<const qgemm::PackedB> GetPackedWeights(rt::KernelContext& ctx, const std::string& tag,
                                                       const rt::RtTensor& weights, int N, int K,
                                                       const std::vector<int32_t>& zero_points) {
  return CachedPacking<qgemm::PackedB>(ctx, "qgemm-" + tag, weights, N, K, zero_points,
                                       [](const auto* w, int n, int k, const std::vector<int32_t>& zp,
                                          qgemm::PackedB* out) { qgemm::PackWeights(w, n, k, zp, out); });
}

std::shared_ptr<const qgemm::PackedB8> GetPackedWeightsVnni(rt::KernelContext& ctx, const std::string& tag,
                                                            const rt::RtTensor& weights, int N, int K,
                                                            const std::vector<int32_t>& zero_points, int seg,
                                                            int seg_stride) {
  if (seg <= 0) {
    return CachedPacking<qgemm::PackedB8>(ctx, "qgemm8-" + tag, weights, N, K, zero_points,
                                          [](const auto* w, int n, int k, const std::vector<int32_t>& zp,
                                             qgemm::PackedB8* out) { qgemm::PackWeightsVnni(w, n, k, zp, out); });
  }
  const std::string prefix = "qgemm8-" + tag + "-runs" + std::to_string(seg) + "of" + std::to_string(seg_stride);
  return CachedPacking<qgemm::PackedB8>(
      ctx, prefix, weights, N, K, zero_points,
      [seg, seg_stride](const auto* w, int n, int k, const std::vector<int32_t>& zp, qgemm::PackedB8* out) {
        using W = std::remove_cv_t<std::remove_pointer_t<decltype(w)>>;
        const int runs = k / seg, k_spread = runs * seg_stride;
        std::vector<W> spread(static_cast<size_t>(n) * k_spread, static_cast<W>(zp.empty() ? 0 : zp[0]));
        for (int row = 0; row < n; ++row)
          for (int r = 0; r < runs; ++r)
            std::copy_n(w + int64_t{row} * k + int64_t{r} * seg, seg,
                        spread.data() + int64_t{row} * k_spread + int64_t{r} * seg_stride);
        qgemm::PackWeightsVnni(spread.data(), n, k_spread, zp, out);
      });
}

bool GemmOpEligible(const rt::KernelCreateContext& cc) {
  if (cc.reference_only || !cc.cpu.has_avx2_fma()) return false;
  const Tensor* in = cc.input(0);
  const Tensor* w = cc.input(1);
  const Tensor* bias = cc.input(2);
  const Tensor* out = cc.output(0);
  if (!in || !w || !out || !cc.is_constant(1) || (bias && !cc.is_constant(2))) return false;
  return !w->sparsity;
}

Expected<bool> PrepareGemmOutput(rt::KernelContext& ctx, const GemmOpSpec& spec, GemmOpOutput* st) {
  const rt::RtTensor* input = ctx.input(0);
  const rt::RtTensor* weights = ctx.input(1);
  const rt::RtTensor* bias = ctx.input(2);
  const rt::RtTensor* output = ctx.output(0);
  const int N = spec.N;
  st->kind = spec.kind;
  // Multipliers and shifts per output channel, or one for all.
  auto multipliers = [&](std::vector<int32_t>* mult, std::vector<int>* shift) {
    if (spec.per_channel_multipliers) {
      PerChannelQuant q = ComputePerChannelQuant(input->scale(), *weights, output->scale(), N);
      *mult = std::move(q.multiplier);
      *shift = std::move(q.shift);
    } else {
      mult->assign(1, 0);
      shift->assign(1, 0);
      QuantizeMultiplier(LegacyConvMultiplier(input->scale(), weights->scale(), output->scale()), &(*mult)[0],
                         &(*shift)[0]);
    }
  };
  switch (spec.kind) {
    case QuantKind::kInt8:
    case QuantKind::kUInt8: {
      std::vector<int32_t> mult;
      std::vector<int> shift;
      multipliers(&mult, &shift);
      if (!ShiftsSupported(shift)) return false;
      int32_t lo, hi;
      RETURN_IF_ERROR(QuantizedActivation(ctx, spec.activation, *output, &lo, &hi));
      // |input - input_zero_point| <= max_in for any input.
      std::vector<int64_t> bound;
      if (input->type == DType::kInt8 || input->type == DType::kUInt8) {
        const int64_t zp = input->zero_point();
        bound = AccBounds(spec, N,
                          input->type == DType::kInt8 ? std::max<int64_t>(127 - zp, zp + 128)
                                                      : std::max<int64_t>(255 - zp, zp));
      }
      qgemm::BuildRequant8(N, bias ? bias->data_as<int32_t>() : nullptr, mult, shift, output->zero_point(), lo, hi,
                           &st->q8, bound.empty() ? nullptr : bound.data());
      return true;
    }
    case QuantKind::kHybrid: {
      RETURN_IF_ERROR(FloatActivation(ctx, spec.activation, &st->fact_min, &st->fact_max));
      const auto& scales = weights->quant->scale;
      st->col_scale.assign(N, scales[0]);
      if (scales.size() > 1)
        for (int n = 0; n < N; ++n) st->col_scale[n] = scales[n];
      return true;
    }
    case QuantKind::kInt16: {
      multipliers(&st->mult, &st->shift);
      if (st->mult.size() == 1) {
        st->mult.assign(N, st->mult[0]);
        st->shift.assign(N, st->shift[0]);
      }
      RETURN_IF_ERROR(QuantizedActivation(ctx, spec.activation, *output, &st->act_min, &st->act_max));
      st->rounding = !bias                         ? spec.int16_no_bias
                     : bias->type == DType::kInt32 ? spec.int16_int32_bias
                                                   : spec.int16_int64_bias;
      // The reference accumulates in int64 there: int32 sums are exact only if they cannot
      // overflow; otherwise the VNNI GEMM sums in int64 (long_sums), the AVX2 one declines.
      const bool long_sums = st->rounding == qgemm::Int16Rounding::kInt64Bias &&
                             !Int16SumsFitInt32(weights->data_as<int8_t>(), N, spec.K);
      if (long_sums && !spec.int16_vnni) return false;
      st->use_i16v = false;
      if (spec.int16_vnni) {
        const qgemm::Int16Out q = Int16OutOf(*st, bias);
        const std::vector<int64_t> bound = AccBounds(spec, N, 32768);  // |input| <= 32768 (int16, zero point 0)
        st->use_i16v = qgemm::BuildInt16VnniOutput(q, N, &st->i16v, bound.empty() ? nullptr : bound.data(), long_sums);
        if (long_sums && !st->use_i16v) return false;
      }
      return true;
    }
  }
  return false;
}

qgemm::GemmOutput MakeGemmOutput(const GemmOpOutput& st, rt::KernelContext& ctx, int64_t ldc, const float* row_scale,
                                 int64_t rows_per_batch) {
  const rt::RtTensor* bias = ctx.input(2);
  qgemm::GemmOutput out;
  out.c = ctx.output(0)->data;
  out.ldc = ldc;
  switch (st.kind) {
    case QuantKind::kInt8:
    case QuantKind::kUInt8:
      out.kind = st.kind == QuantKind::kInt8 ? qgemm::OutKind::kInt8 : qgemm::OutKind::kUInt8;
      out.q8 = &st.q8;
      break;
    case QuantKind::kHybrid:
      out.kind = qgemm::OutKind::kFloat;
      out.f.col_scale = st.col_scale.data();
      out.f.bias = bias ? bias->data_as<float>() : nullptr;
      out.f.act_min = st.fact_min;
      out.f.act_max = st.fact_max;
      out.row_scale = row_scale;
      out.rows_per_batch = rows_per_batch;
      break;
    case QuantKind::kInt16:
      out.kind = qgemm::OutKind::kInt16;
      out.i16 = Int16OutOf(st, bias);
      out.i16v = st.use_i16v ? &st.i16v : nullptr;
      break;
  }
  return out;
}

}  // namespace edgeopt::kernels
