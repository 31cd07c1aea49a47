#include "kernels/conv/transpose_conv.h"

#include <algorithm>
#include <limits>

#include "kernels/gemm/f32_op_util.h"

namespace edgeopt::kernels {

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

bool TransposeConvF32::Prepare(rt::KernelContext& ctx, const TransposeDims& d, const rt::RtTensor& weights) {
  const int64_t m = int64_t{d.batches} * d.in_h * d.in_w;
  const int64_t n = int64_t{d.k_h} * d.k_w * d.out_c;
  if (m * n > (int64_t{64} << 20)) return false;  // 256 MB of products
  d_ = d;
  packed_.reset();
  if (weights.data) Pack(ctx, weights);
  scratch_ = ctx.RequestScratch(static_cast<size_t>(m * n) * sizeof(float));
  auto taps = [](int out, int in, int k, int stride, int pad) {
    std::vector<std::vector<Tap>> t(out);
    for (int o = 0; o < out; ++o)
      for (int f = 0; f < k; ++f) {
        const int s = o + pad - f;  // = input index · stride for a contributing pair
        if (s >= 0 && s % stride == 0 && s / stride < in) t[o].push_back({s / stride, f});
      }
    return t;
  };
  rows_ = taps(d.out_h, d.in_h, d.k_h, d.stride_h, d.pad_h);
  // Columns flattened: output column ox reads the products at col_offset_[col_begin_[ox] ..
  // col_begin_[ox + 1]) from its input row's first product.
  col_begin_.assign(1, 0);
  col_offset_.clear();
  for (const auto& col : taps(d.out_w, d.in_w, d.k_w, d.stride_w, d.pad_w)) {
    for (const Tap& t : col) col_offset_.push_back(static_cast<size_t>(t.in) * n + static_cast<size_t>(t.tap) * d.out_c);
    col_begin_.push_back(static_cast<int>(col_offset_.size()));
  }
  return true;
}

void TransposeConvF32::Run(rt::KernelContext& ctx, const rt::RtTensor& weights, const float* in, const float* bias,
                           float lo, float hi, float* out) {
  if (!packed_) Pack(ctx, weights);
  const TransposeDims& d = d_;
  float* products = ctx.Scratch<float>(scratch_);
  const size_t m = static_cast<size_t>(d.batches) * d.in_h * d.in_w;
  const size_t n = static_cast<size_t>(d.k_h) * d.k_w * d.out_c;
  const float inf = std::numeric_limits<float>::infinity();
  gemm::Gemm(uk_, &ctx.threads(), m, in, d.in_c, *packed_, products, n, gemm::MinMax{-inf, inf});
  const int oc = d.out_c;
  const int64_t out_row = int64_t{d.out_w} * oc;
  // Output row by output row: it starts at 0, each (input row, filter row) pair landing on it
  // adds its products column by column (filter rows in ascending order, then filter columns),
  // then the bias and the clamp. The row stays in L1 while it accumulates.
  ctx.threads().ParallelFor(int64_t{d.batches} * d.out_h, 1, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int b = static_cast<int>(row / d.out_h), oy = static_cast<int>(row % d.out_h);
      float* o = out + row * out_row;
      std::fill(o, o + out_row, 0.0f);
      for (const Tap& ty : rows_[oy]) {
        const float* base =
            products + (static_cast<size_t>(b) * d.in_h + ty.in) * d.in_w * n + static_cast<size_t>(ty.tap) * d.k_w * oc;
        for (int ox = 0; ox < d.out_w; ++ox) {
          float* acc = o + static_cast<size_t>(ox) * oc;
          for (int t = col_begin_[ox]; t < col_begin_[ox + 1]; ++t) {
            const float* p = base + col_offset_[t];
            for (int c = 0; c < oc; ++c) acc[c] += p[c];
          }
        }
      }
      for (int ox = 0; ox < d.out_w; ++ox) {
        float* px = o + static_cast<size_t>(ox) * oc;
        for (int c = 0; c < oc; ++c) px[c] = std::min(std::max(bias ? px[c] + bias[c] : px[c], lo), hi);
      }
    }
  });
}

std::unique_ptr<TransposeConvF32> MakeTransposeConvF32(const rt::KernelCreateContext& cc) {
  if (cc.reference_only || !cc.cpu.has_avx2_fma()) return nullptr;
  const Tensor* w = cc.input(1);  // [Cout, KH, KW, Cin] in both ops
  if (!w || w->shape.size() != 4 || !ConstantOrFolded(cc, 1)) return nullptr;
  const int64_t n = int64_t{w->shape[0]} * w->shape[1] * w->shape[2];
  return std::make_unique<TransposeConvF32>(gemm::SelectDirectUkernels(cc.cpu, w->shape[3], n));  // Gemm only
}

}  // namespace edgeopt::kernels
