// AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D against TFLite 2.9 over generated cases: every
// type each op supports, odd shapes, batch 2, SAME/VALID, strides, filters larger than the
// stride and than the input, fused activations; plus error paths.
#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "graph/builder.h"
#include "support/conformance.h"
#include "support/nn_test_util.h"

namespace edgeopt {
namespace {

using testing::ExactOptions;
using testing::ExpectMatches;
using testing::ExpectRejected;

struct PoolCase {
  tflite::BuiltinOperator op = tflite::BuiltinOperator_AVERAGE_POOL_2D;
  DType type = DType::kFloat32;
  int n = 1, h = 6, w = 5, c = 3;
  int fh = 2, fw = 2, stride_h = 2, stride_w = 2;
  int padding = tflite::Padding_SAME;
  int act = tflite::ActivationFunctionType_NONE;

  std::string Describe() const {
    std::ostringstream s;
    s << BuiltinName(op) << " " << DTypeName(type) << " in [" << n << "," << h << "," << w << "," << c << "] filter "
      << fh << "x" << fw << " stride " << stride_h << "x" << stride_w << " "
      << (padding == tflite::Padding_SAME ? "SAME" : "VALID") << " act " << act;
    return s.str();
  }
};

int OutSize(int padding, int in, int k, int stride) {
  stride = std::max(stride, 1);
  return padding == tflite::Padding_SAME ? (in + stride - 1) / stride : (in + stride - k) / stride;
}

Graph BuildPool(const PoolCase& c, uint64_t seed) {
  GraphBuilder b(seed);
  std::optional<QuantParams> q;
  if (c.type != DType::kFloat32) q = testing::RandomActivationQuant(b.rng(), c.type);
  auto x = b.Input("x", c.type, {c.n, c.h, c.w, c.c}, q);
  auto y = b.Tensor(
      "y", c.type, {c.n, OutSize(c.padding, c.h, c.fh, c.stride_h), OutSize(c.padding, c.w, c.fw, c.stride_w), c.c}, q);
  tflite::Pool2DOptionsT o;
  o.padding = static_cast<tflite::Padding>(c.padding);
  o.stride_h = c.stride_h;
  o.stride_w = c.stride_w;
  o.filter_height = c.fh;
  o.filter_width = c.fw;
  o.fused_activation_function = static_cast<tflite::ActivationFunctionType>(c.act);
  b.Op(c.op, {x}, {y}, o);
  b.Output(y);
  return b.Finish();
}

PoolCase RandomCase(std::mt19937_64& rng, tflite::BuiltinOperator op, DType type) {
  auto pick = [&](std::initializer_list<int> v) {
    return *(v.begin() + std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng));
  };
  PoolCase c;
  c.op = op;
  c.type = type;
  for (;;) {
    c.n = pick({1, 1, 2});
    c.h = pick({1, 2, 3, 5, 8, 9, 14});
    c.w = pick({1, 3, 4, 7, 10});
    c.c = pick({1, 2, 3, 8, 17});
    c.fh = pick({1, 2, 3, 3, 5, 7});
    c.fw = pick({1, 2, 2, 3, 4});
    c.stride_h = pick({1, 1, 2, 3});
    c.stride_w = pick({1, 2, 2, 4});
    c.padding = pick({tflite::Padding_SAME, tflite::Padding_VALID});
    c.act = pick({tflite::ActivationFunctionType_NONE, tflite::ActivationFunctionType_RELU,
                  tflite::ActivationFunctionType_RELU6, tflite::ActivationFunctionType_RELU_N1_TO_1});
    if (OutSize(c.padding, c.h, c.fh, c.stride_h) >= 1 && OutSize(c.padding, c.w, c.fw, c.stride_w) >= 1) return c;
  }
}

class PoolingConformance : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  }
  void RunRandom(tflite::BuiltinOperator op, DType type, int count, uint64_t seed) {
    std::mt19937_64 rng(seed);
    testing::CompareOptions opts = ExactOptions();
    opts.float_lo = -8;  // beyond RELU6's range
    opts.float_hi = 8;
    int failures = 0;
    for (int i = 0; i < count && failures < 5; ++i) {
      PoolCase c = RandomCase(rng, op, type);
      if (!ExpectMatches(BuildPool(c, seed * 1000 + i), "case " + std::to_string(i) + ": " + c.Describe(), opts))
        ++failures;
    }
  }
};

TEST_F(PoolingConformance, AveragePool) {
  uint64_t seed = 70;
  for (DType t : {DType::kFloat32, DType::kUInt8, DType::kInt8, DType::kInt16})
    RunRandom(tflite::BuiltinOperator_AVERAGE_POOL_2D, t, 30, seed++);
}

TEST_F(PoolingConformance, MaxPool) {
  uint64_t seed = 80;
  for (DType t : {DType::kFloat32, DType::kUInt8, DType::kInt8, DType::kInt16})
    RunRandom(tflite::BuiltinOperator_MAX_POOL_2D, t, 30, seed++);
}

TEST_F(PoolingConformance, L2Pool) { RunRandom(tflite::BuiltinOperator_L2_POOL_2D, DType::kFloat32, 40, 90); }

TEST_F(PoolingConformance, Errors) {
  PoolCase base;
  {
    Graph g = BuildPool(base, 1);
    g.main().tensors[g.main().inputs[0]].shape = {6, 5, 3};
    ExpectRejected(g, "rank 4", "rank-3 input");
  }
  {
    PoolCase c = base;
    c.type = DType::kInt8;
    Graph g = BuildPool(c, 1);
    g.main().tensors[g.main().outputs[0]].quant->scale = {0.5f};
    ExpectRejected(g, "same scale and zero point", "requantizing pool");
  }
  {
    PoolCase c = base;
    c.op = tflite::BuiltinOperator_L2_POOL_2D;
    c.type = DType::kInt8;
    ExpectRejected(BuildPool(c, 1), "not supported", "int8 L2 pool");
  }
  {
    PoolCase c = base;
    c.fh = 0;
    ExpectRejected(BuildPool(c, 1), "filter size", "zero filter");
  }
  {
    PoolCase c = base;
    c.stride_w = -1;
    ExpectRejected(BuildPool(c, 1), "strides", "negative stride");
  }
  {
    PoolCase c = base;
    c.act = tflite::ActivationFunctionType_TANH;
    ExpectRejected(BuildPool(c, 1), "TANH", "TANH activation");
  }
  {
    PoolCase c = base;
    c.type = DType::kInt16;
    Graph g = BuildPool(c, 1);
    g.main().tensors[g.main().inputs[0]].quant->zero_point = {4};
    g.main().tensors[g.main().outputs[0]].quant->zero_point = {4};
    ExpectRejected(g, "zero point 0", "int16 zero point");
  }
}

}  // namespace
}  // namespace edgeopt
