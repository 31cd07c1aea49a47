// Conformance of RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR and the depth/space/batch ops against
// TFLite 2.9 (fixed seeds). Quantized bilinear is compared bit-exactly.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "support/conformance.h"
#include "support/fast_vs_reference.h"
#include "support/op_cases.h"
#include "runtime/cpu.h"
#include "runtime/interpreter.h"

namespace edgeopt {
namespace {

using testing::CaseRng;
using testing::ExpectConforms;
using testing::MakeValue;
using testing::ShapeText;
using testing::TypeLabel;

struct ResizeCase {
  DType type;
  std::vector<int32_t> in;
  int32_t out_h, out_w;
  bool align, half_pixel;
  bool nearest;
  bool runtime_size = false;
};

void RunResize(CaseRng& rng, const ResizeCase& c) {
  GraphBuilder b;
  const auto q = rng.QuantFor(c.type);
  auto x = b.Input("x", c.type, c.in, q);
  int32_t size;
  if (c.runtime_size) {
    size = b.Input("size", DType::kInt32, {2});
  } else {
    size = b.Const<int32_t>("size", DType::kInt32, {2}, {c.out_h, c.out_w});
  }
  auto y = b.Tensor("y", c.type, {c.in[0], c.out_h, c.out_w, c.in[3]}, q);
  if (c.nearest) {
    tflite::ResizeNearestNeighborOptionsT o;
    o.align_corners = c.align;
    o.half_pixel_centers = c.half_pixel;
    b.Op(tflite::BuiltinOperator_RESIZE_NEAREST_NEIGHBOR, {x, size}, {y}, o);
  } else {
    tflite::ResizeBilinearOptionsT o;
    o.align_corners = c.align;
    o.half_pixel_centers = c.half_pixel;
    b.Op(tflite::BuiltinOperator_RESIZE_BILINEAR, {x, size}, {y}, o);
  }
  b.Output(y);
  Graph g = b.Finish();
  auto opts = testing::ExactOptions();
  auto inputs = testing::RandomInputs(g, opts);
  if (c.runtime_size) inputs[1] = MakeValue<int32_t>("size", DType::kInt32, {2}, {c.out_h, c.out_w});
  ExpectConforms(g,
                 std::string(c.nearest ? "RESIZE_NEAREST_NEIGHBOR " : "RESIZE_BILINEAR ") + TypeLabel(c.type) + " " +
                     ShapeText(c.in) + " -> " + std::to_string(c.out_h) + "x" + std::to_string(c.out_w) +
                     (c.align ? " align_corners" : "") + (c.half_pixel ? " half_pixel_centers" : "") +
                     (c.runtime_size ? " runtime-size" : ""),
                 opts, inputs);
}

TEST(ResizeConformance, Bilinear) {
  SKIP_WITHOUT_ORACLE();
  CaseRng rng(21);
  const DType types[] = {DType::kFloat32, DType::kUInt8, DType::kInt8, DType::kInt16};
  int k = 0;
  for (DType t : types)
    for (int iter = 0; iter < 18; ++iter, ++k) {
      ResizeCase c;
      c.type = t;
      c.nearest = false;
      c.in = {rng.Int(1, 2), rng.Int(1, 7), rng.Int(1, 7), rng.Int(1, 5)};
      const int mode = iter % 3;  // plain, align_corners, half_pixel_centers
      c.align = mode == 1;
      c.half_pixel = mode == 2;
      switch (iter % 6) {
        case 0: c.out_h = 2 * c.in[1]; c.out_w = 2 * c.in[2]; break;  // 2x (float 2x2 kernel)
        case 1: c.out_h = rng.Int(1, 3); c.out_w = rng.Int(1, 3); break;  // downsample
        default: c.out_h = rng.Int(1, 13); c.out_w = rng.Int(1, 13); break;
      }
      c.runtime_size = iter == 4;
      RunResize(rng, c);
    }
  // uint8 8x upsample with depth % 8 == 0 and half_pixel_centers: 2.9's dedicated 8.8
  // fixed-point kernel.
  for (int iter = 0; iter < 3; ++iter) {
    ResizeCase c{DType::kUInt8, {1, rng.Int(1, 3), rng.Int(1, 3), 8 * rng.Int(1, 2)}, 0, 0, false, true, false};
    c.out_h = 8 * c.in[1];
    c.out_w = 8 * c.in[2];
    RunResize(rng, c);
  }
}

TEST(ResizeConformance, NearestNeighbor) {
  SKIP_WITHOUT_ORACLE();
  CaseRng rng(22);
  const DType types[] = {DType::kFloat32, DType::kUInt8, DType::kInt8, DType::kInt16};
  for (DType t : types)
    for (int iter = 0; iter < 12; ++iter) {
      ResizeCase c;
      c.type = t;
      c.nearest = true;
      c.in = {rng.Int(1, 2), rng.Int(1, 6), rng.Int(1, 6), rng.Int(1, 4)};
      const int mode = iter % 3;
      c.align = mode == 1;
      c.half_pixel = mode == 2;
      c.out_h = rng.Int(1, 13);
      c.out_w = rng.Int(1, 13);
      c.runtime_size = iter == 5;
      RunResize(rng, c);
    }
}

TEST(ResizeConformance, DepthSpace) {
  SKIP_WITHOUT_ORACLE();
  CaseRng rng(23);
  const DType types[] = {DType::kFloat32, DType::kUInt8, DType::kInt8, DType::kInt32, DType::kInt64};
  int k = 0;
  for (DType t : types)
    for (int iter = 0; iter < 6; ++iter, ++k) {
      const int bs = rng.Int(2, 3);
      const auto q = rng.QuantFor(t);
      {
        std::vector<int32_t> in = {rng.Int(1, 2), rng.Int(1, 4), rng.Int(1, 4), bs * bs * rng.Int(1, 3)};
        GraphBuilder b;
        auto x = b.Input("x", t, in, q);
        auto y = b.Tensor("y", t, {in[0], in[1] * bs, in[2] * bs, in[3] / (bs * bs)}, q);
        tflite::DepthToSpaceOptionsT o;
        o.block_size = bs;
        b.Op(tflite::BuiltinOperator_DEPTH_TO_SPACE, {x}, {y}, o);
        b.Output(y);
        ExpectConforms(b.Finish(), "DEPTH_TO_SPACE " + TypeLabel(t) + " " + ShapeText(in) + " block " + std::to_string(bs));
      }
      {
        std::vector<int32_t> in = {rng.Int(1, 2), bs * rng.Int(1, 3), bs * rng.Int(1, 3), rng.Int(1, 4)};
        GraphBuilder b;
        auto x = b.Input("x", t, in, q);
        auto y = b.Tensor("y", t, {in[0], in[1] / bs, in[2] / bs, in[3] * bs * bs}, q);
        tflite::SpaceToDepthOptionsT o;
        o.block_size = bs;
        b.Op(tflite::BuiltinOperator_SPACE_TO_DEPTH, {x}, {y}, o);
        b.Output(y);
        ExpectConforms(b.Finish(), "SPACE_TO_DEPTH " + TypeLabel(t) + " " + ShapeText(in) + " block " + std::to_string(bs));
      }
    }
}

// DEPTH_TO_SPACE / SPACE_TO_DEPTH copying whole runs (ref_space.cc CopyRuns) against the
// reference's element tables, byte for byte: element sizes 1 / 2 / 4 / 8, block sizes 2-4, runs
// of 1 to 70 values (odd, past 16 bytes), batches, rows over 1-2 threads, the variant checked.
TEST(ResizeKernels, DepthSpaceRunsMatchTheReference) {
  CaseRng rng(231);
  const DType types[] = {DType::kInt8, DType::kInt16, DType::kFloat32, DType::kInt64};
  int k = 0;
  for (DType t : types)
    for (int bs : {2, 3, 4})
      for (bool to_space : {true, false}) {
        const int oc = rng.Int(1, 18), n = rng.Int(1, 2), h = rng.Int(1, 9) * (to_space ? 1 : bs);
        const int w = rng.Int(1, 11) * (to_space ? 1 : bs);
        const std::vector<int32_t> in = {n, h, w, to_space ? bs * bs * oc : oc};
        const std::vector<int32_t> out = to_space ? std::vector<int32_t>{n, h * bs, w * bs, oc}
                                                  : std::vector<int32_t>{n, h / bs, w / bs, oc * bs * bs};
        GraphBuilder b;
        auto x = b.Input("x", t, in);
        auto y = b.Tensor("y", t, out);
        if (to_space) {
          tflite::DepthToSpaceOptionsT o;
          o.block_size = bs;
          b.Op(tflite::BuiltinOperator_DEPTH_TO_SPACE, {x}, {y}, o);
        } else {
          tflite::SpaceToDepthOptionsT o;
          o.block_size = bs;
          b.Op(tflite::BuiltinOperator_SPACE_TO_DEPTH, {x}, {y}, o);
        }
        b.Output(y);
        testing::FastCheck check;
        check.op_type = to_space ? "DEPTH_TO_SPACE" : "SPACE_TO_DEPTH";
        check.variant = "/any/runs";
        check.threads = 1 + k % 2;
        check.seed = 500 + k++;
        EXPECT_TRUE(testing::ExpectFastMatchesReference(
            b.Finish(), check.op_type + " " + TypeLabel(t) + " " + ShapeText(in) + " block " + std::to_string(bs), check));
      }
}

TEST(ResizeConformance, BatchSpace) {
  SKIP_WITHOUT_ORACLE();
  CaseRng rng(24);
  const DType types[] = {DType::kFloat32, DType::kUInt8, DType::kInt8, DType::kInt32, DType::kInt64};
  int k = 0;
  for (DType t : types)
    for (int iter = 0; iter < 8; ++iter, ++k) {
      const bool four_d = iter % 2 == 0;
      const int m = four_d ? 2 : 1;
      const auto q = rng.QuantFor(t);
      std::vector<int32_t> block(m);
      for (auto& v : block) v = rng.Int(1, 3);
      int32_t block_total = 1;
      for (int v : block) block_total *= v;
      {  // SPACE_TO_BATCH_ND with paddings (padded with the zero point for quantized types).
        std::vector<int32_t> in = {rng.Int(1, 2)};
        std::vector<int32_t> pads, out = {in[0] * block_total};
        for (int i = 0; i < m; ++i) {
          const int pb = rng.Int(0, 2);
          const int dim = rng.Int(1, 3) * block[i] - pb - rng.Int(0, 1);
          const int d = std::max(dim, 1);
          int pe = 0;
          while ((d + pb + pe) % block[i] != 0) ++pe;
          in.push_back(d);
          pads.push_back(pb);
          pads.push_back(pe);
          out.push_back((d + pb + pe) / block[i]);
        }
        in.push_back(rng.Int(1, 3));
        out.push_back(in.back());
        GraphBuilder b;
        auto x = b.Input("x", t, in, q);
        auto bs = b.Const<int32_t>("block", DType::kInt32, {m}, block);
        auto ps = b.Const<int32_t>("pads", DType::kInt32, {m, 2}, pads);
        auto y = b.Tensor("y", t, out, q);
        b.Op(tflite::BuiltinOperator_SPACE_TO_BATCH_ND, {x, bs, ps}, {y}, tflite::SpaceToBatchNDOptionsT{});
        b.Output(y);
        ExpectConforms(b.Finish(), "SPACE_TO_BATCH_ND " + TypeLabel(t) + " " + ShapeText(in) + " block " +
                                       ShapeText(block) + " pads " + ShapeText(pads));
      }
      {  // BATCH_TO_SPACE_ND with crops.
        std::vector<int32_t> in = {block_total * rng.Int(1, 2)};
        std::vector<int32_t> crops, out = {in[0] / block_total};
        for (int i = 0; i < m; ++i) {
          in.push_back(rng.Int(1, 3));
          const int full = in.back() * block[i];
          const int cb = rng.Int(0, std::min(1, full - 1)), ce = rng.Int(0, std::min(1, full - 1 - cb));
          crops.push_back(cb);
          crops.push_back(ce);
          out.push_back(full - cb - ce);
        }
        in.push_back(rng.Int(1, 3));
        out.push_back(in.back());
        GraphBuilder b;
        auto x = b.Input("x", t, in, q);
        auto bs = b.Const<int32_t>("block", DType::kInt32, {m}, block);
        auto cs = b.Const<int32_t>("crops", DType::kInt32, {m, 2}, crops);
        auto y = b.Tensor("y", t, out, q);
        b.Op(tflite::BuiltinOperator_BATCH_TO_SPACE_ND, {x, bs, cs}, {y}, tflite::BatchToSpaceNDOptionsT{});
        b.Output(y);
        ExpectConforms(b.Finish(), "BATCH_TO_SPACE_ND " + TypeLabel(t) + " " + ShapeText(in) + " block " +
                                       ShapeText(block) + " crops " + ShapeText(crops));
      }
    }
}

// Configurations from real models: DeepLabV3's align_corners upsampling of logits, the
// segmentation-head 2x upsampling, int8 half-pixel upsampling of detector features.
TEST(ResizeConformance, RealModelPatterns) {
  SKIP_WITHOUT_ORACLE();
  CaseRng rng(25);
  RunResize(rng, {DType::kFloat32, {1, 33, 33, 21}, 257, 257, true, false, false});
  RunResize(rng, {DType::kFloat32, {1, 16, 16, 32}, 32, 32, false, false, false});
  RunResize(rng, {DType::kInt8, {1, 10, 10, 24}, 20, 20, false, true, false});
  RunResize(rng, {DType::kUInt8, {1, 19, 19, 16}, 38, 38, false, true, false});
  RunResize(rng, {DType::kFloat32, {1, 20, 20, 8}, 40, 40, false, true, true});
}

TEST(ResizeKernels, Errors) {
  {
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, {1, 4, 4, 1});
    auto s = b.Const<int32_t>("size", DType::kInt32, {2}, {0, 3});
    auto y = b.Tensor("y", DType::kFloat32, {1, 1, 3, 1});
    b.Op(tflite::BuiltinOperator_RESIZE_BILINEAR, {x, s}, {y}, tflite::ResizeBilinearOptionsT{});
    b.Output(y);
    const Status st = testing::RunOurs(b.Finish());
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("RESIZE_BILINEAR"), std::string::npos) << st.ToString();
  }
  {
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, {1, 4, 4, 3});
    auto y = b.Tensor("y", DType::kFloat32, {1, 8, 8, 1});
    tflite::DepthToSpaceOptionsT o;
    o.block_size = 2;
    b.Op(tflite::BuiltinOperator_DEPTH_TO_SPACE, {x}, {y}, o);
    b.Output(y);
    const Status st = testing::RunOurs(b.Finish());
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("DEPTH_TO_SPACE"), std::string::npos) << st.ToString();
  }
  {
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, {3, 2, 2, 1});
    auto bs = b.Const<int32_t>("block", DType::kInt32, {2}, {2, 2});
    auto cs = b.Const<int32_t>("crops", DType::kInt32, {2, 2}, {0, 0, 0, 0});
    auto y = b.Tensor("y", DType::kFloat32, {1, 4, 4, 1});
    b.Op(tflite::BuiltinOperator_BATCH_TO_SPACE_ND, {x, bs, cs}, {y}, tflite::BatchToSpaceNDOptionsT{});
    b.Output(y);
    const Status st = testing::RunOurs(b.Finish());
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("BATCH_TO_SPACE_ND"), std::string::npos) << st.ToString();
  }
}

}  // namespace
}  // namespace edgeopt

namespace edgeopt {
namespace {

// The vector float32, int8 and int16 bilinear rows against the reference arithmetic, bit for
// bit: channel counts around the vector widths, up- and downsampling, every coordinate mode (half
// pixel centers give negative fractions at the first row/column), batch 2, 1 and 2 threads,
// AVX-512 and AVX2 (int16: AVX-512 only; the AVX2 run must keep the reference).
TEST(ResizeBilinearFast, MatchesReferenceBitForBit) {
  std::mt19937 rng(31);
  std::uniform_real_distribution<float> val(-4.0f, 4.0f);
  std::uniform_int_distribution<int> byte(-128, 127);
  struct Case {
    int32_t b, h, w, c, oh, ow;
  };
  std::vector<Case> cases = {{1, 33, 33, 21, 257, 257}, {2, 5, 7, 1, 9, 13},  {1, 4, 4, 8, 3, 5},
                             {1, 6, 3, 16, 13, 7},      {2, 3, 5, 17, 8, 8},  {1, 2, 9, 31, 5, 20},
                             {1, 1, 1, 40, 6, 4},       {1, 7, 7, 33, 1, 1},  {1, 24, 24, 24, 48, 48},
                             // selfie segmentation's int8 upsamplings; a long input row
                             {1, 16, 16, 128, 32, 32},  {1, 32, 32, 24, 64, 64}, {1, 2, 300, 40, 3, 601}};
  const int32_t depths[] = {1, 3, 7, 8, 9, 15, 16, 23, 32, 47, 64, 65};
  for (int i = 0; i < 24; ++i) {
    std::uniform_int_distribution<int32_t> dim(1, 12);
    cases.push_back({1 + i % 2, dim(rng), dim(rng), depths[i % 12], dim(rng) * 2, dim(rng)});
  }
  std::vector<std::pair<const char*, rt::CpuFeatures>> cpus;
  if (rt::CpuHardware().has_avx512()) cpus.push_back({"avx512", rt::CpuHardware()});
  if (rt::CpuHardware().has_avx2_fma()) cpus.push_back({"avx2", rt::CapFeatures(rt::CpuHardware(), "avx2")});
  if (cpus.empty()) GTEST_SKIP() << "this CPU has no AVX2: there is no vector bilinear path";
  int n = 0;
  for (const DType type : {DType::kFloat32, DType::kInt8, DType::kInt16})
    for (const Case& c : cases)
      for (int mode = 0; mode < 3; ++mode) {
        const size_t esize = type == DType::kFloat32 ? 4 : type == DType::kInt16 ? 2 : 1;
        QuantParams q;
        if (type == DType::kInt8) {
          q.scale = {0.05f};
          q.zero_point = {-3};
        } else if (type == DType::kInt16) {
          q.scale = {0.001f};
          q.zero_point = {0};
        }
        GraphBuilder b;
        auto x = b.Input("x", type, {c.b, c.h, c.w, c.c}, q);
        auto size = b.Const<int32_t>("size", DType::kInt32, {2}, {c.oh, c.ow});
        auto y = b.Tensor("y", type, {c.b, c.oh, c.ow, c.c}, q);
        tflite::ResizeBilinearOptionsT o;
        o.align_corners = mode == 1;
        o.half_pixel_centers = mode == 2;
        b.Op(tflite::BuiltinOperator_RESIZE_BILINEAR, {x, size}, {y}, o);
        b.Output(y);
        auto model = rt::Model::FromGraph(b.Finish());
        ASSERT_TRUE(model.ok());
        const size_t count = static_cast<size_t>(c.b) * c.h * c.w * c.c;
        std::vector<uint8_t> input(count * esize);
        if (type == DType::kFloat32) {
          std::vector<float> f(count);
          for (float& v : f) v = val(rng);
          f[0] = -0.0f;  // a negative zero product: the reference's 0 + (-0) gives +0
          std::memcpy(input.data(), f.data(), input.size());
        } else if (type == DType::kInt16) {
          std::vector<int16_t> v(count);
          for (auto& e : v) e = static_cast<int16_t>(byte(rng) * 256 + (byte(rng) + 128));
          v[0] = -32768;  // the extremes
          v[count - 1] = 32767;
          std::memcpy(input.data(), v.data(), input.size());
        } else {
          for (auto& v : input) v = static_cast<uint8_t>(byte(rng));
          input[0] = 0x80;  // -128 and 127 at the extremes
          input[count - 1] = 0x7f;
        }
        auto run = [&](bool reference, const rt::CpuFeatures* cpu, int threads, std::string* variant) {
          rt::InterpreterOptions io;
          io.reference_kernels_only = reference;
          io.cpu = cpu;
          io.num_threads = threads;
          auto interp = rt::Interpreter::Create(*model, io);
          EXPECT_TRUE(interp.ok());
          EXPECT_TRUE((*interp)->AllocateTensors().ok());
          std::memcpy((*interp)->input(0)->data, input.data(), input.size());
          EXPECT_TRUE((*interp)->Invoke().ok());
          if (variant) *variant = (*interp)->ops()[0].variant;
          const rt::RtTensor* out = (*interp)->output(0);
          const auto* bytes = static_cast<const uint8_t*>(out->data);
          return std::vector<uint8_t>(bytes, bytes + out->num_elements() * esize);
        };
        const std::vector<uint8_t> want = run(true, nullptr, 1, nullptr);
        for (const auto& [isa, cpu] : cpus) {
          std::string variant;
          const std::vector<uint8_t> got = run(false, &cpu, 1 + n++ % 2, &variant);
          const bool two_by_two = type == DType::kFloat32 && mode == 0 && c.oh == 2 * c.h && c.ow == 2 * c.w;
          const std::string tname = type == DType::kFloat32 ? "float32" : type == DType::kInt16 ? "int16" : "int8";
          const bool ref = two_by_two || (type == DType::kInt16 && std::string(isa) != "avx512");
          EXPECT_EQ(variant, "resize_bilinear/" + tname + "/" + (ref ? std::string("ref") : std::string(isa)));
          ASSERT_EQ(got.size(), want.size());
          int bad = 0;
          for (size_t i = 0; i < got.size(); i += esize)
            if (std::memcmp(&got[i], &want[i], esize) != 0 && bad++ < 5)
              ADD_FAILURE() << tname << " " << isa << " " << c.b << "x" << c.h << "x" << c.w << "x" << c.c << " -> "
                            << c.oh << "x" << c.ow << " mode " << mode << " element " << i / esize;
        }
      }
}

}  // namespace
}  // namespace edgeopt
