// The delegate interface: a backend claims the ops it supports when an interpreter is created
// and runs them. The built-in CPU kernels are the default backend for everything unclaimed.
//
// The runtime groups claimed ops into partitions (maximal runs of consecutive claimed ops in
// execution order, so every partition is safe to run as one step) and asks the delegate for one
// kernel per partition. That kernel's inputs are the tensors the partition reads from outside
// (constants included), its outputs the tensors read after it or returned by the subgraph; the
// tensors inside a partition belong to the delegate and are not planned by the runtime.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/kernel.h"

namespace edgeopt::rt {

class Delegate {
 public:
  virtual ~Delegate() = default;
  // Shown as the backend of every op it runs ("cpu" for built-in kernels).
  virtual std::string name() const = 0;
  // Indices of ops in graph.subgraphs[subgraph_index] this backend can run.
  virtual std::vector<int> SupportedOps(const Graph& graph, int subgraph_index) = 0;
  // A kernel running `op_indices` (ascending, consecutive in execution order) as one step.
  // `partition` is the synthetic operator the runtime made for it (its inputs/outputs).
  virtual Expected<std::unique_ptr<OpKernel>> CreatePartitionKernel(const Graph& graph, int subgraph_index,
                                                                     std::span<const int> op_indices,
                                                                     const Operator& partition) = 0;
};

}  // namespace edgeopt::rt
