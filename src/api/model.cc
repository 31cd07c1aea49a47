#include <span>

#include "api/access.h"
#include "format/reader.h"

namespace edgeopt {
namespace api_internal {

TensorInfo MakeTensorInfo(const Graph& graph, const Subgraph& subgraph, int32_t index) {
  TensorInfo info;
  if (index < 0 || static_cast<size_t>(index) >= subgraph.tensors.size()) return info;  // omitted input
  const Tensor& t = subgraph.tensors[index];
  info.index = index;
  info.name = t.name;
  info.type = t.type;
  info.shape = t.shape;
  info.shape_signature = t.shape_signature;
  if (t.quant) {
    info.scales = t.quant->scale;
    info.zero_points = t.quant->zero_point;
    info.quantized_dimension = t.quant->quantized_dimension;
  }
  info.is_variable = t.is_variable;
  info.is_constant = !t.is_variable && graph.IsConstant(t);
  if (info.is_constant) info.constant_data = graph.TensorData(t);
  return info;
}

ModelView MakeModelView(const Graph& graph, int subgraph_index) {
  ModelView view;
  view.subgraph_index = subgraph_index;
  const Subgraph& sg = graph.subgraphs.at(subgraph_index);
  view.tensors.reserve(sg.tensors.size());
  for (size_t i = 0; i < sg.tensors.size(); ++i)
    view.tensors.push_back(MakeTensorInfo(graph, sg, static_cast<int32_t>(i)));
  view.ops.reserve(sg.ops.size());
  for (size_t i = 0; i < sg.ops.size(); ++i) {
    const Operator& op = sg.ops[i];
    OpView v;
    v.index = static_cast<int>(i);
    v.type = op.type_name();
    v.is_custom = op.is_custom();
    v.builtin_code = static_cast<int>(op.code);
    v.version = op.version;
    v.inputs = op.inputs;
    v.outputs = op.outputs;
    v.custom_options = op.custom_options;
    view.ops.push_back(std::move(v));
  }
  view.inputs = sg.inputs;
  view.outputs = sg.outputs;
  return view;
}

}  // namespace api_internal

Model::Model() : impl_(std::make_unique<Impl>()) {}
Model::~Model() = default;

Expected<std::shared_ptr<const Model>> Model::FromFile(const std::string& path) {
  ASSIGN_OR_RETURN(auto model, rt::Model::FromFile(path));
  return api_internal::Access::Wrap(std::move(model));
}

Expected<std::shared_ptr<const Model>> Model::FromBuffer(const void* data, size_t size) {
  if (!data && size > 0) return InvalidArgument("Model::FromBuffer: null data");
  std::span<const uint8_t> bytes(static_cast<const uint8_t*>(data), data ? size : 0);
  ASSIGN_OR_RETURN(Graph graph, ReadModelBytes(bytes, "<buffer>"));
  ASSIGN_OR_RETURN(auto model, rt::Model::FromGraph(std::move(graph)));
  return api_internal::Access::Wrap(std::move(model));
}

const std::string& Model::description() const { return impl_->model->graph().description; }
int Model::num_subgraphs() const { return static_cast<int>(impl_->model->graph().subgraphs.size()); }
int Model::num_ops() const { return static_cast<int>(impl_->model->graph().main().ops.size()); }

std::vector<TensorInfo> Model::inputs() const {
  const Graph& g = impl_->model->graph();
  std::vector<TensorInfo> out;
  for (int32_t t : g.main().inputs) out.push_back(api_internal::MakeTensorInfo(g, g.main(), t));
  return out;
}

std::vector<TensorInfo> Model::outputs() const {
  const Graph& g = impl_->model->graph();
  std::vector<TensorInfo> out;
  for (int32_t t : g.main().outputs) out.push_back(api_internal::MakeTensorInfo(g, g.main(), t));
  return out;
}

std::vector<std::string> Model::signature_keys() const {
  std::vector<std::string> keys;
  for (const auto& s : impl_->model->graph().signatures) keys.push_back(s.signature_key);
  return keys;
}

std::vector<SignatureInfo> Model::signatures() const {
  std::vector<SignatureInfo> out;
  for (const auto& s : impl_->model->graph().signatures) {
    SignatureInfo info;
    info.key = s.signature_key;
    for (const auto& m : s.inputs) info.input_names.push_back(m.name);
    for (const auto& m : s.outputs) info.output_names.push_back(m.name);
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace edgeopt
