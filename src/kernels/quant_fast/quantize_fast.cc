// Fast QUANTIZE / DEQUANTIZE (per-tensor), bit-exact with quantize/ref_quantize.cc:
// - 8-bit -> 8-bit requantization: every output is a function of one input byte, so a 256-entry
//   table is built at prepare time with the reference formula (applied with AVX-512 VBMI where
//   the CPU has it, common/byte_table.h); when that table is the sign-bit flip (int8 <-> uint8
//   with equal scales, zero points 128 apart) the op is an AVX2 XOR.
// - float32 -> int8 / uint8 / int16: AVX2 division in double and round half away from zero;
//   float32 -> int16 on AVX-512 CPUs: a float product and one exact FMA comparison instead of the
//   division (quant_convert_avx512.cc).
// - DEQUANTIZE int8 / uint8 / int16 -> float32: AVX2, the product in double as the reference.
// Per-channel quantization and the other type pairs stay on the reference kernel.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/common/byte_table.h"
#include "kernels/common/kernel_util.h"
#include "kernels/common/lut.h"
#include "kernels/common/quant_utils.h"
#include "kernels/quant_fast/quant_convert.h"
#include "kernels/quant_fast/quant_fast.h"

namespace edgeopt::kernels {

template <typename T>
void qconv::QuantizeFloatScalar(const float* x, T* y, int64_t n, float scale, int32_t zero_point) {
  const int32_t lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  for (int64_t i = 0; i < n; ++i) {
    const int32_t q = TruncateToInt32(std::round(static_cast<double>(x[i]) / scale));
    // + zero point wrapping as the reference's int32 sum (q is INT32_MIN for NaN or out of range).
    const auto v = static_cast<int32_t>(static_cast<uint32_t>(q) + static_cast<uint32_t>(zero_point));
    y[i] = static_cast<T>(std::min(std::max(v, lo), hi));
  }
}
template void qconv::QuantizeFloatScalar<int8_t>(const float*, int8_t*, int64_t, float, int32_t);
template void qconv::QuantizeFloatScalar<uint8_t>(const float*, uint8_t*, int64_t, float, int32_t);
template void qconv::QuantizeFloatScalar<int16_t>(const float*, int16_t*, int64_t, float, int32_t);

namespace {

bool Is8Bit(DType t) { return t == DType::kInt8 || t == DType::kUInt8; }
bool PerTensor(const rt::RtTensor& t) { return t.quant && t.quant->scale.size() == 1; }

// The byte of an 8-bit value (int8 stored as its two's complement byte).
int32_t ByteValue(DType t, int byte) { return t == DType::kInt8 ? static_cast<int8_t>(byte) : byte; }

// Elements per thread below which a conversion runs on one thread (a fork / join costs about a
// microsecond; these loops convert some 10 (float) to 40 (bytes) elements per nanosecond).
constexpr int64_t kMinByteChunk = 32 << 10;
constexpr int64_t kMinFloatChunk = 8 << 10;

// fn(begin, end) over contiguous ranges of [0, n), one per thread when each gets at least
// `min_chunk` elements. In element order (ThreadPool: the caller the front, a worker the back),
// as the convolutions that read a model's quantized input cut their rows: with two threads each
// core writes the half of the tensor it reads next. Unsplit, the first QUANTIZE of an int8
// MobileNetV2 (224x224x3) took 11 us at 2 threads against 4 us at 1: every line it wrote was
// held by the other core, which had read it in the previous invoke.
template <typename Fn>
void ForEachElementRange(rt::KernelContext& ctx, int64_t n, int64_t min_chunk, Fn&& fn) {
  if (ctx.threads().num_threads() == 1 || n < 2 * min_chunk) {
    fn(int64_t{0}, n);
    return;
  }
  ctx.threads().ParallelFor(n, min_chunk, fn);
}

class QuantizeFastKernel final : public FastKernel {
 public:
  QuantizeFastKernel(std::unique_ptr<rt::OpKernel> ref, DType in, DType out, bool cpu_avx512,
                     ApplyByteTableFn apply_table)
      : FastKernel(std::move(ref)), in_(in), out_(out), cpu_avx512_(cpu_avx512), apply_table_(apply_table) {}

 protected:
  enum class Mode { kFlip, kTable, kFromFloat };

  std::string FastVariant() const override {
    const std::string table = apply_table_ == ApplyByteTableVbmi ? "table_avx512vbmi" : "table";
    const std::string how = mode_ == Mode::kFlip ? "xor_avx2" : mode_ == Mode::kTable ? table : avx512_ ? "avx512" : "avx2";
    return "quantize/" + TypeName(in_) + "_" + TypeName(out_) + "/" + how;
  }

  Expected<bool> PrepareFast(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    const rt::RtTensor& out = *ctx.output(0);
    if (!PerTensor(out)) return false;
    if (in_ == DType::kFloat32) {
      mode_ = Mode::kFromFloat;
      avx512_ = cpu_avx512_ && qconv::QuantizeAvx512Applies(out.scale());
      return true;
    }
    if (!PerTensor(in)) return false;
    int32_t mult;
    int shift;
    QuantizeMultiplier(static_cast<double>(in.scale()) / static_cast<double>(out.scale()), &mult, &shift);
    const int32_t in_zp = in.zero_point(), out_zp = out.zero_point();
    const int32_t lo = QMinOf(out_), hi = QMaxOf(out_);
    bool flip = true;
    for (int byte = 0; byte < 256; ++byte) {
      const int32_t v = MultiplyByQuantizedMultiplier(ByteValue(in_, byte) - in_zp, mult, shift) + out_zp;
      table_[byte] = static_cast<uint8_t>(std::max(std::min(v, hi), lo));
      flip = flip && table_[byte] == (byte ^ 0x80);
    }
    mode_ = flip ? Mode::kFlip : Mode::kTable;
    return true;
  }

  Status InvokeFast(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    rt::RtTensor& out = *ctx.output(0);
    if (mode_ == Mode::kFromFloat && out_ != DType::kInt8 && out_ != DType::kUInt8 && out_ != DType::kInt16)
      return ctx.UnsupportedError("output " + TypeName(out_) + " is not supported");
    const auto* x8 = in.data_as<uint8_t>();
    auto* y8 = out.data_as<uint8_t>();
    const float* x = in.data_as<float>();
    const int32_t zp = mode_ == Mode::kFromFloat ? out.zero_point() : 0;
    const float scale = mode_ == Mode::kFromFloat ? out.scale() : 0.0f;
    ForEachElementRange(ctx, in.num_elements(), mode_ == Mode::kFromFloat ? kMinFloatChunk : kMinByteChunk,
                        [&](int64_t b, int64_t e) {
      const int64_t n = e - b;
      switch (mode_) {
        case Mode::kFlip: qconv::FlipSignBit(x8 + b, y8 + b, n); break;
        case Mode::kTable: apply_table_(table_, x8 + b, y8 + b, n); break;
        case Mode::kFromFloat:
          switch (out_) {
            case DType::kInt8: Quantize(x + b, out.data_as<int8_t>() + b, n, scale, zp); break;
            case DType::kUInt8: Quantize(x + b, out.data_as<uint8_t>() + b, n, scale, zp); break;
            default: Quantize(x + b, out.data_as<int16_t>() + b, n, scale, zp); break;
          }
          break;
      }
    });
    return Status::Ok();
  }

 private:
  template <typename T>
  void Quantize(const float* x, T* y, int64_t n, float scale, int32_t zp) const {
    if (avx512_) qconv::QuantizeFloatAvx512(x, y, n, scale, zp);
    else qconv::QuantizeFloat(x, y, n, static_cast<double>(scale), zp);
  }

  DType in_, out_;
  bool cpu_avx512_;
  ApplyByteTableFn apply_table_;
  bool avx512_ = false;  // float32 -> T on AVX-512 (QuantizeFloatAvx512)
  Mode mode_ = Mode::kTable;
  ByteTable table_{};
};

class DequantizeFastKernel final : public FastKernel {
 public:
  DequantizeFastKernel(std::unique_ptr<rt::OpKernel> ref, DType in) : FastKernel(std::move(ref)), in_(in) {}

 protected:
  std::string FastVariant() const override { return "dequantize/" + TypeName(in_) + "/avx2"; }

  Expected<bool> PrepareFast(rt::KernelContext& ctx) override {
    return in_ == DType::kFloat16 || PerTensor(*ctx.input(0));
  }

  Status InvokeFast(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    float* y = ctx.output(0)->data_as<float>();
    ForEachElementRange(ctx, in.num_elements(), kMinFloatChunk, [&](int64_t b, int64_t e) {
      const int64_t n = e - b;
      switch (in_) {
        // float16 weights: the DEQUANTIZE is folded at init (once per model), 8 values per vcvtph2ps.
        case DType::kFloat16: qconv::HalfToFloatF16c(in.data_as<uint16_t>() + b, y + b, n); break;
        case DType::kInt8: qconv::DequantizeInt(in.data_as<int8_t>() + b, y + b, n, in.scale(), in.zero_point()); break;
        case DType::kUInt8:
          qconv::DequantizeInt(in.data_as<uint8_t>() + b, y + b, n, in.scale(), in.zero_point());
          break;
        default: qconv::DequantizeInt(in.data_as<int16_t>() + b, y + b, n, in.scale(), in.zero_point()); break;
      }
    });
    return Status::Ok();
  }

 private:
  DType in_;
};

}  // namespace

std::unique_ptr<rt::OpKernel> MakeQuantizeFast(const rt::KernelCreateContext& cc, RefFactory reference) {
  if (cc.reference_only || !cc.cpu.has_avx2_fma()) return nullptr;
  const Tensor* in = cc.input(0);
  const Tensor* out = cc.output(0);
  if (!in || !out) return nullptr;
  const bool from_float = in->type == DType::kFloat32 && (Is8Bit(out->type) || out->type == DType::kInt16);
  if (!from_float && !(Is8Bit(in->type) && Is8Bit(out->type))) return nullptr;
  auto ref = MakeReferenceKernel(cc, reference);
  if (!ref) return nullptr;
  return std::make_unique<QuantizeFastKernel>(std::move(ref), in->type, out->type, cc.cpu.has_avx512(),
                                              ByteTableFn(cc.cpu, false));
}

std::unique_ptr<rt::OpKernel> MakeDequantizeFast(const rt::KernelCreateContext& cc, RefFactory reference) {
  if (cc.reference_only || !cc.cpu.has_avx2_fma()) return nullptr;
  const Tensor* in = cc.input(0);
  const Tensor* out = cc.output(0);
  if (!in || !out || !(Is8Bit(in->type) || in->type == DType::kInt16 || in->type == DType::kFloat16) ||
      out->type != DType::kFloat32)
    return nullptr;
  auto ref = MakeReferenceKernel(cc, reference);
  if (!ref) return nullptr;
  return std::make_unique<DequantizeFastKernel>(std::move(ref), in->type);
}

}  // namespace edgeopt::kernels
