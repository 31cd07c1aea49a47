// ATAN2, BITWISE_XOR, RIGHT_SHIFT and BITCAST. TFLite 2.9 has none of these ops (its op table
// ends before them; Tflite29LacksTheseOps checks that), so the results are checked against values
// computed here by plain loops (broadcast indices worked out per element), plus hand-picked
// cases; where LiteRT.js (a newer LiteRT) is installed, a few graphs are also compared with it.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <random>

#include "format/writer.h"
#include "graph/builder.h"
#include "support/conformance.h"
#include "support/op_cases.h"

namespace edgeopt {
namespace {

using testing::CaseRng;
using testing::MakeValue;
using testing::TensorValue;

Graph BinaryGraph(tflite::BuiltinOperator op, DType t, const std::vector<int32_t>& sa, const std::vector<int32_t>& sb,
                  const std::vector<int32_t>& so) {
  GraphBuilder b;
  auto a = b.Input("a", t, sa);
  auto c = b.Input("b", t, sb);
  auto y = b.Tensor("y", t, so);
  b.Op(op, {a, c}, {y});
  b.Output(y);
  return b.Finish();
}

// out = f(a, b) broadcast numpy-style, each output element's input positions computed directly.
template <typename T, typename F>
std::vector<T> Want(const std::vector<T>& a, const std::vector<int32_t>& sa, const std::vector<T>& b,
                        const std::vector<int32_t>& sb, const std::vector<int32_t>& so, F f) {
  const size_t rank = so.size();
  int64_t n = 1;
  for (int32_t d : so) n *= d;
  std::vector<T> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int64_t> idx(rank);
    int64_t rem = i;
    for (size_t d = rank; d-- > 0;) {
      idx[d] = rem % so[d];
      rem /= so[d];
    }
    auto offset = [&](const std::vector<int32_t>& s) {
      int64_t off = 0;
      const size_t pad = rank - s.size();
      for (size_t d = 0; d < s.size(); ++d) off = off * s[d] + (s[d] == 1 ? 0 : idx[pad + d]);
      return off;
    };
    out[static_cast<size_t>(i)] = f(a[static_cast<size_t>(offset(sa))], b[static_cast<size_t>(offset(sb))]);
  }
  return out;
}

template <typename T>
std::vector<T> RandomInts(std::mt19937_64& rng, int64_t n, int64_t lo, int64_t hi) {
  std::uniform_int_distribution<int64_t> d(lo, hi);
  std::vector<T> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<T>(d(rng));
  return v;
}

int64_t Count(const std::vector<int32_t>& s) {
  int64_t n = 1;
  for (int32_t d : s) n *= d;
  return n;
}

struct ShapeCase {
  std::vector<int32_t> a, b, out;
};
const std::vector<ShapeCase>& Shapes() {
  static const std::vector<ShapeCase> k = {
      {{7}, {7}, {7}},
      {{2, 3, 5}, {2, 3, 5}, {2, 3, 5}},
      {{2, 3, 5}, {5}, {2, 3, 5}},
      {{2, 1, 5}, {1, 4, 1}, {2, 4, 5}},
      {{}, {3, 2}, {3, 2}},
      {{3, 2}, {}, {3, 2}},
      {{1, 2, 1, 3, 1, 2}, {2, 1, 3, 3, 2, 1}, {2, 2, 3, 3, 2, 2}},  // rank 6
      {{0, 3}, {1, 3}, {0, 3}},
  };
  return k;
}

// Runs edgeopt and, if LiteRT.js is installed, compares the same graph with it.
Expected<std::vector<TensorValue>> RunAndMaybeLiteRt(const Graph& g, const std::vector<TensorValue>& inputs,
                                                     bool compare_litert, const std::string& label) {
  if (compare_litert && testing::LiteRtJsAvailable()) {
    auto o = testing::ExactOptions();
    o.oracle = testing::Oracle::kLiteRtJs;
    const auto r = testing::CompareGraph(g, o, inputs);
    EXPECT_TRUE(r.ok) << label << " vs LiteRT.js\n" << r.Summary() << r.error;
  }
  return testing::RunOursValues(g, inputs);
}

template <typename T>
void CheckIntBinary(tflite::BuiltinOperator op, DType t, uint64_t seed) {
  std::mt19937_64 rng(seed);
  constexpr int kBits = sizeof(T) * CHAR_BIT;
  int case_no = 0;
  for (const ShapeCase& sc : Shapes()) {
    const bool shift = op == tflite::BuiltinOperator_RIGHT_SHIFT;
    auto a = RandomInts<T>(rng, Count(sc.a), std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
    // Shift amounts: negative (for signed types), in range, and past the width.
    auto b = shift ? RandomInts<T>(rng, Count(sc.b), std::is_signed_v<T> ? -4 : 0, kBits + 6)
                   : RandomInts<T>(rng, Count(sc.b), std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
    const Graph g = BinaryGraph(op, t, sc.a, sc.b, sc.out);
    std::vector<TensorValue> in = {MakeValue<T>("a", t, sc.a, a), MakeValue<T>("b", t, sc.b, b)};
    const std::string label = std::string(shift ? "RIGHT_SHIFT " : "BITWISE_XOR ") + std::string(DTypeName(t)) + " " +
                              testing::ShapeText(sc.a) + " x " + testing::ShapeText(sc.b);
    // The harness passes no uint16 tensors to LiteRT.js; LiteRT broadcasts up to rank 4.
    auto out = RunAndMaybeLiteRt(g, in, case_no++ % 3 == 0 && sc.out.size() <= 4 && t != DType::kUInt16, label);
    ASSERT_TRUE(out.ok()) << label << ": " << out.status().ToString();
    ASSERT_EQ((*out)[0].shape, sc.out) << label;
    const auto want = Want<T>(a, sc.a, b, sc.b, sc.out, [&](T x, T y) -> T {
      if (!shift) return static_cast<T>(x ^ y);
      int64_t s = static_cast<int64_t>(y);
      s = s < 0 ? 0 : (s > kBits - 1 ? kBits - 1 : s);
      // Floor division by 2^s is the arithmetic shift for signed values.
      const int64_t v = static_cast<int64_t>(x);
      const int64_t p = int64_t{1} << s;
      return static_cast<T>(v >= 0 ? v / p : -((-v + p - 1) / p));
    });
    EXPECT_EQ(ValuesOf<T>((*out)[0]), want) << label;
  }
}

TEST(BitwiseOps, Tflite29LacksTheseOps) {
  if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  for (auto op : {tflite::BuiltinOperator_ATAN2, tflite::BuiltinOperator_BITWISE_XOR,
                  tflite::BuiltinOperator_RIGHT_SHIFT}) {
    const DType t = op == tflite::BuiltinOperator_ATAN2 ? DType::kFloat32 : DType::kInt32;
    const Graph g = BinaryGraph(op, t, {3}, {3}, {3});
    auto bytes = SerializeModel(g);
    ASSERT_TRUE(bytes.ok());
    auto ref = testing::RunTflite29(*bytes, testing::RandomInputs(g, testing::ExactOptions()));
    EXPECT_FALSE(ref.ok()) << tflite::EnumNameBuiltinOperator(op) << " now runs in TFLite 2.9: compare with it";
  }
  GraphBuilder b;
  auto x = b.Input("x", DType::kFloat32, {3});
  auto y = b.Tensor("y", DType::kInt32, {3});
  b.Op(tflite::BuiltinOperator_BITCAST, {x}, {y});
  b.Output(y);
  const Graph g = b.Finish();
  auto bytes = SerializeModel(g);
  ASSERT_TRUE(bytes.ok());
  EXPECT_FALSE(testing::RunTflite29(*bytes, testing::RandomInputs(g, testing::ExactOptions())).ok());
}

TEST(BitwiseOps, BitwiseXorAllTypes) {
  using Op = tflite::BuiltinOperator;
  CheckIntBinary<int8_t>(Op::BuiltinOperator_BITWISE_XOR, DType::kInt8, 1);
  CheckIntBinary<uint8_t>(Op::BuiltinOperator_BITWISE_XOR, DType::kUInt8, 2);
  CheckIntBinary<int16_t>(Op::BuiltinOperator_BITWISE_XOR, DType::kInt16, 3);
  CheckIntBinary<uint16_t>(Op::BuiltinOperator_BITWISE_XOR, DType::kUInt16, 4);
  CheckIntBinary<int32_t>(Op::BuiltinOperator_BITWISE_XOR, DType::kInt32, 5);
  CheckIntBinary<uint32_t>(Op::BuiltinOperator_BITWISE_XOR, DType::kUInt32, 6);
}

TEST(BitwiseOps, RightShiftAllTypes) {
  using Op = tflite::BuiltinOperator;
  CheckIntBinary<int8_t>(Op::BuiltinOperator_RIGHT_SHIFT, DType::kInt8, 11);
  CheckIntBinary<uint8_t>(Op::BuiltinOperator_RIGHT_SHIFT, DType::kUInt8, 12);
  CheckIntBinary<int16_t>(Op::BuiltinOperator_RIGHT_SHIFT, DType::kInt16, 13);
  CheckIntBinary<uint16_t>(Op::BuiltinOperator_RIGHT_SHIFT, DType::kUInt16, 14);
  CheckIntBinary<int32_t>(Op::BuiltinOperator_RIGHT_SHIFT, DType::kInt32, 15);
  CheckIntBinary<uint32_t>(Op::BuiltinOperator_RIGHT_SHIFT, DType::kUInt32, 16);
}

// Shift amounts out of range, written out by hand: negative shifts by 0, >= width by width - 1.
TEST(BitwiseOps, RightShiftHandCases) {
  {
    const Graph g = BinaryGraph(tflite::BuiltinOperator_RIGHT_SHIFT, DType::kInt8, {6}, {6}, {6});
    auto out = testing::RunOursValues(g, {MakeValue<int8_t>("a", DType::kInt8, {6}, {-128, -128, 127, -1, 100, -7}),
                                          MakeValue<int8_t>("b", DType::kInt8, {6}, {3, -1, 9, 1, 7, 127})});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(ValuesOf<int8_t>((*out)[0]), (std::vector<int8_t>{-16, -128, 0, -1, 0, -1}));
  }
  {
    const Graph g = BinaryGraph(tflite::BuiltinOperator_RIGHT_SHIFT, DType::kUInt32, {4}, {}, {4});
    auto out = testing::RunOursValues(
        g, {MakeValue<uint32_t>("a", DType::kUInt32, {4}, {0xFFFFFFFFu, 0x80000000u, 12345u, 1u}),
            MakeValue<uint32_t>("b", DType::kUInt32, {}, {40})});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(ValuesOf<uint32_t>((*out)[0]), (std::vector<uint32_t>{1u, 1u, 0u, 0u}));
  }
}

TEST(Atan2Ops, BroadcastAndTypes) {
  std::mt19937_64 rng(21);
  std::uniform_real_distribution<double> d(-3.0, 3.0);
  int case_no = 0;
  for (const ShapeCase& sc : Shapes()) {
    std::vector<float> y(static_cast<size_t>(Count(sc.a))), x(static_cast<size_t>(Count(sc.b)));
    for (auto& v : y) v = static_cast<float>(d(rng));
    for (auto& v : x) v = static_cast<float>(d(rng));
    const Graph g = BinaryGraph(tflite::BuiltinOperator_ATAN2, DType::kFloat32, sc.a, sc.b, sc.out);
    const std::string label = "ATAN2 float32 " + testing::ShapeText(sc.a) + " x " + testing::ShapeText(sc.b);
    // LiteRT's ATAN2 does not broadcast (it walks y's elements): compare same shapes only.
    auto out = RunAndMaybeLiteRt(g, {MakeValue<float>("a", DType::kFloat32, sc.a, y),
                                     MakeValue<float>("b", DType::kFloat32, sc.b, x)},
                                 sc.a == sc.b && case_no++ < 2, label);
    ASSERT_TRUE(out.ok()) << label << ": " << out.status().ToString();
    ASSERT_EQ((*out)[0].shape, sc.out) << label;
    const auto want = Want<float>(y, sc.a, x, sc.b, sc.out, [](float p, float q) { return std::atan2(p, q); });
    const auto got = ValuesOf<float>((*out)[0]);
    ASSERT_EQ(got.size(), want.size()) << label;
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[i]) << label << " element " << i;
  }
  {  // float64
    const std::vector<double> y = {1.0, -1.0, 0.5, 2.0}, x = {1.0, -1.0, -2.0, 0.0};
    const Graph g = BinaryGraph(tflite::BuiltinOperator_ATAN2, DType::kFloat64, {4}, {4}, {4});
    auto out = testing::RunOursValues(g, {MakeValue<double>("a", DType::kFloat64, {4}, y),
                                          MakeValue<double>("b", DType::kFloat64, {4}, x)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    const auto got = ValuesOf<double>((*out)[0]);
    const double pi = std::numbers::pi;
    const std::vector<double> want = {pi / 4, -3 * pi / 4, std::atan2(0.5, -2.0), pi / 2};
    for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(got[i], want[i], 1e-15) << i;
  }
}

// Signed zeros, infinities and NaN follow C's atan2.
TEST(Atan2Ops, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> y = {0.f, 0.f, -0.f, -0.f, 1.f, inf, inf, -inf, nan, 1.f};
  const std::vector<float> x = {0.f, -0.f, 0.f, -0.f, 0.f, inf, -inf, 1.f, 1.f, nan};
  const float pi = std::numbers::pi_v<float>;
  const std::vector<float> want = {0.f, pi, -0.f, -pi, pi / 2, pi / 4, 3 * pi / 4, -pi / 2, nan, nan};
  const int32_t n = static_cast<int32_t>(y.size());
  const Graph g = BinaryGraph(tflite::BuiltinOperator_ATAN2, DType::kFloat32, {n}, {n}, {n});
  auto out = testing::RunOursValues(
      g, {MakeValue<float>("a", DType::kFloat32, {n}, y), MakeValue<float>("b", DType::kFloat32, {n}, x)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const auto got = ValuesOf<float>((*out)[0]);
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << i;
    } else {
      EXPECT_NEAR(got[i], want[i], 1e-6f) << i;
      EXPECT_EQ(std::signbit(got[i]), std::signbit(want[i])) << i;
    }
  }
}

struct BitcastCase {
  DType in, out;
  std::vector<int32_t> in_shape, out_shape;
};

TEST(BitcastOps, ShapesAndBytes) {
  const std::vector<BitcastCase> cases = {
      {DType::kFloat32, DType::kInt32, {2, 3}, {2, 3}},
      {DType::kFloat32, DType::kUInt8, {3}, {3, 4}},
      {DType::kUInt8, DType::kFloat32, {2, 4}, {2}},
      {DType::kInt16, DType::kInt32, {5, 2}, {5}},
      {DType::kInt64, DType::kInt16, {2, 2}, {2, 2, 4}},
      {DType::kInt8, DType::kInt64, {8}, {}},
      {DType::kFloat16, DType::kInt16, {3, 1}, {3, 1}},
      {DType::kUInt32, DType::kInt8, {}, {4}},
      {DType::kInt32, DType::kUInt8, {0, 2}, {0, 2, 4}},
  };
  std::mt19937_64 rng(31);
  int case_no = 0;
  for (const BitcastCase& c : cases) {
    GraphBuilder b;
    auto x = b.Input("x", c.in, c.in_shape);
    auto y = b.Tensor("y", c.out, c.out_shape);
    b.Op(tflite::BuiltinOperator_BITCAST, {x}, {y});
    b.Output(y);
    const Graph g = b.Finish();
    const size_t nbytes = static_cast<size_t>(Count(c.in_shape)) * static_cast<size_t>(DTypeSize(c.in));
    TensorValue in;
    in.name = "x";
    in.type = c.in;
    in.shape = c.in_shape;
    in.data = RandomInts<uint8_t>(rng, static_cast<int64_t>(nbytes), 0, 255);
    const std::string label = std::string("BITCAST ") + std::string(DTypeName(c.in)) + testing::ShapeText(c.in_shape) + " -> " +
                              std::string(DTypeName(c.out));
    auto out = RunAndMaybeLiteRt(g, {in}, case_no++ < 2, label);
    ASSERT_TRUE(out.ok()) << label << ": " << out.status().ToString();
    EXPECT_EQ((*out)[0].shape, c.out_shape) << label;
    EXPECT_EQ((*out)[0].data, in.data) << label;
  }
}

TEST(BitwiseErrors, BadInputsGiveErrors) {
  auto expect_error = [](const Graph& g, const std::string& needle) {
    const Status s = testing::RunOurs(g);
    EXPECT_FALSE(s.ok()) << needle;
    EXPECT_NE(s.ToString().find(needle), std::string::npos) << s.ToString();
  };
  expect_error(BinaryGraph(tflite::BuiltinOperator_BITWISE_XOR, DType::kFloat32, {3}, {3}, {3}), "float32");
  expect_error(BinaryGraph(tflite::BuiltinOperator_RIGHT_SHIFT, DType::kInt64, {3}, {3}, {3}), "int64");
  expect_error(BinaryGraph(tflite::BuiltinOperator_ATAN2, DType::kInt32, {3}, {3}, {3}), "int32");
  expect_error(BinaryGraph(tflite::BuiltinOperator_BITWISE_XOR, DType::kInt32, {3}, {4}, {3}), "broadcast");
  {  // mixed input types
    GraphBuilder b;
    auto a = b.Input("a", DType::kInt32, {3});
    auto c = b.Input("b", DType::kUInt32, {3});
    auto y = b.Tensor("y", DType::kInt32, {3});
    b.Op(tflite::BuiltinOperator_RIGHT_SHIFT, {a, c}, {y});
    b.Output(y);
    expect_error(b.Finish(), "same type");
  }
  {  // BITCAST int8 [3] -> int32: the last dimension must be 4
    GraphBuilder b;
    auto x = b.Input("x", DType::kInt8, {2, 3});
    auto y = b.Tensor("y", DType::kInt32, {2});
    b.Op(tflite::BuiltinOperator_BITCAST, {x}, {y});
    b.Output(y);
    expect_error(b.Finish(), "last dimension must be 4");
  }
  {  // BITCAST of a scalar into a wider type
    GraphBuilder b;
    auto x = b.Input("x", DType::kInt8, {});
    auto y = b.Tensor("y", DType::kInt16, {});
    b.Op(tflite::BuiltinOperator_BITCAST, {x}, {y});
    b.Output(y);
    expect_error(b.Finish(), "last dimension must be 2");
  }
}

}  // namespace
}  // namespace edgeopt
