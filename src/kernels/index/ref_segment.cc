// SEGMENT_SUM and UNSORTED_SEGMENT_SUM / MAX / MIN / PROD over the leading dimension(s) of
// float32 or int32 data, segment ids int32.
//
// SEGMENT_SUM(data, ids [data.shape[0]]): ids start at 0 and rise by 0 or 1 at each step
// (TFLite's rule; anything else is an error); output [last id + 1, data.shape[1:]], rows summed
// in order.
// UNSORTED_SEGMENT_*(data, ids, num_segments): ids' shape is a prefix of data's (rank 1 in the
// 2.9-era kernel); num_segments an int32 scalar or [1]; output [num_segments,
// data.shape[ids.rank:]]. Every id must be < num_segments (TFLite's check); negative ids are
// skipped. Segments no id names hold the identity: 0 (sum), 1 (prod), the type's lowest value
// (max: -FLT_MAX, not -inf) and largest value (min). max/min combine as std::max(acc, x) /
// std::min(acc, x), so a NaN stays only where it came first. int32 sums and products wrap.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kernels/common/planned_kernel.h"
#include "kernels/index/index.h"

namespace edgeopt::kernels::index_ops {
namespace {

enum class Reduce { kSum, kMax, kMin, kProd };

template <typename T>
T Identity(Reduce r) {
  switch (r) {
    case Reduce::kSum: return T(0);
    case Reduce::kProd: return T(1);
    case Reduce::kMax: return std::numeric_limits<T>::lowest();
    default: return std::numeric_limits<T>::max();
  }
}

// int32 sums and products wrap (two's complement) instead of overflowing.
inline int32_t Add(int32_t a, int32_t b) { return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b)); }
inline int32_t Mul(int32_t a, int32_t b) { return static_cast<int32_t>(static_cast<uint32_t>(a) * static_cast<uint32_t>(b)); }
inline float Add(float a, float b) { return a + b; }
inline float Mul(float a, float b) { return a * b; }

template <Reduce R, typename T>
void Accumulate(T* acc, const T* x, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    if constexpr (R == Reduce::kSum) acc[j] = Add(acc[j], x[j]);
    else if constexpr (R == Reduce::kProd) acc[j] = Mul(acc[j], x[j]);
    else if constexpr (R == Reduce::kMax) acc[j] = acc[j] < x[j] ? x[j] : acc[j];
    else acc[j] = x[j] < acc[j] ? x[j] : acc[j];
  }
}

template <Reduce R, typename T>
void SegmentReduce(const T* data, const int32_t* ids, int64_t n_ids, int64_t inner, T* out, int64_t n_out) {
  std::fill(out, out + n_out * inner, Identity<T>(R));
  for (int64_t i = 0; i < n_ids; ++i) {
    if (ids[i] < 0) continue;
    Accumulate<R>(out + static_cast<int64_t>(ids[i]) * inner, data + i * inner, inner);
  }
}

template <typename T>
void SegmentReduceOf(Reduce r, const T* data, const int32_t* ids, int64_t n_ids, int64_t inner, T* out, int64_t n_out) {
  switch (r) {
    case Reduce::kSum: SegmentReduce<Reduce::kSum>(data, ids, n_ids, inner, out, n_out); break;
    case Reduce::kMax: SegmentReduce<Reduce::kMax>(data, ids, n_ids, inner, out, n_out); break;
    case Reduce::kMin: SegmentReduce<Reduce::kMin>(data, ids, n_ids, inner, out, n_out); break;
    default: SegmentReduce<Reduce::kProd>(data, ids, n_ids, inner, out, n_out); break;
  }
}

const char* VariantName(bool sorted, Reduce r) {
  if (sorted) return "segment_sum/any/ref";
  switch (r) {
    case Reduce::kSum: return "unsorted_segment_sum/any/ref";
    case Reduce::kMax: return "unsorted_segment_max/any/ref";
    case Reduce::kMin: return "unsorted_segment_min/any/ref";
    default: return "unsorted_segment_prod/any/ref";
  }
}

class SegmentKernel : public PlannedKernel {
 public:
  // sorted: SEGMENT_SUM (2 inputs); else UNSORTED_SEGMENT_* (3 inputs, num_segments).
  SegmentKernel(bool sorted, Reduce r)
      : PlannedKernel(VariantName(sorted, r), sorted ? std::vector<int>{1} : std::vector<int>{1, 2}),
        sorted_(sorted),
        reduce_(r) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    const int n_in = sorted_ ? 2 : 3;
    RETURN_IF_ERROR(CheckIo(ctx, n_in, n_in, 1));
    const rt::RtTensor& data = *ctx.input(0);
    const rt::RtTensor& ids = *ctx.input(1);
    if (data.type != DType::kFloat32 && data.type != DType::kInt32)
      return ctx.UnsupportedError("data " + Describe(data) + ": type " + TypeName(data.type) +
                                  " is not supported (float32 or int32)");
    RETURN_IF_ERROR(CheckSameType(ctx, 0, 0));
    if (ids.type != DType::kInt32) return ctx.UnsupportedError("segment ids " + Describe(ids) + " must be int32");
    if (sorted_ && ids.rank() != 1) return ctx.Error("segment ids " + Describe(ids) + " must have rank 1");
    if (ids.rank() < 1 || ids.rank() > data.rank())
      return ctx.Error("segment ids " + Describe(ids) + " must have rank 1.." + std::to_string(data.rank()) +
                       " (at most data's rank)");
    for (int d = 0; d < ids.rank(); ++d)
      if (ids.shape[d] != data.shape[d])
        return ctx.Error("segment ids " + Describe(ids) + " must match the leading dimensions of data " + Describe(data));
    if (!sorted_) {
      const rt::RtTensor& ns = *ctx.input(2);
      if (ns.type != DType::kInt32) return ctx.Error("num_segments " + Describe(ns) + " must be int32");
      if (!(ns.rank() == 0 || (ns.rank() == 1 && ns.shape[0] == 1)))
        return ctx.Error("num_segments " + Describe(ns) + " must be a scalar or have shape [1]");
    }
    return Status::Ok();
  }

  Status Plan(rt::KernelContext& ctx) override {
    const rt::RtTensor& data = *ctx.input(0);
    const rt::RtTensor& ids = *ctx.input(1);
    const int32_t* id = ids.data_as<int32_t>();
    const int64_t n = ids.num_elements();
    int64_t segments = 0;
    if (sorted_) {
      for (int64_t i = 0; i < n; ++i) {
        const int64_t expect_lo = i == 0 ? 0 : id[i - 1];
        const int64_t expect_hi = i == 0 ? 0 : static_cast<int64_t>(id[i - 1]) + 1;
        if (id[i] < expect_lo || id[i] > expect_hi)
          return ctx.Error("segment ids must start at 0 and rise by 0 or 1 at each step; ids[" + std::to_string(i) +
                           "] = " + std::to_string(id[i]) + (i ? " follows " + std::to_string(id[i - 1]) : std::string()));
      }
      segments = n == 0 ? 0 : static_cast<int64_t>(id[n - 1]) + 1;
    } else {
      segments = ctx.input(2)->data_as<int32_t>()[0];
      if (segments < 0) return ctx.Error("num_segments " + std::to_string(segments) + " is negative");
      for (int64_t i = 0; i < n; ++i)
        if (id[i] >= segments)
          return ctx.Error("segment ids[" + std::to_string(i) + "] = " + std::to_string(id[i]) +
                           " is not below num_segments " + std::to_string(segments));
    }
    segments_ = segments;
    std::vector<int64_t> dims = {segments};
    for (int d = ids.rank(); d < data.rank(); ++d) dims.push_back(data.shape[d]);
    rt::Shape shape;
    RETURN_IF_ERROR(CheckShapeFits(ctx, dims, "output shape", &shape));
    return ctx.SetOutputShape(0, std::move(shape));
  }

  Status Run(rt::KernelContext& ctx) override {
    const rt::RtTensor& data = *ctx.input(0);
    const rt::RtTensor& ids = *ctx.input(1);
    rt::RtTensor& out = *ctx.output(0);
    int64_t inner = 1;
    for (int d = ids.rank(); d < data.rank(); ++d) inner *= data.shape[d];
    const int64_t n = ids.num_elements();
    const int32_t* id = ids.data_as<int32_t>();
    if (data.type == DType::kFloat32)
      SegmentReduceOf(reduce_, data.data_as<float>(), id, n, inner, out.data_as<float>(), segments_);
    else
      SegmentReduceOf(reduce_, data.data_as<int32_t>(), id, n, inner, out.data_as<int32_t>(), segments_);
    return Status::Ok();
  }

 private:
  bool sorted_;
  Reduce reduce_;
  int64_t segments_ = 0;
};

}  // namespace

void RegisterSegment(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_SEGMENT_SUM, MakeKernelFactory<SegmentKernel>(true, Reduce::kSum));
  r.Add(tflite::BuiltinOperator_UNSORTED_SEGMENT_SUM, MakeKernelFactory<SegmentKernel>(false, Reduce::kSum));
  r.Add(tflite::BuiltinOperator_UNSORTED_SEGMENT_MAX, MakeKernelFactory<SegmentKernel>(false, Reduce::kMax));
  r.Add(tflite::BuiltinOperator_UNSORTED_SEGMENT_MIN, MakeKernelFactory<SegmentKernel>(false, Reduce::kMin));
  r.Add(tflite::BuiltinOperator_UNSORTED_SEGMENT_PROD, MakeKernelFactory<SegmentKernel>(false, Reduce::kProd));
}

}  // namespace edgeopt::kernels::index_ops
