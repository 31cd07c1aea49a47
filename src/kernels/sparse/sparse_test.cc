// The sparsity format converter (kernels/common/sparsity.h): dense -> sparse -> dense round
// trips on random matrices (CSR, doubly sparse, column-major traversal, 1x4 / 4x4 / 2x2
// blocks), rejection of corrupted layouts, and DENSIFY models against TFLite 2.9.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "format/writer.h"
#include "graph/builder.h"
#include "kernels/common/sparsity.h"
#include "support/conformance.h"
#include "support/core/model_files.h"
#include "support/op_cases.h"

namespace edgeopt {
namespace {

using kernels::ParseSparsity;
using kernels::SparseEncoding;
using kernels::Sparsify;
using testing::TypeLabel;

// Random dense data with about `density` nonzeros; zero-filled otherwise. Nonzeros are
// clustered in some blocks so block-sparse encodings have empty and full blocks.
std::vector<uint8_t> RandomSparseData(std::mt19937_64& rng, DType type, int64_t n, double density) {
  std::vector<uint8_t> out(n * DTypeSize(type), 0);
  std::uniform_real_distribution<double> u(0, 1);
  for (int64_t i = 0; i < n; ++i) {
    if (u(rng) >= density) continue;
    if (type == DType::kFloat32) {
      const float v = static_cast<float>(u(rng) * 2 - 1) + (u(rng) < 0.5 ? 0.5f : -0.5f);
      std::memcpy(&out[i * 4], &v, 4);
    } else {
      int8_t v = static_cast<int8_t>(static_cast<int>(u(rng) * 254) - 127);
      if (v == 0) v = 1;
      out[i] = static_cast<uint8_t>(v);
    }
  }
  return out;
}

std::vector<uint8_t> DenseFromSparse(const tflite::SparsityParametersT& p, const std::vector<int32_t>& shape,
                                     const std::vector<uint8_t>& values, size_t elem, Status* st) {
  auto layout = ParseSparsity(p, shape);
  if (!layout.ok()) {
    *st = layout.status();
    return {};
  }
  std::vector<uint8_t> dense(layout->dense_elements * elem);
  *st = kernels::Densify(*layout, values, elem, dense);
  return dense;
}

struct EncodingCase {
  const char* label;
  std::vector<int32_t> shape;
  SparseEncoding enc;
};

std::vector<EncodingCase> EncodingCases() {
  std::vector<EncodingCase> cases;
  cases.push_back({"CSR (dense rows, sparse columns)", {7, 13}, {}});
  cases.push_back({"doubly sparse", {9, 6}, {{}, {}, {}, {true, true}}});
  cases.push_back({"column-major CSC", {5, 11}, {{1, 0}, {}, {}, {false, true}}});
  cases.push_back({"all dense", {4, 5}, {{}, {}, {}, {false, false}}});
  cases.push_back({"1x4 blocks", {6, 16}, {{0, 1, 2}, {1}, {4}, {false, true, false}}});
  cases.push_back({"4x4 blocks", {12, 16}, {{0, 1, 2, 3}, {0, 1}, {4, 4}, {false, true, false, false}}});
  cases.push_back({"2x2 blocks, both block dims sparse rows", {8, 6}, {{0, 1, 2, 3}, {0, 1}, {2, 2}, {true, true, false, false}}});
  cases.push_back({"3-D, middle sparse", {3, 5, 4}, {{}, {}, {}, {false, true, false}}});
  cases.push_back({"3-D traversal 2,0,1", {4, 3, 5}, {{2, 0, 1}, {}, {}, {false, true, true}}});
  cases.push_back({"1-D sparse", {17}, {{}, {}, {}, {true}}});
  return cases;
}

TEST(Sparsity, RoundTripsRandomTensors) {
  std::mt19937_64 rng(31);
  for (DType type : {DType::kFloat32, DType::kInt8}) {
    for (const auto& c : EncodingCases()) {
      for (double density : {0.0, 0.05, 0.3, 1.0}) {
        int64_t n = 1;
        for (int d : c.shape) n *= d;
        const auto dense = RandomSparseData(rng, type, n, density);
        auto sp = Sparsify(dense, c.shape, type, c.enc);
        ASSERT_TRUE(sp.ok()) << c.label << ": " << sp.status().ToString();
        Status st;
        const auto back = DenseFromSparse(sp->params, c.shape, sp->values, DTypeSize(type), &st);
        ASSERT_TRUE(st.ok()) << c.label << ": " << st.ToString();
        EXPECT_EQ(back, dense) << c.label << " density " << density << " " << TypeLabel(type);
        if (density == 0.0) {
          EXPECT_LE(sp->num_values, n) << c.label;
        }
      }
    }
  }
}

// Forced and automatic index vector types (uint8 / uint16 / int32) decode the same.
TEST(Sparsity, IndexVectorTypes) {
  std::mt19937_64 rng(34);
  struct C {
    std::vector<int32_t> shape;
    tflite::SparseIndexVector type;
    tflite::SparseIndexVector expect;
  };
  const C cases[] = {{{6, 40}, tflite::SparseIndexVector_Uint16Vector, tflite::SparseIndexVector_Uint16Vector},
                     {{6, 40}, tflite::SparseIndexVector_Int32Vector, tflite::SparseIndexVector_Int32Vector},
                     {{3, 300}, tflite::SparseIndexVector_NONE, tflite::SparseIndexVector_Uint16Vector},
                     {{2, 70000}, tflite::SparseIndexVector_NONE, tflite::SparseIndexVector_Int32Vector}};
  for (const C& c : cases) {
    const int64_t n = int64_t{c.shape[0]} * c.shape[1];
    const auto dense = RandomSparseData(rng, DType::kFloat32, n, 0.5);
    SparseEncoding enc;
    enc.index_type = c.type;
    auto sp = Sparsify(dense, c.shape, DType::kFloat32, enc);
    ASSERT_TRUE(sp.ok()) << sp.status().ToString();
    EXPECT_EQ(sp->params.dim_metadata[1]->array_indices.type, c.expect);
    Status st;
    EXPECT_EQ(DenseFromSparse(sp->params, c.shape, sp->values, 4, &st), dense);
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  SparseEncoding too_small;
  too_small.index_type = tflite::SparseIndexVector_Uint8Vector;
  const auto dense = RandomSparseData(rng, DType::kFloat32, 2 * 300, 1.0);
  EXPECT_FALSE(Sparsify(dense, {2, 300}, DType::kFloat32, too_small).ok());
}

TEST(Sparsity, StoresOnlyNonzeroBlocks) {
  // A 4x8 matrix in 1x4 blocks where only block (1, 1) is nonzero stores exactly 4 values.
  std::vector<float> m(32, 0.0f);
  m[1 * 8 + 5] = 3.0f;
  std::vector<uint8_t> bytes(32 * 4);
  std::memcpy(bytes.data(), m.data(), bytes.size());
  auto sp = Sparsify(bytes, {4, 8}, DType::kFloat32, {{0, 1, 2}, {1}, {4}, {false, true, false}});
  ASSERT_TRUE(sp.ok());
  EXPECT_EQ(sp->num_values, 4);
  const auto& seg = sp->params.dim_metadata[1]->array_segments;
  ASSERT_EQ(seg.type, tflite::SparseIndexVector_Uint8Vector);
  EXPECT_EQ(seg.AsUint8Vector()->values, (std::vector<uint8_t>{0, 0, 1, 1, 1}));
}

// Corrupt every field of a valid layout in turn: each must be rejected with an error.
TEST(Sparsity, RejectsCorruptLayouts) {
  std::mt19937_64 rng(32);
  const std::vector<int32_t> shape = {6, 8};
  const auto dense = RandomSparseData(rng, DType::kFloat32, 48, 0.4);
  auto sp = Sparsify(dense, shape, DType::kFloat32, {{0, 1, 2}, {1}, {4}, {false, true, false}});
  ASSERT_TRUE(sp.ok());
  auto expect_bad = [&](const char* what, auto mutate) {
    tflite::SparsityParametersT p(sp->params);
    std::vector<int32_t> s = shape;
    std::vector<uint8_t> values = sp->values;
    mutate(p, s, values);
    Status st;
    DenseFromSparse(p, s, values, 4, &st);
    EXPECT_FALSE(st.ok()) << what;
  };
  using P = tflite::SparsityParametersT;
  using S = std::vector<int32_t>;
  using V = std::vector<uint8_t>;
  auto indices = [](P& p) -> std::vector<uint8_t>& { return p.dim_metadata[1]->array_indices.AsUint8Vector()->values; };
  auto segments = [](P& p) -> std::vector<uint8_t>& { return p.dim_metadata[1]->array_segments.AsUint8Vector()->values; };
  expect_bad("index past the dimension", [&](P& p, S&, V&) {
    if (!indices(p).empty()) indices(p)[0] = 2;  // blocked dim has 8/4 = 2 entries
  });
  expect_bad("segments decrease", [&](P& p, S&, V&) { std::swap(segments(p)[1], segments(p)[2]); segments(p)[1] = 5; });
  expect_bad("too few segments", [&](P& p, S&, V&) { segments(p).pop_back(); });
  expect_bad("segments past the indices", [&](P& p, S&, V&) { segments(p).back() += 1; });
  expect_bad("segments not starting at 0", [&](P& p, S&, V&) { segments(p)[0] = 1; });
  expect_bad("missing values", [&](P&, S&, V& v) { v.erase(v.end() - 4, v.end()); });
  expect_bad("traversal not a permutation", [&](P& p, S&, V&) { p.traversal_order = {0, 0, 2}; });
  expect_bad("traversal too short", [&](P& p, S&, V&) { p.traversal_order = {0, 1}; });
  expect_bad("block map out of range", [&](P& p, S&, V&) { p.block_map = {2}; });
  expect_bad("wrong dense size", [&](P& p, S&, V&) { p.dim_metadata[0]->dense_size = 7; });
  expect_bad("block not dividing", [&](P&, S& s, V&) { s = {6, 9}; });
  expect_bad("missing metadata", [&](P& p, S&, V&) { p.dim_metadata.pop_back(); });
  expect_bad("missing index vector", [&](P& p, S&, V&) { p.dim_metadata[1]->array_indices.Reset(); });
  expect_bad("negative dense shape", [&](P&, S& s, V&) { s = {-6, 8}; });

  // Random byte mutations of the index vectors never crash: either rejected or decodable.
  for (int iter = 0; iter < 500; ++iter) {
    tflite::SparsityParametersT p(sp->params);
    auto& vec = rng() % 2 ? indices(p) : segments(p);
    if (vec.empty()) continue;
    vec[rng() % vec.size()] = static_cast<uint8_t>(rng());
    if (rng() % 4 == 0) vec.push_back(static_cast<uint8_t>(rng()));
    Status st;
    DenseFromSparse(p, shape, sp->values, 4, &st);
  }
}

// DENSIFY of sparse constants against TFLite 2.9 (float32 and int8; block dimensions are
// traversed last, the layouts 2.9's converter handles).
TEST(SparseConformance, Densify) {
  if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  std::mt19937_64 rng(33);
  for (DType type : {DType::kFloat32, DType::kInt8}) {
    for (const auto& c : EncodingCases()) {
      for (double density : {0.1, 0.5}) {
        int64_t n = 1;
        for (int d : c.shape) n *= d;
        const auto dense = RandomSparseData(rng, type, n, density);
        SparseEncoding enc = c.enc;
        static const tflite::SparseIndexVector kTypes[] = {tflite::SparseIndexVector_NONE,
                                                           tflite::SparseIndexVector_Uint16Vector,
                                                           tflite::SparseIndexVector_Int32Vector};
        enc.index_type = kTypes[(density > 0.2) + (type == DType::kInt8)];
        auto sp = Sparsify(dense, c.shape, type, enc);
        ASSERT_TRUE(sp.ok()) << sp.status().ToString();
        GraphBuilder b;
        std::optional<QuantParams> q;
        if (type == DType::kInt8) q = Quant(0.05f, 0);
        auto w = b.ConstBytes("w", type, c.shape, sp->values, q);
        b.current().tensors[w].sparsity = std::make_shared<tflite::SparsityParametersT>(sp->params);
        auto y = b.Tensor("y", type, c.shape, q);
        b.Op(tflite::BuiltinOperator_DENSIFY, {w}, {y}, tflite::DensifyOptionsT{});
        b.Output(y);
        testing::ExpectConforms(b.Finish(), std::string("DENSIFY ") + TypeLabel(type) + " " + c.label + " density " +
                                                std::to_string(density) + " index type " +
                                                std::to_string(static_cast<int>(enc.index_type)));
      }
    }
  }
}

// Through a .tflite file: our writer and reader keep the sparsity, both runtimes densify it.
TEST(SparseConformance, DensifyFromModelFile) {
  if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  std::mt19937_64 rng(35);
  const std::vector<int32_t> shape = {8, 12};
  const auto dense = RandomSparseData(rng, DType::kFloat32, 96, 0.3);
  auto sp = Sparsify(dense, shape, DType::kFloat32, {{0, 1, 2}, {1}, {4}, {false, true, false}});
  ASSERT_TRUE(sp.ok());
  GraphBuilder b;
  auto w = b.ConstBytes("w", DType::kFloat32, shape, sp->values);
  b.current().tensors[w].sparsity = std::make_shared<tflite::SparsityParametersT>(sp->params);
  auto y = b.Tensor("y", DType::kFloat32, shape);
  b.Op(tflite::BuiltinOperator_DENSIFY, {w}, {y}, tflite::DensifyOptionsT{});
  b.Output(y);
  const std::string dir = testing::MakeTempDir("densify_file");
  const std::string path = dir + "/densify.tflite";
  ASSERT_TRUE(WriteModelFile(b.Finish(), path).ok());
  const auto report = testing::CompareModelFile(path, testing::ExactOptions());
  EXPECT_TRUE(report.ok) << report.Summary();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace edgeopt
