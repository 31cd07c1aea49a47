// The float32 activation fast paths (float_act.cc, float_act_avx2.cc, float_act_avx512.cc).
// - Every loop (portable, AVX2, AVX-512) against the reference formulas on a dense sweep of
//   float bit patterns in [-100, 100] plus +-0, +-inf, NaN, denormals and huge values:
//   clamps, LEAKY_RELU, HARD_SWISH, SQRT, RSQRT, ABS, NEG, FLOOR, CEIL and SQUARE bit for bit
//   (NaN and the sign of zero included); LOGISTIC, TANH, EXP and LOG within float_act.h's
//   stated bounds, with the measured maximum printed. The sweep also spans every exponent.
// - The softmax loops against the reference rows (float_act.h's bound, specials as NaN).
// - The kernels in graphs against the reference kernels: every op (SOFTMAX and LOG_SOFTMAX
//   too), odd sizes (tails that are not a multiple of 8 or 16), sizes split over 2 threads,
//   AVX-512 and AVX2 variants.
#include "kernels/activations/float_act.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>

#include "graph/builder.h"
#include "runtime/cpu.h"
#include "support/fast_vs_reference.h"

namespace edgeopt {
namespace {

using kernels::activations::FloatAct;
using kernels::activations::FloatActFn;
using kernels::activations::FloatActParams;

float Reference(const FloatActParams& p, float x) {
  switch (p.act) {
    case FloatAct::kClamp: return std::min(std::max(x, p.lo), p.hi);
    case FloatAct::kLeakyRelu: return x > 0 ? x : x * p.alpha;
    case FloatAct::kHardSwish: return x * std::min(6.f, std::max(0.f, x + 3.f)) / 6.f;
    case FloatAct::kLogistic: return 1.0f / (1.0f + std::exp(-x));
    case FloatAct::kSilu: return x * (1.0f / (1.0f + std::exp(-x)));
    case FloatAct::kTanh: return std::tanh(x);
    case FloatAct::kSqrt: return std::sqrt(x);
    case FloatAct::kRsqrt: return 1.f / std::sqrt(x);
    case FloatAct::kAbs: return std::fabs(x);
    case FloatAct::kNeg: return -x;
    case FloatAct::kFloor: return std::floor(x);
    case FloatAct::kCeil: return std::ceil(x);
    case FloatAct::kSquare: return x * x;
    case FloatAct::kExp: return std::exp(x);
    case FloatAct::kLog: return std::log(x);
    case FloatAct::kElu: return x < 0.0f ? std::expm1(x) : x;
    case FloatAct::kGelu: return 0.5f * x * (1.f + std::erf(x * static_cast<float>(M_SQRT1_2)));
    case FloatAct::kGeluApprox:
      return 0.5f * x * (1.f + std::tanh(static_cast<float>(M_2_SQRTPI * M_SQRT1_2) * (x + 0.044715f * x * x * x)));
  }
  return 0;
}

// The stated error bound (float_act.h) of the acts computed by approximation; none for the
// bit-exact ones.
struct ApproxBound {
  const char* name;
  double bound;
  bool per_x;  // the error relative to x (GELU), else to the reference result
};
std::optional<ApproxBound> BoundOf(FloatAct act) {
  namespace fa = kernels::activations;
  switch (act) {
    case FloatAct::kLogistic: return ApproxBound{"logistic", fa::kLogisticMaxRelError, false};
    case FloatAct::kTanh: return ApproxBound{"tanh", fa::kTanhMaxRelError, false};
    case FloatAct::kSilu: return ApproxBound{"silu", fa::kSiluMaxErrorPerX, true};
    case FloatAct::kExp: return ApproxBound{"exp", fa::kExpMaxRelError, false};
    case FloatAct::kLog: return ApproxBound{"log", fa::kLogMaxRelError, false};
    case FloatAct::kElu: return ApproxBound{"elu", fa::kEluMaxRelError, false};
    case FloatAct::kGelu: return ApproxBound{"gelu", fa::kGeluMaxErrorPerX, true};
    case FloatAct::kGeluApprox: return ApproxBound{"gelu (approximate)", fa::kGeluMaxErrorPerX, true};
    default: return std::nullopt;
  }
}

std::vector<float> Sweep() {
  std::vector<float> v;
  // Every 509th bit pattern of [0, 100] and its negative.
  uint32_t hi_bits;
  const float hundred = 100.0f;
  std::memcpy(&hi_bits, &hundred, 4);
  for (uint32_t b = 0; b <= hi_bits; b += 509) {
    float f;
    std::memcpy(&f, &b, 4);
    v.push_back(f);
    v.push_back(-f);
  }
  // Every 65537th bit pattern of all finite positive floats and its negative (LOG's and EXP's
  // whole ranges).
  for (uint32_t b = 0; b < 0x7F800000u; b += 65537) {
    float f;
    std::memcpy(&f, &b, 4);
    v.push_back(f);
    v.push_back(-f);
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float f : {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                  std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min(),
                  std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(), 1e30f, -1e30f, 88.0f, -88.0f,
                  87.5f, -87.5f, 0.25f, -0.25f, 0.2499999f, -3.0f, 3.0f, -6.0f, 6.0f, 1.0f, -1.0f})
    v.push_back(f);
  return v;
}

struct Loop {
  const char* name;
  FloatActFn fn;
  bool available;
};

std::vector<Loop> Loops() {
  return {{"portable", kernels::activations::FloatActPortable, true},
          {"avx2", kernels::activations::FloatActAvx2, rt::Cpu().has_avx2_fma()},
          {"avx512", kernels::activations::FloatActAvx512, rt::Cpu().has_avx512()}};
}

std::vector<FloatActParams> AllParams() {
  std::vector<FloatActParams> ps;
  const float inf = std::numeric_limits<float>::infinity();
  for (auto [lo, hi] : {std::pair{0.f, inf}, {0.f, 6.f}, {-1.f, 1.f}, {0.f, 1.f}}) ps.push_back({FloatAct::kClamp, lo, hi, 0});
  ps.push_back({FloatAct::kLeakyRelu, 0, 0, 0.2f});
  ps.push_back({FloatAct::kLeakyRelu, 0, 0, -1.5f});
  ps.push_back({FloatAct::kHardSwish, 0, 0, 0});
  ps.push_back({FloatAct::kLogistic, 0, 0, 0});
  ps.push_back({FloatAct::kTanh, 0, 0, 0});
  for (FloatAct a : {FloatAct::kSqrt, FloatAct::kRsqrt, FloatAct::kAbs, FloatAct::kNeg, FloatAct::kFloor, FloatAct::kCeil,
                     FloatAct::kSquare, FloatAct::kExp, FloatAct::kLog, FloatAct::kGelu, FloatAct::kGeluApprox,
                     FloatAct::kElu, FloatAct::kSilu})
    ps.push_back({a, 0, 0, 0});
  return ps;
}

TEST(FloatActLoops, SweepAgainstReferenceFormulas) {
  const std::vector<float> x = Sweep();
  std::vector<float> y(x.size());
  for (const Loop& loop : Loops()) {
    if (!loop.available) continue;
    for (const FloatActParams& p : AllParams()) {
      const std::optional<ApproxBound> approx = BoundOf(p.act);
      const bool exact = !approx;
      const char* measure = approx && approx->per_x ? "error / |x|" : "relative error";
      // Odd offsets and lengths: unaligned starts and tails of every size.
      for (size_t off : {size_t{0}, size_t{3}}) {
        loop.fn(p, x.data() + off, y.data() + off, static_cast<int64_t>(x.size() - off));
        double max_rel = 0;
        int64_t bad = 0;
        for (size_t i = off; i < x.size(); ++i) {
          const float r = Reference(p, x[i]);
          if (exact) {
            if (std::memcmp(&r, &y[i], 4) != 0 && !(std::isnan(r) && std::isnan(y[i]))) {
              if (bad++ < 3)
                ADD_FAILURE() << loop.name << " act " << static_cast<int>(p.act) << " x=" << x[i] << ": " << y[i]
                              << " vs " << r;
            }
            continue;
          }
          if (y[i] == r) continue;  // infinities and exact values
          if (std::isnan(r) || std::isnan(y[i])) {
            if (std::isnan(r) != std::isnan(y[i]) && bad++ < 3)
              ADD_FAILURE() << loop.name << " x=" << x[i] << ": " << y[i] << " vs " << r;
            continue;
          }
          const double err = std::fabs(static_cast<double>(y[i]) - r);
          if (err <= kernels::activations::kFloatActMaxAbsError) continue;
          const double rel = err / std::fabs(static_cast<double>(approx->per_x ? x[i] : r));
          max_rel = std::max(max_rel, rel);
          if (!(rel <= approx->bound) && bad++ < 3)
            ADD_FAILURE() << loop.name << " " << approx->name << " x=" << x[i] << ": " << y[i] << " vs " << r << " ("
                          << measure << " " << rel << ")";
        }
        EXPECT_EQ(bad, 0) << loop.name << " act " << static_cast<int>(p.act);
        if (!exact && off == 0)
          std::printf("[ info ] %s %s: max %s %.3g over %zu values\n", loop.name, approx->name, measure, max_rel,
                      x.size());
      }
    }
  }
}

// The vector LOGISTIC, SILU, TANH, ELU, GELU and EXP never return a denormal for inputs that are not
// denormals (the results where the reference has denormals, below 1.2e-38, are 0): computing
// one, even in a lane a select then drops, made these loops 3-4.5x slower on AMD Zen 5
// (MediaPipe's segmentation sigmoid over background logits below -87). Every input from -200
// to 200 in steps of 1/64, and the extremes.
TEST(FloatActLoops, NoDenormalResults) {
  std::vector<float> x;
  for (int i = -200 * 64; i <= 200 * 64; ++i) x.push_back(static_cast<float>(i) / 64.0f);
  for (float f : {1e30f, -1e30f, std::numeric_limits<float>::max(), -std::numeric_limits<float>::max()}) x.push_back(f);
  std::vector<float> y(x.size());
  for (const Loop& loop : Loops()) {
    if (!loop.available || std::string(loop.name) == "portable") continue;  // the portable loop is the reference
    for (FloatAct a : {FloatAct::kLogistic, FloatAct::kSilu, FloatAct::kTanh, FloatAct::kElu, FloatAct::kGelu,
                       FloatAct::kGeluApprox, FloatAct::kExp}) {
      const FloatActParams p{a, 0, 0, 0};
      loop.fn(p, x.data(), y.data(), static_cast<int64_t>(x.size()));
      int bad = 0;
      for (size_t i = 0; i < x.size(); ++i)
        if (std::fpclassify(y[i]) == FP_SUBNORMAL && bad++ < 3)
          ADD_FAILURE() << loop.name << " act " << static_cast<int>(a) << " x=" << x[i] << ": denormal " << y[i];
    }
  }
}

// SOFTMAX / LOG_SOFTMAX rows as the reference kernel computes them (ref_softmax.cc).
void ReferenceSoftmax(const kernels::activations::SoftmaxParams& p, const float* x, float* y, int64_t depth) {
  float max = std::numeric_limits<float>::lowest();
  for (int64_t j = 0; j < depth; ++j) max = std::max(max, x[j]);
  float sum = 0.f;
  if (p.log) {
    for (int64_t j = 0; j < depth; ++j) sum += std::exp(x[j] - max);
    const float log_sum = std::log(sum);
    for (int64_t j = 0; j < depth; ++j) y[j] = x[j] - max - log_sum;
    return;
  }
  for (int64_t j = 0; j < depth; ++j) sum += (y[j] = std::exp((x[j] - max) * p.beta));
  for (int64_t j = 0; j < depth; ++j) y[j] *= 1.f / sum;
}

// Every softmax loop against the reference rows: depths around the vector widths and up to
// 1001 classes, several betas, values spread so that some terms underflow; rows holding NaN,
// +inf or only -inf (NaN rows in both), and -inf among finite values (a zero probability).
TEST(FloatSoftmaxLoops, MatchTheReferenceRows) {
  using kernels::activations::SoftmaxParams;
  struct SLoop {
    const char* name;
    kernels::activations::SoftmaxFn fn;
    bool available;
  };
  const SLoop loops[] = {{"avx2", kernels::activations::SoftmaxAvx2, rt::Cpu().has_avx2_fma()},
                         {"avx512", kernels::activations::SoftmaxAvx512, rt::Cpu().has_avx512()}};
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::mt19937 rng(9);
  int checked = 0;
  for (const SLoop& loop : loops) {
    if (!loop.available) {
      std::printf("[ skip ] softmax %s loop: this CPU lacks it\n", loop.name);
      continue;
    }
    double max_rel = 0;
    for (bool log : {false, true})
      for (float beta : {1.0f, 0.37f, 2.5f})
        for (int64_t depth : {1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 100, 1001})
          for (float spread : {1.0f, 30.0f, 300.0f}) {
            if (log && beta != 1.0f) continue;
            const SoftmaxParams p{beta, log};
            const int64_t rows = 3;
            std::vector<float> x(static_cast<size_t>(rows * depth));
            for (auto& v : x) v = std::uniform_real_distribution<float>(-spread, spread)(rng);
            std::vector<float> got(x.size()), want(x.size());
            loop.fn(p, x.data(), got.data(), rows, depth);
            for (int64_t r = 0; r < rows; ++r) ReferenceSoftmax(p, x.data() + r * depth, want.data() + r * depth, depth);
            int bad = 0;
            for (size_t i = 0; i < x.size(); ++i) {
              const double err = std::fabs(static_cast<double>(got[i]) - want[i]);
              // LOG_SOFTMAX: log(sum)'s error, absolute (relative beyond |y| = 1).
              const double scale = log ? std::max(1.0, std::fabs(static_cast<double>(want[i]))) : std::fabs(want[i]);
              if (scale > kernels::activations::kFloatActMaxAbsError) max_rel = std::max(max_rel, err / scale);
              if (!(err <= std::max(kernels::activations::kSoftmaxMaxRelError * scale,
                                    kernels::activations::kFloatActMaxAbsError)) && bad++ < 3)
                ADD_FAILURE() << loop.name << (log ? " log" : "") << " beta " << beta << " depth " << depth << " spread "
                              << spread << " at " << i << ": got " << got[i] << " want " << want[i];
            }
            ++checked;
          }
    std::printf("[ info ] softmax %s: max relative error %.3g (outputs above the absolute bound)\n", loop.name, max_rel);
    // Special rows.
    for (bool log : {false, true}) {
      const SoftmaxParams p{1.0f, log};
      const std::vector<std::vector<float>> rows = {{1, nan, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17},
                                                    {1, 2, inf, 3},
                                                    {-inf, -inf, -inf},
                                                    {-inf, 0, 1, -inf, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, -inf}};
      for (const auto& row : rows) {
        std::vector<float> got(row.size()), want(row.size());
        loop.fn(p, row.data(), got.data(), 1, static_cast<int64_t>(row.size()));
        ReferenceSoftmax(p, row.data(), want.data(), static_cast<int64_t>(row.size()));
        for (size_t i = 0; i < row.size(); ++i) {
          if (std::isnan(want[i])) {
            EXPECT_TRUE(std::isnan(got[i])) << loop.name << " special row, element " << i << ": got " << got[i];
          } else if (std::isinf(want[i])) {
            EXPECT_EQ(got[i], want[i]) << loop.name << " special row, element " << i;
          } else {
            EXPECT_NEAR(got[i], want[i], std::max(1e-6 * std::fabs(want[i]), 1e-9)) << loop.name << " special row, element " << i;
          }
        }
      }
    }
  }
  if (checked == 0) GTEST_SKIP() << "this CPU has neither AVX2 nor AVX-512";
}

Graph Unary(tflite::BuiltinOperator op, const std::vector<int32_t>& shape) {
  GraphBuilder b;
  const int32_t x = b.Input("x", DType::kFloat32, shape);
  const int32_t y = b.Tensor("y", DType::kFloat32, shape);
  if (op == tflite::BuiltinOperator_LEAKY_RELU) {
    tflite::LeakyReluOptionsT o;
    o.alpha = 0.1f;
    b.Op(op, {x}, {y}, o);
  } else if (op == tflite::BuiltinOperator_SOFTMAX) {
    tflite::SoftmaxOptionsT o;
    o.beta = 1.3f;
    b.Op(op, {x}, {y}, o);
  } else if (op == tflite::BuiltinOperator_GELU) {
    tflite::GeluOptionsT o;
    o.approximate = shape.size() % 2 == 0;  // both forms over the shapes
    b.Op(op, {x}, {y}, o);
  } else {
    b.Op(op, {x}, {y});
  }
  b.Output(y);
  return b.Finish();
}

TEST(FloatActKernels, MatchReferenceKernels) {
  if (!rt::Cpu().has_avx2_fma()) GTEST_SKIP() << "no AVX2";
  std::vector<rt::CpuFeatures> levels{rt::Cpu()};
  if (rt::Cpu().has_avx512()) levels.push_back(rt::CapFeatures(rt::Cpu(), "avx2"));
  const tflite::BuiltinOperator ops[] = {tflite::BuiltinOperator_RELU,         tflite::BuiltinOperator_RELU6,
                                         tflite::BuiltinOperator_RELU_N1_TO_1, tflite::BuiltinOperator_RELU_0_TO_1,
                                         tflite::BuiltinOperator_LEAKY_RELU,   tflite::BuiltinOperator_HARD_SWISH,
                                         tflite::BuiltinOperator_LOGISTIC,     tflite::BuiltinOperator_TANH,
                                         tflite::BuiltinOperator_SOFTMAX,      tflite::BuiltinOperator_LOG_SOFTMAX,
                                         tflite::BuiltinOperator_SQRT,         tflite::BuiltinOperator_RSQRT,
                                         tflite::BuiltinOperator_ABS,          tflite::BuiltinOperator_NEG,
                                         tflite::BuiltinOperator_FLOOR,        tflite::BuiltinOperator_CEIL,
                                         tflite::BuiltinOperator_SQUARE,       tflite::BuiltinOperator_EXP,
                                         tflite::BuiltinOperator_LOG,          tflite::BuiltinOperator_GELU,
                                         tflite::BuiltinOperator_ELU};
  const std::vector<std::vector<int32_t>> shapes = {{1}, {7}, {3, 5}, {17}, {2, 3, 4, 5}, {1, 33, 31, 3}, {1, 96, 96, 16}};
  std::mt19937 rng(3);
  for (const rt::CpuFeatures& cpu : levels)
    for (auto op : ops)
      for (const auto& shape : shapes)
        for (int threads : {1, 2}) {
          Graph g = Unary(op, shape);
          testing::TensorValue in;
          in.name = "x";
          in.type = DType::kFloat32;
          in.shape = shape;
          int64_t n = 1;
          for (int32_t d : shape) n *= d;
          std::vector<float> v(static_cast<size_t>(n));
          for (auto& f : v) f = std::uniform_real_distribution<float>(-12.f, 12.f)(rng);
          if (n > 4) v[1] = -0.0f, v[3] = std::numeric_limits<float>::quiet_NaN();
          in.data.resize(v.size() * 4);
          std::memcpy(in.data.data(), v.data(), in.data.size());
          testing::FastCheck check;
          check.threads = threads;
          check.cpu = &cpu;
          check.inputs = {in};
          check.op_type = tflite::EnumNameBuiltinOperator(op);
          check.variant = cpu.has_avx512() ? "/float32/avx512" : "/float32/avx2";
          if (op == tflite::BuiltinOperator_LOGISTIC || op == tflite::BuiltinOperator_TANH) {
            check.rtol = op == tflite::BuiltinOperator_LOGISTIC ? kernels::activations::kLogisticMaxRelError
                                                                : kernels::activations::kTanhMaxRelError;
            check.atol = kernels::activations::kFloatActMaxAbsError;
          } else if (op == tflite::BuiltinOperator_EXP || op == tflite::BuiltinOperator_LOG) {
            check.rtol = op == tflite::BuiltinOperator_EXP ? kernels::activations::kExpMaxRelError
                                                           : kernels::activations::kLogMaxRelError;
            check.atol = kernels::activations::kFloatActMaxAbsError;
          } else if (op == tflite::BuiltinOperator_ELU) {
            check.rtol = kernels::activations::kEluMaxRelError;
            check.atol = kernels::activations::kFloatActMaxAbsError;
          } else if (op == tflite::BuiltinOperator_GELU) {
            // Inputs within [-12, 12]: the per-x bound as an absolute one.
            check.atol = 12 * kernels::activations::kGeluMaxErrorPerX;
          } else if (op == tflite::BuiltinOperator_SOFTMAX || op == tflite::BuiltinOperator_LOG_SOFTMAX) {
            check.rtol = kernels::activations::kSoftmaxMaxRelError;
            check.atol = op == tflite::BuiltinOperator_SOFTMAX ? kernels::activations::kFloatActMaxAbsError
                                                               : kernels::activations::kSoftmaxMaxRelError;
          }
          testing::ExpectFastMatchesReference(g, std::string(check.op_type) + " " + rt::ShapeToString(shape) + " " +
                                                     check.variant + " threads " + std::to_string(threads),
                                              check);
        }
}

// PRELU float32: x [shape] and alpha (a second input, or constant) broadcast to it. Alpha over
// trailing dimensions (per channel, per position, one value, the same shape) takes the fast
// path; alpha varying along a leading dimension only ([1, H, 1, 1]) stays with the reference.
TEST(FloatActKernels, PreluMatchesReferenceExactly) {
  if (!rt::Cpu().has_avx2_fma()) GTEST_SKIP() << "no AVX2";
  std::vector<rt::CpuFeatures> levels{rt::Cpu()};
  if (rt::Cpu().has_avx512()) levels.push_back(rt::CapFeatures(rt::Cpu(), "avx2"));
  struct Case {
    std::vector<int32_t> x, alpha;
    bool fast;
  };
  const Case cases[] = {{{1, 96, 96, 16}, {1, 1, 16}, true},  {{1, 48, 48, 32}, {32}, true},   {{1, 7, 9, 3}, {1, 1, 3}, true},
                        {{2, 5, 5, 24}, {5, 5, 24}, true},    {{1, 33, 31, 5}, {1}, true},      {{3, 17}, {3, 17}, true},
                        {{1, 13, 11, 300}, {1, 1, 300}, true}, {{1, 8, 6, 4}, {1, 8, 1, 1}, false}, {{1, 5, 7, 16}, {7, 1}, false},
                        {{2, 0, 3}, {1, 3}, true},            {{2, 0, 3}, {0, 3}, false}};  // empty input, empty alpha
  std::mt19937 rng(5);
  for (const rt::CpuFeatures& cpu : levels)
    for (const Case& c : cases)
      for (bool const_alpha : {false, true})
        for (int threads : {1, 2}) {
          GraphBuilder b;
          const int32_t x = b.Input("x", DType::kFloat32, c.x);
          int64_t na = 1, n = 1;
          for (int32_t d : c.alpha) na *= d;
          for (int32_t d : c.x) n *= d;
          std::vector<float> a(static_cast<size_t>(na));
          for (auto& f : a) f = std::uniform_real_distribution<float>(-1.5f, 1.5f)(rng);
          std::vector<uint8_t> a_bytes(a.size() * 4);
          std::memcpy(a_bytes.data(), a.data(), a_bytes.size());
          const int32_t alpha = const_alpha ? b.ConstBytes("alpha", DType::kFloat32, c.alpha, a_bytes)
                                            : b.Input("alpha", DType::kFloat32, c.alpha);
          const int32_t y = b.Tensor("y", DType::kFloat32, c.x);
          b.Op(tflite::BuiltinOperator_PRELU, {x, alpha}, {y});
          b.Output(y);
          std::vector<float> v(static_cast<size_t>(n));
          for (auto& f : v) f = std::uniform_real_distribution<float>(-4.f, 4.f)(rng);
          // Signed zeros, NaN and infinities on both sides of the comparison.
          if (n > 8) v[1] = -0.0f, v[2] = 0.0f, v[3] = std::numeric_limits<float>::quiet_NaN(), v[5] = -INFINITY, v[7] = INFINITY;
          testing::FastCheck check;
          check.threads = threads;
          check.cpu = &cpu;
          testing::TensorValue in;
          in.name = "x";
          in.type = DType::kFloat32;
          in.shape = c.x;
          in.data.resize(v.size() * 4);
          std::memcpy(in.data.data(), v.data(), in.data.size());
          check.inputs = {in};
          if (!const_alpha) {
            testing::TensorValue av;
            av.name = "alpha";
            av.type = DType::kFloat32;
            av.shape = c.alpha;
            av.data = a_bytes;
            check.inputs.push_back(av);
          }
          check.op_type = "PRELU";
          check.variant = !c.fast ? "prelu/float32/ref" : cpu.has_avx512() ? "prelu/float32/avx512" : "prelu/float32/avx2";
          testing::ExpectFastMatchesReference(b.Finish(), "PRELU x " + rt::ShapeToString(c.x) + " alpha " +
                                                              rt::ShapeToString(c.alpha) + (const_alpha ? " const " : " input ") +
                                                              check.variant + " threads " + std::to_string(threads),
                                              check);
        }
}

}  // namespace
}  // namespace edgeopt
