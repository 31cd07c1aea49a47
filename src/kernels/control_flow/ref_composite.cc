// STABLEHLO_COMPOSITE (newer LiteRT; emitted by ai-edge-torch / JAX for odml.* and other
// composites): the op names a decomposition subgraph in StableHLOCompositeOptions
// (builtin_options_2) and means exactly what that subgraph computes. As LiteRT's kernel does for
// composites it has no special kernel for, it runs the decomposition on the op's inputs and
// hands its outputs over as the op's outputs. The composite's name / attributes / version are
// informational here (only used in messages).
//
// Shapes flow through as in LiteRT: the decomposition's inputs take the op's input shapes (so a
// decomposition declared with dynamic dims runs at any size) and the op's outputs take the
// decomposition's output shapes; outputs the decomposition sizes only while running make the
// op's outputs dynamic. Checked with clear errors: missing options, the subgraph index (out of
// range, the op's own subgraph; cycles through other subgraphs are caught by the runtime when
// preparing), input/output counts and types, and input ranks or fixed dimensions that the
// decomposition's declared shape signature rules out.
#include <string>
#include <vector>

#include "kernels/common/kernel_util.h"
#include "kernels/control_flow/composite.h"

namespace edgeopt::kernels {
namespace {

struct DeclaredInput {
  std::vector<int32_t> shape;      // shape_signature when the model has one (-1 = any), else shape
  bool rank_known = false;
  bool dims_known = false;         // only a shape signature says which dims are free
};

class CompositeKernel : public rt::OpKernel {
 public:
  CompositeKernel(int index, std::string name, std::vector<DeclaredInput> declared)
      : index_(index), name_(std::move(name)), declared_(std::move(declared)) {}
  std::string variant() const override { return "stablehlo_composite/any/ref"; }

  Status Prepare(rt::KernelContext& ctx) override {
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      const rt::RtTensor* in = ctx.input(i);
      if (!in) return ctx.Error(Label() + "input " + std::to_string(i) + " is omitted");
      if (in->type == DType::kString || in->type == DType::kVariant)
        return ctx.UnsupportedError(Label() + "input " + std::to_string(i) + " " + Describe(*in) +
                                    ": string/variant tensors cannot cross subgraphs");
      RETURN_IF_ERROR(CheckDeclaredShape(ctx, i, *in));
    }
    auto outs = ctx.host()->SubgraphOutputs(index_, InputsFrom(ctx, 0));
    if (!outs.ok()) return ctx.Error(Label() + "decomposition subgraph " + std::to_string(index_) + ": " +
                                     outs.status().message());
    if (static_cast<int>(outs->size()) != ctx.num_outputs())
      return ctx.Error(Label() + "decomposition subgraph " + std::to_string(index_) + " has " +
                       std::to_string(outs->size()) + " outputs, the op " + std::to_string(ctx.num_outputs()));
    for (int i = 0; i < ctx.num_outputs(); ++i) {
      const rt::RtTensor* src = (*outs)[i];
      rt::RtTensor* dst = ctx.output(i);
      if (src->type != dst->type)
        return ctx.Error(Label() + "output " + std::to_string(i) + " is " + TypeName(dst->type) +
                         " but decomposition subgraph " + std::to_string(index_) + " produces " + TypeName(src->type));
      if (src->type == DType::kString || src->type == DType::kVariant)
        return ctx.UnsupportedError(Label() + "output " + std::to_string(i) + " " + Describe(*dst) +
                                    ": string/variant tensors cannot cross subgraphs");
      // A decomposition output still unallocated (or on the heap) after its subgraph was
      // prepared is sized only when that subgraph runs.
      const bool sized_at_run = src->alloc == rt::Allocation::kNone || src->alloc == rt::Allocation::kDynamic;
      if (sized_at_run) {
        if (!ctx.in_invoke()) ctx.MarkOutputDynamic(i);
      } else {
        RETURN_IF_ERROR(ctx.SetOutputShape(i, src->shape));
      }
    }
    return Status::Ok();
  }

  Status Invoke(rt::KernelContext& ctx) override {
    // Inputs are copied into the decomposition, its outputs copied (and the op's outputs
    // resized when they differ) back: outputs that are decomposition inputs or constants need
    // no special case.
    Status st = ctx.host()->InvokeSubgraph(index_, InputsFrom(ctx, 0), Outputs(ctx));
    if (!st.ok()) return InSubgraph(ctx, st, Label() + "decomposition subgraph " + std::to_string(index_));
    return Status::Ok();
  }

 private:
  std::string Label() const { return name_.empty() ? std::string() : "composite '" + name_ + "': "; }

  Status CheckDeclaredShape(const rt::KernelContext& ctx, int i, const rt::RtTensor& in) const {
    const DeclaredInput& d = declared_[i];
    if (!d.rank_known) return Status::Ok();
    bool ok = static_cast<int>(d.shape.size()) == in.rank();
    for (size_t k = 0; ok && d.dims_known && k < d.shape.size(); ++k)
      if (d.shape[k] != -1 && d.shape[k] != in.shape[k]) ok = false;
    if (ok) return Status::Ok();
    return ctx.Error(Label() + "input " + std::to_string(i) + " " + Describe(in) + " does not fit input " +
                     std::to_string(i) + " of decomposition subgraph " + std::to_string(index_) + ", declared " +
                     rt::ShapeToString(d.shape) + (d.dims_known ? " (-1 = any size)" : " (rank checked)"));
  }

  int index_;
  std::string name_;
  std::vector<DeclaredInput> declared_;
};

Expected<std::unique_ptr<rt::OpKernel>> CreateComposite(const rt::KernelCreateContext& cc) {
  const std::string op = cc.op.type_name();
  if (cc.op.options2.type != tflite::BuiltinOptions2_StableHLOCompositeOptions || !cc.op.options2.value)
    return InvalidModel(op + ": has no StableHLOCompositeOptions (builtin_options_2)");
  const auto& o = GetOptions2<tflite::StableHLOCompositeOptionsT>(cc.op);
  const std::string label = op + (o.name.empty() ? std::string() : " '" + o.name + "'");
  const int n = static_cast<int>(cc.graph.subgraphs.size());
  const int index = o.decomposition_subgraph_index;
  if (index < 0 || index >= n)
    return InvalidModel(label + ": decomposition subgraph index " + std::to_string(index) +
                        " is out of range (the model has " + std::to_string(n) + " subgraphs)");
  if (index == cc.subgraph_index)
    return InvalidModel(label + ": decomposition subgraph " + std::to_string(index) +
                        " is the subgraph containing the op");
  const Subgraph& dec = cc.graph.subgraphs[index];
  if (dec.inputs.size() != cc.op.inputs.size())
    return InvalidModel(label + ": has " + std::to_string(cc.op.inputs.size()) + " inputs, decomposition subgraph " +
                        std::to_string(index) + " takes " + std::to_string(dec.inputs.size()));
  if (dec.outputs.size() != cc.op.outputs.size())
    return InvalidModel(label + ": has " + std::to_string(cc.op.outputs.size()) + " outputs, decomposition subgraph " +
                        std::to_string(index) + " yields " + std::to_string(dec.outputs.size()));
  std::vector<DeclaredInput> declared(dec.inputs.size());
  for (size_t i = 0; i < dec.inputs.size(); ++i) {
    const int32_t t = dec.inputs[i];
    if (t < 0 || static_cast<size_t>(t) >= dec.tensors.size()) continue;  // the runtime reports it
    const Tensor& d = dec.tensors[t];
    const Tensor* in = cc.input(static_cast<int>(i));
    if (in && in->type != d.type)
      return InvalidModel(label + ": input " + std::to_string(i) + " '" + in->name + "' is " + TypeName(in->type) +
                          ", decomposition subgraph " + std::to_string(index) + " input '" + d.name + "' is " +
                          TypeName(d.type));
    DeclaredInput& di = declared[i];
    if (!d.shape_signature.empty()) {
      di.shape = d.shape_signature;
      di.rank_known = di.dims_known = true;
    } else {
      di.shape = d.shape;
      di.rank_known = !d.shape.empty() || d.has_rank;
    }
  }
  for (size_t i = 0; i < dec.outputs.size(); ++i) {
    const int32_t t = dec.outputs[i];
    const Tensor* out = cc.output(static_cast<int>(i));
    if (t < 0 || static_cast<size_t>(t) >= dec.tensors.size() || !out) continue;
    if (out->type != dec.tensors[t].type)
      return InvalidModel(label + ": output " + std::to_string(i) + " '" + out->name + "' is " + TypeName(out->type) +
                          ", decomposition subgraph " + std::to_string(index) + " output '" + dec.tensors[t].name +
                          "' is " + TypeName(dec.tensors[t].type));
  }
  return std::unique_ptr<rt::OpKernel>(new CompositeKernel(index, o.name, std::move(declared)));
}

}  // namespace

void RegisterCompositeKernel(rt::OpRegistry& r) { r.Add(tflite::BuiltinOperator_STABLEHLO_COMPOSITE, CreateComposite); }

}  // namespace edgeopt::kernels
