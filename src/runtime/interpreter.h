// Model (immutable, shareable) and Interpreter (one per thread of use).
//
// Interpreter::Create resolves every op to a kernel (errors name the op and its index) and
// allocates: AllocateTensors prepares kernels in order (shape inference), folds ops whose inputs are all
// constant (e.g. DEQUANTIZE of float16 weights: done once, not per inference), and plans all
// intermediate tensors into one arena where tensors with disjoint lifetimes share memory.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tick_clock.h"
#include "graph/graph.h"
#include "runtime/delegate.h"
#include "runtime/kernel.h"
#include "runtime/registry.h"
#include "runtime/resources.h"
#include "runtime/tensor.h"
#include "runtime/thread_pool.h"

namespace edgeopt::rt {

class Model : public std::enable_shared_from_this<Model> {
 public:
  static Expected<std::shared_ptr<const Model>> FromFile(const std::string& path);
  static Expected<std::shared_ptr<const Model>> FromGraph(Graph graph);

  const Graph& graph() const { return graph_; }
  const std::string& path() const { return path_; }
  PackedWeightCache* packed_cache() const { return cache_.get(); }
  size_t mapped_bytes() const;

 private:
  Model() = default;
  Graph graph_;
  std::string path_;
  std::unique_ptr<PackedWeightCache> cache_;
};

struct InterpreterOptions {
  int num_threads = 1;
  // Reference kernels only (the oracle); optimized variants are skipped.
  bool reference_kernels_only = false;
  // Evaluate ops whose inputs are all constant once, at allocation time.
  bool fold_constants = true;
  // Application kernels, consulted before the built-in ones (custom ops, overrides).
  std::shared_ptr<const OpRegistry> op_resolver;
  // Backends asked, in order, to claim ops before the built-in CPU kernels.
  std::vector<std::shared_ptr<Delegate>> delegates;
  // Give every tensor its own memory so all intermediate values can be read after Invoke
  // (calibration, layer-by-layer comparison), and keep the constants folded at init that the
  // kernels packed (otherwise freed: FoldedAndUnread). Costs memory; off for normal inference.
  bool preserve_all_tensors = false;
  // Feature set used to choose kernel variants (defaults to this CPU).
  const CpuFeatures* cpu = nullptr;
  // Run chains of ops one fused kernel handles as one step (kernels/fused/fused.h). Also off
  // when the environment sets EDGEOPT_FUSE=0, with reference_kernels_only and with
  // preserve_all_tensors (the tensors inside a fused run are never written).
  bool fuse_ops = true;
  // Fuse a run only if a tensor inside it has at least this many bytes (one thread). Smaller
  // tensors stay in the core's L2 between unfused ops anyway (1 MB per core on Zen 4), and there
  // fusion measured no gain (MobileNetV1 0.25: 0.99-1.07× at 2 threads fusing every block,
  // MobileNetV2 0.95-0.97× against 0.93-0.94× fusing only its large blocks; on Zen 5 at one
  // thread fusing every block ran 0.997-1.004× the time). Tests set 0 to fuse small generated
  // models.
  size_t fuse_min_inner_bytes = size_t{1} << 20;
  // The same limit for int8 (signed) depthwise chains: none. Fused, the depthwise rows store
  // their band already in the uint8 domain the projection's VNNI GEMM reads (Plan::flip_output),
  // where an unfused projection flips a copy of its whole input first (~2.5% of MobileNetV2
  // int8's time). One thread, every int8 chain fused against chains from 1 MB (in-process A/B,
  // outputs identical): MobileNetV2 int8 0.967-0.976x the time, vww_96 0.98x, MobileNetV1 0.5
  // 0.985x, MoveNet 0.98x, face_detection_short_range int8 0.976x, kws_dscnn 1.006x; uint8
  // chains (no flip to save) stay at fuse_min_inner_bytes (MobileNetV2 uint8 1.003x, SSD
  // MobileNetV1 uint8 1.007x fusing every chain).
  size_t fuse_min_inner_bytes_int8 = 0;
  // The same limit with more than one thread. A fused run keeps each thread on its own bands of
  // rows from the expansion to the projection, where unfused ops hand their tensors from one
  // core's cache to the other's at every op boundary: on a Zen 5 VM at 2 threads fusing every
  // block ran MobileNetV1 0.25 0.86×, vww_96 0.87×, MobileNetV2 0.94×, DeepLabV3 0.99× the time of
  // the 1 MB limit (MediaPipe hand / pose / face 1.00×; in-process A/B, alternated invokes).
  size_t fuse_min_inner_bytes_threaded = 0;
  // With more than one thread, time each small op (under kTuneCandidateNs split) both split
  // across the threads and on the calling thread alone during the first invokes (and again in
  // one pair of invokes in every 32), and run it alone while that is faster (SubgraphExec's thread tuning; OpInfo::threads says
  // which). Splitting costs a wake-up and a join per op, ~1-3 us on a 2-vCPU VM, and the
  // activations cross cores: on small models 2 threads could be slower than 1. Invokes under
  // 250 us split are also timed with every op alone, and run so while that is faster. Off, or
  // with EDGEOPT_OP_THREADS=all, every op is split as before.
  bool tune_op_threads = true;
};

// Per-op timing of one invoke (filled when profiling is on). Times are steady_clock
// nanoseconds; one op's end is the next op's begin (one clock read per op boundary), so the
// durations add up exactly to the profiled invoke, including the profiler's own cost.
struct OpTiming {
  int op_index = 0;
  int64_t begin_ns = 0;
  int64_t end_ns = 0;
};

// What profiling adds to each op's time: one clock read and its bookkeeping, in nanoseconds,
// measured now on this machine (best of repeated back-to-back runs).
double ProfilerCostPerOpNs();

struct OpInfo {
  int index = 0;              // op index in the subgraph
  std::string type;           // "CONV_2D" or the custom code
  std::string variant;        // kernel variant, e.g. "conv2d/f32/avx2"
  std::string backend;        // "cpu" or the delegate's name
  bool folded = false;        // evaluated once at allocation (all inputs constant)
  bool unread = false;        // not run: no op reads its outputs at invoke (SubgraphExec::MarkUnreadNodes)
  int partition = -1;         // delegate partition or fused run (node index) this op belongs to, or -1
  int64_t macs = 0;
  int threads = 1;            // threads the op runs on (1 when thread tuning keeps it unsplit)
};

class SubgraphExec;

class Interpreter {
 public:
  static Expected<std::unique_ptr<Interpreter>> Create(std::shared_ptr<const Model> model,
                                                       const InterpreterOptions& options = {});
  ~Interpreter();

  const Model& model() const { return *model_; }

  // Inputs/outputs of the main subgraph, by position.
  int num_inputs() const;
  int num_outputs() const;
  RtTensor* input(int i);
  RtTensor* output(int i);
  // Position of an input/output by tensor name (or signature name), or -1.
  int FindInput(const std::string& name) const;
  int FindOutput(const std::string& name) const;

  Status ResizeInput(int i, const Shape& shape);
  // Prepares kernels and plans memory; implicit in the first Invoke and after a resize.
  Status AllocateTensors();
  Status Invoke();
  // Asks a running Invoke to stop at the next op boundary (callable from any thread); that
  // Invoke returns kCancelled. The flag is cleared when the next Invoke starts.
  void Cancel() { cancel_.store(true); }

  // Zero-copy I/O: the interpreter reads input i from / writes output i to the caller's buffer
  // (at least 64-byte aligned recommended, at least the tensor's byte size). Invoke copies
  // nothing. Rebinding or resizing unbinds nothing; pass nullptr to unbind.
  Status BindInput(int i, void* data, size_t bytes);
  Status BindOutput(int i, void* data, size_t bytes);

  // Signatures.
  std::vector<std::string> SignatureKeys() const;
  // Runs the subgraph of a signature: inputs/outputs by signature name.
  Expected<SubgraphExec*> Signature(const std::string& key);
  // Runs subgraph `index` as a top-level call (e.g. a signature's): like Invoke, it first clears
  // a Cancel request left from before.
  Status InvokeSubgraph(int index);

  // Variable tensors back to their initial values.
  void ResetVariables();

  // Introspection.
  size_t arena_bytes() const;
  size_t packed_weight_bytes() const;
  size_t persistent_bytes() const;  // variable tensors and folded constants
  std::vector<OpInfo> ops() const;  // main subgraph, execution order
  int num_threads() const;

  void EnableProfiling(bool on);
  const std::vector<OpTiming>& last_profile() const;
  ThreadPool& threads() { return *pool_; }
  SubgraphExec& main();

 private:
  friend class SubgraphExec;
  Interpreter() = default;

  std::shared_ptr<const Model> model_;
  InterpreterOptions options_;
  std::unique_ptr<ThreadPool> pool_;
  std::vector<std::unique_ptr<SubgraphExec>> subgraphs_;
  SubgraphExec* main_ = nullptr;  // subgraphs_[0], read by every Invoke
  ResourceStore resources_;
  std::atomic<bool> cancel_{false};
};

// Execution state of one subgraph: tensors, kernels, memory plan. Also the handle returned for
// a signature.
class SubgraphExec : public KernelHost {
 public:
  SubgraphExec(Interpreter* owner, int index);
  ~SubgraphExec() override;

  Status Init();  // resolve kernels (called once by Interpreter::Create)
  Status AllocateTensors();
  Status Invoke();

  int num_inputs() const { return static_cast<int>(sg().inputs.size()); }
  int num_outputs() const { return static_cast<int>(sg().outputs.size()); }
  RtTensor* input(int i) { return &tensors_[sg().inputs.at(i)]; }
  RtTensor* output(int i) { return &tensors_[sg().outputs.at(i)]; }
  int32_t input_tensor_index(int i) const { return sg().inputs.at(i); }
  int32_t output_tensor_index(int i) const { return sg().outputs.at(i); }
  // Signature-name aware lookup (falls back to tensor names).
  int FindInput(const std::string& name) const;
  int FindOutput(const std::string& name) const;
  Status ResizeInput(int i, const Shape& shape);
  Status BindTensor(int32_t tensor_index, void* data, size_t bytes);
  void ResetVariables();

  size_t arena_bytes() const { return arena_size_; }
  size_t packed_weight_bytes() const;
  size_t persistent_bytes() const;
  std::vector<OpInfo> ops() const;
  void EnableProfiling(bool on);
  // The per-op times of the last profiled invoke (converted from clock ticks on first call, so
  // that the invoke itself does no conversion).
  const std::vector<OpTiming>& last_profile() const;
  const Subgraph& sg() const;
  int index() const { return index_; }
  std::string OpLabel(int op_index) const;  // "subgraph 0 op 12 (CONV_2D)"

  // KernelHost
  RtTensor* tensor(int32_t index) override { return &tensors_[index]; }
  Status SetTensorShape(int32_t index, Shape shape, bool during_invoke) override;
  void MarkDynamic(int32_t index) override;
  int RequestScratch(int op_index, size_t bytes) override;
  void* Scratch(int op_index, int id) override;
  ThreadPool& threads() override;
  bool in_invoke() const override { return in_invoke_; }
  Status InvokeSubgraph(int subgraph_index, std::span<const RtTensor* const> inputs,
                        std::span<RtTensor* const> outputs) override;
  Expected<std::vector<const RtTensor*>> SubgraphOutputs(int subgraph_index,
                                                         std::span<const RtTensor* const> inputs) override;
  PackedWeightCache* packed_cache() override;
  int subgraph_index() const override { return index_; }
  ResourceStore& resources() override;

 private:
  struct Node {
    const Operator* op = nullptr;  // the graph op, or the synthetic partition op
    int op_index = 0;              // index of (the first) graph op this node runs
    std::unique_ptr<Operator> partition_op;
    std::vector<int> partition_ops;  // graph op indices run by this node (delegate partition, fused run)
    bool fused = false;              // a fused run of built-in kernels (kernels/fused)
    std::unique_ptr<OpKernel> kernel;
    std::string backend = "cpu";
    bool folded = false;
    bool unread = false;  // MarkUnreadNodes: skipped at invoke
    bool reprepare_at_invoke = false;
    // Thread tuning (see TuneThreads): run on the calling thread alone; timed both ways.
    bool serial = false;
    bool tune_candidate = false;
    struct ScratchReq {
      size_t bytes = 0;
      size_t offset = 0;
      std::vector<uint8_t> heap;  // used when requested during invoke
      bool planned = false;
    };
    std::vector<ScratchReq> scratch;
  };

  // Asks the fusion matchers for a run starting at op i (none claimed by a delegate); adds its
  // node and returns its length, or 0.
  size_t TryFuse(size_t i, const std::vector<int>& claimed_by);
  Status PrepareAll();
  // Invoke without the profiler's first and last clock reads (see Invoke).
  Status RunNodes();
  // Runs node n once now if all its inputs are constant (constant folding).
  Status FoldNode(size_t n);
  Status PlanMemory();
  // fn(t, i) for each tensor node's Invoke may read: input i of its op, and with i = -1 the
  // inputs of the ops a delegate partition or fused run covers.
  template <typename Fn>
  void ForEachNodeInput(const Node& node, Fn&& fn) const;
  // Tensor t was folded at init, is not a subgraph output, and no node reads it at invoke (see
  // OpKernel::ReadsInputAtInvoke): PrepareAll frees it (FreeFolded) once its last reader is prepared.
  bool FoldedAndUnread(int32_t t) const;
  // Per tensor, the nodes that may read it at invoke (their op's inputs, or those of the ops a
  // partition or fused run covers): ReadAtInvoke then looks at those nodes only.
  using Readers = std::vector<std::vector<int>>;
  Readers ReadersIndex() const;
  // Whether a node other than `except` reads tensor t at invoke (OpKernel::ReadsInputAtInvoke;
  // folded and unread nodes never run). With `readers` (ReadersIndex, nodes unchanged since),
  // only t's readers are looked at instead of every node.
  bool ReadAtInvoke(int32_t t, int except = -1, const Readers* readers = nullptr) const;
  // After every node is prepared: marks the nodes whose outputs no node reads at invoke and that
  // change nothing else (Node::unread): a fused kernel that takes what it needs elsewhere (the
  // uniform inputs of fused/concat_conv_f32.cc) leaves their producer with nothing to do.
  void MarkUnreadNodes();
  void FreeFolded(int32_t t);
  void BindArenaPointers();
  Status PrepareNode(size_t n);
  bool NodeHasDynamicInput(const Node& node) const;
  KernelContext ContextFor(size_t n);
  // Thread tuning (interpreter.cc explains it). ThreadTuneStep: what this invoke does; TuneThreads,
  // after each successful invoke while tuning_, given that invoke's step: counts it, picks the
  // candidates or decides.
  struct TuneStep {
    bool timed = false;    // time every node
    bool flipped = false;  // candidates run in the mode they do not run in now
    bool whole_flipped = false;  // the invoke runs in the whole-invoke mode it does not run in now
  };
  TuneStep ThreadTuneStep() const;
  void TuneThreads(const TuneStep& step);
  void RestartThreadTuning();
  void RecordTuneSample(size_t n, bool alone, uint64_t ticks);
  uint64_t BestTuneSample(size_t n, bool alone) const;
  void RecordWholeSample(bool alone, uint64_t ticks);
  uint64_t BestWholeSample(bool alone) const;

  Interpreter* owner_;
  int index_;
  std::vector<RtTensor> tensors_;
  std::vector<Node> nodes_;
  std::vector<uint8_t, std::allocator<uint8_t>> arena_storage_;
  uint8_t* arena_ = nullptr;
  size_t arena_size_ = 0;
  std::vector<size_t> tensor_offsets_;  // arena offset per tensor (SIZE_MAX if not planned)
  std::vector<char> dynamic_;           // tensor's shape known only at invoke time
  bool allocated_ = false;
  bool allocating_ = false;  // inside AllocateTensors: a nested request for this subgraph is a cycle
  bool in_invoke_ = false;
  bool profiling_ = false;
  mutable std::vector<OpTiming> profile_;  // filled from the ticks by last_profile()
  mutable bool profile_stale_ = false;      // a profiled invoke ran since profile_ was filled
  std::vector<uint64_t> prof_ticks_;  // profiling: clock ticks at each op boundary (sized by EnableProfiling)
  std::vector<uint32_t> prof_nodes_;  // profiling: node run between ticks k and k+1
  size_t prof_recorded_ = 0;          // ops recorded by the last profiled invoke
  bool prof_tsc_ = false;             // profiling reads the TSC (TickClock::UsesTsc, cached)
  int current_node_ = -1;
  // Thread tuning state: on while some op may run alone; tune_invoke_ counts invokes since the
  // last (re)start; per node and mode (split, alone) the last kTuneSamples times in clock ticks.
  bool tuning_ = false;
  bool tune_tsc_ = false;
  int64_t tune_invoke_ = 0;
  std::vector<uint64_t> tune_samples_;
  // Whole-invoke mode: invokes under kTuneWholeNs (whole_candidate_) are also timed with every op
  // alone, and all_serial_ runs every op alone while that was clearly faster than the per-op
  // choices; whole_samples_: the last kTuneSamples invoke times of each (per-op choices, all
  // alone). whole_every_: the whole-invoke trial runs in one tuning period out of this many
  // (doubled while every op alone is far slower, see TuneThreads).
  bool whole_candidate_ = false;
  bool all_serial_ = false;
  std::vector<uint64_t> whole_samples_;
  int64_t whole_every_ = 1;
};

inline Status SubgraphExec::Invoke() {
  // Profiling takes ONE clock read per op boundary: the first before RunNodes, the next ones in
  // RunNodes as each op after the first begins, the last once RunNodes has returned. Op k ran
  // from tick k to tick k+1, so the per-op times add up exactly to the profiled invoke, and
  // everything the interpreter does around the kernels belongs to an op: RunNodes' entry
  // (checks, the allocation when this invoke has to allocate) to the first, its exit to the
  // last, the cancel check to the op before it. What stays outside is this check and the call:
  // Invoke is inline, so the profiled path adds no call of its own. The tick buffers are sized
  // by EnableProfiling and ticks become times only when last_profile() asks, so a profiled
  // invoke adds nothing but the clock reads and their stores.
  // One named result for both paths: RunNodes writes it in place (no move that only profiled
  // invokes would pay, outside the op windows, and that would be booked as profiler cost).
  const bool profiling = profiling_;
  if (profiling) prof_ticks_[0] = TickClock::Read(prof_tsc_);
  Status st = RunNodes();
  if (profiling) {
    prof_ticks_[prof_recorded_] = TickClock::Read(prof_tsc_);
    profile_stale_ = true;
  }
  return st;
}

inline Status Interpreter::Invoke() {
  // Inline: the call is part of the fixed cost no op's time holds. A plain store: Cancel() from
  // another thread needs no ordering with it (the op loop reads the flag relaxed), and a locked
  // exchange here would cost every invoke ~10 ns.
  cancel_.store(false, std::memory_order_relaxed);
  return main_->Invoke();
}

}  // namespace edgeopt::rt
