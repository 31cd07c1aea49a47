// CAST between float32, float64, float16, int64, int32, uint32, int16, uint16, uint8, int8,
// bool and complex64 (to and from real types: the real part; complex64 to complex64 copies). Values are converted as C++ static_cast does, with the cases
// C++ leaves undefined spelled out the way the reference runtime's x86-64 build behaves:
// float -> integer truncates toward zero; out-of-range or NaN gives the "integer indefinite"
// value (INT32_MIN / INT64_MIN) of the 32- or 64-bit conversion, then narrower types keep the
// low bits (float -> uint8 of 300.0 gives 44, of -1.0 gives 255). To bool: value != 0.
#include <complex>
#include <memory>
#include <type_traits>

#include "core/half.h"
#include "kernels/common/elementwise_util.h"
#include "kernels/common/lut.h"
#include "kernels/quantize/ops.h"

namespace edgeopt::kernels::quantize {
namespace {

struct Half {
  uint16_t bits;
};
using Complex = std::complex<float>;

template <typename T>
constexpr bool kIsFloat = std::is_floating_point_v<T>;

// The source value as a "plain" number (half decoded, complex reduced to its real part).
template <typename From>
auto Plain(From v) {
  if constexpr (std::is_same_v<From, Half>) {
    return HalfToFloat(v.bits);
  } else if constexpr (std::is_same_v<From, Complex>) {
    return v.real();
  } else {
    return v;
  }
}

template <typename To, typename From>
To Convert(From v) {
  if constexpr (std::is_same_v<From, Complex> && std::is_same_v<To, Complex>) return v;
  const auto p = Plain(v);
  using P = decltype(p);
  if constexpr (std::is_same_v<To, bool>) {
    return p != P(0);
  } else if constexpr (std::is_same_v<To, Half>) {
    return Half{FloatToHalf(static_cast<float>(p))};
  } else if constexpr (std::is_same_v<To, Complex>) {
    return Complex(static_cast<float>(p), 0.0f);
  } else if constexpr (kIsFloat<P> && std::is_integral_v<To>) {
    if constexpr (std::is_same_v<To, int64_t>) {
      return TruncateToInt64(p);
    } else if constexpr (std::is_same_v<To, uint32_t>) {
      return static_cast<To>(TruncateToInt64(p));
    } else {
      return static_cast<To>(TruncateToInt32(p));
    }
  } else {
    return static_cast<To>(p);
  }
}

template <typename From, typename To>
void CastLoop(const uint8_t* in, uint8_t* out, int64_t n) {
  const From* x = reinterpret_cast<const From*>(in);
  To* y = reinterpret_cast<To*>(out);
  for (int64_t i = 0; i < n; ++i) y[i] = Convert<To>(x[i]);
}

template <typename From>
bool CastFrom(DType to, const uint8_t* in, uint8_t* out, int64_t n) {
  switch (to) {
    case DType::kFloat32: CastLoop<From, float>(in, out, n); return true;
    case DType::kFloat64: CastLoop<From, double>(in, out, n); return true;
    case DType::kFloat16: CastLoop<From, Half>(in, out, n); return true;
    case DType::kInt64: CastLoop<From, int64_t>(in, out, n); return true;
    case DType::kInt32: CastLoop<From, int32_t>(in, out, n); return true;
    case DType::kUInt32: CastLoop<From, uint32_t>(in, out, n); return true;
    case DType::kInt16: CastLoop<From, int16_t>(in, out, n); return true;
    case DType::kUInt16: CastLoop<From, uint16_t>(in, out, n); return true;
    case DType::kUInt8: CastLoop<From, uint8_t>(in, out, n); return true;
    case DType::kInt8: CastLoop<From, int8_t>(in, out, n); return true;
    case DType::kBool: CastLoop<From, bool>(in, out, n); return true;
    case DType::kComplex64: CastLoop<From, Complex>(in, out, n); return true;
    default: return false;
  }
}

bool Cast(DType from, DType to, const uint8_t* in, uint8_t* out, int64_t n) {
  switch (from) {
    case DType::kFloat32: return CastFrom<float>(to, in, out, n);
    case DType::kFloat64: return CastFrom<double>(to, in, out, n);
    case DType::kFloat16: return CastFrom<Half>(to, in, out, n);
    case DType::kInt64: return CastFrom<int64_t>(to, in, out, n);
    case DType::kInt32: return CastFrom<int32_t>(to, in, out, n);
    case DType::kUInt32: return CastFrom<uint32_t>(to, in, out, n);
    case DType::kInt16: return CastFrom<int16_t>(to, in, out, n);
    case DType::kUInt16: return CastFrom<uint16_t>(to, in, out, n);
    case DType::kUInt8: return CastFrom<uint8_t>(to, in, out, n);
    case DType::kInt8: return CastFrom<int8_t>(to, in, out, n);
    case DType::kBool: return CastFrom<bool>(to, in, out, n);
    case DType::kComplex64: return CastFrom<Complex>(to, in, out, n);
    default: return false;
  }
}

const std::vector<DType> kCastTypes = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kInt64,
                                       DType::kInt32,   DType::kUInt32,  DType::kInt16,   DType::kUInt16,
                                       DType::kUInt8,   DType::kInt8,    DType::kBool,    DType::kComplex64};

class CastKernel : public rt::OpKernel {
 public:
  CastKernel(DType from, DType to) : from_(from), to_(to) {}
  std::string variant() const override { return "cast/" + TypeName(from_) + "_" + TypeName(to_) + "/ref"; }

  Status Prepare(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckInputCount(ctx, 1, 1));
    RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
    ASSIGN_OR_RETURN(const rt::RtTensor* in, RequiredInput(ctx, 0));
    return ctx.SetOutputShape(0, in->shape);
  }

  Status Invoke(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    if (!Cast(from_, to_, in.data, ctx.output(0)->data, in.num_elements()))
      return ctx.UnsupportedError(TypeName(from_) + " to " + TypeName(to_) + " is not supported");
    return Status::Ok();
  }

 private:
  DType from_, to_;
};

Expected<std::unique_ptr<rt::OpKernel>> MakeCast(const rt::KernelCreateContext& cc) {
  const Tensor* in = cc.input(0);
  const Tensor* out = cc.output(0);
  if (!in || !out) return cc.Error("expects one input and one output");
  if (!TypeIn(in->type, kCastTypes) || !TypeIn(out->type, kCastTypes))
    return cc.Error(TypeName(in->type) + " to " + TypeName(out->type) +
                    " is not supported (supported: any pair of " + TypeListText(kCastTypes) + ")");
  return std::unique_ptr<rt::OpKernel>(new CastKernel(in->type, out->type));
}

}  // namespace

void RegisterCast(rt::OpRegistry& r) { r.Add(tflite::BuiltinOperator_CAST, MakeCast); }

}  // namespace edgeopt::kernels::quantize
