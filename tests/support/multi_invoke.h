// Conformance over several invokes of one interpreter: for stateful models (LSTM state,
// resource variables, CALL_ONCE) whose outputs depend on earlier invokes. Both runtimes keep one
// interpreter and get the same fresh seeded inputs at every invoke; every invoke's outputs are
// compared as CompareOutputs does.
#pragma once

#include "support/conformance.h"

namespace edgeopt::testing {

// Invoke k uses RandomInputs(g, opts with seed = opts.seed + k), or `inputs[k]` when given.
// The report is that of the first invoke that differs (its error names the invoke), else the last.
// `op_resolver` (optional) gives edgeopt extra kernels, e.g. test stand-ins for ops of other families.
CompareReport CompareGraphInvokes(const Graph& g, int invokes, const CompareOptions& opts = {},
                                  const std::vector<std::vector<TensorValue>>& inputs = {},
                                  std::shared_ptr<const rt::OpRegistry> op_resolver = nullptr);

}  // namespace edgeopt::testing
