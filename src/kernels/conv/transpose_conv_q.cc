// The 8-bit TRANSPOSE_CONV engine (transpose_conv.h): int16 GEMM products, row sums, AVX-512
// requantization.
#include <algorithm>

#include "kernels/conv/transpose_conv.h"
#include "kernels/gemm/f32_op_util.h"

namespace edgeopt::kernels {

void TransposeConvQ::Pack(rt::KernelContext& ctx, const rt::RtTensor& weights) {
  const TransposeDims& d = d_;
  const int n = d.k_h * d.k_w * d.out_c;
  // The GEMM's N x K matrix: row (ky·KW + kx)·Cout + co is w[co][ky][kx][·] (as the float engine).
  packed_ = GetOrPack<qgemm::PackedB>(ctx, "q-transpose-conv", [&] {
    qgemm::PackedB b;
    const auto reorder = [&](const auto* w) {
      using W = std::remove_cv_t<std::remove_pointer_t<decltype(w)>>;
      std::vector<W> nk(static_cast<size_t>(n) * d.in_c);
      for (int co = 0; co < d.out_c; ++co)
        for (int t = 0; t < d.k_h * d.k_w; ++t)
          std::copy_n(w + (static_cast<size_t>(co) * d.k_h * d.k_w + t) * d.in_c, d.in_c,
                      nk.begin() + (static_cast<size_t>(t) * d.out_c + co) * d.in_c);
      qgemm::PackWeights(nk.data(), n, d.in_c, {w_zp_}, &b);
    };
    if (weights.type == DType::kUInt8) reorder(weights.data_as<uint8_t>());
    else reorder(weights.data_as<int8_t>());
    return b;
  });
}

bool TransposeConvQ::Prepare(rt::KernelContext& ctx, const TransposeDims& d, const rt::RtTensor& weights,
                             int32_t w_zp) {
  const int64_t m = int64_t{d.batches} * d.in_h * d.in_w;
  const int64_t n = int64_t{d.k_h} * d.k_w * d.out_c;
  if (m * n > (int64_t{64} << 20) || d.in_c <= 0) return false;  // 256 MB of products
  d_ = d;
  w_zp_ = w_zp;
  packed_.reset();
  if (weights.data) Pack(ctx, weights);
  products_ = ctx.RequestScratch(static_cast<size_t>(m * n) * sizeof(int32_t));
  const int64_t lda = (d.in_c + 1) / 2 * 2;
  // One 6-row A tile per thread, and its 6 x 16 accumulators.
  const size_t tile = static_cast<size_t>(qgemm::kMR * lda + qgemm::kASlack) * sizeof(int16_t) + 6 * 16 * 4 + 64;
  a_tiles_ = ctx.RequestScratch(tile * static_cast<size_t>(ctx.threads().pool_threads()));
  gather_.Plan(d);
  return true;
}

template <typename T>
void TransposeConvQ::Run(rt::KernelContext& ctx, const rt::RtTensor& weights, const T* in, int32_t in_zp, T* out) {
  if (!packed_) Pack(ctx, weights);
  const TransposeDims& d = d_;
  const qgemm::PackedB& b = *packed_;
  int32_t* products = ctx.Scratch<int32_t>(products_);
  const int64_t m = int64_t{d.batches} * d.in_h * d.in_w;
  const int n = d.k_h * d.k_w * d.out_c;
  const int64_t lda = (d.in_c + 1) / 2 * 2;
  const size_t tile = static_cast<size_t>(qgemm::kMR * lda + qgemm::kASlack) * sizeof(int16_t) + 6 * 16 * 4 + 64;
  auto* tiles = ctx.Scratch<uint8_t>(a_tiles_);
  const T* in_end = in + m * d.in_c;
  // The products: tiles of 6 input pixels, widened once, times every panel.
  const int64_t row_tiles = (m + qgemm::kMR - 1) / qgemm::kMR;
  const int threads = static_cast<int>(std::min<int64_t>(ctx.threads().num_threads(), (row_tiles + 3) / 4));
  ctx.threads().RunOnAll([&](int thread) {
    if (thread >= threads) return;
    const int64_t t0 = row_tiles * thread / threads, t1 = row_tiles * (thread + 1) / threads;
    uint8_t* mine = tiles + tile * static_cast<size_t>(thread);
    auto* a = reinterpret_cast<int16_t*>(mine);
    auto* acc = reinterpret_cast<int32_t*>((reinterpret_cast<uintptr_t>(mine + static_cast<size_t>(qgemm::kMR * lda + qgemm::kASlack) * 2) + 63) & ~uintptr_t{63});
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t r0 = t * qgemm::kMR;
      const int rows = static_cast<int>(std::min<int64_t>(qgemm::kMR, m - r0));
      for (int r = 0; r < rows; ++r) qgemm::WidenSub(in + (r0 + r) * d.in_c, in_end, d.in_c, in_zp, a + r * lda);
      for (int r = 0; r < rows; ++r)
        if (lda > d.in_c) a[r * lda + d.in_c] = 0;  // the odd k's pair partner
      for (int p = 0; p < b.panels; ++p) {
        qgemm::MicroKernel(rows, b.K2, a, lda, b.panel(p), acc);
        const int cols = std::min(16, n - 16 * p);
        for (int r = 0; r < rows; ++r) std::copy_n(acc + r * 16, cols, products + (r0 + r) * n + 16 * p);
      }
    }
  });
  const int64_t out_row = int64_t{d.out_w} * d.out_c;
  ctx.threads().ParallelFor(int64_t{d.batches} * d.out_h, 1, [&](int64_t begin, int64_t end) {
    alignas(64) int32_t buffer[4096];
    std::vector<int32_t> big;
    int32_t* row_acc = buffer;
    if (out_row > 4096) {
      big.resize(static_cast<size_t>(out_row));
      row_acc = big.data();
    }
    for (int64_t row = begin; row < end; ++row) {
      gather_.SumRow(d, products, row, row_acc);
      TransposeRequantRowAvx512(q_, row_acc, d.out_w, out + row * out_row);
    }
  });
}

template void TransposeConvQ::Run<int8_t>(rt::KernelContext&, const rt::RtTensor&, const int8_t*, int32_t, int8_t*);
template void TransposeConvQ::Run<uint8_t>(rt::KernelContext&, const rt::RtTensor&, const uint8_t*, int32_t, uint8_t*);

std::unique_ptr<TransposeConvQ> MakeTransposeConvQ(const rt::KernelCreateContext& cc) {
  if (cc.reference_only || !cc.cpu.has_avx512()) return nullptr;
  const Tensor* w = cc.input(1);
  if (!w || w->shape.size() != 4 || w->sparsity) return nullptr;
  const bool constant = cc.is_constant(1) ? static_cast<int64_t>(cc.constant_data(1).size()) == w->num_elements()
                                          : rt::IsConstantOrFoldable(cc.graph, cc.subgraph, cc.op.inputs[1]);
  if (!constant) return nullptr;
  return std::make_unique<TransposeConvQ>();
}

}  // namespace edgeopt::kernels
