#include "kernels/common/hybrid_quant.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace edgeopt::kernels {

namespace {

// The row's minimum and maximum (0 and 0 for an empty row).
void RowMinMax(const float* values, int64_t n, float* lo, float* hi) {
  *lo = *hi = 0;
  if (n > 0) {
    const auto mm = std::minmax_element(values, values + n);
    *lo = *mm.first;
    *hi = *mm.second;
  }
}

}  // namespace

bool SymmetricParams(float lo, float hi, float* scale, float* inverse) {
  const float range = std::max(std::fabs(lo), std::fabs(hi));
  if (range == 0) {
    *scale = 1;
    return false;
  }
  constexpr int32_t kScale = 127;
  *scale = range / kScale;
  *inverse = kScale / range;
  return true;
}

void SymmetricQuantizeFloats(const float* values, int64_t n, int8_t* quantized, float* scale) {
  float lo, hi;
  RowMinMax(values, n, &lo, &hi);
  float inverse;
  if (!SymmetricParams(lo, hi, scale, &inverse)) {
    std::memset(quantized, 0, static_cast<size_t>(n));
    return;
  }
  constexpr int32_t kScale = 127;
  for (int64_t i = 0; i < n; ++i) {
    const auto q = static_cast<int32_t>(std::round(values[i] * inverse));
    quantized[i] = static_cast<int8_t>(std::clamp(q, -kScale, kScale));
  }
}

bool AsymmetricParams(float lo, float hi, float* scale, int32_t* zero_point, float* inverse) {
  constexpr int32_t kMin = -128, kMax = 127;
  constexpr double qmin = kMin, qmax = kMax;
  const double rmin = std::fmin(0.0, static_cast<double>(lo));
  const double rmax = std::fmax(0.0, static_cast<double>(hi));
  if (rmin == rmax) {
    *scale = 1;
    *zero_point = 0;
    return false;
  }
  // The zero point comes from whichever range end gives the smaller rounding error (LiteRT).
  const double s = (rmax - rmin) / (qmax - qmin);
  const double zp_from_min = qmin - rmin / s;
  const double zp_from_max = qmax - rmax / s;
  const double err_min = std::fabs(qmin) + std::fabs(rmin / s);
  const double err_max = std::fabs(qmax) + std::fabs(rmax / s);
  const double zp = err_min < err_max ? zp_from_min : zp_from_max;
  int32_t nudged;
  if (zp <= qmin) {
    nudged = kMin;
  } else if (zp >= qmax) {
    nudged = kMax;
  } else {
    nudged = static_cast<int32_t>(std::round(zp));
  }
  *scale = static_cast<float>(s);
  *zero_point = nudged;
  *inverse = static_cast<float>(1.0 / static_cast<double>(*scale));  // as LiteRT: in double
  return true;
}

void AsymmetricQuantizeFloats(const float* values, int64_t n, int8_t* quantized, float* scale, int32_t* zero_point) {
  constexpr int32_t kMin = -128, kMax = 127;
  float lo, hi;
  RowMinMax(values, n, &lo, &hi);
  float inverse;
  if (!AsymmetricParams(lo, hi, scale, zero_point, &inverse)) {
    std::memset(quantized, 0, static_cast<size_t>(n));
    return;
  }
  const int32_t nudged = *zero_point;
  for (int64_t i = 0; i < n; ++i) {
    const auto q = static_cast<int32_t>(std::round(static_cast<float>(nudged) + values[i] * inverse));
    quantized[i] = static_cast<int8_t>(std::clamp(q, kMin, kMax));
  }
}

void QuantizeRows(const float* values, int64_t rows, int64_t cols, bool asymmetric, int8_t* quantized, float* scales,
                  int32_t* zero_points) {
  for (int64_t r = 0; r < rows; ++r) {
    if (asymmetric) {
      AsymmetricQuantizeFloats(values + r * cols, cols, quantized + r * cols, &scales[r], &zero_points[r]);
    } else {
      SymmetricQuantizeFloats(values + r * cols, cols, quantized + r * cols, &scales[r]);
      if (zero_points) zero_points[r] = 0;
    }
  }
}

bool HybridDequantAllowed() {
  const char* e = std::getenv("EDGEOPT_HYBRID_DEQUANT");
  return !(e && std::strcmp(e, "0") == 0);
}

}  // namespace edgeopt::kernels
