// BIDIRECTIONAL_SEQUENCE_LSTM against TFLite 2.9: float and hybrid, merged or separate outputs,
// time-major both ways, peephole/projection/CIFG, auxiliary input with cross-link weights and
// without (then it feeds the backward cell); 3 invokes each (states carry over).
#include <gtest/gtest.h>

#include "graph/builder.h"
#include "runtime/interpreter.h"
#include "support/conformance.h"
#include "support/scoped_env.h"
#include "support/multi_invoke.h"

namespace edgeopt {
namespace {

struct BidiCase {
  bool hybrid = false, merge = false, time_major = false, peephole = false, cifg = false, asymmetric = false;
  int batch = 2, time = 3, input = 4, cell = 3, fw_output = 0, bw_output = 0;  // 0: no projection
  enum Aux { kNoAux, kCrossLinked, kBackwardInput } aux = kNoAux;
  int aux_size = 4;  // TFLite 2.9 steps the aux input by the input size: keep them equal
  std::string Name() const {
    return std::string(hybrid ? "hybrid" : "float") + (merge ? " merge" : "") + (time_major ? " time_major" : "") +
           (peephole ? " peephole" : "") + (cifg ? " cifg" : "") + (asymmetric ? " asym" : "") +
           " proj " + std::to_string(fw_output) + "/" + std::to_string(bw_output) + " aux " + std::to_string(aux);
  }
};

Graph BuildBidi(const BidiCase& c) {
  GraphBuilder b(31);
  auto shape3 = [&](int last) {
    return c.time_major ? std::vector<int32_t>{c.time, c.batch, last} : std::vector<int32_t>{c.batch, c.time, last};
  };
  std::vector<int32_t> ins(48, kNoTensor);
  ins[0] = b.Input("x", DType::kFloat32, shape3(c.input));
  if (c.aux != BidiCase::kNoAux)
    ins[39] = b.Input("aux", DType::kFloat32, shape3(c.aux == BidiCase::kBackwardInput ? c.input : c.aux_size));
  int wi = 0;
  auto weight = [&](std::vector<int32_t> shape) {
    const std::string name = std::string("w").append(std::to_string(wi++));
    if (!c.hybrid) return b.ConstRandom(name, DType::kFloat32, shape, -0.6, 0.6);
    return b.ConstRandom(name, DType::kInt8, shape, -127, 127, Quant(0.004f + 0.001f * (wi % 4), 0));
  };
  auto cell = [&](int base_w, int base_r, int base_p, int base_b, int proj_w, int proj_b, int base_aux, int state_h,
                  int state_c, int n_out_proj, const char* tag) {
    const int n_out = n_out_proj > 0 ? n_out_proj : c.cell;
    for (int g = 0; g < 4; ++g) {
      if (g == 0 && c.cifg) continue;
      ins[base_w + g] = weight({c.cell, c.input});
      ins[base_r + g] = weight({c.cell, n_out});
      ins[base_b + g] = b.ConstRandom(std::string(tag).append("_bias").append(std::to_string(g)), DType::kFloat32,
                                      {c.cell}, -0.4, 0.4);
      if (c.aux == BidiCase::kCrossLinked) ins[base_aux + g] = weight({c.cell, c.aux_size});
    }
    if (c.peephole)
      for (int g = 0; g < 3; ++g)
        if (!(g == 0 && c.cifg)) ins[base_p + g] = weight({c.cell});
    if (n_out_proj > 0) {
      ins[proj_w] = weight({n_out, c.cell});
      ins[proj_b] = b.ConstRandom(std::string(tag).append("_proj_bias"), DType::kFloat32, {n_out}, -0.2, 0.2);
    }
    ins[state_h] = b.Variable(std::string(tag).append("_h"), DType::kFloat32, {c.batch, n_out});
    ins[state_c] = b.Variable(std::string(tag).append("_c"), DType::kFloat32, {c.batch, c.cell});
    return n_out;
  };
  const int fw_n = cell(1, 5, 9, 12, 16, 17, 40, 35, 36, c.fw_output, "fw");
  const int bw_n = cell(18, 22, 26, 29, 33, 34, 44, 37, 38, c.bw_output, "bw");
  tflite::BidirectionalSequenceLSTMOptionsT o;
  o.fused_activation_function = tflite::ActivationFunctionType_TANH;
  o.cell_clip = 3.0f;
  o.merge_outputs = c.merge;
  o.time_major = c.time_major;
  o.asymmetric_quantize_inputs = c.asymmetric;
  std::vector<int32_t> outs;
  outs.push_back(b.Tensor("fw_out", DType::kFloat32, shape3(c.merge ? fw_n + bw_n : fw_n)));
  if (!c.merge) outs.push_back(b.Tensor("bw_out", DType::kFloat32, shape3(bw_n)));
  b.Op(tflite::BuiltinOperator_BIDIRECTIONAL_SEQUENCE_LSTM, ins, outs, o, c.hybrid ? 3 : 1);
  for (auto t : outs) b.Output(t);
  return b.Finish();
}

TEST(BidiLstmConformance, FloatAndHybrid) {
  if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  // Merged outputs are checked time-major or with batch 1: batch-major with batch > 1, TFLite
  // 2.9 steps the state rows by the merged output width (2 * n_output) and reads and writes past
  // the state tensors, so its results there are not defined. edgeopt uses the state rows.
  std::vector<BidiCase> cases;
  for (bool hybrid : {false, true}) {
    BidiCase c;
    c.hybrid = hybrid;
    cases.push_back(c);
    { BidiCase d = c; d.merge = true; d.time_major = true; cases.push_back(d); }
    { BidiCase d = c; d.merge = true; d.batch = 1; d.time = 5; cases.push_back(d); }
    { BidiCase d = c; d.peephole = true; d.fw_output = 2; d.bw_output = 2; cases.push_back(d); }
    { BidiCase d = c; d.cifg = true; d.merge = true; d.time_major = true; d.fw_output = 5; d.bw_output = 5; cases.push_back(d); }
    { BidiCase d = c; d.cifg = true; d.fw_output = 5; d.bw_output = 5; cases.push_back(d); }
    { BidiCase d = c; d.aux = BidiCase::kCrossLinked; d.merge = true; d.time_major = true; cases.push_back(d); }
    { BidiCase d = c; d.aux = BidiCase::kCrossLinked; d.peephole = true; cases.push_back(d); }
    { BidiCase d = c; d.aux = BidiCase::kBackwardInput; d.time_major = true; cases.push_back(d); }
    if (hybrid) { BidiCase d = c; d.asymmetric = true; d.aux = BidiCase::kCrossLinked; cases.push_back(d); }
  }
  // Hybrid cells keep TFLite's hybrid arithmetic here (the default dequantizes their weights and
  // runs in float: lstm_test.cc checks that path).
  const testing::ScopedEnv hybrid_arithmetic("EDGEOPT_HYBRID_DEQUANT", "0");
  testing::CompareOptions o;
  o.rtol = 1e-5;
  o.atol = 1e-6;
  for (const auto& c : cases) {
    auto report = testing::CompareGraphInvokes(BuildBidi(c), 3, o);
    EXPECT_TRUE(report.ok) << c.Name() << ": " << report.Summary();
  }
}

TEST(BidiLstmErrors, BadModels) {
  auto prepare = [](Graph g) -> Status {
    ASSIGN_OR_RETURN(auto model, rt::Model::FromGraph(std::move(g)));
    ASSIGN_OR_RETURN(auto interp, rt::Interpreter::Create(model));
    return interp->AllocateTensors();
  };
  {
    Graph g = BuildBidi({});
    g.main().ops[0].inputs.resize(40);
    Status st = prepare(std::move(g));
    EXPECT_NE(st.message().find("BIDIRECTIONAL_SEQUENCE_LSTM: expects 48 inputs"), std::string::npos) << st.ToString();
  }
  {
    Graph g = BuildBidi({});
    g.main().ops[0].inputs[20] = kNoTensor;  // backward input-to-cell weights
    Status st = prepare(std::move(g));
    EXPECT_NE(st.message().find("backward input-to-gate weights (input 20) is missing"), std::string::npos)
        << st.ToString();
  }
}

}  // namespace
}  // namespace edgeopt
