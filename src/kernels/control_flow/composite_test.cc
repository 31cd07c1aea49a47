// STABLEHLO_COMPOSITE: a model whose main subgraph calls a composite must compute what the same
// model computes with the decomposition inlined. TFLite 2.9 predates the op (its schema has no
// builtin code 206 and no builtin_options_2), so the oracle runs the inlined model; edgeopt runs
// both and must agree bit for bit with itself and with the oracle. LiteRT.js (newer, knows the
// op) runs the composite model itself when it is installed. Plus hostile models (bad index,
// counts, types, shapes, cycles) and a writer round trip of the options.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>

#include "flatbuffers/flexbuffers.h"

#include "format/reader.h"
#include "format/writer.h"
#include "graph/builder.h"
#include "graph/compare.h"
#include "runtime/interpreter.h"
#include "support/conformance.h"
#include "support/op_cases.h"

namespace edgeopt {
namespace {

using testing::CompareOptions;
using testing::TensorValue;

// Emits the decomposition's ops into the current subgraph of `b`: given its input tensor ids,
// returns its output tensor ids.
using Body = std::function<std::vector<int32_t>(GraphBuilder& b, const std::vector<int32_t>& ins)>;

struct Port {
  std::string name;
  DType type = DType::kFloat32;
  std::vector<int32_t> shape;
  std::vector<int32_t> signature;  // empty: static
};

int32_t AddInput(GraphBuilder& b, const Port& p) {
  const int32_t t = b.Input(p.name, p.type, p.shape);
  b.current().tensors[t].shape_signature = p.signature;
  return t;
}

// Converters write the attributes as a FlexBuffer map (empty when the composite has none);
// LiteRT refuses a composite without them.
std::vector<uint8_t> EmptyAttributes() {
  flexbuffers::Builder fb;
  fb.Map([] {});
  fb.Finish();
  return fb.GetBuffer();
}

tflite::BuiltinOptions2Union CompositeOptions(int index, const std::string& name = "odml.test_composite",
                                              std::vector<uint8_t> attributes = EmptyAttributes(), int version = 0) {
  tflite::StableHLOCompositeOptionsT o;
  o.name = name;
  o.decomposition_subgraph_index = index;
  o.composite_attributes = std::move(attributes);
  o.composite_attributes_format = tflite::CustomOptionsFormat_FLEXBUFFERS;
  o.version = version;
  tflite::BuiltinOptions2Union u;
  u.Set(std::move(o));
  return u;
}

// main: outputs = COMPOSITE(inputs) -> subgraph 1 holds the body. `post` (optional) adds ops
// after the composite in main, reading its outputs and returning the graph outputs.
Graph CompositeGraph(const std::vector<Port>& ins, const std::vector<Port>& outs, const Body& body,
                     const Body& post = nullptr) {
  GraphBuilder b;
  std::vector<int32_t> in_ids, out_ids;
  for (const Port& p : ins) in_ids.push_back(AddInput(b, p));
  for (const Port& p : outs) {
    const int32_t t = b.Tensor(p.name, p.type, p.shape);
    b.current().tensors[t].shape_signature = p.signature;
    out_ids.push_back(t);
  }
  b.AddOp2(tflite::BuiltinOperator_STABLEHLO_COMPOSITE, in_ids, out_ids, CompositeOptions(1));
  for (int32_t t : post ? post(b, out_ids) : out_ids) b.Output(t);
  b.NewSubgraph("decomposition");
  std::vector<int32_t> d_ins;
  for (const Port& p : ins) d_ins.push_back(AddInput(b, p));
  for (int32_t t : body(b, d_ins)) b.Output(t);
  return b.Finish();
}

// The same computation in one subgraph.
Graph InlinedGraph(const std::vector<Port>& ins, const Body& body, const Body& post = nullptr) {
  GraphBuilder b;
  std::vector<int32_t> in_ids;
  for (const Port& p : ins) in_ids.push_back(AddInput(b, p));
  const auto outs = body(b, in_ids);
  for (int32_t t : post ? post(b, outs) : outs) b.Output(t);
  return b.Finish();
}

int32_t Binary(GraphBuilder& b, tflite::BuiltinOperator op, int32_t x, int32_t y, const std::string& name, DType type,
               std::vector<int32_t> shape) {
  const int32_t out = b.Tensor(name, type, std::move(shape));
  if (op == tflite::BuiltinOperator_ADD) b.Op(op, {x, y}, {out}, tflite::AddOptionsT{});
  else if (op == tflite::BuiltinOperator_MUL) b.Op(op, {x, y}, {out}, tflite::MulOptionsT{});
  else b.Op(op, {x, y}, {out}, tflite::SubOptionsT{});
  return out;
}

// Runs one model on several input sets in ONE interpreter (inputs resized between invokes), so
// shape changes exercise re-preparing the composite.
Expected<std::vector<std::vector<TensorValue>>> RunSequence(const Graph& g,
                                                            const std::vector<std::vector<TensorValue>>& sets) {
  ASSIGN_OR_RETURN(auto model, rt::Model::FromGraph(g));
  ASSIGN_OR_RETURN(auto interp, rt::Interpreter::Create(model));
  std::vector<std::vector<TensorValue>> results;
  for (const auto& inputs : sets) {
    ASSIGN_OR_RETURN(auto out, testing::InvokeWith(*interp, inputs));
    results.push_back(std::move(out));
  }
  return results;
}

CompareOptions Exact() {
  CompareOptions o = testing::ExactOptions();
  o.rtol = 0;
  return o;
}

// The composite model (edgeopt) against the inlined model in edgeopt (bit-exact) and in TFLite
// 2.9 (when present), and against LiteRT.js running the composite model (when installed and
// `litertjs`: LiteRT.js 2.5.3 cannot resize inputs, and reports the declared shape for outputs
// sized during invoke, so dynamic-shape cases skip it).
void ExpectSameAsInlined(const std::string& label, const Graph& composite, const Graph& inlined,
                         const std::vector<std::vector<TensorValue>>& sets, bool litertjs = true) {
  auto ours = RunSequence(composite, sets);
  ASSERT_TRUE(ours.ok()) << label << ": " << ours.status().ToString();
  auto flat = RunSequence(inlined, sets);
  ASSERT_TRUE(flat.ok()) << label << " (inlined): " << flat.status().ToString();
  auto bytes = SerializeModel(inlined);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  for (size_t k = 0; k < sets.size(); ++k) {
    const std::string case_label = label + " set " + std::to_string(k);
    auto r = testing::CompareOutputs((*ours)[k], (*flat)[k], Exact());
    EXPECT_TRUE(r.ok) << case_label << " vs inlined edgeopt\n" << r.Summary();
    ++testing::CaseCounter();
    if (testing::Tflite29Available()) {
      auto ref = testing::RunTflite29(*bytes, sets[k]);
      ASSERT_TRUE(ref.ok()) << case_label << " TFLite 2.9: " << ref.status().ToString();
      auto r29 = testing::CompareOutputs((*ours)[k], *ref, Exact());
      EXPECT_TRUE(r29.ok) << case_label << " vs inlined TFLite 2.9\n" << r29.Summary();
      ++testing::CaseCounter();
    }
    if (litertjs && testing::LiteRtJsAvailable()) {
      CompareOptions o = Exact();
      o.oracle = testing::Oracle::kLiteRtJs;
      const auto rj = testing::CompareGraph(composite, o, sets[k]);
      EXPECT_TRUE(rj.ok) << case_label << " vs LiteRT.js (composite model)\n" << rj.Summary() << " " << rj.error;
      ++testing::CaseCounter();
    }
  }
}

TensorValue Val(const std::string& name, DType type, std::vector<int32_t> shape, std::mt19937_64& rng) {
  int64_t n = 1;
  for (int32_t d : shape) n *= d;
  TensorValue v;
  v.name = name;
  v.type = type;
  v.shape = std::move(shape);
  v.data = RandomBytesOfType(rng, type, static_cast<size_t>(n), type == DType::kFloat32 ? -2.0 : -100.0,
                             type == DType::kFloat32 ? 2.0 : 100.0);
  return v;
}

// ---- conformance ----------------------------------------------------------------------------

// out = (x + y) * c, c a constant of the decomposition.
TEST(CompositeConformance, AddMulFloat) {
  const std::vector<Port> ins = {{"x", DType::kFloat32, {2, 3}, {}}, {"y", DType::kFloat32, {2, 3}, {}}};
  const std::vector<Port> outs = {{"out", DType::kFloat32, {2, 3}, {}}};
  const Body body = [](GraphBuilder& b, const std::vector<int32_t>& in) {
    const int32_t c = b.Const<float>("c", DType::kFloat32, {3}, {0.5f, -1.25f, 3.0f});
    const int32_t s = Binary(b, tflite::BuiltinOperator_ADD, in[0], in[1], "sum", DType::kFloat32, {2, 3});
    return std::vector<int32_t>{Binary(b, tflite::BuiltinOperator_MUL, s, c, "prod", DType::kFloat32, {2, 3})};
  };
  std::mt19937_64 rng(11);
  std::vector<std::vector<TensorValue>> sets;
  for (int k = 0; k < 3; ++k)
    sets.push_back({Val("x", DType::kFloat32, {2, 3}, rng), Val("y", DType::kFloat32, {2, 3}, rng)});
  ExpectSameAsInlined("add+mul float32", CompositeGraph(ins, outs, body), InlinedGraph(ins, body), sets);
}

// Three inputs (float32 and int32), three outputs: a computed one, an input passed straight
// through, and a constant of the decomposition; the main graph uses the results further.
TEST(CompositeConformance, MultipleInputsAndOutputs) {
  const std::vector<Port> ins = {
      {"a", DType::kFloat32, {4}, {}}, {"b", DType::kFloat32, {4}, {}}, {"n", DType::kInt32, {2, 2}, {}}};
  const std::vector<Port> outs = {
      {"diff", DType::kFloat32, {4}, {}}, {"n_out", DType::kInt32, {2, 2}, {}}, {"k", DType::kInt32, {2}, {}}};
  const Body body = [](GraphBuilder& b, const std::vector<int32_t>& in) {
    const int32_t d = Binary(b, tflite::BuiltinOperator_SUB, in[0], in[1], "diff", DType::kFloat32, {4});
    const int32_t k = b.Const<int32_t>("k", DType::kInt32, {2}, {7, -3});
    return std::vector<int32_t>{d, in[2], k};
  };
  const Body post = [](GraphBuilder& b, const std::vector<int32_t>& r) {
    const int32_t sq = Binary(b, tflite::BuiltinOperator_MUL, r[0], r[0], "sq", DType::kFloat32, {4});
    const int32_t nk = Binary(b, tflite::BuiltinOperator_ADD, r[1], r[2], "nk", DType::kInt32, {2, 2});
    return std::vector<int32_t>{sq, r[1], nk};
  };
  std::mt19937_64 rng(12);
  std::vector<std::vector<TensorValue>> sets;
  for (int k = 0; k < 3; ++k)
    sets.push_back({Val("a", DType::kFloat32, {4}, rng), Val("b", DType::kFloat32, {4}, rng),
                    Val("n", DType::kInt32, {2, 2}, rng)});
  ExpectSameAsInlined("3 in / 3 out", CompositeGraph(ins, outs, body, post), InlinedGraph(ins, body, post), sets);
}

// Inputs with a dynamic batch: the decomposition is declared [-1, 3] and runs at whatever size
// the caller resizes to (one interpreter, sizes changing between invokes, including zero).
TEST(CompositeConformance, DynamicBatch) {
  const std::vector<Port> ins = {{"x", DType::kFloat32, {1, 3}, {-1, 3}}, {"y", DType::kFloat32, {1, 3}, {-1, 3}}};
  const std::vector<Port> outs = {{"out", DType::kFloat32, {1, 3}, {-1, 3}}};
  const Body body = [](GraphBuilder& b, const std::vector<int32_t>& in) {
    const int32_t s = Binary(b, tflite::BuiltinOperator_ADD, in[0], in[1], "sum", DType::kFloat32, {1, 3});
    b.current().tensors[s].shape_signature = {-1, 3};
    const int32_t p = Binary(b, tflite::BuiltinOperator_MUL, s, in[0], "prod", DType::kFloat32, {1, 3});
    b.current().tensors[p].shape_signature = {-1, 3};
    return std::vector<int32_t>{p};
  };
  const Body post = [](GraphBuilder& b, const std::vector<int32_t>& r) {
    const int32_t t = Binary(b, tflite::BuiltinOperator_ADD, r[0], r[0], "twice", DType::kFloat32, {1, 3});
    b.current().tensors[t].shape_signature = {-1, 3};
    return std::vector<int32_t>{t};
  };
  std::mt19937_64 rng(13);
  std::vector<std::vector<TensorValue>> sets;
  for (int n : {1, 5, 2, 0, 7})
    sets.push_back({Val("x", DType::kFloat32, {n, 3}, rng), Val("y", DType::kFloat32, {n, 3}, rng)});
  ExpectSameAsInlined("dynamic batch", CompositeGraph(ins, outs, body, post), InlinedGraph(ins, body, post), sets,
                      /*litertjs=*/false);
}

// The decomposition's output shape depends on input *values* (RESHAPE to a run-time shape): the
// composite's output is sized while the decomposition runs, and the op reading it in the main
// graph is prepared then.
TEST(CompositeConformance, OutputShapeFromValues) {
  const std::vector<Port> ins = {{"x", DType::kFloat32, {2, 6}, {}}, {"shape", DType::kInt32, {2}, {}}};
  const std::vector<Port> outs = {{"y", DType::kFloat32, {2, 6}, {-1, -1}}};
  const Body body = [](GraphBuilder& b, const std::vector<int32_t>& in) {
    const int32_t r = b.Tensor("reshaped", DType::kFloat32, {2, 6});
    b.current().tensors[r].shape_signature = {-1, -1};
    b.Op(tflite::BuiltinOperator_RESHAPE, {in[0], in[1]}, {r}, tflite::ReshapeOptionsT{});
    const int32_t c = b.Const<float>("half", DType::kFloat32, {}, {0.5f});
    const int32_t m = Binary(b, tflite::BuiltinOperator_MUL, r, c, "scaled", DType::kFloat32, {2, 6});
    b.current().tensors[m].shape_signature = {-1, -1};
    return std::vector<int32_t>{m};
  };
  const Body post = [](GraphBuilder& b, const std::vector<int32_t>& r) {
    const int32_t t = Binary(b, tflite::BuiltinOperator_ADD, r[0], r[0], "twice", DType::kFloat32, {2, 6});
    b.current().tensors[t].shape_signature = {-1, -1};
    return std::vector<int32_t>{t};
  };
  std::mt19937_64 rng(14);
  std::vector<std::vector<TensorValue>> sets;
  for (std::vector<int32_t> s : {std::vector<int32_t>{3, 4}, {12, 1}, {2, 6}, {1, 12}}) {
    TensorValue shape;
    shape.name = "shape";
    shape.type = DType::kInt32;
    shape.shape = {2};
    shape.data = testing::Bytes(s);
    sets.push_back({Val("x", DType::kFloat32, {2, 6}, rng), shape});
  }
  ExpectSameAsInlined("run-time output shape", CompositeGraph(ins, outs, body, post), InlinedGraph(ins, body, post),
                      sets, /*litertjs=*/false);
}

// A composite whose decomposition calls another composite (subgraph 1 -> subgraph 2).
TEST(CompositeConformance, Nested) {
  GraphBuilder b;
  const int32_t x = b.Input("x", DType::kFloat32, {2, 2});
  const int32_t y = b.Tensor("y", DType::kFloat32, {2, 2});
  b.AddOp2(tflite::BuiltinOperator_STABLEHLO_COMPOSITE, {x}, {y}, CompositeOptions(1, "outer"));
  b.Output(y);
  b.NewSubgraph("outer");
  {
    const int32_t i = b.Input("x", DType::kFloat32, {2, 2});
    const int32_t inner = b.Tensor("inner", DType::kFloat32, {2, 2});
    b.AddOp2(tflite::BuiltinOperator_STABLEHLO_COMPOSITE, {i}, {inner}, CompositeOptions(2, "inner"));
    b.Output(Binary(b, tflite::BuiltinOperator_ADD, inner, i, "o", DType::kFloat32, {2, 2}));
  }
  b.NewSubgraph("inner");
  {
    const int32_t i = b.Input("x", DType::kFloat32, {2, 2});
    b.Output(Binary(b, tflite::BuiltinOperator_MUL, i, i, "sq", DType::kFloat32, {2, 2}));
  }
  const std::vector<Port> ins = {{"x", DType::kFloat32, {2, 2}, {}}};
  const Body flat = [](GraphBuilder& fb, const std::vector<int32_t>& in) {
    const int32_t sq = Binary(fb, tflite::BuiltinOperator_MUL, in[0], in[0], "sq", DType::kFloat32, {2, 2});
    return std::vector<int32_t>{Binary(fb, tflite::BuiltinOperator_ADD, sq, in[0], "o", DType::kFloat32, {2, 2})};
  };
  std::mt19937_64 rng(15);
  ExpectSameAsInlined("nested", b.Finish(), InlinedGraph(ins, flat),
                      {{Val("x", DType::kFloat32, {2, 2}, rng)}, {Val("x", DType::kFloat32, {2, 2}, rng)}});
}

// TFLite 2.9 cannot run the op (why the oracle gets the inlined model).
TEST(CompositeConformance, Tflite29LacksTheOp) {
  if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  const std::vector<Port> ins = {{"x", DType::kFloat32, {2}, {}}};
  const Body body = [](GraphBuilder& b, const std::vector<int32_t>& in) {
    return std::vector<int32_t>{Binary(b, tflite::BuiltinOperator_ADD, in[0], in[0], "s", DType::kFloat32, {2})};
  };
  EXPECT_TRUE(testing::Tflite29Rejects(CompositeGraph(ins, {{"s", DType::kFloat32, {2}, {}}}, body)));
}

// ---- writer / reader ------------------------------------------------------------------------

TEST(CompositeFormat, OptionsRoundTrip) {
  GraphBuilder b;
  const int32_t x = b.Input("x", DType::kFloat32, {3});
  const int32_t y = b.Tensor("y", DType::kFloat32, {3});
  const std::vector<uint8_t> attrs = {0x61, 0x00, 0x01, 0x02, 0x03, 0x04, 0x0a, 0x24, 0x01};  // opaque bytes
  b.AddOp2(tflite::BuiltinOperator_STABLEHLO_COMPOSITE, {x}, {y}, CompositeOptions(1, "odml.rms_norm", attrs, 3));
  b.Output(y);
  b.NewSubgraph("decomposition");
  const int32_t dx = b.Input("x", DType::kFloat32, {3});
  b.Output(Binary(b, tflite::BuiltinOperator_MUL, dx, dx, "sq", DType::kFloat32, {3}));
  const Graph g = b.Finish();

  auto bytes = SerializeModel(g);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto read = ReadModelBytes(*bytes);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  const Operator& op = read->main().ops.at(0);
  EXPECT_EQ(op.code, tflite::BuiltinOperator_STABLEHLO_COMPOSITE);
  ASSERT_EQ(op.options2.type, tflite::BuiltinOptions2_StableHLOCompositeOptions);
  const auto* o = op.options2.AsStableHLOCompositeOptions();
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->name, "odml.rms_norm");
  EXPECT_EQ(o->decomposition_subgraph_index, 1);
  EXPECT_EQ(o->composite_attributes, attrs);
  EXPECT_EQ(o->composite_attributes_format, tflite::CustomOptionsFormat_FLEXBUFFERS);
  EXPECT_EQ(o->version, 3);

  // read -> write -> read again (what `edgeopt convert` does, also after its cleanups): the
  // same bytes, and the model still runs.
  Graph cleaned = *read;
  cleaned.DropUnused();
  cleaned.DedupeBuffers();
  auto bytes2 = SerializeModel(*read);
  ASSERT_TRUE(bytes2.ok());
  EXPECT_EQ(*bytes2, *bytes);
  auto read2 = ReadModelBytes(*bytes2);
  ASSERT_TRUE(read2.ok());
  const auto diffs = DiffGraphs(*read, *read2);
  EXPECT_TRUE(diffs.empty()) << (diffs.empty() ? "" : diffs[0]);
  auto bytes3 = SerializeModel(cleaned);
  ASSERT_TRUE(bytes3.ok());
  auto read3 = ReadModelBytes(*bytes3);
  ASSERT_TRUE(read3.ok()) << read3.status().ToString();
  EXPECT_TRUE(DiffGraphsSemantic(*read, *read3).empty());
  TensorValue in;
  in.type = DType::kFloat32;
  in.shape = {3};
  in.data = testing::Bytes(std::vector<float>{1.5f, -2.0f, 0.25f});
  auto out = testing::RunOursValues(*read3, {in});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  std::vector<float> v(3);
  std::memcpy(v.data(), (*out)[0].data.data(), 12);
  EXPECT_EQ(v, (std::vector<float>{2.25f, 4.0f, 0.0625f}));

  // An index past the subgraphs is refused by the reader with the field named.
  Graph bad = g;
  static_cast<tflite::StableHLOCompositeOptionsT*>(bad.main().ops[0].options2.value)->decomposition_subgraph_index = 4;
  auto bad_bytes = SerializeModel(bad);
  if (bad_bytes.ok()) {
    auto r = ReadModelBytes(*bad_bytes);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("decomposition_subgraph_index 4 out of range"), std::string::npos)
        << r.status().ToString();
  }
}

// ---- errors ---------------------------------------------------------------------------------

Graph SimpleComposite(int index = 1) {
  GraphBuilder b;
  const int32_t x = b.Input("x", DType::kFloat32, {2, 3});
  const int32_t y = b.Input("y", DType::kFloat32, {2, 3});
  const int32_t o = b.Tensor("o", DType::kFloat32, {2, 3});
  b.AddOp2(tflite::BuiltinOperator_STABLEHLO_COMPOSITE, {x, y}, {o}, CompositeOptions(index, "odml.add"));
  b.Output(o);
  b.NewSubgraph("decomposition");
  const int32_t dx = b.Input("x", DType::kFloat32, {2, 3});
  const int32_t dy = b.Input("y", DType::kFloat32, {2, 3});
  b.Output(Binary(b, tflite::BuiltinOperator_ADD, dx, dy, "s", DType::kFloat32, {2, 3}));
  return b.Finish();
}

void ExpectRejected(const std::string& label, const Graph& g, const std::string& needle,
                    std::vector<TensorValue> inputs = {}) {
  EXPECT_EQ(testing::ExpectRejected(label, g, needle, std::move(inputs)), "");
}

TEST(CompositeErrors, HostileModels) {
  ExpectRejected("index past the end", SimpleComposite(7), "decomposition subgraph index 7 is out of range");
  ExpectRejected("negative index", SimpleComposite(-1), "decomposition subgraph index -1 is out of range");
  ExpectRejected("own subgraph", SimpleComposite(0), "is the subgraph containing the op");
  {
    Graph g = SimpleComposite();
    g.main().ops[0].options2 = tflite::BuiltinOptions2Union();
    ExpectRejected("no options", g, "has no StableHLOCompositeOptions");
  }
  {
    Graph g = SimpleComposite();
    g.main().ops[0].inputs.pop_back();
    ExpectRejected("too few inputs", g, "has 1 inputs, decomposition subgraph 1 takes 2");
  }
  {
    Graph g = SimpleComposite();
    Tensor extra = g.main().tensors[g.main().outputs[0]];
    extra.name = "extra";
    g.main().ops[0].outputs.push_back(g.main().AddTensor(extra));
    ExpectRejected("too many outputs", g, "has 2 outputs, decomposition subgraph 1 yields 1");
  }
  {
    Graph g = SimpleComposite();
    g.subgraphs[1].tensors[g.subgraphs[1].inputs[1]].type = DType::kInt32;
    ExpectRejected("input type", g, "input 1 'y' is float32, decomposition subgraph 1 input 'y' is int32");
  }
  {
    Graph g = SimpleComposite();
    g.main().tensors[g.main().outputs[0]].type = DType::kInt32;
    ExpectRejected("output type", g, "output 0 'o' is int32, decomposition subgraph 1 output 's' is float32");
  }
  {
    // Declared [-1, 3]: a run-time input [2, 4] does not fit (nor does a rank-3 one).
    Graph g = SimpleComposite();
    for (int32_t t : g.subgraphs[1].inputs) g.subgraphs[1].tensors[t].shape_signature = {-1, 3};
    for (int32_t t : g.main().inputs) g.main().tensors[t].shape_signature = {-1, -1};
    std::mt19937_64 rng(3);
    ExpectRejected("fixed dim", g, "does not fit input 0 of decomposition subgraph 1, declared [-1,3]",
                   {Val("x", DType::kFloat32, {2, 4}, rng), Val("y", DType::kFloat32, {2, 4}, rng)});
    Graph g2 = SimpleComposite();
    g2.main().tensors[g2.main().inputs[0]].shape = {1, 2, 3};
    g2.main().tensors[g2.main().inputs[1]].shape = {1, 2, 3};
    ExpectRejected("rank", g2, "does not fit input 0 of decomposition subgraph 1");
  }
  {
    // The decomposition's own op cannot take the shapes: its error, with the composite named.
    Graph g = SimpleComposite();
    for (int32_t t : g.main().inputs) g.main().tensors[t].shape_signature = {-1, -1};
    std::mt19937_64 rng(4);
    ExpectRejected("decomposition op fails", g, "decomposition subgraph 1",
                   {Val("x", DType::kFloat32, {2, 3}, rng), Val("y", DType::kFloat32, {3, 2}, rng)});
  }
  {
    // Subgraphs 1 and 2 are decompositions calling each other: a cycle reported at prepare,
    // not a stack overflow.
    Graph g = SimpleComposite();
    g.subgraphs.push_back(g.subgraphs[1]);
    for (int self : {1, 2}) {
      Subgraph& s = g.subgraphs[self];
      Operator c;
      c.code = tflite::BuiltinOperator_STABLEHLO_COMPOSITE;
      c.inputs = s.inputs;
      Tensor t = s.tensors[s.inputs[0]];
      t.name = "cycle";
      c.outputs = {s.AddTensor(t)};
      c.options2 = CompositeOptions(self == 1 ? 2 : 1);
      s.ops.insert(s.ops.begin(), c);
      s.outputs = {c.outputs[0]};
    }
    ExpectRejected("cycle", g, "used recursively");
  }
}

}  // namespace
}  // namespace edgeopt
