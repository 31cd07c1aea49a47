#include "optimize/weight_selection.h"

#include <algorithm>
#include <regex>
#include <set>

namespace edgeopt::optimize {
namespace {

struct Slot {
  int input;
  int out_axis;
  int in_axis;
};

std::vector<Slot> WeightSlots(const Operator& op) {
  using O = tflite::BuiltinOperator;
  switch (op.code) {
    case O::BuiltinOperator_CONV_2D: return {{1, 0, 3}};
    case O::BuiltinOperator_DEPTHWISE_CONV_2D: return {{1, 3, -1}};
    case O::BuiltinOperator_FULLY_CONNECTED: return {{1, 0, 1}};
    case O::BuiltinOperator_TRANSPOSE_CONV: return {{1, 0, 3}};
    case O::BuiltinOperator_BATCH_MATMUL: return {{1, -1, -1}};
    case O::BuiltinOperator_UNIDIRECTIONAL_SEQUENCE_LSTM: {
      std::vector<Slot> s;
      for (int i = 1; i <= 8; ++i) s.push_back({i, 0, 1});
      s.push_back({16, 0, 1});
      return s;
    }
    default: return {};
  }
}

}  // namespace

Expected<std::vector<WeightRef>> SelectWeights(const Graph& g, const WeightSelection& sel, std::vector<std::string>* skipped) {
  std::regex re;
  if (!sel.scope_regex.empty()) {
    try {
      re = std::regex(sel.scope_regex);
    } catch (const std::regex_error& e) {
      return InvalidArgument("--scope: invalid regular expression '" + sel.scope_regex + "': " + e.what());
    }
  }
  std::vector<WeightRef> out;
  for (size_t si = 0; si < g.subgraphs.size(); ++si) {
    const Subgraph& sg = g.subgraphs[si];
    std::set<int32_t> seen;
    for (size_t oi = 0; oi < sg.ops.size(); ++oi) {
      const Operator& op = sg.ops[oi];
      for (const Slot& s : WeightSlots(op)) {
        if (s.input >= static_cast<int>(op.inputs.size())) continue;
        const int32_t t = op.inputs[s.input];
        if (t < 0 || seen.count(t)) continue;
        const Tensor& tt = sg.tensors[t];
        if (tt.type != DType::kFloat32 || !g.IsConstant(tt) || tt.sparsity) continue;
        seen.insert(t);
        auto skip = [&](const std::string& why) {
          if (skipped) skipped->push_back("'" + tt.name + "' (" + op.type_name() + "): " + why);
        };
        if (std::find(sel.skip_ops.begin(), sel.skip_ops.end(), op.type_name()) != sel.skip_ops.end()) {
          skip("op type skipped");
          continue;
        }
        if (!sel.scope_regex.empty() && !std::regex_search(tt.name, re)) {
          skip("outside --scope");
          continue;
        }
        if (tt.num_elements() < sel.min_params) {
          skip(std::to_string(tt.num_elements()) + " parameters < --min-params " + std::to_string(sel.min_params));
          continue;
        }
        out.push_back({static_cast<int>(si), t, static_cast<int>(oi), op.code, s.out_axis, s.in_axis});
      }
    }
  }
  return out;
}

}  // namespace edgeopt::optimize
