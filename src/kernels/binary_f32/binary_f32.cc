// ADD, SUB, MUL, DIV (float32) with numpy broadcasting and a fused clamp activation;
// SQUARED_DIFFERENCE, MAXIMUM, MINIMUM the same way without one (binary_f32.h).
//
// At prepare the operands' shapes are reduced to the fewest dimensions that describe the
// broadcast (size-1 output dimensions dropped, neighbouring dimensions that broadcast alike
// merged): same shapes become one run, a scalar operand a run with a fixed value; a per-channel
// operand ([C] against [N,H,W,C]) of short rows is repeated into scratch so that groups of rows
// run at once, and an outer sum / product ([R, 1] against [C]) spreads its row values per group.
#include "kernels/binary_f32/binary_f32.h"

#include <algorithm>

#include "kernels/common/broadcast.h"
#include "kernels/common/kernel_util.h"
#include "kernels/gemm/f32_op_util.h"
#include "kernels/gemm/ops_f32.h"
#include "kernels/gemm/parallel.h"

namespace edgeopt::kernels {
namespace binary {

void RunScalar(Op op, const float* a, bool a_scalar, const float* b, bool b_scalar, float* out, size_t n,
               gemm::MinMax mm) {
  for (size_t i = 0; i < n; ++i) {
    const float x = a[a_scalar ? 0 : i], y = b[b_scalar ? 0 : i];
    float r;
    switch (op) {
      case Op::kAdd: r = x + y; break;
      case Op::kSub: r = x - y; break;
      case Op::kMul: r = x * y; break;
      case Op::kDiv: r = x / y; break;
      case Op::kSquaredDifference: r = (x - y) * (x - y); break;
      case Op::kMaximum: r = x > y ? x : y; break;
      default: r = x < y ? x : y; break;
    }
    out[i] = std::min(std::max(r, mm.min), mm.max);
  }
}

}  // namespace binary

namespace {

using gemm::MinMax;

constexpr size_t kMaxDims = 16;

class BinaryF32 : public rt::OpKernel {
 public:
  enum class Isa { kScalar, kAvx2, kAvx512 };
  BinaryF32(binary::Op op, Isa isa, MinMax mm) : op_(op), isa_(isa), mm_(mm) {}

  Status Prepare(rt::KernelContext& ctx) override {
    const rt::RtTensor* a = ctx.input(0);
    const rt::RtTensor* b = ctx.input(1);
    rt::Shape out;
    if (!BroadcastShape(a->shape, b->shape, &out))
      return ctx.Error("shapes " + rt::ShapeToString(a->shape) + " and " + rt::ShapeToString(b->shape) +
                       " are not broadcastable");
    std::vector<BroadcastDim> dims = CollapseBroadcast(a->shape, b->shape, out);
    if (dims.size() > kMaxDims) return ctx.UnsupportedError("more than 16 broadcast dimensions");
    dims_ = std::move(dims);
    // A per-channel operand ([C] against [..., C]: one operand runs on over the outer rows, the
    // other repeats one short row) would make short runs, each paying a call; instead that row
    // is repeated into scratch at each invoke, so runs cover many rows at once.
    rep_scratch_ = -1;
    outer_ = false;
    if (dims_.size() == 2) {
      const BroadcastDim& o = dims_[0];
      const BroadcastDim& i = dims_[1];
      const bool a_full = o.a_stride == i.size && o.b_stride == 0, b_full = o.b_stride == i.size && o.a_stride == 0;
      // An outer sum / product ([R, 1] against [C]): the per-row operand is spread over its
      // rows per group (on the stack), the other repeated as above.
      const bool a_rows = o.a_stride == 1 && i.a_stride == 0 && o.b_stride == 0 && i.b_stride == 1;
      const bool b_rows = o.b_stride == 1 && i.b_stride == 0 && o.a_stride == 0 && i.a_stride == 1;
      outer_ = a_rows || b_rows;
      if (i.size < kShortRow && o.size > 1 && ((i.a_stride == 1 && i.b_stride == 1 && (a_full || b_full)) || outer_)) {
        a_full_ = a_full || a_rows;
        rep_rows_ = std::max<int64_t>(2, kShortRow / i.size);
        rep_scratch_ = ctx.RequestScratch(static_cast<size_t>(rep_rows_ * i.size) * sizeof(float));
      } else {
        outer_ = false;
      }
    }
    return ctx.SetOutputShape(0, std::move(out));
  }

  Status Invoke(rt::KernelContext& ctx) override {
    const float* a = ctx.input(0)->data_as<float>();
    const float* b = ctx.input(1)->data_as<float>();
    float* out = ctx.output(0)->data_as<float>();
    const BroadcastDim& inner = dims_.back();
    int64_t outer = 1;
    for (size_t i = 0; i + 1 < dims_.size(); ++i) outer *= dims_[i].size;
    if (outer == 0 || inner.size == 0) return Status::Ok();  // empty output
    const int threads = ctx.threads().num_threads();
    // n values; an operand whose inner stride is 0 is one value (`strided`: both runs in memory).
    auto run = [&](const float* pa, const float* pb, float* po, int64_t n, bool strided = false) {
      const bool a_one = !strided && inner.a_stride == 0, b_one = !strided && inner.b_stride == 0;
      switch (isa_) {
        case Isa::kAvx512: return binary::RunAvx512(op_, pa, a_one, pb, b_one, po, static_cast<size_t>(n), mm_);
        case Isa::kAvx2: return binary::RunAvx2(op_, pa, a_one, pb, b_one, po, static_cast<size_t>(n), mm_);
        case Isa::kScalar: return binary::RunScalar(op_, pa, a_one, pb, b_one, po, static_cast<size_t>(n), mm_);
      }
    };
    constexpr int64_t kMinTask = 16384;  // elements: below this a task costs more than it saves
    if (outer == 1) {
      const int64_t n = inner.size;
      const int64_t tasks = TaskCount(threads, n, kMinTask, 2);
      RunTasks(&ctx.threads(), tasks, [&](int64_t t) {
        const int64_t i0 = n * t / tasks / 8 * 8, i1 = t + 1 == tasks ? n : n * (t + 1) / tasks / 8 * 8;
        run(a + i0 * inner.a_stride, b + i0 * inner.b_stride, out + i0, i1 - i0);
      });
      return Status::Ok();
    }
    if (rep_scratch_ >= 0) {
      // Rows in groups of rep_rows_: the full operand's (outer_: its spread row values) and the
      // output's group is one run, the other operand's the repeated row.
      const int64_t c = inner.size, group = rep_rows_ * c;
      float* rep = ctx.Scratch<float>(rep_scratch_);
      const float* row = a_full_ ? b : a;
      const float* full = a_full_ ? a : b;
      for (int64_t r = 0; r < rep_rows_; ++r) std::copy_n(row, c, rep + r * c);
      const int64_t groups = (outer + rep_rows_ - 1) / rep_rows_;
      const int64_t tasks = TaskCount(threads, groups, std::max<int64_t>(1, kMinTask / group), 2);
      RunTasks(&ctx.threads(), tasks, [&](int64_t t) {
        const int64_t g0 = groups * t / tasks, g1 = groups * (t + 1) / tasks;
        alignas(32) float spread[2 * kShortRow + 8];  // outer_: a group's row values, 8 floats past the end
        for (int64_t g = g0; g < g1; ++g) {
          const int64_t off = g * group, n = std::min(group, outer * c - off);
          const float* f = full + off;
          if (outer_) {
            for (int64_t r = 0; r * c < n; ++r) {
              const float v = full[g * rep_rows_ + r];
              for (int64_t j = 0; j < c; j += 8)
                for (int k = 0; k < 8; ++k) spread[r * c + j + k] = v;
            }
            f = spread;
          }
          run(a_full_ ? f : rep, a_full_ ? rep : f, out + off, n, true);
        }
      });
      return Status::Ok();
    }
    const int64_t tasks = TaskCount(threads, outer, std::max<int64_t>(1, kMinTask / std::max<int64_t>(1, inner.size)), 2);
    RunTasks(&ctx.threads(), tasks, [&](int64_t t) {
      const int64_t o0 = outer * t / tasks, o1 = outer * (t + 1) / tasks;
      ForEachBroadcastRow(dims_, o0, o1, [&](int64_t o, int64_t oa, int64_t ob) {
        run(a + oa, b + ob, out + o * inner.size, inner.size);
      });
    });
    return Status::Ok();
  }

  std::string variant() const override {
    const char* name = "";
    switch (op_) {
      case binary::Op::kAdd: name = "add"; break;
      case binary::Op::kSub: name = "sub"; break;
      case binary::Op::kMul: name = "mul"; break;
      case binary::Op::kDiv: name = "div"; break;
      case binary::Op::kSquaredDifference: name = "squared_difference"; break;
      case binary::Op::kMaximum: name = "maximum"; break;
      case binary::Op::kMinimum: name = "minimum"; break;
    }
    return std::string(name) + "/f32/" + (isa_ == Isa::kAvx512 ? "avx512" : isa_ == Isa::kAvx2 ? "avx2" : "scalar");
  }

 private:
  const binary::Op op_;
  const Isa isa_;
  const MinMax mm_;
  std::vector<BroadcastDim> dims_;
  // Per-channel operand repeated into scratch (Prepare): rows per group, which operand is full.
  static constexpr int64_t kShortRow = 256;
  int rep_scratch_ = -1;
  int64_t rep_rows_ = 0;
  bool a_full_ = true;  // the full operand (or, outer_, the per-row one) is a
  bool outer_ = false;  // the full operand is one value per row, spread per group
};

}  // namespace

std::unique_ptr<rt::OpKernel> MakeBinaryF32(const rt::KernelCreateContext& cc) {
  if (cc.reference_only || cc.num_inputs() != 2 || cc.num_outputs() != 1) return nullptr;
  if (!IsFloat32(cc.input(0)) || !IsFloat32(cc.input(1)) || !IsFloat32(cc.output(0))) return nullptr;
  int activation = 0;
  binary::Op op;
  switch (cc.op.code) {
    case tflite::BuiltinOperator_ADD:
      op = binary::Op::kAdd;
      activation = GetOptions<tflite::AddOptionsT>(cc.op).fused_activation_function;
      break;
    case tflite::BuiltinOperator_SUB:
      op = binary::Op::kSub;
      activation = GetOptions<tflite::SubOptionsT>(cc.op).fused_activation_function;
      break;
    case tflite::BuiltinOperator_MUL:
      op = binary::Op::kMul;
      activation = GetOptions<tflite::MulOptionsT>(cc.op).fused_activation_function;
      break;
    case tflite::BuiltinOperator_DIV:
      op = binary::Op::kDiv;
      activation = GetOptions<tflite::DivOptionsT>(cc.op).fused_activation_function;
      break;
    case tflite::BuiltinOperator_SQUARED_DIFFERENCE: op = binary::Op::kSquaredDifference; break;
    case tflite::BuiltinOperator_MAXIMUM: op = binary::Op::kMaximum; break;
    case tflite::BuiltinOperator_MINIMUM: op = binary::Op::kMinimum; break;
    default:
      return nullptr;
  }
  MinMax mm;
  if (!FusedMinMax(activation, &mm)) return nullptr;
  const auto isa = cc.cpu.has_avx512()     ? BinaryF32::Isa::kAvx512
                   : cc.cpu.has_avx2_fma() ? BinaryF32::Isa::kAvx2
                                           : BinaryF32::Isa::kScalar;
  return std::make_unique<BinaryF32>(op, isa, mm);
}

}  // namespace edgeopt::kernels
