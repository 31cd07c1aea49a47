// CONV_2D float32, 3×3 stride 1 (no dilation) by Winograd F(2×2, 3×3): see winograd_f32.h for
// the algorithm. Variant ".../winograd2x2" of conv2d/f32.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/common/kernel_util.h"
#include "kernels/common/nn_util.h"
#include "kernels/gemm/aligned.h"
#include "kernels/gemm/f32_op_util.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/ops_f32.h"
#include "kernels/gemm/parallel.h"
#include "kernels/gemm/winograd_f32.h"

namespace edgeopt::kernels {

namespace winograd {

void TransformFilter(const float g[9], float v[kElems]) {
  // t = G g (4×3), then v = t Gᵀ (4×4); G's rows: (1, 0, 0), (1/2, 1/2, 1/2), (1/2, -1/2, 1/2),
  // (0, 0, 1).
  float t[4][3];
  for (int x = 0; x < 3; ++x) {
    const float g0 = g[x], g1 = g[3 + x], g2 = g[6 + x];
    t[0][x] = g0;
    t[1][x] = 0.5f * (g0 + g1 + g2);
    t[2][x] = 0.5f * (g0 - g1 + g2);
    t[3][x] = g2;
  }
  for (int y = 0; y < 4; ++y) {
    v[4 * y + 0] = t[y][0];
    v[4 * y + 1] = 0.5f * (t[y][0] + t[y][1] + t[y][2]);
    v[4 * y + 2] = 0.5f * (t[y][0] - t[y][1] + t[y][2]);
    v[4 * y + 3] = t[y][2];
  }
}

}  // namespace winograd

namespace {

using gemm::MinMax;
using gemm::PackedB;
using winograd::kElems;

// The transformed filters, packed per transform element for the GEMM family, and the bias.
struct WinogradWeights {
  std::vector<PackedB> v;  // kElems matrices: N = output channels, K = input channels
  AlignedFloats bias;      // output channels rounded up to 16 (zeros past them, or no bias)
  size_t bytes() const {
    size_t n = bias.bytes();
    for (const PackedB& p : v) n += p.bytes();
    return n;
  }
};

// Work is cut in one of two ways (Prepare):
// - Blocks: each thread takes a contiguous share of blocks of tiles and runs input transform,
//   16 GEMMs and output transform per block, with U and M in its own slot scratch, about
//   kBlockBytes so that they stay in L2 next to each V_e. Every thread reads all of V.
// - Elements (several threads, and V larger than U and M of all tiles together, e.g. 14×14 or
//   7×7 layers of 256-512 channels): U and M of every tile in the arena; the input transform is
//   split over tiles, the 16 GEMMs over threads (each reads only its share of V), the output
//   transform over tiles again. Up to kElementModeBytes of U and M.
constexpr int64_t kBlockBytes = 512 * 1024;
constexpr int64_t kElementModeBytes = 8 << 20;

class Conv2DWinogradF32 : public rt::OpKernel {
 public:
  Conv2DWinogradF32(const gemm::Ukernels& uk, MinMax mm, bool avx512)
      : uk_(uk),
        mm_(mm),
        input_(avx512 ? winograd::InputTilesAvx512 : winograd::InputTilesAvx2),
        output_(avx512 ? winograd::OutputTilesAvx512 : winograd::OutputTilesAvx2) {}

  // Shapes are checked as the reference kernel checks them (kernels/conv), with its messages.
  Status Prepare(rt::KernelContext& ctx) override {
    WindowGeometry wg;
    RETURN_IF_ERROR(CheckConvShapes(ctx, &wg));
    const rt::RtTensor* in = ctx.input(0);
    const int batch = in->dim(0), h = in->dim(1), wd = in->dim(2), c = in->dim(3);
    const int oc = ctx.input(1)->dim(0);
    RETURN_IF_ERROR(ctx.SetOutputShape(0, {batch, wg.out_h, wg.out_w, oc}));
    g_.batch = batch;
    g_.h = h;
    g_.w = wd;
    g_.c = c;
    g_.oc = oc;
    g_.oh = wg.out_h;
    g_.ow = wg.out_w;
    g_.pad_top = wg.pad_h;
    g_.pad_left = wg.pad_w;
    g_.tiles_h = (wg.out_h + 1) / 2;
    g_.tiles_w = (wg.out_w + 1) / 2;
    if (!weights_) weights_ = Pack(ctx);

    const int64_t tiles = g_.tiles();
    const int threads = ctx.threads().num_threads();
    const int64_t per_tile = int64_t{kElems} * (c + oc) * static_cast<int64_t>(sizeof(float));
    const int64_t v_bytes = int64_t{kElems} * c * oc * static_cast<int64_t>(sizeof(float));
    elements_ = threads > 1 && tiles > 0 && v_bytes > tiles * per_tile && tiles * per_tile <= kElementModeBytes;
    if (elements_) {
      SetStrides(tiles);
      scratch_ = ctx.RequestScratch(ScratchFloats() * sizeof(float));
      return Status::Ok();
    }
    // Blocks of about kBlockBytes (whole micro-kernel tiles), as many per thread.
    const int64_t max_block = std::max<int64_t>(uk_.mr, kBlockBytes / per_tile / uk_.mr * uk_.mr);
    blocks_ = tiles > 0 ? (tiles + max_block - 1) / max_block : 0;
    blocks_ = (blocks_ + threads - 1) / threads * threads;
    block_ = blocks_ > 0 ? std::max<int64_t>(1, (tiles + blocks_ - 1) / blocks_) : 1;
    blocks_ = tiles > 0 ? (tiles + block_ - 1) / block_ : 0;
    tasks_ = static_cast<int>(std::min<int64_t>(threads, blocks_));
    SetStrides(block_);
    return ctx.ReserveSlotScratch(ScratchFloats() * sizeof(float));
  }

  Status Invoke(rt::KernelContext& ctx) override {
    if (!weights_ && !(weights_ = Pack(ctx))) return ctx.Error("filter has no data");
    const float* in = ctx.input(0)->data_as<float>();
    float* out = ctx.output(0)->data_as<float>();
    const int64_t tiles = g_.tiles();
    const MinMax none{-std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity()};
    rt::ThreadPool& pool = ctx.threads();
    const WinogradWeights& ww = *weights_;
    // The 16 GEMMs of n tiles, U and M as laid out by SetStrides.
    auto gemms = [&](const float* u, float* m, int64_t n, int e0, int e1) {
      for (int e = e0; e < e1; ++e)
        gemm::Gemm(uk_, nullptr, static_cast<size_t>(n), u + e * u_stride_, g_.c, ww.v[e], m + e * m_stride_, g_.oc,
                   none);
    };
    if (elements_) {
      float* u = ctx.Scratch<float>(scratch_);
      float* m = u + kElems * u_stride_;
      const int threads = pool.num_threads();
      auto tile_share = [&](int64_t t, int64_t* t0, int* n) {
        *t0 = tiles * t / threads;
        *n = static_cast<int>(tiles * (t + 1) / threads - *t0);
      };
      RunTasks(&pool, threads, [&](int64_t t) {
        int64_t t0;
        int n;
        tile_share(t, &t0, &n);
        if (n > 0) input_(g_, in, t0, n, u + static_cast<size_t>(t0) * g_.c, u_stride_);
      });
      RunTasks(&pool, kElems, [&](int64_t e) { gemms(u, m, tiles, static_cast<int>(e), static_cast<int>(e) + 1); });
      RunTasks(&pool, threads, [&](int64_t t) {
        int64_t t0;
        int n;
        tile_share(t, &t0, &n);
        if (n > 0) output_(g_, m + static_cast<size_t>(t0) * g_.oc, m_stride_, ww.bias.data(), t0, n, out, mm_);
      });
      return Status::Ok();
    }
    // One contiguous share of blocks per thread, with the U and M buffers of its slot.
    RunTasks(&pool, tasks_, [&](int64_t t) {
      float* u = reinterpret_cast<float*>(pool.SlotScratch(static_cast<int>(t)));
      float* m = u + kElems * u_stride_;
      for (int64_t b = blocks_ * t / tasks_; b < blocks_ * (t + 1) / tasks_; ++b) {
        const int64_t t0 = b * block_;
        const int n = static_cast<int>(std::min(block_, tiles - t0));
        input_(g_, in, t0, n, u, u_stride_);
        gemms(u, m, n, 0, kElems);
        output_(g_, m, m_stride_, ww.bias.data(), t0, n, out, mm_);
      }
    });
    return Status::Ok();
  }

  std::string variant() const override {
    return std::string("conv2d/f32/") + uk_.isa + "/winograd2x2" + (elements_ ? "/elements" : "");
  }
  bool ReadsInputAtInvoke(int input) const override { return input == 0 || !weights_; }
  // The direct convolution's multiply-adds (so GOP/s compare with it; this kernel does 4/9 of them).
  int64_t Macs(const rt::KernelContext&) const override {
    return int64_t{g_.batch} * g_.oh * g_.ow * g_.oc * 9 * g_.c;
  }
  size_t PackedBytes() const override { return weights_ ? weights_->bytes() : 0; }

 private:
  // U and M for `rows` tiles: kElems matrices each, at skewed strides (winograd::SkewedStride).
  void SetStrides(int64_t rows) {
    u_stride_ = winograd::SkewedStride(static_cast<size_t>(rows) * g_.c);
    m_stride_ = winograd::SkewedStride(static_cast<size_t>(rows) * g_.oc);
  }
  size_t ScratchFloats() const { return kElems * (u_stride_ + m_stride_); }

  // Transforms and packs the filters once their data exists (Prepare for constants, the first
  // Invoke for folded ones); shared by the interpreters of one model.
  std::shared_ptr<const WinogradWeights> Pack(rt::KernelContext& ctx) {
    const rt::RtTensor* w = ctx.input(1);
    const rt::RtTensor* bias = ctx.input(2);
    if (!w->data || (bias && !bias->data)) return nullptr;
    const int oc = w->dim(0), c = w->dim(3);
    return GetOrPack<WinogradWeights>(ctx, std::string("f32winograd2x2/") + gemm::PackKeyFor(uk_), [&] {
      const float* wf = w->data_as<float>();
      std::vector<float> vt(static_cast<size_t>(kElems) * oc * c);
      float g[9], v[kElems];
      for (int o = 0; o < oc; ++o)
        for (int ci = 0; ci < c; ++ci) {
          for (int k = 0; k < 9; ++k) g[k] = wf[(static_cast<size_t>(o) * 9 + k) * c + ci];
          winograd::TransformFilter(g, v);
          for (int e = 0; e < kElems; ++e) vt[(static_cast<size_t>(e) * oc + o) * c + ci] = v[e];
        }
      WinogradWeights ww;
      ww.v.reserve(kElems);
      for (int e = 0; e < kElems; ++e)
        ww.v.push_back(gemm::PackNKFor(uk_, vt.data() + static_cast<size_t>(e) * oc * c, nullptr, oc, c));
      ww.bias.Reset(static_cast<size_t>(oc + 15) / 16 * 16);
      if (bias) std::memcpy(ww.bias.data(), bias->data_as<float>(), sizeof(float) * oc);
      return ww;
    });
  }

  const gemm::Ukernels& uk_;
  const MinMax mm_;
  const winograd::InputFn input_;
  const winograd::OutputFn output_;
  std::shared_ptr<const WinogradWeights> weights_;
  winograd::TileGeometry g_;
  bool elements_ = false;  // the element split (else blocks of tiles)
  int scratch_ = -1;       // element split: U and M of all tiles
  int64_t block_ = 1, blocks_ = 0;
  int tasks_ = 0;
  size_t u_stride_ = 0, m_stride_ = 0;  // floats between the matrices of U / of M
};

}  // namespace

std::unique_ptr<rt::OpKernel> MakeConv2DWinogradF32(const rt::KernelCreateContext& cc, float act_min, float act_max) {
  if (const char* e = std::getenv("EDGEOPT_WINOGRAD"); e && std::strcmp(e, "0") == 0) return nullptr;
  if (!cc.cpu.has_avx2_fma()) return nullptr;
  const auto& o = GetOptions<tflite::Conv2DOptionsT>(cc.op);
  const auto& fs = cc.input(1)->shape;  // [OC, 3, 3, C]
  if (fs.size() != 4 || fs[1] != 3 || fs[2] != 3 || o.stride_h != 1 || o.stride_w != 1 ||
      o.dilation_h_factor != 1 || o.dilation_w_factor != 1)
    return nullptr;
  if (fs[3] < kWinogradMinInputChannels || fs[0] < kWinogradMinOutputChannels) return nullptr;
  const int64_t c = fs[3], oc = fs[0];
  return std::make_unique<Conv2DWinogradF32>(gemm::SelectDirectUkernels(cc.cpu, c, oc), MinMax{act_min, act_max},
                                             cc.cpu.has_avx512());
}

}  // namespace edgeopt::kernels
