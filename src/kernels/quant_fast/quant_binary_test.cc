// The fast quantized ADD / SUB / MUL (quant_binary_fast.cc) against the reference kernel, bit for
// bit, over random cases: int8 / uint8 / int16, same shapes of odd sizes (tails that are not a
// multiple of 8 or 32), a scalar on either side, per-channel vectors over the last dimension,
// general broadcasts, scales spread over four decades (extreme multipliers), zero points up to
// the type's limits, every fused activation, 1 and 2 threads. A few cases also run against
// TFLite 2.9 directly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <utility>
#include <vector>

#include "graph/builder.h"
#include "kernels/quant_fast/quant_binary.h"
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

struct BinCase {
  tflite::BuiltinOperator op = tflite::BuiltinOperator_ADD;
  DType type = DType::kInt8;
  std::vector<int32_t> a, b;
  QuantParams qa, qb, qo;
  int act = 0;
  bool pot_int16 = false;

  std::string Describe() const {
    std::ostringstream s;
    s << tflite::EnumNameBuiltinOperator(op) << " " << Tn(type) << " " << rt::ShapeToString(a) << " x "
      << rt::ShapeToString(b) << " scales " << qa.scale[0] << "/" << qb.scale[0] << "->" << qo.scale[0] << " zps "
      << qa.zero_point[0] << "/" << qb.zero_point[0] << "->" << qo.zero_point[0] << " act " << act
      << (pot_int16 ? " pot_scale_int16" : "");
    return s.str();
  }
};

// The variant the fast kernel picks for `op` on `type` with features `cpu`: ADD/SUB (int16 on
// general scales, as every case here but Int16PowerOfTwoScales) and MUL run the 16-lane AVX-512
// code where the CPU has it, else the AVX2 code.
std::string ExpectedIsa(tflite::BuiltinOperator, DType type, const rt::CpuFeatures& cpu) {
  return cpu.has_avx512() ? std::string("/") + DTypeName(type).data() + "/avx512" : "/avx2";
}

// This CPU's features, and (on an AVX-512 CPU) the same capped to AVX2 so both variants run.
std::vector<rt::CpuFeatures> FeatureLevels() {
  std::vector<rt::CpuFeatures> levels{rt::Cpu()};
  if (rt::Cpu().has_avx512()) levels.push_back(rt::CapFeatures(rt::Cpu(), "avx2"));
  return levels;
}

std::vector<int32_t> BroadcastOut(std::vector<int32_t> a, std::vector<int32_t> b) {
  while (a.size() < b.size()) a.insert(a.begin(), 1);
  while (b.size() < a.size()) b.insert(b.begin(), 1);
  for (size_t i = 0; i < a.size(); ++i) a[i] = std::max(a[i], b[i]);
  return a;
}

Graph BuildBinary(const BinCase& c) {
  GraphBuilder b(7);
  const int32_t x = b.Input("a", c.type, c.a, c.qa);
  const int32_t y = b.Input("b", c.type, c.b, c.qb);
  const int32_t z = b.Tensor("out", c.type, BroadcastOut(c.a, c.b), c.qo);
  const auto act = static_cast<tflite::ActivationFunctionType>(c.act);
  if (c.op == tflite::BuiltinOperator_ADD) {
    tflite::AddOptionsT o;
    o.fused_activation_function = act;
    o.pot_scale_int16 = c.pot_int16;
    b.Op(c.op, {x, y}, {z}, o);
  } else if (c.op == tflite::BuiltinOperator_SUB) {
    tflite::SubOptionsT o;
    o.fused_activation_function = act;
    o.pot_scale_int16 = c.pot_int16;
    b.Op(c.op, {x, y}, {z}, o);
  } else if (c.op == tflite::BuiltinOperator_MUL) {
    tflite::MulOptionsT o;
    o.fused_activation_function = act;
    b.Op(c.op, {x, y}, {z}, o);
  } else {
    b.Op(c.op, {x, y}, {z});  // SQUARED_DIFFERENCE: no options
  }
  b.Output(z);
  return b.Finish();
}

QuantParams RandomQuant(std::mt19937_64& rng, DType type, float lo_log10 = -4, float hi_log10 = 0) {
  QuantParams q;
  q.scale = {std::pow(10.0f, std::uniform_real_distribution<float>(lo_log10, hi_log10)(rng))};
  int64_t zp = 0;
  if (type == DType::kInt8) zp = std::uniform_int_distribution<int>(-128, 127)(rng);
  if (type == DType::kUInt8) zp = std::uniform_int_distribution<int>(0, 255)(rng);
  if (type != DType::kInt16 && std::uniform_int_distribution<int>(0, 5)(rng) == 0)
    zp = type == DType::kInt8 ? Pick<int64_t>(rng, {-128, 127}) : Pick<int64_t>(rng, {0, 255});
  q.zero_point = {zp};
  return q;
}

BinCase RandomBinCase(std::mt19937_64& rng, tflite::BuiltinOperator op, DType type) {
  BinCase c;
  c.op = op;
  c.type = type;
  const int n = Pick(rng, {1, 7, 8, 31, 32, 33, 100, 257});
  const int h = Pick(rng, {1, 3, 5}), w = Pick(rng, {1, 2, 7}), ch = Pick(rng, {1, 3, 7, 8, 16, 24, 33, 40});
  switch (std::uniform_int_distribution<int>(0, 5)(rng)) {
    case 0: c.a = c.b = {n}; break;
    case 1: c.a = c.b = {1, h, w, ch}; break;
    case 2: c.a = {1, h, w, ch}; c.b = {1}; break;               // scalar
    case 3: c.a = {}; c.b = {2, h, ch}; break;                  // rank-0 scalar first
    case 4: c.a = {1, h, w, ch}; c.b = Pick<int>(rng, {0, 1}) ? std::vector<int32_t>{ch} : std::vector<int32_t>{1, 1, 1, ch}; break;
    default: c.a = {2, h, 1, ch}; c.b = {1, 1, w, 1}; break;   // general broadcast
  }
  if (Pick(rng, {0, 1})) std::swap(c.a, c.b);
  c.qa = RandomQuant(rng, type);
  c.qb = RandomQuant(rng, type);
  // Output scales from far below to far above the inputs': output multipliers from tiny to > 1.
  c.qo = RandomQuant(rng, type, -4.5f, 0.5f);
  c.act = Pick<int>(rng, {tflite::ActivationFunctionType_NONE, tflite::ActivationFunctionType_RELU,
                          tflite::ActivationFunctionType_RELU6, tflite::ActivationFunctionType_RELU_N1_TO_1});
  return c;
}

TEST(QuantBinaryFast, MatchesReferenceRandom) {
  if (!testing::HaveAvx2()) GTEST_SKIP() << "no AVX2+FMA on this CPU: the fast kernels are not used";
  std::mt19937_64 rng(2026);
  int cases = 0;
  for (auto op : {tflite::BuiltinOperator_ADD, tflite::BuiltinOperator_SUB, tflite::BuiltinOperator_MUL}) {
    for (DType type : {DType::kInt8, DType::kUInt8, DType::kInt16}) {
      for (int i = 0; i < 40; ++i) {
        const BinCase c = RandomBinCase(rng, op, type);
        for (const rt::CpuFeatures& cpu : FeatureLevels()) {
          testing::FastCheck check;
          check.seed = 100 + i;
          check.threads = (i % 3 == 0) ? 2 : 1;
          check.op_type = tflite::EnumNameBuiltinOperator(op);
          check.variant = ExpectedIsa(op, type, cpu);
          check.cpu = &cpu;
          if (!testing::ExpectFastMatchesReference(BuildBinary(c), c.Describe(), check)) return;
        }
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 3 * 3 * 40);
}

// int16 ADD/SUB on power-of-two scales with pot_scale_int16: the shift-and-saturate path, with
// either input on the output scale, broadcasts, and sums that saturate.
TEST(QuantBinaryFast, Int16PowerOfTwoScales) {
  if (!testing::HaveAvx2()) GTEST_SKIP() << "no AVX2+FMA on this CPU: the fast kernels are not used";
  int k = 0;
  for (auto op : {tflite::BuiltinOperator_ADD, tflite::BuiltinOperator_SUB}) {
    for (int shift : {0, 1, 3, 15}) {
      for (bool swap : {false, true}) {
        BinCase c;
        c.op = op;
        c.type = DType::kInt16;
        c.a = {1, 4, 5, 9};
        c.b = k % 3 == 0 ? std::vector<int32_t>{9} : k % 3 == 1 ? std::vector<int32_t>{1} : c.a;
        c.qa.scale = {1.0f / 4096};
        c.qb.scale = {std::ldexp(1.0f / 4096, -shift)};
        if (swap) std::swap(c.qa.scale, c.qb.scale);
        c.qo.scale = {1.0f / 4096};
        c.qa.zero_point = c.qb.zero_point = c.qo.zero_point = {0};
        c.pot_int16 = true;
        c.act = k % 4;
        testing::FastCheck check;
        check.seed = ++k;
        check.op_type = tflite::EnumNameBuiltinOperator(op);
        check.variant = "int16_pot/avx2";
        if (!testing::ExpectFastMatchesReference(BuildBinary(c), c.Describe(), check)) return;
      }
    }
  }
}

// Extreme parameters: the largest input scale ratio, zero points at the limits, saturating sums.
TEST(QuantBinaryFast, ExtremeParameters) {
  if (!testing::HaveAvx2()) GTEST_SKIP() << "no AVX2+FMA on this CPU: the fast kernels are not used";
  int k = 0;
  for (auto op : {tflite::BuiltinOperator_ADD, tflite::BuiltinOperator_SUB, tflite::BuiltinOperator_MUL}) {
    for (DType type : {DType::kInt8, DType::kUInt8}) {
      for (float ratio : {1.0f, 1e-4f, 1e4f}) {
        for (float out_scale : {1e-5f, 1e-2f, 30.0f}) {
          BinCase c;
          c.op = op;
          c.type = type;
          c.a = c.b = {1, 3, 5, 33};
          c.qa.scale = {0.01f};
          c.qb.scale = {0.01f * ratio};
          c.qo.scale = {out_scale};
          const int64_t lo = type == DType::kInt8 ? -128 : 0, hi = type == DType::kInt8 ? 127 : 255;
          c.qa.zero_point = {lo};
          c.qb.zero_point = {hi};
          c.qo.zero_point = {(k % 2) ? lo : hi};
          c.act = k % 4;
          ++k;
          for (const rt::CpuFeatures& cpu : FeatureLevels()) {
            testing::FastCheck check;
            check.seed = k;
            check.op_type = tflite::EnumNameBuiltinOperator(op);
            check.variant = ExpectedIsa(op, type, cpu);
            check.cpu = &cpu;
            if (!testing::ExpectFastMatchesReference(BuildBinary(c), c.Describe(), check)) return;
          }
        }
      }
    }
  }
}

// Tensors large enough to be split over two threads (chunks of whole 8-element blocks, an odd
// total so the last chunk has a tail), same shape and with a scalar.
TEST(QuantBinaryFast, LargeTensorsOverTwoThreads) {
  if (!testing::HaveAvx2()) GTEST_SKIP() << "no AVX2+FMA on this CPU: the fast kernels are not used";
  std::mt19937_64 rng(77);
  for (auto op : {tflite::BuiltinOperator_ADD, tflite::BuiltinOperator_MUL}) {
    // Same shapes, a scalar, an RGB per-channel vector, an outer sum / product (MoveNet's
    // [48,48,1] - [1,17]).
    for (int form : {0, 1, 2, 3}) {
      BinCase c = RandomBinCase(rng, op, DType::kInt8);
      c.a = form == 2 ? std::vector<int32_t>{1, 97, 65, 3}
            : form == 3 ? std::vector<int32_t>{48, 48, 1} : std::vector<int32_t>{1, 64, 64, 33};
      c.b = form == 0   ? c.a
            : form == 1 ? std::vector<int32_t>{1}
            : form == 2 ? std::vector<int32_t>{1, 1, 1, 3} : std::vector<int32_t>{1, 17};
      for (const rt::CpuFeatures& cpu : FeatureLevels()) {
        testing::FastCheck check;
        check.threads = 2;
        check.op_type = tflite::EnumNameBuiltinOperator(op);
        check.variant = ExpectedIsa(op, DType::kInt8, cpu);
        check.cpu = &cpu;
        if (!testing::ExpectFastMatchesReference(BuildBinary(c), c.Describe(), check)) return;
      }
    }
  }
}

// The fast path against TFLite 2.9 itself (default interpreter options run the fast kernel).
TEST(QuantBinaryFast, MatchesTflite29) {
  if (!testing::HaveAvx2()) GTEST_SKIP() << "no AVX2+FMA on this CPU: the fast kernels are not used";
  std::mt19937_64 rng(29);
  for (auto op : {tflite::BuiltinOperator_ADD, tflite::BuiltinOperator_SUB, tflite::BuiltinOperator_MUL}) {
    for (DType type : {DType::kInt8, DType::kUInt8}) {
      for (int i = 0; i < 4; ++i) {
        const BinCase c = RandomBinCase(rng, op, type);
        if (!testing::ExpectMatches(BuildBinary(c), c.Describe(), testing::ExactOptions())) return;
      }
    }
  }
}

// int8 SQUARED_DIFFERENCE (squared_difference_fast.cc) against the reference kernel, bit for bit:
// the random shapes and broadcasts above, LayerNorm's rows against their mean ([1, 128, 256]
// against [1, 128, 1]) and a long same-shape run, 1 and 2 threads. Parameters outside the
// lanes' int32 bounds must leave the op to the reference kernel (and still match); a few cases
// also against TFLite 2.9.
TEST(QuantBinaryFast, SquaredDifferenceInt8MatchesReference) {
  if (!rt::Cpu().has_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU: the fast SQUARED_DIFFERENCE is not used";
  std::mt19937_64 rng(4242);
  int fast = 0, declined = 0;
  for (int i = 0; i < 90; ++i) {
    BinCase c = RandomBinCase(rng, tflite::BuiltinOperator_SQUARED_DIFFERENCE, DType::kInt8);
    c.act = 0;
    if (i % 10 == 1) {
      c.a = {1, 128, 256};
      c.b = {1, 128, 1};
    } else if (i % 10 == 2) {
      c.a = c.b = {3, 77, 129};
    }
    if (i % 10 == 3) c.qo.scale[0] = c.qa.scale[0] * c.qb.scale[0] * 1e-3f;  // a left-shifting output multiplier
    kernels::QuantBinaryParams p;
    p.in1_offset = -static_cast<int32_t>(c.qa.zero_point[0]);
    p.in2_offset = -static_cast<int32_t>(c.qb.zero_point[0]);
    p.out_offset = static_cast<int32_t>(c.qo.zero_point[0]);
    kernels::ComputeSquaredDifferenceMultipliers(c.qa.scale[0], c.qb.scale[0], c.qo.scale[0], &p);
    const bool applies = kernels::qbin::SquaredDifferenceAvx512Applies(p);
    (applies ? fast : declined) += 1;
    testing::FastCheck check;
    check.seed = 300 + i;
    check.threads = i % 2 ? 2 : 1;
    check.op_type = "SQUARED_DIFFERENCE";
    check.variant = applies ? "squared_difference/int8/avx512" : "squared_difference/int8/ref";
    if (!testing::ExpectFastMatchesReference(BuildBinary(c), c.Describe(), check)) return;
    if (i % 15 == 0 && !testing::ExpectMatches(BuildBinary(c), c.Describe() + " vs TFLite 2.9", testing::ExactOptions()))
      return;
  }
  EXPECT_GE(fast, 70);
  EXPECT_GE(declined, 1);
}

// The vectorized MultiplyByQuantizedMultiplier against the scalar one on values across the
// int32 range (incl. INT32_MIN/MAX) and every left and right shift.
TEST(QuantBinaryFast, VectorRequantizeIsExact) {
  if (!testing::HaveAvx2()) GTEST_SKIP() << "no AVX2+FMA on this CPU: the vector code cannot run";
  std::mt19937_64 rng(5);
  std::vector<int32_t> x(4096), got(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const int bits = static_cast<int>(i % 32);
    x[i] = static_cast<int32_t>(static_cast<int64_t>(rng()) >> (32 + bits));
  }
  x[0] = INT32_MIN;
  x[1] = INT32_MAX;
  x[2] = -1;
  x[3] = 1 << 30;
  x[4] = -(1 << 30);
  for (int shift = -31; shift <= 8; ++shift) {
    for (int32_t mult : {1 << 30, (1 << 30) + 1, 0x7FFFFFFF, 1518500250, 1234567890}) {
      kernels::qbin::RequantizeBatch(x.data(), got.data(), static_cast<int64_t>(x.size()), mult, shift);
      for (size_t i = 0; i < x.size(); ++i) {
        const int32_t want = kernels::MultiplyByQuantizedMultiplier(x[i], mult, shift);
        ASSERT_EQ(got[i], want) << "x " << x[i] << " mult " << mult << " shift " << shift;
      }
    }
  }
}

// SQUARED_DIFFERENCE's output stage (non-negative sums, shift <= 0, one 64-bit rounding shift)
// against the scalar MultiplyByQuantizedMultiplier: values over [0, 2^31) (0, 1, INT32_MAX, and
// the rounding ties of every shift: odd multiples of 2^(e-1) after the high multiply), every
// shift 0..-31, multipliers at both ends of [2^30, 2^31).
TEST(QuantBinaryFast, NonNegativeRequantizeIsExact) {
  if (!rt::Cpu().has_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU: the 16-lane output stage is not used";
  std::mt19937_64 rng(77);
  std::vector<int32_t> x(4096 + 3), got(x.size());
  for (size_t i = 0; i < 4096; ++i) {
    const int bits = static_cast<int>(i % 31);
    x[i] = static_cast<int32_t>((rng() >> 33) >> bits);
  }
  x[4096] = 0;
  x[4097] = 1;
  x[4098] = INT32_MAX;
  for (int32_t mult : {1 << 30, (1 << 30) + 1, 0x7FFFFFFF, 1518500250, 1102565712}) {
    for (int shift = 0; shift >= -31; --shift) {
      // Values whose high product lands on a rounding tie: h = (2j + 1) * 2^(e-1).
      for (int j = 0; j < 64 && shift < 0; ++j) {
        const int64_t h = (2 * int64_t{j} + 1) << (-shift - 1);
        const int64_t v = (h << 31) / mult;  // x * mult / 2^31 close to h
        if (v >= 0 && v <= INT32_MAX) x[static_cast<size_t>(j)] = static_cast<int32_t>(v);
      }
      ASSERT_TRUE(kernels::qbin::RequantizeNonNegativeBatch512(x.data(), got.data(), static_cast<int64_t>(x.size()),
                                                               mult, shift));
      for (size_t i = 0; i < x.size(); ++i)
        ASSERT_EQ(got[i], kernels::MultiplyByQuantizedMultiplier(x[i], mult, shift))
            << "x " << x[i] << " mult " << mult << " shift " << shift;
    }
  }
  int32_t one = 1;
  EXPECT_FALSE(kernels::qbin::RequantizeNonNegativeBatch512(&one, &one, 1, 1 << 30, 1));  // a left shift
}

// The 16-lane AVX-512 ADD/SUB/MUL through the interpreter: same-shape runs of every length
// 1..1000 step 37 (odd ones: tails of 1..15 lanes) and a few round ones, a scalar on either side,
// per-channel vectors with channel counts that are not multiples of 16, outer sums / products
// ([R, 1] against [C]), general broadcasts,
// int8, uint8 and int16, random and extreme quantization, every fused activation, 1 and 2 threads.
TEST(QuantBinaryFast, Avx512AddSubMatchesReference) {
  if (!rt::Cpu().has_avx512()) GTEST_SKIP() << "no AVX-512 (F, BW, VL, DQ) on this CPU";
  std::mt19937_64 rng(512);
  int k = 0;
  std::vector<int> lengths;
  for (int n = 1; n <= 1000; n += 37) lengths.push_back(n);
  for (int n : {15, 16, 17, 31, 32, 33, 64, 1024, 4099}) lengths.push_back(n);
  for (auto op : {tflite::BuiltinOperator_ADD, tflite::BuiltinOperator_SUB, tflite::BuiltinOperator_MUL}) {
    for (DType type : {DType::kInt8, DType::kUInt8, DType::kInt16}) {
      for (int n : lengths) {
        BinCase c = RandomBinCase(rng, op, type);
        switch (k % 6) {
          case 0: c.a = c.b = {n}; break;
          // An outer sum / product: one value per row against one per channel.
          case 1: c.a = {1 + n % 9, 1 + n % 13, 1}; c.b = {1, 1 + n % 70}; break;
          case 2: c.a = {n}; c.b = {1}; break;
          case 3: c.a = {1}; c.b = {1, n}; break;
          // Per-channel rows: whole periods of lcm(channels, 16) values and the rows after them.
          default: c.a = {1, 3 + n % 47, 1 + n % 70}; c.b = {1 + n % 70}; break;
        }
        if (k % 7 == 3) std::swap(c.a, c.b);
        if (k % 11 == 5 && op != tflite::BuiltinOperator_MUL) {  // the widest input scale ratio and output scales at both ends
          c.qb.scale = {c.qa.scale[0] * (k % 2 ? 3e-6f : 3e5f)};
          c.qo.scale = {c.qa.scale[0] * (k % 4 < 2 ? 1e-6f : 1e3f)};
        }
        testing::FastCheck check;
        check.seed = 900 + k;
        check.threads = 1 + k % 2;
        check.op_type = tflite::EnumNameBuiltinOperator(op);
        check.variant = std::string("/") + DTypeName(type).data() + "/avx512";
        ++k;
        if (!testing::ExpectFastMatchesReference(BuildBinary(c), c.Describe(), check)) return;
      }
    }
  }
}

// The AVX-512 ADD/SUB runs against the scalar steps on every (x1, x2) pair of 8-bit values for
// parameters at the ends of the ranges AddSubAvx512Applies admits: multipliers 0, 2^30, 2^31 - 1
// and others, input shifts 0..-31, output shifts -31..31, offsets of +-255, both broadcast forms
// and the per-channel rows.
// Every (x1, x2) pair of 8-bit values (int16: of 256 values, the extremes -32768, -32767, 32767,
// 0, +-1, +-2^14 and random ones), and the scalar steps of quant_binary.h on them.
template <typename T>
struct AllPairs {
  static constexpr int kN = 256;
  std::vector<T> a, b, want;
  const kernels::QuantBinaryParams& p;

  static T Value(int i) {
    if constexpr (sizeof(T) == 1) {
      return static_cast<T>(i);
    } else {
      static const std::vector<T> values = [] {
        std::vector<T> v = {-32768, -32767, 32767, 0, 1, -1, 16384, -16384};
        std::mt19937_64 rng(16);
        while (v.size() < kN) v.push_back(static_cast<T>(std::uniform_int_distribution<int>(-32768, 32767)(rng)));
        return v;
      }();
      return values[i];
    }
  }

  explicit AllPairs(const kernels::QuantBinaryParams& params) : a(kN * kN), b(kN * kN), want(kN * kN), p(params) {
    for (int i = 0; i < kN; ++i)
      for (int j = 0; j < kN; ++j) {
        a[i * kN + j] = Value(i);
        b[i * kN + j] = Value(j);
      }
    for (size_t i = 0; i < a.size(); ++i) want[i] = Scalar(a[i], b[i]);
  }
  T Scalar(T x1, T x2) const {
    const int32_t v1 = kernels::AddSubScaledInput(x1, p.in1_offset, p.left_shift, p.in1_mult, p.in1_shift);
    const int32_t v2 = kernels::AddSubScaledInput(x2, p.in2_offset, p.left_shift, p.in2_mult, p.in2_shift);
    const int32_t raw = p.sub ? v1 - v2 : v1 + v2;
    const int32_t v = kernels::MultiplyByQuantizedMultiplier(raw, p.out_mult, p.out_shift) + p.out_offset;
    return static_cast<T>(std::min(std::max(v, p.act_min), p.act_max));
  }
};

template <typename T>
void CheckAvx512AllPairs(const kernels::QuantBinaryParams& p) {
  ASSERT_TRUE(kernels::qbin::AddSubAvx512Applies(p));
  const AllPairs<T> pairs(p);
  constexpr int kN = AllPairs<T>::kN;
  const std::vector<T>&a = pairs.a, &b = pairs.b, &want = pairs.want;
  std::vector<T> got(kN * kN);
  auto scalar = [&](T x1, T x2) { return pairs.Scalar(x1, x2); };
  // Same shape, with a start that is not a multiple of 16 and an odd length.
  kernels::qbin::AddSubRun512<T>(a.data(), 1, b.data(), 1, got.data(), kN * kN, p);
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_EQ(int{got[i]}, int{want[i]}) << "x1 " << int{a[i]} << " x2 " << int{b[i]};
  kernels::qbin::AddSubRun512<T>(a.data() + 3, 1, b.data() + 3, 1, got.data() + 3, kN * kN - 10, p);
  for (size_t i = 3; i < a.size() - 7; ++i) ASSERT_EQ(int{got[i]}, int{want[i]}) << "offset run at " << i;
  // A broadcast scalar on either side.
  for (int s = 0; s < kN; s += 51) {
    const T x = AllPairs<T>::Value(s);
    kernels::qbin::AddSubRun512<T>(&x, 0, b.data(), 1, got.data(), kN - 1, p);
    for (int j = 0; j < kN - 1; ++j) ASSERT_EQ(int{got[j]}, int{scalar(x, b[j])}) << "scalar a " << s;
    kernels::qbin::AddSubRun512<T>(b.data(), 1, &x, 0, got.data(), kN - 1, p);
    for (int j = 0; j < kN - 1; ++j) ASSERT_EQ(int{got[j]}, int{scalar(b[j], x)}) << "scalar b " << s;
  }
  // Per-channel rows: 37 channels, the vector scaled as the kernel does.
  constexpr int kC = 37;
  for (bool full_is_first : {true, false}) {
    std::vector<int32_t> vec(48, 0);
    for (int c = 0; c < kC; ++c)
      vec[c] = full_is_first ? kernels::AddSubScaledInput(b[c * 7], p.in2_offset, p.left_shift, p.in2_mult, p.in2_shift)
                             : kernels::AddSubScaledInput(b[c * 7], p.in1_offset, p.left_shift, p.in1_mult, p.in1_shift);
    const int rows = kN * kN / kC;
    kernels::qbin::AddSubChannelRows512<T>(a.data(), full_is_first, vec.data(), got.data(), rows, kC, p);
    for (int i = 0; i < rows * kC; ++i) {
      const T v = b[(i % kC) * 7];
      ASSERT_EQ(int{got[i]}, int{full_is_first ? scalar(a[i], v) : scalar(v, a[i])}) << "rows at " << i;
    }
  }
}

// Case `it` of the all-pairs sweeps: multipliers from `mults` (kM of them, the output one also
// 2^31 - 1), input shifts 0 or random in -31..0, output shifts from min_out_shift upwards, the
// largest ones, and random; ADD and SUB. Offsets and activation ranges are the caller's.
kernels::QuantBinaryParams ExtremeParams(int it, const int32_t* mults, int kM, int left_shift, int min_out_shift,
                                         std::mt19937_64& rng) {
  kernels::QuantBinaryParams p;
  p.left_shift = left_shift;
  p.sub = it % 2;
  p.in1_mult = mults[it % kM];
  p.in2_mult = mults[(it / kM + it) % kM];
  p.in1_shift = it % 4 == 1 ? 0 : -std::uniform_int_distribution<int>(0, 31)(rng);
  p.in2_shift = it % 3 == 0 ? 0 : -std::uniform_int_distribution<int>(0, 31)(rng);
  p.out_mult = it % 6 == 0 ? 0x7FFFFFFF : mults[(it * 5 + 3) % kM];
  p.out_shift = it < 8 ? min_out_shift + it
                : it < 16 ? it - 8 + 24
                          : std::uniform_int_distribution<int>(min_out_shift, 31)(rng);
  return p;
}

TEST(QuantBinaryFast, Avx512AllPairsExtremeParameters) {
  if (!rt::Cpu().has_avx512()) GTEST_SKIP() << "no AVX-512 (F, BW, VL, DQ) on this CPU";
  std::mt19937_64 rng(31);
  // Low 11 bits (the split of the input multiplier) all ones, zero, and with few trailing zeros so
  // v * (m mod 2^11) hits the rounding tie (an odd multiple of 2^10) for some |v| <= 255.
  const int32_t mults[] = {0,          1,          2047,       1 << 30,    (1 << 30) + 2047, (1 << 30) + 1024,
                           0x7FFFFFFF, 1518500250, 1234567891, (1 << 30) + (1 << 20) + 8,      1610612736 + 128};
  constexpr int kM = sizeof(mults) / sizeof(mults[0]);
  for (int it = 0; it < 66; ++it) {
    kernels::QuantBinaryParams p = ExtremeParams(it, mults, kM, 20, -31, rng);
    if (it % 4 < 2) {
      p.in1_offset = Pick(rng, {-255, 0, 127, 128, 255}) * (it % 2 ? 1 : -1);
      p.in2_offset = std::uniform_int_distribution<int>(-127, 128)(rng);
      p.out_offset = std::uniform_int_distribution<int>(-128, 127)(rng);
      p.act_min = -128 + it % 3 * 64;
      p.act_max = 127 - it % 5 * 30;
      CheckAvx512AllPairs<int8_t>(p);
    } else {
      p.in1_offset = -Pick(rng, {0, 1, 128, 255});
      p.in2_offset = -std::uniform_int_distribution<int>(0, 255)(rng);
      p.out_offset = std::uniform_int_distribution<int>(0, 255)(rng);
      p.act_min = it % 3 * 60;
      p.act_max = 255 - it % 5 * 40;
      CheckAvx512AllPairs<uint8_t>(p);
    }
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// int16 ADD/SUB on AVX-512 (left shift 15, the input multipliers split at 2^16) against the scalar
// steps on all pairs of 256 int16 values (the extremes among them): multipliers whose low 16
// bits are all ones, zero or a lone 2^15 (rounding ties of x * (m mod 2^16)), input shifts
// 0..-31, output shifts -30..31, activation ranges, both broadcast forms and the per-channel rows.
TEST(QuantBinaryFast, Avx512Int16AllPairsExtremeParameters) {
  if (!rt::Cpu().has_avx512()) GTEST_SKIP() << "no AVX-512 (F, BW, VL, DQ) on this CPU";
  std::mt19937_64 rng(1615);
  const int32_t mults[] = {0,          1,          65535,      1 << 30,    (1 << 30) + 65535, (1 << 30) + 32768,
                           0x7FFFFFFF, 1518500250, 1234567891, (1 << 30) + (1 << 20) + 8,       1610612736 + 128};
  constexpr int kM = sizeof(mults) / sizeof(mults[0]);
  for (int it = 0; it < 48; ++it) {
    kernels::QuantBinaryParams p = ExtremeParams(it, mults, kM, 15, -30, rng);
    p.act_min = it % 3 == 0 ? -32768 : it % 3 == 1 ? 0 : -1000;
    p.act_max = it % 5 == 0 ? 32767 : 6000;
    CheckAvx512AllPairs<int16_t>(p);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace edgeopt

namespace edgeopt {
namespace {

// run(a, b, out, n) (one of the 16-lane same-shape forms) against the scalar reference on every
// pair, then on the runs {start, len} (odd offsets, tails of different lengths), nothing written
// past a run. False at the first mismatch.
template <typename T, typename Run>
bool RunMatchesAllPairs(const AllPairs<T>& pairs, const Run& run, const std::vector<std::pair<int, int64_t>>& runs) {
  const int64_t n = static_cast<int64_t>(pairs.a.size());
  std::vector<T> got(pairs.a.size() + 64, T{0});
  run(pairs.a.data(), pairs.b.data(), got.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(int{got[i]}, int{pairs.want[i]}) << "x1 " << int{pairs.a[i]} << " x2 " << int{pairs.b[i]};
    if (got[i] != pairs.want[i]) return false;
  }
  for (const auto& [start, len] : runs) {
    std::fill(got.begin(), got.end(), T{0});
    run(pairs.a.data() + start, pairs.b.data() + start, got.data() + start, len);
    for (int64_t i = start; i < start + len; ++i) {
      EXPECT_EQ(int{got[i]}, int{pairs.want[i]}) << "run from " << start << " at " << i;
      if (got[i] != pairs.want[i]) return false;
    }
    EXPECT_EQ(int{got[start + len]}, 0) << "wrote past the tail";
  }
  return true;
}

// The linear form (AddSubLinear512; allow_lut: also its table form, which needs AVX-512 VBMI) on
// every (x1, x2) pair, whole runs and runs starting at odd offsets with tails of 1..15 lanes.
// Returns the plan (not ok: nothing checked).
template <typename T>
kernels::qbin::AddSubLinear512 CheckLinearAllPairs(const kernels::QuantBinaryParams& p, bool allow_lut) {
  const kernels::qbin::AddSubLinear512 plan = kernels::qbin::PlanAddSubLinear512<T>(p, allow_lut);
  if (!plan.ok) return plan;
  const AllPairs<T> pairs(p);
  const int64_t n = static_cast<int64_t>(pairs.a.size());
  std::vector<std::pair<int, int64_t>> runs;
  for (int start = 1; start < 16; start += 5) runs.emplace_back(start, n - 16 - 2 * start - 1);
  RunMatchesAllPairs(
      pairs, [&](const T* a, const T* b, T* o, int64_t len) { kernels::qbin::AddSubLinearRun512<T>(a, b, o, len, plan); },
      runs);
  return plan;
}

// 8-bit ADD (it even) / SUB parameters as ComputeAddSubMultipliers makes them: scale ratios from
// 1 to 2^-22, output scales from far below to far above the inputs', every zero point range and
// activation (none, RELU, RELU6-like, a raised minimum).
kernels::QuantBinaryParams RandomAddSubParams(std::mt19937_64& rng, int it, bool is_uint8, float* sa_out,
                                              float* sb_out) {
  kernels::QuantBinaryParams p;
  p.sub = it % 2;
  const float sa = std::pow(10.0f, std::uniform_real_distribution<float>(-3, 0)(rng));
  const float ratio = it % 8 == 0 ? 1.0f : std::pow(2.0f, -std::uniform_real_distribution<float>(0, 22)(rng));
  const float sb = (it / 2) % 2 ? sa * ratio : sa / ratio;
  const float so = sa * std::pow(10.0f, std::uniform_real_distribution<float>(-1.5f, 2.5f)(rng));
  kernels::ComputeAddSubMultipliers(sa, sb, so, 20, &p);
  const int lo = is_uint8 ? 0 : -128, hi = is_uint8 ? 255 : 127;
  p.in1_offset = -std::uniform_int_distribution<int>(lo, hi)(rng);
  p.in2_offset = -(it % 5 == 0 ? lo : std::uniform_int_distribution<int>(lo, hi)(rng));
  const int zero_point_kind = std::uniform_int_distribution<int>(0, 5)(rng);
  p.out_offset = zero_point_kind == 0 ? lo : zero_point_kind == 1 ? hi : std::uniform_int_distribution<int>(lo, hi)(rng);
  switch (std::uniform_int_distribution<int>(0, 3)(rng)) {
    case 0: p.act_min = lo; p.act_max = hi; break;                                       // none
    case 1: p.act_min = std::max(lo, p.out_offset); p.act_max = hi; break;               // RELU
    case 2: p.act_min = std::max(lo, p.out_offset); p.act_max = std::max(p.act_min, hi - 20); break;
    default: p.act_min = std::min(hi, lo + 30); p.act_max = hi; break;
  }
  *sa_out = sa;
  *sb_out = sb;
  return p;
}

// Parameters as ComputeAddSubMultipliers makes them (the larger-scale input has multiplier 2^30
// and no shift: the linear input), over scale ratios from 1 to 2^-22, output scales from far
// below to far above, every zero point range and activation: the plan must accept every case
// whose output shift is a right shift (or none) and the other input's shift is at most 20, and
// every form (linear input first / second, ADD / SUB, tie correction on / off, clamp on / off)
// must occur. Edge multipliers by hand: out_mult 2^30 (q < 0 from raw <= -2, not -1), 2^31 - 1,
// 0, input multipliers whose low 11 bits make ties.
TEST(QuantBinaryFast, Avx512LinearFormAllPairs) {
  if (!rt::Cpu().has_avx512()) GTEST_SKIP() << "no AVX-512 (F, BW, VL, DQ) on this CPU";
  std::mt19937_64 rng(4242);
  int checked = 0, tables = 0, forms[2][2][2][2] = {};
  auto run = [&](const kernels::QuantBinaryParams& p, bool is_uint8) {
    const auto plan = is_uint8 ? CheckLinearAllPairs<uint8_t>(p, false) : CheckLinearAllPairs<int8_t>(p, false);
    if (plan.ok) {
      ++checked;
      ++forms[plan.lin_first][p.sub][plan.correct_neg][plan.clamp];
    }
    const bool vbmi = rt::Cpu().avx512vbmi;
    const auto table = is_uint8 ? CheckLinearAllPairs<uint8_t>(p, vbmi) : CheckLinearAllPairs<int8_t>(p, vbmi);
    EXPECT_EQ(table.ok, plan.ok);
    tables += table.lut;
    return plan.ok;
  };
  for (int it = 0; it < 320 && !HasFailure(); ++it) {
    const bool is_uint8 = it % 3 == 2;
    float sa = 0, sb = 0;
    const kernels::QuantBinaryParams p = RandomAddSubParams(rng, it, is_uint8, &sa, &sb);
    const bool admitted = run(p, is_uint8);
    const int gen_shift = sa >= sb ? p.in2_shift : p.in1_shift;
    // Output shifts beyond 21 may leave int64 with the zero point term (2 zo 2^(31+E)).
    if (p.out_shift <= 0 && p.out_shift >= -21 && gen_shift >= -20) {
      EXPECT_TRUE(admitted) << "case " << it << " out_shift " << p.out_shift;
    }
  }
  for (int32_t out_mult : {1 << 30, 0x7FFFFFFF, 0, (1 << 30) + 1}) {
    for (int32_t gen_mult : {1 << 30, (1 << 30) + 1024, (1 << 30) + 2047, 1518500250}) {
      for (int out_shift : {0, -1, -8, -20}) {
        kernels::QuantBinaryParams p;
        p.left_shift = 20;
        p.sub = out_shift == -1;
        p.in1_mult = 1 << 30;
        p.in2_mult = gen_mult;
        p.in2_shift = out_shift == 0 ? 0 : -3;
        p.out_mult = out_mult;
        p.out_shift = out_shift;
        p.in1_offset = 128;
        p.in2_offset = -127;
        p.out_offset = -5;
        p.act_min = -128;
        p.act_max = 127;
        EXPECT_TRUE(run(p, false));
        std::swap(p.in1_mult, p.in2_mult);
        std::swap(p.in1_shift, p.in2_shift);
        EXPECT_TRUE(run(p, false));
      }
    }
  }
  EXPECT_GT(checked, 250);
  if (rt::Cpu().avx512vbmi) {
    EXPECT_GT(tables, 250);
  }
  for (int f = 0; f < 16; ++f)
    EXPECT_GT(forms[f >> 3][(f >> 2) & 1][(f >> 1) & 1][f & 1], 0) << "form " << f << " never checked";
}

// The linear form through the interpreter on tensors shaped like ResNet-8's residual ADDs (the
// variant must be .../lin), odd sizes for the tails, 1 and 2 threads.
TEST(QuantBinaryFast, Avx512LinearFormInInterpreter) {
  if (!rt::Cpu().has_avx512()) GTEST_SKIP() << "no AVX-512 (F, BW, VL, DQ) on this CPU";
  std::mt19937_64 rng(88);
  int k = 0;
  for (auto op : {tflite::BuiltinOperator_ADD, tflite::BuiltinOperator_SUB}) {
    for (DType type : {DType::kInt8, DType::kUInt8}) {
      for (std::vector<int32_t> shape : {std::vector<int32_t>{1, 32, 32, 16}, {1, 8, 8, 64}, {1, 5, 7, 3}, {2, 9, 11, 17}}) {
        BinCase c = RandomBinCase(rng, op, type);
        c.a = c.b = shape;
        // Output scale near the inputs' so the output shift is a right shift.
        c.qo.scale = {std::max(c.qa.scale[0], c.qb.scale[0]) * std::uniform_real_distribution<float>(0.6f, 4.0f)(rng)};
        testing::FastCheck check;
        check.seed = 300 + k;
        check.threads = 1 + k % 2;
        check.op_type = tflite::EnumNameBuiltinOperator(op);
        // (The fp32 form takes 8-bit ADD / SUB of 4096 values or more where its constants pass.)
        check.variant = rt::Cpu().avx512vbmi ? "/avx512/lut|/avx512/float" : "/avx512/lin|/avx512/float";
        ++k;
        if (!testing::ExpectFastMatchesReference(BuildBinary(c), c.Describe(), check)) return;
      }
    }
  }
}

// The fp32 form (AddSubFloat512): its plan checks itself against the exact integer form on every
// pair; here every plan it accepts is checked against the scalar reference on every pair, and on
// runs at odd offsets with tails of 1..63 values (nothing written past them). It must accept
// nearly every parameter set (whatever the integer forms: with and without the linear plan).
template <typename T>
bool CheckFloatAllPairs(const kernels::QuantBinaryParams& p, bool with_linear) {
  const auto exact = with_linear ? kernels::qbin::PlanAddSubLinear512<T>(p, rt::Cpu().avx512vbmi)
                                 : kernels::qbin::AddSubLinear512();
  const kernels::qbin::AddSubFloat512 plan = kernels::qbin::PlanAddSubFloat512<T>(p, exact);
  if (!plan.ok) return false;
  const AllPairs<T> pairs(p);
  const int64_t n = static_cast<int64_t>(pairs.a.size());
  std::vector<std::pair<int, int64_t>> runs;
  for (int start : {1, 17, 40}) runs.emplace_back(start, n - 64 - 2 * start - 1 - start);  // tails of different lengths
  RunMatchesAllPairs(
      pairs, [&](const T* a, const T* b, T* o, int64_t len) { kernels::qbin::AddSubFloatRun512<T>(a, b, o, len, plan); },
      runs);
  return true;
}

TEST(QuantBinaryFast, Avx512FloatFormAllPairs) {
  if (!rt::Cpu().has_avx512()) GTEST_SKIP() << "no AVX-512 (F, BW, VL, DQ) on this CPU";
  std::mt19937_64 rng(5151);
  int tried = 0, taken = 0, taken_sub = 0, taken_uint8 = 0;
  for (int it = 0; it < 160 && !HasFailure(); ++it) {
    const bool is_uint8 = it % 3 == 2;
    float sa = 0, sb = 0;
    const kernels::QuantBinaryParams p = RandomAddSubParams(rng, it, is_uint8, &sa, &sb);
    const bool ok = is_uint8 ? CheckFloatAllPairs<uint8_t>(p, it % 4 != 1) : CheckFloatAllPairs<int8_t>(p, it % 4 != 1);
    ++tried;
    taken += ok;
    taken_sub += ok && p.sub;
    taken_uint8 += ok && is_uint8;
  }
  std::printf("fp32 ADD / SUB form: %d of %d parameter sets (%d SUB, %d uint8)\n", taken, tried, taken_sub, taken_uint8);
  EXPECT_GT(taken, tried * 85 / 100);
  EXPECT_GT(taken_sub, 40);
  EXPECT_GT(taken_uint8, 30);
}

}  // namespace
}  // namespace edgeopt
