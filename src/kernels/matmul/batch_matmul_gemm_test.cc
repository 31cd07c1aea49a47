// float32 BATCH_MATMUL on the packed GEMM against the reference loops: ranks 2-5 with batch
// broadcasting, every adj_x / adj_y combination, constant rhs (packed once) and rhs given as an
// input (packed at every invoke: new values must be seen), odd sizes, 1 and 2 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "runtime/cpu.h"
#include "runtime/interpreter.h"
#include "support/fast_vs_reference.h"

namespace edgeopt {
namespace {

// lhs, rhs and output shapes of a BATCH_MATMUL with batch dimensions lb / rb (broadcast) and
// matrices m x k times k x n, adjoints applied to the stored layouts.
struct MmShapes {
  std::vector<int32_t> lhs, rhs, out;
};
MmShapes Shapes(const std::vector<int32_t>& lb, const std::vector<int32_t>& rb, int m, int k, int n, bool adj_x,
                bool adj_y) {
  MmShapes s{lb, rb, lb.size() >= rb.size() ? lb : rb};
  s.lhs.push_back(adj_x ? k : m);
  s.lhs.push_back(adj_x ? m : k);
  s.rhs.push_back(adj_y ? n : k);
  s.rhs.push_back(adj_y ? k : n);
  for (size_t i = 0; i < std::min(lb.size(), rb.size()); ++i)
    s.out[s.out.size() - 1 - i] = std::max(lb[lb.size() - 1 - i], rb[rb.size() - 1 - i]);
  s.out.push_back(m);
  s.out.push_back(n);
  return s;
}

// BATCH_MATMUL out = x · y added to `b` as its one op and output, then the fast and reference
// interpreters of its model.
testing::FastAndReference BmmInterpreters(GraphBuilder& b, int32_t x, int32_t y, int32_t out, bool adj_x, bool adj_y,
                                          int threads) {
  tflite::BatchMatMulOptionsT o;
  o.adj_x = adj_x;
  o.adj_y = adj_y;
  b.Op(tflite::BuiltinOperator_BATCH_MATMUL, {x, y}, {out}, o);
  b.Output(out);
  return testing::MakeFastAndReference(b.Finish(), threads);
}

TEST(BatchMatMulGemm, MatchesReference) {
  if (!rt::CpuHardware().has_avx2_fma()) GTEST_SKIP() << "this CPU has no AVX2: BATCH_MATMUL runs the reference loops";
  std::mt19937 rng(91);
  std::uniform_real_distribution<float> val(-1.0f, 1.0f);
  std::uniform_int_distribution<int> dim(1, 37);
  struct Batch {
    std::vector<int32_t> lhs, rhs;
  };
  const Batch batches[] = {{{}, {}}, {{3}, {3}}, {{2, 1}, {1, 4}}, {{1}, {5}}, {{2, 3}, {}}, {{2, 1, 2}, {1, 3, 1}}};
  int n_case = 0;
  for (const Batch& bd : batches)
    for (int adj = 0; adj < 4; ++adj)
      for (bool rhs_input : {false, true}) {
        const bool adj_x = adj & 1, adj_y = adj & 2;
        const int m = dim(rng), k = n_case % 7 == 0 ? 1 : dim(rng) * (n_case % 3 + 1), n = dim(rng);
        const MmShapes sh = Shapes(bd.lhs, bd.rhs, m, k, n, adj_x, adj_y);
        const std::vector<int32_t>& ls = sh.lhs;
        const std::vector<int32_t>& rs = sh.rhs;
        const std::vector<int32_t>& os = sh.out;
        std::vector<float> rv(static_cast<size_t>(rt::NumElements(rs)));
        for (float& v : rv) v = val(rng);
        GraphBuilder b;
        auto x = b.Input("x", DType::kFloat32, ls);
        auto yv = rhs_input ? b.Input("y", DType::kFloat32, rs) : b.Const<float>("y", DType::kFloat32, rs, rv);
        auto out = b.Tensor("out", DType::kFloat32, os);
        testing::FastAndReference it = BmmInterpreters(b, x, yv, out, adj_x, adj_y, 1 + n_case++ % 2);
        ASSERT_TRUE(it.fast && it.ref);
        rt::Interpreter& fast = *it.fast;
        rt::Interpreter& ref = *it.ref;
        EXPECT_EQ(fast.ops()[0].variant.rfind("batch_matmul/f32/gemm_", 0), 0u) << fast.ops()[0].variant;
        for (int round = 0; round < 2; ++round) {
          for (int i = 0; i < (rhs_input ? 2 : 1); ++i) {
            std::vector<float> in(fast.input(i)->num_elements());
            for (float& v : in) v = val(rng);
            std::memcpy(fast.input(i)->data, in.data(), in.size() * sizeof(float));
            std::memcpy(ref.input(i)->data, in.data(), in.size() * sizeof(float));
          }
          ASSERT_TRUE(fast.Invoke().ok());
          ASSERT_TRUE(ref.Invoke().ok());
          const rt::RtTensor* got = fast.output(0);
          const rt::RtTensor* want = ref.output(0);
          ASSERT_EQ(got->shape, want->shape);
          const float tol = 1e-5f * k + 1e-6f;  // sums of k products of values in [-1, 1]
          int bad = 0;
          for (int64_t e = 0; e < want->num_elements(); ++e)
            if (!(std::fabs(got->data_as<float>()[e] - want->data_as<float>()[e]) <= tol) && bad++ < 5)
              ADD_FAILURE() << "case " << n_case << " m" << m << " k" << k << " n" << n << " adj " << adj
                            << (rhs_input ? " rhs input" : " rhs constant") << " round " << round << " element " << e
                            << ": got " << got->data_as<float>()[e] << " want " << want->data_as<float>()[e];
        }
      }
}

// int8 BATCH_MATMUL on the VNNI GEMM against the reference loops, byte for byte: batch
// broadcasting (a rhs matrix shared by several batches is packed once per invoke), every adj_x /
// adj_y combination, rhs constant or an input (new values at every invoke), zero points at the
// int8 limits and in between (rhs values minus the zero point outside int8: the GEMM's split
// and row-sum weight forms), odd sizes, 1 and 2 threads.
TEST(BatchMatMulGemm, Int8VnniMatchesReference) {
  if (!rt::CpuHardware().has_avx512_vnni()) GTEST_SKIP() << "no AVX-512 VNNI: int8 BATCH_MATMUL runs the reference loops";
  std::mt19937 rng(92);
  std::uniform_int_distribution<int> byte(-128, 127), dim(1, 45);
  struct Batch {
    std::vector<int32_t> lhs, rhs;
  };
  const Batch batches[] = {{{}, {}}, {{3}, {3}}, {{2, 1}, {1, 4}}, {{5}, {1}}, {{2, 3}, {}}};
  const int64_t zps[][3] = {{0, 0, 0}, {-128, 127, 5}, {37, -90, -128}, {127, -128, 127}, {-3, 11, -7}};
  int n_case = 0;
  for (const Batch& bd : batches)
    for (int adj = 0; adj < 4; ++adj)
      for (bool rhs_input : {false, true}) {
        const bool adj_x = adj & 1, adj_y = adj & 2;
        const int64_t* zp = zps[n_case % 5];
        const int m = dim(rng), k = n_case % 7 == 0 ? 1 : dim(rng) * (n_case % 3 + 1), n = dim(rng) + (n_case % 4) * 16;
        const MmShapes sh = Shapes(bd.lhs, bd.rhs, m, k, n, adj_x, adj_y);
        const std::vector<int32_t>& ls = sh.lhs;
        const std::vector<int32_t>& rs = sh.rhs;
        const std::vector<int32_t>& os = sh.out;
        std::vector<int8_t> rv(static_cast<size_t>(rt::NumElements(rs)));
        for (int8_t& v : rv) v = static_cast<int8_t>(byte(rng));
        GraphBuilder b;
        auto x = b.Input("x", DType::kInt8, ls, Quant(0.02f, zp[0]));
        auto yv = rhs_input ? b.Input("y", DType::kInt8, rs, Quant(0.03f, zp[1]))
                            : b.Const<int8_t>("y", DType::kInt8, rs, rv, Quant(0.03f, zp[1]));
        auto out = b.Tensor("out", DType::kInt8, os, Quant(0.01f * static_cast<float>(1 + k / 8), zp[2]));
        testing::FastAndReference it = BmmInterpreters(b, x, yv, out, adj_x, adj_y, 1 + n_case++ % 2);
        ASSERT_TRUE(it.fast && it.ref);
        rt::Interpreter& fast = *it.fast;
        rt::Interpreter& ref = *it.ref;
        EXPECT_EQ(fast.ops()[0].variant, "batch_matmul/int8/avx512vnni");
        const std::string what = "int8 bmm " + rt::ShapeToString(ls) + " x " + rt::ShapeToString(rs) +
                                 (adj_x ? " adj_x" : "") + (adj_y ? " adj_y" : "") + (rhs_input ? " rhs input" : "");
        for (int round = 0; round < 2; ++round) {
          for (int i = 0; i < (rhs_input ? 2 : 1); ++i) {
            rt::RtTensor* t = fast.input(i);
            std::vector<int8_t> in(static_cast<size_t>(t->num_elements()));
            for (int8_t& v : in) v = static_cast<int8_t>(byte(rng));
            std::memcpy(t->data, in.data(), in.size());
            std::memcpy(ref.input(i)->data, in.data(), in.size());
          }
          ASSERT_TRUE(fast.Invoke().ok());
          ASSERT_TRUE(ref.Invoke().ok());
          const rt::RtTensor* got = fast.output(0);
          const rt::RtTensor* want = ref.output(0);
          ASSERT_EQ(got->num_elements(), want->num_elements());
          EXPECT_EQ(std::memcmp(got->data, want->data, static_cast<size_t>(got->num_elements())), 0) << what;
        }
      }
}

// Hybrid BATCH_MATMUL (float lhs, constant int8 rhs: a dynamic-range layer) on the hybrid
// FULLY_CONNECTED's VNNI dot products, byte for byte the reference: lhs with batch dimensions,
// one rhs matrix (rank 2, or rank 4 with batch dimensions of 1), adj_y either way, symmetric and
// asymmetric input quantization, per-tensor and per-channel weight scales, odd sizes, 1 and 2
// threads, the lhs in the three rounds of ExpectFloatRoundsMatchReference (mixed signs, zeros,
// one sign). adj_x and several rhs matrices keep the reference loops (checked).
TEST(BatchMatMulGemm, HybridVnniMatchesReference) {
  if (!rt::CpuHardware().has_avx512_vnni()) GTEST_SKIP() << "no AVX-512 VNNI: hybrid BATCH_MATMUL runs the reference loops";
  std::mt19937 rng(93);
  std::uniform_real_distribution<float> scale(0.002f, 0.02f);
  std::uniform_int_distribution<int> byte(-127, 127), dim(1, 45);
  struct Case {
    std::vector<int32_t> lhs_batch, rhs_batch;
    bool adj_x, adj_y, asymmetric, per_channel, fast;
  };
  const Case cases[] = {
      {{}, {}, false, false, false, false, true},      {{3}, {}, false, true, true, true, true},
      {{2, 2}, {1, 1}, false, false, true, true, true}, {{1}, {}, false, true, false, false, true},
      {{2}, {}, true, false, false, false, false},     {{3}, {3}, false, false, false, true, false},
  };
  int n_case = 0;
  for (const Case& c : cases)
    for (int rep = 0; rep < 2; ++rep) {
      const int m = dim(rng), k = dim(rng) * (rep + 1), n = dim(rng) + rep * 16;
      const MmShapes sh = Shapes(c.lhs_batch, c.rhs_batch, m, k, n, c.adj_x, c.adj_y);
      std::vector<int8_t> rv(static_cast<size_t>(rt::NumElements(sh.rhs)));
      for (int8_t& v : rv) v = static_cast<int8_t>(byte(rng));
      QuantParams wq;
      const int units_axis = static_cast<int>(sh.rhs.size()) - (c.adj_y ? 2 : 1);
      if (c.per_channel) {
        for (int u = 0; u < n; ++u) wq.scale.push_back(scale(rng)), wq.zero_point.push_back(0);
        wq.quantized_dimension = units_axis;
      } else {
        wq = Quant(scale(rng), 0);
      }
      GraphBuilder b;
      auto x = b.Input("x", DType::kFloat32, sh.lhs);
      auto yv = b.Const<int8_t>("y", DType::kInt8, sh.rhs, rv, wq);
      auto out = b.Tensor("out", DType::kFloat32, sh.out);
      tflite::BatchMatMulOptionsT o;
      o.adj_x = c.adj_x;
      o.adj_y = c.adj_y;
      o.asymmetric_quantize_inputs = c.asymmetric;
      b.Op(tflite::BuiltinOperator_BATCH_MATMUL, {x, yv}, {out}, o);
      b.Output(out);
      testing::ExpectFloatRoundsMatchReference(b.Finish(), rng, 1 + n_case++ % 2,
                                               c.fast ? "batch_matmul/hybrid/avx512vnni" : "batch_matmul/hybrid/ref",
                                               std::string("hybrid bmm") + (c.adj_y ? " adj_y" : "") +
                                                   (c.asymmetric ? " asymmetric" : ""));
    }
}

}  // namespace
}  // namespace edgeopt
