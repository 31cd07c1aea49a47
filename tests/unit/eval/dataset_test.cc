// Labelled datasets: .npy batches with labels.npy, folders labelled by subfolder, file name or a
// labels CSV, preprocessing, splitting, and clear errors on bad input.
#include "eval/dataset.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "eval/npy.h"
#include "support/core/model_files.h"

namespace edgeopt::eval {
namespace {

namespace fs = std::filesystem;

HostTensor U8(std::vector<int32_t> shape, int start) {
  HostTensor t;
  t.type = DType::kUInt8;
  t.shape = std::move(shape);
  t.data.resize(static_cast<size_t>(t.num_elements()));
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = static_cast<uint8_t>(start + i);
  return t;
}

HostTensor I64(std::vector<int64_t> values) {
  HostTensor t;
  t.type = DType::kInt64;
  t.shape = {static_cast<int32_t>(values.size())};
  t.data.resize(values.size() * 8);
  std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

InputSpec FloatSpec(std::vector<int32_t> shape) {
  // Aggregate initialization: assigning the name afterwards trips a GCC 12 false -Wstringop-overflow.
  return InputSpec{std::string(1, 'x'), DType::kFloat32, std::move(shape), nullptr};
}

void Touch(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

TEST(Dataset, NpyBatchWithLabelsAndRangePreprocessing) {
  const std::string dir = testing::MakeTempDir("ds_npy");
  ASSERT_TRUE(WriteNpy(dir + "/images.npy", U8({4, 2, 2}, 10)).ok());
  ASSERT_TRUE(WriteNpy(dir + "/labels.npy", I64({3, 1, 4, 1})).ok());
  const std::vector<InputSpec> specs = {FloatSpec({1, 2, 2})};
  for (const std::string& given : {dir + "/images.npy", dir}) {
    auto d = Dataset::Open({given}, specs);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    ASSERT_EQ(d->size(), 4u);
    ASSERT_TRUE(d->labelled());
    EXPECT_EQ(d->label(0), 3);
    EXPECT_EQ(d->label(2), 4);
    EXPECT_EQ(d->label_source(), "labels.npy");
    EXPECT_EQ(d->sample_name(2), "images.npy[2]");
  }
  auto d = Dataset::Open({dir + "/images.npy"}, specs);
  ASSERT_TRUE(d.ok());
  Preprocess pp;
  pp.norm.kind = PixelNormalization::Kind::kRange;
  pp.norm.lo = 0;
  pp.norm.hi = 1;
  auto in = d->Load(1, specs, pp);
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  ASSERT_EQ(in->size(), 1u);
  EXPECT_EQ((*in)[0].shape, (std::vector<int32_t>{1, 2, 2}));
  EXPECT_EQ((*in)[0].type, DType::kFloat32);
  // Sample 1 holds pixels 14..17.
  EXPECT_FLOAT_EQ(static_cast<float>((*in)[0].At(0)), 14.0f / 255.0f);
  EXPECT_FLOAT_EQ(static_cast<float>((*in)[0].At(3)), 17.0f / 255.0f);
  pp.norm.kind = PixelNormalization::Kind::kMeanStd;
  pp.norm.mean = {10};
  pp.norm.stddev = {2};
  in = d->Load(0, specs, pp);
  ASSERT_TRUE(in.ok());
  EXPECT_FLOAT_EQ(static_cast<float>((*in)[0].At(1)), 0.5f);

  // Spread picks samples across the whole set, not the first ones.
  auto [cal, rest] = d->SplitEvenly(2);
  EXPECT_EQ(cal.size(), 2u);
  EXPECT_EQ(rest.size(), 2u);
  EXPECT_EQ(cal.label(0), 1);  // sample 1
  EXPECT_EQ(cal.label(1), 1);  // sample 3
  EXPECT_EQ(rest.label(0), 3);
  fs::remove_all(dir);
}

TEST(Dataset, FolderLabelsFromSubfoldersFileNamesAndCsv) {
  const std::string dir = testing::MakeTempDir("ds_folder");
  const std::vector<InputSpec> specs = {FloatSpec({1, 2, 2})};
  // Subfolder names (not numbers): classes in sorted order, or via a class-names file.
  fs::create_directories(dir + "/sub/dog");
  fs::create_directories(dir + "/sub/cat");
  ASSERT_TRUE(WriteNpy(dir + "/sub/dog/a.npy", U8({2, 2}, 0)).ok());
  ASSERT_TRUE(WriteNpy(dir + "/sub/cat/b.npy", U8({2, 2}, 0)).ok());
  ASSERT_TRUE(WriteNpy(dir + "/sub/cat/c.npy", U8({2, 2}, 0)).ok());
  auto d = Dataset::Open({dir + "/sub"}, specs);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->size(), 3u);
  EXPECT_EQ(d->label_source(), "folder names");
  EXPECT_EQ(d->label(0), 0);  // cat/b
  EXPECT_EQ(d->label(2), 1);  // dog/a
  EXPECT_EQ(d->class_names(), (std::vector<std::string>{"cat", "dog"}));
  Touch(dir + "/names.txt", "dog\ncat\n");
  DatasetOptions o;
  o.class_names = dir + "/names.txt";
  d = Dataset::Open({dir + "/sub"}, specs, o);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->label(0), 1);
  EXPECT_EQ(d->label(2), 0);

  // File names: first word is the class.
  fs::create_directories(dir + "/flat");
  ASSERT_TRUE(WriteNpy(dir + "/flat/7_0001.npy", U8({2, 2}, 0)).ok());
  ASSERT_TRUE(WriteNpy(dir + "/flat/2-0002.npy", U8({2, 2}, 0)).ok());
  d = Dataset::Open({dir + "/flat"}, specs);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->label_source(), "file names");
  EXPECT_EQ(d->label(0), 2);
  EXPECT_EQ(d->label(1), 7);

  // A labels CSV beats file names.
  Touch(dir + "/flat/labels.csv", "file,label\n7_0001.npy,5\n2-0002.npy,6\n");
  d = Dataset::Open({dir + "/flat"}, specs);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->label_source(), "labels.csv");
  EXPECT_EQ(d->label(0), 6);
  EXPECT_EQ(d->label(1), 5);

  // Unlabelled files: no labels, not an error.
  fs::create_directories(dir + "/plain");
  ASSERT_TRUE(WriteNpy(dir + "/plain/x.npy", U8({2, 2}, 0)).ok());
  ASSERT_TRUE(WriteNpy(dir + "/plain/y.npy", U8({2, 2}, 0)).ok());
  d = Dataset::Open({dir + "/plain"}, specs);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->labelled());
  fs::remove_all(dir);
}

TEST(Dataset, BadInputGivesClearErrors) {
  const std::string dir = testing::MakeTempDir("ds_bad");
  const std::vector<InputSpec> specs = {FloatSpec({1, 2, 2})};
  auto d = Dataset::Open({dir + "/missing.npy"}, specs);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("missing.npy"), std::string::npos);
  ASSERT_TRUE(WriteNpy(dir + "/wrong.npy", U8({3, 5}, 0)).ok());
  d = Dataset::Open({dir + "/wrong.npy"}, specs);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("wrong.npy"), std::string::npos);
  ASSERT_TRUE(WriteNpy(dir + "/images.npy", U8({4, 2, 2}, 0)).ok());
  ASSERT_TRUE(WriteNpy(dir + "/labels.npy", I64({1, 2, 3})).ok());
  d = Dataset::Open({dir + "/images.npy"}, specs);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("labels"), std::string::npos);
  d = Dataset::Open({"nosuch=" + dir + "/images.npy"}, specs);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("nosuch"), std::string::npos);
  d = Dataset::Open({"random:0"}, specs);
  EXPECT_FALSE(d.ok());
  fs::remove_all(dir);
}

TEST(Dataset, RandomSamplesAreSeededAndRepeatable) {
  const std::vector<InputSpec> specs = {FloatSpec({1, 4})};
  auto d = Dataset::Open({"random:3"}, specs);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->size(), 3u);
  EXPECT_FALSE(d->labelled());
  auto a = d->Load(1, specs, {});
  auto b = d->Load(1, specs, {});
  auto c = d->Load(2, specs, {});
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ((*a)[0].data, (*b)[0].data);
  EXPECT_NE((*a)[0].data, (*c)[0].data);
}

TEST(Dataset, ReadsTheSharedMnistSet) {
  const std::string dir = testing::SharedDataDir() + "/mnist";
  if (!testing::FileExists(dir + "/images_uint8.npy")) GTEST_SKIP() << dir << "/images_uint8.npy absent";
  auto d = Dataset::Open({dir}, {FloatSpec({1, 28, 28})});
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->size(), 10000u);
  EXPECT_TRUE(d->labelled());
  for (size_t i = 0; i < d->size(); i += 997) {
    EXPECT_GE(d->label(i), 0);
    EXPECT_LE(d->label(i), 9);
  }
}

}  // namespace
}  // namespace edgeopt::eval
