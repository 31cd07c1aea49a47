// Helpers for single-op conformance tests: typed input values, exact comparison options, a
// seeded generator of shapes and quantization parameters, and running edgeopt alone (for error
// cases). Header-only; used by the kernel folders' *_test.cc files.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "support/conformance.h"

namespace edgeopt::testing {

// Integers bit-exact, floats within 1e-6 of the reference range, against TFLite 2.9 only (no
// silent fallback to another runtime).
inline CompareOptions ExactOptions() {
  CompareOptions o;
  o.max_lsb = 0;
  o.rtol = 1e-6;
  o.atol = 0;
  o.oracle = Oracle::kTflite29;
  return o;
}

template <typename T>
std::vector<uint8_t> ToBytes(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

template <typename T>
TensorValue MakeValue(const std::string& name, DType type, std::vector<int32_t> shape, const std::vector<T>& values) {
  TensorValue v;
  v.name = name;
  v.type = type;
  v.shape = std::move(shape);
  v.data = ToBytes(values);
  return v;
}

inline std::string ShapeText(const std::vector<int32_t>& s) { return rt::ShapeToString(s); }

// Counts the cases compared in this test binary (reported by the suites that print totals).
inline int& CaseCounter() {
  static int n = 0;
  return n;
}

// Compares one model against TFLite 2.9; on failure prints the case label and the report.
inline void ExpectConforms(const Graph& g, const std::string& label, const CompareOptions& o = ExactOptions(),
                           std::vector<TensorValue> inputs = {}) {
  ++CaseCounter();
  if (std::getenv("EDGEOPT_TEST_VERBOSE")) std::fprintf(stderr, "case: %s\n", label.c_str());
  const CompareReport r = CompareGraph(g, o, std::move(inputs));
  EXPECT_TRUE(r.ok) << label << "\n" << r.Summary();
}

// Runs edgeopt only (reference kernels) and returns the status of the whole run.
inline Status RunOurs(const Graph& g, std::vector<TensorValue> inputs = {}) {
  auto model = rt::Model::FromGraph(g);
  if (!model.ok()) return model.status();
  if (inputs.empty()) inputs = RandomInputs(g, CompareOptions{});
  rt::InterpreterOptions io;
  io.reference_kernels_only = true;
  auto out = RunEdgeopt(*model, inputs, io);
  return out.ok() ? Status::Ok() : out.status();
}

// Runs edgeopt only and returns the outputs.
inline Expected<std::vector<TensorValue>> RunOursValues(const Graph& g, std::vector<TensorValue> inputs = {}) {
  auto model = rt::Model::FromGraph(g);
  if (!model.ok()) return model.status();
  if (inputs.empty()) inputs = RandomInputs(g, CompareOptions{});
  return RunEdgeopt(*model, inputs, {});
}

// Seeded choices for generated cases.
class CaseRng {
 public:
  explicit CaseRng(uint64_t seed) : rng_(seed) {}
  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool Bool() { return Int(0, 1) == 1; }
  float Float(float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(rng_); }
  std::vector<int32_t> Shape(int rank, int lo = 1, int hi = 5) {
    std::vector<int32_t> s(rank);
    for (auto& d : s) d = Int(lo, hi);
    return s;
  }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Int(0, static_cast<int>(v.size()) - 1)];
  }
  // Random per-tensor parameters for int8/uint8/int16 (int16 symmetric), none otherwise.
  std::optional<QuantParams> QuantFor(DType t) {
    switch (t) {
      case DType::kInt8: return Quant(Float(0.01f, 0.2f), Int(-20, 20));
      case DType::kUInt8: return Quant(Float(0.01f, 0.2f), Int(100, 155));
      case DType::kInt16: return Quant(Float(1e-4f, 1e-3f), 0);
      default: return std::nullopt;
    }
  }
  std::mt19937_64& engine() { return rng_; }

 private:
  std::mt19937_64 rng_;
};

// The element types data-movement ops are tested with.
inline const std::vector<DType>& MovementTypes() {
  static const std::vector<DType> kTypes = {DType::kFloat32, DType::kInt8,  DType::kUInt8, DType::kInt16,
                                            DType::kInt32,   DType::kInt64, DType::kBool};
  return kTypes;
}

inline std::string TypeLabel(DType t) { return std::string(DTypeName(t)); }

}  // namespace edgeopt::testing
