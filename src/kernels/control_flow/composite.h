// Shared by the control-flow kernels that run subgraphs (ref.cc: WHILE, IF, CALL_ONCE;
// ref_composite.cc: STABLEHLO_COMPOSITE, registered by RegisterControlFlowKernels).
#pragma once

#include <string>
#include <vector>

#include "kernels/common/kernel_util.h"
#include "runtime/registry.h"

namespace edgeopt::kernels {

void RegisterCompositeKernel(rt::OpRegistry& r);

// A failure inside a called subgraph, with the op named and the status code kept (a cancelled
// invoke stays kCancelled).
inline Status InSubgraph(const rt::KernelContext& ctx, const Status& st, const std::string& what) {
  return st.WithContext(ctx.op().type_name() + ": " + what);
}

// The op's inputs from `first` on, and its outputs, as the subgraph calls take them.
inline std::vector<const rt::RtTensor*> InputsFrom(const rt::KernelContext& ctx, int first) {
  std::vector<const rt::RtTensor*> v;
  for (int i = first; i < ctx.num_inputs(); ++i) v.push_back(ctx.input(i));
  return v;
}

inline std::vector<rt::RtTensor*> Outputs(const rt::KernelContext& ctx) {
  std::vector<rt::RtTensor*> v;
  for (int i = 0; i < ctx.num_outputs(); ++i) v.push_back(ctx.output(i));
  return v;
}

}  // namespace edgeopt::kernels
