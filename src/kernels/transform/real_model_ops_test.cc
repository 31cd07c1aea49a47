// Every op of the transform/reduce/resize/sparse families found in the shared real models,
// cut out as a one-op model with the model's own shapes, quantization, options and constants,
// and compared against TFLite 2.9 on random inputs. Ops whose index arguments (axes, begin,
// paddings, ...) are computed at run time in the model are skipped, except GATHER/GATHER_ND
// indices, which get random in-range values.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "format/reader.h"
#include "support/conformance.h"
#include "support/core/model_files.h"
#include "support/op_cases.h"

namespace edgeopt {
namespace {

// Our ops, with the input positions that hold index arguments.
const std::map<tflite::BuiltinOperator, std::vector<int>>& OurOps() {
  using B = tflite::BuiltinOperator;
  static const std::map<B, std::vector<int>> kOps = {
      {tflite::BuiltinOperator_TRANSPOSE, {1}},          {tflite::BuiltinOperator_CONCATENATION, {}},
      {tflite::BuiltinOperator_PACK, {}},                {tflite::BuiltinOperator_UNPACK, {}},
      {tflite::BuiltinOperator_SPLIT, {0}},              {tflite::BuiltinOperator_SPLIT_V, {1, 2}},
      {tflite::BuiltinOperator_SLICE, {1, 2}},           {tflite::BuiltinOperator_STRIDED_SLICE, {1, 2, 3}},
      {tflite::BuiltinOperator_PAD, {1}},                {tflite::BuiltinOperator_PADV2, {1}},
      {tflite::BuiltinOperator_MIRROR_PAD, {1}},         {tflite::BuiltinOperator_TILE, {1}},
      {tflite::BuiltinOperator_BROADCAST_TO, {1}},       {tflite::BuiltinOperator_REVERSE_V2, {1}},
      {tflite::BuiltinOperator_GATHER, {1}},             {tflite::BuiltinOperator_GATHER_ND, {1}},
      {tflite::BuiltinOperator_SCATTER_ND, {0, 2}},      {tflite::BuiltinOperator_SHAPE, {}},
      {tflite::BuiltinOperator_RANK, {}},                {tflite::BuiltinOperator_RANGE, {0, 1, 2}},
      {tflite::BuiltinOperator_WHERE, {}},               {tflite::BuiltinOperator_ARG_MAX, {1}},
      {tflite::BuiltinOperator_ARG_MIN, {1}},            {tflite::BuiltinOperator_MEAN, {1}},
      {tflite::BuiltinOperator_SUM, {1}},                {tflite::BuiltinOperator_REDUCE_PROD, {1}},
      {tflite::BuiltinOperator_REDUCE_MAX, {1}},         {tflite::BuiltinOperator_REDUCE_MIN, {1}},
      {tflite::BuiltinOperator_REDUCE_ANY, {1}},         {tflite::BuiltinOperator_REDUCE_ALL, {1}},
      {tflite::BuiltinOperator_RESIZE_BILINEAR, {1}},    {tflite::BuiltinOperator_RESIZE_NEAREST_NEIGHBOR, {1}},
      {tflite::BuiltinOperator_DEPTH_TO_SPACE, {}},      {tflite::BuiltinOperator_SPACE_TO_DEPTH, {}},
      {tflite::BuiltinOperator_BATCH_TO_SPACE_ND, {1, 2}}, {tflite::BuiltinOperator_SPACE_TO_BATCH_ND, {1, 2}},
      {tflite::BuiltinOperator_DENSIFY, {}},
  };
  return kOps;
}

// The op alone: its constant inputs keep their data, the others become model inputs.
Graph ExtractOp(const Graph& src, const Operator& op) {
  Graph g;
  g.subgraphs.emplace_back();
  Subgraph& sg = g.subgraphs[0];
  const Subgraph& from = src.main();
  std::map<int32_t, int32_t> remap;
  auto add = [&](int32_t t, bool is_input) -> int32_t {
    if (t < 0) return t;
    auto it = remap.find(t);
    if (it != remap.end()) return it->second;
    Tensor nt = from.tensors[t];
    nt.buffer = 0;
    const bool constant = src.IsConstant(from.tensors[t]);
    if (constant) {
      auto bytes = src.TensorData(from.tensors[t]);
      nt.buffer = g.AddBuffer(Buffer::Owned(std::vector<uint8_t>(bytes.begin(), bytes.end())));
    }
    const int32_t n = sg.AddTensor(std::move(nt));
    if (is_input && !constant) sg.inputs.push_back(n);
    remap[t] = n;
    return n;
  };
  Operator copy = op;
  for (auto& t : copy.inputs) t = add(t, true);
  for (auto& t : copy.outputs) t = add(t, false);
  for (int32_t t : copy.outputs) sg.outputs.push_back(t);
  copy.intermediates.clear();
  sg.ops.push_back(std::move(copy));
  return g;
}

TEST(RealModelOps, MatchTflite29) {
  if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  EDGEOPT_REQUIRE_SHARED_MODELS();
  std::mt19937_64 rng(91);
  int checked = 0;
  for (const std::string& path : testing::AllSharedModels()) {
    auto model = ReadModelFile(path);
    ASSERT_TRUE(model.ok()) << path << ": " << model.status().ToString();
    const Subgraph& sg = model->main();
    std::set<std::string> seen;  // one case per distinct op signature
    for (size_t k = 0; k < sg.ops.size(); ++k) {
      const Operator& op = sg.ops[k];
      auto it = OurOps().find(op.code);
      if (op.is_custom() || it == OurOps().end()) continue;
      bool runtime_index = false;
      for (int i : it->second) {
        const bool is_gather_indices = (op.code == tflite::BuiltinOperator_GATHER ||
                                        op.code == tflite::BuiltinOperator_GATHER_ND) && i == 1;
        if (i < static_cast<int>(op.inputs.size()) && op.inputs[i] >= 0 && !is_gather_indices &&
            !model->IsConstant(sg.tensors[op.inputs[i]]))
          runtime_index = true;
      }
      if (runtime_index) continue;
      std::string signature = BuiltinName(op.code);
      for (int32_t t : op.inputs) {
        if (t < 0) continue;
        signature += ' ';
        signature += rt::ShapeToString(sg.tensors[t].shape);
        signature += DTypeName(sg.tensors[t].type);
      }
      if (!seen.insert(signature).second) continue;
      Graph g = ExtractOp(*model, op);
      auto inputs = testing::RandomInputs(g, testing::ExactOptions());
      // In-range indices for GATHER / GATHER_ND fed at run time.
      if ((op.code == tflite::BuiltinOperator_GATHER || op.code == tflite::BuiltinOperator_GATHER_ND) &&
          !model->IsConstant(sg.tensors[op.inputs[1]])) {
        const Tensor& params = sg.tensors[op.inputs[0]];
        const Tensor& idx = sg.tensors[op.inputs[1]];
        int axis = 0;
        if (op.code == tflite::BuiltinOperator_GATHER) {
          if (auto* o = op.options.AsGatherOptions()) axis = o->axis < 0 ? o->axis + static_cast<int>(params.shape.size()) : o->axis;
        }
        const int depth = op.code == tflite::BuiltinOperator_GATHER_ND ? idx.shape.back() : 1;
        for (auto& v : inputs) {
          if (v.name != idx.name) continue;
          const int64_t n = v.num_elements();
          for (int64_t e = 0; e < n; ++e) {
            const int dim = op.code == tflite::BuiltinOperator_GATHER ? params.shape[axis] : params.shape[e % depth];
            const int64_t value = static_cast<int64_t>(rng() % static_cast<uint64_t>(std::max(dim, 1)));
            if (v.type == DType::kInt64) {
              std::memcpy(&v.data[e * 8], &value, 8);
            } else {
              const int32_t v32 = static_cast<int32_t>(value);
              std::memcpy(&v.data[e * 4], &v32, 4);
            }
          }
        }
      }
      testing::ExpectConforms(g, testing::Basename(path) + " op " + std::to_string(k) + ": " + signature,
                              testing::ExactOptions(), inputs);
      ++checked;
    }
  }
  EXPECT_GT(checked, 0) << "no op of these families in the shared models";
  RecordProperty("ops_checked", checked);
}

}  // namespace
}  // namespace edgeopt
