// The conformance harness: runs one model on the same inputs through edgeopt and a reference
// runtime (TFLite 2.9 C library by default; LiteRT.js under Node for models 2.9 cannot run) and
// compares every output. Integer outputs: at most `max_lsb` apart (bool/int32/int64 exact);
// float outputs: |a - b| <= atol + rtol * max|reference| over the output.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "graph/graph.h"
#include "runtime/interpreter.h"

namespace edgeopt::testing {

// A tensor's value as produced by either runtime.
struct TensorValue {
  std::string name;
  DType type = DType::kFloat32;
  std::vector<int32_t> shape;
  std::vector<uint8_t> data;
  float scale = 0;
  int32_t zero_point = 0;

  int64_t num_elements() const;
  double At(int64_t i) const;  // element i as double (float16 decoded)
};

// The value's elements as T (its bytes reinterpreted; the caller picks T from v.type).
template <typename T>
std::vector<T> ValuesOf(const TensorValue& v) {
  std::vector<T> out(v.data.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), v.data.data(), v.data.size());
  return out;
}

enum class Oracle { kAuto, kTflite29, kLiteRtJs };
const char* OracleName(Oracle o);

struct CompareOptions {
  double rtol = 1e-4;
  double atol = 1e-6;
  int max_lsb = 1;
  int threads = 1;
  bool reference_kernels_only = false;  // edgeopt side: reference kernels (oracle check of refs)
  Oracle oracle = Oracle::kAuto;        // kAuto: TFLite 2.9, LiteRT.js if 2.9 cannot load/run
  uint64_t seed = 1;
  // Range of random float inputs (quantized inputs use the whole integer range).
  double float_lo = -1.0;
  double float_hi = 1.0;
  // Range of random non-quantized integer inputs (quantized ones use their whole range). Real
  // models with index inputs (token ids) need small non-negative values.
  double int_lo = -1e9;
  double int_hi = 1e9;
};

struct OutputReport {
  std::string name;
  DType type = DType::kFloat32;
  std::vector<int32_t> shape;
  double max_abs_error = 0;  // in real units for floats, in LSB for integers
  double reference_range = 0;
  int64_t mismatches = 0;    // elements over the tolerance
  bool ok = true;
  std::string problem;       // shape/type mismatch text
};

struct CompareReport {
  bool ok = false;
  std::string oracle;         // "tflite-2.9", "litert.js"
  std::string error;          // a runtime failed: why
  std::vector<OutputReport> outputs;
  std::string Summary() const;  // one line per output
};

// Seeded random inputs matching the main subgraph inputs of `g`.
std::vector<TensorValue> RandomInputs(const Graph& g, const CompareOptions& opts);

// One invoke of an existing interpreter on `inputs` (by position): inputs resized where their
// shapes differ and copied in (types and sizes checked), outputs in guarded buffers during the
// invoke (OutputGuards: a kernel writing past its output fails it) and copied out.
Expected<std::vector<TensorValue>> InvokeWith(rt::Interpreter& interp, const std::vector<TensorValue>& inputs);
// Runs edgeopt on a model with given inputs (by position).
Expected<std::vector<TensorValue>> RunEdgeopt(std::shared_ptr<const rt::Model> model,
                                              const std::vector<TensorValue>& inputs,
                                              const rt::InterpreterOptions& options = {});
// Runs `model` on `inputs` with fusion on and off (InterpreterOptions::fuse_ops) at `threads`
// threads: "" when every output has the same bytes, else which output differs (or the error).
std::string FusedDiffersFromUnfused(std::shared_ptr<const rt::Model> model, const std::vector<TensorValue>& inputs,
                                    int threads);
// Runs the TFLite 2.9 library on serialized model bytes.
Expected<std::vector<TensorValue>> RunTflite29(const std::vector<uint8_t>& model_bytes,
                                               const std::vector<TensorValue>& inputs, int threads = 1,
                                               bool xnnpack = false, uint32_t xnnpack_flags = 0);
// Runs LiteRT.js (node) on a model file.
Expected<std::vector<TensorValue>> RunLiteRtJs(const std::string& model_path, const std::vector<TensorValue>& inputs);
bool LiteRtJsAvailable();
bool Tflite29Available();

// Compares two output lists.
CompareReport CompareOutputs(const std::vector<TensorValue>& ours, const std::vector<TensorValue>& ref,
                             const CompareOptions& opts);

// Serializes `g`, runs both runtimes on `inputs` (random if empty), compares.
CompareReport CompareGraph(const Graph& g, const CompareOptions& opts = {},
                           std::vector<TensorValue> inputs = {});
// Same for a model file.
CompareReport CompareModelFile(const std::string& path, const CompareOptions& opts = {},
                               std::vector<TensorValue> inputs = {});

}  // namespace edgeopt::testing

// In a TEST body: skip, saying why, when the TFLite 2.9 oracle library is absent.
#define SKIP_WITHOUT_ORACLE() \
  if (!::edgeopt::testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)"
