// The float activation loops of float_act.h written once over a vector type `V` that each ISA
// file defines (in an anonymous namespace, so the instantiations of the two files never
// collide). V provides: kLanes, F, Load, Store, Set, Add, Sub, Mul, Div, Fma, Max(a, b) =
// a > b ? a : b, Min(a, b) = a < b ? a : b (both give b when either is NaN, like the
// reference's std::max / std::min with the operands in this order), SelectGt(a, b, x, y) =
// a > b ? x : y, SelectLt, SelectEq, SelectNan(a, x, y) = a is NaN ? x : y, Round (to
// nearest), Floor, Ceil, Sqrt, Pow2I (2^n for an integral n in [-126, 127]), Abs, Neg (sign
// flipped), CopySign(magnitude, sign), Frexp(x, &e) (x = m 2^e, m in [0.5, 1), for finite
// x > 0 including denormals; anything for other x). Optionally LoadN(p, m) / StoreN(p, v, m):
// the first m (< kLanes) lanes, the others zero / untouched (else tails go through a buffer).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/activations/float_act.h"

namespace edgeopt::kernels::activations::simd {

// e^r for x = n ln2 + r, |r| <= ln2 / 2: 1 + r + r^2 P(r) with Cephes' degree-5 P (about
// 1 ulp); n (integral) in *n. NaN propagates.
template <class V>
typename V::F ExpReduced(typename V::F x, typename V::F* n_out) {
  using F = typename V::F;
  const F n = V::Round(V::Mul(x, V::Set(1.44269504088896341f)));
  F r = V::Fma(n, V::Set(-0.693359375f), x);
  r = V::Fma(n, V::Set(2.12194440e-4f), r);
  F p = V::Set(1.9875691500e-4f);
  p = V::Fma(p, r, V::Set(1.3981999507e-3f));
  p = V::Fma(p, r, V::Set(8.3334519073e-3f));
  p = V::Fma(p, r, V::Set(4.1665795894e-2f));
  p = V::Fma(p, r, V::Set(1.6666665459e-1f));
  p = V::Fma(p, r, V::Set(5.0000001201e-1f));
  *n_out = n;
  return V::Add(V::Fma(p, V::Mul(r, r), r), V::Set(1.0f));
}

// e^x for x in [-87.3, 88] (callers clamp; NaN propagates): e^r times 2^n.
template <class V>
typename V::F Exp(typename V::F x) {
  typename V::F n;
  const auto er = ExpReduced<V>(x, &n);
  return V::Mul(er, V::Pow2I(n));
}

// e^x over all floats, as std::exp but 0 below x = -87.3 (where std::exp's results are
// denormals under 1.2e-38, within the absolute bound): 2^n applied in two factors (each within
// the exponent range) so that results overflow to inf as they should. x is clamped to
// [-87.3, 89] first, so no step makes a denormal: the EXP loop took 2.5-3.8x its time on Zen 5
// for inputs below -87 (attention masks of -1e9 through EXP in exported softmaxes). NaN stays NaN.
template <class V>
typename V::F ExpFull(typename V::F x) {
  using F = typename V::F;
  F n;
  const F er = ExpReduced<V>(V::Min(V::Set(89.0f), V::Max(V::Set(-87.3f), x)), &n);
  const F n1 = V::Floor(V::Mul(n, V::Set(0.5f)));
  return V::SelectLt(x, V::Set(-87.3f), V::Set(0.0f), V::Mul(V::Mul(er, V::Pow2I(n1)), V::Pow2I(V::Sub(n, n1))));
}

// ln x as std::log (Cephes' logf): x = m 2^e with m in [sqrt(1/2), sqrt(2)), ln x = e ln 2 +
// ln m, ln m from a degree-9 polynomial in m - 1; denormals through V::Frexp. Then the special
// values: -inf at +-0, NaN below 0 and for NaN, inf at inf.
template <class V>
typename V::F Log(typename V::F x) {
  using F = typename V::F;
  F e;
  F m = V::Frexp(x, &e);  // x = m 2^e, m in [0.5, 1) for finite x > 0
  const F small = V::SelectLt(m, V::Set(0.707106781186547524f), V::Set(1.0f), V::Set(0.0f));
  e = V::Sub(e, small);
  m = V::Sub(V::Add(m, V::Mul(m, small)), V::Set(1.0f));  // m < sqrt(1/2): 2m - 1, else m - 1
  const F z = V::Mul(m, m);
  F y = V::Set(7.0376836292e-2f);
  y = V::Fma(y, m, V::Set(-1.1514610310e-1f));
  y = V::Fma(y, m, V::Set(1.1676998740e-1f));
  y = V::Fma(y, m, V::Set(-1.2420140846e-1f));
  y = V::Fma(y, m, V::Set(1.4249322787e-1f));
  y = V::Fma(y, m, V::Set(-1.6668057665e-1f));
  y = V::Fma(y, m, V::Set(2.0000714765e-1f));
  y = V::Fma(y, m, V::Set(-2.4999993993e-1f));
  y = V::Fma(y, m, V::Set(3.3333331174e-1f));
  y = V::Mul(V::Mul(y, m), z);
  y = V::Fma(e, V::Set(-2.12194440e-4f), y);
  y = V::Fma(z, V::Set(-0.5f), y);
  F r = V::Add(m, y);
  r = V::Fma(e, V::Set(0.693359375f), r);
  const float inf = std::numeric_limits<float>::infinity();
  r = V::SelectEq(x, V::Set(inf), x, r);
  r = V::SelectLt(x, V::Set(0.0f), V::Set(std::numeric_limits<float>::quiet_NaN()), r);
  r = V::SelectEq(x, V::Set(0.0f), V::Set(-inf), r);
  return V::SelectNan(x, x, r);
}

template <class V>
typename V::F Logistic(typename V::F x) {
  // e^-x with -x clamped to [-87.3, 87.3]: beyond, 1 / (1 + e) is 1, or below 2^-126, where
  // the result is 0 (the reference's denormals there, up to 1.2e-38, are within the absolute
  // bound; where its e^-x overflows, below -ln(FLT_MAX), it is 1 / (1 + inf) = 0 too), so that
  // x * LOGISTIC(x) there is -0 (and NaN at -inf). No step makes a denormal: a division with a
  // denormal quotient, even in a lane the select drops, took 4.5x the time of the whole loop on
  // this Zen 5 (MediaPipe's segmentation heads: background logits below -87).
  const auto e = Exp<V>(V::Min(V::Set(87.3f), V::Max(V::Set(-87.3f), V::Sub(V::Set(0.0f), x))));
  return V::SelectLt(x, V::Set(-87.3f), V::Set(0.0f), V::Div(V::Set(1.0f), V::Add(V::Set(1.0f), e)));
}

template <class V>
typename V::F Tanh(typename V::F x) {
  using F = typename V::F;
  const F a = V::Abs(x);
  // |x| < 0.25: odd Taylor series to x^9 (the next term is below 1e-8 relative).
  const F z = V::Mul(x, x);
  F s = V::Set(62.0f / 2835.0f);
  s = V::Fma(s, z, V::Set(-17.0f / 315.0f));
  s = V::Fma(s, z, V::Set(2.0f / 15.0f));
  s = V::Fma(s, z, V::Set(-1.0f / 3.0f));
  const F small = V::Fma(V::Mul(s, z), x, x);
  // Otherwise (1 - e) / (1 + e) with e = e^(-2|x|) <= e^-0.5: no cancellation worth a bit.
  const F e = Exp<V>(V::Max(V::Set(-87.3f), V::Mul(a, V::Set(-2.0f))));
  const F large = V::CopySign(V::Div(V::Sub(V::Set(1.0f), e), V::Add(V::Set(1.0f), e)), x);
  return V::SelectLt(a, V::Set(0.25f), small, large);
}

// GELU, exact form (float_act.h): with z = |x| / sqrt 2, t = 1 / (1 + p z),
// erfc(z) = q = t (a1 + t (a2 + t (a3 + t (a4 + t a5)))) e^(-z^2); x/2 (2 - q) for x >= 0, x/2 q
// for x < 0. Beyond z = 9, erfc(z) < 5e-37 and q is 0: computed there, q and its factors
// underflowed to denormals, and each such multiply took the loop to 2.9x its time (Zen 5).
template <class V>
typename V::F Gelu(typename V::F x) {
  using F = typename V::F;
  const F z_all = V::Mul(V::Abs(x), V::Set(0.70710678118654752f));
  const F z = V::Min(V::Set(9.0f), z_all);  // NaN stays NaN (Min gives its second operand)
  const F t = V::Div(V::Set(1.0f), V::Fma(z, V::Set(0.3275911f), V::Set(1.0f)));
  F poly = V::Set(1.061405429f);
  poly = V::Fma(poly, t, V::Set(-1.453152027f));
  poly = V::Fma(poly, t, V::Set(1.421413741f));
  poly = V::Fma(poly, t, V::Set(-0.284496736f));
  poly = V::Fma(poly, t, V::Set(0.254829592f));
  const F e = Exp<V>(V::Sub(V::Set(0.0f), V::Mul(z, z)));  // z^2 <= 81: e^-81 is a normal float
  const F q = V::SelectGt(z_all, V::Set(9.0f), V::Set(0.0f), V::Mul(V::Mul(poly, t), e));
  const F half_x = V::Mul(x, V::Set(0.5f));
  return V::SelectLt(x, V::Set(0.0f), V::Mul(half_x, q), V::Mul(half_x, V::Sub(V::Set(2.0f), q)));
}

// ELU (float_act.h): x unless x < 0; e^x - 1 as a series near 0, the vectorized exp beyond.
template <class V>
typename V::F Elu(typename V::F x) {
  using F = typename V::F;
  F s = V::Set(1.0f / 40320.0f);
  s = V::Fma(s, x, V::Set(1.0f / 5040.0f));
  s = V::Fma(s, x, V::Set(1.0f / 720.0f));
  s = V::Fma(s, x, V::Set(1.0f / 120.0f));
  s = V::Fma(s, x, V::Set(1.0f / 24.0f));
  s = V::Fma(s, x, V::Set(1.0f / 6.0f));
  s = V::Fma(s, x, V::Set(0.5f));
  const F series = V::Fma(V::Mul(s, x), x, x);  // x + x^2 (1/2 + x (1/6 + ...))
  const F big = V::Sub(Exp<V>(V::Max(V::Set(-87.3f), x)), V::Set(1.0f));
  const F neg = V::SelectLt(x, V::Set(-0.35f), big, series);
  return V::SelectLt(x, V::Set(0.0f), neg, x);  // the reference's x < 0 ? expm1(x) : x (-0, NaN kept)
}

// GELU, approximate form, with the vectorized tanh.
template <class V>
typename V::F GeluApprox(typename V::F x) {
  const auto inner = V::Mul(V::Set(0.79788456080286536f), V::Fma(V::Mul(V::Mul(x, x), x), V::Set(0.044715f), x));
  return V::Mul(V::Mul(x, V::Set(0.5f)), V::Add(V::Set(1.0f), Tanh<V>(inner)));
}

template <class V>
typename V::F Apply(const FloatActParams& p, typename V::F x) {
  switch (p.act) {
    case FloatAct::kClamp: return V::Min(V::Set(p.hi), V::Max(V::Set(p.lo), x));
    case FloatAct::kLeakyRelu: return V::SelectGt(x, V::Set(0.0f), x, V::Mul(x, V::Set(p.alpha)));
    case FloatAct::kHardSwish: {
      // x * min(6, max(0, x + 3)) / 6, as the reference, operation by operation.
      const auto c = V::Min(V::Max(V::Add(x, V::Set(3.0f)), V::Set(0.0f)), V::Set(6.0f));
      return V::Div(V::Mul(x, c), V::Set(6.0f));
    }
    case FloatAct::kLogistic: return Logistic<V>(x);
    case FloatAct::kTanh: return Tanh<V>(x);
    case FloatAct::kSqrt: return V::Sqrt(x);
    case FloatAct::kRsqrt: return V::Div(V::Set(1.0f), V::Sqrt(x));
    case FloatAct::kAbs: return V::Abs(x);
    case FloatAct::kNeg: return V::Neg(x);
    case FloatAct::kFloor: return V::Floor(x);
    case FloatAct::kCeil: return V::Ceil(x);
    case FloatAct::kSquare: return V::Mul(x, x);
    case FloatAct::kExp: return ExpFull<V>(x);
    case FloatAct::kLog: return Log<V>(x);
    case FloatAct::kGelu: return Gelu<V>(x);
    case FloatAct::kGeluApprox: return GeluApprox<V>(x);
    case FloatAct::kElu: return Elu<V>(x);
    case FloatAct::kSilu: return V::Mul(x, Logistic<V>(x));
  }
  return x;
}

template <class V, FloatAct kAct>
void Loop(const FloatActParams& p, const float* x, float* y, int64_t n) {
  FloatActParams q = p;
  q.act = kAct;  // a constant switch in the inlined Apply
  int64_t i = 0;
  for (; i + 2 * V::kLanes <= n; i += 2 * V::kLanes) {
    const auto a = Apply<V>(q, V::Load(x + i));
    const auto b = Apply<V>(q, V::Load(x + i + V::kLanes));
    V::Store(y + i, a);
    V::Store(y + i + V::kLanes, b);
  }
  for (; i < n; i += V::kLanes) {
    const int64_t m = n - i < V::kLanes ? n - i : V::kLanes;
    if constexpr (requires { V::LoadN(x, m); }) {
      // Masked lanes (AVX-512): the rest of a short row without a copy through memory.
      V::StoreN(y + i, Apply<V>(q, V::LoadN(x + i, m)), m);
    } else {
      float buf[V::kLanes] = {};
      std::memcpy(buf, x + i, static_cast<size_t>(m) * sizeof(float));
      V::Store(buf, Apply<V>(q, V::Load(buf)));
      std::memcpy(y + i, buf, static_cast<size_t>(m) * sizeof(float));
    }
  }
}

template <class V>
void Run(const FloatActParams& p, const float* x, float* y, int64_t n) {
  switch (p.act) {
    case FloatAct::kClamp: return Loop<V, FloatAct::kClamp>(p, x, y, n);
    case FloatAct::kLeakyRelu: return Loop<V, FloatAct::kLeakyRelu>(p, x, y, n);
    case FloatAct::kHardSwish: return Loop<V, FloatAct::kHardSwish>(p, x, y, n);
    case FloatAct::kLogistic: return Loop<V, FloatAct::kLogistic>(p, x, y, n);
    case FloatAct::kTanh: return Loop<V, FloatAct::kTanh>(p, x, y, n);
    case FloatAct::kSqrt: return Loop<V, FloatAct::kSqrt>(p, x, y, n);
    case FloatAct::kRsqrt: return Loop<V, FloatAct::kRsqrt>(p, x, y, n);
    case FloatAct::kAbs: return Loop<V, FloatAct::kAbs>(p, x, y, n);
    case FloatAct::kNeg: return Loop<V, FloatAct::kNeg>(p, x, y, n);
    case FloatAct::kFloor: return Loop<V, FloatAct::kFloor>(p, x, y, n);
    case FloatAct::kCeil: return Loop<V, FloatAct::kCeil>(p, x, y, n);
    case FloatAct::kSquare: return Loop<V, FloatAct::kSquare>(p, x, y, n);
    case FloatAct::kExp: return Loop<V, FloatAct::kExp>(p, x, y, n);
    case FloatAct::kLog: return Loop<V, FloatAct::kLog>(p, x, y, n);
    case FloatAct::kGelu: return Loop<V, FloatAct::kGelu>(p, x, y, n);
    case FloatAct::kGeluApprox: return Loop<V, FloatAct::kGeluApprox>(p, x, y, n);
    case FloatAct::kElu: return Loop<V, FloatAct::kElu>(p, x, y, n);
    case FloatAct::kSilu: return Loop<V, FloatAct::kSilu>(p, x, y, n);
  }
}

// PRELU run (float_act.h): y = x >= 0 ? x : x * alpha, n elements against n alpha values.
template <class V>
void PreluRun(const float* x, const float* alpha, float* y, int64_t n) {
  const auto zero = V::Set(0.0f);
  int64_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) {
    const auto v = V::Load(x + i);
    V::Store(y + i, V::SelectGe(v, zero, v, V::Mul(v, V::Load(alpha + i))));
  }
  for (; i < n; ++i) y[i] = x[i] >= 0.0f ? x[i] : x[i] * alpha[i];
}

// SOFTMAX / LOG_SOFTMAX rows (float_act.h). Partial vectors go through a buffer padded with
// `fill`, as Loop's tails.
template <class V>
void SoftmaxRows(const SoftmaxParams& p, const float* x, float* y, int64_t rows, int64_t depth) {
  using F = typename V::F;
  constexpr int L = V::kLanes;
  const int64_t whole = depth / L * L, tail = depth - whole;
  auto padded = [&](const float* src, float fill, float* buf) {
    for (int j = 0; j < L; ++j) buf[j] = j < tail ? src[j] : fill;
    return V::Load(buf);
  };
  const F beta = V::Set(p.log ? 1.0f : p.beta), lo = V::Set(-87.3f), hi = V::Set(88.0f), zero = V::Set(0.0f);
  // e^((v - max) * beta): 0 below Exp's range (the reference gives 0 or a denormal below
  // 2^-126; a row of only -inf then sums to 0 and gives NaN as the reference), NaN stays NaN.
  auto exp_of = [&](F v, F max) {
    const F t = V::Mul(V::Sub(v, max), beta);
    return V::SelectLt(t, lo, zero, Exp<V>(V::Min(hi, V::Max(lo, t))));
  };
  float buf[L], lanes[L];
  for (int64_t r = 0; r < rows; ++r, x += depth, y += depth) {
    // The maximum: Max(v, m) keeps m when v is NaN, as the reference's std::max(m, v).
    F vmax = V::Set(std::numeric_limits<float>::lowest());
    for (int64_t j = 0; j < whole; j += L) vmax = V::Max(V::Load(x + j), vmax);
    if (tail) vmax = V::Max(padded(x + whole, std::numeric_limits<float>::lowest(), buf), vmax);
    V::Store(lanes, vmax);
    float max = lanes[0];
    for (int j = 1; j < L; ++j) max = std::max(max, lanes[j]);
    const F m = V::Set(max);
    F vsum = zero;
    for (int64_t j = 0; j < whole; j += L) {
      const F e = exp_of(V::Load(x + j), m);
      if (!p.log) V::Store(y + j, e);
      vsum = V::Add(vsum, e);
    }
    if (tail) {
      // The padding lanes (the maximum: e^0) are dropped before summing.
      const F e = exp_of(padded(x + whole, max, buf), m);
      V::Store(buf, e);
      if (!p.log)
        for (int j = 0; j < tail; ++j) y[whole + j] = buf[j];
      for (int j = static_cast<int>(tail); j < L; ++j) buf[j] = 0.0f;
      vsum = V::Add(vsum, V::Load(buf));
    }
    V::Store(lanes, vsum);
    float sum = 0.0f;
    for (int j = 0; j < L; ++j) sum += lanes[j];
    if (p.log) {
      // (x - max) - log(sum), operation by operation as the reference.
      const float log_sum = std::log(sum);
      const F vlog = V::Set(log_sum);
      for (int64_t j = 0; j < whole; j += L) V::Store(y + j, V::Sub(V::Sub(V::Load(x + j), m), vlog));
      for (int64_t j = whole; j < depth; ++j) y[j] = x[j] - max - log_sum;
    } else {
      const float inv = 1.0f / sum;
      const F vinv = V::Set(inv);
      for (int64_t j = 0; j < whole; j += L) V::Store(y + j, V::Mul(V::Load(y + j), vinv));
      for (int64_t j = whole; j < depth; ++j) y[j] *= inv;
    }
  }
}

}  // namespace edgeopt::kernels::activations::simd
