// RFFT2D fast path: the same transform as ref.cc (double precision throughout, so results stay
// within a few float ulps of the reference and of LiteRT's Ooura rdft2d), but with everything
// that does not depend on the data computed once at prepare:
// - Rows: a real row of length W is packed as W/2 complex values z[m] = x[2m] + i x[2m+1],
//   transformed with one complex FFT of length W/2 (iterative radix-2, bit-reversal table and
//   per-stage twiddle tables), then split into the W/2 + 1 kept bins:
//     X[k] = (Z[k] + conj(Z[M-k])) / 2 - i e^{-2πik/W} (Z[k] - conj(Z[M-k])) / 2,  M = W/2.
//   Rows that are all zero padding are not transformed. The first two butterfly stages run as
//   one radix-4 pass; the later ones with AVX-512 (rfft2d_avx512.cc) where the CPU has it.
// - Columns (fft_h > 1): the H-point FFT runs on whole rows of the kept half at once (each
//   butterfly is a loop over contiguous columns, which the compiler vectorizes).
// Data is kept split (real and imaginary planes) in a scratch grid of the kernel. Rows, and
// column blocks, are spread over the interpreter's threads.
#include <cmath>
#include <complex>
#include <cstring>
#include <memory>
#include <vector>

#include "kernels/common/fast_kernel.h"
#include "kernels/common/kernel_util.h"
#include "kernels/gemm/parallel.h"
#include "kernels/signal/signal.h"

namespace edgeopt::kernels {
namespace {

}  // namespace

void RowStagesPortable(double* re, double* im, int n, const double* tw_re, const double* tw_im) {
  for (int len = 8; len <= n; len <<= 1) {
    const int half = len / 2;
    const double* wr = tw_re + half - 1;
    const double* wi = tw_im + half - 1;
    for (int i = 0; i < n; i += len) {
      double* ar = re + i;
      double* ai = im + i;
      double* br = re + i + half;
      double* bi = im + i + half;
      for (int k = 0; k < half; ++k) {
        const double vr = br[k] * wr[k] - bi[k] * wi[k];
        const double vi = br[k] * wi[k] + bi[k] * wr[k];
        br[k] = ar[k] - vr;
        bi[k] = ai[k] - vi;
        ar[k] += vr;
        ai[k] += vi;
      }
    }
  }
}

namespace {

// A forward complex FFT of a fixed power-of-two length n on split real/imaginary arrays.
class ComplexFftPlan {
 public:
  void Init(int n) {
    n_ = n;
    bitrev_.assign(n, 0);
    for (int i = 1, j = 0; i < n; ++i) {
      int bit = n >> 1;
      for (; j & bit; bit >>= 1) j ^= bit;
      j ^= bit;
      bitrev_[i] = j;
    }
    // Stage with butterfly span `len` uses twiddles exp(-2πik/len), k < len/2, stored from
    // offset len/2 - 1 (so the stages' tables lie back to back).
    tw_re_.assign(n > 1 ? n - 1 : 0, 0.0);
    tw_im_.assign(tw_re_.size(), 0.0);
    for (int len = 2; len <= n; len <<= 1) {
      const double ang = -2.0 * M_PI / len;
      for (int k = 0; k < len / 2; ++k) {
        tw_re_[len / 2 - 1 + k] = std::cos(ang * k);
        tw_im_[len / 2 - 1 + k] = std::sin(ang * k);
      }
    }
  }
  int size() const { return n_; }

  // In place on n values re[i * stride + c], im[...] for each c in [0, width): `width`
  // independent transforms whose elements are `stride` apart (stride 1, width 1 for one row).
  void Run(double* re, double* im, int64_t stride, int64_t width) const {
    for (int i = 1; i < n_; ++i) {
      const int j = bitrev_[i];
      if (i < j) {
        for (int64_t c = 0; c < width; ++c) {
          std::swap(re[i * stride + c], re[j * stride + c]);
          std::swap(im[i * stride + c], im[j * stride + c]);
        }
      }
    }
    for (int len = 2; len <= n_; len <<= 1) {
      const int half = len / 2;
      const double* wr = &tw_re_[half - 1];
      const double* wi = &tw_im_[half - 1];
      for (int i = 0; i < n_; i += len) {
        for (int k = 0; k < half; ++k) {
          double* ar = re + (i + k) * stride;
          double* ai = im + (i + k) * stride;
          double* br = re + (i + k + half) * stride;
          double* bi = im + (i + k + half) * stride;
          const double w_r = wr[k], w_i = wi[k];
          for (int64_t c = 0; c < width; ++c) {
            const double vr = br[c] * w_r - bi[c] * w_i;
            const double vi = br[c] * w_i + bi[c] * w_r;
            br[c] = ar[c] - vr;
            bi[c] = ai[c] - vi;
            ar[c] += vr;
            ai[c] += vi;
          }
        }
      }
    }
  }

  // One contiguous transform of n values (the row case): the spans 2 and 4, whose twiddles
  // are 1 and -i, as one radix-4 pass, then `stages` for the spans from 8 on.
  void RunRow(double* re, double* im, RowStagesFn stages) const {
    for (int i = 1; i < n_; ++i) {
      const int j = bitrev_[i];
      if (i < j) {
        std::swap(re[i], re[j]);
        std::swap(im[i], im[j]);
      }
    }
    if (n_ == 2) {
      const double r0 = re[0], i0 = im[0];
      re[0] = r0 + re[1];
      im[0] = i0 + im[1];
      re[1] = r0 - re[1];
      im[1] = i0 - im[1];
      return;
    }
    for (int i = 0; i + 4 <= n_; i += 4) {
      const double s0r = re[i] + re[i + 1], s0i = im[i] + im[i + 1];
      const double d0r = re[i] - re[i + 1], d0i = im[i] - im[i + 1];
      const double s1r = re[i + 2] + re[i + 3], s1i = im[i + 2] + im[i + 3];
      const double d1r = re[i + 2] - re[i + 3], d1i = im[i + 2] - im[i + 3];
      // v = d1 * (-i) = (d1i, -d1r)
      re[i] = s0r + s1r;
      im[i] = s0i + s1i;
      re[i + 2] = s0r - s1r;
      im[i + 2] = s0i - s1i;
      re[i + 1] = d0r + d1i;
      im[i + 1] = d0i - d1r;
      re[i + 3] = d0r - d1i;
      im[i + 3] = d0i + d1r;
    }
    if (n_ >= 8) stages(re, im, n_, tw_re_.data(), tw_im_.data());
  }

 private:
  int n_ = 0;
  std::vector<int> bitrev_;
  std::vector<double> tw_re_, tw_im_;
};

class Rfft2dFast : public FastKernel {
 public:
  Rfft2dFast(std::unique_ptr<rt::OpKernel> ref, bool avx512)
      : FastKernel(std::move(ref)), avx512_(avx512), row_stages_(avx512 ? RowStagesAvx512 : RowStagesPortable) {}

 protected:
  Expected<bool> PrepareFast(rt::KernelContext& ctx) override {
    const rt::RtTensor* len = ctx.input(1);
    // A fft_length known only at invoke (or the degenerate width 1) stays with the reference.
    if (!len->is_constant() || !len->data) return false;
    fft_h_ = len->data_as<int32_t>()[0];
    fft_w_ = len->data_as<int32_t>()[1];
    if (fft_w_ < 2) return false;
    const rt::RtTensor* in = ctx.input(0);
    batches_ = 1;
    for (int i = 0; i + 2 < in->rank(); ++i) batches_ *= in->shape[i];
    out_w_ = fft_w_ / 2 + 1;
    if (row_fft_.size() != fft_w_ / 2) {
      row_fft_.Init(fft_w_ / 2);
      const int m = fft_w_ / 2;
      split_re_.assign(m + 1, 0.0);
      split_im_.assign(m + 1, 0.0);
      const double ang = -2.0 * M_PI / fft_w_;
      for (int k = 0; k <= m; ++k) {
        split_re_[k] = std::cos(ang * k);
        split_im_[k] = std::sin(ang * k);
      }
    }
    if (col_fft_.size() != fft_h_) col_fft_.Init(fft_h_);
    const size_t plane = static_cast<size_t>(batches_) * fft_h_ * out_w_;
    grid_re_.assign(plane, 0.0);
    grid_im_.assign(plane, 0.0);
    return true;
  }

  Status InvokeFast(rt::KernelContext& ctx) override {
    const rt::RtTensor* in = ctx.input(0);
    const int in_h = in->dim(-2), in_w = in->dim(-1);
    const float* src = in->data_as<float>();
    auto* dst = ctx.output(0)->data_as<std::complex<float>>();
    const int threads = ctx.threads().num_threads();
    const int m = fft_w_ / 2;
    const int64_t rows = batches_ * fft_h_;
    // Rows: about (W log W) flops each; tasks of at least 8 rows.
    const int64_t row_tasks = TaskCount(threads, rows, 8);
    RunTasks(&ctx.threads(), row_tasks, [&](int64_t t) {
      for (int64_t row = rows * t / row_tasks; row < rows * (t + 1) / row_tasks; ++row) {
        const int64_t b = row / fft_h_;
        const int r = static_cast<int>(row % fft_h_);
        double* re = &grid_re_[row * out_w_];
        double* im = &grid_im_[row * out_w_];
        if (r >= in_h) {
          std::fill(re, re + out_w_, 0.0);
          std::fill(im, im + out_w_, 0.0);
          continue;
        }
        const float* x = src + (b * in_h + r) * in_w;
        const int n = std::min(in_w, fft_w_);
        for (int j = 0; j < m; ++j) {
          re[j] = 2 * j < n ? x[2 * j] : 0.0;
          im[j] = 2 * j + 1 < n ? x[2 * j + 1] : 0.0;
        }
        row_fft_.RunRow(re, im, row_stages_);
        SplitRealSpectrum(re, im, m);
      }
    });
    if (fft_h_ > 1) {
      // Columns in blocks of 32 per batch.
      constexpr int64_t kBlock = 32;
      const int64_t blocks_per_batch = (out_w_ + kBlock - 1) / kBlock;
      const int64_t units = batches_ * blocks_per_batch;
      const int64_t tasks = TaskCount(threads, units, 1);
      RunTasks(&ctx.threads(), tasks, [&](int64_t t) {
        for (int64_t u = units * t / tasks; u < units * (t + 1) / tasks; ++u) {
          const int64_t b = u / blocks_per_batch;
          const int64_t c0 = (u % blocks_per_batch) * kBlock;
          const int64_t width = std::min<int64_t>(kBlock, out_w_ - c0);
          const size_t base = static_cast<size_t>(b) * fft_h_ * out_w_ + c0;
          col_fft_.Run(&grid_re_[base], &grid_im_[base], out_w_, width);
        }
      });
    }
    const int64_t total = rows * out_w_;
    const int64_t copy_tasks = TaskCount(threads, total, 16384);
    RunTasks(&ctx.threads(), copy_tasks, [&](int64_t t) {
      for (int64_t i = total * t / copy_tasks; i < total * (t + 1) / copy_tasks; ++i)
        dst[i] = std::complex<float>(static_cast<float>(grid_re_[i]), static_cast<float>(grid_im_[i]));
    });
    return Status::Ok();
  }

  std::string FastVariant() const override { return avx512_ ? "rfft2d/f32/avx512" : "rfft2d/f32/fft_split"; }

 private:
  // Turns Z (the M-point FFT of the packed row, in re/im[0, M)) into the M + 1 bins of the
  // real row's spectrum, in place: bins k and M - k are both made from Z[k] and Z[M - k].
  void SplitRealSpectrum(double* re, double* im, int m) const {
    const double z0r = re[0], z0i = im[0];
    re[0] = z0r + z0i;
    im[0] = 0.0;
    re[m] = z0r - z0i;
    im[m] = 0.0;
    for (int k = 1; k <= m / 2; ++k) {
      const int j = m - k;
      const double ar = re[k], ai = im[k], br = re[j], bi = im[j];
      // Bin k from (Z[k], Z[j]); bin j from (Z[j], Z[k]).
      auto bin = [&](double pr, double pi, double qr, double qi, int idx, double* o_re, double* o_im) {
        const double er = 0.5 * (pr + qr), ei = 0.5 * (pi - qi);  // (Z[k] + conj Z[M-k]) / 2
        const double dr = 0.5 * (pi + qi), di = -0.5 * (pr - qr);  // (Z[k] - conj Z[M-k]) / (2i)
        const double wr = split_re_[idx], wi = split_im_[idx];
        *o_re = er + wr * dr - wi * di;
        *o_im = ei + wr * di + wi * dr;
      };
      double kr, ki, jr, ji;
      bin(ar, ai, br, bi, k, &kr, &ki);
      bin(br, bi, ar, ai, j, &jr, &ji);
      re[k] = kr;
      im[k] = ki;
      re[j] = jr;
      im[j] = ji;
    }
  }

  bool avx512_;
  RowStagesFn row_stages_;
  int32_t fft_h_ = 0, fft_w_ = 0;
  int out_w_ = 0;
  int64_t batches_ = 1;
  ComplexFftPlan row_fft_, col_fft_;
  std::vector<double> split_re_, split_im_;
  std::vector<double> grid_re_, grid_im_;
};

std::unique_ptr<rt::OpKernel> MakeRfft2dFast(const rt::KernelCreateContext& cc, RefFactory reference) {
  if (cc.reference_only) return nullptr;
  auto ref = MakeReferenceKernel(cc, reference);
  if (!ref) return nullptr;
  return std::make_unique<Rfft2dFast>(std::move(ref), cc.cpu.has_avx512());
}

}  // namespace

void RegisterFastRfft2d(rt::OpRegistry& r) { AddFastWithFallback(r, tflite::BuiltinOperator_RFFT2D, MakeRfft2dFast); }

}  // namespace edgeopt::kernels
