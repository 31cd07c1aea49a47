// Input resolution (--input flags, .npy/raw/image/WAV conversion, random values), labels, top-k,
// and the helpers behind `edgeopt run` (output stats, classifier detection, all-or-nothing .npy
// writing).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "eval/image.h"
#include "eval/inputs.h"
#include "eval/npy.h"
#include "eval/run.h"
#include "support/core/model_files.h"

namespace edgeopt::eval {
namespace {

InputSpec Spec(const std::string& name, DType type, std::vector<int32_t> shape, const QuantParams* q = nullptr) {
  return InputSpec{name, type, std::move(shape), q};
}

HostTensor Tensor(DType type, std::vector<int32_t> shape, std::vector<uint8_t> bytes) {
  HostTensor t;
  t.type = type;
  t.shape = std::move(shape);
  t.data = std::move(bytes);
  return t;
}

template <typename T>
HostTensor TensorOf(DType type, std::vector<int32_t> shape, const std::vector<T>& v) {
  const auto* p = reinterpret_cast<const uint8_t*>(v.data());
  return Tensor(type, std::move(shape), std::vector<uint8_t>(p, p + v.size() * sizeof(T)));
}

void WriteFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// A 16-bit PCM mono WAV with the given samples.
void WriteWav(const std::string& path, const std::vector<int16_t>& samples, int rate = 16000) {
  std::vector<uint8_t> b;
  auto u32 = [&](uint32_t v) { for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i))); };
  auto u16 = [&](uint16_t v) { b.push_back(static_cast<uint8_t>(v)); b.push_back(static_cast<uint8_t>(v >> 8)); };
  auto tag = [&](const char* s) { b.insert(b.end(), s, s + 4); };
  const uint32_t data_bytes = static_cast<uint32_t>(samples.size() * 2);
  tag("RIFF");
  u32(36 + data_bytes);
  tag("WAVE");
  tag("fmt ");
  u32(16);
  u16(1);
  u16(1);
  u32(static_cast<uint32_t>(rate));
  u32(static_cast<uint32_t>(rate * 2));
  u16(2);
  u16(16);
  tag("data");
  u32(data_bytes);
  for (int16_t s : samples) u16(static_cast<uint16_t>(s));
  WriteFile(path, b);
}

class InputsTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::MakeTempDir("eval_inputs"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(InputsTest, MatchesFlagsByNamePositionAndIndex) {
  const std::vector<InputSpec> specs = {Spec("a", DType::kFloat32, {1}), Spec("b", DType::kFloat32, {1}),
                                        Spec("c", DType::kFloat32, {1})};
  auto m = MatchInputFlags({"b=x.npy", "y.npy", "2=z.npy"}, specs);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(*m, (std::vector<std::string>{"y.npy", "x.npy", "z.npy"}));

  auto unknown = MatchInputFlags({"nope=x.npy"}, specs);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("no input named 'nope' (inputs: 'a', 'b', 'c')"), std::string::npos)
      << unknown.status().message();
  auto twice = MatchInputFlags({"a=x.npy", "a=y.npy"}, specs);
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("'a' given twice"), std::string::npos);
  auto many = MatchInputFlags({"1", "2", "3", "4"}, specs);
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.status().message().find("more inputs given than the model has"), std::string::npos);
  EXPECT_FALSE(MatchInputFlags({"a="}, specs).ok());
}

TEST_F(InputsTest, NpyShapeMismatchNamesInputExpectedAndGivenShapes) {
  const std::string p = dir_ + "/x.npy";
  ASSERT_TRUE(WriteNpy(p, TensorOf<float>(DType::kFloat32, {1, 10}, std::vector<float>(10, 0.5f))).ok());
  auto r = LoadInputFile(p, Spec("image", DType::kFloat32, {1, 4, 4, 3}), {});
  ASSERT_FALSE(r.ok());
  const std::string& msg = r.status().message();
  EXPECT_NE(msg.find("input 'image'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expects shape [1,4,4,3]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("holds shape [1,10]"), std::string::npos) << msg;
}

TEST_F(InputsTest, NpyConversions) {
  const std::string p = dir_ + "/x.npy";
  // A missing leading batch 1 is fine.
  ASSERT_TRUE(WriteNpy(p, TensorOf<float>(DType::kFloat32, {3}, {0.0f, 0.5f, 1.0f})).ok());
  auto same = LoadInputFile(p, Spec("x", DType::kFloat32, {1, 3}), {});
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_EQ(same->tensor.shape, (std::vector<int32_t>{1, 3}));
  // Real values for a quantized input are quantized (and said so).
  QuantParams q;
  q.scale = {0.5f};
  q.zero_point = {10};
  auto quant = LoadInputFile(p, Spec("x", DType::kUInt8, {1, 3}, &q), {});
  ASSERT_TRUE(quant.ok()) << quant.status().ToString();
  EXPECT_EQ(quant->tensor.data, (std::vector<uint8_t>{10, 11, 12}));
  EXPECT_FALSE(quant->notes.empty());
  // numpy's default int64 for int32 token ids, when the values fit.
  ASSERT_TRUE(WriteNpy(p, TensorOf<int64_t>(DType::kInt64, {1, 2}, {7, 3})).ok());
  auto ids = LoadInputFile(p, Spec("ids", DType::kInt32, {1, 2}), {});
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  EXPECT_EQ(ids->tensor.type, DType::kInt32);
  EXPECT_EQ(ids->tensor.At(0), 7);
  EXPECT_EQ(ids->tensor.At(1), 3);
  ASSERT_TRUE(WriteNpy(p, TensorOf<int64_t>(DType::kInt64, {1, 2}, {7, int64_t{1} << 40})).ok());
  auto big = LoadInputFile(p, Spec("ids", DType::kInt32, {1, 2}), {});
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("out of range"), std::string::npos) << big.status().message();
  // A type that cannot be converted is explained.
  ASSERT_TRUE(WriteNpy(p, TensorOf<int32_t>(DType::kInt32, {1, 2}, {1, 2})).ok());
  auto bad = LoadInputFile(p, Spec("q", DType::kInt8, {1, 2}, &q), {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("expects int8 data"), std::string::npos) << bad.status().message();
}

TEST_F(InputsTest, MissingAndRawFiles) {
  auto missing = LoadInputFile(dir_ + "/nope.npy", Spec("x", DType::kFloat32, {2}), {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("no such file"), std::string::npos);
  const std::string raw = dir_ + "/x.bin";
  WriteFile(raw, std::vector<uint8_t>(8, 1));
  auto ok = LoadInputFile(raw, Spec("x", DType::kFloat32, {2}), {});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  auto wrong = LoadInputFile(raw, Spec("x", DType::kFloat32, {3}), {});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("needs exactly 12"), std::string::npos);
}

TEST_F(InputsTest, WavIsPaddedOrTruncatedAndSaysSo) {
  const std::string p = dir_ + "/a.wav";
  WriteWav(p, {16384, -16384, 0, 8192, 0, 0, 0, 0, 0, 0});
  auto padded = LoadInputFile(p, Spec("wave", DType::kFloat32, {16}), {});
  ASSERT_TRUE(padded.ok()) << padded.status().ToString();
  EXPECT_EQ(padded->tensor.num_elements(), 16);
  EXPECT_FLOAT_EQ(static_cast<float>(padded->tensor.At(0)), 0.5f);
  EXPECT_FLOAT_EQ(static_cast<float>(padded->tensor.At(1)), -0.5f);
  EXPECT_EQ(padded->tensor.At(15), 0.0);
  ASSERT_EQ(padded->notes.size(), 1u);
  EXPECT_NE(padded->notes[0].find("padded with 6 zeros"), std::string::npos) << padded->notes[0];

  auto cut = LoadInputFile(p, Spec("wave", DType::kFloat32, {1, 4}), {});
  ASSERT_TRUE(cut.ok()) << cut.status().ToString();
  EXPECT_FLOAT_EQ(static_cast<float>(cut->tensor.At(3)), 0.25f);
  ASSERT_EQ(cut->notes.size(), 1u);
  EXPECT_NE(cut->notes[0].find("used the first 4"), std::string::npos) << cut->notes[0];

  auto image_shaped = LoadInputFile(p, Spec("img", DType::kFloat32, {1, 4, 4, 1}), {});
  ASSERT_FALSE(image_shaped.ok());
  EXPECT_NE(image_shaped.status().message().find("1-D waveform"), std::string::npos);
}

TEST_F(InputsTest, RandomValuesAreSeededAndSafe) {
  const auto a = RandomInputFor(Spec("x", DType::kFloat32, {100}), 7);
  const auto b = RandomInputFor(Spec("x", DType::kFloat32, {100}), 7);
  EXPECT_TRUE(a.random);
  EXPECT_EQ(a.tensor.data, b.tensor.data);
  for (int64_t i = 0; i < 100; ++i) {
    EXPECT_GE(a.tensor.At(i), -1.0);
    EXPECT_LE(a.tensor.At(i), 1.0);
  }
  // Plain integer inputs (indices, token ids) get small non-negative values.
  const auto ids = RandomInputFor(Spec("ids", DType::kInt32, {1, 256}), 1);
  for (int64_t i = 0; i < 256; ++i) {
    EXPECT_GE(ids.tensor.At(i), 0);
    EXPECT_LE(ids.tensor.At(i), 9);
  }
  EXPECT_NE(ids.source.find("seed 1"), std::string::npos);
}

TEST_F(InputsTest, ImagesSayWhichNormalizationTheyGot) {
  const std::string p = testing::SharedDataDir() + "/images/cat.bmp";
  if (!testing::FileExists(p)) GTEST_SKIP() << p << " absent";
  auto f = LoadInputFile(p, Spec("image", DType::kFloat32, {1, 32, 32, 3}), {});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_EQ(f->notes.size(), 1u);
  EXPECT_NE(f->notes[0].find("[-1,1] (default)"), std::string::npos) << f->notes[0];
  EXPECT_NE(f->source.find("resized to 32x32"), std::string::npos) << f->source;
  auto given = LoadInputFile(p, Spec("image", DType::kFloat32, {1, 32, 32, 3}), *NormalizationFromFlags("", "", "0,1"));
  ASSERT_TRUE(given.ok());
  EXPECT_TRUE(given->notes.empty());
  auto u8 = LoadInputFile(p, Spec("image", DType::kUInt8, {1, 32, 32, 3}), {});
  ASSERT_TRUE(u8.ok());
  EXPECT_TRUE(u8->notes.empty());
  EXPECT_NE(u8->source.find("raw pixels"), std::string::npos);
  // Per-channel statistics must match the channel count.
  auto two = LoadInputFile(p, Spec("image", DType::kFloat32, {1, 8, 8, 3}), *NormalizationFromFlags("1,2", "3,4", ""));
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.status().message().find("one per channel"), std::string::npos) << two.status().message();
}

TEST(Normalization, FromFlags) {
  EXPECT_EQ(NormalizationFromFlags("", "", "")->kind, PixelNormalization::Kind::kAuto);
  auto ms = NormalizationFromFlags("127.5", "127.5", "");
  ASSERT_TRUE(ms.ok());
  EXPECT_EQ(ms->kind, PixelNormalization::Kind::kMeanStd);
  EXPECT_FALSE(NormalizationFromFlags("1", "", "").ok());
  EXPECT_FALSE(NormalizationFromFlags("1", "0", "").ok());
  EXPECT_FALSE(NormalizationFromFlags("1", "1", "0,1").ok());
  EXPECT_FALSE(NormalizationFromFlags("", "", "1,0").ok());
}

TEST(TopK, TiesGoToTheLowerIndexAndScoresAreDequantized) {
  HostTensor t = Tensor(DType::kUInt8, {1, 5}, {10, 200, 50, 200, 7});
  t.scale = 0.5f;
  t.zero_point = 10;
  const auto top = TopKOf(t, 3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].index, 1);
  EXPECT_EQ(top[1].index, 3);
  EXPECT_EQ(top[2].index, 2);
  EXPECT_DOUBLE_EQ(top[0].score, 95.0);
  EXPECT_EQ(top[0].raw, 200);
  EXPECT_EQ(TopKOf(t, 99).size(), 5u);
}

TEST_F(InputsTest, LabelsKeepLinesAndDropCarriageReturns) {
  const std::string p = dir_ + "/labels.txt";
  WriteFile(p, {'a', '\r', '\n', '\n', 'c', '\n'});
  auto l = ReadLabels(p);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(*l, (std::vector<std::string>{"a", "", "c"}));
  EXPECT_EQ(ReadLabels(dir_ + "/none.txt").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(LabelCountWarning(3, 3, p), "");
  EXPECT_NE(LabelCountWarning(1000, 1001, p).find("background class"), std::string::npos);
}

TEST(RunHelpers, StatsAndClassifierShapes) {
  HostTensor q = Tensor(DType::kInt8, {1, 4}, {0, 10, static_cast<uint8_t>(-10), 20});
  q.scale = 0.1f;
  q.zero_point = 0;
  const ValueStats s = StatsOf(q);
  EXPECT_NEAR(s.min, -1.0, 1e-6);
  EXPECT_NEAR(s.max, 2.0, 1e-6);
  EXPECT_NEAR(s.mean, 0.5, 1e-6);
  EXPECT_TRUE(IsClassifierLike({q}));
  EXPECT_FALSE(IsClassifierLike({q, q}));
  EXPECT_FALSE(IsClassifierLike({Tensor(DType::kFloat32, {1, 1}, std::vector<uint8_t>(4))}));
  EXPECT_FALSE(IsClassifierLike({Tensor(DType::kFloat32, {2, 3}, std::vector<uint8_t>(24))}));
  EXPECT_TRUE(IsClassifierLike({Tensor(DType::kFloat32, {3}, std::vector<uint8_t>(12))}));
  const float nan = std::nanf("");
  const ValueStats n = StatsOf(TensorOf<float>(DType::kFloat32, {3}, {1.0f, nan, 3.0f}));
  EXPECT_EQ(n.nonfinite, 1);
  EXPECT_DOUBLE_EQ(n.mean, 2.0);
}

TEST_F(InputsTest, OutputsAreWrittenAllOrNothing) {
  const std::vector<HostTensor> outs = {TensorOf<float>(DType::kFloat32, {2}, {1.0f, 2.0f}),
                                        TensorOf<int32_t>(DType::kInt32, {1}, {5})};
  const std::string out = dir_ + "/new/sub";
  auto w = WriteOutputsNpy(out, outs);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_EQ(w->size(), 2u);
  auto back = ReadNpy(out + "/output_1.npy");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->type, DType::kInt32);
  EXPECT_EQ(back->data, outs[1].data);

  // A dtype .npy cannot hold: nothing written, no folder created.
  std::vector<HostTensor> bad = outs;
  bad[1].type = DType::kString;
  EXPECT_FALSE(WriteOutputsNpy(dir_ + "/never/made", bad).ok());
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/never"));

  // The second file cannot be written: the first is not left behind.
  const std::string blocked = dir_ + "/blocked";
  std::filesystem::create_directories(blocked);
  const std::string pid = std::to_string(::getpid());
  std::filesystem::create_directories(blocked + "/output_1.npy.partial." + pid + ".tmp." + pid);
  auto fail = WriteOutputsNpy(blocked, outs);
  ASSERT_FALSE(fail.ok());
  EXPECT_NE(fail.status().message().find("nothing written"), std::string::npos) << fail.status().message();
  EXPECT_FALSE(std::filesystem::exists(blocked + "/output_0.npy"));
  EXPECT_FALSE(std::filesystem::exists(blocked + "/output_0.npy.partial." + pid));

  // A file where the folder should be.
  WriteFile(dir_ + "/afile", {1});
  EXPECT_FALSE(WriteOutputsNpy(dir_ + "/afile", outs).ok());
}

}  // namespace
}  // namespace edgeopt::eval
