// UNIDIRECTIONAL_SEQUENCE_RNN / RNN against TFLite 2.9: float and hybrid (symmetric and
// asymmetric input quantization), time-major both ways, several activations, 3 invokes each
// (the hidden state carries over).
#include <gtest/gtest.h>

#include "graph/builder.h"
#include "runtime/interpreter.h"
#include "support/conformance.h"
#include "support/multi_invoke.h"

namespace edgeopt {
namespace {

struct RnnCase {
  bool hybrid = false, sequence = true, time_major = false, asymmetric = false;
  int batch = 2, time = 4, input = 5, units = 3;
  int activation = tflite::ActivationFunctionType_TANH;
  std::string Name() const {
    return std::string(sequence ? "seq-rnn" : "rnn") + (hybrid ? " hybrid" : " float") + (asymmetric ? " asym" : "") +
           (time_major ? " time_major" : "") + " b" + std::to_string(batch) + " t" + std::to_string(time) + " i" +
           std::to_string(input) + " u" + std::to_string(units) + " act" + std::to_string(activation);
  }
};

Graph BuildRnn(const RnnCase& c) {
  GraphBuilder b(11);
  std::vector<int32_t> in_shape = !c.sequence ? std::vector<int32_t>{c.batch, c.input}
                                              : (c.time_major ? std::vector<int32_t>{c.time, c.batch, c.input}
                                                              : std::vector<int32_t>{c.batch, c.time, c.input});
  auto x = b.Input("x", DType::kFloat32, in_shape);
  auto weight = [&](const char* name, std::vector<int32_t> shape, float scale) {
    if (!c.hybrid) return b.ConstRandom(name, DType::kFloat32, shape, -0.7, 0.7);
    return b.ConstRandom(name, DType::kInt8, shape, -127, 127, Quant(scale, 0));
  };
  auto w = weight("w", {c.units, c.input}, 0.005f);
  auto r = weight("r", {c.units, c.units}, 0.004f);
  auto bias = b.ConstRandom("bias", DType::kFloat32, {c.units}, -0.3, 0.3);
  auto h = b.Variable("hidden", DType::kFloat32, {c.batch, c.units});
  std::vector<int32_t> out_shape = in_shape;
  out_shape.back() = c.units;
  auto y = b.Tensor("y", DType::kFloat32, out_shape);
  if (c.sequence) {
    tflite::SequenceRNNOptionsT o;
    o.time_major = c.time_major;
    o.fused_activation_function = static_cast<tflite::ActivationFunctionType>(c.activation);
    o.asymmetric_quantize_inputs = c.asymmetric;
    b.Op(tflite::BuiltinOperator_UNIDIRECTIONAL_SEQUENCE_RNN, {x, w, r, bias, h}, {y}, o, c.hybrid ? 3 : 1);
  } else {
    tflite::RNNOptionsT o;
    o.fused_activation_function = static_cast<tflite::ActivationFunctionType>(c.activation);
    o.asymmetric_quantize_inputs = c.asymmetric;
    b.Op(tflite::BuiltinOperator_RNN, {x, w, r, bias, h}, {y}, o, c.hybrid ? 3 : 1);
  }
  b.Output(y);
  return b.Finish();
}

TEST(RnnConformance, FloatAndHybrid) {
  if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  std::vector<RnnCase> cases;
  for (bool hybrid : {false, true}) {
    RnnCase c;
    c.hybrid = hybrid;
    cases.push_back(c);
    { RnnCase d = c; d.time_major = true; d.batch = 3; cases.push_back(d); }
    { RnnCase d = c; d.activation = tflite::ActivationFunctionType_RELU; d.input = 17; d.units = 9; cases.push_back(d); }
    { RnnCase d = c; d.sequence = false; cases.push_back(d); }
    if (hybrid) {
      { RnnCase d = c; d.asymmetric = true; cases.push_back(d); }
      { RnnCase d = c; d.asymmetric = true; d.sequence = false; d.batch = 4; cases.push_back(d); }
    }
  }
  testing::CompareOptions o;
  o.rtol = 1e-5;
  o.atol = 1e-6;
  for (const auto& c : cases) {
    auto report = testing::CompareGraphInvokes(BuildRnn(c), 3, o);
    EXPECT_TRUE(report.ok) << c.Name() << ": " << report.Summary();
  }
}

TEST(RnnErrors, BadModels) {
  auto prepare = [](Graph g) -> Status {
    ASSIGN_OR_RETURN(auto model, rt::Model::FromGraph(std::move(g)));
    ASSIGN_OR_RETURN(auto interp, rt::Interpreter::Create(model));
    return interp->AllocateTensors();
  };
  {
    Graph g = BuildRnn({});
    g.main().tensors[g.main().ops[0].inputs[4]].is_variable = false;
    Status st = prepare(std::move(g));
    EXPECT_NE(st.message().find("UNIDIRECTIONAL_SEQUENCE_RNN: hidden state"), std::string::npos) << st.ToString();
  }
  {
    Graph g = BuildRnn({});
    g.main().tensors[g.main().ops[0].inputs[2]].shape = {3, 4};
    Status st = prepare(std::move(g));
    EXPECT_NE(st.message().find("recurrent weights must be [3, 3]"), std::string::npos) << st.ToString();
  }
}

}  // namespace
}  // namespace edgeopt
