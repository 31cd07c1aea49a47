#include <algorithm>

#include "api/access.h"

namespace edgeopt {

struct Interpreter::Impl {
  std::unique_ptr<rt::Interpreter> rt;
};

namespace api_internal {
rt::Interpreter& Access::Runtime(Interpreter& interpreter) { return *interpreter.impl_->rt; }
}  // namespace api_internal

namespace {

std::string JoinNames(const std::vector<std::string>& names) {
  if (names.empty()) return "none";
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
  return out;
}

std::string InputNames(rt::Interpreter& it) {
  std::vector<std::string> names;
  for (int i = 0; i < it.num_inputs(); ++i) names.push_back(it.input(i)->name());
  return JoinNames(names);
}

std::string OutputNames(rt::Interpreter& it) {
  std::vector<std::string> names;
  for (int i = 0; i < it.num_outputs(); ++i) names.push_back(it.output(i)->name());
  return JoinNames(names);
}

}  // namespace

Interpreter::Interpreter() : impl_(std::make_unique<Impl>()) {}
Interpreter::~Interpreter() = default;

Expected<std::unique_ptr<Interpreter>> Interpreter::Create(std::shared_ptr<const Model> model,
                                                           const InterpreterOptions& options) {
  if (!model) return InvalidArgument("Interpreter::Create: null model");
  ASSIGN_OR_RETURN(rt::InterpreterOptions runtime_options, api_internal::ToRuntimeOptions(options));
  auto created = rt::Interpreter::Create(api_internal::Access::Runtime(*model), runtime_options);
  // A delegate that threw in SupportedOps is the root cause of whatever happened next.
  RETURN_IF_ERROR(api_internal::DelegateErrors(runtime_options));
  if (!created.ok()) return created.status();
  auto it = std::unique_ptr<Interpreter>(new Interpreter());
  it->model_ = std::move(model);
  it->impl_->rt = std::move(*created);
  return it;
}

int Interpreter::num_inputs() const { return impl_->rt->num_inputs(); }
int Interpreter::num_outputs() const { return impl_->rt->num_outputs(); }

TensorView Interpreter::input(int i) {
  if (i < 0 || i >= num_inputs()) return TensorView();
  return api_internal::Access::View(impl_->rt->input(i));
}

TensorView Interpreter::output(int i) {
  if (i < 0 || i >= num_outputs()) return TensorView();
  return api_internal::Access::View(impl_->rt->output(i));
}

int Interpreter::input_index(std::string_view name) const { return impl_->rt->FindInput(std::string(name)); }
int Interpreter::output_index(std::string_view name) const { return impl_->rt->FindOutput(std::string(name)); }
TensorView Interpreter::input(std::string_view name) { return input(input_index(name)); }
TensorView Interpreter::output(std::string_view name) { return output(output_index(name)); }

Expected<TensorView> Interpreter::FindInput(std::string_view name) {
  const int i = input_index(name);
  if (i >= 0) return input(i);
  return NotFound("the model has no input named '" + std::string(name) + "' (inputs: " +
                  InputNames(*impl_->rt) + ")");
}

Expected<TensorView> Interpreter::FindOutput(std::string_view name) {
  const int i = output_index(name);
  if (i >= 0) return output(i);
  return NotFound("the model has no output named '" + std::string(name) + "' (outputs: " +
                  OutputNames(*impl_->rt) + ")");
}

Status Interpreter::ResizeInput(int i, std::vector<int32_t> shape) { return impl_->rt->ResizeInput(i, shape); }
Status Interpreter::AllocateTensors() { return impl_->rt->AllocateTensors(); }
Status Interpreter::Invoke() { return impl_->rt->Invoke(); }
void Interpreter::Cancel() { impl_->rt->Cancel(); }
Status Interpreter::BindInput(int i, void* data, size_t size) { return impl_->rt->BindInput(i, data, size); }
Status Interpreter::BindOutput(int i, void* data, size_t size) { return impl_->rt->BindOutput(i, data, size); }
std::vector<std::string> Interpreter::signature_keys() const { return impl_->rt->SignatureKeys(); }
void Interpreter::ResetVariables() { impl_->rt->ResetVariables(); }
size_t Interpreter::arena_bytes() const { return impl_->rt->arena_bytes(); }
size_t Interpreter::packed_weight_bytes() const { return impl_->rt->packed_weight_bytes(); }
size_t Interpreter::persistent_bytes() const { return impl_->rt->persistent_bytes(); }
int Interpreter::num_threads() const { return impl_->rt->num_threads(); }
void Interpreter::EnableProfiling(bool on) { impl_->rt->EnableProfiling(on); }

std::vector<OpInfo> Interpreter::ops() const {
  std::vector<OpInfo> out;
  for (const rt::OpInfo& r : impl_->rt->ops()) {
    OpInfo o;
    o.index = r.index;
    o.type = r.type;
    o.variant = r.variant;
    o.backend = r.backend;
    o.folded = r.folded;
    o.partition = r.partition;
    o.macs = r.macs;
    o.threads = r.threads;
    out.push_back(std::move(o));
  }
  return out;
}

std::vector<OpTiming> Interpreter::last_profile() const {
  std::vector<OpTiming> out;
  for (const rt::OpTiming& r : impl_->rt->last_profile()) out.push_back({r.op_index, r.begin_ns, r.end_ns});
  return out;
}

Expected<SignatureRunner> Interpreter::GetSignature(std::string_view key) {
  ASSIGN_OR_RETURN(rt::SubgraphExec * exec, impl_->rt->Signature(std::string(key)));
  const Graph& g = api_internal::Access::Runtime(*model_)->graph();
  const SignatureDef* def = nullptr;
  for (const auto& s : g.signatures)
    if (s.signature_key == key) def = &s;
  if (!def) return Internal("signature '" + std::string(key) + "' vanished");
  SignatureRunner r;
  r.owner_ = this;
  r.subgraph_ = static_cast<int>(def->subgraph_index);
  r.key_ = def->signature_key;
  for (const auto& m : def->inputs) {
    r.input_names_.push_back(m.name);
    r.input_tensors_.push_back(static_cast<int32_t>(m.tensor_index));
  }
  for (const auto& m : def->outputs) {
    r.output_names_.push_back(m.name);
    r.output_tensors_.push_back(static_cast<int32_t>(m.tensor_index));
  }
  // Subgraphs other than the main one get storage on first use.
  for (int i = 0; i < exec->num_inputs(); ++i)
    if (!exec->input(i)->data && exec->input(i)->num_elements() > 0) {
      RETURN_IF_ERROR_CTX(exec->AllocateTensors(), "signature '" + r.key_ + "'");
      break;
    }
  return r;
}

// ---------------------------------------------------------------------------------------------
// SignatureRunner

namespace {

int IndexOf(const std::vector<std::string>& names, std::string_view name) {
  auto it = std::find(names.begin(), names.end(), name);
  return it == names.end() ? -1 : static_cast<int>(it - names.begin());
}

}  // namespace

TensorView SignatureRunner::input(std::string_view name) const {
  const int i = IndexOf(input_names_, name);
  if (!owner_ || i < 0) return TensorView();
  auto exec = owner_->impl_->rt->Signature(key_);
  return exec.ok() ? api_internal::Access::View((*exec)->tensor(input_tensors_[i])) : TensorView();
}

TensorView SignatureRunner::output(std::string_view name) const {
  const int i = IndexOf(output_names_, name);
  if (!owner_ || i < 0) return TensorView();
  auto exec = owner_->impl_->rt->Signature(key_);
  return exec.ok() ? api_internal::Access::View((*exec)->tensor(output_tensors_[i])) : TensorView();
}

Status SignatureRunner::ResizeInput(std::string_view name, std::vector<int32_t> shape) {
  if (!owner_) return InvalidArgument("ResizeInput: empty signature runner");
  const int i = IndexOf(input_names_, name);
  if (i < 0)
    return NotFound("signature '" + key_ + "' has no input named '" + std::string(name) + "' (inputs: " +
                    JoinNames(input_names_) + ")");
  ASSIGN_OR_RETURN(rt::SubgraphExec * exec, owner_->impl_->rt->Signature(key_));
  for (int k = 0; k < exec->num_inputs(); ++k)
    if (exec->input_tensor_index(k) == input_tensors_[i]) return exec->ResizeInput(k, shape);
  return InvalidModel("signature '" + key_ + "' input '" + std::string(name) + "' is not an input of its subgraph");
}

Status SignatureRunner::AllocateTensors() {
  if (!owner_) return InvalidArgument("AllocateTensors: empty signature runner");
  ASSIGN_OR_RETURN(rt::SubgraphExec * exec, owner_->impl_->rt->Signature(key_));
  return exec->AllocateTensors();
}

Status SignatureRunner::Invoke() {
  if (!owner_) return InvalidArgument("Invoke: empty signature runner");
  return owner_->impl_->rt->InvokeSubgraph(subgraph_);
}

}  // namespace edgeopt
