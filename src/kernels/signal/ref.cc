// RFFT2D, COMPLEX_ABS, REAL, IMAG: LiteRT 2.9 semantics.
//
// RFFT2D: input float32 [..., H, W], fft_length int32 [2] = {fft_h, fft_w} (powers of two).
// The last two input dimensions are cropped or zero-padded to fft_length; the output is
// complex64 [..., fft_h, fft_w / 2 + 1], the non-redundant half of the 2-D DFT
// (X[k,l] = sum x[m,n] exp(-2πi (km/fft_h + ln/fft_w))). LiteRT runs Ooura's rdft2d in double
// precision; this reference does the same transform with a plain radix-2 FFT in double, so
// results agree to a few ulps of float.
#include <cmath>
#include <complex>
#include <cstring>
#include <vector>

#include "kernels/common/kernel_util.h"
#include "kernels/registration.h"
#include "kernels/signal/signal.h"

namespace edgeopt::kernels {
namespace {

using cdouble = std::complex<double>;

bool IsPowerOfTwo(int32_t v) { return v > 0 && (v & (v - 1)) == 0; }

// In-place iterative radix-2 FFT (forward, e^{-i...}); n is a power of two.
void Fft(cdouble* a, int n) {
  for (int i = 1, j = 0; i < n; ++i) {
    int bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  for (int len = 2; len <= n; len <<= 1) {
    const double ang = -2.0 * M_PI / len;
    for (int i = 0; i < n; i += len) {
      for (int k = 0; k < len / 2; ++k) {
        const cdouble w(std::cos(ang * k), std::sin(ang * k));
        const cdouble u = a[i + k];
        const cdouble v = a[i + k + len / 2] * w;
        a[i + k] = u + v;
        a[i + k + len / 2] = u - v;
      }
    }
  }
}

struct Rfft2dState {
  int32_t fft_h = 0, fft_w = 0;
};

Status ReadFftLength(const rt::KernelContext& ctx, Rfft2dState& s) {
  const rt::RtTensor* len = ctx.input(1);
  if (len->type != DType::kInt32 || len->num_elements() != 2)
    return ctx.Error("fft_length must be int32 with 2 elements, is " + Describe(*len));
  s.fft_h = len->data_as<int32_t>()[0];
  s.fft_w = len->data_as<int32_t>()[1];
  if (!IsPowerOfTwo(s.fft_h) || !IsPowerOfTwo(s.fft_w))
    return ctx.Error("fft_length {" + std::to_string(s.fft_h) + ", " + std::to_string(s.fft_w) +
                     "} must be powers of two");
  return Status::Ok();
}

rt::Shape Rfft2dOutputShape(const rt::RtTensor& in, const Rfft2dState& s) {
  rt::Shape shape = in.shape;
  shape[shape.size() - 2] = s.fft_h;
  shape[shape.size() - 1] = s.fft_w / 2 + 1;
  return shape;
}

Status Rfft2dPrepare(rt::KernelContext& ctx, Rfft2dState& s) {
  RETURN_IF_ERROR(CheckInputCount(ctx, 2, 2));
  RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
  const rt::RtTensor* in = ctx.input(0);
  if (in->type != DType::kFloat32) return ctx.Error("input must be float32, is " + Describe(*in));
  if (in->rank() < 2) return ctx.Error("input must have rank >= 2, is " + Describe(*in));
  if (ctx.output(0)->type != DType::kComplex64) return ctx.Error("output must be complex64, is " + Describe(*ctx.output(0)));
  if (!ctx.input(1)->data) {
    if (!ctx.in_invoke()) {
      ctx.MarkOutputDynamic(0);
      return Status::Ok();
    }
    return ctx.Error("fft_length has no data");
  }
  RETURN_IF_ERROR(ReadFftLength(ctx, s));
  return ctx.SetOutputShape(0, Rfft2dOutputShape(*in, s));
}

Status Rfft2dInvoke(rt::KernelContext& ctx, const Rfft2dState& prepared) {
  Rfft2dState s = prepared;
  const rt::RtTensor* in = ctx.input(0);
  if (!ctx.input(1)->is_constant()) {
    // Read again: a non-constant fft_length may change between invokes.
    RETURN_IF_ERROR(ReadFftLength(ctx, s));
    RETURN_IF_ERROR(ctx.SetOutputShape(0, Rfft2dOutputShape(*in, s)));
  }
  rt::RtTensor* out = ctx.output(0);
  const int in_h = in->dim(-2), in_w = in->dim(-1);
  const int out_w = s.fft_w / 2 + 1;
  int64_t batches = 1;
  for (int i = 0; i + 2 < in->rank(); ++i) batches *= in->shape[i];
  const float* src = in->data_as<float>();
  auto* dst = out->data_as<std::complex<float>>();
  std::vector<cdouble> grid(static_cast<size_t>(s.fft_h) * s.fft_w);
  std::vector<cdouble> column(s.fft_h);
  for (int64_t b = 0; b < batches; ++b) {
    const float* x = src + b * in_h * in_w;
    // Rows: crop/zero-pad, then 1-D FFT along W.
    for (int r = 0; r < s.fft_h; ++r) {
      cdouble* row = &grid[static_cast<size_t>(r) * s.fft_w];
      for (int c = 0; c < s.fft_w; ++c) row[c] = (r < in_h && c < in_w) ? cdouble(x[r * in_w + c], 0.0) : cdouble();
      Fft(row, s.fft_w);
    }
    // Columns of the kept half: 1-D FFT along H.
    for (int c = 0; c < out_w; ++c) {
      for (int r = 0; r < s.fft_h; ++r) column[r] = grid[static_cast<size_t>(r) * s.fft_w + c];
      Fft(column.data(), s.fft_h);
      for (int r = 0; r < s.fft_h; ++r)
        dst[(b * s.fft_h + r) * out_w + c] =
            std::complex<float>(static_cast<float>(column[r].real()), static_cast<float>(column[r].imag()));
    }
  }
  return Status::Ok();
}

// COMPLEX_ABS / REAL / IMAG: complex64 -> float32, complex128 -> float64, same shape.
enum class ComplexPart { kAbs, kReal, kImag };
struct ComplexState {};

template <ComplexPart kPart>
Status ComplexPrepare(rt::KernelContext& ctx, ComplexState&) {
  RETURN_IF_ERROR(CheckInputCount(ctx, 1, 1));
  RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
  const rt::RtTensor* in = ctx.input(0);
  const rt::RtTensor* out = ctx.output(0);
  const bool ok64 = in->type == DType::kComplex64 && out->type == DType::kFloat32;
  const bool ok128 = in->type == DType::kComplex128 && out->type == DType::kFloat64;
  if (!ok64 && !ok128)
    return ctx.Error("needs complex64 -> float32 or complex128 -> float64, has " + Describe(*in) + " -> " +
                     Describe(*out));
  return ctx.SetOutputShape(0, in->shape);
}

template <ComplexPart kPart, typename T>
void ComplexApply(const std::complex<T>* in, T* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (kPart == ComplexPart::kAbs) out[i] = std::abs(in[i]);
    else if constexpr (kPart == ComplexPart::kReal) out[i] = in[i].real();
    else out[i] = in[i].imag();
  }
}

template <ComplexPart kPart>
Status ComplexInvoke(rt::KernelContext& ctx, const ComplexState&) {
  const rt::RtTensor* in = ctx.input(0);
  rt::RtTensor* out = ctx.output(0);
  if (in->type == DType::kComplex64)
    ComplexApply<kPart>(in->data_as<std::complex<float>>(), out->data_as<float>(), in->num_elements());
  else
    ComplexApply<kPart>(in->data_as<std::complex<double>>(), out->data_as<double>(), in->num_elements());
  return Status::Ok();
}

}  // namespace

void RegisterSignalKernels(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_RFFT2D, MakeFnFactory<Rfft2dState>(Rfft2dPrepare, Rfft2dInvoke, "rfft2d/f32/ref"));
  r.Add(tflite::BuiltinOperator_COMPLEX_ABS,
        MakeFnFactory<ComplexState>(ComplexPrepare<ComplexPart::kAbs>, ComplexInvoke<ComplexPart::kAbs>,
                                    "complex_abs/complex/ref"));
  r.Add(tflite::BuiltinOperator_REAL,
        MakeFnFactory<ComplexState>(ComplexPrepare<ComplexPart::kReal>, ComplexInvoke<ComplexPart::kReal>,
                                    "real/complex/ref"));
  r.Add(tflite::BuiltinOperator_IMAG,
        MakeFnFactory<ComplexState>(ComplexPrepare<ComplexPart::kImag>, ComplexInvoke<ComplexPart::kImag>,
                                    "imag/complex/ref"));
  RegisterFastRfft2d(r);
  RegisterFastComplexAbs(r);
}

}  // namespace edgeopt::kernels
