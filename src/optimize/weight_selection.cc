#include "optimize/weight_selection.h"

#include <algorithm>
#include <regex>
#include <set>

#include "optimize/quantize/quantize.h"

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
    case O::BuiltinOperator_CONV_2D: return {{1, 0, 3}};            // [O, H, W, I]
    case O::BuiltinOperator_DEPTHWISE_CONV_2D: return {{1, 3, -1}};  // [1, H, W, C*m]
    case O::BuiltinOperator_FULLY_CONNECTED: return {{1, 0, 1}};    // [units, depth]
    case O::BuiltinOperator_TRANSPOSE_CONV: return {{1, 0, 3}};     // [O, H, W, I]
    case O::BuiltinOperator_BATCH_MATMUL: return {{1, -1, -1}};
    case O::BuiltinOperator_UNIDIRECTIONAL_SEQUENCE_LSTM: {
      // input-to-gate (1..4), recurrent-to-gate (5..8), projection (16): [rows, cols].
      std::vector<Slot> s;
      for (int i = 1; i <= 8; ++i) s.push_back({i, 0, 1});
      s.push_back({16, 0, 1});
      return s;
    }
    default: return {};
  }
}

}  // namespace

const std::vector<std::string>& WeightOpNames() {
  static const std::vector<std::string> kNames = {"CONV_2D",         "DEPTHWISE_CONV_2D", "FULLY_CONNECTED",
                                                  "TRANSPOSE_CONV",  "BATCH_MATMUL",      "UNIDIRECTIONAL_SEQUENCE_LSTM"};
  return kNames;
}

Status RequireFloatModel(const Graph& g, const std::string& what) {
  std::string why;
  if (!IsAlreadyQuantized(g, &why)) return Status::Ok();
  return InvalidArgument("the model is already quantized (" + why + "); " + what +
                         " works on float32 weights: run `edgeopt dequantize` first to get a float model, " + what +
                         " that, then quantize the result");
}

Expected<std::vector<WeightRef>> SelectWeights(const Graph& g, const WeightSelection& sel,
                                               std::vector<std::string>* skipped) {
  std::regex re;
  if (!sel.scope_regex.empty()) {
    try {
      re = std::regex(sel.scope_regex, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return InvalidArgument("--scope: invalid regular expression '" + sel.scope_regex + "': " + e.what());
    }
  }
  for (const std::string& name : sel.skip_ops) {
    const auto& known = WeightOpNames();
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      return InvalidArgument("--skip-op: '" + name + "' is not an op with weights (one of " + list + ")");
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
        if (t < 0 || static_cast<size_t>(t) >= sg.tensors.size() || seen.count(t)) continue;
        const Tensor& tt = sg.tensors[t];
        if (tt.type != DType::kFloat32 || !g.IsConstant(tt) || tt.sparsity) continue;
        seen.insert(t);
        auto skip = [&](const std::string& why) {
          if (skipped) skipped->push_back("'" + tt.name + "' (" + op.type_name() + "): " + why);
        };
        if (g.TensorData(tt).size() != static_cast<size_t>(tt.num_elements()) * 4) {
          skip("its data does not match its shape");
          continue;
        }
        if (std::find(sel.skip_ops.begin(), sel.skip_ops.end(), op.type_name()) != sel.skip_ops.end()) {
          skip("op type skipped (--skip-op)");
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
        const int rank = static_cast<int>(tt.shape.size());
        WeightRef w{static_cast<int>(si), t, static_cast<int>(oi), op.code, s.out_axis, s.in_axis};
        if (w.out_axis >= rank) w.out_axis = -1;
        if (w.in_axis >= rank) w.in_axis = -1;
        out.push_back(w);
      }
    }
  }
  return out;
}

}  // namespace edgeopt::optimize
