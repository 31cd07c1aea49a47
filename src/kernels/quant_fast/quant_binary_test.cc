// The fast quantized ADD / SUB / MUL (quant_binary_fast.cc) against the reference kernel, bit for
// bit, over random cases: int8 / uint8 / int16, same shapes of odd sizes (tails that are not a
// multiple of 8 or 32), a scalar on either side, per-channel vectors over the last dimension,
// general broadcasts, scales spread over four decades (extreme multipliers), zero points up to
// the type's limits, every fused activation, 1 and 2 threads. A few cases also run against
// TFLite 2.9 directly.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <sstream>

#include "graph/builder.h"
#include "kernels/quant_fast/quant_binary.h"
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
  } else {
    tflite::MulOptionsT o;
    o.fused_activation_function = act;
    b.Op(c.op, {x, y}, {z}, o);
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
        testing::FastCheck check;
        check.seed = 100 + i;
        check.threads = (i % 3 == 0) ? 2 : 1;
        check.op_type = tflite::EnumNameBuiltinOperator(op);
        check.variant = "/avx2";
        if (!testing::ExpectFastMatchesReference(BuildBinary(c), c.Describe(), check)) return;
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
          testing::FastCheck check;
          check.seed = ++k;
          check.op_type = tflite::EnumNameBuiltinOperator(op);
          check.variant = "/avx2";
          if (!testing::ExpectFastMatchesReference(BuildBinary(c), c.Describe(), check)) return;
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
    for (bool scalar : {false, true}) {
      BinCase c = RandomBinCase(rng, op, DType::kInt8);
      c.a = {1, 64, 64, 33};
      c.b = scalar ? std::vector<int32_t>{1} : c.a;
      testing::FastCheck check;
      check.threads = 2;
      check.op_type = tflite::EnumNameBuiltinOperator(op);
      check.variant = "/avx2";
      if (!testing::ExpectFastMatchesReference(BuildBinary(c), c.Describe(), check)) return;
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

}  // namespace
}  // namespace edgeopt
