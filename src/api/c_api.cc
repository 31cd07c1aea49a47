// The C API over the public C++ API. Every entry point validates its arguments and catches
// every exception: nothing escapes into C.
#include "edgeopt/c_api.h"

#include <exception>
#include <new>
#include <string>
#include <vector>

#include "edgeopt/edgeopt.h"

using edgeopt::Status;
using edgeopt::StatusCode;
using edgeopt::TensorView;

struct EoModel {
  std::shared_ptr<const edgeopt::Model> model;
};

struct EoInterpreterOptions {
  edgeopt::InterpreterOptions options;
};

struct EoTensor {
  TensorView view;
  EoInterpreter* owner = nullptr;  // where errors are also recorded; null in custom op callbacks
};

struct EoInterpreter {
  std::unique_ptr<edgeopt::Interpreter> interpreter;
  std::vector<EoTensor> inputs;   // sized once: EoTensor pointers handed out stay valid
  std::vector<EoTensor> outputs;
  mutable std::string last_error;
  mutable EoStatus last_status = kEoOk;
};

struct EoOpContext {
  edgeopt::CustomKernelContext* context = nullptr;
  std::vector<EoTensor> inputs;
  std::vector<EoTensor> outputs;
  std::string error;
};

namespace {

thread_local std::string tl_error;
thread_local EoStatus tl_status = kEoOk;

void SetMessage(std::string& slot, const char* message) noexcept {
  try {
    slot = message;
  } catch (...) {
    slot.clear();  // no memory for the message: the status still says what happened
  }
}

// Records a failure for this thread and, if given, for the interpreter. Returns `status`.
EoStatus Fail(const EoInterpreter* owner, EoStatus status, const char* message) noexcept {
  SetMessage(tl_error, message);
  tl_status = status;
  if (owner) {
    SetMessage(owner->last_error, message);
    owner->last_status = status;
  }
  return status;
}

EoStatus Fail(const EoInterpreter* owner, EoStatus status, const std::string& message) noexcept {
  return Fail(owner, status, message.c_str());
}

EoStatus ToEo(StatusCode code) {
  const int c = static_cast<int>(code);
  return c >= 0 && c <= static_cast<int>(StatusCode::kInternal) ? static_cast<EoStatus>(c) : kEoInternal;
}

StatusCode ToCode(EoStatus s) {
  if (s == kEoOutOfMemory) return StatusCode::kInternal;
  const int c = static_cast<int>(s);
  return c > 0 && c <= static_cast<int>(StatusCode::kInternal) ? static_cast<StatusCode>(c) : StatusCode::kInternal;
}

EoStatus Report(const EoInterpreter* owner, const Status& st) noexcept {
  if (st.ok()) return kEoOk;
  return Fail(owner, ToEo(st.code()), st.message());
}

// Runs `fn`, turning any exception into an error status / `on_error` value.
template <typename R, typename Fn>
R Guard(const EoInterpreter* owner, R on_error, Fn&& fn) noexcept {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    Fail(owner, kEoOutOfMemory, "out of memory");
  } catch (const std::exception& e) {
    Fail(owner, kEoInternal, std::string("unexpected exception: ") + e.what());
  } catch (...) {
    Fail(owner, kEoInternal, "unexpected exception");
  }
  return on_error;
}

EoStatus NullArgument(const EoInterpreter* owner, const char* function, const char* what) noexcept {
  std::string m;
  try {
    m = std::string(function) + ": " + what + " is NULL";
  } catch (...) {
  }
  return Fail(owner, kEoInvalidArgument, m);
}

std::vector<EoTensor> MakeTensors(EoInterpreter* owner, int count, bool inputs) {
  std::vector<EoTensor> out(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    out[i].view = inputs ? owner->interpreter->input(i) : owner->interpreter->output(i);
    out[i].owner = owner;
  }
  return out;
}

// A custom op implemented by C callbacks.
class CKernel : public edgeopt::CustomKernel {
 public:
  CKernel(const EoCustomOp& op, std::string name, void* state) : op_(op), name_(std::move(name)), state_(state) {}
  ~CKernel() override {
    if (op_.free) op_.free(op_.user_data, state_);
  }
  Status Prepare(edgeopt::CustomKernelContext& ctx) override {
    return op_.prepare ? Call(op_.prepare, ctx, "prepare") : Status::Ok();
  }
  Status Invoke(edgeopt::CustomKernelContext& ctx) override { return Call(op_.invoke, ctx, "invoke"); }
  std::string variant() const override { return "custom/" + name_ + "/c"; }

 private:
  using Callback = EoStatus (*)(void*, void*, EoOpContext*);

  Status Call(Callback fn, edgeopt::CustomKernelContext& ctx, const char* what) {
    // Reused between calls: no allocation per invoke once the sizes are known.
    c_.context = &ctx;
    c_.inputs.resize(static_cast<size_t>(ctx.num_inputs()));
    c_.outputs.resize(static_cast<size_t>(ctx.num_outputs()));
    for (int i = 0; i < ctx.num_inputs(); ++i) c_.inputs[i].view = ctx.input(i);
    for (int i = 0; i < ctx.num_outputs(); ++i) c_.outputs[i].view = ctx.output(i);
    c_.error.clear();
    const EoStatus s = fn(op_.user_data, state_, &c_);
    c_.context = nullptr;
    if (s == kEoOk) return Status::Ok();
    std::string message = c_.error.empty() ? std::string(what) + " returned '" + EoStatusName(s) + "'" : c_.error;
    return Status(ToCode(s), name_ + ": " + message);
  }

  EoCustomOp op_;
  std::string name_;
  void* state_;
  EoOpContext c_;
};

}  // namespace

extern "C" {

// ---- Library -----------------------------------------------------------------------------------

const char* EoVersion(void) { return edgeopt::Version(); }

const char* EoStatusName(EoStatus status) {
  if (status == kEoOutOfMemory) return "out of memory";
  const int c = static_cast<int>(status);
  if (c < 0 || c > static_cast<int>(StatusCode::kInternal)) return "unknown";
  return edgeopt::StatusCodeName(static_cast<StatusCode>(c));
}

const char* EoTypeName(EoType type) {
  if (!edgeopt::IsValidDType(static_cast<int>(type))) return "invalid";
  return edgeopt::DTypeName(static_cast<edgeopt::DType>(type)).data();  // views a string literal
}

const char* EoGetLastErrorMessage(const EoInterpreter* interpreter) {
  return interpreter ? interpreter->last_error.c_str() : tl_error.c_str();
}

EoStatus EoGetLastErrorStatus(const EoInterpreter* interpreter) {
  return interpreter ? interpreter->last_status : tl_status;
}

// ---- Model -------------------------------------------------------------------------------------

EoModel* EoModelCreate(const void* model_data, size_t model_size) {
  return Guard<EoModel*>(nullptr, nullptr, [&]() -> EoModel* {
    if (!model_data) return NullArgument(nullptr, "EoModelCreate", "model_data"), nullptr;
    auto m = edgeopt::Model::FromBuffer(model_data, model_size);
    if (!m.ok()) return Report(nullptr, m.status()), nullptr;
    return new EoModel{std::move(*m)};
  });
}

EoModel* EoModelCreateFromFile(const char* model_path) {
  return Guard<EoModel*>(nullptr, nullptr, [&]() -> EoModel* {
    if (!model_path) return NullArgument(nullptr, "EoModelCreateFromFile", "model_path"), nullptr;
    auto m = edgeopt::Model::FromFile(model_path);
    if (!m.ok()) return Report(nullptr, m.status()), nullptr;
    return new EoModel{std::move(*m)};
  });
}

void EoModelDelete(EoModel* model) { delete model; }

// ---- Options -----------------------------------------------------------------------------------

EoInterpreterOptions* EoInterpreterOptionsCreate(void) {
  return Guard<EoInterpreterOptions*>(nullptr, nullptr, [] { return new EoInterpreterOptions(); });
}

void EoInterpreterOptionsDelete(EoInterpreterOptions* options) { delete options; }

EoStatus EoInterpreterOptionsSetNumThreads(EoInterpreterOptions* options, int32_t num_threads) {
  if (!options) return NullArgument(nullptr, "EoInterpreterOptionsSetNumThreads", "options");
  options->options.num_threads = num_threads;
  return kEoOk;
}

EoStatus EoInterpreterOptionsSetReferenceKernelsOnly(EoInterpreterOptions* options, int enabled) {
  if (!options) return NullArgument(nullptr, "EoInterpreterOptionsSetReferenceKernelsOnly", "options");
  options->options.reference_kernels_only = enabled != 0;
  return kEoOk;
}

EoStatus EoInterpreterOptionsAddCustomOp(EoInterpreterOptions* options, const EoCustomOp* op) {
  const char* fn = "EoInterpreterOptionsAddCustomOp";
  if (!options) return NullArgument(nullptr, fn, "options");
  if (!op) return NullArgument(nullptr, fn, "op");
  if (!op->name || !*op->name) return Fail(nullptr, kEoInvalidArgument, std::string(fn) + ": the op has no name");
  if (!op->invoke)
    return Fail(nullptr, kEoInvalidArgument, std::string(fn) + ": custom op '" + op->name + "' has no invoke callback");
  return Guard<EoStatus>(nullptr, kEoInternal, [&] {
    const std::string name = op->name;
    for (const auto& existing : options->options.custom_ops)
      if (existing.name == name)
        return Fail(nullptr, kEoInvalidArgument, std::string(fn) + ": custom op '" + name + "' is already added");
    EoCustomOp copy = *op;
    copy.name = nullptr;  // the caller's string may not outlive the options
    options->options.custom_ops.push_back(
        {name, [copy, name](const edgeopt::CustomOpInfo& info) -> edgeopt::Expected<std::unique_ptr<edgeopt::CustomKernel>> {
           void* state = copy.init ? copy.init(copy.user_data, info.custom_options.data(), info.custom_options.size())
                                   : nullptr;
           return std::unique_ptr<edgeopt::CustomKernel>(new CKernel(copy, name, state));
         }});
    return kEoOk;
  });
}

int32_t EoOpContextGetInputCount(const EoOpContext* context) {
  if (!context) return NullArgument(nullptr, "EoOpContextGetInputCount", "context"), -1;
  return static_cast<int32_t>(context->inputs.size());
}

int32_t EoOpContextGetOutputCount(const EoOpContext* context) {
  if (!context) return NullArgument(nullptr, "EoOpContextGetOutputCount", "context"), -1;
  return static_cast<int32_t>(context->outputs.size());
}

const EoTensor* EoOpContextGetInput(const EoOpContext* context, int32_t index) {
  if (!context) return NullArgument(nullptr, "EoOpContextGetInput", "context"), nullptr;
  if (index < 0 || static_cast<size_t>(index) >= context->inputs.size()) {
    Fail(nullptr, kEoInvalidArgument, "EoOpContextGetInput: no input " + std::to_string(index));
    return nullptr;
  }
  const EoTensor& t = context->inputs[index];
  return t.view.ok() ? &t : nullptr;
}

EoTensor* EoOpContextGetOutput(EoOpContext* context, int32_t index) {
  if (!context) return NullArgument(nullptr, "EoOpContextGetOutput", "context"), nullptr;
  if (index < 0 || static_cast<size_t>(index) >= context->outputs.size()) {
    Fail(nullptr, kEoInvalidArgument, "EoOpContextGetOutput: no output " + std::to_string(index));
    return nullptr;
  }
  return &context->outputs[index];
}

EoStatus EoOpContextSetOutputShape(EoOpContext* context, int32_t index, const int32_t* dims, int32_t num_dims) {
  const char* fn = "EoOpContextSetOutputShape";
  if (!context || !context->context) return NullArgument(nullptr, fn, "context");
  if (num_dims < 0) return Fail(nullptr, kEoInvalidArgument, std::string(fn) + ": negative num_dims");
  if (num_dims > 0 && !dims) return NullArgument(nullptr, fn, "dims");
  return Guard<EoStatus>(nullptr, kEoInternal, [&] {
    std::vector<int32_t> shape(dims, dims + num_dims);
    return Report(nullptr, context->context->SetOutputShape(index, std::move(shape)));
  });
}

void EoOpContextSetError(EoOpContext* context, const char* message) {
  if (!context) return void(NullArgument(nullptr, "EoOpContextSetError", "context"));
  SetMessage(context->error, message ? message : "");
}

// ---- Interpreter -------------------------------------------------------------------------------

EoInterpreter* EoInterpreterCreate(const EoModel* model, const EoInterpreterOptions* options) {
  return Guard<EoInterpreter*>(nullptr, nullptr, [&]() -> EoInterpreter* {
    if (!model || !model->model) return NullArgument(nullptr, "EoInterpreterCreate", "model"), nullptr;
    static const edgeopt::InterpreterOptions kDefaults;
    auto created = edgeopt::Interpreter::Create(model->model, options ? options->options : kDefaults);
    if (!created.ok()) return Report(nullptr, created.status()), nullptr;
    auto interp = std::make_unique<EoInterpreter>();
    interp->interpreter = std::move(*created);
    interp->inputs = MakeTensors(interp.get(), interp->interpreter->num_inputs(), true);
    interp->outputs = MakeTensors(interp.get(), interp->interpreter->num_outputs(), false);
    return interp.release();
  });
}

void EoInterpreterDelete(EoInterpreter* interpreter) { delete interpreter; }

int32_t EoInterpreterGetInputTensorCount(const EoInterpreter* interpreter) {
  if (!interpreter) return NullArgument(nullptr, "EoInterpreterGetInputTensorCount", "interpreter"), -1;
  return static_cast<int32_t>(interpreter->inputs.size());
}

int32_t EoInterpreterGetOutputTensorCount(const EoInterpreter* interpreter) {
  if (!interpreter) return NullArgument(nullptr, "EoInterpreterGetOutputTensorCount", "interpreter"), -1;
  return static_cast<int32_t>(interpreter->outputs.size());
}

namespace {

EoTensor* GetTensor(const EoInterpreter* interpreter, int32_t index, bool input, const char* fn) {
  if (!interpreter) return NullArgument(nullptr, fn, "interpreter"), nullptr;
  auto* self = const_cast<EoInterpreter*>(interpreter);  // tensors are handed out non-const, as in LiteRT
  std::vector<EoTensor>& list = input ? self->inputs : self->outputs;
  if (index < 0 || static_cast<size_t>(index) >= list.size()) {
    Fail(interpreter, kEoInvalidArgument,
         std::string(fn) + ": index " + std::to_string(index) + " out of range (the model has " +
             std::to_string(list.size()) + (input ? " inputs)" : " outputs)"));
    return nullptr;
  }
  return &list[index];
}

EoTensor* GetTensorByName(const EoInterpreter* interpreter, const char* name, bool input, const char* fn) {
  if (!interpreter) return NullArgument(nullptr, fn, "interpreter"), nullptr;
  if (!name) return NullArgument(interpreter, fn, "name"), nullptr;
  edgeopt::Interpreter& it = *interpreter->interpreter;
  const int index = input ? it.input_index(name) : it.output_index(name);
  if (index < 0) {
    auto found = input ? it.FindInput(name) : it.FindOutput(name);  // for the message
    return Report(interpreter, found.status()), nullptr;
  }
  return GetTensor(interpreter, index, input, fn);
}

}  // namespace

EoTensor* EoInterpreterGetInputTensor(const EoInterpreter* interpreter, int32_t input_index) {
  return Guard<EoTensor*>(interpreter, nullptr,
                          [&] { return GetTensor(interpreter, input_index, true, "EoInterpreterGetInputTensor"); });
}

const EoTensor* EoInterpreterGetOutputTensor(const EoInterpreter* interpreter, int32_t output_index) {
  return Guard<EoTensor*>(interpreter, nullptr,
                          [&] { return GetTensor(interpreter, output_index, false, "EoInterpreterGetOutputTensor"); });
}

EoTensor* EoInterpreterGetInputTensorByName(const EoInterpreter* interpreter, const char* name) {
  return Guard<EoTensor*>(interpreter, nullptr,
                          [&] { return GetTensorByName(interpreter, name, true, "EoInterpreterGetInputTensorByName"); });
}

const EoTensor* EoInterpreterGetOutputTensorByName(const EoInterpreter* interpreter, const char* name) {
  return Guard<EoTensor*>(interpreter, nullptr,
                          [&] { return GetTensorByName(interpreter, name, false, "EoInterpreterGetOutputTensorByName"); });
}

EoStatus EoInterpreterResizeInputTensor(EoInterpreter* interpreter, int32_t input_index, const int32_t* dims,
                                        int32_t num_dims) {
  const char* fn = "EoInterpreterResizeInputTensor";
  if (!interpreter) return NullArgument(nullptr, fn, "interpreter");
  if (num_dims < 0) return Fail(interpreter, kEoInvalidArgument, std::string(fn) + ": negative num_dims");
  if (num_dims > 0 && !dims) return NullArgument(interpreter, fn, "dims");
  return Guard<EoStatus>(interpreter, kEoInternal, [&] {
    if (input_index < 0 || input_index >= interpreter->interpreter->num_inputs())
      return Fail(interpreter, kEoInvalidArgument, std::string(fn) + ": no input " + std::to_string(input_index));
    return Report(interpreter, interpreter->interpreter->ResizeInput(input_index, std::vector<int32_t>(dims, dims + num_dims)));
  });
}

EoStatus EoInterpreterAllocateTensors(EoInterpreter* interpreter) {
  if (!interpreter) return NullArgument(nullptr, "EoInterpreterAllocateTensors", "interpreter");
  return Guard<EoStatus>(interpreter, kEoInternal,
                         [&] { return Report(interpreter, interpreter->interpreter->AllocateTensors()); });
}

EoStatus EoInterpreterInvoke(EoInterpreter* interpreter) {
  if (!interpreter) return NullArgument(nullptr, "EoInterpreterInvoke", "interpreter");
  return Guard<EoStatus>(interpreter, kEoInternal, [&] { return Report(interpreter, interpreter->interpreter->Invoke()); });
}

EoStatus EoInterpreterCancel(EoInterpreter* interpreter) {
  // Called from another thread than the one invoking: touches nothing but the cancel flag.
  if (!interpreter) return NullArgument(nullptr, "EoInterpreterCancel", "interpreter");
  interpreter->interpreter->Cancel();
  return kEoOk;
}

EoStatus EoInterpreterBindInput(EoInterpreter* interpreter, int32_t input_index, void* data, size_t size) {
  if (!interpreter) return NullArgument(nullptr, "EoInterpreterBindInput", "interpreter");
  return Guard<EoStatus>(interpreter, kEoInternal,
                         [&] { return Report(interpreter, interpreter->interpreter->BindInput(input_index, data, size)); });
}

EoStatus EoInterpreterBindOutput(EoInterpreter* interpreter, int32_t output_index, void* data, size_t size) {
  if (!interpreter) return NullArgument(nullptr, "EoInterpreterBindOutput", "interpreter");
  return Guard<EoStatus>(interpreter, kEoInternal,
                         [&] { return Report(interpreter, interpreter->interpreter->BindOutput(output_index, data, size)); });
}

// ---- Tensor ------------------------------------------------------------------------------------

EoType EoTensorType(const EoTensor* tensor) {
  if (!tensor) return NullArgument(nullptr, "EoTensorType", "tensor"), kEoNoType;
  return static_cast<EoType>(tensor->view.type());
}

int32_t EoTensorNumDims(const EoTensor* tensor) {
  if (!tensor) return NullArgument(nullptr, "EoTensorNumDims", "tensor"), -1;
  return tensor->view.num_dims();
}

int32_t EoTensorDim(const EoTensor* tensor, int32_t dim_index) {
  if (!tensor) return NullArgument(nullptr, "EoTensorDim", "tensor"), -1;
  if (dim_index < 0 || dim_index >= tensor->view.num_dims()) {
    Fail(tensor->owner, kEoInvalidArgument,
         "EoTensorDim: dimension " + std::to_string(dim_index) + " out of range for tensor '" +
             std::string(tensor->view.name()) + "' of rank " + std::to_string(tensor->view.num_dims()));
    return -1;
  }
  return tensor->view.shape()[dim_index];
}

size_t EoTensorByteSize(const EoTensor* tensor) {
  if (!tensor) return NullArgument(nullptr, "EoTensorByteSize", "tensor"), 0;
  return tensor->view.bytes();
}

void* EoTensorData(const EoTensor* tensor) {
  if (!tensor) return NullArgument(nullptr, "EoTensorData", "tensor"), nullptr;
  return tensor->view.data();
}

const char* EoTensorName(const EoTensor* tensor) {
  if (!tensor) return NullArgument(nullptr, "EoTensorName", "tensor"), "";
  // The view is of the tensor's std::string name, so it is NUL-terminated.
  return tensor->view.ok() ? tensor->view.name().data() : "";
}

EoQuantizationParams EoTensorQuantizationParams(const EoTensor* tensor) {
  EoQuantizationParams p = {0.0f, 0};
  if (!tensor) return NullArgument(nullptr, "EoTensorQuantizationParams", "tensor"), p;
  p.scale = tensor->view.scale();
  p.zero_point = tensor->view.zero_point();
  return p;
}

EoStatus EoTensorPerChannelQuantization(const EoTensor* tensor, const float** scales, const int64_t** zero_points,
                                        int32_t* count, int32_t* quantized_dimension) {
  if (!tensor) return NullArgument(nullptr, "EoTensorPerChannelQuantization", "tensor");
  auto s = tensor->view.scales();
  auto z = tensor->view.zero_points();
  if (scales) *scales = s.empty() ? nullptr : s.data();
  if (zero_points) *zero_points = z.empty() ? nullptr : z.data();
  if (count) *count = static_cast<int32_t>(s.size());
  if (quantized_dimension) *quantized_dimension = tensor->view.quantized_dimension();
  return kEoOk;
}

EoStatus EoTensorCopyFromBuffer(EoTensor* tensor, const void* input_data, size_t input_data_size) {
  if (!tensor) return NullArgument(nullptr, "EoTensorCopyFromBuffer", "tensor");
  if (!input_data && input_data_size > 0) return NullArgument(tensor->owner, "EoTensorCopyFromBuffer", "input_data");
  return Guard<EoStatus>(tensor->owner, kEoInternal,
                         [&] { return Report(tensor->owner, tensor->view.CopyFrom(input_data, input_data_size)); });
}

EoStatus EoTensorCopyToBuffer(const EoTensor* tensor, void* output_data, size_t output_data_size) {
  if (!tensor) return NullArgument(nullptr, "EoTensorCopyToBuffer", "tensor");
  if (!output_data && output_data_size > 0) return NullArgument(tensor->owner, "EoTensorCopyToBuffer", "output_data");
  return Guard<EoStatus>(tensor->owner, kEoInternal,
                         [&] { return Report(tensor->owner, tensor->view.CopyTo(output_data, output_data_size)); });
}

EoStatus EoTensorLoadImage(EoTensor* input, const char* image_path, const float* range) {
  if (!input) return NullArgument(nullptr, "EoTensorLoadImage", "input");
  if (!image_path) return NullArgument(input->owner, "EoTensorLoadImage", "image_path");
  return Guard<EoStatus>(input->owner, kEoInternal, [&] {
    edgeopt::ImageOptions options;
    if (range) {
      options.normalization = edgeopt::ImageOptions::Normalization::kRange;
      options.range_min = range[0];
      options.range_max = range[1];
    }
    auto bytes = edgeopt::LoadImageAsInput(image_path, input->view, options);
    if (!bytes.ok()) return Report(input->owner, bytes.status());
    return Report(input->owner, input->view.CopyFrom(bytes->data(), bytes->size()));
  });
}

}  // extern "C"
