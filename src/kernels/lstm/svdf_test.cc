// SVDF against TFLite 2.9: float, hybrid (symmetric/asymmetric), full integer (bit-exact), with
// and without bias, rank 1 and 2; 4 invokes each so the state memory fills and shifts.
#include <gtest/gtest.h>

#include "graph/builder.h"
#include "runtime/interpreter.h"
#include "support/conformance.h"
#include "support/multi_invoke.h"

namespace edgeopt {
namespace {

enum class SvdfKind { kFloat, kHybrid, kInt8 };

struct SvdfCase {
  SvdfKind kind = SvdfKind::kFloat;
  int batch = 2, input = 6, units = 4, rank = 1, memory = 3;
  bool bias = true, asymmetric = false;
  int activation = tflite::ActivationFunctionType_RELU;
  std::string Name() const {
    const char* k = kind == SvdfKind::kFloat ? "float" : kind == SvdfKind::kHybrid ? "hybrid" : "int8";
    return std::string(k) + " b" + std::to_string(batch) + " i" + std::to_string(input) + " u" + std::to_string(units) +
           " rank" + std::to_string(rank) + " mem" + std::to_string(memory) + (bias ? "" : " nobias") +
           (asymmetric ? " asym" : "") + " act" + std::to_string(activation);
  }
};

Graph BuildSvdf(const SvdfCase& c) {
  GraphBuilder b(21);
  const int filters = c.units * c.rank;
  const bool integer = c.kind == SvdfKind::kInt8;
  auto x = b.Input("x", integer ? DType::kInt8 : DType::kFloat32, {c.batch, c.input},
                   integer ? std::optional(Quant(0.03f, -5)) : std::nullopt);
  int32_t wf, wt, bias = kNoTensor;
  if (c.kind == SvdfKind::kFloat) {
    wf = b.ConstRandom("weights_feature", DType::kFloat32, {filters, c.input}, -0.8, 0.8);
    wt = b.ConstRandom("weights_time", DType::kFloat32, {filters, c.memory}, -0.8, 0.8);
  } else {
    wf = b.ConstRandom("weights_feature", DType::kInt8, {filters, c.input}, -127, 127, Quant(0.006f, 0));
    wt = integer ? b.ConstRandom("weights_time", DType::kInt16, {filters, c.memory}, -20000, 20000, Quant(4e-5f, 0))
                 : b.ConstRandom("weights_time", DType::kInt8, {filters, c.memory}, -127, 127, Quant(0.007f, 0));
  }
  if (c.bias)
    bias = integer ? b.ConstRandom("bias", DType::kInt32, {c.units}, -500, 500, Quant(1e-5f, 0))
                   : b.ConstRandom("bias", DType::kFloat32, {c.units}, -0.2, 0.2);
  auto state = b.Variable("state", integer ? DType::kInt16 : DType::kFloat32, {c.batch, c.memory * filters},
                          integer ? std::optional(Quant(0.0005f, 0)) : std::nullopt);
  auto y = b.Tensor("y", integer ? DType::kInt8 : DType::kFloat32, {c.batch, c.units},
                    integer ? std::optional(Quant(0.06f, 3)) : std::nullopt);
  tflite::SVDFOptionsT o;
  o.rank = c.rank;
  o.fused_activation_function = static_cast<tflite::ActivationFunctionType>(c.activation);
  o.asymmetric_quantize_inputs = c.asymmetric;
  b.Op(tflite::BuiltinOperator_SVDF, {x, wf, wt, bias, state}, {y}, o, c.kind == SvdfKind::kFloat ? 1 : 3);
  b.Output(y);
  return b.Finish();
}

TEST(SvdfConformance, FloatHybridInt8) {
  if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  std::vector<SvdfCase> cases;
  for (SvdfKind k : {SvdfKind::kFloat, SvdfKind::kHybrid, SvdfKind::kInt8}) {
    SvdfCase c;
    c.kind = k;
    cases.push_back(c);
    { SvdfCase d = c; d.rank = 2; d.memory = 5; d.bias = false; cases.push_back(d); }
    { SvdfCase d = c; d.batch = 1; d.input = 13; d.units = 7; cases.push_back(d); }
    if (k != SvdfKind::kInt8) { SvdfCase d = c; d.activation = tflite::ActivationFunctionType_NONE; cases.push_back(d); }
    if (k == SvdfKind::kHybrid) { SvdfCase d = c; d.asymmetric = true; d.rank = 2; cases.push_back(d); }
  }
  testing::CompareOptions o;
  o.rtol = 1e-5;
  o.atol = 1e-6;
  o.max_lsb = 0;
  for (const auto& c : cases) {
    auto report = testing::CompareGraphInvokes(BuildSvdf(c), 4, o);
    EXPECT_TRUE(report.ok) << c.Name() << ": " << report.Summary();
  }
}

TEST(SvdfErrors, BadModels) {
  auto prepare = [](Graph g) -> Status {
    ASSIGN_OR_RETURN(auto model, rt::Model::FromGraph(std::move(g)));
    ASSIGN_OR_RETURN(auto interp, rt::Interpreter::Create(model));
    return interp->AllocateTensors();
  };
  {
    Graph g = BuildSvdf({});
    static_cast<tflite::SVDFOptionsT*>(g.main().ops[0].options.value)->rank = 3;
    Status st = prepare(std::move(g));
    EXPECT_NE(st.message().find("SVDF: rank 3 must be > 0 and divide the 4 filters"), std::string::npos) << st.ToString();
  }
  {
    SvdfCase c;
    c.kind = SvdfKind::kInt8;
    c.activation = tflite::ActivationFunctionType_NONE;
    Status st = prepare(BuildSvdf(c));
    EXPECT_NE(st.message().find("supports only the RELU activation"), std::string::npos) << st.ToString();
  }
}

}  // namespace
}  // namespace edgeopt
