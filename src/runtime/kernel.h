// The kernel interface: what every op implementation (reference or optimized, built-in or
// registered by an application) provides, and the context the interpreter hands it.
//
// Life cycle, per op and interpreter:
//   factory(KernelCreateContext)  once, when the interpreter is created: validate the op's
//                                 static properties and pick a variant (CPU features known here)
//   Prepare(KernelContext)        whenever input shapes change: check shapes/types, set output
//                                 shapes, request scratch memory, pack weights (once)
//   Invoke(KernelContext)         every inference: compute outputs; never allocate
// An op whose output shape depends on non-constant input *data* calls MarkOutputDynamic() in
// Prepare and SetOutputShape() in Invoke; ops reading that output are re-prepared at invoke time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "core/status.h"
#include "graph/graph.h"
#include "runtime/cpu.h"
#include "runtime/tensor.h"
#include "runtime/thread_pool.h"

namespace edgeopt::rt {

class KernelContext;
class PackedWeightCache;
class ResourceStore;

class OpKernel {
 public:
  virtual ~OpKernel() = default;
  virtual Status Prepare(KernelContext& ctx) = 0;
  virtual Status Invoke(KernelContext& ctx) = 0;
  // Which implementation runs, as shown by `bench --profile`: "conv2d/f32/avx2", "add/int8/ref".
  virtual std::string variant() const = 0;
  // Multiply-accumulates of one invoke at the prepared shapes (0 if not meaningful).
  virtual int64_t Macs(const KernelContext& /*ctx*/) const { return 0; }
  // Bytes of weights this kernel packed/holds beyond the model's constants.
  virtual size_t PackedBytes() const { return 0; }
  // True if output 0 may share input 0's memory: the op only reinterprets the shape (RESHAPE,
  // SQUEEZE, EXPAND_DIMS), so with equal byte sizes the planner aliases them and Invoke finds
  // out->data == in->data and copies nothing.
  virtual bool OutputMayAliasInput() const { return false; }
  // Whether Invoke (as prepared now) reads the data of input `input`. A kernel that packed a
  // constant into its own layout at Prepare and never reads the tensor again returns false: the
  // interpreter then frees constants it folded at init (float16 weights dequantized, DENSIFY
  // outputs) once no reader needs them, instead of keeping them beside the packed copy.
  virtual bool ReadsInputAtInvoke(int /*input*/) const { return true; }
};

// Everything a factory may look at to decide whether and how to run an op.
struct KernelCreateContext {
  const Graph& graph;
  const Subgraph& subgraph;
  int subgraph_index;
  const Operator& op;
  int op_index;
  const CpuFeatures& cpu;
  bool reference_only;  // interpreter option: use reference kernels (the oracle) only

  const Tensor* input(int i) const {
    return i < static_cast<int>(op.inputs.size()) && op.inputs[i] >= 0 ? &subgraph.tensors[op.inputs[i]] : nullptr;
  }
  const Tensor* output(int i) const {
    return i < static_cast<int>(op.outputs.size()) ? &subgraph.tensors[op.outputs[i]] : nullptr;
  }
  int num_inputs() const { return static_cast<int>(op.inputs.size()); }
  int num_outputs() const { return static_cast<int>(op.outputs.size()); }
  bool is_constant(int i) const {
    const Tensor* t = input(i);
    return t && graph.IsConstant(*t);
  }
  std::span<const uint8_t> constant_data(int i) const {
    const Tensor* t = input(i);
    return t ? graph.TensorData(*t) : std::span<const uint8_t>();
  }
  Status Error(const std::string& message) const;  // Unsupported, with op name
};

using KernelFactory = std::function<Expected<std::unique_ptr<OpKernel>>(const KernelCreateContext&)>;

// What the interpreter implements for a kernel; see SubgraphExec.
class KernelHost {
 public:
  virtual ~KernelHost() = default;
  virtual RtTensor* tensor(int32_t index) = 0;
  virtual Status SetTensorShape(int32_t index, Shape shape, bool during_invoke) = 0;
  virtual void MarkDynamic(int32_t index) = 0;
  virtual int RequestScratch(int op_index, size_t bytes) = 0;
  virtual void* Scratch(int op_index, int id) = 0;
  virtual ThreadPool& threads() = 0;
  virtual bool in_invoke() const = 0;
  // Runs another subgraph of the model (control flow): inputs copied in, outputs copied out
  // (resized to match). The subgraph is prepared on first use and when input shapes change.
  virtual Status InvokeSubgraph(int subgraph_index, std::span<const RtTensor* const> inputs,
                                std::span<RtTensor* const> outputs) = 0;
  // Shape/type information of another subgraph's inputs/outputs (for control-flow prepare).
  virtual Expected<std::vector<const RtTensor*>> SubgraphOutputs(int subgraph_index,
                                                                 std::span<const RtTensor* const> inputs) = 0;
  virtual PackedWeightCache* packed_cache() = 0;
  virtual int subgraph_index() const = 0;
  // Interpreter-wide resource variables (shared by all subgraphs of one interpreter).
  virtual ResourceStore& resources() = 0;
};

class KernelContext {
 public:
  // op_index: the interpreter's step (node) running the op, which owns scratch memory;
  // graph_op_index: the op's index in the subgraph (the first op of a fused or delegated run),
  // or -1 for the same as op_index.
  KernelContext(KernelHost* host, const Graph* graph, const Operator* op, int op_index, int graph_op_index = -1)
      : host_(host), graph_(graph), op_(op), op_index_(op_index),
        graph_op_index_(graph_op_index < 0 ? op_index : graph_op_index) {}

  const Operator& op() const { return *op_; }
  const Graph& graph() const { return *graph_; }
  int op_index() const { return op_index_; }
  // Stable across interpreters of one model whatever ops they fuse or delegate: keys of
  // packed-weight caches use it.
  int graph_op_index() const { return graph_op_index_; }

  int num_inputs() const { return static_cast<int>(op_->inputs.size()); }
  int num_outputs() const { return static_cast<int>(op_->outputs.size()); }
  // nullptr for an omitted optional input or an index past the end.
  RtTensor* input(int i) const {
    return i < num_inputs() && op_->inputs[i] >= 0 ? host_->tensor(op_->inputs[i]) : nullptr;
  }
  RtTensor* output(int i) const { return i < num_outputs() ? host_->tensor(op_->outputs[i]) : nullptr; }
  RtTensor* intermediate(int i) const {
    return i < static_cast<int>(op_->intermediates.size()) ? host_->tensor(op_->intermediates[i]) : nullptr;
  }
  int32_t input_index(int i) const { return op_->inputs[i]; }
  int32_t output_index(int i) const { return op_->outputs[i]; }

  // Sets output i's shape. In Prepare it is planned into the arena; during Invoke the output
  // gets (or reuses) heap storage.
  Status SetOutputShape(int i, Shape shape) {
    return host_->SetTensorShape(op_->outputs[i], std::move(shape), host_->in_invoke());
  }
  // Output i's shape will be known only at invoke time.
  void MarkOutputDynamic(int i) { host_->MarkDynamic(op_->outputs[i]); }
  // Scratch memory valid during this op's Invoke (planned into the arena). Request in Prepare.
  int RequestScratch(size_t bytes) { return host_->RequestScratch(op_index_, bytes); }
  void* Scratch(int id) { return host_->Scratch(op_index_, id); }
  template <typename T>
  T* Scratch(int id) { return static_cast<T*>(Scratch(id)); }

  ThreadPool& threads() { return host_->threads(); }
  // Per-thread scratch of `bytes` per slot (ThreadPool::ReserveSlotScratch; at Invoke,
  // threads().SlotScratch(slot)). Request in Prepare.
  Status ReserveSlotScratch(size_t bytes) {
    if (threads().ReserveSlotScratch(bytes)) return Status::Ok();
    return Internal(op_->type_name() + ": out of memory: could not map " + std::to_string(bytes) +
                    " bytes of per-thread scratch for each of " + std::to_string(threads().num_threads()) + " threads");
  }
  bool in_invoke() const { return host_->in_invoke(); }
  KernelHost* host() { return host_; }

  // An error naming this op: "CONV_2D: <message>" (the interpreter adds subgraph/op index).
  Status Error(const std::string& message) const { return InvalidArgument(op_->type_name() + ": " + message); }
  Status UnsupportedError(const std::string& message) const { return Unsupported(op_->type_name() + ": " + message); }

 private:
  KernelHost* host_;
  const Graph* graph_;
  const Operator* op_;
  int op_index_;
  int graph_op_index_;
};

// Weights packed by kernels, shared by every Interpreter of one Model. Keys identify the op and
// the packing layout; values are immutable once created.
class PackedWeightCache {
 public:
  virtual ~PackedWeightCache() = default;
  virtual std::shared_ptr<const void> GetOrCreate(const std::string& key,
                                                  const std::function<std::shared_ptr<const void>()>& make) = 0;
};

}  // namespace edgeopt::rt
