// edgeopt public C++ API: load a .tflite model, run it, inspect it, extend it with custom ops
// and delegates. This header (with status.h and dtype.h, which it includes) is all an
// application needs; it uses only the standard library.
//
//   auto model = edgeopt::Model::FromFile("mobilenet.tflite");
//   if (!model) { std::cerr << model.status().ToString() << "\n"; return 1; }
//   edgeopt::InterpreterOptions options;
//   options.num_threads = 4;
//   auto interp = edgeopt::Interpreter::Create(*model, options);
//   if (!interp) ...
//   edgeopt::TensorView in = (*interp)->input(0);
//   std::span<float> x = in.data_as<float>();        // empty if the input is not float32
//   ... fill x ...
//   if (auto st = (*interp)->Invoke(); !st.ok()) ...
//   std::span<const float> y = (*interp)->output(0).data_as<const float>();
//
// Errors are values: every fallible call returns Status or Expected<T> with a message naming
// the file, op or tensor involved. A Model is immutable and may be shared by several
// Interpreters (on different threads); one Interpreter is used by one thread at a time, except
// Cancel(), which any thread may call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "edgeopt/dtype.h"
#include "edgeopt/status.h"

namespace edgeopt {

// Opaque implementation types (defined in the library, never needed by users).
namespace rt {
struct RtTensor;
class KernelContext;
}  // namespace rt
namespace api_internal {
struct Access;
}  // namespace api_internal

class Interpreter;

// The DType matching a C++ element type: DTypeOf<float>::value == DType::kFloat32.
template <typename T>
struct DTypeOf;  // undefined for types without a tensor dtype
template <> struct DTypeOf<float> { static constexpr DType value = DType::kFloat32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::kFloat64; };
template <> struct DTypeOf<int8_t> { static constexpr DType value = DType::kInt8; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::kUInt8; };
template <> struct DTypeOf<int16_t> { static constexpr DType value = DType::kInt16; };
template <> struct DTypeOf<uint16_t> { static constexpr DType value = DType::kUInt16; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::kInt32; };
template <> struct DTypeOf<uint32_t> { static constexpr DType value = DType::kUInt32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::kInt64; };
template <> struct DTypeOf<uint64_t> { static constexpr DType value = DType::kUInt64; };
template <> struct DTypeOf<bool> { static constexpr DType value = DType::kBool; };

// ---------------------------------------------------------------------------------------------
// Tensors

// A handle to one tensor of an interpreter (or of a custom kernel's op). Cheap to copy; valid
// while its Interpreter lives. It always reflects the tensor's current state: after a resize,
// AllocateTensors or a binding, shape(), bytes() and data() report the new values.
// A default-constructed (empty) view is what lookups return for a missing tensor: ok() is false,
// accessors return empty values and CopyFrom/CopyTo fail.
class TensorView {
 public:
  TensorView() = default;

  bool ok() const { return t_ != nullptr; }
  explicit operator bool() const { return ok(); }

  std::string_view name() const;
  DType type() const;  // kFloat32 for an empty view
  const std::vector<int32_t>& shape() const;
  int num_dims() const { return static_cast<int>(shape().size()); }
  int32_t dim(int i) const;  // negative i counts from the end; 0 when out of range
  int64_t num_elements() const;
  // Bytes of the tensor's data at its current shape.
  size_t bytes() const;
  // The tensor's data, or nullptr before it has storage. Constant tensors (weights, visible in
  // custom kernels) point into the model: never write through them.
  void* data() const;
  // The data as elements of T if the tensor's dtype is DTypeOf<T>; otherwise (wrong type, no
  // storage, empty view, or a constant tensor asked for non-const T) an empty span. Use
  // has_type<T>() to tell a type mismatch from an empty tensor.
  template <typename T>
  std::span<T> data_as() const {
    using U = std::remove_cv_t<T>;
    if (!ok() || type() != DTypeOf<U>::value || data() == nullptr) return {};
    if (!std::is_const_v<T> && is_constant()) return {};
    return {static_cast<T*>(data()), static_cast<size_t>(num_elements())};
  }
  template <typename T>
  bool has_type() const {
    return ok() && type() == DTypeOf<std::remove_cv_t<T>>::value;
  }
  bool is_constant() const;

  // Quantization: per-tensor scale/zero point (0/0 when the tensor is not quantized), and the
  // full per-channel lists (one entry for per-tensor quantization, empty when none).
  float scale() const;
  int32_t zero_point() const;
  std::span<const float> scales() const;
  std::span<const int64_t> zero_points() const;
  int32_t quantized_dimension() const;

  // Copies exactly bytes() bytes in or out; any other size is an error (as in LiteRT).
  Status CopyFrom(const void* src, size_t size) const;
  Status CopyTo(void* dst, size_t size) const;

 private:
  friend struct api_internal::Access;
  explicit TensorView(rt::RtTensor* t) : t_(t) {}
  rt::RtTensor* t_ = nullptr;
};

// Static description of a tensor in a model (no storage).
struct TensorInfo {
  int index = -1;  // tensor index in its subgraph
  std::string name;
  DType type = DType::kFloat32;
  std::vector<int32_t> shape;
  std::vector<int32_t> shape_signature;  // -1 marks a resizable dimension; empty if absent
  std::vector<float> scales;             // empty when not quantized
  std::vector<int64_t> zero_points;
  int32_t quantized_dimension = 0;
  bool is_constant = false;
  bool is_variable = false;
  std::span<const uint8_t> constant_data;  // weights of a constant tensor; valid while the Model lives
};

// ---------------------------------------------------------------------------------------------
// Model

struct SignatureInfo {
  std::string key;
  std::vector<std::string> input_names;
  std::vector<std::string> output_names;
};

// An immutable, verified model. Share it (std::shared_ptr) between interpreters.
class Model {
 public:
  // Maps and verifies a .tflite file; nothing is copied.
  static Expected<std::shared_ptr<const Model>> FromFile(const std::string& path);
  // Verifies and copies `size` bytes of a .tflite flatbuffer; the caller's buffer may be freed.
  static Expected<std::shared_ptr<const Model>> FromBuffer(const void* data, size_t size);

  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const std::string& description() const;
  int num_subgraphs() const;
  int num_ops() const;  // in the main subgraph
  std::vector<TensorInfo> inputs() const;
  std::vector<TensorInfo> outputs() const;
  std::vector<std::string> signature_keys() const;
  std::vector<SignatureInfo> signatures() const;

 private:
  friend struct api_internal::Access;
  struct Impl;
  Model();
  std::unique_ptr<Impl> impl_;
};

// ---------------------------------------------------------------------------------------------
// Custom ops: application kernels for CUSTOM operators (matched by their custom code) that run
// inside the interpreter like built-in ones.
//
// Life cycle per op and interpreter: the factory runs once at Interpreter::Create (check the op's
// static properties, read custom options); Prepare runs whenever input shapes change (check
// shapes/types, set output shapes); Invoke runs every inference (compute; do not allocate).

// What a custom op factory may look at.
struct CustomOpInfo {
  std::string name;  // the op's custom code
  int subgraph_index = 0;
  int op_index = 0;
  std::span<const uint8_t> custom_options;
  std::vector<TensorInfo> inputs;  // an omitted optional input has index -1
  std::vector<TensorInfo> outputs;
  bool reference_kernels_only = false;
};

class CustomKernelContext {
 public:
  int num_inputs() const;
  int num_outputs() const;
  // Empty view for an omitted optional input or an index out of range.
  TensorView input(int i) const;
  TensorView output(int i) const;
  std::span<const uint8_t> custom_options() const;  // empty for a delegate partition
  // Sets output i's shape: in Prepare it is planned into the arena; in Invoke (after
  // MarkOutputDynamic) the output gets storage of that size.
  Status SetOutputShape(int i, std::vector<int32_t> shape);
  // Output i's shape depends on input data and will be set in Invoke.
  Status MarkOutputDynamic(int i);
  bool in_invoke() const;
  // An InvalidArgument error naming this op ("MyOp: <message>"; the interpreter adds the index).
  Status Error(std::string_view message) const;

 private:
  friend struct api_internal::Access;
  explicit CustomKernelContext(rt::KernelContext* ctx) : ctx_(ctx) {}
  rt::KernelContext* ctx_;
};

class CustomKernel {
 public:
  virtual ~CustomKernel() = default;
  virtual Status Prepare(CustomKernelContext& ctx) = 0;
  virtual Status Invoke(CustomKernelContext& ctx) = 0;
  // Shown in Interpreter::ops() as the kernel variant; defaults to "custom/<op name>".
  virtual std::string variant() const { return {}; }
};

using CustomKernelFactory = std::function<Expected<std::unique_ptr<CustomKernel>>(const CustomOpInfo&)>;

struct CustomOp {
  std::string name;  // custom code the op carries in the model
  CustomKernelFactory create;
};

// ---------------------------------------------------------------------------------------------
// Delegates: a backend claims ops when an interpreter is created and runs them. Claimed ops that
// are consecutive in execution order form a partition, run as one kernel whose inputs are the
// tensors the partition reads from outside (constants included) and whose outputs are the
// tensors read after it or returned by the model.

struct OpView {
  int index = 0;
  std::string type;  // "CONV_2D", or the custom code of a custom op
  bool is_custom = false;
  int builtin_code = 0;  // the .tflite BuiltinOperator value (32 = CUSTOM)
  int version = 1;
  std::vector<int32_t> inputs;   // tensor indices; -1 for an omitted optional input
  std::vector<int32_t> outputs;
  std::span<const uint8_t> custom_options;
};

// A read-only view of one subgraph: its ops in execution order and its tensors.
struct ModelView {
  int subgraph_index = 0;
  std::vector<TensorInfo> tensors;
  std::vector<OpView> ops;
  std::vector<int32_t> inputs;
  std::vector<int32_t> outputs;
};

struct PartitionInfo {
  const ModelView* model = nullptr;  // valid during CreatePartitionKernel
  std::vector<int> op_indices;  // ascending, consecutive in execution order
  std::vector<int32_t> inputs;  // tensor indices: the kernel's input(i) is tensor inputs[i]
  std::vector<int32_t> outputs;
};

class Delegate {
 public:
  virtual ~Delegate() = default;
  // Shown as the backend of the ops it runs ("cpu" for built-in kernels).
  virtual std::string name() const = 0;
  // Indices of the ops in `model` this backend runs.
  virtual std::vector<int> SupportedOps(const ModelView& model) = 0;
  // One kernel running a whole partition.
  virtual Expected<std::unique_ptr<CustomKernel>> CreatePartitionKernel(const PartitionInfo& partition) = 0;
};

// ---------------------------------------------------------------------------------------------
// Interpreter

struct InterpreterOptions {
  int num_threads = 1;  // <= 0: one per hardware thread
  // Reference kernels only (the portable oracle); optimized variants are skipped.
  bool reference_kernels_only = false;
  // Evaluate ops whose inputs are all constant once, when tensors are allocated.
  bool fold_constants = true;
  // Keep every intermediate tensor readable after Invoke (debugging, layer comparison), and the
  // float32 copies of float16 weights made at init (otherwise freed once the kernels packed them).
  bool preserve_all_tensors = false;
  // Application kernels, consulted before the built-in ones (custom ops and overrides).
  std::vector<CustomOp> custom_ops;
  // Backends asked, in order, to claim ops before the built-in CPU kernels.
  std::vector<std::shared_ptr<Delegate>> delegates;
  // With num_threads > 1: during the first invokes (and again in one pair of invokes in every
  // 32), time each small op (under 50 us) both split across the threads and on the calling
  // thread alone, and keep it alone while that is faster
  // (OpInfo::threads shows the choice; outputs are the same either way). Splitting an op costs a
  // wake-up and a join, so on small models more threads could otherwise be slower than one.
  // false (or the environment variable EDGEOPT_OP_THREADS=all): every op is split.
  bool tune_op_threads = true;
};

struct OpInfo {
  int index = 0;         // op index in the main subgraph
  std::string type;      // "CONV_2D" or the custom code
  std::string variant;   // kernel variant, e.g. "conv2d/f32/avx2"
  std::string backend;   // "cpu" or the delegate's name
  bool folded = false;   // evaluated once at allocation (all inputs constant)
  int partition = -1;    // delegate partition the op belongs to, or -1
  int64_t macs = 0;      // multiply-accumulates per invoke, 0 if unknown
  int threads = 1;       // threads the op runs on: num_threads, or 1 where thread tuning chose that
};

struct OpTiming {
  int op_index = 0;
  int64_t begin_ns = 0;  // steady clock
  int64_t end_ns = 0;
};

// Runs one signature (a named entry point) of a model; inputs/outputs by signature name.
// Obtained from Interpreter::GetSignature and valid while that Interpreter lives.
class SignatureRunner {
 public:
  SignatureRunner() = default;

  const std::string& key() const { return key_; }
  const std::vector<std::string>& input_names() const { return input_names_; }
  const std::vector<std::string>& output_names() const { return output_names_; }
  // Empty view when the name is not an input/output of this signature.
  TensorView input(std::string_view name) const;
  TensorView output(std::string_view name) const;
  Status ResizeInput(std::string_view name, std::vector<int32_t> shape);
  Status AllocateTensors();
  Status Invoke();

 private:
  friend class Interpreter;
  Interpreter* owner_ = nullptr;
  int subgraph_ = 0;
  std::string key_;
  std::vector<std::string> input_names_, output_names_;
  std::vector<int32_t> input_tensors_, output_tensors_;
};

class Interpreter {
 public:
  // Resolves a kernel for every op (custom ops and delegates first), prepares them and plans
  // memory. Errors name the op and its index.
  static Expected<std::unique_ptr<Interpreter>> Create(std::shared_ptr<const Model> model,
                                                       const InterpreterOptions& options = {});
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  const Model& model() const { return *model_; }

  int num_inputs() const;
  int num_outputs() const;
  // By position, or by name (signature name of the main subgraph, else tensor name). An empty
  // view when absent; FindInput/FindOutput say why.
  TensorView input(int i);
  TensorView output(int i);
  TensorView input(std::string_view name);
  TensorView output(std::string_view name);
  Expected<TensorView> FindInput(std::string_view name);
  Expected<TensorView> FindOutput(std::string_view name);
  int input_index(std::string_view name) const;  // -1 when absent
  int output_index(std::string_view name) const;

  // Only dimensions the model marks resizable (-1 in its shape signature) may change.
  Status ResizeInput(int i, std::vector<int32_t> shape);
  // Prepares kernels and plans memory; done at Create, and implicitly by Invoke after a resize.
  Status AllocateTensors();
  Status Invoke();
  // Asks a running Invoke (on another thread) to stop at the next op boundary; it returns
  // StatusCode::kCancelled. The request is cleared when the next Invoke starts.
  void Cancel();

  // Zero-copy I/O: the interpreter reads input i from / writes output i to the caller's buffer
  // (at least bytes() long; 64-byte alignment recommended) until unbound with nullptr.
  Status BindInput(int i, void* data, size_t size);
  Status BindOutput(int i, void* data, size_t size);

  std::vector<std::string> signature_keys() const;
  Expected<SignatureRunner> GetSignature(std::string_view key);

  // Variable tensors (e.g. RNN state) back to their initial values.
  void ResetVariables();

  // Introspection.
  size_t arena_bytes() const;          // planned activation memory and kernel scratch (per-thread buffers too)
  size_t packed_weight_bytes() const;  // weights repacked by kernels
  size_t persistent_bytes() const;     // variable tensors and folded constants
  int num_threads() const;
  std::vector<OpInfo> ops() const;  // main subgraph, execution order

  // Per-op timings of the last Invoke while profiling is on.
  void EnableProfiling(bool on);
  std::vector<OpTiming> last_profile() const;

 private:
  friend class SignatureRunner;
  friend struct api_internal::Access;
  struct Impl;
  Interpreter();
  std::shared_ptr<const Model> model_;
  std::unique_ptr<Impl> impl_;
};

// ---------------------------------------------------------------------------------------------
// Images

struct ImageOptions {
  enum class Normalization {
    kAuto,     // 8-bit quantized inputs: raw pixels; float inputs: range [-1, 1]
    kRange,    // 0..255 mapped linearly onto [range_min, range_max]
    kMeanStd,  // (pixel - mean[c]) / stddev[c]
  };
  Normalization normalization = Normalization::kAuto;
  float range_min = -1.0f, range_max = 1.0f;
  std::vector<float> mean, stddev;  // one value, or one per channel
};

// Decodes an image file (JPEG, PNG, BMP, GIF, TGA), resizes it (bilinear) to `input`'s
// [1,H,W,C] or [H,W,C] shape and converts it to the input's dtype and quantization. The result is
// exactly input.bytes() long: pass it to input.CopyFrom.
Expected<std::vector<uint8_t>> LoadImageAsInput(const std::string& path, const TensorView& input,
                                                const ImageOptions& options = {});

// "0.1.0"
const char* Version();

}  // namespace edgeopt
