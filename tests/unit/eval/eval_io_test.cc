// .npy and image input handling.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "eval/image.h"
#include "eval/npy.h"
#include "support/core/model_files.h"

namespace edgeopt::eval {
namespace {

TEST(Npy, RoundTripsEveryDtypeAndShape) {
  const std::string dir = testing::MakeTempDir("npy");
  for (DType t : {DType::kFloat32, DType::kInt8, DType::kUInt8, DType::kInt16, DType::kInt32, DType::kInt64,
                  DType::kFloat16, DType::kBool, DType::kFloat64}) {
    for (std::vector<int32_t> shape : {std::vector<int32_t>{}, {7}, {2, 3, 5}}) {
      HostTensor a;
      a.type = t;
      a.shape = shape;
      a.data.resize(DTypeBytes(t, static_cast<size_t>(a.num_elements())));
      for (size_t i = 0; i < a.data.size(); ++i) a.data[i] = static_cast<uint8_t>(i * 37 + 1);
      if (t == DType::kBool) for (auto& b : a.data) b &= 1;
      const std::string p = dir + "/a.npy";
      ASSERT_TRUE(WriteNpy(p, a).ok());
      auto b = ReadNpy(p);
      ASSERT_TRUE(b.ok()) << b.status().ToString();
      EXPECT_EQ(b->type, t);
      EXPECT_EQ(b->shape, shape);
      EXPECT_EQ(b->data, a.data);
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(Npy, RejectsCorruptFiles) {
  const uint8_t junk[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  EXPECT_FALSE(ParseNpy(junk, sizeof(junk), "junk").ok());
  HostTensor a;
  a.shape = {100};
  a.data.resize(400);
  auto bytes = EncodeNpy(a);
  auto cut = ParseNpy(bytes.data(), bytes.size() - 4, "cut");
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("truncated"), std::string::npos);
  EXPECT_EQ(ReadNpy("/nonexistent/x.npy").status().code(), StatusCode::kNotFound);
}

TEST(Npy, ReadsTheSharedMnistDigits) {
  const std::string p = testing::SharedDataDir() + "/mnist/images_uint8.npy";
  if (!testing::FileExists(p)) GTEST_SKIP() << p << " absent";
  auto t = ReadNpy(p);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->type, DType::kUInt8);
  EXPECT_EQ(t->shape, (std::vector<int32_t>{10000, 28, 28}));
  auto l = ReadNpy(testing::SharedDataDir() + "/mnist/labels.npy");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->num_elements(), 10000);
}

TEST(Image, LoadsResizesAndConverts) {
  const std::string p = testing::SharedDataDir() + "/images/cat.bmp";
  if (!testing::FileExists(p)) GTEST_SKIP() << p << " absent";
  auto img = LoadImage(p);
  ASSERT_TRUE(img.ok()) << img.status().ToString();
  EXPECT_EQ(img->channels, 3);
  auto small = ResizeBilinear(*img, 16, 12);
  EXPECT_EQ(small.pixels.size(), 16u * 12u * 3u);
  // float [-1,1]
  PixelNormalization n;
  n.kind = PixelNormalization::Kind::kRange;
  auto f = ImageToTensor(*img, {1, 224, 224, 3}, DType::kFloat32, nullptr, n);
  ASSERT_TRUE(f.ok());
  float lo = 1e9f, hi = -1e9f;
  for (int64_t i = 0; i < f->num_elements(); ++i) {
    lo = std::min(lo, static_cast<float>(f->At(i)));
    hi = std::max(hi, static_cast<float>(f->At(i)));
  }
  EXPECT_GE(lo, -1.0f);
  EXPECT_LE(hi, 1.0f);
  // uint8 raw pixels (auto) equal the resized image
  auto u = ImageToTensor(*img, {1, 224, 224, 3}, DType::kUInt8, nullptr, PixelNormalization{});
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->data, ResizeBilinear(*img, 224, 224).pixels);
  // wrong layouts are explained
  auto bad = ImageToTensor(*img, {1, 10}, DType::kFloat32, nullptr, n);
  EXPECT_FALSE(bad.ok());
  EXPECT_FALSE(LoadImage(testing::SharedDataDir() + "/labels/imagenet_labels.txt").ok());
}

TEST(Image, ParsesNormalizationFlags) {
  auto r = ParseRange("0,1");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->lo, 0.0f);
  EXPECT_EQ(r->hi, 1.0f);
  EXPECT_FALSE(ParseRange("1,0").ok());
  EXPECT_FALSE(ParseRange("a,b").ok());
  auto l = ParseFloatList("123.7,116.3,103.5");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->size(), 3u);
}

}  // namespace
}  // namespace edgeopt::eval
