// Test support: TfliteOracle / OracleSession, the dlopen()-based wrapper around the reference
// TensorFlow Lite 2.9 C library (see tflite_oracle.h for what it is for and how to use it).
//
// Notes on the 2.9 library (libtensorflowlite_c.so from npm tfjs-tflite-node@0.0.2):
// - TfLiteXNNPackDelegateOptions is 8 bytes in this build: {int32_t num_threads; uint32_t flags;}.
//   There is no weights_cache field (TfLiteXNNPackDelegateOptionsDefault is `xor eax,eax; ret`,
//   i.e. the struct comes back in RAX alone, and TfLiteXNNPackDelegateCreate copies exactly 8
//   bytes from the options pointer). Declaring the later 16-byte layout would make the
//   Default() return value read garbage from RDX.
// - XNNPACK creates its own thread pool only when num_threads > 1.
// - TfLiteModelCreate*/TfLiteModelCreateFromFile report errors to stderr (the default error
//   reporter), not to the interpreter-options reporter, so model creation runs with fd 2
//   redirected into a temporary file and the text goes into the Status.
// - TfLiteInterpreterCreate applies the delegates given in the options; in 2.9 a delegate that
//   fails to apply makes TfLiteInterpreterCreate return NULL (no fallback unless enabled).
#include "support/tflite_oracle.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <type_traits>

#ifndef EDGEOPT_SOURCE_DIR
#define EDGEOPT_SOURCE_DIR "."
#endif

namespace edgeopt::testing {

namespace {

// Minimal re-declarations of the TF 2.9 C API types we use (layouts verified against
// tensorflow/lite/c/c_api_types.h of the npm package).
struct TfLiteModel;
struct TfLiteInterpreterOptions;
struct TfLiteInterpreter;
struct TfLiteTensor;
struct TfLiteDelegate;
using TfLiteStatus = int;  // kTfLiteOk = 0
struct TfLiteQuantizationParams {
  float scale;
  int32_t zero_point;
};
struct TfLiteXNNPackDelegateOptions29 {
  int32_t num_threads;
  uint32_t flags;
};
static_assert(sizeof(TfLiteXNNPackDelegateOptions29) == 8);
// What we hand to TfLiteXNNPackDelegateCreate: the 2.9 layout followed by a null pointer, so
// that a later library build that reads {num_threads, flags, weights_cache} also sees a valid
// (null) weights cache.
struct XnnpackOptionsPadded {
  TfLiteXNNPackDelegateOptions29 base;
  void* weights_cache;
};

using ErrorReporterFn = void (*)(void*, const char*, va_list);

std::string TfLiteStatusName(TfLiteStatus s) {
  switch (s) {
    case 0: return "kTfLiteOk";
    case 1: return "kTfLiteError";
    case 2: return "kTfLiteDelegateError";
    case 3: return "kTfLiteApplicationError";
    case 4: return "kTfLiteDelegateDataNotFound";
    case 5: return "kTfLiteDelegateDataWriteError";
    case 6: return "kTfLiteDelegateDataReadError";
    case 7: return "kTfLiteUnresolvedOps";
  }
  return "TfLiteStatus(" + std::to_string(s) + ")";
}

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == '\n' || s[i] == ' ')) ++i;
  return s.substr(i);
}

// Redirects fd 2 into a temporary file for its lifetime; Finish() restores fd 2 and returns
// what was written. Not thread-safe with respect to other threads writing to stderr.
class StderrCapture {
 public:
  StderrCapture() {
    std::fflush(stderr);
    tmp_ = std::tmpfile();
    if (tmp_ == nullptr) return;
    saved_ = ::dup(2);
    if (saved_ < 0 || ::dup2(::fileno(tmp_), 2) < 0) {
      if (saved_ >= 0) ::close(saved_);
      std::fclose(tmp_);
      tmp_ = nullptr;
      saved_ = -1;
    }
  }
  ~StderrCapture() { (void)Finish(); }
  std::string Finish() {
    if (tmp_ == nullptr) return {};
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    std::string text;
    std::rewind(tmp_);
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), tmp_)) > 0) text.append(buf, n);
    std::fclose(tmp_);
    tmp_ = nullptr;
    return text;
  }

 private:
  std::FILE* tmp_ = nullptr;
  int saved_ = -1;
};

}  // namespace

struct TfliteOracle::Api {
  const char* (*TfLiteVersion)();
  TfLiteModel* (*TfLiteModelCreate)(const void*, size_t);
  TfLiteModel* (*TfLiteModelCreateFromFile)(const char*);
  void (*TfLiteModelDelete)(TfLiteModel*);
  TfLiteInterpreterOptions* (*TfLiteInterpreterOptionsCreate)();
  void (*TfLiteInterpreterOptionsDelete)(TfLiteInterpreterOptions*);
  void (*TfLiteInterpreterOptionsSetNumThreads)(TfLiteInterpreterOptions*, int32_t);
  void (*TfLiteInterpreterOptionsAddDelegate)(TfLiteInterpreterOptions*, TfLiteDelegate*);
  void (*TfLiteInterpreterOptionsSetErrorReporter)(TfLiteInterpreterOptions*, ErrorReporterFn, void*);
  TfLiteInterpreter* (*TfLiteInterpreterCreate)(const TfLiteModel*, const TfLiteInterpreterOptions*);
  void (*TfLiteInterpreterDelete)(TfLiteInterpreter*);
  int32_t (*TfLiteInterpreterGetInputTensorCount)(const TfLiteInterpreter*);
  TfLiteTensor* (*TfLiteInterpreterGetInputTensor)(const TfLiteInterpreter*, int32_t);
  TfLiteStatus (*TfLiteInterpreterResizeInputTensor)(TfLiteInterpreter*, int32_t, const int*, int32_t);
  TfLiteStatus (*TfLiteInterpreterAllocateTensors)(TfLiteInterpreter*);
  TfLiteStatus (*TfLiteInterpreterInvoke)(TfLiteInterpreter*);
  int32_t (*TfLiteInterpreterGetOutputTensorCount)(const TfLiteInterpreter*);
  const TfLiteTensor* (*TfLiteInterpreterGetOutputTensor)(const TfLiteInterpreter*, int32_t);
  int (*TfLiteTensorType)(const TfLiteTensor*);
  int32_t (*TfLiteTensorNumDims)(const TfLiteTensor*);
  int32_t (*TfLiteTensorDim)(const TfLiteTensor*, int32_t);
  size_t (*TfLiteTensorByteSize)(const TfLiteTensor*);
  void* (*TfLiteTensorData)(const TfLiteTensor*);
  const char* (*TfLiteTensorName)(const TfLiteTensor*);
  TfLiteQuantizationParams (*TfLiteTensorQuantizationParams)(const TfLiteTensor*);
  TfLiteStatus (*TfLiteTensorCopyFromBuffer)(TfLiteTensor*, const void*, size_t);
  TfLiteXNNPackDelegateOptions29 (*TfLiteXNNPackDelegateOptionsDefault)();
  TfLiteDelegate* (*TfLiteXNNPackDelegateCreate)(const void*);
  void (*TfLiteXNNPackDelegateDelete)(TfLiteDelegate*);
};

std::string OracleTypeName(int type) {
  switch (type) {
    case kOracleNoType: return "notype";
    case kOracleFloat32: return "float32";
    case kOracleInt32: return "int32";
    case kOracleUInt8: return "uint8";
    case kOracleInt64: return "int64";
    case kOracleString: return "string";
    case kOracleBool: return "bool";
    case kOracleInt16: return "int16";
    case kOracleComplex64: return "complex64";
    case kOracleInt8: return "int8";
    case kOracleFloat16: return "float16";
    case kOracleFloat64: return "float64";
    case kOracleComplex128: return "complex128";
    case kOracleUInt64: return "uint64";
    case kOracleResource: return "resource";
    case kOracleVariant: return "variant";
    case kOracleUInt32: return "uint32";
  }
  return "unknown(" + std::to_string(type) + ")";
}

size_t OracleTypeSize(int type) {
  switch (type) {
    case kOracleBool:
    case kOracleUInt8:
    case kOracleInt8: return 1;
    case kOracleInt16:
    case kOracleFloat16: return 2;
    case kOracleFloat32:
    case kOracleInt32:
    case kOracleUInt32: return 4;
    case kOracleInt64:
    case kOracleUInt64:
    case kOracleFloat64:
    case kOracleComplex64: return 8;
    case kOracleComplex128: return 16;
  }
  return 0;
}

std::string ShapeToString(const std::vector<int>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

double MedianMs(std::vector<double> ms) {
  if (ms.empty()) return 0;
  std::sort(ms.begin(), ms.end());
  size_t n = ms.size();
  return n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
}

// ---------------------------------------------------------------------------------------------
// TfliteOracle

std::string TfliteOracle::DefaultLibPath() {
  if (const char* env = std::getenv("EDGEOPT_TFLITE_LIB"); env != nullptr && *env != '\0') return env;
  return std::string(EDGEOPT_SOURCE_DIR) + "/.cache/tflite29/lib/libtensorflowlite_c.so";
}

bool TfliteOracle::LibraryPresent(const std::string& lib_path) { return FileExists(lib_path); }

std::string TfliteOracle::MissingReason(const std::string& lib_path) {
  return "reference TFLite 2.9 C library not found at '" + lib_path +
         "' (run scripts/setup.sh, or set EDGEOPT_TFLITE_LIB to libtensorflowlite_c.so)";
}

TfliteOracle::~TfliteOracle() = default;  // never dlclose (see header)

Expected<std::shared_ptr<TfliteOracle>> TfliteOracle::Load(const std::string& lib_path) {
  static std::mutex mu;
  static auto* cache = new std::map<std::string, std::shared_ptr<TfliteOracle>>();  // leaked
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache->find(lib_path); it != cache->end()) return it->second;

  if (!FileExists(lib_path)) return NotFound(MissingReason(lib_path));
  ::dlerror();
  void* handle = ::dlopen(lib_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = ::dlerror();
    return IoError("dlopen('" + lib_path + "') failed: " + (err ? err : "unknown error"));
  }
  auto api = std::make_unique<Api>();
  std::string missing;
  auto resolve = [&](auto& fn, const char* name) {
    ::dlerror();
    void* sym = ::dlsym(handle, name);
    if (sym == nullptr) {
      missing += missing.empty() ? "" : ", ";
      missing += name;
      return;
    }
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(sym);
  };
#define EDGEOPT_RESOLVE(name) resolve(api->name, #name)
  EDGEOPT_RESOLVE(TfLiteVersion);
  EDGEOPT_RESOLVE(TfLiteModelCreate);
  EDGEOPT_RESOLVE(TfLiteModelCreateFromFile);
  EDGEOPT_RESOLVE(TfLiteModelDelete);
  EDGEOPT_RESOLVE(TfLiteInterpreterOptionsCreate);
  EDGEOPT_RESOLVE(TfLiteInterpreterOptionsDelete);
  EDGEOPT_RESOLVE(TfLiteInterpreterOptionsSetNumThreads);
  EDGEOPT_RESOLVE(TfLiteInterpreterOptionsAddDelegate);
  EDGEOPT_RESOLVE(TfLiteInterpreterOptionsSetErrorReporter);
  EDGEOPT_RESOLVE(TfLiteInterpreterCreate);
  EDGEOPT_RESOLVE(TfLiteInterpreterDelete);
  EDGEOPT_RESOLVE(TfLiteInterpreterGetInputTensorCount);
  EDGEOPT_RESOLVE(TfLiteInterpreterGetInputTensor);
  EDGEOPT_RESOLVE(TfLiteInterpreterResizeInputTensor);
  EDGEOPT_RESOLVE(TfLiteInterpreterAllocateTensors);
  EDGEOPT_RESOLVE(TfLiteInterpreterInvoke);
  EDGEOPT_RESOLVE(TfLiteInterpreterGetOutputTensorCount);
  EDGEOPT_RESOLVE(TfLiteInterpreterGetOutputTensor);
  EDGEOPT_RESOLVE(TfLiteTensorType);
  EDGEOPT_RESOLVE(TfLiteTensorNumDims);
  EDGEOPT_RESOLVE(TfLiteTensorDim);
  EDGEOPT_RESOLVE(TfLiteTensorByteSize);
  EDGEOPT_RESOLVE(TfLiteTensorData);
  EDGEOPT_RESOLVE(TfLiteTensorName);
  EDGEOPT_RESOLVE(TfLiteTensorQuantizationParams);
  EDGEOPT_RESOLVE(TfLiteTensorCopyFromBuffer);
  EDGEOPT_RESOLVE(TfLiteXNNPackDelegateOptionsDefault);
  EDGEOPT_RESOLVE(TfLiteXNNPackDelegateCreate);
  EDGEOPT_RESOLVE(TfLiteXNNPackDelegateDelete);
#undef EDGEOPT_RESOLVE
  if (!missing.empty()) {
    ::dlclose(handle);
    return Unsupported("'" + lib_path + "' is not a usable TFLite C library: missing symbol(s) " +
                       missing);
  }
  std::shared_ptr<TfliteOracle> oracle(new TfliteOracle());
  oracle->lib_path_ = lib_path;
  oracle->handle_ = handle;
  oracle->api_ = std::move(api);
  (*cache)[lib_path] = oracle;
  return oracle;
}

std::string TfliteOracle::Version() const {
  const char* v = api_->TfLiteVersion();
  return v ? v : "";
}

// ---------------------------------------------------------------------------------------------
// OracleSession

namespace {

OracleTensor Describe(const TfliteOracle::Api& api, const TfLiteTensor* t) {
  OracleTensor out;
  const char* name = api.TfLiteTensorName(t);
  out.name = name ? name : "";
  out.type = api.TfLiteTensorType(t);
  int32_t rank = api.TfLiteTensorNumDims(t);
  for (int32_t i = 0; i < rank; ++i) out.shape.push_back(api.TfLiteTensorDim(t, i));
  TfLiteQuantizationParams q = api.TfLiteTensorQuantizationParams(t);
  out.scale = q.scale;
  out.zero_point = q.zero_point;
  return out;
}

}  // namespace

void OracleSession::ReportError(void* user_data, const char* format, va_list args) {
  auto* self = static_cast<OracleSession*>(user_data);
  va_list copy;
  va_copy(copy, args);
  char small[512];
  int n = std::vsnprintf(small, sizeof(small), format, copy);
  va_end(copy);
  if (n < 0) return;
  std::string msg;
  if (static_cast<size_t>(n) < sizeof(small)) {
    msg.assign(small, n);
  } else {
    msg.resize(n + 1);
    std::vsnprintf(msg.data(), msg.size(), format, args);
    msg.resize(n);
  }
  self->error_log_ += Trim(msg);
  self->error_log_ += "\n";
}

Status OracleSession::Fail(StatusCode code, const std::string& what, size_t log_mark) const {
  std::string log = log_mark < error_log_.size() ? Trim(error_log_.substr(log_mark)) : "";
  // Keep the message on one line: TFLite reports one message per call.
  for (size_t pos = 0; (pos = log.find('\n', pos)) != std::string::npos;) log.replace(pos, 1, " | ");
  std::string msg = label_ + ": " + what;
  msg += log.empty() ? " (TFLite reported nothing)" : ": TFLite says: " + log;
  return Status(code, msg);
}

Expected<std::unique_ptr<OracleSession>> OracleSession::Create(const std::string& model_path,
                                                               const OracleOptions& options,
                                                               std::shared_ptr<TfliteOracle> oracle) {
  if (!FileExists(model_path)) return NotFound(model_path + ": model file not found");
  std::unique_ptr<OracleSession> s(new OracleSession());
  s->oracle_ = std::move(oracle);
  s->options_ = options;
  s->label_ = model_path;
  return CreateImpl(std::move(s));
}

Expected<std::unique_ptr<OracleSession>> OracleSession::CreateFromBuffer(
    const void* data, size_t size, const OracleOptions& options,
    std::shared_ptr<TfliteOracle> oracle, const std::string& label) {
  if (data == nullptr || size == 0) return InvalidArgument(label + ": empty model buffer");
  std::unique_ptr<OracleSession> s(new OracleSession());
  s->oracle_ = std::move(oracle);
  s->options_ = options;
  s->label_ = label;
  s->model_bytes_.assign(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + size);
  return CreateImpl(std::move(s));
}

Expected<std::unique_ptr<OracleSession>> OracleSession::CreateImpl(std::unique_ptr<OracleSession> s) {
  if (!s->oracle_) {
    ASSIGN_OR_RETURN(s->oracle_, TfliteOracle::Load());
  }
  const auto& api = s->oracle_->api();
  if (s->options_.threads < 1) {
    return InvalidArgument(s->label_ + ": threads must be >= 1, got " + std::to_string(s->options_.threads));
  }

  // 1. Model. 2.9 reports flatbuffer/verification errors on stderr only: capture them.
  {
    StderrCapture capture;
    TfLiteModel* model = s->model_bytes_.empty()
                             ? api.TfLiteModelCreateFromFile(s->label_.c_str())
                             : api.TfLiteModelCreate(s->model_bytes_.data(), s->model_bytes_.size());
    std::string text = Trim(capture.Finish());
    if (model == nullptr) {
      s->error_log_ += text;
      return s->Fail(StatusCode::kInvalidModel, "TfLiteModelCreate failed", 0);
    }
    if (!text.empty()) std::fprintf(stderr, "%s\n", text.c_str());  // don't swallow warnings
    s->model_ = model;
  }

  // 2. Options, error reporter, optional XNNPACK delegate.
  TfLiteInterpreterOptions* opts = api.TfLiteInterpreterOptionsCreate();
  if (opts == nullptr) return Internal(s->label_ + ": TfLiteInterpreterOptionsCreate returned null");
  api.TfLiteInterpreterOptionsSetNumThreads(opts, s->options_.threads);
  api.TfLiteInterpreterOptionsSetErrorReporter(opts, &OracleSession::ReportError, s.get());
  if (s->options_.xnnpack) {
    XnnpackOptionsPadded xo{};
    xo.base = api.TfLiteXNNPackDelegateOptionsDefault();
    xo.base.num_threads = s->options_.threads;
    xo.base.flags = s->options_.xnnpack_flags;
    xo.weights_cache = nullptr;
    s->delegate_ = api.TfLiteXNNPackDelegateCreate(&xo);
    if (s->delegate_ == nullptr) {
      api.TfLiteInterpreterOptionsDelete(opts);
      return Unsupported(s->label_ + ": TfLiteXNNPackDelegateCreate failed (xnn_initialize failed: CPU "
                         "not supported by XNNPACK?)");
    }
    api.TfLiteInterpreterOptionsAddDelegate(opts, static_cast<TfLiteDelegate*>(s->delegate_));
  }

  // 3. Interpreter (op resolution + delegate application happen here in 2.9).
  s->interpreter_ = api.TfLiteInterpreterCreate(static_cast<TfLiteModel*>(s->model_), opts);
  api.TfLiteInterpreterOptionsDelete(opts);  // the interpreter copied what it needs
  if (s->interpreter_ == nullptr) {
    bool ops = s->error_log_.find("op") != std::string::npos &&
               (s->error_log_.find("Didn't find") != std::string::npos ||
                s->error_log_.find("unresolved") != std::string::npos ||
                s->error_log_.find("Unsupported") != std::string::npos);
    std::string what = "TfLiteInterpreterCreate failed";
    if (s->options_.xnnpack) what += " (XNNPACK delegate applied here)";
    return s->Fail(ops || s->options_.xnnpack ? StatusCode::kUnsupported : StatusCode::kInvalidModel, what, 0);
  }

  // 4. Tensors.
  size_t mark = s->error_log_.size();
  TfLiteStatus st = api.TfLiteInterpreterAllocateTensors(static_cast<TfLiteInterpreter*>(s->interpreter_));
  if (st != 0) {
    // 2.9 resolves custom ops lazily: an unknown custom op surfaces here as kTfLiteUnresolvedOps.
    bool unresolved = st == 7 || s->error_log_.find("unresolved custom op", mark) != std::string::npos;
    return s->Fail(unresolved ? StatusCode::kUnsupported : StatusCode::kInvalidModel,
                   "AllocateTensors failed with " + TfLiteStatusName(st), mark);
  }
  return s;
}

OracleSession::~OracleSession() {
  if (!oracle_) return;
  const auto& api = oracle_->api();
  // Order matters: the interpreter references the delegate and the model.
  if (interpreter_) api.TfLiteInterpreterDelete(static_cast<TfLiteInterpreter*>(interpreter_));
  if (delegate_) api.TfLiteXNNPackDelegateDelete(static_cast<TfLiteDelegate*>(delegate_));
  if (model_) api.TfLiteModelDelete(static_cast<TfLiteModel*>(model_));
}

size_t OracleSession::num_inputs() const {
  return static_cast<size_t>(
      oracle_->api().TfLiteInterpreterGetInputTensorCount(static_cast<TfLiteInterpreter*>(interpreter_)));
}

size_t OracleSession::num_outputs() const {
  return static_cast<size_t>(
      oracle_->api().TfLiteInterpreterGetOutputTensorCount(static_cast<TfLiteInterpreter*>(interpreter_)));
}

std::vector<OracleTensor> OracleSession::inputs() const {
  const auto& api = oracle_->api();
  auto* interp = static_cast<TfLiteInterpreter*>(interpreter_);
  std::vector<OracleTensor> out;
  for (size_t i = 0; i < num_inputs(); ++i)
    out.push_back(Describe(api, api.TfLiteInterpreterGetInputTensor(interp, static_cast<int32_t>(i))));
  return out;
}

std::vector<OracleTensor> OracleSession::outputs() const {
  const auto& api = oracle_->api();
  auto* interp = static_cast<TfLiteInterpreter*>(interpreter_);
  std::vector<OracleTensor> out;
  for (size_t i = 0; i < num_outputs(); ++i)
    out.push_back(Describe(api, api.TfLiteInterpreterGetOutputTensor(interp, static_cast<int32_t>(i))));
  return out;
}

Status OracleSession::ResizeInput(int index, std::vector<int> shape) {
  if (index < 0 || static_cast<size_t>(index) >= num_inputs()) {
    return InvalidArgument(label_ + ": input index " + std::to_string(index) + " out of range (model has " +
                           std::to_string(num_inputs()) + " inputs)");
  }
  const auto& api = oracle_->api();
  auto* interp = static_cast<TfLiteInterpreter*>(interpreter_);
  size_t mark = error_log_.size();
  TfLiteStatus st = api.TfLiteInterpreterResizeInputTensor(interp, index, shape.data(),
                                                           static_cast<int32_t>(shape.size()));
  if (st != 0) {
    return Fail(StatusCode::kInvalidArgument,
                "ResizeInputTensor(" + std::to_string(index) + ", " + ShapeToString(shape) + ") failed", mark);
  }
  st = api.TfLiteInterpreterAllocateTensors(interp);
  if (st != 0) {
    return Fail(StatusCode::kInvalidArgument,
                "AllocateTensors after resizing input " + std::to_string(index) + " to " + ShapeToString(shape) +
                    " failed with " + TfLiteStatusName(st),
                mark);
  }
  return Status::Ok();
}

Status OracleSession::SetInput(int index, const void* data, size_t bytes) {
  if (index < 0 || static_cast<size_t>(index) >= num_inputs()) {
    return InvalidArgument(label_ + ": input index " + std::to_string(index) + " out of range (model has " +
                           std::to_string(num_inputs()) + " inputs)");
  }
  const auto& api = oracle_->api();
  TfLiteTensor* t = api.TfLiteInterpreterGetInputTensor(static_cast<TfLiteInterpreter*>(interpreter_), index);
  size_t want = api.TfLiteTensorByteSize(t);
  if (bytes != want) {
    OracleTensor d = Describe(api, t);
    return InvalidArgument(label_ + ": input " + std::to_string(index) + " '" + d.name + "' " +
                           OracleTypeName(d.type) + ShapeToString(d.shape) + " needs " + std::to_string(want) +
                           " bytes, got " + std::to_string(bytes));
  }
  if (bytes == 0) return Status::Ok();
  size_t mark = error_log_.size();
  if (api.TfLiteTensorCopyFromBuffer(t, data, bytes) != 0) {
    return Fail(StatusCode::kInternal, "TfLiteTensorCopyFromBuffer(input " + std::to_string(index) + ") failed",
                mark);
  }
  return Status::Ok();
}

Status OracleSession::Invoke() {
  size_t mark = error_log_.size();
  TfLiteStatus st = oracle_->api().TfLiteInterpreterInvoke(static_cast<TfLiteInterpreter*>(interpreter_));
  if (st != 0) {
    return Fail(st == 2 ? StatusCode::kUnsupported : StatusCode::kInternal,
                "Invoke failed with " + TfLiteStatusName(st), mark);
  }
  return Status::Ok();
}

Expected<OracleTensor> OracleSession::GetOutput(int index) const {
  if (index < 0 || static_cast<size_t>(index) >= num_outputs()) {
    return InvalidArgument(label_ + ": output index " + std::to_string(index) + " out of range (model has " +
                           std::to_string(num_outputs()) + " outputs)");
  }
  const auto& api = oracle_->api();
  const TfLiteTensor* t = api.TfLiteInterpreterGetOutputTensor(static_cast<TfLiteInterpreter*>(interpreter_), index);
  OracleTensor out = Describe(api, t);
  size_t bytes = api.TfLiteTensorByteSize(t);
  const void* src = api.TfLiteTensorData(t);
  if (bytes > 0 && src == nullptr) {
    return Internal(label_ + ": output " + std::to_string(index) + " '" + out.name + "' has no data buffer");
  }
  if (bytes > 0) out.data.assign(static_cast<const uint8_t*>(src), static_cast<const uint8_t*>(src) + bytes);
  return out;
}

Expected<std::vector<OracleTensor>> OracleSession::GetOutputs() const {
  std::vector<OracleTensor> outs;
  for (size_t i = 0; i < num_outputs(); ++i) {
    ASSIGN_OR_RETURN(OracleTensor t, GetOutput(static_cast<int>(i)));
    outs.push_back(std::move(t));
  }
  return outs;
}

Expected<std::vector<double>> OracleSession::TimeInvokes(int warmup, int runs) {
  if (warmup < 0 || runs < 1) {
    return InvalidArgument(label_ + ": TimeInvokes needs warmup >= 0 and runs >= 1");
  }
  for (int i = 0; i < warmup; ++i) RETURN_IF_ERROR(Invoke());
  std::vector<double> ms;
  ms.reserve(runs);
  for (int i = 0; i < runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(Invoke());
    auto t1 = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return ms;
}

Expected<std::vector<OracleTensor>> RunOnce(const std::string& model_path, const std::vector<OracleTensor>& inputs,
                                            const OracleOptions& options, std::shared_ptr<TfliteOracle> oracle) {
  ASSIGN_OR_RETURN(auto session, OracleSession::Create(model_path, options, std::move(oracle)));
  std::vector<OracleTensor> meta = session->inputs();
  if (inputs.size() != meta.size()) {
    return InvalidArgument(model_path + ": model has " + std::to_string(meta.size()) + " inputs, got " +
                           std::to_string(inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const OracleTensor& in = inputs[i];
    if (in.type != kOracleNoType && in.type != meta[i].type) {
      return InvalidArgument(model_path + ": input " + std::to_string(i) + " '" + meta[i].name + "' is " +
                             OracleTypeName(meta[i].type) + ", got " + OracleTypeName(in.type));
    }
    if (in.shape != meta[i].shape) RETURN_IF_ERROR(session->ResizeInput(static_cast<int>(i), in.shape));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    RETURN_IF_ERROR(session->SetInput(static_cast<int>(i), inputs[i].data.data(), inputs[i].data.size()));
  }
  RETURN_IF_ERROR(session->Invoke());
  return session->GetOutputs();
}

}  // namespace edgeopt::testing
