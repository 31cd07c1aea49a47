// Custom ops and delegates written against the public API, adapted to the runtime's kernel and
// delegate interfaces.
#include <map>
#include <set>

#include "api/access.h"
#include "runtime/kernel.h"
#include "runtime/registry.h"

namespace edgeopt {

// ---------------------------------------------------------------------------------------------
// CustomKernelContext

int CustomKernelContext::num_inputs() const { return ctx_->num_inputs(); }
int CustomKernelContext::num_outputs() const { return ctx_->num_outputs(); }

TensorView CustomKernelContext::input(int i) const {
  return i >= 0 ? api_internal::Access::View(ctx_->input(i)) : TensorView();
}

TensorView CustomKernelContext::output(int i) const {
  return i >= 0 ? api_internal::Access::View(ctx_->output(i)) : TensorView();
}

std::span<const uint8_t> CustomKernelContext::custom_options() const { return ctx_->op().custom_options; }
bool CustomKernelContext::in_invoke() const { return ctx_->in_invoke(); }
Status CustomKernelContext::Error(std::string_view message) const { return ctx_->Error(std::string(message)); }

Status CustomKernelContext::SetOutputShape(int i, std::vector<int32_t> shape) {
  if (i < 0 || i >= num_outputs())
    return ctx_->Error("SetOutputShape: no output " + std::to_string(i) + " (the op has " +
                       std::to_string(num_outputs()) + ")");
  for (int32_t d : shape)
    if (d < 0) return ctx_->Error("SetOutputShape: negative dimension in " + rt::ShapeToString(shape));
  return ctx_->SetOutputShape(i, std::move(shape));
}

Status CustomKernelContext::MarkOutputDynamic(int i) {
  if (i < 0 || i >= num_outputs())
    return ctx_->Error("MarkOutputDynamic: no output " + std::to_string(i) + " (the op has " +
                       std::to_string(num_outputs()) + ")");
  ctx_->MarkOutputDynamic(i);
  return Status::Ok();
}

namespace api_internal {
namespace {

// Runs a public CustomKernel as a runtime kernel.
class CustomKernelAdapter : public rt::OpKernel {
 public:
  CustomKernelAdapter(std::unique_ptr<CustomKernel> kernel, std::string label, std::string default_variant)
      : kernel_(std::move(kernel)), label_(std::move(label)), default_variant_(std::move(default_variant)) {}

  Status Prepare(rt::KernelContext& ctx) override {
    CustomKernelContext c = Access::Context(&ctx);
    return CallApplication(label_ + " (Prepare)", [&] { return kernel_->Prepare(c); });
  }
  Status Invoke(rt::KernelContext& ctx) override {
    CustomKernelContext c = Access::Context(&ctx);
    return CallApplication(label_ + " (Invoke)", [&] { return kernel_->Invoke(c); });
  }
  std::string variant() const override {
    try {
      std::string v = kernel_->variant();
      return v.empty() ? default_variant_ : v;
    } catch (...) {
      return default_variant_;
    }
  }

 private:
  std::unique_ptr<CustomKernel> kernel_;
  std::string label_;
  std::string default_variant_;
};

rt::KernelFactory MakeCustomOpFactory(CustomOp op) {
  return [op = std::move(op)](const rt::KernelCreateContext& cc) -> Expected<std::unique_ptr<rt::OpKernel>> {
    CustomOpInfo info;
    info.name = cc.op.custom_code;
    info.subgraph_index = cc.subgraph_index;
    info.op_index = cc.op_index;
    info.custom_options = cc.op.custom_options;
    info.reference_kernels_only = cc.reference_only;
    for (int32_t t : cc.op.inputs) info.inputs.push_back(MakeTensorInfo(cc.graph, cc.subgraph, t));
    for (int32_t t : cc.op.outputs) info.outputs.push_back(MakeTensorInfo(cc.graph, cc.subgraph, t));
    const std::string label = "custom op '" + op.name + "'";
    auto kernel = CallApplication(label + " (create)", [&] { return op.create(info); });
    if (!kernel.ok()) return kernel.status();
    if (!*kernel) return Internal(label + ": create returned no kernel");
    return std::unique_ptr<rt::OpKernel>(new CustomKernelAdapter(std::move(*kernel), label, "custom/" + op.name));
  };
}

// Runs a public Delegate as a runtime delegate. rt::Delegate::SupportedOps cannot fail, so an
// exception there is kept and reported by DelegateErrors after the interpreter is created.
class DelegateAdapter : public rt::Delegate {
 public:
  DelegateAdapter(std::shared_ptr<edgeopt::Delegate> delegate, std::string name)
      : delegate_(std::move(delegate)), name_(std::move(name)) {}

  std::string name() const override { return name_; }

  std::vector<int> SupportedOps(const Graph& graph, int subgraph_index) override {
    const ModelView& view = View(graph, subgraph_index);
    try {
      return delegate_->SupportedOps(view);
    } catch (const std::exception& e) {
      if (error_.ok()) error_ = Internal("delegate '" + name_ + "' SupportedOps threw an exception: " + e.what());
    } catch (...) {
      if (error_.ok()) error_ = Internal("delegate '" + name_ + "' SupportedOps threw an exception");
    }
    return {};
  }

  Expected<std::unique_ptr<rt::OpKernel>> CreatePartitionKernel(const Graph& graph, int subgraph_index,
                                                                 std::span<const int> op_indices,
                                                                 const Operator& partition) override {
    PartitionInfo info;
    info.model = &View(graph, subgraph_index);
    info.op_indices.assign(op_indices.begin(), op_indices.end());
    info.inputs = partition.inputs;
    info.outputs = partition.outputs;
    const std::string label = "delegate '" + name_ + "'";
    auto kernel = CallApplication(label + " (CreatePartitionKernel)", [&] { return delegate_->CreatePartitionKernel(info); });
    if (!kernel.ok()) return kernel.status();
    if (!*kernel) return Internal(label + ": CreatePartitionKernel returned no kernel");
    return std::unique_ptr<rt::OpKernel>(new CustomKernelAdapter(std::move(*kernel), label, "delegate/" + name_));
  }

  const Status& error() const { return error_; }

 private:
  const ModelView& View(const Graph& graph, int subgraph_index) {
    auto& v = views_[subgraph_index];
    if (!v) v = std::make_unique<ModelView>(MakeModelView(graph, subgraph_index));
    return *v;
  }

  std::shared_ptr<edgeopt::Delegate> delegate_;
  std::string name_;
  std::map<int, std::unique_ptr<ModelView>> views_;
  Status error_;
};

}  // namespace

Expected<rt::InterpreterOptions> ToRuntimeOptions(const InterpreterOptions& options) {
  rt::InterpreterOptions out;
  out.num_threads = options.num_threads;
  out.reference_kernels_only = options.reference_kernels_only;
  out.preserve_all_tensors = options.preserve_all_tensors;
  out.fold_constants = options.fold_constants;
  out.tune_op_threads = options.tune_op_threads;
  if (!options.custom_ops.empty()) {
    auto registry = std::make_shared<rt::OpRegistry>();
    std::set<std::string> seen;
    for (const CustomOp& op : options.custom_ops) {
      if (op.name.empty()) return InvalidArgument("InterpreterOptions: a custom op has an empty name");
      if (!op.create) return InvalidArgument("InterpreterOptions: custom op '" + op.name + "' has no create function");
      if (!seen.insert(op.name).second)
        return InvalidArgument("InterpreterOptions: custom op '" + op.name + "' is registered twice");
      registry->AddCustom(op.name, MakeCustomOpFactory(op));
    }
    out.op_resolver = std::move(registry);
  }
  for (size_t i = 0; i < options.delegates.size(); ++i) {
    const auto& d = options.delegates[i];
    if (!d) return InvalidArgument("InterpreterOptions: delegate " + std::to_string(i) + " is null");
    std::string name;
    RETURN_IF_ERROR(CallApplication("delegate " + std::to_string(i) + " name()", [&] {
      name = d->name();
      return Status::Ok();
    }));
    if (name.empty()) name = "delegate" + std::to_string(i);
    out.delegates.push_back(std::make_shared<DelegateAdapter>(d, std::move(name)));
  }
  return out;
}

Status DelegateErrors(const rt::InterpreterOptions& options) {
  for (const auto& d : options.delegates)
    if (auto* a = dynamic_cast<const DelegateAdapter*>(d.get()); a && !a->error().ok()) return a->error();
  return Status::Ok();
}

}  // namespace api_internal
}  // namespace edgeopt
