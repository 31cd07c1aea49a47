// TRANSPOSE: out[i_0..i_{r-1}] = in[...] with out dim k = in dim perm[k]. Any rank, any
// fixed-size type (copied by element size). perm must be a permutation of [0, rank).
// Outside the reference mode, on AVX-512 CPUs, 1-, 2- and 4-byte elements whose output's last
// axis is not the input's (e.g. NCHW -> NHWC, swapping the last two axes, int8 attention heads)
// run as 2-D transposes of 16x16 tiles (transpose_avx512.cc): the output's last axis i against
// the output axis j holding the input's last axis, for every index of the other axes (variant
// transpose/any/avx512).
#include <array>

#include "kernels/common/planned_kernel.h"
#include "kernels/common/index_copy.h"
#include "kernels/transform/transform.h"

namespace edgeopt::kernels::transform {
namespace {

class TransposeKernel : public PlannedKernel {
 public:
  explicit TransposeKernel(bool fast) : PlannedKernel("transpose/any/ref", {1}), fast_(fast) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 2, 2, 1));
    RETURN_IF_ERROR(CheckCopyableType(ctx, *ctx.input(0), "input"));
    RETURN_IF_ERROR(CheckSameType(ctx, 0, 0));
    const rt::RtTensor& perm = *ctx.input(1);
    if (perm.rank() != 1) return ctx.Error("perm must be 1-D, has shape " + rt::ShapeToString(perm.shape));
    if (perm.dim(0) != ctx.input(0)->rank())
      return ctx.Error("perm has " + std::to_string(perm.dim(0)) + " entries for an input of rank " +
                       std::to_string(ctx.input(0)->rank()));
    return Status::Ok();
  }

  Status Plan(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    std::vector<int64_t> perm;
    RETURN_IF_ERROR(ReadIndexValues(ctx, *ctx.input(1), "perm", &perm));
    const int rank = in.rank();
    std::vector<char> seen(rank, 0);
    for (int64_t p : perm) {
      if (p < 0 || p >= rank || seen[p])
        return ctx.Error("perm " + ValuesToString(perm) + " is not a permutation of [0, " + std::to_string(rank) + ")");
      seen[p] = 1;
    }
    const auto strides = RowMajorStrides(in.shape);
    rt::Shape out_shape(rank);
    tables_.assign(rank, {});
    for (int k = 0; k < rank; ++k) {
      out_shape[k] = in.shape[perm[k]];
      tables_[k] = AffineTable(out_shape[k], 0, strides[perm[k]]);
    }
    out_shape_ = out_shape;
    PlanTiles(in, perm, strides);
    set_variant(tiles_ ? "transpose/any/avx512" : "transpose/any/ref");
    return ctx.SetOutputShape(0, std::move(out_shape));
  }

  Status Run(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    if (tiles_) {
      const void* src = in.data;
      void* out = ctx.output(0)->data;
      switch (ElementBytes(in.type)) {
        case 1: RunTiles(static_cast<const uint8_t*>(src), static_cast<uint8_t*>(out), Transpose2D8Avx512); break;
        case 2: RunTiles(static_cast<const uint16_t*>(src), static_cast<uint16_t*>(out), Transpose2D16Avx512); break;
        default: RunTiles(static_cast<const uint32_t*>(src), static_cast<uint32_t*>(out), Transpose2D32Avx512); break;
      }
      return Status::Ok();
    }
    CopyByAxisTables(ElementBytes(in.type), out_shape_, tables_, in.data, ctx.output(0)->data);
    return Status::Ok();
  }

 private:
  // The tile form: output axis i = rank - 1 (input stride s_i != 1) and output axis j holding
  // the input's last axis (input stride 1, output stride o_j); the other output axes are walked
  // with their input and output strides.
  void PlanTiles(const rt::RtTensor& in, const std::vector<int64_t>& perm, const std::vector<int64_t>& in_strides) {
    tiles_ = false;
    const int rank = in.rank();
    const int bytes = ElementBytes(in.type);
    if (!fast_ || (bytes != 1 && bytes != 2 && bytes != 4) || rank < 2 || rank > kMaxTileRank || rt::NumElements(in.shape) == 0) return;
    if (perm[rank - 1] == rank - 1) return;  // rows stay contiguous: the copy moves whole rows
    int j = 0;
    while (perm[j] != rank - 1) ++j;
    const auto out_strides = RowMajorStrides(out_shape_);
    rows_ = out_shape_[rank - 1];
    cols_ = out_shape_[j];
    a_stride_ = in_strides[perm[rank - 1]];
    b_stride_ = out_strides[j];
    if (rows_ < 4 || cols_ < 4) return;  // thin tiles: the element copy is as fast
    outer_.clear();
    for (int k = 0; k < rank - 1; ++k)
      if (k != j) outer_.push_back({out_shape_[k], in_strides[perm[k]], out_strides[k]});
    tiles_ = true;
  }

  template <typename T>
  void RunTiles(const T* in, T* out, void (*transpose)(const T*, int64_t, T*, int64_t, int64_t, int64_t)) const {
    const int n = static_cast<int>(outer_.size());
    std::array<int64_t, kMaxTileRank> idx{};
    int64_t in_base = 0, out_base = 0;
    while (true) {
      transpose(in + in_base, a_stride_, out + out_base, b_stride_, rows_, cols_);
      int d = n - 1;
      for (; d >= 0; --d) {
        in_base += outer_[d].in_stride;
        out_base += outer_[d].out_stride;
        if (++idx[d] < outer_[d].size) break;
        in_base -= outer_[d].in_stride * outer_[d].size;
        out_base -= outer_[d].out_stride * outer_[d].size;
        idx[d] = 0;
      }
      if (d < 0) return;
    }
  }

  struct Axis {
    int64_t size, in_stride, out_stride;
  };
  static constexpr int kMaxTileRank = 16;
  bool fast_ = false;
  bool tiles_ = false;
  int64_t rows_ = 0, cols_ = 0, a_stride_ = 0, b_stride_ = 0;
  std::vector<Axis> outer_;
  rt::Shape out_shape_;
  AxisTables tables_;
};

}  // namespace

void RegisterTranspose(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_TRANSPOSE, [](const rt::KernelCreateContext& cc) -> Expected<std::unique_ptr<rt::OpKernel>> {
    return std::unique_ptr<rt::OpKernel>(new TransposeKernel(!cc.reference_only && cc.cpu.has_avx512()));
  });
}

}  // namespace edgeopt::kernels::transform
