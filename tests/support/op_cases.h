// Helpers for generated single-op conformance cases: build a one-op model, run it through
// edgeopt and TFLite 2.9 on given or seeded inputs, and return "" on agreement or a one-paragraph
// description naming the case on disagreement (so EXPECT_EQ(..., "") prints only failures).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "format/writer.h"
#include "graph/builder.h"
#include "runtime/interpreter.h"
#include "support/conformance.h"

namespace edgeopt::testing {

struct TensorSpec {
  DType type = DType::kFloat32;
  std::vector<int32_t> shape;
  std::optional<QuantParams> quant;
};

inline TensorSpec Spec(DType t, std::vector<int32_t> shape) { return {t, std::move(shape), std::nullopt}; }
inline TensorSpec QSpec(DType t, std::vector<int32_t> shape, float scale, int64_t zero_point) {
  return {t, std::move(shape), Quant(scale, zero_point)};
}

inline std::string ShapeText(const std::vector<int32_t>& s) { return rt::ShapeToString(s); }

// A graph with one op; every input is a graph input (non-constant) unless `constants` holds
// bytes for it (same position; empty vector = graph input).
inline Graph OneOpGraph(tflite::BuiltinOperator op, const std::vector<TensorSpec>& inputs, const std::vector<TensorSpec>& outputs,
                        tflite::BuiltinOptionsUnion options = {},
                        const std::vector<std::vector<uint8_t>>& constants = {}) {
  GraphBuilder b;
  std::vector<int32_t> in_ids, out_ids;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string name = "in" + std::to_string(i);
    if (i < constants.size() && !constants[i].empty())
      in_ids.push_back(b.ConstBytes(name, inputs[i].type, inputs[i].shape, constants[i], inputs[i].quant));
    else
      in_ids.push_back(b.Input(name, inputs[i].type, inputs[i].shape, inputs[i].quant));
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    out_ids.push_back(b.Tensor("out" + std::to_string(i), outputs[i].type, outputs[i].shape, outputs[i].quant));
  b.AddOp(op, in_ids, out_ids, std::move(options));
  for (int32_t o : out_ids) b.Output(o);
  return b.Finish();
}

template <typename Options>
tflite::BuiltinOptionsUnion Opts(Options o) {
  tflite::BuiltinOptionsUnion u;
  u.Set(std::move(o));
  return u;
}

template <typename T>
std::vector<uint8_t> Bytes(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

template <typename T>
TensorValue Value(const TensorSpec& spec, const std::vector<T>& values) {
  TensorValue v;
  v.type = spec.type;
  v.shape = spec.shape;
  v.data = Bytes(values);
  return v;
}

// Seeded random values for a spec: floats in [lo, hi], integers over [lo, hi] clamped to the type.
inline TensorValue RandomValue(const TensorSpec& spec, std::mt19937_64& rng, double lo, double hi) {
  TensorValue v;
  v.type = spec.type;
  v.shape = spec.shape;
  int64_t n = 1;
  for (int32_t d : spec.shape) n *= d;
  v.data = RandomBytesOfType(rng, spec.type, static_cast<size_t>(n), lo, hi);
  return v;
}

// Cases run so far. With EDGEOPT_CASE_COUNT set in the environment the total is printed at
// the end of the run (never otherwise: tests stay quiet on success).
inline int& CaseCounter() {
  static int n = 0;
  return n;
}

class CaseCountEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    if (std::getenv("EDGEOPT_CASE_COUNT")) std::printf("conformance cases run: %d\n", CaseCounter());
  }
};
inline const bool kCaseCountEnvironmentRegistered =
    (::testing::AddGlobalTestEnvironment(new CaseCountEnvironment), true);

// Runs one case; "" when edgeopt agrees with the reference, else a description.
inline std::string CheckCase(const std::string& label, const Graph& g, const CompareOptions& opts = {},
                             std::vector<TensorValue> inputs = {}) {
  ++CaseCounter();
  const CompareReport r = CompareGraph(g, opts, std::move(inputs));
  return r.ok ? "" : label + ": " + r.Summary();
}

// Same, but requires the TFLite 2.9 oracle itself (no LiteRT.js fallback).
inline std::string CheckCase29(const std::string& label, const Graph& g, CompareOptions opts = {},
                               std::vector<TensorValue> inputs = {}) {
  opts.oracle = Oracle::kTflite29;
  return CheckCase(label, g, opts, std::move(inputs));
}

// Expects edgeopt to reject the model (at creation, preparation or invoke) with a message that
// contains `needle`; "" when it does.
inline std::string ExpectRejected(const std::string& label, const Graph& g, const std::string& needle,
                                  std::vector<TensorValue> inputs = {}) {
  ++CaseCounter();
  auto model = rt::Model::FromGraph(g);
  if (!model.ok()) {
    return model.status().message().find(needle) != std::string::npos
               ? ""
               : label + ": rejected with an unexpected message: " + model.status().ToString();
  }
  if (inputs.empty()) inputs = RandomInputs(g, {});
  auto out = RunEdgeopt(*model, inputs);
  if (out.ok()) return label + ": edgeopt accepted a model it should reject";
  if (out.status().message().find(needle) == std::string::npos)
    return label + ": rejected with a message lacking '" + needle + "': " + out.status().ToString();
  return "";
}

// True if TFLite 2.9 also refuses the model (use only for cases that fail cleanly in 2.9).
inline bool Tflite29Rejects(const Graph& g, std::vector<TensorValue> inputs = {}) {
  auto bytes = SerializeModel(g);
  if (!bytes.ok()) return true;
  if (inputs.empty()) inputs = RandomInputs(g, {});
  return !RunTflite29(*bytes, inputs).ok();
}

}  // namespace edgeopt::testing
