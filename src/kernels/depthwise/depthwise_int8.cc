// Fast quantized DEPTHWISE_CONV_2D: plan building (weights in pair layout, requantization
// constants) and the operator; the AVX2 loops are in depthwise_int8_avx2.cc.
#include "kernels/depthwise/depthwise_int8.h"

#include <algorithm>
#include <climits>
#include <cstdlib>

#include "kernels/common/float_requant.h"
#include "kernels/common/hybrid_quant.h"
#include "kernels/common/kernel_util.h"
#include "kernels/common/nn_util.h"
#include "kernels/common/quant_utils.h"
#include "kernels/depthwise/depthwise_int8_k3.h"
#include "kernels/gemm_int8/ops_int8.h"

namespace edgeopt::kernels {
namespace dwq {
namespace {

// Channel held at position d of the 16-channel blocks (unpack order unless natural).
int ChannelAt(int d, bool natural) {
  if (natural) return d;
  const int block = d / 16, i = d % 16;
  return block * 16 + (i < 4 || i >= 12 ? i : i < 8 ? i + 4 : i - 4);
}

constexpr int kMaxFilterRows = 16;
constexpr int kMaxRing = 64;

}  // namespace

template <typename W>
void BuildPlan(const Geom& g, const W* weights, int32_t weight_zero_point, Plan* p) {
  p->g = g;
  const int C = g.channels;
  p->c16 = (C + 15) / 16 * 16;
  p->pairs_w = (g.k_w + 1) / 2;
  p->q = g.stride_w % 2 == 0 ? 2 : 1;
  p->ox_step = g.stride_w / p->q;
  p->j_step = 2 * g.dil_w / p->q;
  const int x_max = (g.out_w - 1) * g.stride_w + 2 * (p->pairs_w - 1) * g.dil_w;
  p->row_entries = x_max / p->q + 1;
  p->ring = (g.k_h - 1) * g.dil_h + 1;
  p->weights.assign(static_cast<size_t>(g.k_h) * p->pairs_w * p->c16 * 2, 0);
  for (int ky = 0; ky < g.k_h; ++ky)
    for (int j = 0; j < p->pairs_w; ++j)
      for (int d = 0; d < p->c16; ++d) {
        const int c = ChannelAt(d, p->natural);
        if (c >= C) continue;
        for (int e = 0; e < 2; ++e) {
          const int kx = 2 * j + e;
          if (kx >= g.k_w) continue;
          const int32_t v = int32_t{weights[(static_cast<size_t>(ky) * g.k_w + kx) * C + c]} - weight_zero_point;
          p->weights[((static_cast<size_t>(ky) * p->pairs_w + j) * p->c16 + d) * 2 + e] = static_cast<int16_t>(v);
        }
      }
}

template void BuildPlan<int8_t>(const Geom&, const int8_t*, int32_t, Plan*);
template void BuildPlan<uint8_t>(const Geom&, const uint8_t*, int32_t, Plan*);

namespace {

// The K x K quad loop with 16 / C pixels per vector (Plan::kn_pixels) for a layer of C = 4 or 8
// channels: planned as 16 channels, channel l being the real channel l % C (weights, bias and
// multipliers repeated). Fills *plan when that plan takes the quad loop; false otherwise (huge
// biases, uint8 weights far from their zero point).
bool TryPackedPlan(const Geom& g, const Quant8Layer& l, Plan* plan) {
  const int C = g.channels;
  Plan packed;
  packed.natural = true;
  packed.kn_pixels = 16 / C;
  Geom g16 = g;
  g16.channels = 16;
  const int taps = g.k_h * g.k_w;
  // out[t][l] = v[t][l % C] for `rows` rows of C values.
  const auto repeat = [C](const auto* v, int rows, auto* out) {
    for (int t = 0; t < rows; ++t)
      for (int i = 0; i < 16; ++i) out[t * 16 + i] = v[t * C + i % C];
  };
  if (l.weights_u8) {
    std::vector<uint8_t> w16(static_cast<size_t>(taps) * 16);
    repeat(l.weights_u8, taps, w16.data());
    BuildPlan(g16, w16.data(), l.weight_zero_point, &packed);
  } else {
    std::vector<int8_t> w16(static_cast<size_t>(taps) * 16);
    repeat(l.weights_i8, taps, w16.data());
    BuildPlan(g16, w16.data(), 0, &packed);
  }
  std::vector<int32_t> bias16(16), mult16 = l.multiplier;
  std::vector<int> shift16 = l.shift;
  if (l.bias) repeat(l.bias, 1, bias16.data());
  if (l.multiplier.size() > 1) {
    mult16.resize(16);
    shift16.resize(16);
    repeat(l.multiplier.data(), 1, mult16.data());
    repeat(l.shift.data(), 1, shift16.data());
  }
  packed.act_min = l.act_min;
  packed.act_max = l.act_max;
  BuildRequant(packed, l.bias ? bias16.data() : nullptr, mult16, shift16, l.output_zero_point, &packed);
  packed.kind = l.weights_u8 ? OutKind::kUInt8 : OutKind::kInt8;
  packed.avx512 = true;
  FinishPlan(&packed, l.input_zero_point);
  if (!packed.quads_kn) return false;
  *plan = std::move(packed);
  return true;
}

}  // namespace

Expected<bool> Quant8LayerOf(rt::KernelContext& ctx, const rt::RtTensor& input, const rt::RtTensor& filter,
                             const rt::RtTensor* bias, const rt::RtTensor& output, int activation, int channels,
                             Quant8Layer* l) {
  if (filter.type == DType::kUInt8) {
    l->weights_u8 = filter.data_as<uint8_t>();
    l->weight_zero_point = filter.zero_point();
    l->multiplier.assign(1, 0);
    l->shift.assign(1, 0);
    QuantizeMultiplier(LegacyConvMultiplier(input.scale(), filter.scale(), output.scale()), &l->multiplier[0],
                       &l->shift[0]);
  } else {
    l->weights_i8 = filter.data_as<int8_t>();
    PerChannelQuant q = ComputePerChannelQuant(input.scale(), filter, output.scale(), channels);
    l->multiplier = std::move(q.multiplier);
    l->shift = std::move(q.shift);
  }
  for (int s : l->shift)
    if (s > 30) return false;
  RETURN_IF_ERROR(QuantizedActivation(ctx, activation, output, &l->act_min, &l->act_max));
  l->bias = bias ? bias->data_as<int32_t>() : nullptr;
  l->input_zero_point = input.zero_point();
  l->output_zero_point = output.zero_point();
  return true;
}

void PlanQuant8(const Geom& g, const Quant8Layer& l, bool avx512, Plan* plan) {
  *plan = Plan();
  plan->natural = true;
  // 4 or 8 channels at stride_w 1: first the packed K x K quad loop.
  const int C = g.channels;
  if (avx512 && (C == 4 || C == 8) && g.stride_w == 1 && TryPackedPlan(g, l, plan)) return;
  if (l.weights_u8)
    BuildPlan(g, l.weights_u8, l.weight_zero_point, plan);
  else
    BuildPlan(g, l.weights_i8, 0, plan);
  plan->act_min = l.act_min;
  plan->act_max = l.act_max;
  BuildRequant(*plan, l.bias, l.multiplier, l.shift, l.output_zero_point, plan);
  plan->kind = l.weights_u8 ? OutKind::kUInt8 : OutKind::kInt8;
  plan->avx512 = avx512;
  FinishPlan(plan, l.input_zero_point);
}

void BuildRequant(const Plan& p, const int32_t* bias, const std::vector<int32_t>& multiplier,
                  const std::vector<int>& shift, int32_t output_zero_point, Plan* plan) {
  const int C = p.g.channels;
  plan->requant.assign(static_cast<size_t>(p.c16) / 8, RequantGroup{});
  plan->any_left_shift = false;
  for (int d = 0; d < p.c16; ++d) {
    const int c = ChannelAt(d, p.natural);
    const bool real = c < C;
    const size_t k = multiplier.size() == 1 ? 0 : static_cast<size_t>(std::min(c, C - 1));
    const int s = real ? shift[k] : 0;
    const int left = s > 0 ? s : 0, right = s > 0 ? 0 : -s;
    RequantGroup& g = plan->requant[d / 8];
    const int lane = d % 8;
    g.bias[lane] = real && bias ? bias[c] : 0;
    g.mult[lane] = real ? multiplier[k] : 0;
    g.left[lane] = left;
    g.shift[lane] = right;
    g.shift_m1[lane] = right > 0 ? right - 1 : 0;
    g.round_bit[lane] = right > 0 ? 1 : 0;
    g.neg_adjust[lane] = right > 0 ? -1 : 0;
    g.zp[lane] = output_zero_point;
    if (lane % 2 == 1) g.mult_o[lane - 1] = g.mult[lane];
    const int64_t round = (int64_t{1} << 30) + (right > 0 ? int64_t{1} << (30 + right) : 0);
    (lane % 2 == 0 ? g.round_e : g.round_o)[lane / 2] = round;
    g.neg_cmp[lane] = right > 0 ? int32_t{1} << (right - 1) : INT32_MIN;
    if (left > 0) plan->any_left_shift = true;
  }
  // |acc| <= taps * 255 * 255 (8-bit inputs and weights minus their zero points).
  int64_t max_bias = 0;
  for (int c = 0; bias && c < C; ++c) max_bias = std::max<int64_t>(max_bias, std::abs(int64_t{bias[c]}));
  const int64_t max_acc = int64_t{p.g.k_h} * p.g.k_w * 255 * 255;
  plan->fast_requant = !plan->any_left_shift && max_acc + max_bias < (int64_t{1} << 29);
}

void BuildRequant16(Plan* p) {
  p->requant16.assign(p->requant.size() / 2, RequantGroup16{});
  for (size_t i = 0; i < p->requant16.size(); ++i) {
    RequantGroup16& d = p->requant16[i];
    for (int h = 0; h < 2; ++h) {
      const RequantGroup& s = p->requant[2 * i + h];
      const auto copy8 = [h](const int32_t* src, int32_t* dst) { std::copy(src, src + 8, dst + 8 * h); };
      copy8(s.bias, d.bias);
      copy8(s.mult, d.mult);
      copy8(s.left, d.left);
      copy8(s.shift, d.shift);
      copy8(s.shift_m1, d.shift_m1);
      copy8(s.round_bit, d.round_bit);
      copy8(s.neg_adjust, d.neg_adjust);
      copy8(s.zp, d.zp);
      copy8(s.mult_o, d.mult_o);
      copy8(s.neg_cmp, d.neg_cmp);
      std::copy(s.round_e, s.round_e + 4, d.round_e + 4 * h);
      std::copy(s.round_o, s.round_o + 4, d.round_o + 4 * h);
    }
  }
}

void FoldOutputZeroPoint16(Plan* p) {
  p->zp_folded = false;
  p->floor_clamps = false;
  p->quad_halved = false;
  if (!p->avx512 || !p->doubled) return;
  // Lane `lane`'s 64-bit rounding constant in round_e / round_o.
  const auto round_of = [](RequantGroup16& g, int lane) -> int64_t& {
    return (lane % 2 == 0 ? g.round_e : g.round_o)[lane / 8 * 4 + lane % 8 / 2];
  };
  // |h| <= 2^29 (|acc + bias| < 2^29, multiplier < 2^31), the rounding term 2^(e-1) <= 2^e.
  for (const RequantGroup16& g : p->requant16)
    for (int lane = 0; lane < 16; ++lane)
      if ((std::abs(int64_t{g.zp[lane]}) + 1) * (int64_t{1} << g.shift[lane]) + (int64_t{1} << 29) >= (int64_t{1} << 31))
        return;
  for (RequantGroup16& g : p->requant16)
    for (int lane = 0; lane < 16; ++lane) {
      const int64_t zp_e = int64_t{g.zp[lane]} << g.shift[lane];
      round_of(g, lane) += zp_e * (int64_t{1} << 32);
      if (g.shift[lane] > 0) g.neg_cmp[lane] = static_cast<int32_t>(g.neg_cmp[lane] + zp_e);
    }
  p->zp_folded = true;
  p->floor_clamps = p->act_min >= p->requant[0].zp[0];
  // Plan::quad_halved: quad rows, no ties-away adjustment (its neg_cmp compares doubled values),
  // every shift >= 1 and every rounding constant even (lanes past the channels are never stored;
  // quad plans are in natural channel order).
  if (!p->floor_clamps || !(p->quads || p->quads_kn)) return;
  for (size_t gi = 0; gi < p->requant16.size(); ++gi)
    for (int lane = 0; lane < 16 && static_cast<int>(gi) * 16 + lane < p->g.channels; ++lane)
      if (p->requant16[gi].shift[lane] < 1 || round_of(p->requant16[gi], lane) % 2 != 0) return;
  for (RequantGroup16& g : p->requant16)
    for (int lane = 0; lane < 16; ++lane) {
      g.shift[lane] = std::max(0, g.shift[lane] - 1);
      round_of(g, lane) /= 2;
    }
  p->quad_halved = true;
}

void PlanQuadFloat(Plan* p) {
  p->quad_float = p->quad_float_split = p->quad_float_bits = false;
  if (!(p->quads || p->quads_kn) || !p->natural || p->requant16.empty() || !FloatRequantEnabled()) return;
  const int C = p->g.channels, c16 = p->c16, k_h = p->g.k_h, groups = (p->g.k_w + 3) / 4;
  // Above the zero point both of the reference's roundings are one floor (Plan::quad_float); a
  // clamp that keeps values below it needs the sign-dependent offset (quad_float_split).
  bool split = false;
  for (int d = 0; d < C; ++d) split = split || p->act_min < p->requant[static_cast<size_t>(d / 8)].zp[d % 8];
  std::vector<float> scale(static_cast<size_t>(c16), 0.f), offset(scale), offset_neg(scale), offset_bits(scale);
  // The bits form's start offsets; lanes past C start at 2^23's bits (a normal float times s = 0).
  std::vector<uint32_t> start(static_cast<size_t>(c16), kFloatBitsBase + (uint32_t{1} << 23));
  bool bits_ok = !split && FloatBitsEnabled();
  for (int d = 0; d < C; ++d) {
    const RequantGroup& g = p->requant[static_cast<size_t>(d / 8)];
    const int lane = d % 8;
    const int64_t m = g.mult[lane];
    const int r = g.shift[lane];
    const int32_t zp = g.zp[lane];
    if (g.left[lane] != 0 || r < 1) return;
    // |x| <= |folded bias| + 255 * sum |w| (quad-row bytes 0..255; weights plus their rest).
    int64_t wsum = 0;
    for (int ky = 0; ky < k_h; ++ky)
      for (int gi = 0; gi < groups; ++gi)
        for (int t = 0; t < 4; ++t) {
          const size_t at = ((static_cast<size_t>(ky) * groups + gi) * c16 + d) * 4 + t;
          wsum += std::abs(int64_t{p->quad_weights[at]} + (p->quad_rest.empty() ? 0 : p->quad_rest[at]));
        }
    const int64_t bound = std::abs(int64_t{p->requant16[static_cast<size_t>(d / 16)].bias[d % 16]}) + 255 * wsum;
    // The reference's crossings: x m >= (v - zp) 2^(31+r) - 2^(30+r) - 2^30 above zero, and with
    // ties away from zero 2^31 later below it.
    const __int128 base = (__int128{1} << (30 + r)) + __int128{zp} * (__int128{1} << (31 + r));
    const __int128 c_pos = base + (__int128{1} << 30), c_neg = base - (__int128{1} << 30);
    const size_t i = static_cast<size_t>(d);
    FloatBits bits;
    const bool ok = split ? FloatRequantConstantsSplit(m, r, c_pos, c_neg, bound, p->act_min, p->act_max, &scale[i],
                                                       &offset[i], &offset_neg[i])
                          : FloatRequantConstants(m, r, c_pos, bound, p->act_min, p->act_max, &scale[i], &offset[i],
                                                  &bits);
    if (!ok) return;
    bits_ok = bits_ok && bits.ok;
    offset_bits[i] = bits.c;
    start[i] = bits.offset;
  }
  for (int d = 0; d < c16; ++d) {
    RequantGroup16& g = p->requant16[static_cast<size_t>(d / 16)];
    g.fscale[d % 16] = scale[static_cast<size_t>(d)];
    // Lanes past C: offsets 0, never stored.
    g.foffset[d % 16] = (bits_ok ? offset_bits : offset)[static_cast<size_t>(d)];
    g.foffset_neg[d % 16] = offset_neg[static_cast<size_t>(d)];
    if (bits_ok) g.bias[d % 16] = static_cast<int32_t>(static_cast<uint32_t>(g.bias[d % 16]) + start[static_cast<size_t>(d)]);
  }
  p->quad_float = true;
  p->quad_float_split = split;
  p->quad_float_bits = bits_ok;
}

void PlanInt16Stage(Plan* p, bool avx512) {
  p->int16_stage = nullptr;
  p->int16_row = nullptr;
  const size_t padded = (p->mult16.size() + 15) / 16 * 16;
  p->rq16_mult.assign(padded, 0);
  p->rq16_round.assign(padded, 0);
  p->rq16_shift.assign(padded, 1);
  for (size_t c = 0; c < p->mult16.size(); ++c) {
    const int32_t m = p->mult16[c];
    const int total_shift = 15 - p->shift16[c];
    if (total_shift < 1 || total_shift > 63) return;  // outside the reference's range: scalar
    p->rq16_mult[c] = m < 0x7FFF0000 ? (m + (1 << 15)) >> 16 : 0x7FFF;
    p->rq16_round[c] = int64_t{1} << (total_shift - 1);
    p->rq16_shift[c] = total_shift;
  }
  if (avx512) {
    p->int16_stage = Int16StageAvx512;
    p->int16_row = PickInt16RowAvx512(*p);
  }
}

bool PlanInt16K3(Plan* p, const int64_t* bias) {
  const int C = p->g.channels;
  if (!p->natural || p->g.k_h != 3 || p->g.k_w != 3 || p->ox_step != 1 || !Int16K3Step(p->j_step)) return false;
  std::vector<Int16K3Group> groups(static_cast<size_t>(p->c16) / 16);
  bool high = true;  // every channel has the high-dword form
  for (int c = 0; c < C; ++c) {
    const int32_t m = p->mult16[c];
    const int total_shift = 15 - p->shift16[c];
    if (m < 0 || total_shift < 1 || total_shift > 63) return false;
    const int64_t reduced = m < 0x7FFF0000 ? (int64_t{m} + (1 << 15)) >> 16 : 0x7FFF;
    high = high && total_shift <= 32 && (reduced << (32 - total_shift)) <= INT32_MAX;
    // Every partial sum of the int32 accumulator: |bias| + 32768 * sum|w| (products of int16
    // inputs and int8 weights, at most 32768 * 128 each), below 2^31.
    int64_t weight_sum = 0;
    for (int t = 0; t < 3 * 2 * 2; ++t)
      weight_sum += std::abs(p->weights[(static_cast<size_t>(t / 2) * p->c16 + c) * 2 + t % 2]);
    const int64_t b = bias ? bias[c] : 0;
    if (32768 * weight_sum >= (int64_t{1} << 31)) return false;
    // A bias that the accumulator cannot start from (e.g. a channel of tiny weight scale) is
    // added in the 64-bit stage instead: (acc + b) * m + r == acc * m + (b * m + r), the same
    // int64 bits as the reference; the high-dword form has no room for it.
    const bool bias_in_acc = std::abs(b) + 32768 * weight_sum < (int64_t{1} << 31);
    high = high && bias_in_acc;
    Int16K3Group& g = groups[c / 16];
    const int lane = c % 16 / 2;
    g.bias[c % 16] = bias_in_acc ? static_cast<int32_t>(b) : 0;
    (c % 2 == 0 ? g.mult_even : g.mult_odd)[lane] = reduced;
    (c % 2 == 0 ? g.round_even : g.round_odd)[lane] =
        static_cast<int64_t>((bias_in_acc ? uint64_t{0} : static_cast<uint64_t>(b) * static_cast<uint64_t>(reduced)) +
                             (uint64_t{1} << (total_shift - 1)));
    (c % 2 == 0 ? g.shift_even : g.shift_odd)[lane] = total_shift;
  }
  if (high) {
    // mult = m * 2^(32 - t): the result is the high dword of x * mult + 2^31.
    for (Int16K3Group& g : groups)
      for (int lane = 0; lane < 8; ++lane) {
        g.mult_even[lane] <<= 32 - (g.shift_even[lane] ? g.shift_even[lane] : 32);
        g.mult_odd[lane] <<= 32 - (g.shift_odd[lane] ? g.shift_odd[lane] : 32);
      }
  }
  p->int16_k3 = std::move(groups);
  p->int16_high = high;
  p->avx512 = true;
  if (p->g.dil_w != 1) {
    // e.g. avx512/3x3s1d2 (LoopName).
    p->kn_name = "avx512/3x3s" + std::to_string(p->g.stride_w) + "d" + std::to_string(p->g.dil_w);
  }
  return true;
}

}  // namespace dwq

namespace {

enum class DwKind { kInt8, kUInt8, kHybrid, kInt16 };

// The variant suffix of a plan's fp32 requantization: "/rqfloat", "/rqbits" (Plan::quad_float_bits).
std::string RqSuffix(const dwq::Plan& p) { return !p.quad_float ? "" : p.quad_float_bits ? "/rqbits" : "/rqfloat"; }

class DepthwiseQuantKernel final : public FastKernel {
 public:
  DepthwiseQuantKernel(std::unique_ptr<rt::OpKernel> ref, DwKind kind, bool avx512)
      : FastKernel(std::move(ref)), kind_(kind), avx512_(avx512) {}

 protected:
  std::string FastVariant() const override {
    switch (kind_) {
      // "/rqfloat": the quad rows' exact fp32 requantization (Plan::quad_float), "/rqbits" its
      // form without the conversion (Plan::quad_float_bits).
      case DwKind::kInt8:
        return std::string("depthwise_conv2d/int8/") + dwq::LoopName(plan_) + RqSuffix(plan_);
      case DwKind::kUInt8:
        return std::string("depthwise_conv2d/uint8/") + dwq::LoopName(plan_) + RqSuffix(plan_);
      case DwKind::kHybrid: return "depthwise_conv2d/hybrid/avx2";
      case DwKind::kInt16:
        // The 3x3 loop's rows; "/sra": their requantization with the 64-bit shift (not int16_high).
        if (plan_.int16_k3.empty()) return plan_.int16_row ? "depthwise_conv2d/int16x8/avx512" : "depthwise_conv2d/int16x8/avx2";
        return std::string("depthwise_conv2d/int16x8/") + dwq::LoopName(plan_) + (plan_.int16_high ? "" : "/sra");
    }
    return "depthwise_conv2d/avx2";
  }

  Expected<bool> PrepareFast(rt::KernelContext& ctx) override {
    const rt::RtTensor* input = ctx.input(0);
    const rt::RtTensor* filter = ctx.input(1);
    const rt::RtTensor* bias = ctx.input(2);
    const rt::RtTensor* output = ctx.output(0);
    if (!filter->data || (bias && !bias->data)) return false;
    const auto& o = GetOptions<tflite::DepthwiseConv2DOptionsT>(ctx.op());
    dwq::Geom g;
    g.batches = input->dim(0);
    g.in_h = input->dim(1);
    g.in_w = input->dim(2);
    g.channels = input->dim(3);
    g.k_h = filter->dim(1);
    g.k_w = filter->dim(2);
    // Depth multiplier M > 1 (output channel ic·M + m reads input channel ic): each invoke
    // repeats every input channel M times into scratch, and the kernel runs with multiplier 1
    // over the C·M channels (same taps, same per-channel requantization).
    if (g.channels <= 0 || filter->dim(3) % g.channels != 0) return false;
    multiplier_ = filter->dim(3) / g.channels;
    g.channels *= multiplier_;
    RETURN_IF_ERROR(ComputeConvWindow(ctx, o, &g));
    if (g.out_h <= 0 || g.out_w <= 0 || g.channels <= 0) return false;
    if (g.k_h > 16 || (g.k_h - 1) * g.dil_h + 1 > 64) return false;

    const int C = g.channels;
    if (kind_ == DwKind::kInt8 || kind_ == DwKind::kUInt8) {
      dwq::Quant8Layer l;
      ASSIGN_OR_RETURN(const bool takes,
                       dwq::Quant8LayerOf(ctx, *input, *filter, bias, *output, o.fused_activation_function, C, &l));
      if (!takes) return false;
      dwq::PlanQuant8(g, l, avx512_, &plan_);
    } else {
      plan_ = dwq::Plan();
      // 16x8 3x3 filters on AVX-512 VNNI CPUs try the 3x3 loop (natural order, PlanInt16K3).
      plan_.natural = kind_ == DwKind::kInt16 && avx512_ && g.k_h == 3 && g.k_w == 3;
      dwq::BuildPlan(g, filter->data_as<int8_t>(), 0, &plan_);
    }
    switch (kind_) {
      case DwKind::kInt8:
      case DwKind::kUInt8: break;
      case DwKind::kHybrid: {
        RETURN_IF_ERROR(FloatActivation(ctx, o.fused_activation_function, &plan_.fact_min, &plan_.fact_max));
        plan_.weight_scale.resize(C);
        for (int c = 0; c < C; ++c) plan_.weight_scale[c] = WeightScale(*filter, c);
        plan_.kind = dwq::OutKind::kFloat;
        qin_scratch_ = ctx.RequestScratch(static_cast<size_t>(input->num_elements()));
        batch_scale_.assign(g.batches, 0.0f);
        batch_zp_.assign(g.batches, 0);
        break;
      }
      case DwKind::kInt16: {
        PerChannelQuant q = ComputePerChannelQuant(input->scale(), *filter, output->scale(), C);
        plan_.mult16 = std::move(q.multiplier);
        plan_.shift16 = std::move(q.shift);
        RETURN_IF_ERROR(QuantizedActivation(ctx, o.fused_activation_function, *output, &plan_.act_min, &plan_.act_max));
        // The reference accumulates in int64: the int32 sums must not overflow.
        const int8_t* w = filter->data_as<int8_t>();
        for (int c = 0; c < C; ++c) {
          int64_t s = 0;
          for (int t = 0; t < g.k_h * g.k_w; ++t) s += std::abs(int32_t{w[static_cast<size_t>(t) * C + c]});
          if (s * 32768 >= (int64_t{1} << 31)) return false;
        }
        plan_.kind = dwq::OutKind::kInt16;
        if (plan_.natural && !dwq::PlanInt16K3(&plan_, bias ? bias->data_as<int64_t>() : nullptr)) {
          // Outside the 3x3 loop's bounds: the generic loop, in its channel order.
          plan_.natural = false;
          dwq::BuildPlan(g, filter->data_as<int8_t>(), 0, &plan_);
        }
        if (plan_.int16_k3.empty()) dwq::PlanInt16Stage(&plan_, avx512_);
        break;
      }
    }
    RETURN_IF_ERROR(ctx.ReserveSlotScratch(dwq::SlotBytes(plan_)));
    expanded_scratch_ = -1;
    if (multiplier_ > 1) {
      const size_t element = kind_ == DwKind::kInt16 ? 2 : 1;  // hybrid: the quantized int8 input
      expanded_scratch_ = ctx.RequestScratch(static_cast<size_t>(input->num_elements()) * multiplier_ * element);
    }
    return true;
  }

  // The input with every channel repeated multiplier_ times (see PrepareFast).
  template <typename T>
  const T* Expand(rt::KernelContext& ctx, const T* in, int64_t elements) {
    T* out = ctx.Scratch<T>(expanded_scratch_);
    RepeatEach(in, elements, multiplier_, out);
    return out;
  }

  Status InvokeFast(rt::KernelContext& ctx) override {
    const rt::RtTensor* input = ctx.input(0);
    const rt::RtTensor* bias = ctx.input(2);
    rt::RtTensor* output = ctx.output(0);
    if (output->num_elements() == 0) return Status::Ok();
    dwq::Args a;
    a.input = input->data;
    a.input_elements = input->num_elements() * multiplier_;
    if (multiplier_ > 1 && kind_ != DwKind::kHybrid) {
      if (kind_ == DwKind::kInt16)
        a.input = Expand(ctx, input->data_as<int16_t>(), input->num_elements());
      else
        a.input = Expand(ctx, static_cast<const uint8_t*>(input->data), input->num_elements());
    }
    a.input_zero_point = input->zero_point();
    a.output = output->data;
    switch (kind_) {
      case DwKind::kInt8: dwq::Run(ctx.threads(), plan_, a, false, false); break;
      case DwKind::kUInt8: dwq::Run(ctx.threads(), plan_, a, true, false); break;
      case DwKind::kInt16:
        a.input_zero_point = 0;
        a.bias64 = bias ? bias->data_as<int64_t>() : nullptr;
        dwq::Run(ctx.threads(), plan_, a, false, true);
        break;
      case DwKind::kHybrid: {
        int8_t* q = ctx.Scratch<int8_t>(qin_scratch_);
        const int64_t per_batch = int64_t{plan_.g.in_h} * plan_.g.in_w * (plan_.g.channels / multiplier_);
        // The same bytes either way; the vector one is ~20x faster on large inputs and splits
        // them between threads.
        if (avx512_)
          QuantizeRowsAvx512(input->data_as<float>(), plan_.g.batches, per_batch, /*asymmetric=*/true, q,
                             batch_scale_.data(), batch_zp_.data(), &ctx.threads());
        else
          QuantizeRows(input->data_as<float>(), plan_.g.batches, per_batch, /*asymmetric=*/true, q, batch_scale_.data(),
                       batch_zp_.data());
        a.input = multiplier_ > 1 ? Expand(ctx, q, input->num_elements()) : q;
        a.batch_zero_point = batch_zp_.data();
        a.batch_scale = batch_scale_.data();
        a.float_bias = bias ? bias->data_as<float>() : nullptr;
        dwq::Run(ctx.threads(), plan_, a, false, false);
        break;
      }
    }
    return Status::Ok();
  }

 private:
  DwKind kind_;
  int multiplier_ = 1;         // depth multiplier: > 1 runs on the expanded input
  int expanded_scratch_ = -1;  // the expanded input (multiplier_ > 1)
  bool avx512_;  // the CPU has AVX-512 VNNI: the 3x3 loop's plans use its rows
  dwq::Plan plan_;
  int qin_scratch_ = -1;
  std::vector<float> batch_scale_;
  std::vector<int32_t> batch_zp_;
};

}  // namespace

std::unique_ptr<rt::OpKernel> MakeDepthwiseQuant(const rt::KernelCreateContext& cc, RefFactory reference) {
  if (cc.reference_only || !cc.cpu.has_avx2_fma()) return nullptr;
  if (auto as_conv = MakeDepthwiseAsConvQuant(cc, reference)) return as_conv;
  const Tensor* in = cc.input(0);
  const Tensor* w = cc.input(1);
  const Tensor* bias = cc.input(2);
  const Tensor* out = cc.output(0);
  if (!in || !w || !out || !cc.is_constant(1) || (bias && !cc.is_constant(2)) || w->sparsity) return nullptr;
  DwKind kind;
  if (in->type == DType::kInt8 && w->type == DType::kInt8 && out->type == DType::kInt8) {
    kind = DwKind::kInt8;
  } else if (in->type == DType::kUInt8 && w->type == DType::kUInt8 && out->type == DType::kUInt8) {
    kind = DwKind::kUInt8;
  } else if (in->type == DType::kFloat32 && w->type == DType::kInt8 && out->type == DType::kFloat32) {
    kind = DwKind::kHybrid;
  } else if (in->type == DType::kInt16 && w->type == DType::kInt8 && out->type == DType::kInt16) {
    kind = DwKind::kInt16;
  } else {
    return nullptr;
  }
  auto ref = MakeReferenceKernel(cc, reference);
  if (!ref) return nullptr;
  return std::make_unique<DepthwiseQuantKernel>(std::move(ref), kind, cc.cpu.has_avx512_vnni());
}

}  // namespace edgeopt::kernels
