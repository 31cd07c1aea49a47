// The last step of quantized MEAN and SUM (int8 / uint8 / int16), shared by the reference kernel
// (reduce/ref.cc, which documents the formulas) and the fast one (quant_fast/mean_fast.cc): from
// the wrapping int32 sum of the raw stored values of each output to the output values.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/common/kernel_util.h"
#include "kernels/common/quant_utils.h"

namespace edgeopt::kernels {

struct QuantMeanParams {
  float in_scale = 1, out_scale = 1;
  int32_t in_zp = 0, out_zp = 0;
  int32_t count = 1;         // input values per output
  bool hw4d = false;         // keep_dims, rank 4, axis tensor exactly {1,2} or {2,1}
  bool same_params = false;  // equal scales and zero points
};

// The parameters of one MEAN / SUM from its input and output tensors (hw4d left false).
inline QuantMeanParams QuantMeanParamsOf(const rt::RtTensor& in, const rt::RtTensor& out, int64_t count) {
  QuantMeanParams p;
  p.in_scale = in.scale();
  p.out_scale = out.scale();
  p.in_zp = in.zero_point();
  p.out_zp = out.zero_point();
  p.count = static_cast<int32_t>(count);
  p.same_params = in.scale() == out.scale() && in.zero_point() == out.zero_point();
  return p;
}

// The multiplier of the signed 4-D H,W mean (in_scale / out_scale; the reference's
// QuantizeMultiplier); FinishQuantizedMean refuses a shift above 30.
inline void CenteredMeanMultiplier(const QuantMeanParams& p, int32_t* mult, int* shift) {
  QuantizeMultiplier(static_cast<double>(p.in_scale) / static_cast<double>(p.out_scale), mult, shift);
}

template <typename T>
Status FinishQuantizedMean(const rt::KernelContext& ctx, const QuantMeanParams& p, const int32_t* raw_sum, T* y,
                           int64_t n_out) {
  const int32_t qmin = QMin<T>(), qmax = QMax<T>();
  const int32_t n = p.count;
  auto check_shift = [&](int shift) -> Status {
    // Fixed-point multipliers beyond 2^30 mean absurd scale ratios (and undefined shifts).
    if (shift > 30) return ctx.Error("input/output scale ratio is out of range");
    return Status::Ok();
  };
  if (p.hw4d) {
    if constexpr (std::is_same_v<T, uint8_t>) {
      const float num = static_cast<float>(n);
      float temp = p.in_zp * p.in_scale / p.out_scale;
      temp = temp > 0 ? temp + 0.5f : temp - 0.5f;
      const int32_t bias = p.out_zp - static_cast<int32_t>(temp);
      const double real_scale = static_cast<double>(p.in_scale / (num * p.out_scale));
      int32_t mult;
      int shift;
      QuantizeMultiplier(real_scale, &mult, &shift);
      RETURN_IF_ERROR(check_shift(shift));
      for (int64_t o = 0; o < n_out; ++o) {
        const int32_t v = MultiplyByQuantizedMultiplier(raw_sum[o], mult, shift) + bias;
        y[o] = static_cast<T>(std::min(std::max(v, qmin), qmax));
      }
    } else {
      // The sum of (q - in_zp), wrapping like the raw sum.
      const auto centered_offset = static_cast<uint32_t>(n) * static_cast<uint32_t>(p.in_zp);
      int32_t mult;
      int shift;
      CenteredMeanMultiplier(p, &mult, &shift);
      RETURN_IF_ERROR(check_shift(shift));
      // (v +- n/2) / n truncating, computed as a double quotient: |v +- n/2| < 2^32, and for
      // integers a, b with |a| < 2^53 the correctly rounded a / b truncates to the integer
      // quotient (a non-integer a / b lies at least 1/b from every integer, the rounding error is
      // below |a / b| 2^-53 < 1/b). A 32-bit idiv per output made this loop most of the op's time
      // (MobileNetV2's 1280-channel head: ~17 us, the pixel sums ~2 us).
      const double dn = n;
      for (int64_t o = 0; o < n_out; ++o) {
        const auto centered = static_cast<int32_t>(static_cast<uint32_t>(raw_sum[o]) - centered_offset);
        int32_t v = MultiplyByQuantizedMultiplier(centered, mult, shift);
        const int64_t num = v > 0 ? int64_t{v} + n / 2 : int64_t{v} - n / 2;
        v = static_cast<int32_t>(static_cast<double>(num) / dn);
        v += p.out_zp;
        y[o] = static_cast<T>(std::min(std::max(v, qmin), qmax));
      }
    }
    return Status::Ok();
  }
  if (p.same_params) {
    for (int64_t o = 0; o < n_out; ++o) y[o] = static_cast<T>(raw_sum[o] / n);
    return Status::Ok();
  }
  const float scale = p.in_scale / p.out_scale;
  const float bias = -p.in_zp * scale;
  for (int64_t o = 0; o < n_out; ++o) {
    const float mean = static_cast<float>(raw_sum[o]) / static_cast<float>(n);
    float r = std::min(std::round(mean * scale + bias) + p.out_zp, static_cast<float>(qmax));
    r = std::max(r, static_cast<float>(qmin));
    y[o] = static_cast<T>(r);
  }
  return Status::Ok();
}

// The last step of quantized SUM (8- and 16-bit) from the same wrapping int32 sums: equal
// parameters: the sum modulo the type (the reference adds in the type, wrapping); otherwise
// round(sum * s + (-in_zp * s * count)) + out_zp in float, s = in_scale / out_scale, cast to the
// type WITHOUT saturation (2.9 wraps).
template <typename T>
void FinishQuantizedSum(const QuantMeanParams& p, const int32_t* raw_sum, T* y, int64_t n) {
  if (p.same_params) {
    for (int64_t o = 0; o < n; ++o) y[o] = static_cast<T>(raw_sum[o]);
    return;
  }
  const float scale = p.in_scale / p.out_scale;
  const float bias = -p.in_zp * scale * static_cast<float>(p.count);
  for (int64_t o = 0; o < n; ++o) {
    const int32_t v = static_cast<int32_t>(std::round(raw_sum[o] * scale + bias)) + p.out_zp;
    y[o] = static_cast<T>(v);  // no saturation, as 2.9
  }
}

}  // namespace edgeopt::kernels
