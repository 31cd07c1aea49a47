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

namespace {

// int16 elements between the rows of a widened A tile (K rounded up to whole k pairs).
int64_t TileLda(const TransposeDims& d) { return (d.in_c + 1) / 2 * 2; }

// One thread's scratch: a 6-row A tile (plus the widening's overrun), then (64-byte aligned) its
// 6 x 16 accumulators and one output row of int32 sums; `bytes` a multiple of 64.
struct ThreadScratch {
  size_t acc = 0, row = 0, bytes = 0;  // offsets of the accumulators and of the row; the size
  explicit ThreadScratch(const TransposeDims& d) {
    const size_t tile = static_cast<size_t>(qgemm::kMR * TileLda(d) + qgemm::kASlack) * sizeof(int16_t);
    acc = (tile + 63) / 64 * 64;
    row = acc + 6 * 16 * sizeof(int32_t);
    bytes = (row + static_cast<size_t>(d.out_w) * d.out_c * sizeof(int32_t) + 63) / 64 * 64;
  }
};

}  // namespace

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
  per_thread_ = ctx.RequestScratch(ThreadScratch(d).bytes * static_cast<size_t>(ctx.threads().pool_threads()) + 64);
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
  const int64_t lda = TileLda(d);
  const ThreadScratch layout(d);
  auto* scratch = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(ctx.Scratch<uint8_t>(per_thread_)) + 63) &
                                             ~uintptr_t{63});
  const T* in_end = in + m * d.in_c;
  const int64_t out_rows = int64_t{d.batches} * d.out_h, out_row = int64_t{d.out_w} * d.out_c;
  // Work of `units` units over the threads, a contiguous share each: fn(thread's scratch, u0, u1).
  auto split = [&](int64_t units, int64_t min_units, const auto& fn) {
    const int threads = static_cast<int>(std::min<int64_t>(ctx.threads().num_threads(), (units + min_units - 1) / min_units));
    ctx.threads().RunOnAll([&](int thread) {
      if (thread < threads) fn(scratch + layout.bytes * static_cast<size_t>(thread), units * thread / threads,
                               units * (thread + 1) / threads);
    });
  };
  // The products: tiles of 6 input pixels, widened once, times every panel.
  split((m + qgemm::kMR - 1) / qgemm::kMR, 4, [&](uint8_t* mine, int64_t t0, int64_t t1) {
    auto* a = reinterpret_cast<int16_t*>(mine);
    auto* acc = reinterpret_cast<int32_t*>(mine + layout.acc);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t r0 = t * qgemm::kMR;
      const int rows = static_cast<int>(std::min<int64_t>(qgemm::kMR, m - r0));
      for (int r = 0; r < rows; ++r) {
        qgemm::WidenSub(in + (r0 + r) * d.in_c, in_end, d.in_c, in_zp, a + r * lda);
        if (lda > d.in_c) a[r * lda + d.in_c] = 0;  // the odd k's pair partner
      }
      for (int p = 0; p < b.panels; ++p) {
        qgemm::MicroKernel(rows, b.K2, a, lda, b.panel(p), acc);
        const int cols = std::min(16, n - 16 * p);
        for (int r = 0; r < rows; ++r) std::copy_n(acc + r * 16, cols, products + (r0 + r) * n + 16 * p);
      }
    }
  });
  // Each output row summed into the thread's row of int32 sums, then requantized.
  split(out_rows, 1, [&](uint8_t* mine, int64_t r0, int64_t r1) {
    auto* row_acc = reinterpret_cast<int32_t*>(mine + layout.row);
    for (int64_t row = r0; row < r1; ++row) {
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
  if (!w || w->shape.size() != 4 || !ConstantOrFolded(cc, 1, 1)) return nullptr;  // 8-bit weights
  return std::make_unique<TransposeConvQ>();
}

}  // namespace edgeopt::kernels
