// HASHTABLE / HASHTABLE_IMPORT / HASHTABLE_FIND / HASHTABLE_SIZE against TFLite 2.9 on models
// shaped like converted tf.lookup.StaticHashTable vocabularies: a CALL_ONCE init subgraph creates
// and imports the table, the main subgraph creates the same table_id and finds keys. Several
// invokes with seeded keys (hits and misses), both type directions, repeated keys in the import,
// plus error cases that TFLite rejects too.
//
// Model inputs are int64 only: edgeopt's interpreter cannot take string model inputs, so string
// keys come from constants or from an int64 -> string table chained into a string -> int64 one.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "format/writer.h"
#include "support/conformance.h"
#include "support/multi_invoke.h"
#include "support/op_cases.h"

namespace edgeopt {
namespace {

using testing::TensorValue;

// LiteRT's packed string buffer: int32 count, count+1 int32 offsets from the start, the bytes.
std::vector<uint8_t> PackStrings(const std::vector<std::string>& strings) {
  std::vector<uint8_t> out(4 * (strings.size() + 2));
  const auto put = [&](size_t at, size_t v) {
    const auto x = static_cast<int32_t>(v);
    std::memcpy(out.data() + at, &x, 4);
  };
  put(0, strings.size());
  size_t offset = out.size();
  for (size_t i = 0; i < strings.size(); ++i) {
    put(4 + 4 * i, offset);
    offset += strings[i].size();
  }
  put(4 + 4 * strings.size(), offset);
  for (const auto& s : strings) out.insert(out.end(), s.begin(), s.end());
  return out;
}

std::vector<std::string> UnpackStrings(const std::vector<uint8_t>& b) {
  std::vector<std::string> out;
  if (b.size() < 4) return out;
  int32_t n;
  std::memcpy(&n, b.data(), 4);
  for (int32_t i = 0; i < n; ++i) {
    int32_t lo, hi;
    std::memcpy(&lo, b.data() + 4 + 4 * i, 4);
    std::memcpy(&hi, b.data() + 8 + 4 * i, 4);
    out.emplace_back(reinterpret_cast<const char*>(b.data()) + lo, static_cast<size_t>(hi - lo));
  }
  return out;
}

TensorValue Int64s(const std::string& name, std::vector<int32_t> shape, const std::vector<int64_t>& v) {
  TensorValue t;
  t.name = name;
  t.type = DType::kInt64;
  t.shape = std::move(shape);
  t.data.resize(v.size() * 8);
  if (!v.empty()) std::memcpy(t.data.data(), v.data(), t.data.size());
  return t;
}

tflite::HashtableOptionsT TableOptions(int32_t id, DType key, DType value) {
  tflite::HashtableOptionsT o;
  o.table_id = id;
  o.key_dtype = static_cast<tflite::TensorType>(key);
  o.value_dtype = static_cast<tflite::TensorType>(value);
  return o;
}

int32_t Table(GraphBuilder& b, const std::string& name, int32_t id, DType key, DType value) {
  auto h = b.Tensor(name, DType::kResource, {1});
  b.Op(tflite::BuiltinOperator_HASHTABLE, {}, {h}, TableOptions(id, key, value));
  return h;
}

int32_t ConstStrings(GraphBuilder& b, const std::string& name, const std::vector<std::string>& s) {
  return b.ConstBytes(name, DType::kString, {static_cast<int32_t>(s.size())}, PackStrings(s));
}

int32_t ConstInt64s(GraphBuilder& b, const std::string& name, const std::vector<int64_t>& v) {
  return b.Const<int64_t>(name, DType::kInt64, {static_cast<int32_t>(v.size())}, v);
}

// A vocabulary: ids 0..n-1 (in a scrambled order, `dup` extra repeated keys with other values).
struct Vocab {
  std::vector<int64_t> ids;
  std::vector<std::string> words;
};

Vocab MakeVocab(int n, int dup) {
  Vocab v;
  for (int i = 0; i < n; ++i) {
    const int id = (i * 7 + 3) % n;
    v.ids.push_back(id);
    v.words.push_back(id % 3 == 0 ? "" : "word_" + std::to_string(id) + std::string(static_cast<size_t>(id % 5), 'x'));
  }
  for (int i = 0; i < dup; ++i) {  // repeated id and repeated word, each with a different partner
    v.ids.push_back(i);
    v.words.push_back("dup_" + std::to_string(i));
    v.ids.push_back(1000 + i);
    v.words.push_back(v.words[static_cast<size_t>(i + 1)]);
  }
  return v;
}

// Init subgraph: both tables (int64 -> string id 1, string -> int64 id 2) created and imported.
// `swap_import_types` imports int64 -> string data into table 2 (a type mismatch).
void InitSubgraph(GraphBuilder& b, const Vocab& v, bool swap_import_types = false) {
  b.NewSubgraph("init");
  auto h1 = Table(b, "init_ids_to_words", 1, DType::kInt64, DType::kString);
  auto h2 = Table(b, "init_words_to_ids", 2, DType::kString, DType::kInt64);
  auto ids = ConstInt64s(b, "vocab_ids", v.ids);
  auto words = ConstStrings(b, "vocab_words", v.words);
  b.Op(tflite::BuiltinOperator_HASHTABLE_IMPORT, {h1, ids, words}, {}, tflite::HashtableImportOptionsT{});
  if (swap_import_types)
    b.Op(tflite::BuiltinOperator_HASHTABLE_IMPORT, {h2, ids, words}, {}, tflite::HashtableImportOptionsT{});
  else
    b.Op(tflite::BuiltinOperator_HASHTABLE_IMPORT, {h2, words, ids}, {}, tflite::HashtableImportOptionsT{});
}

// Main: ids (int64 [shape]) -> words via table 1 (default "<unk>"); words -> ids via table 2
// (default -1); constant query words -> ids via table 2 (default 77); both table sizes.
Graph VocabGraph(const Vocab& v, std::vector<int32_t> shape, const std::vector<std::string>& queries,
                 bool swap_import_types = false) {
  GraphBuilder b;
  auto ids = b.Input("ids", DType::kInt64, shape);
  tflite::CallOnceOptionsT co;
  co.init_subgraph_index = 1;
  b.Op(tflite::BuiltinOperator_CALL_ONCE, {}, {}, co);
  auto h1 = Table(b, "ids_to_words", 1, DType::kInt64, DType::kString);
  auto h2 = Table(b, "words_to_ids", 2, DType::kString, DType::kInt64);
  auto unk = ConstStrings(b, "unk", {"<unk>"});
  auto words = b.Tensor("words", DType::kString, shape);
  b.Op(tflite::BuiltinOperator_HASHTABLE_FIND, {h1, ids, unk}, {words}, tflite::HashtableFindOptionsT{});
  auto minus1 = ConstInt64s(b, "minus_one", {-1});
  auto back = b.Tensor("ids_back", DType::kInt64, shape);
  b.Op(tflite::BuiltinOperator_HASHTABLE_FIND, {h2, words, minus1}, {back}, tflite::HashtableFindOptionsT{});
  auto q = ConstStrings(b, "queries", queries);
  auto d77 = ConstInt64s(b, "default_77", {77, 5});
  auto qids = b.Tensor("query_ids", DType::kInt64, {static_cast<int32_t>(queries.size())});
  b.Op(tflite::BuiltinOperator_HASHTABLE_FIND, {h2, q, d77}, {qids}, tflite::HashtableFindOptionsT{});
  auto s1 = b.Tensor("size_1", DType::kInt64, {1});
  b.Op(tflite::BuiltinOperator_HASHTABLE_SIZE, {h1}, {s1}, tflite::HashtableSizeOptionsT{});
  auto s2 = b.Tensor("size_2", DType::kInt64, {1});
  b.Op(tflite::BuiltinOperator_HASHTABLE_SIZE, {h2}, {s2}, tflite::HashtableSizeOptionsT{});
  for (int32_t t : {words, back, qids, s1, s2}) b.Output(t);
  InitSubgraph(b, v, swap_import_types);
  return b.Finish();
}

testing::CompareOptions KeyRange(int64_t hi) {
  testing::CompareOptions o;
  o.int_lo = -3;  // some misses below, some above the vocabulary
  o.int_hi = static_cast<double>(hi);
  o.rtol = 0;
  o.atol = 0;
  return o;
}

TEST(HashtableConformance, VocabularyBothDirectionsOverInvokes) {
  SKIP_WITHOUT_ORACLE();
  struct Case {
    int n, dup;
    std::vector<int32_t> shape;
  };
  const std::vector<Case> cases = {{10, 0, {6}}, {25, 3, {2, 7}}, {1, 0, {1}}, {40, 5, {3, 2, 4}}, {12, 2, {}}};
  const std::vector<std::string> queries = {"word_1x", "", "nope", "dup_0", "word_2xx", "<unk>", "word_4xxxx"};
  uint64_t seed = 11;
  for (const Case& c : cases) {
    const Vocab v = MakeVocab(c.n, c.dup);
    testing::CompareOptions o = KeyRange(c.n + 3);
    o.seed = seed++;
    auto report = testing::CompareGraphInvokes(VocabGraph(v, c.shape, queries), 4, o);
    EXPECT_TRUE(report.ok) << "n=" << c.n << " dup=" << c.dup << " shape=" << rt::ShapeToString(c.shape) << ": "
                           << report.Summary() << " " << report.error;
  }
}

// Zero-size keys give zero-size outputs (an empty string buffer for the string output).
TEST(HashtableConformance, EmptyKeys) {
  SKIP_WITHOUT_ORACLE();
  const Vocab v = MakeVocab(5, 1);
  auto report = testing::CompareGraphInvokes(VocabGraph(v, {0}, {}), 2, KeyRange(8));
  EXPECT_TRUE(report.ok) << report.Summary() << " " << report.error;
  auto report2 = testing::CompareGraphInvokes(VocabGraph(v, {2, 0}, {"word_1x"}), 2, KeyRange(8));
  EXPECT_TRUE(report2.ok) << report2.Summary() << " " << report2.error;
}

// No init subgraph: the main subgraph imports at every invoke (TFLite keeps only the first
// import; a second import with other data in the same invoke is ignored too).
TEST(HashtableConformance, ImportInMainSubgraphOnlyFirstCounts) {
  SKIP_WITHOUT_ORACLE();
  GraphBuilder b;
  auto ids = b.Input("ids", DType::kInt64, {2, 5});
  auto h = Table(b, "t", 7, DType::kInt64, DType::kString);
  auto k1 = ConstInt64s(b, "k1", {4, -2, 9, 4});
  auto v1 = ConstStrings(b, "v1", {"four", "minus two", "nine", "four again"});
  b.Op(tflite::BuiltinOperator_HASHTABLE_IMPORT, {h, k1, v1}, {}, tflite::HashtableImportOptionsT{});
  auto d = ConstStrings(b, "d", {"?", "unused"});
  auto out = b.Tensor("out", DType::kString, {2, 5});
  b.Op(tflite::BuiltinOperator_HASHTABLE_FIND, {h, ids, d}, {out}, tflite::HashtableFindOptionsT{});
  auto k2 = ConstInt64s(b, "k2", {1, 2, 3});
  auto v2 = ConstStrings(b, "v2", {"one", "two", "three"});
  b.Op(tflite::BuiltinOperator_HASHTABLE_IMPORT, {h, k2, v2}, {}, tflite::HashtableImportOptionsT{});
  auto s = b.Tensor("size", DType::kInt64, {1});
  b.Op(tflite::BuiltinOperator_HASHTABLE_SIZE, {h}, {s}, tflite::HashtableSizeOptionsT{});
  b.Output(out);
  b.Output(s);
  const Graph g = b.Finish();
  auto report = testing::CompareGraphInvokes(g, 3, KeyRange(10));
  EXPECT_TRUE(report.ok) << report.Summary() << " " << report.error;
  auto ours = testing::RunOursValues(g, {Int64s("ids", {2, 5}, {4, -2, 9, 1, 0, 2, 3, 4, 4, 5})});
  ASSERT_TRUE(ours.ok()) << ours.status().ToString();
  EXPECT_EQ(UnpackStrings((*ours)[0].data),
            (std::vector<std::string>{"four", "minus two", "nine", "?", "?", "?", "?", "four", "four", "?"}));
  int64_t size = 0;
  std::memcpy(&size, (*ours)[1].data.data(), 8);
  EXPECT_EQ(size, 3);
}

// Hand-checked values (first value wins for a repeated key; sizes count distinct keys).
TEST(HashtableRuntime, ValuesAndSizes) {
  const Vocab v = MakeVocab(10, 2);  // ids 0..9, ids 0 and 1 repeated; words of ids 1 and 2 repeated
  auto out = testing::RunOursValues(VocabGraph(v, {5}, {"word_1x", "dup_1", "zzz"}),
                                    {Int64s("ids", {5}, {0, 1, 2, 9, 10})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const auto& o = *out;
  ASSERT_EQ(o.size(), 5u);
  EXPECT_EQ(UnpackStrings(o[0].data), (std::vector<std::string>{"", "word_1x", "word_2xx", "", "<unk>"}));
  std::vector<int64_t> back(5), q(3), s1(1), s2(1);
  std::memcpy(back.data(), o[1].data.data(), 40);
  std::memcpy(q.data(), o[2].data.data(), 24);
  std::memcpy(s1.data(), o[3].data.data(), 8);
  std::memcpy(s2.data(), o[4].data.data(), 8);
  // "" is the word of ids 0, 3, 6, 9: the first imported of them (vocab order 3, 0, 7, 4, 1, 8,
  // 5, 2, 9, 6) is 3. Words repeated by the dup entries keep their first id.
  EXPECT_EQ(back, (std::vector<int64_t>{3, 1, 2, 3, -1}));
  EXPECT_EQ(q, (std::vector<int64_t>{1, 1, 77}));
  EXPECT_EQ(s1[0], 12);  // 10 ids + 1000, 1001
  EXPECT_EQ(s2[0], 9);   // 7 distinct words of ids 0..9 ("" once) + dup_0, dup_1
}

// Expects both runtimes to reject `g`; ours with a message containing `needle`.
void ExpectBothFail(const Graph& g, const std::vector<TensorValue>& inputs, const std::string& needle,
                    const std::string& label) {
  const Status s = testing::RunOurs(g, inputs);
  EXPECT_FALSE(s.ok()) << label << ": edgeopt accepted";
  EXPECT_NE(s.message().find(needle), std::string::npos) << label << ": " << s.ToString();
  if (testing::Tflite29Available()) {
    auto bytes = SerializeModel(g);
    ASSERT_TRUE(bytes.ok());
    auto ref = testing::RunTflite29(*bytes, inputs);
    EXPECT_FALSE(ref.ok()) << label << ": TFLite 2.9 accepted";
  }
}

TEST(HashtableErrors, RejectedAsTfliteDoes) {
  const Vocab v = MakeVocab(6, 0);
  const std::vector<TensorValue> in = {Int64s("ids", {3}, {0, 1, 7})};
  {
    Graph g = VocabGraph(v, {3}, {"a"});
    g.main().ops.erase(g.main().ops.begin());  // no CALL_ONCE: find before any import
    ExpectBothFail(g, in, "initialized", "find before import");
  }
  ExpectBothFail(VocabGraph(v, {3}, {"a"}, /*swap_import_types=*/true), in, "do not match",
                 "import of int64 -> string data into a string -> int64 table");
  {
    Graph g = VocabGraph(v, {3}, {"a"});
    auto& o = *static_cast<tflite::HashtableOptionsT*>(g.main().ops[1].options.value);
    o.key_dtype = tflite::TensorType_INT32;
    o.value_dtype = tflite::TensorType_FLOAT32;
    ExpectBothFail(g, in, "not supported", "int32 -> float32 table");
  }
  {
    // The init subgraph creates table 1 as string -> int64 (the main subgraph's HASHTABLE then
    // keeps it) and imports int64 -> string data into it.
    Graph g = VocabGraph(v, {3}, {"a"});
    auto& o = *static_cast<tflite::HashtableOptionsT*>(g.subgraphs[1].ops[0].options.value);
    o.key_dtype = tflite::TensorType_STRING;
    o.value_dtype = tflite::TensorType_INT64;
    ExpectBothFail(g, in, "do not match", "table created with other types than its import");
  }
  {
    GraphBuilder b;  // default value of another type than the output
    auto ids = b.Input("ids", DType::kInt64, {3});
    auto h = Table(b, "t", 1, DType::kInt64, DType::kString);
    auto d = ConstInt64s(b, "d", {0});
    auto out = b.Tensor("out", DType::kString, {3});
    b.Op(tflite::BuiltinOperator_HASHTABLE_FIND, {h, ids, d}, {out}, tflite::HashtableFindOptionsT{});
    b.Output(out);
    ExpectBothFail(b.Finish(), in, "default value", "int64 default for a string output");
  }
  {
    GraphBuilder b;  // keys and values of different shapes
    auto ids = b.Input("ids", DType::kInt64, {3});
    auto h = Table(b, "t", 1, DType::kInt64, DType::kString);
    auto k = ConstInt64s(b, "k", {1, 2});
    auto w = ConstStrings(b, "w", {"a", "b", "c"});
    b.Op(tflite::BuiltinOperator_HASHTABLE_IMPORT, {h, k, w}, {}, tflite::HashtableImportOptionsT{});
    auto s = b.Tensor("size", DType::kInt64, {1});
    b.Op(tflite::BuiltinOperator_HASHTABLE_SIZE, {h}, {s}, tflite::HashtableSizeOptionsT{});
    (void)ids;
    b.Output(s);
    ExpectBothFail(b.Finish(), in, "same shape", "keys [2] values [3]");
  }
}

}  // namespace
}  // namespace edgeopt
