// The fast QUANTIZE / DEQUANTIZE (quantize_fast.cc) and int8/uint8 AVERAGE_POOL_2D / MAX_POOL_2D
// (pool_fast.cc) against the reference kernels, bit for bit: odd element counts (tails), float
// inputs on exact .5 ties, huge values, NaN and infinities, random and extreme scales / zero
// points, int8 <-> uint8 sign flips and general requantizations; pools over odd channel counts
// (tails beyond multiples of 8), SAME/VALID, strides, windows cut by the border, every fused
// activation, 1 and 2 threads; quantized MEAN over the spatial axes (every axis spelling,
// keep_dims on and off, equal and different parameters). Some cases also against TFLite 2.9.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <tuple>

#include "graph/builder.h"
#include "kernels/common/quant_utils.h"
#include "runtime/cpu.h"
#include "support/fast_vs_reference.h"
#include "support/nn_test_util.h"

namespace edgeopt {
namespace {

std::string Tn(DType t) { return std::string(DTypeName(t)); }

template <typename T>
T Pick(std::mt19937_64& rng, std::initializer_list<T> v) {
  return *(v.begin() + std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng));
}

int64_t RandomZp(std::mt19937_64& rng, DType t) {
  if (t == DType::kInt16) return 0;
  if (t == DType::kInt8) return std::uniform_int_distribution<int>(-128, 127)(rng);
  return std::uniform_int_distribution<int>(0, 255)(rng);
}

Graph BuildUnary(tflite::BuiltinOperator op, DType in, DType out, std::vector<int32_t> shape,
                 std::optional<QuantParams> qi, std::optional<QuantParams> qo) {
  GraphBuilder b(3);
  const int32_t x = b.Input("x", in, shape, qi);
  const int32_t y = b.Tensor("y", out, shape, qo);
  b.Op(op, {x}, {y});
  b.Output(y);
  return b.Finish();
}

// Float inputs that hit rounding ties and conversion limits of x / scale.
std::vector<float> TrickyFloats(std::mt19937_64& rng, int64_t n, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  std::uniform_real_distribution<float> u(-200.0f, 200.0f);
  for (int64_t i = 0; i < n; ++i) {
    switch (i % 7) {
      case 0: v[i] = (std::floor(u(rng)) + 0.5f) * scale; break;  // a tie (up to the float product)
      case 1: v[i] = std::nextafter((std::floor(u(rng)) + 0.5f) * scale, 0.0f); break;
      case 2: v[i] = u(rng) * scale * 1e7f; break;                   // beyond int32 after division
      default: v[i] = u(rng) * scale; break;
    }
  }
  if (n > 3) {
    v[0] = std::numeric_limits<float>::quiet_NaN();
    v[1] = std::numeric_limits<float>::infinity();
    v[2] = -std::numeric_limits<float>::infinity();
    v[3] = -0.0f;
  }
  return v;
}

testing::TensorValue FloatInput(const std::vector<int32_t>& shape, const std::vector<float>& v) {
  testing::TensorValue t;
  t.name = "x";
  t.type = DType::kFloat32;
  t.shape = shape;
  t.data.resize(v.size() * sizeof(float));
  std::memcpy(t.data.data(), v.data(), t.data.size());
  return t;
}

TEST(QuantizeFast, FloatToIntMatchesReference) {
  if (!testing::HaveAvx2()) GTEST_SKIP() << "no AVX2+FMA on this CPU: the fast kernels are not used";
  std::mt19937_64 rng(11);
  int k = 0;
  for (DType out : {DType::kInt8, DType::kUInt8, DType::kInt16}) {
    for (int32_t n : {1, 7, 8, 31, 33, 100, 1027}) {
      for (float scale : {1e-4f, 0.0078125f, 0.0213f, 3.7f}) {
        const std::vector<int32_t> shape = {1, n};
        const QuantParams qo = Quant(scale, RandomZp(rng, out));
        testing::FastCheck check;
        check.op_type = "QUANTIZE";
        // AVX-512 CPUs: QuantizeFloatAvx512.
        check.variant = rt::Cpu().has_avx512() ? "/avx512" : "/avx2";
        check.threads = 1 + (++k % 2);
        check.inputs = {FloatInput(shape, TrickyFloats(rng, n, scale))};
        std::ostringstream what;
        what << "QUANTIZE float32 -> " << Tn(out) << " n " << n << " scale " << scale << " zp " << qo.zero_point[0];
        if (!testing::ExpectFastMatchesReference(BuildUnary(tflite::BuiltinOperator_QUANTIZE, DType::kFloat32, out,
                                                            shape, std::nullopt, qo),
                                                 what.str(), check))
          return;
      }
    }
  }
}

// QUANTIZE float32 -> int16 / int8 / uint8 on AVX-512 (quant_convert_avx512.cc, variant
// .../avx512 checked): scales k * 2^-e (k odd) with inputs on exact ties (2m + 1) * s / 2 and the
// floats next to them, random values, values near the type's limits (e.g. 32767.5 * s, -128.5 *
// s) and near the fast range's end (2^21 * s, beyond it the scalar formula), huge values,
// subnormals, NaN, infinities, -0; random scales over 1e-30..1e30, zero points 0, the type's
// limits and random; counts with tails of 1..15. Scales outside [2^-100, 2^100] keep the AVX2
// code (variant .../avx2).
TEST(QuantizeFast, FloatToIntAvx512MatchesReference) {
  if (!rt::Cpu().has_avx512()) GTEST_SKIP() << "no AVX-512 (F, BW, VL, DQ) on this CPU";
  std::mt19937_64 rng(16);
  int k = 0;
  for (int i = 0; i < 180; ++i) {
    const DType type = i % 3 == 0 ? DType::kInt16 : i % 3 == 1 ? DType::kInt8 : DType::kUInt8;
    const int32_t qmin = kernels::QMinOf(type), qmax = kernels::QMaxOf(type);
    const int odd = Pick(rng, {1, 3, 5, 7, 101, 255});
    const int e = std::uniform_int_distribution<int>(-20, 60)(rng);
    float scale = std::ldexp(static_cast<float>(odd), -e);
    if (i % 5 == 4) scale = std::pow(10.0f, std::uniform_real_distribution<float>(-30, 30)(rng));
    if (i >= 174 && i < 177) scale = 0x1p-110f;
    if (i >= 177) scale = 0x1p110f;
    const int32_t n = Pick(rng, {1, 15, 16, 17, 33, 1000, 4099});
    std::vector<float> v(static_cast<size_t>(n));
    std::uniform_int_distribution<int> tie(0, type == DType::kInt16 ? 30000 : 300);
    for (int32_t j = 0; j < n; ++j) {
      const float sign = rng() % 2 ? -1.0f : 1.0f;
      const double t = 2.0 * tie(rng) + 1;  // (2m + 1) * s / 2, exact in float
      const float x = static_cast<float>(sign * t * odd * std::ldexp(1.0, -e - 1));
      switch (j % 11) {
        case 0: v[j] = x; break;
        case 1: v[j] = std::nextafter(x, 0.0f); break;
        case 2: v[j] = std::nextafter(x, 2 * x); break;
        case 3: {
          const float edge = (sign > 0 ? static_cast<float>(qmax) + 0.5f : static_cast<float>(qmin) - 0.5f) * scale;
          v[j] = j % 3 == 0 ? edge : std::nextafter(edge, (j % 2) ? 0.0f : sign * 1e38f);
          break;
        }
        case 4: v[j] = sign * 0x1p21f * scale * std::uniform_real_distribution<float>(0.999f, 1.001f)(rng); break;
        case 5: v[j] = sign * std::uniform_real_distribution<float>(0, 1e38f)(rng); break;
        case 6: v[j] = sign * 0x1p-140f * static_cast<float>(j); break;
        default: v[j] = std::uniform_real_distribution<float>(-1.2f * qmax - 10, 1.2f * qmax + 10)(rng) * scale; break;
      }
    }
    if (n > 4 && i % 3 == 0) {
      v[0] = std::numeric_limits<float>::quiet_NaN();
      v[1] = std::numeric_limits<float>::infinity();
      v[2] = -std::numeric_limits<float>::infinity();
      v[3] = -0.0f;
    }
    const int64_t zp = type == DType::kInt16 && i % 4 != 2 ? (i % 4 == 0 ? 0 : Pick<int64_t>(rng, {qmin, qmax}))
                       : i % 4 == 1                        ? Pick<int64_t>(rng, {qmin, qmax})
                                                           : std::uniform_int_distribution<int>(qmin, qmax)(rng);
    const std::vector<int32_t> shape = {1, n};
    testing::FastCheck check;
    check.op_type = "QUANTIZE";
    check.variant = std::string("float32_") + Tn(type) + (scale >= 0x1p-100f && scale <= 0x1p100f ? "/avx512" : "/avx2");
    check.threads = 1 + (++k % 2);
    check.inputs = {FloatInput(shape, v)};
    std::ostringstream what;
    what << "QUANTIZE float32 -> " << Tn(type) << " n " << n << " scale " << scale << " zp " << zp;
    if (!testing::ExpectFastMatchesReference(
            BuildUnary(tflite::BuiltinOperator_QUANTIZE, DType::kFloat32, type, shape, std::nullopt, Quant(scale, zp)),
            what.str(), check))
      return;
  }
}

TEST(QuantizeFast, Requantize8BitMatchesReference) {
  if (!testing::HaveAvx2()) GTEST_SKIP() << "no AVX2+FMA on this CPU: the fast kernels are not used";
  std::mt19937_64 rng(12);
  for (DType in : {DType::kInt8, DType::kUInt8}) {
    for (DType out : {DType::kInt8, DType::kUInt8}) {
      for (int i = 0; i < 12; ++i) {
        const int32_t n = Pick(rng, {1, 7, 31, 32, 33, 65, 1000});
        // i == 0: the sign flip (equal scales, zero points 128 apart) when the types differ.
        const float si = std::pow(10.0f, std::uniform_real_distribution<float>(-3, 0)(rng));
        float so = i == 0 ? si : std::pow(10.0f, std::uniform_real_distribution<float>(-3.5f, 0.5f)(rng));
        int64_t zi = RandomZp(rng, in), zo = RandomZp(rng, out);
        if (i == 0 && in != out) {
          zi = in == DType::kInt8 ? std::uniform_int_distribution<int>(-128, 127)(rng) : std::uniform_int_distribution<int>(0, 255)(rng);
          zo = in == DType::kInt8 ? zi + 128 : zi - 128;
        }
        if (i == 1) so = si * 1e-4f;  // extreme multiplier: everything saturates
        const std::vector<int32_t> shape = {n};
        testing::FastCheck check;
        check.seed = 50 + i;
        check.op_type = "QUANTIZE";
        check.variant = i == 0 && in != out ? "/xor_avx2" : "/";
        std::ostringstream what;
        what << "QUANTIZE " << Tn(in) << " -> " << Tn(out) << " n " << n << " " << si << "/" << zi << " -> "
             << so << "/" << zo;
        if (!testing::ExpectFastMatchesReference(
                BuildUnary(tflite::BuiltinOperator_QUANTIZE, in, out, shape, Quant(si, zi), Quant(so, zo)), what.str(),
                check))
          return;
      }
    }
  }
}

// Tensors large enough to be cut into one range per thread (2 and 3 threads; counts that leave
// ranges of odd lengths): every QUANTIZE / DEQUANTIZE form against the reference, random inputs.
TEST(QuantizeFast, SplitOverThreadsMatchesReference) {
  if (!testing::HaveAvx2()) GTEST_SKIP() << "no AVX2+FMA on this CPU: the fast kernels are not used";
  std::mt19937_64 rng(14);
  int k = 0;
  const auto check_one = [&](const Graph& g, const std::string& op, const std::string& variant,
                             const std::string& what) {
    testing::FastCheck check;
    check.threads = 2 + (k++ % 2);
    check.seed = 70 + k;
    check.op_type = op;
    check.variant = variant;
    return testing::ExpectFastMatchesReference(g, what + " threads " + std::to_string(check.threads), check);
  };
  for (int32_t n : {100003, 262147}) {
    const std::vector<int32_t> shape = {n};
    for (DType out : {DType::kInt8, DType::kUInt8, DType::kInt16}) {
      testing::FastCheck check;
      check.threads = 2 + (k++ % 2);
      check.op_type = "QUANTIZE";
      check.variant = "/";
      const float scale = 0.0213f;
      check.inputs = {FloatInput(shape, TrickyFloats(rng, n, scale))};
      if (!testing::ExpectFastMatchesReference(
              BuildUnary(tflite::BuiltinOperator_QUANTIZE, DType::kFloat32, out, shape, std::nullopt,
                         Quant(scale, RandomZp(rng, out))),
              "QUANTIZE float32 -> " + Tn(out) + " n " + std::to_string(n), check))
        return;
    }
    // The sign flip and a table.
    if (!check_one(BuildUnary(tflite::BuiltinOperator_QUANTIZE, DType::kUInt8, DType::kInt8, shape, Quant(0.02f, 130),
                              Quant(0.02f, 2)),
                   "QUANTIZE", "/xor_avx2", "QUANTIZE uint8 -> int8 flip n " + std::to_string(n)))
      return;
    if (!check_one(BuildUnary(tflite::BuiltinOperator_QUANTIZE, DType::kInt8, DType::kUInt8, shape, Quant(0.02f, -3),
                              Quant(0.05f, 120)),
                   "QUANTIZE", "/table", "QUANTIZE int8 -> uint8 table n " + std::to_string(n)))
      return;
    for (DType in : {DType::kInt8, DType::kUInt8, DType::kInt16, DType::kFloat16}) {
      const std::optional<QuantParams> q =
          in == DType::kFloat16 ? std::nullopt : std::optional<QuantParams>(Quant(0.0173f, RandomZp(rng, in)));
      if (!check_one(BuildUnary(tflite::BuiltinOperator_DEQUANTIZE, in, DType::kFloat32, shape, q, std::nullopt),
                     "DEQUANTIZE", "/avx2", "DEQUANTIZE " + Tn(in) + " n " + std::to_string(n)))
        return;
    }
  }
}

// float16 -> float32 with F16C: every binary16 pattern (zeros, subnormals, normals, infinities,
// quiet NaNs; signaling NaNs come out quiet, unlike the portable conversion, and are left out),
// a count that leaves a tail of 2.
TEST(QuantizeFast, DequantizeFloat16MatchesReference) {
  if (!testing::HaveAvx2()) GTEST_SKIP() << "no AVX2+FMA+F16C on this CPU: the fast kernels are not used";
  testing::TensorValue x;
  x.name = "x";
  x.type = DType::kFloat16;
  for (uint32_t h = 0; h < 65536; ++h) {
    const bool signaling_nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0 && (h & 0x200) == 0;
    if (signaling_nan) continue;
    x.data.push_back(static_cast<uint8_t>(h));
    x.data.push_back(static_cast<uint8_t>(h >> 8));
  }
  const int32_t count = static_cast<int32_t>(x.data.size() / 2);
  ASSERT_EQ(count % 8, 2);
  x.shape = {count};
  testing::FastCheck check;
  check.op_type = "DEQUANTIZE";
  check.variant = "dequantize/float16/avx2";
  check.inputs = {x};
  testing::ExpectFastMatchesReference(
      BuildUnary(tflite::BuiltinOperator_DEQUANTIZE, DType::kFloat16, DType::kFloat32, {count}, std::nullopt, std::nullopt),
      "DEQUANTIZE float16, every pattern", check);
}

TEST(QuantizeFast, DequantizeMatchesReference) {
  if (!testing::HaveAvx2()) GTEST_SKIP() << "no AVX2+FMA on this CPU: the fast kernels are not used";
  std::mt19937_64 rng(13);
  for (DType in : {DType::kInt8, DType::kUInt8, DType::kInt16}) {
    for (int32_t n : {1, 9, 33, 1000}) {
      const QuantParams q = Quant(std::pow(10.0f, std::uniform_real_distribution<float>(-4, 1)(rng)), RandomZp(rng, in));
      testing::FastCheck check;
      check.op_type = "DEQUANTIZE";
      check.variant = "/avx2";
      if (!testing::ExpectFastMatchesReference(
              BuildUnary(tflite::BuiltinOperator_DEQUANTIZE, in, DType::kFloat32, {n}, q, std::nullopt),
              "DEQUANTIZE " + Tn(in) + " n " + std::to_string(n), check))
        return;
    }
    // Every input value, with scales of many mantissa bits, results that are subnormal
    // (a subnormal scale) and that overflow to infinity: the float product is the double one
    // rounded once.
    const int32_t count = in == DType::kInt16 ? 65536 : 256;
    for (float scale : {0.0213f, 0.1f, 7.3e-3f, 1e-40f, 2e-45f, 3e38f}) {
      const QuantParams q = Quant(scale, RandomZp(rng, in));
      testing::TensorValue x;
      x.name = "x";
      x.type = in;
      x.shape = {count};
      for (int32_t v = 0; v < count; ++v) {
        x.data.push_back(static_cast<uint8_t>(v));
        if (in == DType::kInt16) x.data.push_back(static_cast<uint8_t>(v >> 8));
      }
      testing::FastCheck check;
      check.op_type = "DEQUANTIZE";
      check.variant = "/avx2";
      check.inputs = {x};
      std::ostringstream what;
      what << "DEQUANTIZE " << Tn(in) << " every value, scale " << scale << " zp " << q.zero_point[0];
      if (!testing::ExpectFastMatchesReference(
              BuildUnary(tflite::BuiltinOperator_DEQUANTIZE, in, DType::kFloat32, {count}, q, std::nullopt), what.str(),
              check))
        return;
    }
  }
}

TEST(QuantizeFast, MatchesTflite29) {
  std::mt19937_64 rng(14);
  for (DType out : {DType::kInt8, DType::kUInt8}) {
    const QuantParams qo = Quant(0.0213f, RandomZp(rng, out));
    EXPECT_TRUE(testing::ExpectMatches(
        BuildUnary(tflite::BuiltinOperator_QUANTIZE, DType::kFloat32, out, {1, 37}, std::nullopt, qo),
        "QUANTIZE float32 -> " + Tn(out), testing::ExactOptions()));
  }
  // NaN, infinities, values beyond int32 after the division, ties; zero points of both signs.
  for (DType out : {DType::kInt8, DType::kUInt8, DType::kInt16}) {
    for (int64_t zp : {-33, 0, 33}) {
      if (out == DType::kUInt8 && zp < 0) continue;
      if (out == DType::kInt16 && zp != 0) continue;
      const std::vector<int32_t> shape = {1, 77};
      const auto g = BuildUnary(tflite::BuiltinOperator_QUANTIZE, DType::kFloat32, out, shape, std::nullopt,
                                Quant(0.0078125f, zp));
      const auto inputs = std::vector<testing::TensorValue>{FloatInput(shape, TrickyFloats(rng, 77, 0.0078125f))};
      // Both the fast kernel and the reference kernel (the oracle of the fast-vs-reference tests).
      for (bool reference_only : {false, true}) {
        testing::CompareOptions opts = testing::ExactOptions();
        opts.reference_kernels_only = reference_only;
        const testing::CompareReport r = testing::CompareGraph(g, opts, inputs);
        EXPECT_TRUE(r.ok) << "QUANTIZE float32 -> " << Tn(out) << " zp " << zp << " tricky inputs"
                          << (reference_only ? " (reference kernel)" : "") << "\n" << r.Summary();
      }
    }
  }
  EXPECT_TRUE(testing::ExpectMatches(BuildUnary(tflite::BuiltinOperator_QUANTIZE, DType::kUInt8, DType::kInt8, {1, 77},
                                                Quant(0.5f, 128), Quant(0.5f, 0)),
                                     "QUANTIZE uint8 -> int8 (flip)", testing::ExactOptions()));
  EXPECT_TRUE(testing::ExpectMatches(BuildUnary(tflite::BuiltinOperator_QUANTIZE, DType::kInt8, DType::kUInt8, {1, 77},
                                                Quant(0.05f, -3), Quant(0.07f, 120)),
                                     "QUANTIZE int8 -> uint8 (table)", testing::ExactOptions()));
}

struct PoolCase {
  bool average = true;
  DType type = DType::kInt8;
  int n = 1, h = 6, w = 5, c = 3, fh = 2, fw = 2, sh = 2, sw = 2;
  int padding = tflite::Padding_SAME;
  int act = 0;
  QuantParams q;
  std::string Describe() const {
    std::ostringstream s;
    s << (average ? "AVERAGE_POOL_2D " : "MAX_POOL_2D ") << Tn(type) << " [" << n << "," << h << "," << w << ","
      << c << "] filter " << fh << "x" << fw << " stride " << sh << "x" << sw
      << (padding == tflite::Padding_SAME ? " SAME" : " VALID") << " act " << act << " zp " << q.zero_point[0];
    return s.str();
  }
};

int OutSize(int padding, int in, int k, int stride) {
  return padding == tflite::Padding_SAME ? (in + stride - 1) / stride : (in - k + stride) / stride;
}

Graph BuildPool(const PoolCase& c) {
  GraphBuilder b(5);
  const int32_t x = b.Input("x", c.type, {c.n, c.h, c.w, c.c}, c.q);
  const int32_t y = b.Tensor("y", c.type, {c.n, OutSize(c.padding, c.h, c.fh, c.sh), OutSize(c.padding, c.w, c.fw, c.sw), c.c}, c.q);
  tflite::Pool2DOptionsT o;
  o.padding = static_cast<tflite::Padding>(c.padding);
  o.stride_h = c.sh;
  o.stride_w = c.sw;
  o.filter_height = c.fh;
  o.filter_width = c.fw;
  o.fused_activation_function = static_cast<tflite::ActivationFunctionType>(c.act);
  b.Op(c.average ? tflite::BuiltinOperator_AVERAGE_POOL_2D : tflite::BuiltinOperator_MAX_POOL_2D, {x}, {y}, o);
  b.Output(y);
  return b.Finish();
}

PoolCase RandomPool(std::mt19937_64& rng, bool average, DType type) {
  PoolCase c;
  c.average = average;
  c.type = type;
  for (;;) {
    c.n = Pick(rng, {1, 1, 2});
    c.h = Pick(rng, {1, 3, 6, 7, 10});
    c.w = Pick(rng, {1, 2, 5, 7, 12});
    c.c = Pick(rng, {1, 3, 7, 8, 16, 17, 24, 33, 64, 65, 130});
    c.fh = Pick(rng, {1, 2, 3, 5, 7});
    c.fw = Pick(rng, {1, 2, 3, 4, 7});
    c.sh = Pick(rng, {1, 2, 3});
    c.sw = Pick(rng, {1, 2, 3});
    c.padding = Pick<int>(rng, {tflite::Padding_SAME, tflite::Padding_VALID});
    if (c.padding == tflite::Padding_SAME || (c.fh <= c.h && c.fw <= c.w)) break;
  }
  c.act = Pick<int>(rng, {tflite::ActivationFunctionType_NONE, tflite::ActivationFunctionType_RELU,
                          tflite::ActivationFunctionType_RELU6, tflite::ActivationFunctionType_RELU_N1_TO_1});
  c.q = Quant(std::pow(10.0f, std::uniform_real_distribution<float>(-3, 0)(rng)), RandomZp(rng, type));
  return c;
}

// Random pools of both kinds and 8-bit types: channel counts around 8, 16, 64 (AVX-512 max:
// masked tails, two or three vectors), windows clipped by SAME padding, strides, activations.
TEST(PoolFast, MatchesReferenceRandom) {
  if (!testing::HaveAvx2()) GTEST_SKIP() << "no AVX2+FMA on this CPU: the fast kernels are not used";
  std::mt19937_64 rng(21);
  for (bool average : {true, false}) {
    for (DType type : {DType::kInt8, DType::kUInt8}) {
      for (int i = 0; i < 40; ++i) {
        const PoolCase c = RandomPool(rng, average, type);
        testing::FastCheck check;
        check.seed = 300 + i;
        check.threads = 1 + i % 2;
        check.op_type = average ? "AVERAGE_POOL_2D" : "MAX_POOL_2D";
        // MAX_POOL_2D on AVX-512: byte-wise maxima of every channel (64 per vector, masked tail).
        check.variant = !average && rt::Cpu().has_avx512() ? "/avx512" : "/avx2";
        if (!testing::ExpectFastMatchesReference(BuildPool(c), c.Describe(), check)) return;
      }
    }
  }
}

// Global averages over large windows (the MobileNet / VWW head, selfie segmentation's 128 x 128,
// the largest the float division serves) and one too large for it, which stays on the reference
// kernel.
TEST(PoolFast, LargeWindows) {
  if (!testing::HaveAvx2()) GTEST_SKIP() << "no AVX2+FMA on this CPU: the fast kernels are not used";
  PoolCase c;
  c.type = DType::kUInt8;
  c.h = c.w = c.fh = c.fw = 7;
  c.c = 1280 + 3;
  c.padding = tflite::Padding_VALID;
  c.q = Quant(0.02f, 3);
  // Global pools on AVX-512 sum the image as one byte run (SumPixelsAvx512: lcm(channels, 64)
  // per-byte sums in registers for up to 4 vectors, in memory beyond, 16-bit sums flushed every
  // 128 periods; 1283 channels exceed its period limit and take the AVX2 sums).
  const std::string global = rt::Cpu().has_avx512() ? "/avx512/global" : "/avx2";
  testing::FastCheck check;
  check.op_type = "AVERAGE_POOL_2D";
  check.variant = global;
  testing::ExpectFastMatchesReference(BuildPool(c), c.Describe(), check);
  // Selfie segmentation's global pools (128 x 128 = 16384 positions; 16 and 24 channels: one and
  // three vectors per period), and the largest window the float division serves (65536: uint8
  // sums at 255 reach the bound), all inputs at the extremes in one case; then one position more
  // stays on the reference kernel.
  for (auto [side, channels] : {std::pair{128, 9}, std::pair{256, 9}, std::pair{64, 24}, std::pair{128, 16}}) {
    for (DType t : {DType::kUInt8, DType::kInt8}) {
      c.type = t;
      c.h = c.w = c.fh = c.fw = side;
      c.c = channels;
      c.q = Quant(0.02f, t == DType::kUInt8 ? 3 : -5);
      check.variant = global;
      testing::ExpectFastMatchesReference(BuildPool(c), c.Describe(), check);
      testing::TensorValue extreme;
      extreme.name = "x";
      extreme.type = t;
      extreme.shape = {1, side, side, c.c};
      extreme.data.assign(static_cast<size_t>(side) * side * c.c, t == DType::kUInt8 ? uint8_t{255} : uint8_t{0x80});
      testing::FastCheck at_limit = check;
      at_limit.inputs = {extreme};
      testing::ExpectFastMatchesReference(BuildPool(c), c.Describe() + " extreme values", at_limit);
    }
  }
  // Exact ties: a 100 x 100 window (not a power of two) whose values alternate k and k - 1, so
  // (sum + count / 2) / count is exactly k (the mean k - 1/2 rounds away from zero): a half one
  // off, or a quotient just below k, would give k - 1.
  for (DType t : {DType::kUInt8, DType::kInt8}) {
    c.type = t;
    c.h = c.w = c.fh = c.fw = 100;
    c.c = 16;
    c.q = Quant(0.02f, 0);
    testing::TensorValue ties;
    ties.name = "x";
    ties.type = t;
    ties.shape = {1, 100, 100, c.c};
    for (int p = 0; p < 100 * 100; ++p)
      for (int ch = 0; ch < c.c; ++ch) {
        const int k = t == DType::kUInt8 ? 100 + 9 * ch : -60 + 11 * ch;
        ties.data.push_back(static_cast<uint8_t>(p % 2 ? k : k - 1));
      }
    testing::FastCheck tie_check = check;
    tie_check.variant = global;
    tie_check.inputs = {ties};
    testing::ExpectFastMatchesReference(BuildPool(c), c.Describe() + " exact ties", tie_check);
  }
  c.type = DType::kUInt8;
  c.h = c.w = c.fh = c.fw = 257;  // 66049 positions > kMaxAverageCount
  c.c = 9;
  check.variant = "/ref";
  testing::ExpectFastMatchesReference(BuildPool(c), c.Describe(), check);
}

// 16x8 pools (int16, zero point 0): random average pools through the AVX2 8-channel pixels and
// max pools through them or, on AVX-512, the word-wise rows, global averages (AVX2 sums) with every input at -32768 or 32767 up to the largest
// whose int32 sums cannot overflow, and the largest non-global window the float division serves
// for int16 (511 positions at -32768); one position more than either stays on the reference kernel.
TEST(PoolFast, Int16) {
  if (!testing::HaveAvx2()) GTEST_SKIP() << "no AVX2+FMA on this CPU: the fast kernels are not used";
  std::mt19937_64 rng(23);
  for (bool average : {true, false})
    for (int i = 0; i < 30; ++i) {
      const PoolCase c = RandomPool(rng, average, DType::kInt16);
      testing::FastCheck check;
      check.seed = 500 + i;
      check.threads = 1 + i % 2;
      check.op_type = average ? "AVERAGE_POOL_2D" : "MAX_POOL_2D";
      // MAX_POOL_2D on AVX-512: word-wise maxima of every channel (32 per vector, masked tail).
      check.variant = !average && rt::Cpu().has_avx512() ? "int16/avx512" : "int16/avx2";
      if (!testing::ExpectFastMatchesReference(BuildPool(c), c.Describe(), check)) return;
    }
  auto extreme = [](const PoolCase& c, int16_t v) {
    testing::TensorValue x;
    x.name = "x";
    x.type = DType::kInt16;
    x.shape = {c.n, c.h, c.w, c.c};
    const auto bits = static_cast<uint16_t>(v);
    for (int64_t i = 0; i < int64_t{c.n} * c.h * c.w * c.c; ++i) {
      x.data.push_back(static_cast<uint8_t>(bits & 0xFF));
      x.data.push_back(static_cast<uint8_t>(bits >> 8));
    }
    return x;
  };
  PoolCase c;
  c.type = DType::kInt16;
  c.padding = tflite::Padding_VALID;
  c.q = Quant(0.001f, 0);
  testing::FastCheck check;
  check.op_type = "AVERAGE_POOL_2D";
  // 255 x 257 = 65535 positions: the most whose int32 sums cannot overflow at -32768.
  for (auto [h, w, channels] : {std::tuple{3, 3, 256}, std::tuple{7, 7, 13}, std::tuple{128, 128, 9},
                                std::tuple{255, 257, 17}}) {
    c.h = c.fh = h;
    c.w = c.fw = w;
    c.c = channels;
    check.variant = "int16/avx2/global";
    check.inputs = {};
    testing::ExpectFastMatchesReference(BuildPool(c), c.Describe(), check);
    for (int16_t v : {int16_t{-32768}, int16_t{32767}}) {
      check.inputs = {extreme(c, v)};
      testing::ExpectFastMatchesReference(BuildPool(c), c.Describe() + " all " + std::to_string(v), check);
    }
  }
  c.h = c.w = c.fh = c.fw = 256;  // 65536 positions
  check.variant = "/ref";
  check.inputs = {extreme(c, -32768)};
  testing::ExpectFastMatchesReference(BuildPool(c), c.Describe() + " global, all -32768", check);
  // 7 x 73 = 511 positions in an 8 x 80 image (not global), then 8 x 64 = 512.
  c.h = 8;
  c.w = 80;
  c.c = 16;
  c.fh = c.sh = 7;
  c.fw = c.sw = 73;
  check.variant = "int16/avx2";
  check.inputs = {extreme(c, -32768)};
  testing::ExpectFastMatchesReference(BuildPool(c), c.Describe() + " all -32768", check);
  c.fh = c.sh = 8;
  c.fw = c.sw = 64;
  check.variant = "/ref";
  check.inputs = {extreme(c, -32768)};
  testing::ExpectFastMatchesReference(BuildPool(c), c.Describe() + " all -32768", check);
}

TEST(PoolFast, MatchesTflite29) {
  std::mt19937_64 rng(22);
  for (bool average : {true, false})
    for (DType type : {DType::kInt8, DType::kUInt8, DType::kInt16})
      for (int i = 0; i < 3; ++i) {
        const PoolCase c = RandomPool(rng, average, type);
        if (!testing::ExpectMatches(BuildPool(c), c.Describe(), testing::ExactOptions())) return;
      }
}

// A MEAN over `axes`; `out` the output shape, or empty for the spatial MEAN's (rank 4, H and W).
Graph BuildMean(DType type, std::vector<int32_t> shape, std::vector<int32_t> axes, bool keep_dims, QuantParams qi,
                QuantParams qo, std::vector<int32_t> out = {},
                tflite::BuiltinOperator op = tflite::BuiltinOperator_MEAN) {
  GraphBuilder b(9);
  const int32_t x = b.Input("x", type, shape, qi);
  const int32_t a = b.Const<int32_t>("axes", DType::kInt32, {static_cast<int32_t>(axes.size())}, axes);
  if (out.empty())
    out = keep_dims ? std::vector<int32_t>{shape[0], 1, 1, shape[3]} : std::vector<int32_t>{shape[0], shape[3]};
  const int32_t y = b.Tensor("y", type, out, qo);
  tflite::ReducerOptionsT o;
  o.keep_dims = keep_dims;
  b.Op(op, {x, a}, {y}, o);
  b.Output(y);
  return b.Finish();
}

// What a MEAN case is, for failure messages.
std::string MeanWhat(const char* prefix, DType type, const std::vector<int32_t>& shape, const std::vector<int32_t>& axes,
                     bool keep_dims, const QuantParams& qi, const QuantParams& qo) {
  std::ostringstream what;
  what << prefix << Tn(type) << " " << rt::ShapeToString(shape) << " axes " << rt::ShapeToString(axes)
       << (keep_dims ? " keep_dims" : "") << " " << qi.scale[0] << "/" << qi.zero_point[0] << " -> " << qo.scale[0] << "/"
       << qo.zero_point[0];
  return what.str();
}

TEST(MeanFast, MatchesReferenceAndTflite29) {
  if (!testing::HaveAvx2()) GTEST_SKIP() << "no AVX2+FMA on this CPU: the fast kernels are not used";
  std::mt19937_64 rng(31);
  int k = 0;
  for (DType type : {DType::kInt8, DType::kUInt8, DType::kInt16}) {
    for (int i = 0; i < 16; ++i) {
      const std::vector<int32_t> shape = {Pick(rng, {1, 2}), Pick(rng, {1, 3, 7}), Pick(rng, {1, 4, 7}),
                                          Pick(rng, {1, 5, 8, 17, 33, 1280})};
      const std::vector<int32_t> axes = Pick<std::vector<int32_t>>(rng, {{1, 2}, {2, 1}, {-3, -2}, {1, 2, 1}});
      const bool keep_dims = Pick(rng, {true, true, false});
      const QuantParams qi = Quant(std::pow(10.0f, std::uniform_real_distribution<float>(-3, 0)(rng)), RandomZp(rng, type));
      const QuantParams qo = i % 4 == 0 ? qi : Quant(std::pow(10.0f, std::uniform_real_distribution<float>(-3, 0)(rng)), RandomZp(rng, type));
      const Graph g = BuildMean(type, shape, axes, keep_dims, qi, qo);
      const std::string what = MeanWhat("MEAN ", type, shape, axes, keep_dims, qi, qo);
      testing::FastCheck check;
      check.seed = 400 + i;
      check.op_type = "MEAN";
      check.variant = type != DType::kInt16 && rt::Cpu().has_avx512() ? "/avx512" : "/avx2";
      if (!testing::ExpectFastMatchesReference(g, what, check)) return;
      // A third of the 8-bit cases also against TFLite 2.9 (the fast kernel runs by default).
      if (type != DType::kInt16 && ++k % 3 == 0 && !testing::ExpectMatches(g, what, testing::ExactOptions())) return;
    }
  }
  // Many pixels per batch (the AVX-512 byte-run sums: whole periods, 16-bit sums flushed every
  // 128 periods, the bytes after the last period), at random and at the extremes of each type.
  for (DType type : {DType::kInt8, DType::kUInt8}) {
    for (const std::vector<int32_t>& shape : std::vector<std::vector<int32_t>>{
             {1, 7, 7, 1280}, {2, 64, 64, 16}, {1, 33, 35, 24}, {1, 128, 128, 3}, {2, 20, 21, 100}}) {
      const QuantParams q = Quant(0.05f, type == DType::kInt8 ? -3 : 7);
      const Graph g = BuildMean(type, shape, {1, 2}, true, q, Quant(0.04f, type == DType::kInt8 ? 2 : 120));
      testing::FastCheck check;
      check.threads = 2;
      check.op_type = "MEAN";
      check.variant = rt::Cpu().has_avx512() ? "/avx512" : "/avx2";
      const std::string what = "MEAN " + Tn(type) + " " + rt::ShapeToString(shape);
      if (!testing::ExpectFastMatchesReference(g, what, check)) return;
      for (uint8_t byte : {uint8_t{0x7f}, uint8_t{0x80}, uint8_t{0xff}}) {
        testing::TensorValue x;
        x.name = "x";
        x.type = type;
        x.shape = shape;
        x.data.assign(static_cast<size_t>(rt::NumElements(rt::Shape(shape.begin(), shape.end()))), byte);
        testing::FastCheck at_limit = check;
        at_limit.inputs = {x};
        if (!testing::ExpectFastMatchesReference(g, what + " all bytes " + std::to_string(byte), at_limit)) return;
      }
    }
  }
}

// MEAN and SUM over the last axis alone (quantized transformers' layer norms), ranks 1-4, both
// axis spellings, keep_dims or not, rows of 1 to 1000 values (the 64-byte runs and their tails),
// equal or other output parameters.
TEST(MeanFast, LastAxisMatchesReferenceAndTflite29) {
  if (!testing::HaveAvx2()) GTEST_SKIP() << "no AVX2+FMA on this CPU: the fast kernels are not used";
  std::mt19937_64 rng(37);
  int k = 0;
  for (const auto op : {tflite::BuiltinOperator_MEAN, tflite::BuiltinOperator_SUM})
  for (DType type : {DType::kInt8, DType::kUInt8, DType::kInt16})
    for (int i = 0; i < 14; ++i) {
      const int rank = 1 + i % 4;
      std::vector<int32_t> shape;
      for (int d = 0; d + 1 < rank; ++d) shape.push_back(Pick(rng, {1, 2, 5, 128}) / (d > 0 ? 2 : 1) + 1);
      shape.push_back(Pick(rng, {1, 7, 64, 65, 128, 256, 1000}));
      const bool keep_dims = i % 3 != 1;
      const std::vector<int32_t> axes = i % 2 ? std::vector<int32_t>{-1} : std::vector<int32_t>{rank - 1, -1};
      const QuantParams qi = Quant(std::pow(10.0f, std::uniform_real_distribution<float>(-3, 0)(rng)), RandomZp(rng, type));
      const QuantParams qo = i % 4 == 0 ? qi : Quant(std::pow(10.0f, std::uniform_real_distribution<float>(-3, 0)(rng)), RandomZp(rng, type));
      std::vector<int32_t> out = shape;
      if (keep_dims) out.back() = 1;
      else out.pop_back();
      const bool sum = op == tflite::BuiltinOperator_SUM;
      const Graph g = BuildMean(type, shape, axes, keep_dims, qi, qo, out, op);
      const std::string what = MeanWhat(sum ? "SUM last axis " : "MEAN last axis ", type, shape, axes, keep_dims, qi, qo);
      testing::FastCheck check;
      check.seed = 700 + i;
      check.threads = 1 + i % 2;
      check.op_type = sum ? "SUM" : "MEAN";
      check.variant = type != DType::kInt16 && rt::Cpu().has_avx512() ? "/avx512" : "/avx2";
      if (!testing::ExpectFastMatchesReference(g, what, check)) return;
      if (type != DType::kInt16 && ++k % 3 == 0 && !testing::ExpectMatches(g, what, testing::ExactOptions())) return;
    }
}

// Quantized PRELU (prelu_fast.cc): alpha per channel, per position, one value or the input's
// shape (and, left to the reference, alpha varying along a leading dimension), random scales and
// zero points, constant or runtime alpha, 1 and 2 threads: byte-identical to the reference
// kernel; a third of the cases also to TFLite 2.9's.
TEST(PreluFast, MatchesReferenceAndTflite29) {
  if (!testing::HaveAvx2()) GTEST_SKIP() << "no AVX2+FMA on this CPU: the fast kernels are not used";
  struct Case {
    std::vector<int32_t> x, alpha;
    bool fast;
  };
  const Case cases[] = {{{1, 96, 96, 16}, {1, 1, 16}, true}, {{1, 24, 24, 64}, {64}, true}, {{1, 7, 9, 3}, {1, 1, 3}, true},
                        {{2, 5, 5, 24}, {5, 5, 24}, true},   {{1, 13, 11, 5}, {1}, true},    {{3, 40}, {3, 40}, true},
                        {{1, 9, 7, 300}, {1, 1, 300}, true}, {{1, 8, 6, 4}, {1, 8, 1, 1}, false},
                        {{2, 0, 3}, {1, 3}, true},           {{2, 0, 3}, {0, 3}, false}};  // empty input, empty alpha
  std::mt19937_64 rng(41);
  int k = 0;
  for (DType type : {DType::kInt8, DType::kUInt8})
    for (const Case& c : cases)
      for (bool const_alpha : {true, false}) {
        const QuantParams qi = Quant(std::pow(10.0f, std::uniform_real_distribution<float>(-2.5f, -0.5f)(rng)), RandomZp(rng, type));
        const QuantParams qa = Quant(std::pow(10.0f, std::uniform_real_distribution<float>(-3, -1)(rng)), RandomZp(rng, type));
        const QuantParams qo = Quant(std::pow(10.0f, std::uniform_real_distribution<float>(-2.5f, -0.5f)(rng)), RandomZp(rng, type));
        GraphBuilder b(11 + k);
        const int32_t x = b.Input("x", type, c.x, qi);
        const int32_t alpha = const_alpha ? b.ConstRandom("alpha", type, c.alpha, -128, 255, qa) : b.Input("alpha", type, c.alpha, qa);
        const int32_t y = b.Tensor("y", type, c.x, qo);
        b.Op(tflite::BuiltinOperator_PRELU, {x, alpha}, {y});
        b.Output(y);
        const Graph g = b.Finish();
        std::ostringstream what;
        what << "PRELU " << Tn(type) << " x " << rt::ShapeToString(c.x) << " alpha " << rt::ShapeToString(c.alpha)
             << (const_alpha ? " const" : " input") << " " << qi.scale[0] << "/" << qi.zero_point[0] << " a " << qa.scale[0]
             << "/" << qa.zero_point[0] << " -> " << qo.scale[0] << "/" << qo.zero_point[0];
        testing::FastCheck check;
        check.seed = 900 + k;
        check.threads = 1 + k % 2;
        check.op_type = "PRELU";
        check.variant = c.fast ? (rt::Cpu().has_avx512() ? "/avx512" : "/avx2") : "/ref";
        if (!testing::ExpectFastMatchesReference(g, what.str(), check)) return;
        if (++k % 3 == 0 && !testing::ExpectMatches(g, what.str(), testing::ExactOptions())) return;
      }
}

}  // namespace
}  // namespace edgeopt
