// Control flow and resource variables, TFLite 2.9 semantics:
//   WHILE            loop state = the op's inputs; while cond(state) run state = body(state)
//   IF               input 0 (bool scalar) picks then/else; the other inputs go to the branch
//   CALL_ONCE        runs its init subgraph (no inputs/outputs) at the first invoke only
//   VAR_HANDLE       yields the int32 handle id of variable (container, shared_name)
//   ASSIGN_VARIABLE  stores a tensor (any type/shape) in the variable
//   READ_VARIABLE    copies the variable out (dynamic output shape)
//   STABLEHLO_COMPOSITE  runs its decomposition subgraph (ref_composite.cc)
// Subgraphs run through KernelHost::InvokeSubgraph; variables live in the interpreter-wide
// ResourceStore, so every subgraph sees the same ones. Subgraph indices, input/output counts
// and types are checked at prepare, so a malformed model fails there with a clear error.
#include <cstring>
#include <limits>

#include "kernels/common/kernel_util.h"
#include "kernels/control_flow/composite.h"
#include "kernels/registration.h"
#include "runtime/resources.h"

namespace edgeopt::kernels {
namespace {

Status CheckNoOmittedInputs(const rt::KernelContext& ctx) {
  for (int i = 0; i < ctx.num_inputs(); ++i)
    if (!ctx.input(i)) return ctx.Error("input " + std::to_string(i) + " is omitted");
  for (int i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.input(i)->type == DType::kString || ctx.input(i)->type == DType::kVariant)
      return ctx.UnsupportedError("input " + std::to_string(i) + " " + Describe(*ctx.input(i)) +
                                  ": string/variant tensors cannot cross subgraphs");
  return Status::Ok();
}

Status CheckOutputTypes(const rt::KernelContext& ctx, const std::vector<const rt::RtTensor*>& outs) {
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    if (outs[i]->type != ctx.output(i)->type)
      return ctx.Error("output " + std::to_string(i) + " is " + TypeName(ctx.output(i)->type) +
                       " but the subgraph produces " + TypeName(outs[i]->type));
  }
  return Status::Ok();
}

// ---- WHILE ----------------------------------------------------------------------------------

class WhileKernel : public rt::OpKernel {
 public:
  WhileKernel(int cond, int body) : cond_(cond), body_(body) {}
  std::string variant() const override { return "while/any/ref"; }

  Status Prepare(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckNoOmittedInputs(ctx));
    if (ctx.num_inputs() != ctx.num_outputs())
      return ctx.Error("has " + std::to_string(ctx.num_inputs()) + " inputs but " + std::to_string(ctx.num_outputs()) +
                       " outputs; they must match");
    const auto inputs = InputsFrom(ctx, 0);
    auto cond_outs = ctx.host()->SubgraphOutputs(cond_, inputs);
    if (!cond_outs.ok()) return ctx.Error("cond subgraph: " + cond_outs.status().message());
    if (cond_outs->size() != 1 || (*cond_outs)[0]->type != DType::kBool || (*cond_outs)[0]->num_elements() != 1)
      return ctx.Error("cond subgraph " + std::to_string(cond_) + " must have one bool scalar output");
    cond_result_.type = DType::kBool;
    cond_result_.shape = (*cond_outs)[0]->shape;
    cond_storage_ = 0;
    cond_result_.data = reinterpret_cast<uint8_t*>(&cond_storage_);
    cond_result_.bytes = 1;
    auto body_outs = ctx.host()->SubgraphOutputs(body_, inputs);
    if (!body_outs.ok()) return ctx.Error("body subgraph: " + body_outs.status().message());
    if (static_cast<int>(body_outs->size()) != ctx.num_inputs())
      return ctx.Error("body subgraph " + std::to_string(body_) + " has " + std::to_string(body_outs->size()) +
                       " outputs, the loop carries " + std::to_string(ctx.num_inputs()) + " values");
    // Loop values keep their shapes when the body maps each input shape to itself; otherwise
    // the outputs are sized as the loop runs.
    shapes_fixed_ = true;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      if ((*body_outs)[i]->type != inputs[i]->type)
        return ctx.Error("body output " + std::to_string(i) + " is " + TypeName((*body_outs)[i]->type) +
                         ", loop value " + std::to_string(i) + " is " + TypeName(inputs[i]->type));
      if ((*body_outs)[i]->shape != inputs[i]->shape) shapes_fixed_ = false;
      if (ctx.output(i)->type != inputs[i]->type)
        return ctx.Error("output " + std::to_string(i) + " is " + TypeName(ctx.output(i)->type) + ", input " +
                         TypeName(inputs[i]->type));
    }
    if (shapes_fixed_) {
      for (int i = 0; i < ctx.num_outputs(); ++i) RETURN_IF_ERROR(ctx.SetOutputShape(i, inputs[i]->shape));
    } else if (!ctx.in_invoke()) {
      for (int i = 0; i < ctx.num_outputs(); ++i) ctx.MarkOutputDynamic(i);
    }
    return Status::Ok();
  }

  Status Invoke(rt::KernelContext& ctx) override {
    // The outputs hold the loop state: start from the inputs.
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      const rt::RtTensor* in = ctx.input(i);
      rt::RtTensor* out = ctx.output(i);
      if (out->shape != in->shape || !out->data) RETURN_IF_ERROR(ctx.SetOutputShape(i, in->shape));
      const size_t n = rt::TensorBytes(in->type, in->shape);
      if (n && out->data != in->data) std::memcpy(out->data, in->data, n);
    }
    auto state = Outputs(ctx);
    std::vector<const rt::RtTensor*> state_in(state.begin(), state.end());
    rt::RtTensor* cond_out[1] = {&cond_result_};
    for (int64_t iteration = 0;; ++iteration) {
      Status st = ctx.host()->InvokeSubgraph(cond_, state_in, cond_out);
      if (!st.ok()) return InSubgraph(ctx, st, "cond subgraph");
      if (!cond_storage_) break;
      st = ctx.host()->InvokeSubgraph(body_, state_in, state);
      if (!st.ok()) return InSubgraph(ctx, st, "body subgraph (iteration " + std::to_string(iteration) + ")");
    }
    return Status::Ok();
  }

 private:
  int cond_, body_;
  bool shapes_fixed_ = true;
  rt::RtTensor cond_result_;
  uint8_t cond_storage_ = 0;
};

// ---- IF -------------------------------------------------------------------------------------

class IfKernel : public rt::OpKernel {
 public:
  IfKernel(int then_index, int else_index) : branch_{then_index, else_index} {}
  std::string variant() const override { return "if/any/ref"; }

  Status Prepare(rt::KernelContext& ctx) override {
    if (ctx.num_inputs() < 1) return ctx.Error("needs the condition as input 0");
    RETURN_IF_ERROR(CheckNoOmittedInputs(ctx));
    const rt::RtTensor* cond = ctx.input(0);
    if (cond->type != DType::kBool || cond->num_elements() != 1)
      return ctx.Error("condition must be a bool scalar, is " + Describe(*cond));
    const auto args = InputsFrom(ctx, 1);
    std::vector<const rt::RtTensor*> outs[2];
    for (int b = 0; b < 2; ++b) {
      auto o = ctx.host()->SubgraphOutputs(branch_[b], args);
      if (!o.ok()) return ctx.Error(std::string(b == 0 ? "then" : "else") + " subgraph: " + o.status().message());
      if (static_cast<int>(o->size()) != ctx.num_outputs())
        return ctx.Error(std::string(b == 0 ? "then" : "else") + " subgraph " + std::to_string(branch_[b]) + " has " +
                         std::to_string(o->size()) + " outputs, the op " + std::to_string(ctx.num_outputs()));
      outs[b] = *o;
    }
    // Outputs keep a fixed shape when both branches agree on it; otherwise they are sized at run time.
    bool fixed = true;
    for (int i = 0; i < ctx.num_outputs(); ++i)
      if (outs[0][i]->shape != outs[1][i]->shape) fixed = false;
    RETURN_IF_ERROR(CheckOutputTypes(ctx, outs[1]));
    RETURN_IF_ERROR(CheckOutputTypes(ctx, outs[0]));
    if (fixed)
      for (int i = 0; i < ctx.num_outputs(); ++i) RETURN_IF_ERROR(ctx.SetOutputShape(i, outs[0][i]->shape));
    if (!fixed && !ctx.in_invoke())
      for (int i = 0; i < ctx.num_outputs(); ++i) ctx.MarkOutputDynamic(i);
    return Status::Ok();
  }

  Status Invoke(rt::KernelContext& ctx) override {
    const bool cond = ctx.input(0)->data[0] != 0;
    const int b = cond ? 0 : 1;
    auto outs = Outputs(ctx);
    Status st = ctx.host()->InvokeSubgraph(branch_[b], InputsFrom(ctx, 1), outs);
    if (!st.ok()) return InSubgraph(ctx, st, std::string(cond ? "then" : "else") + " subgraph");
    return Status::Ok();
  }

 private:
  int branch_[2];
};

// ---- CALL_ONCE ------------------------------------------------------------------------------

class CallOnceKernel : public rt::OpKernel {
 public:
  explicit CallOnceKernel(int init) : init_(init) {}
  std::string variant() const override { return "call_once/any/ref"; }

  Status Prepare(rt::KernelContext& ctx) override {
    if (ctx.num_inputs() != 0 || ctx.num_outputs() != 0) return ctx.Error("must have no inputs and no outputs");
    if (done_) return Status::Ok();
    auto outs = ctx.host()->SubgraphOutputs(init_, {});
    if (!outs.ok()) return ctx.Error("init subgraph: " + outs.status().message());
    if (!outs->empty()) return ctx.Error("init subgraph " + std::to_string(init_) + " must have no outputs");
    return Status::Ok();
  }

  Status Invoke(rt::KernelContext& ctx) override {
    if (done_) return Status::Ok();
    Status st = ctx.host()->InvokeSubgraph(init_, {}, {});
    if (!st.ok()) return InSubgraph(ctx, st, "init subgraph");
    done_ = true;
    return Status::Ok();
  }

 private:
  int init_;
  bool done_ = false;  // per interpreter: each Interpreter has its own kernel objects
};

// ---- resource variables ---------------------------------------------------------------------

Status CheckHandle(const rt::KernelContext& ctx, const rt::RtTensor* t) {
  if (!t) return ctx.Error("resource handle input is missing");
  if (t->type != DType::kResource && t->type != DType::kInt32)
    return ctx.Error("input 0 must be a resource handle, is " + Describe(*t));
  if (t->num_elements() != 1) return ctx.Error("resource handle must be a scalar, is " + Describe(*t));
  return Status::Ok();
}

class VarHandleKernel : public rt::OpKernel {
 public:
  VarHandleKernel(std::string container, std::string shared_name)
      : container_(std::move(container)), shared_name_(std::move(shared_name)) {}
  std::string variant() const override { return "var_handle/resource/ref"; }
  Status Prepare(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckInputCount(ctx, 0, 0));
    RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
    const rt::RtTensor* out = ctx.output(0);
    if (out->type != DType::kResource && out->type != DType::kInt32)
      return ctx.Error("output must be a resource tensor, is " + Describe(*out));
    if (out->num_elements() != 1) return ctx.Error("output must be a scalar handle, is " + Describe(*out));
    id_ = ctx.host()->resources().HandleId(container_, shared_name_);
    return Status::Ok();
  }
  Status Invoke(rt::KernelContext& ctx) override {
    std::memcpy(ctx.output(0)->data, &id_, sizeof(id_));
    return Status::Ok();
  }

 private:
  std::string container_, shared_name_;
  int32_t id_ = -1;
};

struct NoState {};

Status AssignVariablePrepare(rt::KernelContext& ctx, NoState&) {
  RETURN_IF_ERROR(CheckInputCount(ctx, 2, 2));
  RETURN_IF_ERROR(CheckHandle(ctx, ctx.input(0)));
  const rt::RtTensor* value = ctx.input(1);
  if (!value) return ctx.Error("value input is missing");
  if (value->type == DType::kString || value->type == DType::kResource || value->type == DType::kVariant)
    return ctx.UnsupportedError("cannot store " + Describe(*value) + " in a resource variable");
  return Status::Ok();
}

Status AssignVariableInvoke(rt::KernelContext& ctx, const NoState&) {
  int32_t id;
  std::memcpy(&id, ctx.input(0)->data, sizeof(id));
  const rt::RtTensor* value = ctx.input(1);
  ctx.host()->resources().Assign(id, value->type, value->shape, value->data, rt::TensorBytes(value->type, value->shape));
  return Status::Ok();
}

Status ReadVariablePrepare(rt::KernelContext& ctx, NoState&) {
  RETURN_IF_ERROR(CheckInputCount(ctx, 1, 1));
  RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
  RETURN_IF_ERROR(CheckHandle(ctx, ctx.input(0)));
  // The value (and its shape) is known only once the variable is read.
  if (!ctx.in_invoke()) ctx.MarkOutputDynamic(0);
  return Status::Ok();
}

Status ReadVariableInvoke(rt::KernelContext& ctx, const NoState&) {
  int32_t id;
  std::memcpy(&id, ctx.input(0)->data, sizeof(id));
  const rt::ResourceStore::Variable* v = ctx.host()->resources().Find(id);
  if (!v) return ctx.Error("reads variable " + std::to_string(id) + " before any ASSIGN_VARIABLE initialized it");
  rt::RtTensor* out = ctx.output(0);
  if (v->type != out->type)
    return ctx.Error("variable " + std::to_string(id) + " holds " + TypeName(v->type) + ", the output is " +
                     TypeName(out->type));
  RETURN_IF_ERROR(ctx.SetOutputShape(0, v->shape));
  if (!v->data.empty()) std::memcpy(out->data, v->data.data(), v->data.size());
  return Status::Ok();
}

// ---- factories ------------------------------------------------------------------------------

Status CheckSubgraphIndex(const rt::KernelCreateContext& cc, int index, const char* what) {
  const int n = static_cast<int>(cc.graph.subgraphs.size());
  if (index < 0 || index >= n)
    return InvalidModel(cc.op.type_name() + ": " + what + " subgraph index " + std::to_string(index) +
                        " is out of range (the model has " + std::to_string(n) + " subgraphs)");
  if (index == cc.subgraph_index)
    return InvalidModel(cc.op.type_name() + ": " + what + " subgraph " + std::to_string(index) +
                        " is the subgraph containing the op");
  return Status::Ok();
}

Expected<std::unique_ptr<rt::OpKernel>> CreateWhile(const rt::KernelCreateContext& cc) {
  const auto& o = GetOptions<tflite::WhileOptionsT>(cc.op);
  RETURN_IF_ERROR(CheckSubgraphIndex(cc, o.cond_subgraph_index, "cond"));
  RETURN_IF_ERROR(CheckSubgraphIndex(cc, o.body_subgraph_index, "body"));
  return std::unique_ptr<rt::OpKernel>(new WhileKernel(o.cond_subgraph_index, o.body_subgraph_index));
}

Expected<std::unique_ptr<rt::OpKernel>> CreateIf(const rt::KernelCreateContext& cc) {
  const auto& o = GetOptions<tflite::IfOptionsT>(cc.op);
  RETURN_IF_ERROR(CheckSubgraphIndex(cc, o.then_subgraph_index, "then"));
  RETURN_IF_ERROR(CheckSubgraphIndex(cc, o.else_subgraph_index, "else"));
  return std::unique_ptr<rt::OpKernel>(new IfKernel(o.then_subgraph_index, o.else_subgraph_index));
}

Expected<std::unique_ptr<rt::OpKernel>> CreateCallOnce(const rt::KernelCreateContext& cc) {
  const auto& o = GetOptions<tflite::CallOnceOptionsT>(cc.op);
  RETURN_IF_ERROR(CheckSubgraphIndex(cc, o.init_subgraph_index, "init"));
  return std::unique_ptr<rt::OpKernel>(new CallOnceKernel(o.init_subgraph_index));
}

Expected<std::unique_ptr<rt::OpKernel>> CreateVarHandle(const rt::KernelCreateContext& cc) {
  const auto& o = GetOptions<tflite::VarHandleOptionsT>(cc.op);
  return std::unique_ptr<rt::OpKernel>(new VarHandleKernel(o.container, o.shared_name));
}

}  // namespace

void RegisterControlFlowKernels(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_WHILE, CreateWhile);
  r.Add(tflite::BuiltinOperator_IF, CreateIf);
  r.Add(tflite::BuiltinOperator_CALL_ONCE, CreateCallOnce);
  r.Add(tflite::BuiltinOperator_VAR_HANDLE, CreateVarHandle);
  r.Add(tflite::BuiltinOperator_ASSIGN_VARIABLE,
        MakeFnFactory<NoState>(AssignVariablePrepare, AssignVariableInvoke, "assign_variable/any/ref"));
  r.Add(tflite::BuiltinOperator_READ_VARIABLE,
        MakeFnFactory<NoState>(ReadVariablePrepare, ReadVariableInvoke, "read_variable/any/ref"));
  RegisterCompositeKernel(r);
}

}  // namespace edgeopt::kernels
