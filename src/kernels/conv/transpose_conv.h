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

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/gemm/gemm.h"
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
  struct Tap {
    int in;   // input row (or column)
    int tap;  // filter row (or column)
  };
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
  // Per output row: the (input row, filter row) pairs landing on it, filter rows ascending.
  std::vector<std::vector<Tap>> rows_;
  // Per filter column: the input columns [first, last) whose products land inside the output.
  std::vector<std::pair<int, int>> col_range_;
};

// The fast float engine for this CPU, or null (no AVX2, reference kernels only, or weights that
// are neither constant nor folded from constants).
std::unique_ptr<TransposeConvF32> MakeTransposeConvF32(const rt::KernelCreateContext& cc);

}  // namespace edgeopt::kernels
