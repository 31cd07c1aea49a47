#include "kernels/conv/transpose_conv.h"

#include <algorithm>
#include <limits>

#include "kernels/gemm/f32_op_util.h"

namespace edgeopt::kernels {

void TransposeGather::Plan(const TransposeDims& d) {
  auto taps = [](int out, int in, int k, int stride, int pad) {
    std::vector<std::vector<Tap>> t(out);
    for (int o = 0; o < out; ++o)
      for (int f = 0; f < k; ++f) {
        const int s = o + pad - f;  // = input index · stride for a contributing pair
        if (s >= 0 && s % stride == 0 && s / stride < in) t[o].push_back({s / stride, f});
      }
    return t;
  };
  rows = taps(d.out_h, d.in_h, d.k_h, d.stride_h, d.pad_h);
  // Per filter column kx: the input columns whose products at kx land inside the output row,
  // ix * stride_w + kx - pad_w in [0, out_w).
  col_range.clear();
  for (int kx = 0; kx < d.k_w; ++kx) {
    int lo = 0, hi = 0;
    for (int ix = 0; ix < d.in_w; ++ix) {
      const int ox = ix * d.stride_w + kx - d.pad_w;
      if (ox < 0) lo = ix + 1;
      if (ox < d.out_w) hi = ix + 1;
    }
    col_range.push_back({lo, std::max(lo, hi)});
  }
}

void TransposeConvF32::Pack(rt::KernelContext& ctx, const rt::RtTensor& weights) {
  const TransposeDims& d = d_;
  const int n = d.k_h * d.k_w * d.out_c;
  // The GEMM's N x K matrix: row (ky·KW + kx)·Cout + co is w[co][ky][kx][·].
  packed_ = GetOrPack<gemm::PackedB>(ctx, "f32-transpose-conv", [&] {
    std::vector<float> nk(static_cast<size_t>(n) * d.in_c);
    const float* w = weights.data_as<float>();
    for (int co = 0; co < d.out_c; ++co)
      for (int t = 0; t < d.k_h * d.k_w; ++t)
        std::copy_n(w + (static_cast<size_t>(co) * d.k_h * d.k_w + t) * d.in_c, d.in_c,
                    nk.begin() + (static_cast<size_t>(t) * d.out_c + co) * d.in_c);
    return gemm::PackedB::FromNK(nk.data(), nullptr, n, d.in_c);
  });
}

void TransposeConvF32::PackTiles(const rt::RtTensor& weights) {
  const TransposeTiles& t = tiles_geom_;
  const int n = t.kh * t.kw * t.cout;
  tiles_w_.assign(static_cast<size_t>(n) * t.cin_padded, 0.0f);
  const float* w = weights.data_as<float>();  // [Cout, KH, KW, Cin]
  for (int co = 0; co < t.cout; ++co)
    for (int tap = 0; tap < t.kh * t.kw; ++tap)
      std::copy_n(w + (static_cast<size_t>(co) * t.kh * t.kw + tap) * t.cin, t.cin,
                  tiles_w_.begin() + static_cast<std::ptrdiff_t>((tap * t.cout + co) * t.cin_padded));
}

bool TransposeConvF32::Prepare(rt::KernelContext& ctx, const TransposeDims& d, const rt::RtTensor& weights) {
  const int64_t m = int64_t{d.batches} * d.in_h * d.in_w;
  const int64_t n = int64_t{d.k_h} * d.k_w * d.out_c;
  // Non-overlapping with few products per pixel: the tiles form, no GEMM, no scratch.
  tiles_ = avx512_ && n <= 16 && d.stride_h == d.k_h && d.stride_w == d.k_w && d.pad_h == 0 && d.pad_w == 0 &&
           d.out_h == d.in_h * d.k_h && d.out_w == d.in_w * d.k_w && d.in_c > 0;
  if (tiles_) {
    d_ = d;
    tiles_geom_ = {d.in_c, (d.in_c + 15) / 16 * 16, d.out_c, d.k_h, d.k_w, d.in_w};
    tiles_w_.clear();
    if (weights.data) PackTiles(weights);
    return true;
  }
  if (m * n > (int64_t{64} << 20)) return false;  // 256 MB of products
  d_ = d;
  packed_.reset();
  if (weights.data) Pack(ctx, weights);
  scratch_ = ctx.RequestScratch(static_cast<size_t>(m * n) * sizeof(float));
  gather_.Plan(d);
  return true;
}

void TransposeConvF32::Run(rt::KernelContext& ctx, const rt::RtTensor& weights, const float* in, const float* bias,
                           float lo, float hi, float* out) {
  if (tiles_) {
    if (tiles_w_.empty()) PackTiles(weights);
    const int64_t rows = int64_t{d_.batches} * d_.in_h;
    const int64_t per_row = int64_t{d_.in_w} * d_.in_c;
    ctx.threads().ParallelFor(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, per_row)), [&](int64_t r0, int64_t r1) {
      TransposeTilesRowsAvx512(tiles_geom_, in, tiles_w_.data(), bias, lo, hi, out, r0, r1);
    });
    return;
  }
  if (!packed_) Pack(ctx, weights);
  const TransposeDims& d = d_;
  float* products = ctx.Scratch<float>(scratch_);
  const size_t m = static_cast<size_t>(d.batches) * d.in_h * d.in_w;
  const size_t n = static_cast<size_t>(d.k_h) * d.k_w * d.out_c;
  const float inf = std::numeric_limits<float>::infinity();
  gemm::Gemm(uk_, &ctx.threads(), m, in, d.in_c, *packed_, products, n, gemm::MinMax{-inf, inf});
  const int oc = d.out_c;
  const int64_t out_row = int64_t{d.out_w} * oc;
  ctx.threads().ParallelFor(int64_t{d.batches} * d.out_h, 1, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      float* o = out + row * out_row;
      gather_.SumRow(d, products, row, o);
      if (oc == 1) {
        const float b0 = bias ? bias[0] : 0.0f;
        for (int64_t i = 0; i < out_row; ++i) o[i] = std::min(std::max(bias ? o[i] + b0 : o[i], lo), hi);
      } else {
        for (int ox = 0; ox < d.out_w; ++ox) {
          float* px = o + static_cast<size_t>(ox) * oc;
          for (int c = 0; c < oc; ++c) px[c] = std::min(std::max(bias ? px[c] + bias[c] : px[c], lo), hi);
        }
      }
    }
  });
}

std::unique_ptr<TransposeConvF32> MakeTransposeConvF32(const rt::KernelCreateContext& cc) {
  if (cc.reference_only || !cc.cpu.has_avx2_fma()) return nullptr;
  const Tensor* w = cc.input(1);  // [Cout, KH, KW, Cin] in both ops
  if (!w || w->shape.size() != 4 || !ConstantOrFolded(cc, 1)) return nullptr;
  const int64_t n = int64_t{w->shape[0]} * w->shape[1] * w->shape[2];
  return std::make_unique<TransposeConvF32>(gemm::SelectDirectUkernels(cc.cpu, w->shape[3], n),  // Gemm only
                                            cc.cpu.has_avx512());
}

}  // namespace edgeopt::kernels
