#include "support/nn_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "format/writer.h"
#include "runtime/interpreter.h"

namespace edgeopt::testing {

namespace {
float Uniform(std::mt19937_64& rng, float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(rng); }
int UniformInt(std::mt19937_64& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
}  // namespace

QuantParams RandomActivationQuant(std::mt19937_64& rng, DType type) {
  switch (type) {
    case DType::kInt8: return Quant(Uniform(rng, 0.01f, 0.03f), UniformInt(rng, -20, 20));
    case DType::kUInt8: return Quant(Uniform(rng, 0.01f, 0.03f), UniformInt(rng, 110, 145));
    case DType::kInt16: return Quant(Uniform(rng, 0.5e-4f, 2e-4f), 0);
    default: return Quant(1.0f, 0);
  }
}

std::vector<float> RandomWeightScales(std::mt19937_64& rng, int channels, bool per_channel) {
  std::vector<float> s(per_channel ? channels : 1);
  for (auto& x : s) x = Uniform(rng, 0.003f, 0.008f);
  return s;
}

QuantParams WeightQuant(std::mt19937_64& rng, DType type, const std::vector<float>& scales, int axis) {
  if (type == DType::kUInt8) return Quant(scales[0], UniformInt(rng, 118, 138));
  if (scales.size() == 1) return Quant(scales[0], 0);
  return QuantPerAxis(scales, axis);
}

float OutputScaleFor(DType out_type, int64_t terms, float in_scale, float w_scale) {
  // Uniform quantized values over ~255 levels have a standard deviation of ~74 levels; the
  // weights' ~73. A sum of `terms` products then has a standard deviation of sqrt(terms) x that.
  const double in_std = (out_type == DType::kInt16 ? 18918.0 : 74.0) * in_scale;
  const double std = std::sqrt(static_cast<double>(std::max<int64_t>(terms, 1))) * in_std * 73.0 * w_scale;
  const double levels = out_type == DType::kInt16 ? 32767.0 : 127.0;
  return static_cast<float>(3.0 * std / levels);
}

int32_t QuantizedBias(GraphBuilder& b, const std::string& name, DType type, int n, float in_scale,
                      const std::vector<float>& w_scales, float real_range, std::mt19937_64& rng) {
  std::vector<int64_t> q(n);
  std::vector<float> scales(n);
  for (int c = 0; c < n; ++c) {
    const float ws = w_scales[w_scales.size() == 1 ? 0 : c];
    scales[c] = in_scale * ws;
    q[c] = static_cast<int64_t>(std::llround(Uniform(rng, -real_range, real_range) / scales[c]));
  }
  QuantParams qp = w_scales.size() == 1 ? Quant(scales[0], 0) : QuantPerAxis(scales, 0);
  if (type == DType::kInt64) return b.Const<int64_t>(name, DType::kInt64, {n}, q, qp);
  std::vector<int32_t> q32(n);
  for (int c = 0; c < n; ++c) q32[c] = static_cast<int32_t>(std::clamp<int64_t>(q[c], INT32_MIN, INT32_MAX));
  return b.Const<int32_t>(name, DType::kInt32, {n}, q32, qp);
}

CompareOptions ExactOptions() {
  CompareOptions o;
  o.max_lsb = 0;
  o.rtol = 1e-5;
  o.atol = 1e-6;
  o.oracle = Oracle::kTflite29;
  return o;
}

bool ExpectMatches(const Graph& g, const std::string& what, CompareOptions opts) {
  CompareReport report = CompareGraph(g, opts);
  EXPECT_TRUE(report.ok) << what << "\n" << report.Summary();
  return report.ok;
}

bool ExpectMatchesTwin(const Graph& ours, const Graph& reference, const std::string& what, CompareOptions opts) {
  const std::vector<TensorValue> inputs = RandomInputs(ours, opts);
  CompareReport report;
  auto model = rt::Model::FromGraph(ours);
  auto bytes = SerializeModel(reference);
  if (!model.ok() || !bytes.ok()) {
    report.error = !model.ok() ? model.status().ToString() : bytes.status().ToString();
  } else {
    rt::InterpreterOptions io;
    io.num_threads = opts.threads;
    auto a = RunEdgeopt(*model, inputs, io);
    auto b = RunTflite29(*bytes, inputs);
    if (!a.ok()) {
      report.error = "edgeopt: " + a.status().ToString();
    } else if (!b.ok()) {
      report.error = "reference: " + b.status().ToString();
    } else {
      report = CompareOutputs(*a, *b, opts);
    }
  }
  report.oracle = "tflite-2.9 (equivalent graph)";
  EXPECT_TRUE(report.ok) << what << "\n" << report.Summary();
  return report.ok;
}

bool ExpectRejected(const Graph& g, const std::string& needle, const std::string& what) {
  auto model = rt::Model::FromGraph(g);
  if (!model.ok()) {
    // The graph itself was refused: acceptable, as long as it says why.
    EXPECT_NE(model.status().message().find(needle), std::string::npos) << what << ": " << model.status().ToString();
    return true;
  }
  auto interp = rt::Interpreter::Create(*model);
  Status st = interp.ok() ? (*interp)->AllocateTensors() : interp.status();
  if (st.ok() && interp.ok()) st = (*interp)->Invoke();
  EXPECT_FALSE(st.ok()) << what << ": expected an error mentioning '" << needle << "'";
  if (st.ok()) return false;
  EXPECT_NE(st.message().find(needle), std::string::npos) << what << ": " << st.ToString();
  return st.message().find(needle) != std::string::npos;
}

}  // namespace edgeopt::testing
