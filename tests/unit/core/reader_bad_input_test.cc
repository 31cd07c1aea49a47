// Hostile and broken inputs to the reader: every one must give a non-OK Status whose message
// names the problem, and never crash (this file also runs under ASan+UBSan).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>

#include "flatbuffers/flatbuffers.h"
#include "format/reader.h"
#include "format/writer.h"
#include "graph/builder.h"
#include "graph/compare.h"
#include "graph/model_zoo.h"
#include "support/core/feature_models.h"
#include "support/core/model_files.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EDGEOPT_UNDER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(EDGEOPT_UNDER_ASAN)
#define EDGEOPT_UNDER_ASAN 1
#endif

namespace edgeopt {
namespace {

using testing::AllRealModels;
using testing::MakeTempDir;
using testing::ReadFileBytes;

#ifdef EDGEOPT_UNDER_ASAN
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// The message names the problem: it contains one of `words`.
::testing::AssertionResult FailsWith(const Expected<Graph>& g, std::initializer_list<const char*> words) {
  if (g.ok()) return ::testing::AssertionFailure() << "read succeeded; expected an error mentioning " << *words.begin();
  const std::string& m = g.status().message();
  for (const char* w : words)
    if (m.find(w) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "message lacks the expected words: " << g.status().ToString();
}

void WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::vector<uint8_t> Serialize(const Graph& g, const WriteOptions& wo = {}) {
  auto bytes = SerializeModel(g, wo);
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return bytes.ok() ? *bytes : std::vector<uint8_t>();
}

// Reads `bytes`; when that succeeds, the graph must survive write + read unchanged.
void ReadMustNotCrash(const std::vector<uint8_t>& bytes, const std::string& what) {
  auto g = ReadModelBytes(bytes, what);
  if (!g.ok()) {
    EXPECT_FALSE(g.status().message().empty()) << what;
    return;
  }
  auto again = SerializeModel(*g);
  ASSERT_TRUE(again.ok()) << what << ": " << again.status().ToString();
  auto g2 = ReadModelBytes(*again, what + " (rewritten)");
  ASSERT_TRUE(g2.ok()) << what << ": " << g2.status().ToString();
  auto diffs = DiffGraphs(*g, *g2);
  EXPECT_TRUE(diffs.empty()) << what << ": " << diffs.front();
}

// ---------------------------------------------------------------------------------------------
// Files that are not models.

TEST(ReaderBadInput, EmptyFile) {
  auto dir = MakeTempDir("bad_empty");
  WriteBytes(dir + "/empty.tflite", {});
  EXPECT_TRUE(FailsWith(ReadModelFile(dir + "/empty.tflite"), {"empty"}));
  EXPECT_TRUE(FailsWith(ReadModelBytes({}, "nothing"), {"empty"}));
}

TEST(ReaderBadInput, Directory) {
  auto dir = MakeTempDir("bad_dir");
  EXPECT_TRUE(FailsWith(ReadModelFile(dir), {"directory"}));
}

TEST(ReaderBadInput, MissingFile) {
  auto g = ReadModelFile("/nonexistent/edgeopt/model.tflite");
  EXPECT_TRUE(FailsWith(g, {"no such file"}));
  EXPECT_EQ(g.status().code(), StatusCode::kNotFound);
  EXPECT_NE(g.status().message().find("/nonexistent/edgeopt/model.tflite"), std::string::npos);
}

TEST(ReaderBadInput, CharacterDevice) { EXPECT_TRUE(FailsWith(ReadModelFile("/dev/null"), {"not a regular file"})); }

TEST(ReaderBadInput, FifoIsRejectedWithoutBlocking) {
  auto dir = MakeTempDir("bad_fifo");
  const std::string fifo = dir + "/pipe.tflite";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_TRUE(FailsWith(ReadModelFile(fifo), {"not a regular file"}));
}

TEST(ReaderBadInput, TooSmallAndWrongIdentifier) {
  EXPECT_TRUE(FailsWith(ReadModelBytes(std::vector<uint8_t>{1, 2, 3}, "three"), {"too small"}));
  std::vector<uint8_t> zeros(64, 0);
  EXPECT_TRUE(FailsWith(ReadModelBytes(zeros, "zeros"), {"TFL3"}));
  auto bytes = Serialize(TinyMlp());
  std::memcpy(bytes.data() + 4, "TFL2", 4);
  EXPECT_TRUE(FailsWith(ReadModelBytes(bytes, "tfl2"), {"not a .tflite"}));
}

TEST(ReaderBadInput, RandomBytesOfManyLengths) {
  std::mt19937_64 rng(1234);
  int tested = 0;
  for (size_t len = 0; len < 5000; len = len < 64 ? len + 1 : len * 5 / 4) {
    for (int rep = 0; rep < 4; ++rep) {
      std::vector<uint8_t> bytes(len);
      for (auto& b : bytes) b = static_cast<uint8_t>(rng());
      // Half of them carry the identifier, so they reach the verifier.
      if (rep % 2 == 1 && len >= 8) std::memcpy(bytes.data() + 4, "TFL3", 4);
      auto g = ReadModelBytes(bytes, "random");
      EXPECT_FALSE(g.ok()) << "random bytes of length " << len << " accepted";
      if (!g.ok()) {
        EXPECT_FALSE(g.status().message().empty());
      }
      ++tested;
    }
  }
  std::printf("[ info ] %d random byte strings rejected\n", tested);
}

// ---------------------------------------------------------------------------------------------
// Truncation and bit flips of real models.

// Truncated bytes either fail with a message about it or (only trailing padding was cut) read
// as the same graph.
void CheckTruncation(const std::vector<uint8_t>& full, const Graph& original, size_t len, const std::string& name) {
  std::vector<uint8_t> cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(len));
  auto g = ReadModelBytes(cut, name);
  if (g.ok()) {
    auto diffs = DiffGraphs(original, *g);
    EXPECT_TRUE(diffs.empty()) << name << " cut to " << len << " bytes reads as a different graph: " << diffs.front();
    return;
  }
  EXPECT_TRUE(FailsWith(g, {"truncated", "too small", "empty", "past the end", "not a .tflite"}))
      << name << " cut to " << len << " bytes";
}

TEST(ReaderBadInput, EveryTruncationOfASmallModel) {
  std::vector<uint8_t> full;
  std::string name = "hello_world_int8.tflite";
  auto path = testing::SharedModel(name);
  if (path.empty()) {
    name = "TinyCnn";
    full = Serialize(TinyCnn());
  } else {
    full = ReadFileBytes(path);
  }
  auto original = ReadModelBytes(full, name);
  ASSERT_TRUE(original.ok()) << original.status().ToString();
  for (size_t len = 0; len < full.size(); ++len) CheckTruncation(full, *original, len, name);
  std::printf("[ info ] %zu truncations of %s\n", full.size(), name.c_str());
}

TEST(ReaderBadInput, RandomTruncationsOfEveryRealModel) {
  EDGEOPT_REQUIRE_SHARED_MODELS();
  const int per_model = kSanitized ? 25 : 250;
  std::mt19937_64 rng(99);
  int tested = 0;
  for (const auto& path : AllRealModels()) {
    auto full = ReadFileBytes(path);
    auto original = ReadModelBytes(full, path);
    ASSERT_TRUE(original.ok()) << original.status().ToString();
    std::uniform_int_distribution<size_t> pick(0, full.size() - 1);
    for (int i = 0; i < per_model; ++i, ++tested) CheckTruncation(full, *original, pick(rng), testing::Basename(path));
  }
  std::printf("[ info ] %d random truncations\n", tested);
}

TEST(ReaderBadInput, ThousandsOfBitFlips) {
  // Real models when present, generated ones otherwise (and always a few generated ones).
  struct Subject {
    std::string name;
    std::vector<uint8_t> bytes;
    std::vector<size_t> structure;  // offsets outside constant data, where flips matter most
  };
  std::vector<Subject> subjects;
  for (const auto& path : AllRealModels()) subjects.push_back({testing::Basename(path), ReadFileBytes(path), {}});
  subjects.push_back({"EveryFeatureModel", Serialize(testing::EveryFeatureModel()), {}});
  WriteOptions external;
  external.external_buffers_threshold = 0;
  subjects.push_back({"EveryFeatureModel(external)", Serialize(testing::EveryFeatureModel(), external), {}});
  subjects.push_back({"TinyCnn", Serialize(TinyCnn()), {}});
  for (auto& s : subjects) {
    // The original must read. Its constant data (where flips only change weights) is located
    // from the buffer views into the bytes the reader saw.
    auto mapped = MappedFile::FromBytes(s.bytes, s.name);
    auto g = ReadModel(mapped);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    std::vector<std::pair<size_t, size_t>> ranges;
    for (const auto& b : g->buffers)
      if (!b.empty() && b.is_view()) {
        const size_t begin = static_cast<size_t>(b.bytes().data() - mapped->data());
        ranges.emplace_back(begin, begin + b.size());
      }
    std::sort(ranges.begin(), ranges.end());
    size_t r = 0;
    for (size_t pos = 0; pos < s.bytes.size(); ++pos) {
      while (r < ranges.size() && ranges[r].second <= pos) ++r;
      if (r < ranges.size() && pos >= ranges[r].first) {
        pos = ranges[r].second - 1;
        continue;
      }
      s.structure.push_back(pos);
    }
  }

  const auto budget = std::chrono::seconds(kSanitized ? 25 : 15);
  const int max_flips = kSanitized ? 1500 : 20000;
  const auto start = std::chrono::steady_clock::now();
  std::mt19937_64 rng(20240601);
  int tested = 0, accepted = 0;
  // Small models first in the rotation: they are cheap, so most flips land in them.
  std::stable_sort(subjects.begin(), subjects.end(),
                   [](const Subject& a, const Subject& b) { return a.bytes.size() < b.bytes.size(); });
  while (tested < max_flips && std::chrono::steady_clock::now() - start < budget) {
    // Size-weighted toward small subjects: pick uniformly among the smaller half twice as often.
    size_t idx = rng() % subjects.size();
    if (rng() % 3 != 0) idx = rng() % std::max<size_t>(1, subjects.size() / 2);
    const Subject& s = subjects[idx];
    std::vector<uint8_t> bytes = s.bytes;
    const int flips = 1 + static_cast<int>(rng() % 8);
    for (int f = 0; f < flips; ++f) {
      size_t pos;
      const int where = static_cast<int>(rng() % 4);
      if (where == 0) {
        pos = rng() % std::min<size_t>(bytes.size(), 128);  // header, root table, model vtable
      } else if (where <= 2 && !s.structure.empty()) {
        pos = s.structure[rng() % s.structure.size()];  // tables, vtables, vectors, strings
      } else {
        pos = rng() % bytes.size();
      }
      bytes[pos] ^= static_cast<uint8_t>(1u << (rng() % 8));
    }
    SCOPED_TRACE(s.name + " flip #" + std::to_string(tested));
    auto g = ReadModelBytes(bytes, s.name);
    if (g.ok()) {
      ++accepted;
      ReadMustNotCrash(bytes, s.name);
    } else {
      EXPECT_FALSE(g.status().message().empty());
    }
    ++tested;
    if (::testing::Test::HasFailure()) break;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ info ] %d bit-flipped models (1-8 bits) in %.1f s: %d rejected, %d still valid and round-tripped\n",
              tested, secs, tested - accepted, accepted);
  EXPECT_GE(tested, kSanitized ? 100 : 1000);
}

// ---------------------------------------------------------------------------------------------
// Targeted corruptions: built with GraphBuilder, corrupted in the IR where the writer lets it
// through, patched in the flatbuffer bytes where it does not.

tflite::Model* Mutable(std::vector<uint8_t>& bytes) { return tflite::GetMutableModel(bytes.data()); }

TEST(ReaderBadInput, BufferOffsetPastTheEnd) {
  WriteOptions wo;
  wo.external_buffers_threshold = 0;
  auto bytes = Serialize(TinyCnn(), wo);
  ASSERT_FALSE(bytes.empty());
  auto* buffers = Mutable(bytes)->mutable_buffers();
  tflite::Buffer* target = nullptr;
  size_t index = 0;
  for (size_t i = 0; i < buffers->size() && !target; ++i)
    if (buffers->Get(static_cast<uint32_t>(i))->offset() > 1) target = buffers->GetMutableObject(static_cast<uint32_t>(i)), index = i;
  ASSERT_NE(target, nullptr);
  const uint64_t offset = target->offset();
  {
    auto b = bytes;
    tflite::GetMutableModel(b.data())->mutable_buffers()->GetMutableObject(index)->mutate_offset(b.size() + 100);
    auto g = ReadModelBytes(b, "offset-past-end");
    EXPECT_TRUE(FailsWith(g, {"past the end"}));
    EXPECT_NE(g.status().message().find("buffer " + std::to_string(index)), std::string::npos) << g.status().message();
  }
  {
    auto b = bytes;
    tflite::GetMutableModel(b.data())->mutable_buffers()->GetMutableObject(index)->mutate_size(
        std::numeric_limits<uint64_t>::max() - 8);  // offset + size wraps around
    EXPECT_TRUE(FailsWith(ReadModelBytes(b, "size-wraps"), {"past the end"}));
  }
  {
    auto b = bytes;
    tflite::GetMutableModel(b.data())->mutable_buffers()->GetMutableObject(index)->mutate_size(b.size() - offset + 1);
    EXPECT_TRUE(FailsWith(ReadModelBytes(b, "size-past-end"), {"past the end"}));
  }
}

TEST(ReaderBadInput, OperatorTensorIndicesOutOfRange) {
  Graph g = TinyCnn();
  const int n = static_cast<int>(g.main().tensors.size());
  {
    Graph bad = g;
    bad.main().ops[0].inputs[0] = 99;
    auto refused = SerializeModel(bad);
    ASSERT_FALSE(refused.ok());  // the writer checks op inputs...
    EXPECT_NE(refused.status().message().find("out of range"), std::string::npos);
  }
  // ...so patch the bytes.
  auto bytes = Serialize(g);
  auto* op = Mutable(bytes)->mutable_subgraphs()->GetMutableObject(0)->mutable_operators()->GetMutableObject(0);
  op->mutable_inputs()->Mutate(0, 99);
  auto r = ReadModelBytes(bytes, "op-input");
  EXPECT_TRUE(FailsWith(r, {"out of range"}));
  EXPECT_NE(r.status().message().find("operator 0 (CONV_2D) input refers to tensor 99"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("subgraph 0"), std::string::npos);

  bytes = Serialize(g);
  op = Mutable(bytes)->mutable_subgraphs()->GetMutableObject(0)->mutable_operators()->GetMutableObject(1);
  op->mutable_outputs()->Mutate(0, -5);
  EXPECT_TRUE(FailsWith(ReadModelBytes(bytes, "op-output"), {"output refers to tensor -5, out of range"}));

  // An omitted optional input (-1) is fine; -1 as an output is not.
  Graph optional = g;
  optional.main().ops[0].inputs[2] = kNoTensor;
  EXPECT_TRUE(ReadModelBytes(Serialize(optional), "optional").ok());

  Graph inter = g;  // the writer does not check intermediates
  inter.main().ops[0].intermediates = {n + 3};
  EXPECT_TRUE(FailsWith(ReadModelBytes(Serialize(inter), "intermediate"), {"intermediate refers to tensor"}));

  Graph inputs = g;  // nor subgraph inputs/outputs
  inputs.main().inputs = {n};
  EXPECT_TRUE(FailsWith(ReadModelBytes(Serialize(inputs), "sg-input"), {"subgraph input refers to tensor"}));
  Graph outputs = g;
  outputs.main().outputs = {-1};
  EXPECT_TRUE(FailsWith(ReadModelBytes(Serialize(outputs), "sg-output"), {"subgraph output refers to tensor -1"}));
}

TEST(ReaderBadInput, BufferIndexOutOfRange) {
  Graph g = TinyCnn();
  Graph bad = g;
  bad.main().tensors[1].buffer = 999;
  ASSERT_FALSE(SerializeModel(bad).ok());  // the writer refuses
  auto bytes = Serialize(g);
  auto* t = Mutable(bytes)->mutable_subgraphs()->GetMutableObject(0)->mutable_tensors()->GetMutableObject(1);
  ASSERT_TRUE(t->mutate_buffer(999));
  auto r = ReadModelBytes(bytes, "buffer-index");
  EXPECT_TRUE(FailsWith(r, {"buffer index 999 out of range"}));
  EXPECT_NE(r.status().message().find("tensor 1 '" + g.main().tensors[1].name + "'"), std::string::npos)
      << r.status().message();
}

TEST(ReaderBadInput, OpcodeIndexOutOfRange) {
  // Operator 1 (DEPTHWISE_CONV_2D) has opcode index 1; default values (0) are not stored, so
  // only non-default fields can be patched in place.
  auto bytes = Serialize(TinyCnn());
  auto* op = Mutable(bytes)->mutable_subgraphs()->GetMutableObject(0)->mutable_operators()->GetMutableObject(1);
  ASSERT_TRUE(op->mutate_opcode_index(4242));
  EXPECT_TRUE(FailsWith(ReadModelBytes(bytes, "opcode"), {"opcode index 4242 out of range"}));
}

TEST(ReaderBadInput, SubgraphIndicesOutOfRange) {
  Graph g = testing::EveryFeatureModel();
  ASSERT_TRUE(ReadModelBytes(Serialize(g), "valid").ok());
  {
    Graph bad = g;
    bad.signatures[1].subgraph_index = 7;
    EXPECT_TRUE(FailsWith(ReadModelBytes(Serialize(bad), "sig"), {"refers to subgraph 7, out of range"}));
  }
  for (auto& op : g.main().ops) {
    if (op.code != tflite::BuiltinOperator_IF) continue;
    Graph bad = g;
    for (auto& o : bad.main().ops)
      if (auto* io = o.options.AsIfOptions()) io->else_subgraph_index = 3;
    auto r = ReadModelBytes(Serialize(bad), "if");
    EXPECT_TRUE(FailsWith(r, {"else_subgraph_index 3 out of range"}));
    EXPECT_NE(r.status().message().find("(IF)"), std::string::npos) << r.status().message();
    Graph neg = g;
    for (auto& o : neg.main().ops)
      if (auto* io = o.options.AsIfOptions()) io->then_subgraph_index = -1;
    EXPECT_TRUE(FailsWith(ReadModelBytes(Serialize(neg), "if"), {"then_subgraph_index -1 out of range"}));
  }
  {
    Graph bad = TinyMlp();
    tflite::WhileOptionsT w;
    w.cond_subgraph_index = 0;
    w.body_subgraph_index = 1;
    bad.main().ops[0].options.Set(std::move(w));
    EXPECT_TRUE(FailsWith(ReadModelBytes(Serialize(bad), "while"), {"body_subgraph_index 1 out of range"}));
  }
}

TEST(ReaderBadInput, SignatureAndMetadataIndicesOutOfRange) {
  Graph g = testing::EveryFeatureModel();
  {
    Graph bad = g;
    bad.signatures[0].outputs[0].tensor_index = 5000;
    EXPECT_TRUE(FailsWith(ReadModelBytes(Serialize(bad), "sig-tensor"), {"refers to tensor 5000, out of range"}));
  }
  {
    Graph bad = g;
    bad.metadata[1].buffer = 777;
    EXPECT_TRUE(FailsWith(ReadModelBytes(Serialize(bad), "metadata"), {"refers to buffer 777, out of range"}));
  }
  {
    Graph bad = g;
    bad.metadata_buffer = {-2};
    EXPECT_TRUE(FailsWith(ReadModelBytes(Serialize(bad), "metadata_buffer"), {"metadata_buffer entry -2 out of range"}));
  }
}

TEST(ReaderBadInput, HostileShapes) {
  auto one = [](std::vector<int32_t> shape, DType type = DType::kFloat32) {
    GraphBuilder b;
    int32_t x = b.Input("x", type, std::move(shape));
    int32_t y = b.Tensor("y", type, {1});
    b.Op(tflite::BuiltinOperator_RELU, {x}, {y});
    b.Output(y);
    return ReadModelBytes(Serialize(b.Finish()), "shape");
  };
  auto neg = one({1, -3, 4});
  EXPECT_TRUE(FailsWith(neg, {"negative dimension -3"}));
  EXPECT_NE(neg.status().message().find("tensor 0 'x'"), std::string::npos) << neg.status().message();
  EXPECT_TRUE(FailsWith(one({1 << 20, 1 << 20}), {"elements"}));  // 2^40
  EXPECT_TRUE(FailsWith(one({65536, 65536, 65536}), {"elements"}));
  EXPECT_TRUE(FailsWith(one(std::vector<int32_t>(17, 1)), {"rank 17 exceeds"}));
  EXPECT_TRUE(one({0, 5}).ok());  // empty tensors are legal
  // shape_signature: rank must match, -1 is the only negative allowed.
  GraphBuilder b;
  int32_t x = b.Input("x", DType::kFloat32, {1, 4});
  b.Output(x);
  Graph g = b.Finish();
  g.main().tensors[x].shape_signature = {-1, 4, 2};
  EXPECT_TRUE(FailsWith(ReadModelBytes(Serialize(g), "sig-rank"), {"shape_signature rank"}));
  g.main().tensors[x].shape_signature = {-2, 4};
  EXPECT_TRUE(FailsWith(ReadModelBytes(Serialize(g), "sig-dim"), {"invalid dimension -2"}));
}

TEST(ReaderBadInput, ConstantDataShorterThanItsShape) {
  GraphBuilder b;
  int32_t w = b.ConstBytes("w", DType::kFloat32, {4, 4}, std::vector<uint8_t>(60, 0));  // needs 64
  int32_t y = b.Tensor("y", DType::kFloat32, {4, 4});
  b.Op(tflite::BuiltinOperator_RELU, {w}, {y});
  b.Output(y);
  auto r = ReadModelBytes(Serialize(b.Finish()), "short");
  EXPECT_TRUE(FailsWith(r, {"constant data has 60 bytes but its shape and type need 64"}));
  EXPECT_NE(r.status().message().find("'w'"), std::string::npos);
}

TEST(ReaderBadInput, UnknownTensorAndOptionTypes) {
  Graph g = TinyCnn();
  auto bytes = Serialize(g);
  const int shape = g.main().FindTensor("pool/shape");  // int32: a non-default type is stored
  ASSERT_GE(shape, 0);
  auto* t = Mutable(bytes)->mutable_subgraphs()->GetMutableObject(0)->mutable_tensors()->GetMutableObject(shape);
  ASSERT_TRUE(t->mutate_type(static_cast<tflite::TensorType>(100)));
  EXPECT_TRUE(FailsWith(ReadModelBytes(bytes, "type"), {"unknown tensor type 100"}));

  bytes = Serialize(g);
  auto* op = Mutable(bytes)->mutable_subgraphs()->GetMutableObject(0)->mutable_operators()->GetMutableObject(0);
  // Union type fields have no generated mutator: write the byte in place.
  auto* type = reinterpret_cast<flatbuffers::Table*>(op)->GetAddressOf(tflite::Operator::VT_BUILTIN_OPTIONS_TYPE);
  ASSERT_NE(type, nullptr);
  *type = 250;
  EXPECT_TRUE(FailsWith(ReadModelBytes(bytes, "options"), {"unknown builtin options type 250"}));

  // Same for quantization details (a union type with no value would crash Pack and copies).
  Graph f = testing::EveryFeatureModel();
  bytes = Serialize(f);
  const int cq = f.main().FindTensor("custom_quant");
  ASSERT_GE(cq, 0);
  auto* q = Mutable(bytes)->mutable_subgraphs()->GetMutableObject(0)->mutable_tensors()->GetMutableObject(cq)->mutable_quantization();
  auto* details = reinterpret_cast<flatbuffers::Table*>(q)->GetAddressOf(tflite::QuantizationParameters::VT_DETAILS_TYPE);
  ASSERT_NE(details, nullptr);
  *details = 200;
  auto r = ReadModelBytes(bytes, "details");
  EXPECT_TRUE(FailsWith(r, {"unknown quantization details type 200"}));
  EXPECT_NE(r.status().message().find("'custom_quant'"), std::string::npos) << r.status().message();
}

QuantParams PerAxis(size_t n, int axis) { return QuantPerAxis(std::vector<float>(n, 0.1f), axis); }

Expected<Graph> WithWeightQuant(std::optional<QuantParams> q) {
  GraphBuilder b;
  int32_t x = b.Input("x", DType::kInt8, {1, 2, 2, 3}, Quant(0.1f, 0));
  int32_t w = b.ConstRandom("w", DType::kInt8, {4, 1, 1, 3}, -127, 127, std::move(q));
  int32_t y = b.Tensor("y", DType::kInt8, {1, 2, 2, 4}, Quant(0.1f, 0));
  tflite::Conv2DOptionsT o;
  o.stride_w = o.stride_h = 1;
  b.Op(tflite::BuiltinOperator_CONV_2D, {x, w, kNoTensor}, {y}, o);
  b.Output(y);
  return ReadModelBytes(Serialize(b.Finish()), "quant");
}

TEST(ReaderBadInput, BadQuantization) {
  EXPECT_TRUE(WithWeightQuant(PerAxis(4, 0)).ok());
  auto wrong = WithWeightQuant(PerAxis(3, 0));
  EXPECT_TRUE(FailsWith(wrong, {"per-axis quantization has 3 scales for dimension 0 of size 4"}));
  EXPECT_NE(wrong.status().message().find("'w'"), std::string::npos) << wrong.status().message();
  EXPECT_TRUE(FailsWith(WithWeightQuant(PerAxis(4, 4)), {"dimension 4 of a rank-4 tensor is out of range"}));
  EXPECT_TRUE(FailsWith(WithWeightQuant(PerAxis(4, -1)), {"out of range"}));
  QuantParams zps = PerAxis(4, 0);
  zps.zero_point = {0, 0, 0};
  EXPECT_TRUE(FailsWith(WithWeightQuant(zps), {"4 scales but 3 zero points"}));
  for (float bad : {-0.5f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    QuantParams q = PerAxis(4, 0);
    q.scale[2] = bad;
    EXPECT_TRUE(FailsWith(WithWeightQuant(q), {"negative or not finite"})) << bad;
  }
  QuantParams bw = Quant(0.1f, 0);
  tflite::BlockwiseQuantizationT b;
  b.scales = 12;
  b.zero_points = -1;
  b.block_size = 32;
  bw.details.Set(std::move(b));
  EXPECT_TRUE(FailsWith(WithWeightQuant(bw), {"quantization scales tensor 12 out of range"}));
}

// A 4x4 sparse constant with `sp`, holding `values` floats.
Expected<Graph> WithSparsity(std::shared_ptr<tflite::SparsityParametersT> sp, size_t values = 4,
                             std::vector<int32_t> shape = {4, 4}) {
  GraphBuilder b;
  int32_t s = b.Tensor("sparse", DType::kFloat32, shape);
  b.current().tensors[s].buffer = b.graph().AddBuffer(Buffer::Owned(std::vector<uint8_t>(values * 4, 0)));
  b.current().tensors[s].sparsity = std::move(sp);
  int32_t d = b.Tensor("dense", DType::kFloat32, shape);
  b.Op(tflite::BuiltinOperator_DENSIFY, {s}, {d});
  b.Output(d);
  return ReadModelBytes(Serialize(b.Finish()), "sparse");
}

using SparsityEdit = void (*)(tflite::SparsityParametersT&);

std::shared_ptr<tflite::SparsityParametersT> Edited(SparsityEdit edit) {
  auto sp = std::make_shared<tflite::SparsityParametersT>(*testing::CsrSparsity4x4());
  edit(*sp);
  return sp;
}

tflite::Int32VectorT* Segments(tflite::SparsityParametersT& sp) { return sp.dim_metadata[1]->array_segments.AsInt32Vector(); }
tflite::Uint8VectorT* Indices(tflite::SparsityParametersT& sp) { return sp.dim_metadata[1]->array_indices.AsUint8Vector(); }

TEST(ReaderBadInput, HostileSparsity) {
  ASSERT_TRUE(WithSparsity(testing::CsrSparsity4x4()).ok());
  struct Case {
    const char* what;
    SparsityEdit edit;
    const char* expect;
  };
  const Case cases[] = {
      {"traversal out of range", [](auto& sp) { sp.traversal_order = {0, 5}; }, "traversal order entry 5 out of range"},
      {"traversal repeats", [](auto& sp) { sp.traversal_order = {1, 1}; }, "repeats dimension 1"},
      {"metadata count", [](auto& sp) { sp.dim_metadata.pop_back(); }, "1 dimension metadata entries"},
      {"fewer dims than rank", [](auto& sp) { sp.traversal_order = {0}; sp.dim_metadata.pop_back(); }, "fewer than the tensor's rank"},
      {"dense size", [](auto& sp) { sp.dim_metadata[0]->dense_size = 5; }, "dense size 5 differs from dimension size 4"},
      {"segments decreasing", [](auto& sp) { Segments(sp)->values = {0, 2, 1, 3, 4}; }, "negative or decreasing"},
      {"segments negative", [](auto& sp) { Segments(sp)->values = {-1, 1, 1, 3, 4}; }, "negative or decreasing"},
      {"segment count", [](auto& sp) { Segments(sp)->values = {0, 1, 3, 4}; }, "4 segments, expected 5"},
      {"last segment", [](auto& sp) { Segments(sp)->values = {0, 1, 1, 3, 40}; }, "last segment 40 differs from the 4 indices"},
      {"index out of range", [](auto& sp) { Indices(sp)->values = {2, 0, 9, 1}; }, "index 9 out of range [0, 4)"},
      {"no index arrays", [](auto& sp) { sp.dim_metadata[1]->array_indices.Reset(); }, "without (known) segment and index arrays"},
      {"block map without block dims", [](auto& sp) { sp.block_map = {0}; }, "block map has 1 entries for 0 block dimensions"},
      {"block size zero",
       [](auto& sp) {
         sp.traversal_order = {0, 1, 2};
         sp.block_map = {1};
         auto blk = std::make_unique<tflite::DimensionMetadataT>();
         blk->dense_size = 0;
         sp.dim_metadata.push_back(std::move(blk));
       },
       "block size 0 is not positive"},
      {"block map out of range",
       [](auto& sp) {
         sp.traversal_order = {0, 1, 2};
         sp.block_map = {2};
         auto blk = std::make_unique<tflite::DimensionMetadataT>();
         blk->dense_size = 2;
         sp.dim_metadata.push_back(std::move(blk));
       },
       "block map entry 2 out of range"},
      {"block size does not divide",
       [](auto& sp) {
         sp.traversal_order = {0, 1, 2};
         sp.block_map = {1};
         auto blk = std::make_unique<tflite::DimensionMetadataT>();
         blk->dense_size = 3;
         sp.dim_metadata.push_back(std::move(blk));
       },
       "block size 3 does not divide dimension 1"},
      {"huge dense", [](auto& sp) { sp.dim_metadata[1]->format = tflite::DimensionType_DENSE; sp.dim_metadata[1]->dense_size = 4; }, "sparse encoding and type need 64"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    auto r = WithSparsity(Edited(c.edit));
    EXPECT_TRUE(FailsWith(r, {c.expect}));
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("'sparse'"), std::string::npos) << r.status().message();
    }
  }
  // The stored values must fit the buffer: 4 values need 16 bytes.
  EXPECT_TRUE(FailsWith(WithSparsity(testing::CsrSparsity4x4(), 3), {"has 12 bytes but its sparse encoding and type need 16"}));
}

TEST(ReaderBadInput, MalformedStringData) {
  auto with = [](std::vector<uint8_t> bytes) {
    GraphBuilder b;
    int32_t s = b.ConstBytes("words", DType::kString, {2}, std::move(bytes));
    int32_t y = b.Tensor("y", DType::kString, {2});
    b.Op(tflite::BuiltinOperator_RESHAPE, {s}, {y});
    b.Output(y);
    return ReadModelBytes(Serialize(b.Finish()), "strings");
  };
  auto good = testing::StringTensorBytes({"ab", "cde"});
  EXPECT_TRUE(with(good).ok());
  auto many = good;
  many[0] = 200;  // claims 200 strings
  EXPECT_TRUE(FailsWith(with(many), {"claims 200 strings"}));
  auto past = good;
  past[12] = 250;  // last offset past the end
  EXPECT_TRUE(FailsWith(with(past), {"string offset 2"}));
  auto backwards = good;
  backwards[8] = 30;  // second offset beyond the third
  EXPECT_TRUE(FailsWith(with(backwards), {"out of range or decreasing"}));
  EXPECT_TRUE(FailsWith(with({1, 0, 0}), {"truncated"}));
}

TEST(ReaderBadInput, VectorClaimingMillionsOfElements) {
  auto bytes = Serialize(TinyCnn());
  auto* t = Mutable(bytes)->mutable_subgraphs()->GetMutableObject(0)->mutable_tensors()->GetMutableObject(0);
  auto* shape = t->mutable_shape();
  const size_t len_at = static_cast<size_t>(reinterpret_cast<const uint8_t*>(shape) - bytes.data());
  const uint32_t huge = 50'000'000;
  std::memcpy(bytes.data() + len_at, &huge, 4);
  EXPECT_TRUE(FailsWith(ReadModelBytes(bytes, "huge-vector"), {"corrupt or truncated"}));
}

// A small file whose tables share one large vector: materializing it would take ~8 GB.
TEST(ReaderBadInput, SharedVectorExpansionBomb) {
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<int32_t> many(20000, 0);
  auto inputs = fbb.CreateVector(many);
  auto outputs = fbb.CreateVector(std::vector<int32_t>{0});
  auto op = tflite::CreateOperator(fbb, 0, inputs, outputs);
  std::vector<flatbuffers::Offset<tflite::Operator>> ops(100000, op);  // 100k references to one table
  auto x = tflite::CreateTensor(fbb, fbb.CreateVector(std::vector<int32_t>{1}), tflite::TensorType_FLOAT32, 0,
                                fbb.CreateString("x"));
  auto sg = tflite::CreateSubGraph(fbb, fbb.CreateVector(std::vector<flatbuffers::Offset<tflite::Tensor>>{x}),
                                   fbb.CreateVector(std::vector<int32_t>{0}), fbb.CreateVector(std::vector<int32_t>{0}),
                                   fbb.CreateVector(ops));
  auto code = tflite::CreateOperatorCode(fbb, 0, 0, 1, tflite::BuiltinOperator_ADD);
  auto buffers = fbb.CreateVector(std::vector<flatbuffers::Offset<tflite::Buffer>>{tflite::CreateBuffer(fbb)});
  auto model = tflite::CreateModel(fbb, 3, fbb.CreateVector(std::vector<flatbuffers::Offset<tflite::OperatorCode>>{code}),
                                   fbb.CreateVector(std::vector<flatbuffers::Offset<tflite::SubGraph>>{sg}), 0, buffers);
  fbb.Finish(model, tflite::ModelIdentifier());
  std::vector<uint8_t> bytes(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  ASSERT_LT(bytes.size(), 1u << 20);
  const auto start = std::chrono::steady_clock::now();
  auto g = ReadModelBytes(bytes, "bomb");
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(FailsWith(g, {"shared by many parents", "flatbuffer verification failed"}));
  EXPECT_LT(secs, 5.0);
}

TEST(ReaderBadInput, ErrorsNameTheFile) {
  auto dir = MakeTempDir("bad_name");
  auto bytes = Serialize(TinyCnn());
  auto* op = Mutable(bytes)->mutable_subgraphs()->GetMutableObject(0)->mutable_operators()->GetMutableObject(1);
  ASSERT_TRUE(op->mutate_opcode_index(77));
  const std::string path = dir + "/broken.tflite";
  WriteBytes(path, bytes);
  auto g = ReadModelFile(path);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidModel);
  EXPECT_EQ(g.status().message().rfind("'" + path + "': subgraph 0: operator 1: opcode index 77", 0), 0u)
      << g.status().message();
}

TEST(ReaderBadInput, MisalignedConstantsAreCopiedAligned) {
  // Data after the flatbuffer at an odd offset: typed access must still be aligned.
  GraphBuilder b;
  int32_t c = b.Const<double>("c", DType::kFloat64, {3}, std::vector<double>{1.5, -2.5, 3.5});
  int32_t y = b.Tensor("y", DType::kFloat64, {3});
  b.Op(tflite::BuiltinOperator_RELU, {c}, {y});
  b.Output(y);
  WriteOptions wo;
  wo.external_buffers_threshold = 0;
  auto bytes = Serialize(b.Finish(), wo);
  auto* buf = Mutable(bytes)->mutable_buffers()->GetMutableObject(1);
  const uint64_t off = buf->offset();
  bytes.insert(bytes.begin() + static_cast<std::ptrdiff_t>(off), 3, 0);  // shift the data by 3
  tflite::GetMutableModel(bytes.data())->mutable_buffers()->GetMutableObject(1)->mutate_offset(off + 3);
  auto g = ReadModelBytes(bytes, "misaligned");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  const Buffer& data = g->buffers[g->main().tensors[c].buffer];
  EXPECT_EQ(reinterpret_cast<uintptr_t>(data.bytes().data()) % alignof(double), 0u);
  auto values = data.as<double>();
  ASSERT_EQ(values.size(), 3u);
  EXPECT_EQ(values[1], -2.5);
}

}  // namespace
}  // namespace edgeopt
