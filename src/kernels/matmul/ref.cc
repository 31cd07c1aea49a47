// BATCH_MATMUL reference kernels, TFLite 2.9 semantics: out[..., m, n] = sum_k x[..., m, k] *
// y[..., k, n] with x = adj_x ? lhs^T : lhs and y = adj_y ? rhs^T : rhs over the last two
// dimensions; ranks 2-5, leading (batch) dimensions broadcast numpy-style.
//   float32    plain sums
//   int8       per-tensor lhs/rhs/output with zero points, legacy multiplier
//              float(lhs_scale * rhs_scale) / out_scale, full int8 range, requantized with ruy's
//              rounding (2.9 runs it through cpu_backend_gemm on x86)
//   int16      zero points 0, int64 accumulation and 64-bit reference requantization
//   hybrid     float lhs, int8 rhs: every lhs row (the k-vector of one output row) is quantized
//              at each invoke, symmetric or asymmetric (asymmetric_quantize_inputs);
//              out = (dot - zp * colsum(rhs)) * (row_scale * rhs_scale[n]). This is newer
//              LiteRT's arithmetic (hybrid FULLY_CONNECTED's); 2.9's hybrid BATCH_MATMUL returns
//              garbage, so the tests compare with 2.9's FULLY_CONNECTED / CONV_2D instead.
// Ranks up to 5 (2.9 stops at 4).
//
// float32 on a CPU with AVX2 (not reference-only) runs on the packed GEMM (kernels/gemm):
// each distinct rhs matrix packed once when rhs is constant, at every invoke otherwise; adj_x
// lhs matrices transposed into scratch first. Sums in another order than these loops: within
// float rounding (variant `batch_matmul/f32/gemm_avx512`). int8 on a CPU with AVX-512 VNNI runs
// on the VNNI GEMM (kernels/gemm_int8, variant `batch_matmul/int8/avx512vnni`): each rhs matrix
// packed at every invoke by the vectorized qgemm::PackRhsVnni (read as [k][n], or [n][k] with
// adj_y), its zero point through the GEMM's weight forms (w - zp in int8, else row sums), the
// lhs rows (transposed first for adj_x) flipped into the uint8 domain; int32 sums wrap as the
// reference's int64 sum wrapped to int32, and the output stage is conv's (the legacy multiplier
// with ruy's rounding), so bit-exact. Hybrid with one constant rhs matrix and no adj_x (a
// dynamic-range layer's weights) runs as hybrid FULLY_CONNECTED does
// (kernels/hybrid, variant `batch_matmul/hybrid/avx512vnni`): the lhs rows quantized with the
// vectorized QuantizeRows, the rhs packed once as [n][k] units, VNNI dot products, the same
// float scaling per row and unit; bit-exact.
#include <algorithm>
#include <limits>
#include <memory>

#include "kernels/common/broadcast.h"
#include "kernels/common/hybrid_quant.h"
#include "kernels/common/kernel_util.h"
#include "kernels/common/nn_util.h"
#include "kernels/common/quant_utils.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm_int8/qgemm_ops_util.h"
#include "kernels/gemm_int8/qgemm_vnni.h"
#include "kernels/hybrid/hybrid_dot.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {
namespace {

// dst[c * rows + r] = src[r * cols + c]: a rows x cols matrix transposed (adjoint operands laid
// out as the GEMMs' rows).
template <typename T>
void TransposeMatrix(const T* src, int64_t rows, int64_t cols, T* dst) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) dst[c * rows + r] = src[r * cols + c];
}

enum class MmKind { kFloat, kHybrid, kInt8, kInt16 };

class BatchMatMulKernel : public rt::OpKernel {
 public:
  // gemm: the float GEMM family to run float32 on (null: the loops below).
  // vnni: the CPU has AVX-512 VNNI and the kernel is not reference-only: int8 may run on the VNNI
  // GEMM, hybrid with one constant rhs matrix on the hybrid dot products.
  BatchMatMulKernel(MmKind kind, const gemm::Ukernels* gemm, bool vnni = false)
      : kind_(kind), gemm_(gemm), vnni_(vnni) {}
  Status Prepare(rt::KernelContext& ctx) override;
  Status Invoke(rt::KernelContext& ctx) override;
  std::string variant() const override {
    switch (kind_) {
      case MmKind::kFloat: return gemm_ ? std::string("batch_matmul/f32/gemm_") + gemm_->isa : "batch_matmul/f32/ref";
      case MmKind::kHybrid: return hybrid_packed_ ? "batch_matmul/hybrid/avx512vnni" : "batch_matmul/hybrid/ref";
      case MmKind::kInt8: return use_vnni_ ? "batch_matmul/int8/avx512vnni" : "batch_matmul/int8/ref";
      case MmKind::kInt16: return "batch_matmul/int16/ref";
    }
    return "batch_matmul/ref";
  }
  int64_t Macs(const rt::KernelContext&) const override { return batches_ * m_ * n_ * k_; }

 private:
  // Element offsets of x[b, m, k] and y[b, k, n] (adjoints applied) in the input buffers.
  int64_t XOffset(int64_t x_base, int m, int k) const {
    return x_base + (adj_x_ ? int64_t{k} * m_ + m : int64_t{m} * k_ + k);
  }
  int64_t YOffset(int64_t y_base, int k, int n) const {
    return y_base + (adj_y_ ? int64_t{n} * k_ + k : int64_t{k} * n_ + n);
  }

  // Visits every output element: fn(out_index, lhs_matrix_base, rhs_matrix_base, m, n).
  template <typename Fn>
  void ForEachOutput(rt::KernelContext& ctx, Fn&& fn) const {
    const int64_t per_batch = int64_t{m_} * n_;
    ctx.threads().ParallelFor(batches_ * m_, 1, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const int64_t b = row / m_;
        const int m = static_cast<int>(row % m_);
        const int64_t x_base = x_batch_offset_[b] * m_ * k_;
        const int64_t y_base = y_batch_offset_[b] * k_ * n_;
        for (int n = 0; n < n_; ++n) fn(b * per_batch + int64_t{m} * n_ + n, x_base, y_base, m, n);
      }
    });
  }

  // float32 on the packed GEMM.
  void InvokeGemm(rt::KernelContext& ctx);
  // int8 on the VNNI GEMM.
  Status PrepareVnni(rt::KernelContext& ctx);
  void InvokeVnni(rt::KernelContext& ctx);
  // hybrid with one constant rhs matrix on the hybrid FULLY_CONNECTED's dot products.
  void PrepareHybridVnni(const rt::RtTensor& lhs, const rt::RtTensor& rhs);
  void InvokeHybridVnni(rt::KernelContext& ctx);

  MmKind kind_;
  const gemm::Ukernels* gemm_;
  bool vnni_ = false;
  bool use_vnni_ = false;
  GemmOpOutput vnni_out_;           // the output stage (Requant8), built at Prepare
  qgemm::PackedB8 vnni_rhs_;        // the current rhs matrix, packed at each invoke (storage reused)
  qgemm::VnniOutput vnni_stage_;
  int vnni_lhs_scratch_ = -1;
  std::unique_ptr<hybrid::PackedWeights> hybrid_packed_;  // hybrid on VNNI: rhs as [n][k] units
  std::vector<uint8_t> hybrid_a_;                         // quantized lhs rows + 128, kp bytes each
  std::vector<float> hybrid_scale_, hybrid_zero_bias_;    // per unit, padded to whole blocks
  std::vector<std::unique_ptr<gemm::PackedB>> packed_rhs_;  // per rhs matrix (kept when constant)
  bool packed_constant_ = false;
  int lhs_transposed_scratch_ = -1;
  bool adj_x_ = false, adj_y_ = false;
  int m_ = 0, n_ = 0, k_ = 0;
  int64_t batches_ = 0;
  std::vector<int64_t> x_batch_offset_, y_batch_offset_;  // matrix index of each output batch
  int32_t multiplier_ = 0;
  int shift_ = 0;
  bool asymmetric_inputs_ = false;
  int quantized_lhs_scratch_ = -1;
  int transposed_lhs_scratch_ = -1;
  std::vector<float> row_scale_;
  std::vector<int32_t> row_zero_point_;
};

Status BatchMatMulKernel::Prepare(rt::KernelContext& ctx) {
  RETURN_IF_ERROR(CheckInputCount(ctx, 2, 2));
  RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
  ASSIGN_OR_RETURN(rt::RtTensor * lhs, RequiredInput(ctx, 0));
  ASSIGN_OR_RETURN(rt::RtTensor * rhs, RequiredInput(ctx, 1));
  const rt::RtTensor* output = ctx.output(0);
  const auto& o = GetOptions<tflite::BatchMatMulOptionsT>(ctx.op());
  adj_x_ = o.adj_x;
  adj_y_ = o.adj_y;
  for (const rt::RtTensor* t : {lhs, rhs})
    if (t->rank() < 2 || t->rank() > 5)
      return ctx.Error((t == lhs ? "lhs " : "rhs ") + Describe(*t) + " must have rank 2 to 5");
  const int lr = lhs->rank(), rr = rhs->rank();
  m_ = adj_x_ ? lhs->dim(lr - 1) : lhs->dim(lr - 2);
  k_ = adj_x_ ? lhs->dim(lr - 2) : lhs->dim(lr - 1);
  const int k_rhs = adj_y_ ? rhs->dim(rr - 1) : rhs->dim(rr - 2);
  n_ = adj_y_ ? rhs->dim(rr - 2) : rhs->dim(rr - 1);
  if (k_ != k_rhs)
    return ctx.Error("lhs " + Describe(*lhs) + (adj_x_ ? " (adj_x)" : "") + " and rhs " + Describe(*rhs) +
                     (adj_y_ ? " (adj_y)" : "") + " have different inner dimensions " + std::to_string(k_) + " and " +
                     std::to_string(k_rhs));
  const rt::Shape lhs_batch(lhs->shape.begin(), lhs->shape.end() - 2);
  const rt::Shape rhs_batch(rhs->shape.begin(), rhs->shape.end() - 2);
  rt::Shape out_batch;
  if (!BroadcastShape(lhs_batch, rhs_batch, &out_batch))
    return ctx.Error("batch dimensions of lhs " + Describe(*lhs) + " and rhs " + Describe(*rhs) + " do not broadcast");
  batches_ = rt::NumElements(out_batch);
  // Matrix index in each input for every output batch.
  x_batch_offset_.assign(batches_, 0);
  y_batch_offset_.assign(batches_, 0);
  const auto xs = BroadcastStrides(lhs_batch, out_batch), ys = BroadcastStrides(rhs_batch, out_batch);
  for (int64_t b = 0; b < batches_; ++b) {
    int64_t rem = b;
    for (int d = static_cast<int>(out_batch.size()) - 1; d >= 0; --d) {
      const int64_t i = rem % out_batch[d];
      rem /= out_batch[d];
      x_batch_offset_[b] += i * xs[d];
      y_batch_offset_[b] += i * ys[d];
    }
  }
  rt::Shape out_shape = out_batch;
  out_shape.push_back(m_);
  out_shape.push_back(n_);

  switch (kind_) {
    case MmKind::kFloat:
      packed_rhs_.clear();
      packed_constant_ = false;
      if (gemm_ && adj_x_)
        lhs_transposed_scratch_ = ctx.RequestScratch(sizeof(float) * static_cast<size_t>(m_) * k_);
      break;
    case MmKind::kHybrid: {
      const int n_axis = adj_y_ ? rr - 2 : rr - 1;
      RETURN_IF_ERROR(RequireWeightQuant(ctx, *rhs, n_, n_axis, /*symmetric=*/true));
      asymmetric_inputs_ = o.asymmetric_quantize_inputs;
      quantized_lhs_scratch_ = ctx.RequestScratch(static_cast<size_t>(lhs->num_elements()));
      if (adj_x_)
        transposed_lhs_scratch_ = ctx.RequestScratch(sizeof(float) * static_cast<size_t>(lhs->num_elements()));
      const int64_t rows = rt::NumElements(lhs_batch) * m_;
      row_scale_.assign(rows, 0.0f);
      row_zero_point_.assign(rows, 0);
      hybrid_packed_.reset();
      if (vnni_ && !adj_x_ && rhs->is_constant() && rhs->data && rt::NumElements(rhs_batch) == 1 && m_ > 0 && n_ > 0 &&
          k_ > 0)
        PrepareHybridVnni(*lhs, *rhs);
      break;
    }
    case MmKind::kInt8:
    case MmKind::kInt16: {
      RETURN_IF_ERROR(RequirePerTensorQuant(ctx, *lhs, "lhs"));
      RETURN_IF_ERROR(RequirePerTensorQuant(ctx, *rhs, "rhs"));
      RETURN_IF_ERROR(RequirePerTensorQuant(ctx, *output, "output"));
      if (kind_ == MmKind::kInt16 && (lhs->zero_point() != 0 || rhs->zero_point() != 0 || output->zero_point() != 0))
        return ctx.Error("int16 lhs, rhs and output must have zero point 0");
      QuantizeMultiplier(LegacyConvMultiplier(lhs->scale(), rhs->scale(), output->scale()), &multiplier_, &shift_);
      use_vnni_ = false;
      if (kind_ == MmKind::kInt8 && vnni_ && m_ > 0 && n_ > 0 && k_ > 0) RETURN_IF_ERROR(PrepareVnni(ctx));
      break;
    }
  }
  return ctx.SetOutputShape(0, std::move(out_shape));
}

void BatchMatMulKernel::PrepareHybridVnni(const rt::RtTensor& lhs, const rt::RtTensor& rhs) {
  // The one rhs matrix as units [n][k]: as stored with adj_y, else transposed.
  const int8_t* w = rhs.data_as<int8_t>();
  std::vector<int8_t> nk;
  if (!adj_y_) {
    nk.resize(static_cast<size_t>(n_) * k_);
    TransposeMatrix(w, k_, n_, nk.data());
    w = nk.data();
  }
  hybrid_packed_ = std::make_unique<hybrid::PackedWeights>(hybrid::PackedWeights::FromNK(w, n_, k_));
  const size_t padded = static_cast<size_t>(hybrid_packed_->blocks()) * hybrid::kUnits;
  hybrid_a_.assign(static_cast<size_t>(lhs.num_elements() / k_) * hybrid_packed_->kp, 0);
  hybrid_scale_.assign(row_scale_.size() * padded, 0.0f);
  hybrid_zero_bias_.assign(padded, 0.0f);
}

void BatchMatMulKernel::InvokeHybridVnni(rt::KernelContext& ctx) {
  const hybrid::PackedWeights& p = *hybrid_packed_;
  const rt::RtTensor& w = *ctx.input(1);
  const int64_t rows = static_cast<int64_t>(row_scale_.size());
  int8_t* q = ctx.Scratch<int8_t>(quantized_lhs_scratch_);
  QuantizeRowsAvx512(ctx.input(0)->data_as<float>(), rows, k_, asymmetric_inputs_, q, row_scale_.data(),
                     row_zero_point_.data());
  const size_t padded = static_cast<size_t>(p.blocks()) * hybrid::kUnits;
  const bool per_channel = w.per_channel();
  for (int64_t r = 0; r < rows; ++r) {
    for (int k = 0; k < k_; ++k) hybrid_a_[r * p.kp + k] = static_cast<uint8_t>(q[r * k_ + k]) ^ 0x80;
    for (int n = 0; n < n_; ++n)  // as the reference: the row scale times the unit's weight scale
      hybrid_scale_[r * padded + n] = per_channel ? row_scale_[r] * w.quant->scale[n] : row_scale_[r] * w.quant->scale[0];
  }
  // Output row r of every batch is lhs row r (one rhs matrix): out + r * n.
  float* out = ctx.output(0)->data_as<float>();
  const float inf = std::numeric_limits<float>::infinity();
  ctx.threads().ParallelFor(rows, 4, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const hybrid::OutputStage os{hybrid_scale_.data() + r * padded, hybrid_zero_bias_.data(), row_zero_point_[r], -inf,
                                   inf};
      hybrid::DotVnniFloat(p, hybrid_a_.data() + r * p.kp, p.kp, 1, 0, p.blocks(), os, out + r * n_, n_);
    }
  });
}

Status BatchMatMulKernel::PrepareVnni(rt::KernelContext& ctx) {
  // Any rhs values: |w - zero point| <= 255 bounds the accumulators.
  const std::vector<int64_t> abs_sum(static_cast<size_t>(n_), int64_t{255} * k_);
  GemmOpSpec spec;
  spec.kind = QuantKind::kInt8;
  spec.N = n_;
  spec.K = k_;
  spec.abs_sum = &abs_sum;
  spec.per_channel_multipliers = false;
  ASSIGN_OR_RETURN(const bool supported, PrepareGemmOutput(ctx, spec, &vnni_out_));
  if (!supported) return Status::Ok();
  // Storage and scratch sized for these shapes: a packing of zeros has the packed sizes of any
  // rhs (PackedB8's layout depends on N and K only, the split form's extra groups aside, which
  // the GEMM's scratch does not depend on).
  const std::vector<int8_t> zeros(static_cast<size_t>(n_) * k_, 0);
  qgemm::PackWeightsVnni(zeros.data(), n_, k_, {ctx.input(1)->zero_point()}, &vnni_rhs_);
  RETURN_IF_ERROR(ctx.ReserveSlotScratch(qgemm::GemmVnniSlotBytes(vnni_rhs_, m_, ctx.threads().num_threads())));
  vnni_lhs_scratch_ = adj_x_ ? ctx.RequestScratch(static_cast<size_t>(m_) * k_) : -1;
  use_vnni_ = true;
  return Status::Ok();
}

void BatchMatMulKernel::InvokeVnni(rt::KernelContext& ctx) {
  const rt::RtTensor* lhs = ctx.input(0);
  const rt::RtTensor* rhs = ctx.input(1);
  const int8_t* x = lhs->data_as<int8_t>();
  const int8_t* y = rhs->data_as<int8_t>();
  auto* out = static_cast<uint8_t*>(ctx.output(0)->data);
  const int32_t z_u = lhs->zero_point() + 128;
  const int64_t per_batch = int64_t{m_} * n_;
  int64_t packed_index = -1;  // the rhs matrix vnni_rhs_ holds
  for (int64_t b = 0; b < batches_; ++b) {
    if (y_batch_offset_[b] != packed_index) {
      // The rhs matrix ([n][k] with adj_y, else [k][n]) packed with its zero point, and its
      // output stage.
      qgemm::PackRhsVnni(y + y_batch_offset_[b] * k_ * n_, !adj_y_, n_, k_, rhs->zero_point(), &vnni_rhs_);
      qgemm::BuildVnniOutput(vnni_rhs_, vnni_out_.q8, z_u, &vnni_stage_);
      packed_index = y_batch_offset_[b];
    }
    const int8_t* xb = x + x_batch_offset_[b] * m_ * k_;
    if (adj_x_) {  // lhs matrix [k, m]: rows of A must be contiguous
      int8_t* t = ctx.Scratch<int8_t>(vnni_lhs_scratch_);
      TransposeMatrix(xb, k_, m_, t);
      xb = t;
    }
    const qgemm::ContiguousRowsPacker8 pack(xb, k_, 0x80);
    qgemm::RunGemmVnni(ctx.threads(), m_, vnni_rhs_, pack, vnni_stage_, out + b * per_batch, n_);
  }
}

Status BatchMatMulKernel::Invoke(rt::KernelContext& ctx) {
  const rt::RtTensor* lhs = ctx.input(0);
  const rt::RtTensor* rhs = ctx.input(1);
  rt::RtTensor* output = ctx.output(0);
  if (output->num_elements() == 0) return Status::Ok();
  const int k_depth = k_;
  switch (kind_) {
    case MmKind::kFloat: {
      if (gemm_) {
        InvokeGemm(ctx);
        return Status::Ok();
      }
      const float* x = lhs->data_as<float>();
      const float* y = rhs->data_as<float>();
      float* out = output->data_as<float>();
      ForEachOutput(ctx, [&](int64_t i, int64_t xb, int64_t yb, int m, int n) {
        float acc = 0;
        for (int k = 0; k < k_depth; ++k) acc += x[XOffset(xb, m, k)] * y[YOffset(yb, k, n)];
        out[i] = acc;
      });
      return Status::Ok();
    }
    case MmKind::kInt8: {
      if (use_vnni_) {
        InvokeVnni(ctx);
        return Status::Ok();
      }
      const int32_t x_off = -lhs->zero_point(), y_off = -rhs->zero_point(), out_off = output->zero_point();
      const int8_t* x = lhs->data_as<int8_t>();
      const int8_t* y = rhs->data_as<int8_t>();
      int8_t* out = output->data_as<int8_t>();
      ForEachOutput(ctx, [&](int64_t i, int64_t xb, int64_t yb, int m, int n) {
        int64_t acc = 0;
        for (int k = 0; k < k_depth; ++k)
          acc += (int64_t{x[XOffset(xb, m, k)]} + x_off) * (int64_t{y[YOffset(yb, k, n)]} + y_off);
        const int32_t v = MultiplyByQuantizedMultiplierRuy(WrapToInt32(acc), multiplier_, shift_);
        out[i] = static_cast<int8_t>(std::clamp(v + out_off, -128, 127));
      });
      return Status::Ok();
    }
    case MmKind::kInt16: {
      const int16_t* x = lhs->data_as<int16_t>();
      const int16_t* y = rhs->data_as<int16_t>();
      int16_t* out = output->data_as<int16_t>();
      ForEachOutput(ctx, [&](int64_t i, int64_t xb, int64_t yb, int m, int n) {
        int64_t acc = 0;
        for (int k = 0; k < k_depth; ++k) acc += int64_t{x[XOffset(xb, m, k)]} * y[YOffset(yb, k, n)];
        const int32_t v = MultiplyByQuantizedMultiplier(acc, multiplier_, shift_);
        out[i] = static_cast<int16_t>(std::clamp(v, -32768, 32767));
      });
      return Status::Ok();
    }
    case MmKind::kHybrid: {
      if (hybrid_packed_) {
        InvokeHybridVnni(ctx);
        return Status::Ok();
      }
      // Quantize every lhs row (the k-vector of one output row) on its own.
      int8_t* q = ctx.Scratch<int8_t>(quantized_lhs_scratch_);
      const float* x = lhs->data_as<float>();
      const int64_t rows = static_cast<int64_t>(row_scale_.size());
      if (adj_x_) {
        // lhs matrices are [k, m]: lay the rows out contiguously first.
        float* t = ctx.Scratch<float>(transposed_lhs_scratch_);
        const int64_t matrices = rows / m_;
        for (int64_t mat = 0; mat < matrices; ++mat)
          TransposeMatrix(x + mat * k_depth * m_, k_depth, m_, t + mat * m_ * k_depth);
        x = t;
      }
      QuantizeRows(x, rows, k_depth, asymmetric_inputs_, q, row_scale_.data(), row_zero_point_.data());
      const int8_t* y = rhs->data_as<int8_t>();
      const rt::RtTensor& w = *rhs;
      const bool per_channel = w.per_channel();
      float* out = output->data_as<float>();
      ForEachOutput(ctx, [&](int64_t i, int64_t xb, int64_t yb, int m, int n) {
        const int64_t row = xb / k_depth + m;  // xb is the lhs matrix's first element
        const int64_t zp = row_zero_point_[row];
        const int8_t* qx = q + row * k_depth;
        int64_t acc = 0;
        for (int k = 0; k < k_depth; ++k) acc += (int64_t{qx[k]} - zp) * y[YOffset(yb, k, n)];
        const float scale = per_channel ? row_scale_[row] * w.quant->scale[n] : row_scale_[row] * w.quant->scale[0];
        out[i] = scale * static_cast<float>(WrapToInt32(acc));
      });
      return Status::Ok();
    }
  }
  return Status::Ok();
}

void BatchMatMulKernel::InvokeGemm(rt::KernelContext& ctx) {
  const rt::RtTensor* lhs = ctx.input(0);
  const rt::RtTensor* rhs = ctx.input(1);
  const float* x = lhs->data_as<float>();
  const float* y = rhs->data_as<float>();
  float* out = ctx.output(0)->data_as<float>();
  if (k_ == 0) {  // empty sums
    std::fill(out, out + ctx.output(0)->num_elements(), 0.0f);
    return;
  }
  const int64_t rhs_matrices = rhs->num_elements() / (int64_t{k_} * n_);
  // Pack the rhs matrices: once for constants, at every invoke otherwise.
  if (!packed_constant_) {
    packed_rhs_.resize(rhs_matrices);
    for (int64_t i = 0; i < rhs_matrices; ++i) {
      const float* yi = y + i * k_ * n_;
      packed_rhs_[i] = std::make_unique<gemm::PackedB>(adj_y_ ? gemm::PackedB::FromNK(yi, nullptr, n_, k_)
                                                              : gemm::PackedB::FromKN(yi, nullptr, n_, k_));
    }
    packed_constant_ = rhs->is_constant();
  }
  const float inf = std::numeric_limits<float>::infinity();
  const gemm::MinMax no_clamp{-inf, inf};
  const int64_t per_batch = int64_t{m_} * n_;
  float* transposed = adj_x_ ? ctx.Scratch<float>(lhs_transposed_scratch_) : nullptr;
  for (int64_t b = 0; b < batches_; ++b) {
    const float* xb = x + x_batch_offset_[b] * m_ * k_;
    if (adj_x_) {  // lhs matrix [k, m]: rows of A must be contiguous
      TransposeMatrix(xb, k_, m_, transposed);
      xb = transposed;
    }
    gemm::Gemm(*gemm_, &ctx.threads(), m_, xb, k_, *packed_rhs_[y_batch_offset_[b]], out + b * per_batch, n_,
               no_clamp);
  }
}

Expected<std::unique_ptr<rt::OpKernel>> CreateBatchMatMul(const rt::KernelCreateContext& cc) {
  const Tensor* lhs = cc.input(0);
  const Tensor* rhs = cc.input(1);
  const Tensor* out = cc.output(0);
  if (!lhs || !rhs || !out) return cc.Error("needs lhs, rhs and output tensors");
  auto unsupported = [&]() -> Expected<std::unique_ptr<rt::OpKernel>> {
    return cc.Error(DescribeTypes(cc, {{"lhs", 0}, {"rhs", 1}, {"output", -1}}) + " is not supported");
  };
  MmKind kind;
  if (lhs->type == DType::kFloat32 && rhs->type == DType::kFloat32) {
    kind = MmKind::kFloat;
  } else if (lhs->type == DType::kFloat32 && rhs->type == DType::kInt8) {
    kind = MmKind::kHybrid;
  } else if (lhs->type == DType::kInt8 && rhs->type == DType::kInt8) {
    kind = MmKind::kInt8;
  } else if (lhs->type == DType::kInt16 && rhs->type == DType::kInt16) {
    kind = MmKind::kInt16;
  } else {
    return unsupported();
  }
  const DType out_type = kind == MmKind::kHybrid ? DType::kFloat32 : lhs->type;
  if (out->type != out_type) return unsupported();
  const gemm::Ukernels* fast = nullptr;
  if (kind == MmKind::kFloat && !cc.reference_only && cc.cpu.has_avx2_fma()) {
    const auto& rs = rhs->shape;
    const bool adj_y = GetOptions<tflite::BatchMatMulOptionsT>(cc.op).adj_y;
    const int64_t k = rs.size() >= 2 ? rs[rs.size() - (adj_y ? 1 : 2)] : -1;
    const int64_t n = rs.size() >= 2 ? rs[rs.size() - (adj_y ? 2 : 1)] : -1;
    fast = &gemm::SelectDirectUkernels(cc.cpu, k, n);  // Gemm only
  }
  const bool vnni = (kind == MmKind::kInt8 || kind == MmKind::kHybrid) && !cc.reference_only && cc.cpu.has_avx512_vnni();
  return std::unique_ptr<rt::OpKernel>(new BatchMatMulKernel(kind, fast, vnni));
}

}  // namespace

void RegisterMatMulKernels(rt::OpRegistry& r) { r.Add(tflite::BuiltinOperator_BATCH_MATMUL, CreateBatchMatMul); }

}  // namespace edgeopt::kernels
