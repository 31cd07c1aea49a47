// REVERSE_SEQUENCE(input, seq_lengths): for every batch entry b (along batch_dim) the first
// seq_lengths[b] positions along seq_dim are reversed; the rest are copied. As TFLite, a length
// of 0 or 1 (or a negative one) leaves the entry unchanged; a length beyond the seq dimension
// is an error (TFLite checks only the first length and would read out of bounds for the
// others). Raw element copies: TFLite's types (float32, uint8, int16, int32, int64) and the
// other fixed-size types (int8, bool, ...), quantized bytes kept.
#include <algorithm>
#include <cstring>

#include "kernels/common/planned_kernel.h"
#include "kernels/sequence/sequence.h"

namespace edgeopt::kernels::sequence {
namespace {

class ReverseSequenceKernel : public PlannedKernel {
 public:
  ReverseSequenceKernel() : PlannedKernel("reverse_sequence/any/ref", {}) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 2, 2, 1));
    const rt::RtTensor& in = *ctx.input(0);
    const rt::RtTensor& lengths = *ctx.input(1);
    RETURN_IF_ERROR(CheckCopyableType(ctx, in, "input"));
    RETURN_IF_ERROR(CheckSameType(ctx, 0, 0));
    if (lengths.type != DType::kInt32 && lengths.type != DType::kInt64)
      return ctx.Error("seq_lengths " + Describe(lengths) + " must be int32 or int64");
    const auto& o = GetOptions<tflite::ReverseSequenceOptionsT>(ctx.op());
    const int rank = in.rank();
    if (o.seq_dim < 0 || o.seq_dim >= rank)
      return ctx.Error("seq_dim " + std::to_string(o.seq_dim) + " is out of range for input " + Describe(in));
    if (o.batch_dim < 0 || o.batch_dim >= rank)
      return ctx.Error("batch_dim " + std::to_string(o.batch_dim) + " is out of range for input " + Describe(in));
    if (o.seq_dim == o.batch_dim)
      return ctx.Error("seq_dim and batch_dim are both " + std::to_string(o.seq_dim));
    if (lengths.rank() != 1 || lengths.shape[0] != in.shape[o.batch_dim])
      return ctx.Error("seq_lengths " + Describe(lengths) + " must be a vector of " +
                       std::to_string(in.shape[o.batch_dim]) + " values (input dimension batch_dim " +
                       std::to_string(o.batch_dim) + ")");
    seq_dim_ = o.seq_dim;
    batch_dim_ = o.batch_dim;
    return Status::Ok();
  }
  Status Plan(rt::KernelContext& ctx) override {
    if (ValuesKnown(ctx, *ctx.input(1))) RETURN_IF_ERROR(CheckLengths(ctx));  // constant: at prepare
    return ctx.SetOutputShape(0, ctx.input(0)->shape);
  }
  Status Run(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckLengths(ctx));
    const rt::RtTensor& in = *ctx.input(0);
    const rt::RtTensor& lengths = *ctx.input(1);
    rt::RtTensor& out = *ctx.output(0);
    if (in.num_elements() == 0) return Status::Ok();
    const size_t es = ElementBytes(in.type);
    // The input as [pre, d1, mid, d2, post] with d1, d2 the seq and batch dimensions in order.
    const int lo = std::min(seq_dim_, batch_dim_), hi = std::max(seq_dim_, batch_dim_);
    int64_t pre = 1, mid = 1, post = 1;
    for (int d = 0; d < lo; ++d) pre *= in.shape[d];
    for (int d = lo + 1; d < hi; ++d) mid *= in.shape[d];
    for (int d = hi + 1; d < in.rank(); ++d) post *= in.shape[d];
    const int64_t n1 = in.shape[lo], n2 = in.shape[hi];
    const size_t block = static_cast<size_t>(post) * es;
    const bool seq_first = seq_dim_ < batch_dim_;
    for (int64_t p = 0; p < pre; ++p)
      for (int64_t i1 = 0; i1 < n1; ++i1)
        for (int64_t m = 0; m < mid; ++m)
          for (int64_t i2 = 0; i2 < n2; ++i2) {
            const int64_t s = seq_first ? i1 : i2;
            const int64_t b = seq_first ? i2 : i1;
            const int64_t len = IndexAt(lengths, b);
            const int64_t src_s = s < len ? len - 1 - s : s;
            const int64_t j1 = seq_first ? src_s : i1;
            const int64_t j2 = seq_first ? i2 : src_s;
            const int64_t dst = (((p * n1 + i1) * mid + m) * n2 + i2);
            const int64_t src = (((p * n1 + j1) * mid + m) * n2 + j2);
            std::memcpy(out.data + static_cast<size_t>(dst) * block, in.data + static_cast<size_t>(src) * block, block);
          }
    return Status::Ok();
  }

 private:
  Status CheckLengths(rt::KernelContext& ctx) const {
    const rt::RtTensor& lengths = *ctx.input(1);
    const int64_t limit = ctx.input(0)->shape[seq_dim_];
    for (int64_t b = 0; b < lengths.num_elements(); ++b)
      if (IndexAt(lengths, b) > limit)
        return ctx.Error("seq_lengths[" + std::to_string(b) + "] = " + std::to_string(IndexAt(lengths, b)) +
                         " exceeds the input's seq dimension " + std::to_string(seq_dim_) + " of size " +
                         std::to_string(limit));
    return Status::Ok();
  }

  int seq_dim_ = 0;
  int batch_dim_ = 0;
};

}  // namespace

void RegisterReverseSequence(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_REVERSE_SEQUENCE, MakeKernelFactory<ReverseSequenceKernel>());
}

}  // namespace edgeopt::kernels::sequence
