#include "graph/graph.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace edgeopt {

std::string BuiltinName(tflite::BuiltinOperator code) {
  if (code >= tflite::BuiltinOperator_MIN && code <= tflite::BuiltinOperator_MAX) {
    const char* n = tflite::EnumNameBuiltinOperator(code);
    if (n && *n) return n;
  }
  return "UNKNOWN(" + std::to_string(static_cast<int>(code)) + ")";
}

std::string Operator::type_name() const {
  if (is_custom()) return custom_code.empty() ? "CUSTOM" : custom_code;
  return BuiltinName(code);
}

int Subgraph::FindProducer(int32_t t) const {
  for (size_t i = 0; i < ops.size(); ++i) {
    for (int32_t o : ops[i].outputs)
      if (o == t) return static_cast<int>(i);
  }
  return -1;
}

std::vector<int> Subgraph::FindConsumers(int32_t t) const {
  std::vector<int> out;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (std::find(ops[i].inputs.begin(), ops[i].inputs.end(), t) != ops[i].inputs.end())
      out.push_back(static_cast<int>(i));
  }
  return out;
}

int Subgraph::FindTensor(const std::string& n) const {
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].name == n) return static_cast<int>(i);
  return -1;
}

void Subgraph::ReplaceTensorUses(int32_t from, int32_t to) {
  for (auto& op : ops) {
    for (auto& i : op.inputs)
      if (i == from) i = to;
  }
  for (auto& o : outputs)
    if (o == from) o = to;
}

int32_t Subgraph::AddTensor(Tensor t) {
  tensors.push_back(std::move(t));
  return static_cast<int32_t>(tensors.size() - 1);
}

int Subgraph::InsertOp(int at, Operator op) {
  at = std::clamp(at, 0, static_cast<int>(ops.size()));
  ops.insert(ops.begin() + at, std::move(op));
  return at;
}

void Subgraph::RemoveOp(int index) { ops.erase(ops.begin() + index); }

Graph::PruneStats Graph::DropUnused() {
  PruneStats stats;
  stats.tensors = DropUnusedTensors();
  stats.buffers = DropUnusedBuffers();
  return stats;
}

int Graph::DropUnusedTensors() {
  int dropped = 0;
  for (size_t si = 0; si < subgraphs.size(); ++si) {
    Subgraph& sg = subgraphs[si];
    std::vector<char> used(sg.tensors.size(), 0);
    auto mark = [&](int32_t t) {
      if (t >= 0 && static_cast<size_t>(t) < used.size()) used[t] = 1;
    };
    for (int32_t t : sg.inputs) mark(t);
    for (int32_t t : sg.outputs) mark(t);
    for (const auto& op : sg.ops) {
      for (int32_t t : op.inputs) mark(t);
      for (int32_t t : op.outputs) mark(t);
      for (int32_t t : op.intermediates) mark(t);
    }
    for (const auto& sig : signatures) {
      if (sig.subgraph_index != si) continue;
      for (const auto& m : sig.inputs) mark(static_cast<int32_t>(m.tensor_index));
      for (const auto& m : sig.outputs) mark(static_cast<int32_t>(m.tensor_index));
    }
    std::vector<int32_t> remap(sg.tensors.size(), -1);
    std::vector<Tensor> kept;
    kept.reserve(sg.tensors.size());
    for (size_t i = 0; i < sg.tensors.size(); ++i) {
      if (!used[i]) {
        ++dropped;
        continue;
      }
      remap[i] = static_cast<int32_t>(kept.size());
      kept.push_back(std::move(sg.tensors[i]));
    }
    sg.tensors = std::move(kept);
    // Indices that were out of range stay so (they exceed the old and thus the new count).
    auto fix = [&](std::vector<int32_t>& v) {
      for (auto& t : v)
        if (t >= 0 && static_cast<size_t>(t) < remap.size()) t = remap[t];
    };
    fix(sg.inputs);
    fix(sg.outputs);
    for (auto& op : sg.ops) {
      fix(op.inputs);
      fix(op.outputs);
      fix(op.intermediates);
    }
    for (auto& sig : signatures) {
      if (sig.subgraph_index != si) continue;
      for (auto* maps : {&sig.inputs, &sig.outputs})
        for (auto& m : *maps)
          if (m.tensor_index < remap.size()) m.tensor_index = static_cast<uint32_t>(remap[m.tensor_index]);
    }
  }
  return dropped;
}

int Graph::DropUnusedBuffers() {
  int dropped = 0;
  if (buffers.empty()) buffers.emplace_back();  // the sentinel every model has
  std::vector<char> buffer_used(buffers.size(), 0);
  buffer_used[0] = 1;
  for (const auto& m : metadata)
    if (m.buffer < buffers.size()) buffer_used[m.buffer] = 1;
  for (int32_t b : metadata_buffer)
    if (b >= 0 && static_cast<size_t>(b) < buffers.size()) buffer_used[b] = 1;
  for (const auto& sg : subgraphs)
    for (const auto& t : sg.tensors)
      if (t.buffer < buffers.size()) buffer_used[t.buffer] = 1;

  std::vector<uint32_t> bremap(buffers.size(), 0);
  std::vector<Buffer> kept;
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (!buffer_used[i]) {
      ++dropped;
      continue;
    }
    bremap[i] = static_cast<uint32_t>(kept.size());
    kept.push_back(std::move(buffers[i]));
  }
  buffers = std::move(kept);
  for (auto& sg : subgraphs)
    for (auto& t : sg.tensors)
      if (t.buffer < bremap.size()) t.buffer = bremap[t.buffer];
  for (auto& m : metadata)
    if (m.buffer < bremap.size()) m.buffer = bremap[m.buffer];
  for (auto& b : metadata_buffer)
    if (b >= 0 && static_cast<size_t>(b) < bremap.size()) b = static_cast<int32_t>(bremap[b]);
  return dropped;
}

int Graph::DedupeBuffers() {
  // Hash by content, then confirm byte equality to map duplicates onto the first occurrence.
  std::unordered_multimap<size_t, uint32_t> seen;
  std::vector<uint32_t> canonical(buffers.size());
  int merged = 0;
  std::vector<char> is_metadata(buffers.size(), 0);
  for (const auto& m : metadata)
    if (m.buffer < buffers.size()) is_metadata[m.buffer] = 1;
  for (uint32_t i = 0; i < buffers.size(); ++i) {
    canonical[i] = i;
    auto bytes = buffers[i].bytes();
    if (i == 0 || bytes.empty() || is_metadata[i]) continue;
    size_t h = std::hash<std::string_view>()(
        std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    auto range = seen.equal_range(h);
    bool found = false;
    for (auto it = range.first; it != range.second; ++it) {
      auto other = buffers[it->second].bytes();
      if (other.size() == bytes.size() && std::equal(other.begin(), other.end(), bytes.begin())) {
        canonical[i] = it->second;
        found = true;
        ++merged;
        break;
      }
    }
    if (!found) seen.emplace(h, i);
  }
  if (merged == 0) return 0;
  for (auto& sg : subgraphs)
    for (auto& t : sg.tensors)
      if (t.buffer < canonical.size()) t.buffer = canonical[t.buffer];
  DropUnusedBuffers();
  return merged;
}

size_t ConstantBytes(const Graph& g) {
  std::vector<char> counted(g.buffers.size(), 0);
  size_t total = 0;
  for (const auto& sg : g.subgraphs)
    for (const auto& t : sg.tensors)
      if (t.buffer != 0 && t.buffer < g.buffers.size() && !counted[t.buffer]) {
        counted[t.buffer] = 1;
        total += g.buffers[t.buffer].size();
      }
  return total;
}

}  // namespace edgeopt
