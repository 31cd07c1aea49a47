// Test support: a thin wrapper around the REFERENCE runtime, the TensorFlow Lite 2.9 C library
// (libtensorflowlite_c.so from npm tfjs-tflite-node@0.0.2), used by conformance tests and
// benchmarks as the oracle (expected outputs) and as the rival (timings).
//
// - The library is dlopen()ed at run time, never linked, so this code compiles and the tests
//   build without it; tests call TfliteOracle::LibraryPresent() and GTEST_SKIP with a reason
//   when it is missing. Location: $EDGEOPT_TFLITE_LIB, else
//   <EDGEOPT_SOURCE_DIR>/.cache/tflite29/lib/libtensorflowlite_c.so (put there by scripts/setup.sh).
// - The TFLite C headers are NOT needed: the few C types used are re-declared in the .cc.
// - Every failure returns an edgeopt::Status whose message names the model and carries the text
//   TFLite reported (captured through TfLiteInterpreterOptionsSetErrorReporter; model-load
//   errors, which 2.9 writes to stderr only, are captured from stderr).
// - Tensor types use the TfLiteType numbering (kTfLiteFloat32 = 1, kTfLiteUInt8 = 3,
//   kTfLiteInt8 = 9, ...), which is NOT the .tflite schema TensorType numbering
//   (schema FLOAT32 = 0, INT8 = 9, UINT8 = 3 ...). See OracleType below.
//
// Typical use:
//   if (!TfliteOracle::LibraryPresent()) GTEST_SKIP() << TfliteOracle::MissingReason();
//   auto outs = RunOnce(model_path, {input0}, {.threads = 1});
//   ASSERT_TRUE(outs.ok()) << outs.status().ToString();
#pragma once

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace edgeopt::testing {

// TfLiteType values (tensorflow/lite/c/c_api_types.h, TF 2.9).
enum OracleType : int {
  kOracleNoType = 0,
  kOracleFloat32 = 1,
  kOracleInt32 = 2,
  kOracleUInt8 = 3,
  kOracleInt64 = 4,
  kOracleString = 5,
  kOracleBool = 6,
  kOracleInt16 = 7,
  kOracleComplex64 = 8,
  kOracleInt8 = 9,
  kOracleFloat16 = 10,
  kOracleFloat64 = 11,
  kOracleComplex128 = 12,
  kOracleUInt64 = 13,
  kOracleResource = 14,
  kOracleVariant = 15,
  kOracleUInt32 = 16,
};

// "float32", "int8", ... ("unknown(N)" otherwise).
std::string OracleTypeName(int type);
// Bytes per element; 0 for string/resource/variant/unknown.
size_t OracleTypeSize(int type);

// A tensor's metadata and (for inputs to RunOnce / results of GetOutput) its raw bytes.
struct OracleTensor {
  std::string name;
  int type = kOracleNoType;  // TfLiteType value (see OracleType), not schema TensorType.
  std::vector<int> shape;
  std::vector<uint8_t> data;  // raw little-endian bytes, row-major; empty in metadata-only use
  float scale = 0;            // per-tensor quantization (TfLiteTensorQuantizationParams);
  int32_t zero_point = 0;     // 0/0 when the tensor is not quantized

  size_t NumElements() const {
    size_t n = 1;
    for (int d : shape) n *= static_cast<size_t>(d < 0 ? 0 : d);
    return n;
  }
  // Copies data out as T (data.size() must be a multiple of sizeof(T)).
  template <typename T>
  std::vector<T> Values() const {
    std::vector<T> v(data.size() / sizeof(T));
    if (!v.empty()) std::memcpy(v.data(), data.data(), v.size() * sizeof(T));
    return v;
  }
};

// "[1,224,224,3]"
std::string ShapeToString(const std::vector<int>& shape);

// XNNPACK delegate flags of TF 2.9 (TFLITE_XNNPACK_DELEGATE_FLAG_*).
inline constexpr uint32_t kXnnpackFlagQS8 = 1;  // signed int8 (per-tensor/per-channel) ops
inline constexpr uint32_t kXnnpackFlagQU8 = 2;  // unsigned uint8 ops

struct OracleOptions {
  int threads = 1;             // interpreter threads, and XNNPACK thread-pool size
  bool xnnpack = false;        // apply the XNNPACK delegate explicitly
  uint32_t xnnpack_flags = 0;  // kXnnpackFlagQS8 | kXnnpackFlagQU8
};

// The loaded library. One per library path per process: Load() dlopen()s once, caches the
// result and never dlclose()s (TFLite keeps static state and thread pools).
class TfliteOracle {
 public:
  struct Api;  // resolved C entry points (defined in the .cc)

  static Expected<std::shared_ptr<TfliteOracle>> Load(const std::string& lib_path = DefaultLibPath());
  // $EDGEOPT_TFLITE_LIB if set and non-empty, else
  // EDGEOPT_SOURCE_DIR "/.cache/tflite29/lib/libtensorflowlite_c.so" (EDGEOPT_SOURCE_DIR is a
  // compile definition from CMake; "." when absent).
  static std::string DefaultLibPath();
  // True when the library file exists (does not try to load it).
  static bool LibraryPresent(const std::string& lib_path = DefaultLibPath());
  // A one-line reason for GTEST_SKIP when LibraryPresent() is false.
  static std::string MissingReason(const std::string& lib_path = DefaultLibPath());

  // TfLiteVersion(), e.g. "2.9.1".
  std::string Version() const;
  const std::string& lib_path() const { return lib_path_; }
  const Api& api() const { return *api_; }

  ~TfliteOracle();
  TfliteOracle(const TfliteOracle&) = delete;
  TfliteOracle& operator=(const TfliteOracle&) = delete;

 private:
  TfliteOracle() = default;
  std::string lib_path_;
  void* handle_ = nullptr;
  std::unique_ptr<Api> api_;
};

// One interpreter over one model. Not thread-safe; use one session per thread.
class OracleSession {
 public:
  // oracle == nullptr means TfliteOracle::Load() (default library path).
  static Expected<std::unique_ptr<OracleSession>> Create(const std::string& model_path,
                                                         const OracleOptions& options = {},
                                                         std::shared_ptr<TfliteOracle> oracle = nullptr);
  // The bytes are copied into the session (TfLiteModelCreate does not copy). `label` names the
  // model in error messages.
  static Expected<std::unique_ptr<OracleSession>> CreateFromBuffer(
      const void* data, size_t size, const OracleOptions& options = {},
      std::shared_ptr<TfliteOracle> oracle = nullptr, const std::string& label = "<memory buffer>");

  ~OracleSession();
  OracleSession(const OracleSession&) = delete;
  OracleSession& operator=(const OracleSession&) = delete;

  // Metadata (name, type, current shape, quantization) by position; `data` is left empty.
  std::vector<OracleTensor> inputs() const;
  std::vector<OracleTensor> outputs() const;
  size_t num_inputs() const;
  size_t num_outputs() const;

  // Resizes input `index` and re-allocates tensors.
  Status ResizeInput(int index, std::vector<int> shape);
  // Copies `bytes` bytes into input `index`; `bytes` must equal the tensor's byte size.
  Status SetInput(int index, const void* data, size_t bytes);
  Status Invoke();
  // Copy of output `index` (metadata and data).
  Expected<OracleTensor> GetOutput(int index) const;
  Expected<std::vector<OracleTensor>> GetOutputs() const;

  // Runs `warmup` untimed then `runs` timed Invoke()s; milliseconds per invoke (steady_clock).
  Expected<std::vector<double>> TimeInvokes(int warmup, int runs);

  const std::string& model_label() const { return label_; }
  const OracleOptions& options() const { return options_; }
  // Everything the library reported for this session so far.
  const std::string& error_log() const { return error_log_; }
  // True when the XNNPACK delegate was applied (options.xnnpack).
  bool xnnpack_applied() const { return delegate_ != nullptr; }

 private:
  OracleSession() = default;
  static Expected<std::unique_ptr<OracleSession>> CreateImpl(std::unique_ptr<OracleSession> s);
  static void ReportError(void* user_data, const char* format, va_list args);
  Status Fail(StatusCode code, const std::string& what, size_t log_mark) const;

  std::shared_ptr<TfliteOracle> oracle_;
  OracleOptions options_;
  std::string label_;
  std::vector<uint8_t> model_bytes_;  // owned copy for CreateFromBuffer
  void* model_ = nullptr;             // TfLiteModel*
  void* delegate_ = nullptr;          // TfLiteDelegate* (XNNPACK)
  void* interpreter_ = nullptr;       // TfLiteInterpreter*
  std::string error_log_;
};

// Loads `model_path`, resizes each input whose given shape differs from the model's, copies
// the inputs (by position; types must match unless the given type is kOracleNoType), invokes
// once and returns all outputs.
Expected<std::vector<OracleTensor>> RunOnce(const std::string& model_path,
                                            const std::vector<OracleTensor>& inputs,
                                            const OracleOptions& options = {},
                                            std::shared_ptr<TfliteOracle> oracle = nullptr);

// Median of a list of timings (0 for an empty list).
double MedianMs(std::vector<double> ms);

}  // namespace edgeopt::testing
