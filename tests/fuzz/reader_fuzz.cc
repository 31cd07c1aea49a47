// libFuzzer target for the .tflite reader and everything a user can do with the resulting Graph
// without running it. Built under ASan+UBSan by scripts/test.sh; run by scripts/fuzz_reader.sh.
//
// Properties checked (a violation aborts, so libFuzzer saves the input):
//  - ReadModelBytes never crashes, hangs or leaks; a rejection carries a non-empty message.
//  - An accepted model can be walked completely (shapes, quantization, sparsity, every constant
//    byte, options), serialized, read back, and the re-read graph equals the first (DiffGraphs).
//  - DropUnused / DedupeBuffers keep the graph writable and readable, and a pruned graph read
//    back equals the pruned graph.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>

#include "format/reader.h"
#include "format/writer.h"
#include "graph/compare.h"
#include "graph/graph.h"

namespace edgeopt {
namespace {

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "reader_fuzz: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

// The byte-by-byte walks below are not worth coverage feedback (every byte would be a compare
// libFuzzer traces); ASan still checks every access.
#define EDGEOPT_NO_COVERAGE __attribute__((no_sanitize("coverage")))

// Sinks values so the reads cannot be optimized away.
volatile uint64_t g_sink;

EDGEOPT_NO_COVERAGE void Consume(uint64_t v) { g_sink = g_sink * 31 + v; }

template <typename T>
EDGEOPT_NO_COVERAGE void ConsumeAs(std::span<const uint8_t> bytes) {
  // Read through memcpy: the walk must not depend on alignment (the reader guarantees it for
  // typed access, which Buffer::as exercises below for the tensor's own type).
  for (size_t i = 0; i + sizeof(T) <= bytes.size(); i += sizeof(T)) {
    T v;
    std::memcpy(&v, bytes.data() + i, sizeof(T));
    uint64_t u = 0;
    std::memcpy(&u, &v, sizeof(T) < sizeof(u) ? sizeof(T) : sizeof(u));
    Consume(u);
  }
}

template <typename T>
EDGEOPT_NO_COVERAGE void ConsumeTyped(const Buffer& b) {
  auto bytes = b.bytes();
  if (reinterpret_cast<uintptr_t>(bytes.data()) % alignof(T) != 0)
    Fail("constant data misaligned for its type (" + std::to_string(alignof(T)) + ")");
  for (const T& v : b.as<T>()) {
    uint64_t u = 0;
    std::memcpy(&u, &v, sizeof(T) < sizeof(u) ? sizeof(T) : sizeof(u));
    Consume(u);
  }
}

EDGEOPT_NO_COVERAGE void WalkConstant(const Graph& g, const Tensor& t) {
  if (t.buffer >= g.buffers.size()) Fail("tensor buffer index out of range after a successful read");
  const Buffer& b = g.buffers[t.buffer];
  if (b.empty()) return;
  switch (t.type) {
    case DType::kFloat32: ConsumeTyped<float>(b); break;
    case DType::kFloat64: ConsumeTyped<double>(b); break;
    case DType::kInt32: ConsumeTyped<int32_t>(b); break;
    case DType::kUInt32: ConsumeTyped<uint32_t>(b); break;
    case DType::kInt64: ConsumeTyped<int64_t>(b); break;
    case DType::kUInt64: ConsumeTyped<uint64_t>(b); break;
    case DType::kInt16: ConsumeTyped<int16_t>(b); break;
    case DType::kUInt16:
    case DType::kFloat16:
    case DType::kBFloat16: ConsumeTyped<uint16_t>(b); break;
    case DType::kComplex64: ConsumeTyped<float>(b); break;
    case DType::kComplex128: ConsumeTyped<double>(b); break;
    default: ConsumeAs<uint8_t>(b.bytes()); break;
  }
  if (!t.sparsity) {
    // Dense data must cover the shape (the reader checks; a user indexes by shape).
    const int64_t n = t.num_elements();
    const size_t need = DTypeBytes(t.type, static_cast<size_t>(n));
    if (DTypeSize(t.type) != 0 && b.size() < need) Fail("constant data shorter than its shape after a successful read");
    if (DTypeSize(t.type) != 0 && n > 0) {
      const uint8_t* last = b.bytes().data() + need - DTypeSize(t.type);
      Consume(*last);
    }
  }
}

void WalkQuant(const Tensor& t) {
  if (!t.quant) return;
  const QuantParams& q = *t.quant;
  Consume(q.min.size() + q.max.size());
  if (!q.has_scale()) return;
  // Per-axis parameters are indexed by channel along quantized_dimension.
  const size_t channels = q.per_axis() ? static_cast<size_t>(t.shape.at(q.quantized_dimension)) : 1;
  for (size_t c = 0; c < channels; ++c) {
    float s = q.sc(c);
    uint32_t bits;
    std::memcpy(&bits, &s, 4);
    Consume(bits);
    Consume(static_cast<uint64_t>(q.zp(c)));
  }
}

void WalkSparsity(const Tensor& t) {
  if (!t.sparsity) return;
  const auto& sp = *t.sparsity;
  for (int32_t d : sp.traversal_order) Consume(static_cast<uint32_t>(d));
  for (int32_t d : sp.block_map) Consume(static_cast<uint32_t>(d));
  for (const auto& dm : sp.dim_metadata) {
    if (!dm) Fail("null sparsity dimension metadata after a successful read");
    Consume(static_cast<uint32_t>(dm->dense_size));
    if (dm->format != tflite::DimensionType_SPARSE_CSR) continue;
    for (const auto* u : {&dm->array_segments, &dm->array_indices}) {
      if (auto* v = u->AsInt32Vector()) for (int32_t x : v->values) Consume(static_cast<uint32_t>(x));
      else if (auto* v16 = u->AsUint16Vector()) for (uint16_t x : v16->values) Consume(x);
      else if (auto* v8 = u->AsUint8Vector()) for (uint8_t x : v8->values) Consume(x);
      else Fail("sparse dimension without index arrays after a successful read");
    }
  }
}

void WalkGraph(const Graph& g) {
  Consume(g.version);
  Consume(ConstantBytes(g));
  for (const Subgraph& sg : g.subgraphs) {
    const int32_t n = static_cast<int32_t>(sg.tensors.size());
    for (int32_t i : sg.inputs)
      if (i < 0 || i >= n) Fail("subgraph input out of range after a successful read");
    for (int32_t i : sg.outputs)
      if (i < 0 || i >= n) Fail("subgraph output out of range after a successful read");
    for (const Tensor& t : sg.tensors) {
      Consume(t.name.size());
      Consume(static_cast<uint64_t>(t.num_elements()));
      Consume(g.IsConstant(t));
      Consume(g.TensorData(t).size());
      Consume(DTypeName(t.type).size());
      WalkConstant(g, t);
      WalkQuant(t);
      WalkSparsity(t);
      for (const auto& v : t.variant_tensors) Consume(v.shape.size());
    }
    for (const Operator& op : sg.ops) {
      Consume(op.type_name().size());
      Consume(OptionsBytes(op).size());
      for (int32_t i : op.inputs) {
        if (i == kNoTensor) continue;
        if (i < 0 || i >= n) Fail("operator input out of range after a successful read");
        Consume(sg.tensors[i].shape.size());
      }
      for (int32_t i : op.outputs)
        if (i < 0 || i >= n) Fail("operator output out of range after a successful read");
      Consume(op.custom_options.size());
    }
    // Producer/consumer queries are linear per call; bound them for huge inputs.
    for (int32_t i = 0; i < n && i < 32; ++i) {
      Consume(static_cast<uint32_t>(sg.FindProducer(i)));
      Consume(sg.FindConsumers(i).size());
    }
    if (n > 0) Consume(static_cast<uint32_t>(sg.FindTensor(sg.tensors[n - 1].name)));
  }
  for (const auto& s : g.signatures) {
    if (s.subgraph_index >= g.subgraphs.size()) Fail("signature subgraph out of range after a successful read");
    const size_t n = g.subgraphs[s.subgraph_index].tensors.size();
    for (const auto& m : s.inputs)
      if (m.tensor_index >= n) Fail("signature input out of range after a successful read");
    for (const auto& m : s.outputs)
      if (m.tensor_index >= n) Fail("signature output out of range after a successful read");
  }
  for (const auto& m : g.metadata) {
    if (m.buffer >= g.buffers.size()) Fail("metadata buffer out of range after a successful read");
    ConsumeAs<uint8_t>(g.buffers[m.buffer].bytes());
  }
}

// Serializes `g`, reads it back and requires the two to be equal.
void RoundTrip(const Graph& g, const WriteOptions& wo, const char* stage) {
  auto bytes = SerializeModel(g, wo);
  if (!bytes.ok()) Fail(std::string(stage) + ": SerializeModel refused a graph: " + bytes.status().ToString());
  auto g2 = ReadModelBytes(*bytes, "rewritten");
  if (!g2.ok()) Fail(std::string(stage) + ": the reader rejects the writer's output: " + g2.status().ToString());
  auto diffs = DiffGraphs(g, *g2);
  if (!diffs.empty()) {
    std::string all;
    for (const auto& d : diffs) all += "\n  " + d;
    Fail(std::string(stage) + ": round trip changed the graph:" + all);
  }
  WalkGraph(*g2);
}

}  // namespace
}  // namespace edgeopt

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace edgeopt;
  auto g = ReadModelBytes(std::span<const uint8_t>(data, size), "fuzz-input");
  if (!g.ok()) {
    if (g.status().message().empty()) Fail("rejection without a message");
    return 0;
  }
  WalkGraph(*g);

  // Alternate between the normal layout and the >2 GB layout (data after the flatbuffer).
  WriteOptions wo;
  if (size > 0 && (data[size - 1] & 1)) wo.external_buffers_threshold = 0;
  RoundTrip(*g, wo, "as read");

  Graph pruned = *g;  // copies share constant data; the original must stay intact
  pruned.DropUnused();
  pruned.DedupeBuffers();
  WalkGraph(pruned);
  RoundTrip(pruned, wo, "after DropUnused+DedupeBuffers");
  // When no tensor was dropped only buffer numbering may differ, which DiffGraphs ignores.
  bool same_tensors = g->subgraphs.size() == pruned.subgraphs.size();
  for (size_t i = 0; same_tensors && i < g->subgraphs.size(); ++i)
    same_tensors = g->subgraphs[i].tensors.size() == pruned.subgraphs[i].tensors.size();
  if (same_tensors && !DiffGraphs(*g, pruned).empty())
    Fail("DropUnused/DedupeBuffers changed a graph without dropping any tensor");
  return 0;
}
