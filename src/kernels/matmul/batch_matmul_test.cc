// BATCH_MATMUL against TFLite 2.9 over generated cases: float32, int8 (zero points on both
// sides), int16, hybrid symmetric/asymmetric with per-tensor and per-channel weights; ranks 2-5,
// broadcast batch dimensions, adj_x/adj_y, constant and non-constant rhs; plus error paths.
#include <gtest/gtest.h>

#include <cmath>
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

enum class Path { kFloat, kHybrid, kInt8, kInt16 };

const char* PathName(Path p) {
  switch (p) {
    case Path::kFloat: return "float32";
    case Path::kHybrid: return "hybrid";
    case Path::kInt8: return "int8";
    case Path::kInt16: return "int16";
  }
  return "?";
}

struct MmCase {
  Path path = Path::kFloat;
  std::vector<int32_t> lhs_batch, rhs_batch;
  int m = 3, k = 4, n = 5;
  bool adj_x = false, adj_y = false;
  bool const_rhs = false;
  bool per_channel = false;
  bool asymmetric = false;

  std::vector<int32_t> LhsShape() const {
    auto s = lhs_batch;
    s.push_back(adj_x ? k : m);
    s.push_back(adj_x ? m : k);
    return s;
  }
  std::vector<int32_t> RhsShape() const {
    auto s = rhs_batch;
    s.push_back(adj_y ? n : k);
    s.push_back(adj_y ? k : n);
    return s;
  }
  std::vector<int32_t> OutShape() const {
    std::vector<int32_t> a = lhs_batch, b = rhs_batch;
    while (a.size() < b.size()) a.insert(a.begin(), 1);
    while (b.size() < a.size()) b.insert(b.begin(), 1);
    std::vector<int32_t> s;
    for (size_t i = 0; i < a.size(); ++i) s.push_back(std::max(a[i], b[i]));
    s.push_back(m);
    s.push_back(n);
    return s;
  }
  std::string Describe() const {
    std::ostringstream s;
    s << "batch_matmul " << PathName(path) << " lhs " << rt::ShapeToString(LhsShape()) << " rhs "
      << rt::ShapeToString(RhsShape()) << (adj_x ? " adj_x" : "") << (adj_y ? " adj_y" : "")
      << (const_rhs ? " const-rhs" : "") << (per_channel ? " per-channel" : "") << (asymmetric ? " asymmetric" : "");
    return s.str();
  }
};

// What TFLite 2.9 runs instead of a case it cannot run itself (see ExpectMatchesTwin).
enum class Twin {
  kNone,
  kFlattenBatch,  // rank-5 operands (2.9 stops at 4) with equal batch dims: merged into one
  kFc,            // hybrid with a 2-D rhs: (TRANSPOSE +) hybrid FULLY_CONNECTED on rhs^T, keep_num_dims
  kConv,          // hybrid per-channel asymmetric, 2-D rhs: (TRANSPOSE +) RESHAPE + 1x1 CONV_2D + RESHAPE
  kFcPerUnit,     // hybrid per-channel, 2-D rhs: one per-tensor hybrid FC per column, CONCATENATION
};

int32_t Product(const std::vector<int32_t>& v) {
  int32_t p = 1;
  for (int32_t d : v) p *= d;
  return p;
}

int32_t AddReshape(GraphBuilder& b, int32_t x, const std::vector<int32_t>& shape, const std::string& name) {
  const Tensor& t = b.current().tensors[x];
  auto out = b.Tensor(name, t.type, shape, t.quant);
  auto s = b.Const<int32_t>(name + "_shape", DType::kInt32, {static_cast<int32_t>(shape.size())}, shape);
  tflite::ReshapeOptionsT o;
  o.new_shape = shape;
  b.Op(tflite::BuiltinOperator_RESHAPE, {x, s}, {out}, o);
  return out;
}

// Swaps the last two dimensions of x with TRANSPOSE.
int32_t AddSwapLast2(GraphBuilder& b, int32_t x, const std::string& name) {
  const Tensor& t = b.current().tensors[x];
  std::vector<int32_t> shape = t.shape, perm;
  for (int i = 0; i < static_cast<int>(shape.size()); ++i) perm.push_back(i);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
  auto out = b.Tensor(name, t.type, shape, t.quant);
  auto p = b.Const<int32_t>(name + "_perm", DType::kInt32, {static_cast<int32_t>(perm.size())}, perm);
  b.Op(tflite::BuiltinOperator_TRANSPOSE, {x, p}, {out}, tflite::TransposeOptionsT());
  return out;
}

Graph BuildMatMul(const MmCase& c, uint64_t seed, Twin twin = Twin::kNone) {
  GraphBuilder b(seed);
  auto& rng = b.rng();
  int32_t x, y, out;
  if (c.path == Path::kFloat) {
    x = b.Input("x", DType::kFloat32, c.LhsShape());
    y = c.const_rhs ? b.ConstRandom("y", DType::kFloat32, c.RhsShape(), -1, 1)
                    : b.Input("y", DType::kFloat32, c.RhsShape());
    out = b.Tensor("out", DType::kFloat32, c.OutShape());
  } else if (c.path == Path::kHybrid) {
    x = b.Input("x", DType::kFloat32, c.LhsShape());
    auto scales = testing::RandomWeightScales(rng, c.n, c.per_channel);
    const int n_axis = static_cast<int>(c.RhsShape().size()) - (c.adj_y ? 2 : 1);
    y = b.ConstRandom("y", DType::kInt8, c.RhsShape(), -127, 127,
                      testing::WeightQuant(rng, DType::kInt8, scales, n_axis));
    out = b.Tensor("out", DType::kFloat32, c.OutShape());
  } else {
    const DType t = c.path == Path::kInt8 ? DType::kInt8 : DType::kInt16;
    QuantParams xq = testing::RandomActivationQuant(rng, t);
    QuantParams yq = testing::RandomActivationQuant(rng, t);
    QuantParams oq = testing::RandomActivationQuant(rng, t);
    // Both operands spread over their whole range (standard deviation ~74 levels for int8,
    // ~18918 for int16); the output covers ~3 standard deviations of the sum.
    const double spread = t == DType::kInt8 ? 74.0 : 18918.0, levels = t == DType::kInt8 ? 127.0 : 32767.0;
    oq.scale[0] =
        static_cast<float>(3.0 * std::sqrt(double(c.k)) * spread * xq.scale[0] * spread * yq.scale[0] / levels);
    x = b.Input("x", t, c.LhsShape(), xq);
    y = c.const_rhs ? b.ConstRandom("y", t, c.RhsShape(), -1e9, 1e9, yq) : b.Input("y", t, c.RhsShape(), yq);
    out = b.Tensor("out", t, c.OutShape(), oq);
  }
  tflite::BatchMatMulOptionsT o;
  o.adj_x = c.adj_x;
  o.adj_y = c.adj_y;
  o.asymmetric_quantize_inputs = c.asymmetric;
  if (twin == Twin::kNone) {
    b.Op(tflite::BuiltinOperator_BATCH_MATMUL, {x, y}, {out}, o);
  } else if (twin == Twin::kFlattenBatch) {
    const auto ls = c.LhsShape(), rs = c.RhsShape();
    auto x3 = AddReshape(b, x, {Product(c.lhs_batch), ls[ls.size() - 2], ls.back()}, "x3");
    auto y3 = AddReshape(b, y, {Product(c.rhs_batch), rs[rs.size() - 2], rs.back()}, "y3");
    const Tensor& ot = b.current().tensors[out];
    auto o3 = b.Tensor("o3", ot.type, {Product(c.lhs_batch), c.m, c.n}, ot.quant);
    b.Op(tflite::BuiltinOperator_BATCH_MATMUL, {x3, y3}, {o3}, o);
    // Reshape into the declared output.
    auto s = b.Const<int32_t>("out_shape", DType::kInt32, {static_cast<int32_t>(c.OutShape().size())}, c.OutShape());
    tflite::ReshapeOptionsT r;
    r.new_shape = c.OutShape();
    b.Op(tflite::BuiltinOperator_RESHAPE, {o3, s}, {out}, r);
  } else {
    // Weights for FC/CONV_2D are [n, k]: rhs as is with adj_y, else transposed in place.
    Tensor& yt = b.current().tensors[y];
    if (!c.adj_y) {
      auto v = b.graph().buffers[yt.buffer].as<int8_t>();
      std::vector<int8_t> t(v.size());
      for (int k = 0; k < c.k; ++k)
        for (int n = 0; n < c.n; ++n) t[static_cast<size_t>(n) * c.k + k] = v[static_cast<size_t>(k) * c.n + n];
      yt.shape = {c.n, c.k};
      b.graph().buffers[yt.buffer] = Buffer::FromValues<int8_t>(t);
      if (yt.quant) yt.quant->quantized_dimension = 0;
    } else if (yt.quant) {
      yt.quant->quantized_dimension = 0;
    }
    const int32_t xin = c.adj_x ? AddSwapLast2(b, x, "xt") : x;
    if (twin == Twin::kFc) {
      tflite::FullyConnectedOptionsT fo;
      fo.keep_num_dims = true;
      fo.asymmetric_quantize_inputs = c.asymmetric;
      b.Op(tflite::BuiltinOperator_FULLY_CONNECTED, {xin, y, kNoTensor}, {out}, fo);
    } else if (twin == Twin::kFcPerUnit) {
      const Tensor wt = b.current().tensors[y];
      auto wv = b.graph().buffers[wt.buffer].as<int8_t>();
      std::vector<int32_t> parts;
      for (int u = 0; u < c.n; ++u) {
        std::vector<int8_t> row(wv.begin() + int64_t{u} * c.k, wv.begin() + int64_t{u + 1} * c.k);
        auto wu = b.Const<int8_t>("w" + std::to_string(u), DType::kInt8, {1, c.k}, row, Quant(wt.quant->scale[u], 0));
        auto shape = c.OutShape();
        shape.back() = 1;
        auto ou = b.Tensor("o" + std::to_string(u), DType::kFloat32, shape);
        tflite::FullyConnectedOptionsT fo;
        fo.keep_num_dims = true;
        fo.asymmetric_quantize_inputs = c.asymmetric;
        b.Op(tflite::BuiltinOperator_FULLY_CONNECTED, {xin, wu, kNoTensor}, {ou}, fo);
        parts.push_back(ou);
      }
      tflite::ConcatenationOptionsT co;
      co.axis = static_cast<int32_t>(c.OutShape().size()) - 1;
      b.Op(tflite::BuiltinOperator_CONCATENATION, parts, {out}, co);
    } else {
      const int32_t rows = Product(c.lhs_batch) * c.m;
      auto x4 = AddReshape(b, xin, {rows, 1, 1, c.k}, "x4");
      b.current().tensors[y].shape = {c.n, 1, 1, c.k};  // (yt may dangle: tensors were added)
      auto zero = b.ConstBytes("zero_bias", DType::kFloat32, {c.n}, std::vector<uint8_t>(4 * c.n, 0));
      auto o4 = b.Tensor("o4", DType::kFloat32, {rows, 1, 1, c.n});
      tflite::Conv2DOptionsT co;
      co.padding = tflite::Padding_VALID;
      co.stride_h = co.stride_w = 1;
      b.Op(tflite::BuiltinOperator_CONV_2D, {x4, y, zero}, {o4}, co);
      auto s = b.Const<int32_t>("out_shape", DType::kInt32, {static_cast<int32_t>(c.OutShape().size())}, c.OutShape());
      tflite::ReshapeOptionsT r;
      r.new_shape = c.OutShape();
      b.Op(tflite::BuiltinOperator_RESHAPE, {o4, s}, {out}, r);
    }
  }
  b.Output(out);
  return b.Finish();
}

// A random case whose operands have rank <= max_rank (2.9 supports 4).
MmCase RandomCase(std::mt19937_64& rng, Path path, int max_rank = 4) {
  auto pick = [&](std::initializer_list<int> v) {
    return *(v.begin() + std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng));
  };
  MmCase c;
  c.path = path;
  c.m = pick({1, 2, 3, 7, 16});
  c.k = pick({1, 3, 8, 13, 32});
  c.n = pick({1, 2, 5, 8, 17});
  c.adj_x = pick({0, 1}) == 1;
  c.adj_y = pick({0, 1}) == 1;
  // Batch dims: up to max_rank - 2, each side possibly shorter or 1 (broadcast).
  const int rank = std::min(pick({0, 1, 1, 2, 2, 3}), max_rank - 2);
  std::vector<int32_t> full;
  for (int i = 0; i < rank; ++i) full.push_back(pick({1, 2, 3}));
  c.lhs_batch = full;
  c.rhs_batch = full;
  for (int i = 0; i < rank; ++i) {
    if (pick({0, 0, 1}) == 1)
      c.lhs_batch[i] = 1;
    else if (pick({0, 0, 1}) == 1)
      c.rhs_batch[i] = 1;
  }
  if (rank > 0 && pick({0, 0, 1}) == 1)
    c.rhs_batch.erase(c.rhs_batch.begin());
  else if (rank > 0 && pick({0, 0, 1}) == 1)
    c.lhs_batch.erase(c.lhs_batch.begin());
  c.const_rhs = path == Path::kHybrid || pick({0, 1}) == 1;
  return c;
}

class BatchMatMulConformance : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  }
  template <typename Tweak>
  void RunRandom(Path path, int count, uint64_t seed, Tweak tweak, Twin twin = Twin::kNone) {
    std::mt19937_64 rng(seed);
    int failures = 0;
    for (int i = 0; i < count && failures < 5; ++i) {
      MmCase c = RandomCase(rng, path);
      tweak(c, rng);
      const uint64_t s = seed * 1000 + i;
      const std::string what = "case " + std::to_string(i) + ": " + c.Describe();
      const bool ok = twin == Twin::kNone ? ExpectMatches(BuildMatMul(c, s), what, ExactOptions())
                                          : testing::ExpectMatchesTwin(BuildMatMul(c, s), BuildMatMul(c, s, twin), what,
                                                                       ExactOptions());
      if (!ok) ++failures;
    }
  }
};

TEST_F(BatchMatMulConformance, Float32) {
  RunRandom(Path::kFloat, 50, 51, [](MmCase&, std::mt19937_64&) {});
}

TEST_F(BatchMatMulConformance, Int8) {
  RunRandom(Path::kInt8, 50, 52, [](MmCase&, std::mt19937_64&) {});
}

TEST_F(BatchMatMulConformance, Int16) {
  RunRandom(Path::kInt16, 30, 53, [](MmCase&, std::mt19937_64&) {});
}

// Rank-5 operands (edgeopt supports 2-5, 2.9 only up to 4), compared with 2.9 on the same data
// with the three batch dimensions merged into one.
TEST_F(BatchMatMulConformance, Rank5) {
  int i = 0;
  for (Path p : {Path::kFloat, Path::kInt8, Path::kInt16}) {
    RunRandom(
        p, 6, 57 + i++,
        [](MmCase& c, std::mt19937_64& rng) {
          c.lhs_batch = {1 + static_cast<int32_t>(rng() % 2), 2, 1 + static_cast<int32_t>(rng() % 3)};
          c.rhs_batch = c.lhs_batch;
        },
        Twin::kFlattenBatch);
  }
}

// 2.9's hybrid BATCH_MATMUL gives wrong results (values unrelated to the inputs, some around
// 1e38: it reads scales or scratch it never set). edgeopt implements the newer LiteRT
// semantics: one quantization per lhs row, exactly hybrid FULLY_CONNECTED's arithmetic, so it
// is compared with 2.9's FULLY_CONNECTED (keep_num_dims) on rhs^T; adj_x goes through TRANSPOSE.
TEST_F(BatchMatMulConformance, HybridSymmetric) {
  RunRandom(
      Path::kHybrid, 30, 54, [](MmCase& c, std::mt19937_64&) { c.rhs_batch.clear(); }, Twin::kFc);
}

TEST_F(BatchMatMulConformance, HybridAsymmetric) {
  RunRandom(
      Path::kHybrid, 30, 55,
      [](MmCase& c, std::mt19937_64&) {
        c.rhs_batch.clear();
        c.asymmetric = true;
      },
      Twin::kFc);
}

// Per-channel weights (one scale per output column) with asymmetric inputs: the arithmetic of
// 2.9's hybrid per-channel 1x1 CONV_2D with one input row per batch.
TEST_F(BatchMatMulConformance, HybridPerChannel) {
  RunRandom(
      Path::kHybrid, 20, 56,
      [](MmCase& c, std::mt19937_64&) {
        c.rhs_batch.clear();
        c.per_channel = true;
        c.n = std::max(c.n, 2);
        c.asymmetric = true;
      },
      Twin::kConv);
}

// Per-channel weights, symmetric or asymmetric inputs: each column is a per-tensor hybrid
// FULLY_CONNECTED with that column's scale on the same quantized rows.
TEST_F(BatchMatMulConformance, HybridPerChannelPerUnit) {
  RunRandom(
      Path::kHybrid, 15, 58,
      [](MmCase& c, std::mt19937_64& rng) {
        c.rhs_batch.clear();
        c.per_channel = true;
        c.n = std::max(c.n, 2);
        c.asymmetric = rng() % 2 == 0;
      },
      Twin::kFcPerUnit);
}

TEST_F(BatchMatMulConformance, Errors) {
  MmCase base;
  {
    Graph g = BuildMatMul(base, 1);
    g.main().tensors[g.main().inputs[1]].shape = {5, 5};  // k 4 vs 5
    ExpectRejected(g, "inner dimensions", "inner dimension mismatch");
  }
  {
    MmCase c = base;
    c.lhs_batch = {2};
    c.rhs_batch = {3};
    ExpectRejected(BuildMatMul(c, 1), "do not broadcast", "batch dims 2 vs 3");
  }
  {
    Graph g = BuildMatMul(base, 1);
    g.main().tensors[g.main().inputs[0]].shape = {12};
    ExpectRejected(g, "rank 2 to 5", "rank-1 lhs");
  }
  {
    MmCase c = base;
    c.lhs_batch = {1, 1, 1, 1};
    ExpectRejected(BuildMatMul(c, 1), "rank 2 to 5", "rank-6 lhs");
  }
  {
    MmCase c = base;
    c.path = Path::kInt16;
    Graph g = BuildMatMul(c, 1);
    g.main().tensors[g.main().inputs[1]].quant->zero_point = {2};
    ExpectRejected(g, "zero point 0", "int16 zero point");
  }
  {
    MmCase c = base;
    c.path = Path::kInt8;
    Graph g = BuildMatMul(c, 1);
    g.main().tensors[g.main().inputs[1]].type = DType::kInt16;
    ExpectRejected(g, "not supported", "int8 x int16");
  }
}

}  // namespace
}  // namespace edgeopt
