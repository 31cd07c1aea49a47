// LOGICAL_AND LOGICAL_OR (broadcasting) and LOGICAL_NOT on bool tensors.
#include <algorithm>
#include <cstring>
#include <memory>

#include "kernels/common/elementwise_util.h"
#include "kernels/elementwise/ops.h"

namespace edgeopt::kernels::elementwise {
namespace {

using Op = tflite::BuiltinOperator;

class LogicalKernel : public rt::OpKernel {
 public:
  explicit LogicalKernel(Op op) : op_(op) {}

  std::string variant() const override {
    switch (op_) {
      case tflite::BuiltinOperator_LOGICAL_AND: return "logical_and/bool/ref";
      case tflite::BuiltinOperator_LOGICAL_OR: return "logical_or/bool/ref";
      default: return "logical_not/bool/ref";
    }
  }

  Status Prepare(rt::KernelContext& ctx) override {
    const bool unary = op_ == tflite::BuiltinOperator_LOGICAL_NOT;
    RETURN_IF_ERROR(CheckInputCount(ctx, unary ? 1 : 2, unary ? 1 : 2));
    RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      ASSIGN_OR_RETURN(const rt::RtTensor* t, RequiredInput(ctx, i));
      if (t->type != DType::kBool) return ctx.Error("input " + std::to_string(i) + " must be bool, got " + Describe(*t));
    }
    if (ctx.output(0)->type != DType::kBool) return ctx.Error("output must be bool, got " + Describe(*ctx.output(0)));
    if (unary) return ctx.SetOutputShape(0, ctx.input(0)->shape);
    const rt::Shape& a = ctx.input(0)->shape;
    const rt::Shape& b = ctx.input(1)->shape;
    if (!MakeBroadcastPlan(a, b, &plan_))
      return ctx.Error("shapes " + rt::ShapeToString(a) + " and " + rt::ShapeToString(b) + " are not broadcastable");
    return ctx.SetOutputShape(0, plan_.out);
  }

  Status Invoke(rt::KernelContext& ctx) override {
    bool* o = ctx.output(0)->data_as<bool>();
    const bool* a = ctx.input(0)->data_as<bool>();
    if (op_ == tflite::BuiltinOperator_LOGICAL_NOT) {
      const int64_t n = ctx.input(0)->num_elements();
      for (int64_t i = 0; i < n; ++i) o[i] = !a[i];
      return Status::Ok();
    }
    const bool* b = ctx.input(1)->data_as<bool>();
    if (op_ == tflite::BuiltinOperator_LOGICAL_AND)
      BroadcastBinary(plan_, a, b, o, [](bool p, bool q) { return p && q; });
    else
      BroadcastBinary(plan_, a, b, o, [](bool p, bool q) { return p || q; });
    return Status::Ok();
  }

 private:
  Op op_;
  BroadcastPlan plan_;
};

// SELECT / SELECT_V2: output = condition ? x : y.
// SELECT (v1) requires x and y of equal shape; the condition has that shape, or is a scalar,
// or is 1-D selecting whole slices along the first dimension. SELECT_V2 broadcasts all three.
class SelectKernel : public rt::OpKernel {
 public:
  SelectKernel(bool v2, DType type) : v2_(v2), type_(type) {}

  std::string variant() const override { return std::string(v2_ ? "select_v2/" : "select/") + TypeName(type_) + "/ref"; }

  Status Prepare(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckInputCount(ctx, 3, 3));
    RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
    ASSIGN_OR_RETURN(const rt::RtTensor* c, RequiredInput(ctx, 0));
    ASSIGN_OR_RETURN(const rt::RtTensor* x, RequiredInput(ctx, 1));
    ASSIGN_OR_RETURN(const rt::RtTensor* y, RequiredInput(ctx, 2));
    if (c->type != DType::kBool) return ctx.Error("condition must be bool, got " + Describe(*c));
    if (x->type != y->type) return ctx.Error("x and y must have the same type, got " + Describe(*x) + " and " + Describe(*y));
    if (ctx.output(0)->type != x->type)
      return ctx.Error("output " + Describe(*ctx.output(0)) + " must have the input type " + TypeName(x->type));
    mode_ = Mode::kSame;
    if (c->shape == x->shape && x->shape == y->shape) return ctx.SetOutputShape(0, x->shape);
    if (!v2_) {
      if (x->shape != y->shape)
        return ctx.Error("x and y must have the same shape, got " + rt::ShapeToString(x->shape) + " and " +
                         rt::ShapeToString(y->shape));
      const bool scalar = c->rank() == 0;
      const bool rank_one = c->rank() == 1 && x->rank() >= 1 && c->shape[0] == x->shape[0];
      if (!scalar && !rank_one)
        return ctx.Error("condition " + rt::ShapeToString(c->shape) + " must match x " + rt::ShapeToString(x->shape) +
                         ", be a scalar, or be 1-D with the size of x's first dimension");
      mode_ = Mode::kRankOne;
      return ctx.SetOutputShape(0, x->shape);
    }
    rt::Shape xy;
    if (!BroadcastShape(x->shape, y->shape, &xy) || !BroadcastShape(c->shape, xy, &out_))
      return ctx.Error("shapes " + rt::ShapeToString(c->shape) + ", " + rt::ShapeToString(x->shape) + " and " +
                       rt::ShapeToString(y->shape) + " are not broadcastable");
    mode_ = Mode::kBroadcast;
    sc_ = BroadcastStrides(c->shape, out_);
    sx_ = BroadcastStrides(x->shape, out_);
    sy_ = BroadcastStrides(y->shape, out_);
    idx_.assign(out_.size(), 0);
    return ctx.SetOutputShape(0, out_);
  }

  Status Invoke(rt::KernelContext& ctx) override {
    const bool* c = ctx.input(0)->data_as<bool>();
    const uint8_t* x = ctx.input(1)->data;
    const uint8_t* y = ctx.input(2)->data;
    rt::RtTensor& out = *ctx.output(0);
    const size_t es = DTypeSize(type_);
    const int64_t n = out.num_elements();
    if (n == 0) return Status::Ok();
    switch (mode_) {
      case Mode::kSame:
        for (int64_t i = 0; i < n; ++i) std::memcpy(out.data + i * es, (c[i] ? x : y) + i * es, es);
        break;
      case Mode::kRankOne: {
        const rt::RtTensor& ct = *ctx.input(0);
        const int64_t outer = ct.num_elements();
        const int64_t inner = outer ? n / (ct.rank() == 0 ? 1 : outer) : 0;
        if (ct.rank() == 0) {
          std::memcpy(out.data, c[0] ? x : y, n * es);
        } else {
          for (int64_t i = 0; i < outer; ++i)
            std::memcpy(out.data + i * inner * es, (c[i] ? x : y) + i * inner * es, inner * es);
        }
        break;
      }
      case Mode::kBroadcast: {
        const int rank = static_cast<int>(out_.size());
        std::fill(idx_.begin(), idx_.end(), 0);
        int64_t oc = 0, ox = 0, oy = 0;
        for (int64_t i = 0; i < n; ++i) {
          std::memcpy(out.data + i * es, c[oc] ? x + ox * es : y + oy * es, es);
          for (int d = rank - 1; d >= 0; --d) {
            ++idx_[d];
            oc += sc_[d];
            ox += sx_[d];
            oy += sy_[d];
            if (idx_[d] < out_[d]) break;
            oc -= sc_[d] * out_[d];
            ox -= sx_[d] * out_[d];
            oy -= sy_[d] * out_[d];
            idx_[d] = 0;
          }
        }
        break;
      }
    }
    return Status::Ok();
  }

 private:
  enum class Mode { kSame, kRankOne, kBroadcast };
  bool v2_;
  DType type_;
  Mode mode_ = Mode::kSame;
  rt::Shape out_;
  std::vector<int64_t> sc_, sx_, sy_;
  std::vector<int32_t> idx_;
};

const std::vector<DType> kSelectTypes = {DType::kBool,  DType::kFloat32, DType::kUInt8, DType::kInt8,
                                         DType::kInt16, DType::kInt32,   DType::kInt64};

rt::KernelFactory SelectFactory(bool v2) {
  return [v2](const rt::KernelCreateContext& cc) -> Expected<std::unique_ptr<rt::OpKernel>> {
    const Tensor* x = cc.input(1);
    if (!x) return cc.Error("input 1 (x) is missing");
    if (!TypeIn(x->type, kSelectTypes))
      return cc.Error("type " + TypeName(x->type) + " is not supported (supported: " + TypeListText(kSelectTypes) + ")");
    return std::unique_ptr<rt::OpKernel>(new SelectKernel(v2, x->type));
  };
}

rt::KernelFactory LogicalFactory(Op op) {
  return [op](const rt::KernelCreateContext&) -> Expected<std::unique_ptr<rt::OpKernel>> {
    return std::unique_ptr<rt::OpKernel>(new LogicalKernel(op));
  };
}

}  // namespace

void RegisterLogical(rt::OpRegistry& r) {
  for (Op op : {tflite::BuiltinOperator_LOGICAL_AND, tflite::BuiltinOperator_LOGICAL_OR, tflite::BuiltinOperator_LOGICAL_NOT})
    r.Add(op, LogicalFactory(op));
}

void RegisterSelect(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_SELECT, SelectFactory(false));
  r.Add(tflite::BuiltinOperator_SELECT_V2, SelectFactory(true));
}

}  // namespace edgeopt::kernels::elementwise
