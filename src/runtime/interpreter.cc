#include "runtime/interpreter.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <thread>

#include "core/tick_clock.h"
#include "format/mapped_file.h"
#include "format/reader.h"
#include "runtime/constant_fold.h"
#include "runtime/memory_planner.h"

namespace edgeopt::rt {
namespace {

constexpr size_t kArenaAlignment = 64;
constexpr size_t kNotPlanned = std::numeric_limits<size_t>::max();
// Folding creates persistent copies; do not fold ops producing more than this.
constexpr size_t kMaxFoldedBytes = size_t{64} << 20;
constexpr int kMaxSubgraphDepth = 32;

// The kernel for op i of s from the application's resolver (app, may be null), else the
// built-in registry, with errors naming the op.
Expected<std::unique_ptr<OpKernel>> CreateOpKernel(const Graph& g, const Subgraph& s, int subgraph, size_t i,
                                                   const OpRegistry* app, const InterpreterOptions& o) {
  const Operator& op = s.ops[i];
  const std::string label = "subgraph " + std::to_string(subgraph) + " op " + std::to_string(i) + " (" + op.type_name() + ")";
  const KernelFactory* f = app ? app->Find(op) : nullptr;
  if (!f) f = OpRegistry::Builtin().Find(op);
  if (!f) {
    if (op.is_custom())
      return Unsupported(label + ": custom op '" + op.custom_code +
                         "' has no kernel; register one through the interpreter's op resolver");
    return Unsupported(label + ": builtin op " + BuiltinName(op.code) + " (code " +
                       std::to_string(static_cast<int>(op.code)) + ") is not supported by edgeopt");
  }
  KernelCreateContext cc{g, s, subgraph, op, static_cast<int>(i), *o.cpu, o.reference_kernels_only};
  auto kernel = (*f)(cc);
  if (!kernel.ok()) return kernel.status().WithContext(label);
  return std::move(*kernel);
}


class CacheImpl : public PackedWeightCache {
 public:
  std::shared_ptr<const void> GetOrCreate(const std::string& key,
                                          const std::function<std::shared_ptr<const void>()>& make) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end()) {
      if (auto p = it->second.lock()) return p;
    }
    auto p = make();
    entries_[key] = p;
    return p;
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::weak_ptr<const void>> entries_;
};


}  // namespace

std::string ShapeToString(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

Status KernelCreateContext::Error(const std::string& message) const {
  return Unsupported(op.type_name() + ": " + message);
}

std::vector<std::string> OpRegistry::Names() const {
  std::vector<std::string> out;
  for (const auto& [code, f] : builtins_) out.push_back(BuiltinName(static_cast<tflite::BuiltinOperator>(code)));
  for (const auto& [name, f] : customs_) out.push_back(name);
  return out;
}

const OpRegistry& OpRegistry::Builtin() {
  static const OpRegistry* registry = [] {
    auto* r = new OpRegistry();
    RegisterAllKernels(*r);
    return r;
  }();
  return *registry;
}

// ---------------------------------------------------------------------------------------------
// Model

Expected<std::shared_ptr<const Model>> Model::FromFile(const std::string& path) {
  ASSIGN_OR_RETURN(Graph g, ReadModelFile(path));
  auto m = std::shared_ptr<Model>(new Model());
  m->graph_ = std::move(g);
  m->path_ = path;
  m->cache_ = std::make_unique<CacheImpl>();
  return std::shared_ptr<const Model>(std::move(m));
}

Expected<std::shared_ptr<const Model>> Model::FromGraph(Graph graph) {
  if (graph.subgraphs.empty()) return InvalidModel("model has no subgraphs");
  auto m = std::shared_ptr<Model>(new Model());
  m->graph_ = std::move(graph);
  m->cache_ = std::make_unique<CacheImpl>();
  return std::shared_ptr<const Model>(std::move(m));
}

size_t Model::mapped_bytes() const { return graph_.source ? graph_.source->size() : 0; }

// ---------------------------------------------------------------------------------------------
// Interpreter

Expected<std::unique_ptr<Interpreter>> Interpreter::Create(std::shared_ptr<const Model> model,
                                                           const InterpreterOptions& options) {
  if (!model) return InvalidArgument("Interpreter::Create: null model");
  auto it = std::unique_ptr<Interpreter>(new Interpreter());
  it->model_ = std::move(model);
  it->options_ = options;
  if (!it->options_.cpu) it->options_.cpu = &Cpu();
  if (const char* fuse = std::getenv("EDGEOPT_FUSE"); fuse && std::strcmp(fuse, "0") == 0) it->options_.fuse_ops = false;
  if (const char* ot = std::getenv("EDGEOPT_OP_THREADS"); ot && std::strcmp(ot, "all") == 0)
    it->options_.tune_op_threads = false;
  int threads = options.num_threads;
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  it->pool_ = std::make_unique<ThreadPool>(threads);
  const Graph& g = it->model_->graph();
  for (size_t i = 0; i < g.subgraphs.size(); ++i)
    it->subgraphs_.push_back(std::make_unique<SubgraphExec>(it.get(), static_cast<int>(i)));
  if (it->subgraphs_.empty()) return InvalidModel("the model has no subgraph");
  it->main_ = it->subgraphs_[0].get();
  for (auto& sg : it->subgraphs_) RETURN_IF_ERROR(sg->Init());
  // Prepare now so shape/type problems surface when the model is loaded, and inputs have
  // storage as soon as the caller gets the interpreter.
  RETURN_IF_ERROR(it->subgraphs_[0]->AllocateTensors());
  return it;
}

Interpreter::~Interpreter() = default;

SubgraphExec& Interpreter::main() { return *subgraphs_[0]; }
int Interpreter::num_inputs() const { return subgraphs_[0]->num_inputs(); }
int Interpreter::num_outputs() const { return subgraphs_[0]->num_outputs(); }
RtTensor* Interpreter::input(int i) { return subgraphs_[0]->input(i); }
RtTensor* Interpreter::output(int i) { return subgraphs_[0]->output(i); }
int Interpreter::FindInput(const std::string& name) const { return subgraphs_[0]->FindInput(name); }
int Interpreter::FindOutput(const std::string& name) const { return subgraphs_[0]->FindOutput(name); }
Status Interpreter::ResizeInput(int i, const Shape& shape) { return subgraphs_[0]->ResizeInput(i, shape); }
Status Interpreter::AllocateTensors() { return subgraphs_[0]->AllocateTensors(); }

Status Interpreter::InvokeSubgraph(int index) {
  if (index < 0 || static_cast<size_t>(index) >= subgraphs_.size())
    return InvalidArgument("no subgraph " + std::to_string(index));
  cancel_.store(false);
  return subgraphs_[index]->Invoke();
}

Status Interpreter::BindInput(int i, void* data, size_t bytes) {
  if (i < 0 || i >= num_inputs()) return InvalidArgument("BindInput: no input " + std::to_string(i));
  return subgraphs_[0]->BindTensor(subgraphs_[0]->input_tensor_index(i), data, bytes);
}

Status Interpreter::BindOutput(int i, void* data, size_t bytes) {
  if (i < 0 || i >= num_outputs()) return InvalidArgument("BindOutput: no output " + std::to_string(i));
  return subgraphs_[0]->BindTensor(subgraphs_[0]->output_tensor_index(i), data, bytes);
}

std::vector<std::string> Interpreter::SignatureKeys() const {
  std::vector<std::string> keys;
  for (const auto& s : model_->graph().signatures) keys.push_back(s.signature_key);
  return keys;
}

Expected<SubgraphExec*> Interpreter::Signature(const std::string& key) {
  for (const auto& s : model_->graph().signatures)
    if (s.signature_key == key) return subgraphs_.at(s.subgraph_index).get();
  std::string known;
  for (const auto& k : SignatureKeys()) known += (known.empty() ? "" : ", ") + k;
  return NotFound("no signature '" + key + "' (model has: " + (known.empty() ? "none" : known) + ")");
}

void Interpreter::ResetVariables() {
  for (auto& sg : subgraphs_) sg->ResetVariables();
}

size_t Interpreter::arena_bytes() const {
  // The subgraphs' arenas and the kernels' per-thread scratch (ThreadPool::ReserveSlotScratch;
  // its gaps are address space only, never touched).
  size_t n = pool_->slot_scratch_bytes() * static_cast<size_t>(pool_->pool_threads());
  for (const auto& sg : subgraphs_) n += sg->arena_bytes();
  return n;
}
size_t Interpreter::packed_weight_bytes() const {
  size_t n = 0;
  for (const auto& sg : subgraphs_) n += sg->packed_weight_bytes();
  return n;
}
size_t Interpreter::persistent_bytes() const {
  size_t n = 0;
  for (const auto& sg : subgraphs_) n += sg->persistent_bytes();
  return n;
}
std::vector<OpInfo> Interpreter::ops() const { return subgraphs_[0]->ops(); }
int Interpreter::num_threads() const { return pool_->pool_threads(); }
void Interpreter::EnableProfiling(bool on) { subgraphs_[0]->EnableProfiling(on); }
const std::vector<OpTiming>& Interpreter::last_profile() const { return subgraphs_[0]->last_profile(); }

// ---------------------------------------------------------------------------------------------
// SubgraphExec

SubgraphExec::SubgraphExec(Interpreter* owner, int index) : owner_(owner), index_(index) {}
SubgraphExec::~SubgraphExec() = default;

const Subgraph& SubgraphExec::sg() const { return owner_->model_->graph().subgraphs[index_]; }
ThreadPool& SubgraphExec::threads() { return *owner_->pool_; }
PackedWeightCache* SubgraphExec::packed_cache() { return owner_->model_->packed_cache(); }
ResourceStore& SubgraphExec::resources() { return owner_->resources_; }

std::string SubgraphExec::OpLabel(int node) const {
  const Node& n = nodes_[node];
  const int op_index = n.op_index;
  return "subgraph " + std::to_string(index_) + " op " + std::to_string(op_index) + " (" + n.op->type_name() + ")";
}

Status SubgraphExec::Init() {
  const Graph& g = owner_->model_->graph();
  const Subgraph& s = sg();
  // Kernel creation and fusion ask for tensors' producers (IsConstantOrFoldable): from an index.
  const ScopedProducerIndex producers(s);
  tensors_.resize(s.tensors.size());
  dynamic_.assign(s.tensors.size(), 0);
  for (size_t i = 0; i < s.tensors.size(); ++i) {
    const Tensor& t = s.tensors[i];
    RtTensor& r = tensors_[i];
    r.def = &t;
    r.type = t.type;
    r.shape = t.shape;
    r.quant = t.quant ? &*t.quant : nullptr;
    if (t.is_variable) {
      r.alloc = Allocation::kPersistent;
    } else if (g.IsConstant(t)) {
      auto bytes = g.TensorData(t);
      r.alloc = Allocation::kConstant;
      r.data = const_cast<uint8_t*>(bytes.data());  // kernels never write constants
      r.bytes = bytes.size();
    } else if (t.type == DType::kString) {
      dynamic_[i] = 1;
    }
  }
  ResetVariables();

  // Delegates claim ops first; runs of consecutive claimed ops become partitions.
  std::vector<int> claimed_by(s.ops.size(), -1);
  for (size_t d = 0; d < owner_->options_.delegates.size(); ++d) {
    auto& del = owner_->options_.delegates[d];
    for (int op : del->SupportedOps(g, index_))
      if (op >= 0 && static_cast<size_t>(op) < s.ops.size() && claimed_by[op] < 0) claimed_by[op] = static_cast<int>(d);
  }

  const OpRegistry* app = owner_->options_.op_resolver.get();
  for (size_t i = 0; i < s.ops.size();) {
    if (claimed_by[i] >= 0) {
      const int d = claimed_by[i];
      size_t end = i;
      while (end < s.ops.size() && claimed_by[end] == d) ++end;
      std::vector<int> run;
      for (size_t k = i; k < end; ++k) run.push_back(static_cast<int>(k));
      // Partition inputs: read but not produced inside; outputs: produced inside and read after.
      std::vector<char> produced(s.tensors.size(), 0);
      auto part = std::make_unique<Operator>();
      part->code = tflite::BuiltinOperator_CUSTOM;
      part->custom_code = "DELEGATE:" + owner_->options_.delegates[d]->name();
      for (int k : run) {
        for (int32_t t : s.ops[k].inputs)
          if (t >= 0 && !produced[t] && std::find(part->inputs.begin(), part->inputs.end(), t) == part->inputs.end())
            part->inputs.push_back(t);
        for (int32_t t : s.ops[k].outputs) produced[t] = 1;
      }
      for (int k : run)
        for (int32_t t : s.ops[k].outputs) {
          bool used_after = std::find(s.outputs.begin(), s.outputs.end(), t) != s.outputs.end();
          for (size_t j = end; j < s.ops.size() && !used_after; ++j)
            used_after = std::find(s.ops[j].inputs.begin(), s.ops[j].inputs.end(), t) != s.ops[j].inputs.end();
          if (used_after) part->outputs.push_back(t);
        }
      auto kernel = owner_->options_.delegates[d]->CreatePartitionKernel(g, index_, run, *part);
      if (!kernel.ok())
        return kernel.status().WithContext("subgraph " + std::to_string(index_) + " ops " + std::to_string(i) + ".." +
                                           std::to_string(end - 1) + " (delegate " +
                                           owner_->options_.delegates[d]->name() + ")");
      Node node;
      node.op = part.get();
      node.partition_op = std::move(part);
      node.partition_ops = run;
      node.kernel = std::move(*kernel);
      node.backend = owner_->options_.delegates[d]->name();
      node.op_index = static_cast<int>(i);
      nodes_.push_back(std::move(node));
      i = end;
      continue;
    }
    if (size_t taken = TryFuse(i, claimed_by)) {
      i += taken;
      continue;
    }
    const Operator& op = s.ops[i];
    auto kernel = CreateOpKernel(g, s, index_, i, app, owner_->options_);
    if (!kernel.ok()) return kernel.status();
    Node node;
    node.op = &op;
    node.op_index = static_cast<int>(i);
    node.kernel = std::move(*kernel);
    nodes_.push_back(std::move(node));
    ++i;
  }
  return Status::Ok();
}

size_t SubgraphExec::TryFuse(size_t i, const std::vector<int>& claimed_by) {
  const InterpreterOptions& o = owner_->options_;
  const OpRegistry& builtin = OpRegistry::Builtin();
  if (!o.fuse_ops || o.reference_kernels_only || o.preserve_all_tensors || builtin.fusions().empty()) return 0;
  const Graph& g = owner_->model_->graph();
  const Subgraph& s = sg();
  const OpRegistry* app = o.op_resolver.get();
  KernelCreateContext cc{g, s, index_, s.ops[i], static_cast<int>(i), *o.cpu, o.reference_kernels_only};
  const bool threaded = owner_->num_threads() > 1;
  const FusionLimits limits{threaded ? o.fuse_min_inner_bytes_threaded : o.fuse_min_inner_bytes,
                            threaded ? std::min(o.fuse_min_inner_bytes_threaded, o.fuse_min_inner_bytes_int8)
                                     : o.fuse_min_inner_bytes_int8};
  for (FusionMatcher match : builtin.fusions()) {
    FusedRun run = match(cc, limits);
    if (run.num_ops < 2 || i + run.num_ops > s.ops.size() || !run.kernel || !run.op) continue;
    // The run's own ops, and constant ops inside its range that run before it (FusedRun::ops).
    std::vector<int> own = run.ops;
    if (own.empty())
      for (size_t k = i; k < i + run.num_ops; ++k) own.push_back(static_cast<int>(k));
    if (own.front() != static_cast<int>(i) || own.back() != static_cast<int>(i + run.num_ops - 1) ||
        !std::is_sorted(own.begin(), own.end()) || std::adjacent_find(own.begin(), own.end()) != own.end())
      continue;
    std::vector<int> hoisted;
    for (size_t k = i, next = 0; k < i + run.num_ops; ++k) {
      if (own[next] == static_cast<int>(k)) {
        ++next;
      } else {
        hoisted.push_back(static_cast<int>(k));
      }
    }
    // Ops a delegate claimed or the application overrides are not fused; hoisted ops only compute
    // constants.
    bool free = true;
    for (int k : own) free = free && claimed_by[k] < 0 && !(app && app->Find(s.ops[k]));
    for (int k : hoisted) free = free && claimed_by[k] < 0 && IsConstantOp(g, s, k);
    if (!free) continue;
    std::vector<Node> before;
    for (int k : hoisted) {
      auto kernel = CreateOpKernel(g, s, index_, static_cast<size_t>(k), app, o);
      if (!kernel.ok()) break;  // left to the op-by-op path, which reports it
      Node h;
      h.op = &s.ops[k];
      h.op_index = k;
      h.kernel = std::move(*kernel);
      before.push_back(std::move(h));
    }
    if (before.size() != hoisted.size()) continue;
    for (Node& h : before) nodes_.push_back(std::move(h));
    Node node;
    node.op = run.op.get();
    node.partition_op = std::move(run.op);
    node.partition_ops = own;
    node.fused = true;
    node.kernel = std::move(run.kernel);
    node.op_index = static_cast<int>(i);
    nodes_.push_back(std::move(node));
    return static_cast<size_t>(run.num_ops);
  }
  return 0;
}

void SubgraphExec::ResetVariables() {
  const Graph& g = owner_->model_->graph();
  for (size_t i = 0; i < tensors_.size(); ++i) {
    RtTensor& r = tensors_[i];
    if (r.alloc != Allocation::kPersistent || !r.def || !r.def->is_variable) continue;
    size_t bytes = TensorBytes(r.type, r.shape);
    // As LiteRT's ResetVariableTensor: int8 state starts at its zero point (real 0), other
    // types at 0 bytes, unless the model gives initial data.
    const uint8_t fill = r.type == DType::kInt8 ? static_cast<uint8_t>(r.zero_point()) : 0;
    r.owned.assign(bytes, fill);
    auto init = g.TensorData(*r.def);
    if (init.size() == bytes) std::memcpy(r.owned.data(), init.data(), bytes);
    r.data = r.owned.data();
    r.bytes = bytes;
  }
}

int SubgraphExec::FindInput(const std::string& name) const {
  for (const auto& sig : owner_->model_->graph().signatures) {
    if (static_cast<int>(sig.subgraph_index) != index_) continue;
    for (const auto& m : sig.inputs)
      if (m.name == name)
        for (int i = 0; i < num_inputs(); ++i)
          if (sg().inputs[i] == static_cast<int32_t>(m.tensor_index)) return i;
  }
  for (int i = 0; i < num_inputs(); ++i)
    if (sg().tensors[sg().inputs[i]].name == name) return i;
  return -1;
}

int SubgraphExec::FindOutput(const std::string& name) const {
  for (const auto& sig : owner_->model_->graph().signatures) {
    if (static_cast<int>(sig.subgraph_index) != index_) continue;
    for (const auto& m : sig.outputs)
      if (m.name == name)
        for (int i = 0; i < num_outputs(); ++i)
          if (sg().outputs[i] == static_cast<int32_t>(m.tensor_index)) return i;
  }
  for (int i = 0; i < num_outputs(); ++i)
    if (sg().tensors[sg().outputs[i]].name == name) return i;
  return -1;
}

Status SubgraphExec::ResizeInput(int i, const Shape& shape) {
  if (i < 0 || i >= num_inputs()) return InvalidArgument("ResizeInput: no input " + std::to_string(i));
  RtTensor& t = *input(i);
  const std::string label = "input " + std::to_string(i) + " '" + t.name() + "'";
  for (int32_t d : shape)
    if (d < 0) return InvalidArgument(label + ": negative dimension in " + ShapeToString(shape));
  // Only dimensions the model marks dynamic (-1 in shape_signature) may change, as in LiteRT.
  const auto& sig = t.def->shape_signature;
  if (shape != t.shape) {
    bool ok = shape.size() == t.def->shape.size();
    for (size_t k = 0; ok && k < shape.size(); ++k)
      ok = shape[k] == t.def->shape[k] || sig.empty() || sig[k] == -1;
    if (!ok && !sig.empty())
      return InvalidArgument(label + ": cannot resize from " + ShapeToString(t.shape) + " to " + ShapeToString(shape) +
                             " (the model fixes the shape to " + ShapeToString(sig) + ", -1 marks resizable dims)");
    t.shape = shape;
    allocated_ = false;
  }
  return Status::Ok();
}

Status SubgraphExec::BindTensor(int32_t index, void* data, size_t bytes) {
  RtTensor& t = tensors_[index];
  if (data == nullptr) {
    if (t.alloc == Allocation::kUser) {
      t.alloc = Allocation::kNone;
      t.data = nullptr;
      allocated_ = false;
    }
    return Status::Ok();
  }
  if (t.alloc == Allocation::kConstant || t.alloc == Allocation::kPersistent)
    return InvalidArgument("tensor '" + t.name() + "' is constant or variable and cannot be bound");
  if (t.type == DType::kString) return InvalidArgument("tensor '" + t.name() + "': string tensors cannot be bound");
  const size_t need = TensorBytes(t.type, t.shape);
  if (bytes < need)
    return InvalidArgument("tensor '" + t.name() + "' " + ShapeToString(t.shape) + " " + std::string(DTypeName(t.type)) +
                           " needs " + std::to_string(need) + " bytes; the bound buffer has " + std::to_string(bytes));
  const bool was_user = t.alloc == Allocation::kUser;
  t.alloc = Allocation::kUser;
  t.data = static_cast<uint8_t*>(data);
  t.bytes = bytes;
  if (!was_user) allocated_ = false;  // the plan no longer needs arena space for it
  return Status::Ok();
}

bool SubgraphExec::NodeHasDynamicInput(const Node& node) const {
  for (int32_t t : node.op->inputs)
    if (t >= 0 && dynamic_[t]) return true;
  return false;
}

KernelContext SubgraphExec::ContextFor(size_t n) {
  return KernelContext(this, &owner_->model_->graph(), nodes_[n].op, static_cast<int>(n), nodes_[n].op_index);
}

Status SubgraphExec::PrepareNode(size_t n) {
  Node& node = nodes_[n];
  node.scratch.clear();
  KernelContext ctx = ContextFor(n);
  current_node_ = static_cast<int>(n);
  Status st = node.kernel->Prepare(ctx);
  current_node_ = -1;
  if (!st.ok()) return st.WithContext(OpLabel(static_cast<int>(n)));
  return Status::Ok();
}

Status SubgraphExec::PrepareAll() {
  // Every node counts as run until MarkUnreadNodes decides again at the end: readers that an
  // earlier Prepare found unread keep what they read (FoldedAndUnread) meanwhile.
  for (Node& node : nodes_) node.unread = false;
  // Dynamic flags are recomputed: only strings stay dynamic from the start.
  for (size_t i = 0; i < tensors_.size(); ++i) {
    dynamic_[i] = tensors_[i].type == DType::kString && tensors_[i].alloc != Allocation::kConstant;
    if (tensors_[i].alloc == Allocation::kDynamic && !dynamic_[i]) {
      tensors_[i].alloc = Allocation::kNone;
      tensors_[i].owned.clear();
      tensors_[i].owned.shrink_to_fit();
      tensors_[i].data = nullptr;
    }
  }
  // The last node reading each tensor (a tensor no node reads: its producer). Once that node is
  // prepared, a tensor folded at init that no node reads at invoke is freed, so that init never
  // holds every folded layer beside its packed copy.
  std::vector<int> last_use(tensors_.size(), -1);
  for (size_t n = 0; n < nodes_.size(); ++n)
    ForEachNodeInput(nodes_[n], [&](int32_t t, int) { last_use[t] = static_cast<int>(n); });
  for (size_t n = 0; n < nodes_.size(); ++n)
    for (int32_t t : nodes_[n].op->outputs)
      if (t >= 0 && last_use[t] < 0) last_use[t] = static_cast<int>(n);
  const bool release = !owner_->options_.preserve_all_tensors;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    Node& node = nodes_[n];
    node.folded = false;
    node.reprepare_at_invoke = NodeHasDynamicInput(node);
    if (node.reprepare_at_invoke) {
      // Shapes are known only once the producer ran: prepare at invoke time.
      for (int32_t t : node.op->outputs) dynamic_[t] = 1;
      continue;
    }
    RETURN_IF_ERROR(PrepareNode(n));
    // Folding right after preparing (not after preparing every op) lets the ops that read the
    // result see it as constant data in their Prepare: weights made by DENSIFY or DEQUANTIZE
    // of constants can be inspected and packed there.
    RETURN_IF_ERROR(FoldNode(n));
    if (release) {
      const auto free_if_done = [&](int32_t t) {
        if (t >= 0 && last_use[t] == static_cast<int>(n) && FoldedAndUnread(t)) FreeFolded(t);
      };
      ForEachNodeInput(node, [&](int32_t t, int) { free_if_done(t); });
      for (int32_t t : node.op->outputs) free_if_done(t);
    }
  }
  MarkUnreadNodes();
  return Status::Ok();
}

Status SubgraphExec::FoldNode(size_t n) {
  if (!owner_->options_.fold_constants) return Status::Ok();
  Node& node = nodes_[n];
  if (!node.partition_ops.empty() || node.reprepare_at_invoke || !MayFold(*node.op)) return Status::Ok();
  bool all_const = !node.op->inputs.empty();
  for (int32_t t : node.op->inputs)
    if (t >= 0 && tensors_[t].alloc != Allocation::kConstant) all_const = false;
  if (!all_const) return Status::Ok();
  size_t total = 0;
  for (int32_t t : node.op->outputs) total += TensorBytes(tensors_[t].type, tensors_[t].shape);
  if (total > kMaxFoldedBytes) return Status::Ok();
  bool outputs_ok = true;
  for (int32_t t : node.op->outputs)
    if (dynamic_[t] || tensors_[t].alloc == Allocation::kUser || tensors_[t].type == DType::kString) outputs_ok = false;
  if (!outputs_ok) return Status::Ok();
  // Scratch for a folded op comes from the heap (it runs before the arena exists).
  for (auto& sr : node.scratch) sr.heap.resize(sr.bytes + kArenaAlignment);
  for (int32_t t : node.op->outputs) {
    RtTensor& r = tensors_[t];
    r.owned.assign(TensorBytes(r.type, r.shape), 0);
    r.data = r.owned.data();
    r.bytes = r.owned.size();
    r.alloc = Allocation::kPersistent;
  }
  KernelContext ctx = ContextFor(n);
  in_invoke_ = true;
  current_node_ = static_cast<int>(n);
  Status st = node.kernel->Invoke(ctx);
  current_node_ = -1;
  in_invoke_ = false;
  if (!st.ok()) return st.WithContext(OpLabel(static_cast<int>(n)));
  node.folded = true;
  // Downstream folding and Prepare treat these outputs as constants.
  for (int32_t t : node.op->outputs) tensors_[t].alloc = Allocation::kConstant;
  return Status::Ok();
}

template <typename Fn>
void SubgraphExec::ForEachNodeInput(const Node& node, Fn&& fn) const {
  for (int op : node.partition_ops)
    for (int32_t t : sg().ops[op].inputs)
      if (t >= 0) fn(t, -1);
  const auto& in = node.op->inputs;
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] >= 0) fn(in[i], static_cast<int>(i));
}

bool SubgraphExec::FoldedAndUnread(int32_t t) const {
  const RtTensor& r = tensors_[t];
  // Folded at init: constant now, not in the model.
  if (r.alloc != Allocation::kConstant || r.owned.empty() || owner_->model_->graph().IsConstant(*r.def)) return false;
  for (int32_t o : sg().outputs)
    if (o == t) return false;
  return !ReadAtInvoke(t);
}

SubgraphExec::Readers SubgraphExec::ReadersIndex() const {
  Readers readers(tensors_.size());
  const auto add = [&](int32_t u, int n) {
    if (u >= 0 && static_cast<size_t>(u) < readers.size() &&
        (readers[static_cast<size_t>(u)].empty() || readers[static_cast<size_t>(u)].back() != n))
      readers[static_cast<size_t>(u)].push_back(n);
  };
  for (size_t n = 0; n < nodes_.size(); ++n) {
    const Node& node = nodes_[n];
    if (node.fused && !node.reprepare_at_invoke) {
      for (int32_t u : node.op->inputs) add(u, static_cast<int>(n));
    } else {
      ForEachNodeInput(node, [&](int32_t u, int) { add(u, static_cast<int>(n)); });
    }
  }
  return readers;
}

bool SubgraphExec::ReadAtInvoke(int32_t t, int except, const Readers* readers) const {
  const auto reads = [&](size_t n) {
    const Node& node = nodes_[n];
    if (node.folded || node.unread || static_cast<int>(n) == except) return false;  // never run at invoke
    if (node.fused && !node.reprepare_at_invoke) {
      // A fused kernel reads the inputs of its synthetic op, and says which (its packed weights).
      const auto& in = node.op->inputs;
      for (size_t i = 0; i < in.size(); ++i)
        if (in[i] == t && node.kernel->ReadsInputAtInvoke(static_cast<int>(i))) return true;
      return false;
    }
    // A delegate partition may read whatever its ops read.
    const bool whole = !node.partition_ops.empty() || node.reprepare_at_invoke;
    bool read = false;
    ForEachNodeInput(node, [&](int32_t u, int i) {
      read = read || (u == t && (whole || node.kernel->ReadsInputAtInvoke(i)));
    });
    return read;
  };
  if (readers) {
    if (t < 0 || static_cast<size_t>(t) >= readers->size()) return false;
    for (int n : (*readers)[static_cast<size_t>(t)])
      if (reads(static_cast<size_t>(n))) return true;
    return false;
  }
  for (size_t n = 0; n < nodes_.size(); ++n)
    if (reads(n)) return true;
  return false;
}

void SubgraphExec::MarkUnreadNodes() {
  for (Node& node : nodes_) node.unread = false;
  if (owner_->options_.preserve_all_tensors) return;  // every intermediate is wanted
  for (const Node& node : nodes_)
    if (node.reprepare_at_invoke) return;  // readers prepared only at invoke: nothing is known yet
  // Ops that change only their outputs: built-in, no variable inputs, no subgraphs to run.
  const auto pure = [&](const Operator& op) {
    if (op.is_custom()) return false;
    switch (op.code) {
      case tflite::BuiltinOperator_WHILE:
      case tflite::BuiltinOperator_IF:
      case tflite::BuiltinOperator_CALL_ONCE:
      case tflite::BuiltinOperator_CALL:
      case tflite::BuiltinOperator_ASSIGN_VARIABLE:
      case tflite::BuiltinOperator_READ_VARIABLE:
      case tflite::BuiltinOperator_VAR_HANDLE:
        return false;
      default: break;
    }
    for (int32_t t : op.inputs)
      if (t >= 0 && tensors_[t].def && tensors_[t].def->is_variable) return false;
    return true;
  };
  // From the last node back, so that a producer whose only reader was found unread is too.
  const Readers readers = ReadersIndex();
  for (size_t k = nodes_.size(); k-- > 0;) {
    Node& node = nodes_[k];
    if (node.folded || node.fused || !node.partition_ops.empty() || node.op->outputs.empty() || !pure(*node.op))
      continue;
    bool needed = false;
    for (int32_t t : node.op->outputs) {
      if (t < 0) continue;
      for (int32_t o : sg().outputs) needed = needed || o == t;
      needed = needed || ReadAtInvoke(t, static_cast<int>(k), &readers);
    }
    node.unread = !needed;
  }
}

void SubgraphExec::FreeFolded(int32_t t) {
  RtTensor& r = tensors_[t];
  r.owned.clear();
  r.owned.shrink_to_fit();
  r.data = nullptr;
}

Status SubgraphExec::PlanMemory() {
  const Subgraph& s = sg();
  const int num_nodes = static_cast<int>(nodes_.size());
  std::vector<int> first(tensors_.size(), std::numeric_limits<int>::max());
  std::vector<int> last(tensors_.size(), -1);
  auto plannable = [&](int32_t t) {
    const RtTensor& r = tensors_[t];
    return !dynamic_[t] && r.alloc != Allocation::kConstant && r.alloc != Allocation::kPersistent &&
           r.alloc != Allocation::kUser;
  };
  for (int32_t t : s.inputs) {
    first[t] = -1;
    last[t] = num_nodes;
  }
  for (int32_t t : s.outputs) last[t] = num_nodes;
  for (int n = 0; n < num_nodes; ++n) {
    if (nodes_[n].folded) continue;
    for (int32_t t : nodes_[n].op->inputs)
      if (t >= 0) {
        first[t] = std::min(first[t], n);
        last[t] = std::max(last[t], n);
      }
    for (int32_t t : nodes_[n].op->outputs) {
      first[t] = std::min(first[t], n);
      last[t] = std::max(last[t], n);
    }
    for (int32_t t : nodes_[n].op->intermediates) {
      first[t] = std::min(first[t], n);
      last[t] = std::max(last[t], n);
    }
  }
  if (owner_->options_.preserve_all_tensors) {
    for (size_t t = 0; t < tensors_.size(); ++t)
      if (last[t] >= 0) {
        first[t] = -1;
        last[t] = num_nodes;
      }
  }
  // Shape-only ops (RESHAPE...) let their output share the input's memory: one planned buffer
  // covering both lifetimes. alias[t] is the tensor whose buffer t uses.
  std::vector<int32_t> alias(tensors_.size());
  for (size_t t = 0; t < tensors_.size(); ++t) alias[t] = static_cast<int32_t>(t);
  auto root = [&](int32_t t) {
    while (alias[t] != t) t = alias[t];
    return t;
  };
  for (int n = 0; n < num_nodes; ++n) {
    const Node& node = nodes_[n];
    if (node.folded || !node.kernel->OutputMayAliasInput() || node.op->inputs.empty() || node.op->outputs.empty()) continue;
    const int32_t in = node.op->inputs[0], out = node.op->outputs[0];
    if (in < 0 || !plannable(in) || !plannable(out) || last[in] < 0) continue;
    if (TensorBytes(tensors_[in].type, tensors_[in].shape) != TensorBytes(tensors_[out].type, tensors_[out].shape)) continue;
    const int32_t r = root(in);
    alias[out] = r;
    first[r] = std::min(first[r], first[out]);
    last[r] = std::max(last[r], last[out]);
  }
  std::vector<PlanItem> items;
  std::vector<int32_t> item_tensor;
  for (size_t t = 0; t < tensors_.size(); ++t) {
    if (!plannable(static_cast<int32_t>(t)) || last[t] < 0 || alias[t] != static_cast<int32_t>(t)) continue;
    size_t bytes = TensorBytes(tensors_[t].type, tensors_[t].shape);
    items.push_back({std::max(first[t], -1), last[t], bytes});
    item_tensor.push_back(static_cast<int32_t>(t));
  }
  const size_t num_tensor_items = items.size();
  for (int n = 0; n < num_nodes; ++n)
    for (auto& sr : nodes_[n].scratch) {
      items.push_back({n, n, sr.bytes});
      sr.planned = true;
    }
  std::vector<size_t> offsets;
  arena_size_ = PlanArena(items, kArenaAlignment, &offsets);
  if (arena_storage_.size() < arena_size_ + kArenaAlignment) {
    arena_storage_.clear();
    arena_storage_.shrink_to_fit();
    arena_storage_.resize(arena_size_ + kArenaAlignment);
  }
  auto base = reinterpret_cast<uintptr_t>(arena_storage_.data());
  arena_ = reinterpret_cast<uint8_t*>((base + kArenaAlignment - 1) & ~(uintptr_t)(kArenaAlignment - 1));
  tensor_offsets_.assign(tensors_.size(), kNotPlanned);
  for (size_t k = 0; k < num_tensor_items; ++k) {
    RtTensor& r = tensors_[item_tensor[k]];
    tensor_offsets_[item_tensor[k]] = offsets[k];
    r.alloc = Allocation::kArena;
    r.data = arena_ + offsets[k];
    r.bytes = items[k].bytes;
  }
  for (size_t t = 0; t < tensors_.size(); ++t) {
    const int32_t r = root(static_cast<int32_t>(t));
    if (r == static_cast<int32_t>(t) || tensor_offsets_[r] == kNotPlanned) continue;
    RtTensor& a = tensors_[t];
    tensor_offsets_[t] = tensor_offsets_[r];
    a.alloc = Allocation::kArena;
    a.data = arena_ + tensor_offsets_[r];
    a.bytes = tensors_[r].bytes;
  }
  size_t k = num_tensor_items;
  for (int n = 0; n < num_nodes; ++n)
    for (auto& sr : nodes_[n].scratch) sr.offset = offsets[k++];
  // Bound user buffers must still be large enough after a resize.
  for (size_t t = 0; t < tensors_.size(); ++t) {
    const RtTensor& r = tensors_[t];
    if (r.alloc == Allocation::kUser && r.bytes < TensorBytes(r.type, r.shape))
      return InvalidArgument("tensor '" + r.name() + "' now needs " + std::to_string(TensorBytes(r.type, r.shape)) +
                             " bytes but its bound buffer has " + std::to_string(r.bytes));
  }
  return Status::Ok();
}

Status SubgraphExec::AllocateTensors() {
  // Reset folded constants back to "not allocated" so a re-plan recomputes them.
  const Graph& g = owner_->model_->graph();
  for (size_t i = 0; i < tensors_.size(); ++i) {
    RtTensor& r = tensors_[i];
    if ((r.alloc == Allocation::kConstant && !g.IsConstant(*r.def)) || r.alloc == Allocation::kArena) {
      r.alloc = Allocation::kNone;
      r.owned.clear();
      r.data = nullptr;
    }
    if (r.alloc != Allocation::kConstant && r.alloc != Allocation::kPersistent && r.alloc != Allocation::kUser &&
        r.alloc != Allocation::kDynamic)
      r.bytes = TensorBytes(r.type, r.shape);
  }
  allocated_ = false;
  allocating_ = true;
  Status st = PrepareAll();  // prepares and folds
  if (st.ok()) st = PlanMemory();
  allocating_ = false;
  RETURN_IF_ERROR(st);
  allocated_ = true;
  RestartThreadTuning();  // new shapes: new op times
  return Status::Ok();
}

// Thread tuning. Invokes are counted from the (re)start. The first runs cold and is not timed;
// the next kTuneSplitOnly time every node split across the threads, and the nodes whose fastest
// split time is under kTuneCandidateNs become candidates (large ops are never: their split time
// pays the fork and join many times over, and a wrong choice there would cost the most). Then
// timed invokes alternate between each candidate's current mode and the other one (alone or
// split): kTuneSamples pairs at first, and from then on one pair in every kTunePeriod invokes,
// the others untimed. After each pair a candidate runs alone if the fastest of its last
// kTuneSamples times alone was clearly (kTuneMargin) below the fastest of its last times split.
// Keeping at it matters on shared machines: on a 2-vCPU VM the cost of handing work to the other
// vCPU moved between runs (core-to-core round trips of 100-580 ns), and ResNet-8 int8 at 2
// threads took 0.054 or 0.112 ms depending on it; a choice made once at start-up was 1.11x slower
// once the host changed. Tuned, the slow state took 0.076 ms (one thread: 0.075-0.079 ms), and
// in the fast state the tuned interpreter ran within noise of splitting every op (vww_96 int8
// 0.98-1.0x, MobileNetV2 int8 / float 0.99-1.01x; in-process A/B, alternated invokes).
// Per-op choices miss what an op split costs the ops around it: its output is then half in the
// other core's cache, and an op after it that runs alone reads it from there (ResNet-8 int8 at 2
// threads, host in its slow state: ADD alone 4.0 us after a split convolution, 1.7 us at one
// thread; the model 0.048-0.060 ms against 0.038-0.040 ms on one thread). So a whole invoke whose
// fastest split time is under kTuneWholeNs is also timed with every op alone, in kTuneSamples
// pairs after the per-op ones and then once in every kTunePeriod invokes, and runs that way
// (all_serial_) while it is faster (kTuneWholeMargin) than the per-op choices. Not only small
// models: MediaPipe's face detectors (1.7 ms, small feature maps, many ADD / PAD / RELU) ran at 2
// threads 0.83x as fast as at 1 on this VM. Where every op alone is far slower (kTuneFarSlower:
// MobileNets, 1.6-1.9x), that trial costs the most and tells the least, so it runs in one
// period out of whole_every_, doubled after each such trial up to kTuneWholeMaxEvery.
namespace {
constexpr int kTuneSplitOnly = 2;
constexpr int kTuneSamples = 3;
constexpr int kTunePeriod = 32;
constexpr double kTuneCandidateNs = 50'000.0;
constexpr double kTuneWholeNs = 30'000'000.0;
constexpr uint64_t kTuneMargin = 8;      // alone must take under 1 - 1/8 of the split time
// Every op alone against the per-op choices: both sides are whole invokes, the best of
// kTuneSamples each, and no data is left in the other core's cache by either, so a narrower
// margin than an op's. With 1/8 a 2-thread invoke 1.10-1.12x slower than one thread kept its
// split ops (in-process A/B at 2 threads, 1/32 against 1/8: blazeface 0.954x, ResNet-8 float
// 0.937x, face_detection_short_range 0.973x; MobileNetV2 int8, vww_96 int8, kws, ResNet-8 int8,
// face_landmark, face_detection_full_range, vww_96 float within noise, 0.988-1.002x).
constexpr uint64_t kTuneWholeMargin = 32;
constexpr uint64_t kTuneFarSlower = 4;   // every op alone over 1 + 1/4 of the per-op choices' time
constexpr int64_t kTuneWholeMaxEvery = 16;
}  // namespace

void SubgraphExec::RestartThreadTuning() {
  for (Node& node : nodes_) node.serial = node.tune_candidate = false;
  tuning_ = owner_->options_.tune_op_threads && owner_->pool_->pool_threads() > 1 && !nodes_.empty();
  tune_invoke_ = 0;
  whole_candidate_ = all_serial_ = false;
  whole_every_ = 1;
  if (!tuning_) return;
  tune_tsc_ = TickClock::UsesTsc();
  tune_samples_.assign(nodes_.size() * 2 * kTuneSamples, UINT64_MAX);
  whole_samples_.assign(2 * kTuneSamples, UINT64_MAX);
}

SubgraphExec::TuneStep SubgraphExec::ThreadTuneStep() const {
  if (!tuning_ || tune_invoke_ == 0) return {};
  if (tune_invoke_ <= kTuneSplitOnly) return {true, false, false};
  const int64_t k = tune_invoke_ - kTuneSplitOnly - 1;
  if (k < 2 * kTuneSamples) return {true, k % 2 == 1, false};
  // Whole-invoke pairs (only for whole candidates; the first invoke of each pair in the current
  // mode, the second in the other).
  const int64_t w = whole_candidate_ ? 2 * kTuneSamples : 0;
  if (k < 2 * kTuneSamples + w) return {true, false, k % 2 == 1};
  const int64_t j = (k - 2 * kTuneSamples - w) % kTunePeriod, period = (k - 2 * kTuneSamples - w) / kTunePeriod;
  const bool whole = whole_candidate_ && j == 2 && period % whole_every_ == 0;
  return {j < 2 || whole, j == 1, whole};
}

void SubgraphExec::RecordTuneSample(size_t n, bool alone, uint64_t ticks) {
  uint64_t* s = &tune_samples_[(n * 2 + (alone ? 1 : 0)) * kTuneSamples];
  for (int i = 0; i + 1 < kTuneSamples; ++i) s[i] = s[i + 1];
  s[kTuneSamples - 1] = ticks;
}

uint64_t SubgraphExec::BestTuneSample(size_t n, bool alone) const {
  const uint64_t* s = &tune_samples_[(n * 2 + (alone ? 1 : 0)) * kTuneSamples];
  return *std::min_element(s, s + kTuneSamples);
}

void SubgraphExec::RecordWholeSample(bool alone, uint64_t ticks) {
  uint64_t* s = &whole_samples_[(alone ? 1 : 0) * kTuneSamples];
  for (int i = 0; i + 1 < kTuneSamples; ++i) s[i] = s[i + 1];
  s[kTuneSamples - 1] = ticks;
}

uint64_t SubgraphExec::BestWholeSample(bool alone) const {
  const uint64_t* s = &whole_samples_[(alone ? 1 : 0) * kTuneSamples];
  return *std::min_element(s, s + kTuneSamples);
}

void SubgraphExec::TuneThreads(const TuneStep& step) {
  ++tune_invoke_;
  if (tune_invoke_ == 1 + kTuneSplitOnly) {
    bool any = false;
    for (size_t n = 0; n < nodes_.size(); ++n) {
      Node& node = nodes_[n];
      const uint64_t split = BestTuneSample(n, false);
      node.tune_candidate = !node.folded && !node.unread && split != UINT64_MAX && TickClock::ToNs(split) < kTuneCandidateNs;
      any = any || node.tune_candidate;
    }
    // With one node to run, its own trials are the whole invoke's (a WHILE's body tunes itself).
    size_t running = 0;
    for (const Node& node : nodes_) running += node.folded || node.unread ? 0 : 1;
    const uint64_t whole = BestWholeSample(false);
    whole_candidate_ = running > 1 && whole != UINT64_MAX && TickClock::ToNs(whole) < kTuneWholeNs;
    if (!any && !whole_candidate_) tuning_ = false;  // nothing small: every op stays split
  } else if (step.whole_flipped) {
    const uint64_t alone = BestWholeSample(true), chosen = BestWholeSample(false);
    all_serial_ = alone != UINT64_MAX && chosen != UINT64_MAX && alone < chosen - chosen / kTuneWholeMargin;
    const bool far_slower = !all_serial_ && alone != UINT64_MAX && chosen != UINT64_MAX &&
                            alone > chosen + chosen / kTuneFarSlower;
    // Doubled only once the first pairs are in (the period trials), so that a slow start cannot
    // put the trials far apart.
    if (tune_invoke_ > kTuneSplitOnly + 4 * kTuneSamples + 1)
      whole_every_ = far_slower ? std::min(2 * whole_every_, kTuneWholeMaxEvery) : 1;
  } else if (step.flipped) {
    for (size_t n = 0; n < nodes_.size(); ++n) {
      Node& node = nodes_[n];
      // Alone must win clearly: an op run alone also moves the data the next op's other
      // threads read into this core's cache, which its own time does not show.
      if (node.tune_candidate) {
        const uint64_t alone = BestTuneSample(n, true), split = BestTuneSample(n, false);
        node.serial = alone != UINT64_MAX && alone < split - split / kTuneMargin;
      }
    }
  }
}

Status SubgraphExec::SetTensorShape(int32_t index, Shape shape, bool during_invoke) {
  RtTensor& r = tensors_[index];
  for (int32_t d : shape)
    if (d < 0) return Internal("tensor '" + r.name() + "': negative output dimension in " + ShapeToString(shape));
  if (!during_invoke) {
    r.shape = std::move(shape);
    if (r.alloc != Allocation::kUser && r.alloc != Allocation::kConstant && r.alloc != Allocation::kPersistent)
      r.bytes = TensorBytes(r.type, r.shape);
    return Status::Ok();
  }
  const size_t need = r.type == DType::kString ? 0 : TensorBytes(r.type, shape);
  r.shape = std::move(shape);
  if (r.alloc == Allocation::kUser) {
    if (r.bytes < need)
      return InvalidArgument("output '" + r.name() + "' grew to " + ShapeToString(r.shape) + " (" + std::to_string(need) +
                             " bytes), larger than its bound buffer");
    return Status::Ok();
  }
  if (r.alloc == Allocation::kArena && need <= r.bytes) {
    r.bytes = need;
    return Status::Ok();
  }
  if (r.alloc == Allocation::kPersistent) {
    r.owned.resize(need);
    r.data = r.owned.data();
    r.bytes = need;
    return Status::Ok();
  }
  // Heap storage for tensors whose size is known only now.
  if (r.owned.size() < need || r.alloc != Allocation::kDynamic) r.owned.resize(std::max<size_t>(need, 1));
  r.alloc = Allocation::kDynamic;
  r.data = r.owned.data();
  r.bytes = need;
  dynamic_[index] = 1;
  return Status::Ok();
}

void SubgraphExec::MarkDynamic(int32_t index) { dynamic_[index] = 1; }

int SubgraphExec::RequestScratch(int node, size_t bytes) {
  auto& list = nodes_[node].scratch;
  Node::ScratchReq req;
  req.bytes = bytes;
  if (in_invoke_) req.heap.resize(bytes + kArenaAlignment);
  list.push_back(std::move(req));
  return static_cast<int>(list.size() - 1);
}

void* SubgraphExec::Scratch(int node, int id) {
  auto& req = nodes_[node].scratch.at(id);
  if (!req.heap.empty()) {
    auto p = reinterpret_cast<uintptr_t>(req.heap.data());
    return reinterpret_cast<void*>((p + kArenaAlignment - 1) & ~(uintptr_t)(kArenaAlignment - 1));
  }
  return arena_ + req.offset;
}

void SubgraphExec::EnableProfiling(bool on) {
  profiling_ = on;
  // Sized here, once, so that a profiled invoke allocates nothing (the node list is fixed at Init).
  if (on) {
    prof_ticks_.resize(nodes_.size() + 1);
    prof_nodes_.resize(nodes_.size());
    prof_tsc_ = TickClock::UsesTsc();
  }
}

const std::vector<OpTiming>& SubgraphExec::last_profile() const {
  if (profile_stale_) {
    profile_.resize(prof_recorded_);
    const TickClock::Converter to_ns = TickClock::Conversion();
    for (size_t k = 0; k < prof_recorded_; ++k)
      profile_[k] = {nodes_[prof_nodes_[k]].op_index, to_ns.ToSteadyNs(prof_ticks_[k]), to_ns.ToSteadyNs(prof_ticks_[k + 1])};
    profile_stale_ = false;
  }
  return profile_;
}

Status SubgraphExec::RunNodes() {
  const bool profiling = profiling_;
  size_t recorded = 0;
  if (profiling) prof_recorded_ = 0;
  if (!allocated_) [[unlikely]] {
    RETURN_IF_ERROR(AllocateTensors());
  }
  for (int32_t t : sg().inputs) {
    const RtTensor& r = tensors_[t];
    if (!r.data && r.num_elements() > 0) [[unlikely]]
      return Internal("input '" + r.name() + "' has no storage");
  }
  in_invoke_ = true;
  Status result;
  const size_t num_nodes = nodes_.size();
  // Thread tuning (TuneThreads): whether this invoke is timed, and whether its candidates run
  // in the mode they do not run in now.
  const TuneStep tune = ThreadTuneStep();
  ThreadPool& pool = *owner_->pool_;
  // An op of a subgraph called by an op that runs alone runs alone too, and so does every op of
  // an invoke in the whole-invoke mode (all_serial_, or its trial).
  const bool outer_serial = pool.serial();
  const bool whole_alone = all_serial_ != tune.whole_flipped;
  // Per-op samples only from invokes in the per-op mode; invoke times from those and from the
  // whole-invoke trials (not from the per-op trials).
  const bool per_op_timed = tune.timed && !whole_alone;
  const bool whole_timed = tune.timed && !tune.flipped;
  const uint64_t invoke_t0 = whole_timed ? TickClock::Read(tune_tsc_) : 0;
  for (size_t n = 0; n < num_nodes; ++n) {
    Node& node = nodes_[n];
    if (node.folded || node.unread) continue;
    if (owner_->cancel_.load(std::memory_order_relaxed)) [[unlikely]] {
      result = Cancelled("invoke cancelled before " + OpLabel(static_cast<int>(n)));
      break;
    }
    if (profiling) {
      if (recorded > 0) prof_ticks_[recorded] = TickClock::Read(prof_tsc_);
      prof_nodes_[recorded++] = static_cast<uint32_t>(n);
    }
    if (node.reprepare_at_invoke || NodeHasDynamicInput(node)) [[unlikely]] {
      // Outputs of re-prepared ops get heap storage sized now.
      for (int32_t t : node.op->outputs)
        if (tensors_[t].alloc == Allocation::kNone) dynamic_[t] = 1;
      Status st = PrepareNode(n);
      if (!st.ok()) {
        result = st;
        break;
      }
      for (int32_t t : node.op->outputs) {
        RtTensor& r = tensors_[t];
        if (r.alloc == Allocation::kNone || (r.alloc == Allocation::kDynamic && r.data == nullptr)) {
          Status s2 = SetTensorShape(t, r.shape, true);
          if (!s2.ok()) {
            result = s2.WithContext(OpLabel(static_cast<int>(n)));
            break;
          }
        }
      }
      if (!result.ok()) break;
    }
    KernelContext ctx = ContextFor(n);
    current_node_ = static_cast<int>(n);
    const bool alone = whole_alone || node.serial != (tune.flipped && node.tune_candidate);
    pool.SetSerial(outer_serial || alone);
    const uint64_t t0 = per_op_timed ? TickClock::Read(tune_tsc_) : 0;
    Status st = node.kernel->Invoke(ctx);
    // Booked under the mode it really ran in: alone too when an outer op runs alone (a WHILE
    // body's op then cannot be timed split; its split times stay those of earlier invokes).
    if (per_op_timed) RecordTuneSample(n, outer_serial || alone, TickClock::Read(tune_tsc_) - t0);
    pool.SetSerial(outer_serial);
    current_node_ = -1;
    if (!st.ok()) [[unlikely]] {
      result = st.WithContext(OpLabel(static_cast<int>(n)));
      break;
    }
  }
  in_invoke_ = false;
  if (whole_timed && result.ok()) RecordWholeSample(whole_alone, TickClock::Read(tune_tsc_) - invoke_t0);
  if (profiling) prof_recorded_ = recorded;
  if (tuning_ && result.ok()) TuneThreads(tune);
  return result;
}

double ProfilerCostPerOpNs() {
  // The same bookkeeping SubgraphExec::RunNodes does at each op boundary (read the clock, store
  // the tick and the node), back to back; the fastest of many repetitions is the cost without
  // interference from other processes.
  constexpr size_t kOps = 256;
  std::vector<uint64_t> ticks(kOps + 1);
  std::vector<uint32_t> nodes(kOps);
  const bool tsc = TickClock::UsesTsc();
  double best = std::numeric_limits<double>::infinity();
  for (int rep = 0; rep < 64; ++rep) {
    size_t recorded = 0;
    ticks[0] = TickClock::Read(tsc);
    for (size_t k = 0; k < kOps; ++k) {
      nodes[recorded] = static_cast<uint32_t>(k);
      ticks[++recorded] = TickClock::Read(tsc);
    }
    best = std::min(best, TickClock::ToNs(ticks[kOps] - ticks[0]) / static_cast<double>(kOps));
  }
  return best;
}

Expected<std::vector<const RtTensor*>> SubgraphExec::SubgraphOutputs(int subgraph_index,
                                                                     std::span<const RtTensor* const> inputs) {
  if (subgraph_index < 0 || static_cast<size_t>(subgraph_index) >= owner_->subgraphs_.size())
    return InvalidModel("refers to subgraph " + std::to_string(subgraph_index) + ", which does not exist");
  if (subgraph_index == index_) return InvalidModel("subgraph " + std::to_string(index_) + " calls itself");
  SubgraphExec& target = *owner_->subgraphs_[subgraph_index];
  // Control-flow ops prepare their subgraphs from their own Prepare; a subgraph reached again
  // while it is being prepared (e.g. two WHILE bodies naming each other) would recurse forever.
  if (target.allocating_)
    return InvalidModel("subgraph " + std::to_string(subgraph_index) + " is used recursively (from subgraph " +
                        std::to_string(index_) + ")");
  if (static_cast<int>(inputs.size()) != target.num_inputs())
    return InvalidModel("passes " + std::to_string(inputs.size()) + " inputs to subgraph " + std::to_string(subgraph_index) +
                        ", which has " + std::to_string(target.num_inputs()));
  for (int i = 0; i < target.num_inputs(); ++i) {
    RtTensor& ti = *target.input(i);
    if (ti.type != inputs[i]->type)
      return InvalidModel("input " + std::to_string(i) + " of subgraph " + std::to_string(subgraph_index) + " is " +
                          std::string(DTypeName(ti.type)) + ", given " + std::string(DTypeName(inputs[i]->type)));
    if (ti.shape != inputs[i]->shape) {
      ti.shape = inputs[i]->shape;
      target.allocated_ = false;
    }
  }
  if (!target.allocated_) RETURN_IF_ERROR(target.AllocateTensors());
  std::vector<const RtTensor*> outs;
  for (int i = 0; i < target.num_outputs(); ++i) outs.push_back(target.output(i));
  return outs;
}

Status SubgraphExec::InvokeSubgraph(int subgraph_index, std::span<const RtTensor* const> inputs,
                                    std::span<RtTensor* const> outputs) {
  static thread_local int depth = 0;
  if (depth >= kMaxSubgraphDepth) return InvalidModel("subgraph calls nest deeper than " + std::to_string(kMaxSubgraphDepth));
  // A WHILE whose cond and body have no ops would never reach an op boundary: check here too,
  // so Cancel() stops any loop.
  if (owner_->cancel_.load(std::memory_order_relaxed))
    return Cancelled("invoke cancelled before calling subgraph " + std::to_string(subgraph_index));
  ASSIGN_OR_RETURN(auto outs, SubgraphOutputs(subgraph_index, inputs));
  SubgraphExec& target = *owner_->subgraphs_[subgraph_index];
  if (outputs.size() > outs.size())
    return InvalidModel("expects " + std::to_string(outputs.size()) + " outputs from subgraph " +
                        std::to_string(subgraph_index) + ", which has " + std::to_string(outs.size()));
  for (int i = 0; i < target.num_inputs(); ++i) {
    RtTensor& ti = *target.input(i);
    const size_t n = std::min(ti.bytes, inputs[i]->bytes);
    if (n && ti.data != inputs[i]->data) std::memmove(ti.data, inputs[i]->data, n);
  }
  ++depth;
  Status st = target.Invoke();
  --depth;
  RETURN_IF_ERROR(st);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const RtTensor* src = target.output(static_cast<int>(i));
    RtTensor* dst = outputs[i];
    // dst belongs to this subgraph: resize through the host so storage follows.
    const int32_t dst_index = static_cast<int32_t>(dst - tensors_.data());
    if (dst_index >= 0 && static_cast<size_t>(dst_index) < tensors_.size()) {
      if (dst->shape != src->shape || !dst->data) RETURN_IF_ERROR(SetTensorShape(dst_index, src->shape, true));
    } else if (dst->shape != src->shape) {
      return Internal("subgraph output destination has the wrong shape");
    }
    const size_t n = std::min(dst->bytes, src->bytes);
    if (n && dst->data != src->data) std::memmove(dst->data, src->data, n);
  }
  return Status::Ok();
}

size_t SubgraphExec::packed_weight_bytes() const {
  size_t n = 0;
  for (const auto& node : nodes_) n += node.kernel->PackedBytes();
  return n;
}

size_t SubgraphExec::persistent_bytes() const {
  size_t n = 0;
  for (const auto& t : tensors_) n += t.owned.size();
  return n;
}

std::vector<OpInfo> SubgraphExec::ops() const {
  std::vector<OpInfo> out;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    const Node& node = nodes_[n];
    KernelContext ctx(const_cast<SubgraphExec*>(this), &owner_->model_->graph(), node.op, static_cast<int>(n),
                      node.op_index);
    if (node.partition_ops.empty()) {
      OpInfo info;
      info.index = node.op_index;
      info.type = node.op->type_name();
      info.variant = node.kernel->variant() + (node.unread ? " (not run: no op reads its output)" : "");
      info.backend = node.backend;
      info.folded = node.folded;
      info.unread = node.unread;
      info.macs = node.folded || node.unread ? 0 : node.kernel->Macs(ctx);
      info.threads = node.serial || all_serial_ ? 1 : owner_->pool_->pool_threads();
      out.push_back(std::move(info));
    } else {
      for (int op : node.partition_ops) {
        OpInfo info;
        info.index = op;
        info.type = sg().ops[op].type_name();
        info.variant = node.kernel->variant();
        info.backend = node.backend;
        info.partition = static_cast<int>(n);
        info.threads = node.serial || all_serial_ ? 1 : owner_->pool_->pool_threads();
        if (node.fused) {
          // The run's time and work are on its first op; the others say where they went.
          if (op == node.op_index)
            info.macs = node.kernel->Macs(ctx);
          else
            info.variant = "fused into #" + std::to_string(node.op_index);
        }
        out.push_back(std::move(info));
      }
    }
  }
  return out;
}

}  // namespace edgeopt::rt
