// Float32 TRANSPOSE_CONV / Convolution2DTransposeBias on the packed GEMM (kernels/gemm), used by
// the reference kernels of ref_transpose_conv.cc when the CPU has AVX2 or AVX-512 and the
// interpreter is not reference-only.
//
// Every input pixel's products with every filter tap come from one GEMM,
//   P[m][(ky·KW + kx)·Cout + co] = Σ_ci in[m][ci] · w[co][ky][kx][ci]   (M = input pixels),
// then each output pixel gathers the products of the (input pixel, tap) pairs that land on it,
// taps in the reference's order (ky, then kx), adds the bias and clamps. Float sums, so the
// results differ from the reference's single running sum by rounding only (tested with a
// relative tolerance).
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/gemm/gemm.h"
#include "kernels/gemm_int8/qgemm.h"
#include "runtime/kernel.h"

namespace edgeopt::kernels {

struct TransposeDims {
  int batches = 0, in_h = 0, in_w = 0, in_c = 0;
  int out_h = 0, out_w = 0, out_c = 0;
  int k_h = 0, k_w = 0;
  int stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
};

// The non-overlapping form (stride = filter size, no padding, KH·KW·Cout <= 16) on AVX-512
// (transpose_conv_tiles_avx512.cc): `w` holds the products' weights, product n = (ky·KW + kx)·
// Cout + co at w[n·cin_padded + k]; input rows [r0, r1) (over all images) write their KH output
// rows, bias (by output channel, may be null) and clamp included.
struct TransposeTiles {
  int cin = 0, cin_padded = 0, cout = 0, kh = 0, kw = 0, in_w = 0;
};
void TransposeTilesRowsAvx512(const TransposeTiles& t, const float* in, const float* w, const float* bias, float lo,
                              float hi, float* out, int64_t r0, int64_t r1);

// Which (input pixel, filter tap) products land on each output row and column, and their sum
// into an output row: shared by the float and the 8-bit engines.
struct TransposeGather {
  struct Tap {
    int in;   // input row (or column)
    int tap;  // filter row (or column)
  };
  // Per output row: the (input row, filter row) pairs landing on it, filter rows ascending.
  std::vector<std::vector<Tap>> rows;
  // Per filter column: the input columns [first, last) whose products land inside the output.
  std::vector<std::pair<int, int>> col_range;

  void Plan(const TransposeDims& d);
  // Output row `row` (b * out_h + oy) of the products P[input pixel][(ky KW + kx) Cout + co]
  // into o (out_w * out_c values): it starts at 0, each (input row, filter row) pair landing on
  // it adds its products filter column by filter column, each a strided sweep of the row (so
  // every output value adds its taps in the reference's order: filter rows ascending, then
  // filter columns). The row stays in L1 while it accumulates.
  template <typename T>
  void SumRow(const TransposeDims& d, const T* products, int64_t row, T* o) const {
    const int oc = d.out_c;
    const size_t n = static_cast<size_t>(d.k_h) * d.k_w * oc;
    const int b = static_cast<int>(row / d.out_h), oy = static_cast<int>(row % d.out_h);
    std::fill(o, o + int64_t{d.out_w} * oc, T{0});
    for (const Tap& ty : rows[static_cast<size_t>(oy)]) {
      const T* base = products + (static_cast<size_t>(b) * d.in_h + ty.in) * d.in_w * n + static_cast<size_t>(ty.tap) * d.k_w * oc;
      for (int kx = 0; kx < d.k_w; ++kx) {
        const auto [lo_ix, hi_ix] = col_range[static_cast<size_t>(kx)];
        T* acc = o + (int64_t{lo_ix} * d.stride_w + kx - d.pad_w) * oc;
        const T* p = base + static_cast<size_t>(lo_ix) * n + static_cast<size_t>(kx) * oc;
        const int64_t acc_step = int64_t{d.stride_w} * oc;
        if (oc == 1) {
          for (int ix = lo_ix; ix < hi_ix; ++ix, acc += acc_step, p += n) acc[0] += p[0];
        } else {
          for (int ix = lo_ix; ix < hi_ix; ++ix, acc += acc_step, p += n)
            for (int c = 0; c < oc; ++c) acc[c] += p[c];
        }
      }
    }
  }
};

class TransposeConvF32 {
 public:
  TransposeConvF32(const gemm::Ukernels& uk, bool avx512) : uk_(uk), avx512_(avx512) {}

  // After the shapes are known: asks for the products' scratch (false if it would exceed
  // 256 MB) and packs the weights [Cout, KH, KW, Cin] if their data is there (constants; weights
  // that constant folding produces are packed at the first Run).
  bool Prepare(rt::KernelContext& ctx, const TransposeDims& d, const rt::RtTensor& weights);
  // bias may be null; out = clamp(Σ products + bias, lo, hi).
  void Run(rt::KernelContext& ctx, const rt::RtTensor& weights, const float* in, const float* bias, float lo, float hi,
           float* out);
  // The variant's last part: "gemm_avx512", or "tiles_avx512" for the non-overlapping form.
  std::string path() const { return tiles_ ? std::string("tiles_avx512") : std::string("gemm_") + uk_.isa; }

 private:
  void Pack(rt::KernelContext& ctx, const rt::RtTensor& weights);

  void PackTiles(const rt::RtTensor& weights);

  const gemm::Ukernels& uk_;
  const bool avx512_;
  bool tiles_ = false;  // the non-overlapping form (TransposeTiles)
  TransposeTiles tiles_geom_;
  std::vector<float> tiles_w_;  // its weights (packed at Prepare, or at the first Run when folded)
  TransposeDims d_;
  std::shared_ptr<const gemm::PackedB> packed_;
  int scratch_ = -1;
  TransposeGather gather_;
};

// int8 / uint8 TRANSPOSE_CONV: the products P as exact int32 sums from the int16 GEMM's 6x16
// micro-kernel (kernels/gemm_int8: input - zero point times weight - zero point, widened), each
// output row summed by TransposeGather (int32, wrapping like the reference's sums), then bias and
// the per-channel requantization (MultiplyByQuantizedMultiplier, zero point, activation clamp)
// 16 channels at a time on AVX-512 (transpose_conv_tiles_avx512.cc): bit-exact.
struct TransposeRequant {
  int oc = 0;
  // Per channel, padded to a multiple of 16 (bias 0 when absent): bias, multiplier, left and
  // right shift.
  std::vector<int32_t> bias, mult, left, right;
  int32_t out_zp = 0, lo = 0, hi = 0;
};
// `pixels` output pixels of acc (pixel-major, oc values each) into out (int8 or uint8: values are
// clamped into the type's range, so the low byte of each is the value).
void TransposeRequantRowAvx512(const TransposeRequant& q, const int32_t* acc, int64_t pixels, void* out);

class TransposeConvQ {
 public:
  // Asks for the products' and the threads' scratch (false if the products would exceed 256 MB)
  // and packs the weights (zero point w_zp) if their data is there.
  bool Prepare(rt::KernelContext& ctx, const TransposeDims& d, const rt::RtTensor& weights, int32_t w_zp);
  // The output stage's per-channel constants (after Prepare).
  TransposeRequant& requant() { return q_; }
  template <typename T>
  void Run(rt::KernelContext& ctx, const rt::RtTensor& weights, const T* in, int32_t in_zp, T* out);

 private:
  void Pack(rt::KernelContext& ctx, const rt::RtTensor& weights);

  TransposeDims d_;
  int32_t w_zp_ = 0;
  std::shared_ptr<const qgemm::PackedB> packed_;
  int products_ = -1, per_thread_ = -1;  // scratch: the products; each thread's A tile and row sums
  TransposeGather gather_;
  TransposeRequant q_;
};

// The 8-bit engine for this CPU (AVX-512, not reference-only, constant or folded weights), or null.
std::unique_ptr<TransposeConvQ> MakeTransposeConvQ(const rt::KernelCreateContext& cc);

// The fast float engine for this CPU, or null (no AVX2, reference kernels only, or weights that
// are neither constant nor folded from constants).
std::unique_ptr<TransposeConvF32> MakeTransposeConvF32(const rt::KernelCreateContext& cc);

}  // namespace edgeopt::kernels
