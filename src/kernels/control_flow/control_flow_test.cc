// WHILE / IF / CALL_ONCE / VAR_HANDLE / READ_VARIABLE / ASSIGN_VARIABLE against TFLite 2.9 on
// multi-subgraph models, over several invokes (variables persist), plus hostile-model errors.
//
// The loop conditions and bodies need arithmetic (ADD, LESS) whose kernels belong to another
// family; the edgeopt side gets small stand-ins through the op resolver (TFLite uses its own).
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "graph/builder.h"
#include "kernels/common/kernel_util.h"
#include "runtime/interpreter.h"
#include "support/conformance.h"
#include "support/multi_invoke.h"

namespace edgeopt {
namespace {

using testing::TensorValue;

// ---- test stand-ins: ADD and LESS on float32/int32, same shapes or one scalar side ----------

struct NoState {};

template <typename T, typename F>
void Elementwise(const rt::RtTensor* a, const rt::RtTensor* b, rt::RtTensor* out, F f) {
  const int64_t n = out->num_elements();
  const T* pa = a->data_as<T>();
  const T* pb = b->data_as<T>();
  const bool sa = a->num_elements() == 1, sb = b->num_elements() == 1;
  for (int64_t i = 0; i < n; ++i) f(pa[sa ? 0 : i], pb[sb ? 0 : i], out, i);
}

Status BinaryPrepare(rt::KernelContext& ctx, NoState&) {
  const rt::RtTensor* a = ctx.input(0);
  const rt::RtTensor* b = ctx.input(1);
  if (a->type != b->type || (a->type != DType::kFloat32 && a->type != DType::kInt32))
    return ctx.Error("test stand-in supports float32/int32 pairs only");
  if (a->shape != b->shape && a->num_elements() != 1 && b->num_elements() != 1)
    return ctx.Error("test stand-in supports equal shapes or a scalar side");
  return ctx.SetOutputShape(0, a->num_elements() >= b->num_elements() ? a->shape : b->shape);
}

Status AddInvoke(rt::KernelContext& ctx, const NoState&) {
  if (ctx.input(0)->type == DType::kFloat32)
    Elementwise<float>(ctx.input(0), ctx.input(1), ctx.output(0),
                       [](float x, float y, rt::RtTensor* o, int64_t i) { o->data_as<float>()[i] = x + y; });
  else
    Elementwise<int32_t>(ctx.input(0), ctx.input(1), ctx.output(0),
                         [](int32_t x, int32_t y, rt::RtTensor* o, int64_t i) { o->data_as<int32_t>()[i] = x + y; });
  return Status::Ok();
}

Status LessInvoke(rt::KernelContext& ctx, const NoState&) {
  if (ctx.input(0)->type == DType::kFloat32)
    Elementwise<float>(ctx.input(0), ctx.input(1), ctx.output(0),
                       [](float x, float y, rt::RtTensor* o, int64_t i) { o->data[i] = x < y; });
  else
    Elementwise<int32_t>(ctx.input(0), ctx.input(1), ctx.output(0),
                         [](int32_t x, int32_t y, rt::RtTensor* o, int64_t i) { o->data[i] = x < y; });
  return Status::Ok();
}

// CONCATENATION of two float tensors along axis 0.
Status ConcatPrepare(rt::KernelContext& ctx, NoState&) {
  const rt::RtTensor* a = ctx.input(0);
  const rt::RtTensor* b = ctx.input(1);
  if (a->type != DType::kFloat32 || b->type != DType::kFloat32 || a->rank() < 1 || a->rank() != b->rank())
    return ctx.Error("test stand-in supports two float tensors of equal rank");
  rt::Shape shape = a->shape;
  shape[0] += b->shape[0];
  return ctx.SetOutputShape(0, shape);
}

Status ConcatInvoke(rt::KernelContext& ctx, const NoState&) {
  const size_t na = ctx.input(0)->num_elements(), nb = ctx.input(1)->num_elements();
  float* out = ctx.output(0)->data_as<float>();
  std::memcpy(out, ctx.input(0)->data, na * 4);
  std::memcpy(out + na, ctx.input(1)->data, nb * 4);
  return Status::Ok();
}

std::shared_ptr<const rt::OpRegistry> StandIns() {
  auto r = std::make_shared<rt::OpRegistry>();
  r->Add(tflite::BuiltinOperator_CONCATENATION,
         kernels::MakeFnFactory<NoState>(ConcatPrepare, ConcatInvoke, "concatenation/test"));
  r->Add(tflite::BuiltinOperator_ADD, kernels::MakeFnFactory<NoState>(BinaryPrepare, AddInvoke, "add/test"));
  r->Add(tflite::BuiltinOperator_LESS, kernels::MakeFnFactory<NoState>(BinaryPrepare, LessInvoke, "less/test"));
  return r;
}

void Add(GraphBuilder& b, int32_t x, int32_t y, int32_t out) {
  b.Op(tflite::BuiltinOperator_ADD, {x, y}, {out}, tflite::AddOptionsT{});
}

TensorValue Value(const std::string& name, DType type, std::vector<int32_t> shape, const void* data, size_t bytes) {
  TensorValue v;
  v.name = name;
  v.type = type;
  v.shape = std::move(shape);
  v.data.assign(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + bytes);
  return v;
}
TensorValue Int32Scalar(const std::string& name, int32_t v) { return Value(name, DType::kInt32, {}, &v, 4); }
TensorValue Floats(const std::string& name, std::vector<int32_t> shape, const std::vector<float>& v) {
  return Value(name, DType::kFloat32, std::move(shape), v.data(), v.size() * 4);
}
TensorValue Bool(const std::string& name, bool v) {
  uint8_t b = v;
  return Value(name, DType::kBool, {}, &b, 1);
}

#define REQUIRE_TFLITE() \
  if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)"

// while (i < limit) { i = i + 1; x = x + x; acc = acc + x }
Graph WhileGraph(int cond_index = 1, int body_index = 2) {
  GraphBuilder b;
  auto i0 = b.Input("i", DType::kInt32, {});
  auto limit = b.Input("limit", DType::kInt32, {});
  auto x0 = b.Input("x", DType::kFloat32, {2, 3});
  auto acc0 = b.Const<float>("acc0", DType::kFloat32, {2, 3}, std::vector<float>(6, 0.5f));
  auto i1 = b.Tensor("i_out", DType::kInt32, {});
  auto l1 = b.Tensor("limit_out", DType::kInt32, {});
  auto x1 = b.Tensor("x_out", DType::kFloat32, {2, 3});
  auto acc1 = b.Tensor("acc_out", DType::kFloat32, {2, 3});
  tflite::WhileOptionsT wo;
  wo.cond_subgraph_index = cond_index;
  wo.body_subgraph_index = body_index;
  b.Op(tflite::BuiltinOperator_WHILE, {i0, limit, x0, acc0}, {i1, l1, x1, acc1}, wo);
  b.Output(i1);
  b.Output(x1);
  b.Output(acc1);

  b.NewSubgraph("cond");
  {
    auto i = b.Input("i", DType::kInt32, {});
    auto l = b.Input("limit", DType::kInt32, {});
    b.Input("x", DType::kFloat32, {2, 3});
    b.Input("acc", DType::kFloat32, {2, 3});
    auto less = b.Tensor("less", DType::kBool, {});
    b.Op(tflite::BuiltinOperator_LESS, {i, l}, {less});
    b.Output(less);
  }
  b.NewSubgraph("body");
  {
    auto i = b.Input("i", DType::kInt32, {});
    auto l = b.Input("limit", DType::kInt32, {});
    auto x = b.Input("x", DType::kFloat32, {2, 3});
    auto acc = b.Input("acc", DType::kFloat32, {2, 3});
    auto one = b.Const<int32_t>("one", DType::kInt32, {}, {1});
    auto i_next = b.Tensor("i_next", DType::kInt32, {});
    Add(b, i, one, i_next);
    auto x_next = b.Tensor("x_next", DType::kFloat32, {2, 3});
    Add(b, x, x, x_next);
    auto acc_next = b.Tensor("acc_next", DType::kFloat32, {2, 3});
    Add(b, acc, x_next, acc_next);
    b.Output(i_next);
    b.Output(l);
    b.Output(x_next);
    b.Output(acc_next);
  }
  return b.Finish();
}

TEST(ControlFlowConformance, While) {
  REQUIRE_TFLITE();
  const std::vector<float> x = {0.5f, -1.0f, 2.0f, 0.25f, 3.0f, -0.125f};
  std::vector<std::vector<TensorValue>> inputs;
  for (auto [i, limit] : std::vector<std::pair<int, int>>{{0, 5}, {3, 3}, {7, 2}, {-4, 6}, {0, 0}})
    inputs.push_back({Int32Scalar("i", i), Int32Scalar("limit", limit), Floats("x", {2, 3}, x)});
  testing::CompareOptions o;
  o.rtol = 0;
  o.atol = 0;
  auto report = testing::CompareGraphInvokes(WhileGraph(), static_cast<int>(inputs.size()), o, inputs, StandIns());
  EXPECT_TRUE(report.ok) << report.Summary() << " " << report.error;
}

// out = cond ? x + x : x + y
Graph IfGraph() {
  GraphBuilder b;
  auto c = b.Input("cond", DType::kBool, {});
  auto x = b.Input("x", DType::kFloat32, {3});
  auto y = b.Input("y", DType::kFloat32, {3});
  auto out = b.Tensor("out", DType::kFloat32, {3});
  tflite::IfOptionsT io;
  io.then_subgraph_index = 1;
  io.else_subgraph_index = 2;
  b.Op(tflite::BuiltinOperator_IF, {c, x, y}, {out}, io);
  b.Output(out);
  for (int branch = 0; branch < 2; ++branch) {
    b.NewSubgraph(branch == 0 ? "then" : "else");
    auto bx = b.Input("x", DType::kFloat32, {3});
    auto by = b.Input("y", DType::kFloat32, {3});
    auto r = b.Tensor("r", DType::kFloat32, {3});
    Add(b, bx, branch == 0 ? bx : by, r);
    b.Output(r);
  }
  return b.Finish();
}

TEST(ControlFlowConformance, If) {
  REQUIRE_TFLITE();
  std::vector<std::vector<TensorValue>> inputs;
  for (bool c : {true, false, false, true})
    inputs.push_back({Bool("cond", c), Floats("x", {3}, {1, 2, 3}), Floats("y", {3}, {10, -20, 0.5f})});
  testing::CompareOptions o;
  o.rtol = 0;
  o.atol = 0;
  auto report = testing::CompareGraphInvokes(IfGraph(), 4, o, inputs, StandIns());
  EXPECT_TRUE(report.ok) << report.Summary() << " " << report.error;
}

// CALL_ONCE initializes variable v = init; every invoke: v = v + x, outputs v. Two variables
// (different shared names) check that handles do not collide.
Graph VariablesGraph() {
  GraphBuilder b;
  auto x = b.Input("x", DType::kFloat32, {2, 2});
  tflite::CallOnceOptionsT co;
  co.init_subgraph_index = 1;
  b.Op(tflite::BuiltinOperator_CALL_ONCE, {}, {}, co);
  auto handle = [&](const std::string& name) {
    auto h = b.Tensor("h_" + name, DType::kResource, {});
    tflite::VarHandleOptionsT vo;
    vo.shared_name = name;
    b.Op(tflite::BuiltinOperator_VAR_HANDLE, {}, {h}, vo);
    return h;
  };
  auto ha = handle("a");
  auto hb = handle("b");
  auto ra = b.Tensor("read_a", DType::kFloat32, {2, 2});
  b.Op(tflite::BuiltinOperator_READ_VARIABLE, {ha}, {ra}, tflite::ReadVariableOptionsT{});
  auto sum = b.Tensor("sum", DType::kFloat32, {2, 2});
  Add(b, ra, x, sum);
  b.Op(tflite::BuiltinOperator_ASSIGN_VARIABLE, {ha, sum}, {}, tflite::AssignVariableOptionsT{});
  auto rb = b.Tensor("read_b", DType::kFloat32, {2, 2});
  b.Op(tflite::BuiltinOperator_READ_VARIABLE, {hb}, {rb}, tflite::ReadVariableOptionsT{});
  auto diff = b.Tensor("b_plus_sum", DType::kFloat32, {2, 2});
  Add(b, rb, sum, diff);
  b.Op(tflite::BuiltinOperator_ASSIGN_VARIABLE, {hb, diff}, {}, tflite::AssignVariableOptionsT{});
  b.Output(sum);
  b.Output(diff);

  b.NewSubgraph("init");
  {
    for (const char* name : {"a", "b"}) {
      auto h = b.Tensor(std::string("h_") + name, DType::kResource, {});
      tflite::VarHandleOptionsT vo;
      vo.shared_name = name;
      b.Op(tflite::BuiltinOperator_VAR_HANDLE, {}, {h}, vo);
      auto v = b.Const<float>(std::string("init_") + name, DType::kFloat32, {2, 2},
                              name[0] == 'a' ? std::vector<float>{1, 2, 3, 4} : std::vector<float>{-1, 0, 1, 0.5f});
      b.Op(tflite::BuiltinOperator_ASSIGN_VARIABLE, {h, v}, {}, tflite::AssignVariableOptionsT{});
    }
  }
  return b.Finish();
}

TEST(ControlFlowConformance, CallOnceAndResourceVariables) {
  REQUIRE_TFLITE();
  testing::CompareOptions o;
  o.rtol = 1e-6;
  auto report = testing::CompareGraphInvokes(VariablesGraph(), 4, o, {}, StandIns());
  EXPECT_TRUE(report.ok) << report.Summary() << " " << report.error;
}

// while (i < limit) { i = i + 1; x = concat(x, x) }: the loop value grows, so the WHILE
// outputs (and the op reading them) get their shapes at run time.
Graph GrowingWhileGraph() {
  GraphBuilder b;
  auto i0 = b.Input("i", DType::kInt32, {});
  auto limit = b.Input("limit", DType::kInt32, {});
  auto x0 = b.Input("x", DType::kFloat32, {1, 3});
  auto i1 = b.Tensor("i_out", DType::kInt32, {});
  auto l1 = b.Tensor("limit_out", DType::kInt32, {});
  auto x1 = b.Tensor("x_out", DType::kFloat32, {1, 3});
  tflite::WhileOptionsT wo;
  wo.cond_subgraph_index = 1;
  wo.body_subgraph_index = 2;
  b.Op(tflite::BuiltinOperator_WHILE, {i0, limit, x0}, {i1, l1, x1}, wo);
  auto y = b.Tensor("y", DType::kFloat32, {1, 3});
  Add(b, x1, x1, y);
  b.Output(i1);
  b.Output(y);
  b.NewSubgraph("cond");
  {
    auto i = b.Input("i", DType::kInt32, {});
    auto l = b.Input("limit", DType::kInt32, {});
    b.Input("x", DType::kFloat32, {1, 3});
    auto less = b.Tensor("less", DType::kBool, {});
    b.Op(tflite::BuiltinOperator_LESS, {i, l}, {less});
    b.Output(less);
  }
  b.NewSubgraph("body");
  {
    auto i = b.Input("i", DType::kInt32, {});
    auto l = b.Input("limit", DType::kInt32, {});
    auto x = b.Input("x", DType::kFloat32, {1, 3});
    auto one = b.Const<int32_t>("one", DType::kInt32, {}, {1});
    auto i_next = b.Tensor("i_next", DType::kInt32, {});
    Add(b, i, one, i_next);
    auto x_next = b.Tensor("x_next", DType::kFloat32, {2, 3});
    tflite::ConcatenationOptionsT co;
    co.axis = 0;
    b.Op(tflite::BuiltinOperator_CONCATENATION, {x, x}, {x_next}, co);
    b.Output(i_next);
    b.Output(l);
    b.Output(x_next);
  }
  return b.Finish();
}

TEST(ControlFlowConformance, WhileWithGrowingShapes) {
  REQUIRE_TFLITE();
  std::vector<std::vector<TensorValue>> inputs;
  for (int limit : {3, 0, 1, 4})
    inputs.push_back({Int32Scalar("i", 0), Int32Scalar("limit", limit), Floats("x", {1, 3}, {1, -2, 0.5f})});
  testing::CompareOptions o;
  o.rtol = 0;
  o.atol = 0;
  auto report = testing::CompareGraphInvokes(GrowingWhileGraph(), static_cast<int>(inputs.size()), o, inputs, StandIns());
  EXPECT_TRUE(report.ok) << report.Summary() << " " << report.error;
}

// out = cond ? concat(x, x) : x + x: the branches disagree on the output shape.
TEST(ControlFlowConformance, IfWithBranchShapesDiffering) {
  REQUIRE_TFLITE();
  GraphBuilder b;
  auto c = b.Input("cond", DType::kBool, {});
  auto x = b.Input("x", DType::kFloat32, {2, 2});
  auto out = b.Tensor("out", DType::kFloat32, {2, 2});
  tflite::IfOptionsT io;
  io.then_subgraph_index = 1;
  io.else_subgraph_index = 2;
  b.Op(tflite::BuiltinOperator_IF, {c, x}, {out}, io);
  b.Output(out);
  b.NewSubgraph("then");
  {
    auto bx = b.Input("x", DType::kFloat32, {2, 2});
    auto r = b.Tensor("r", DType::kFloat32, {4, 2});
    tflite::ConcatenationOptionsT co;
    b.Op(tflite::BuiltinOperator_CONCATENATION, {bx, bx}, {r}, co);
    b.Output(r);
  }
  b.NewSubgraph("else");
  {
    auto bx = b.Input("x", DType::kFloat32, {2, 2});
    auto r = b.Tensor("r", DType::kFloat32, {2, 2});
    Add(b, bx, bx, r);
    b.Output(r);
  }
  std::vector<std::vector<TensorValue>> inputs;
  for (bool cond : {true, false, true})
    inputs.push_back({Bool("cond", cond), Floats("x", {2, 2}, {1, 2, 3, 4})});
  testing::CompareOptions o;
  o.rtol = 0;
  o.atol = 0;
  auto report = testing::CompareGraphInvokes(b.Finish(), 3, o, inputs, StandIns());
  EXPECT_TRUE(report.ok) << report.Summary() << " " << report.error;
}

// A resource handle carried through a WHILE: the body doubles the variable each iteration; the
// main graph reads it after the loop (variables are shared across subgraphs).
Graph VariableLoopGraph() {
  GraphBuilder b;
  auto x = b.Input("x", DType::kFloat32, {3});
  auto limit = b.Input("limit", DType::kInt32, {});
  auto h = b.Tensor("h", DType::kResource, {});
  tflite::VarHandleOptionsT vo;
  vo.shared_name = "acc";
  b.Op(tflite::BuiltinOperator_VAR_HANDLE, {}, {h}, vo);
  b.Op(tflite::BuiltinOperator_ASSIGN_VARIABLE, {h, x}, {}, tflite::AssignVariableOptionsT{});
  auto i0 = b.Const<int32_t>("i0", DType::kInt32, {}, {0});
  auto i1 = b.Tensor("i_out", DType::kInt32, {});
  auto l1 = b.Tensor("limit_out", DType::kInt32, {});
  auto h1 = b.Tensor("h_out", DType::kResource, {});
  tflite::WhileOptionsT wo;
  wo.cond_subgraph_index = 1;
  wo.body_subgraph_index = 2;
  b.Op(tflite::BuiltinOperator_WHILE, {i0, limit, h}, {i1, l1, h1}, wo);
  auto y = b.Tensor("y", DType::kFloat32, {3});
  b.Op(tflite::BuiltinOperator_READ_VARIABLE, {h1}, {y}, tflite::ReadVariableOptionsT{});
  b.Output(i1);
  b.Output(y);
  b.NewSubgraph("cond");
  {
    auto i = b.Input("i", DType::kInt32, {});
    auto l = b.Input("limit", DType::kInt32, {});
    b.Input("h", DType::kResource, {});
    auto less = b.Tensor("less", DType::kBool, {});
    b.Op(tflite::BuiltinOperator_LESS, {i, l}, {less});
    b.Output(less);
  }
  b.NewSubgraph("body");
  {
    auto i = b.Input("i", DType::kInt32, {});
    auto l = b.Input("limit", DType::kInt32, {});
    auto bh = b.Input("h", DType::kResource, {});
    auto one = b.Const<int32_t>("one", DType::kInt32, {}, {1});
    auto i_next = b.Tensor("i_next", DType::kInt32, {});
    Add(b, i, one, i_next);
    auto v = b.Tensor("v", DType::kFloat32, {3});
    b.Op(tflite::BuiltinOperator_READ_VARIABLE, {bh}, {v}, tflite::ReadVariableOptionsT{});
    auto v2 = b.Tensor("v2", DType::kFloat32, {3});
    Add(b, v, v, v2);
    b.Op(tflite::BuiltinOperator_ASSIGN_VARIABLE, {bh, v2}, {}, tflite::AssignVariableOptionsT{});
    b.Output(i_next);
    b.Output(l);
    b.Output(bh);
  }
  return b.Finish();
}

TEST(ControlFlowConformance, ResourceHandleThroughWhile) {
  REQUIRE_TFLITE();
  std::vector<std::vector<TensorValue>> inputs;
  for (int limit : {3, 0, 5})
    inputs.push_back({Floats("x", {3}, {1.5f, -2, 0.25f}), Int32Scalar("limit", limit)});
  testing::CompareOptions o;
  o.rtol = 0;
  o.atol = 0;
  auto report = testing::CompareGraphInvokes(VariableLoopGraph(), 3, o, inputs, StandIns());
  EXPECT_TRUE(report.ok) << report.Summary() << " " << report.error;
}

// ---- errors ---------------------------------------------------------------------------------

Status RunGraph(Graph g, int invokes = 1) {
  ASSIGN_OR_RETURN(auto model, rt::Model::FromGraph(std::move(g)));
  rt::InterpreterOptions io;
  io.op_resolver = StandIns();
  ASSIGN_OR_RETURN(auto interp, rt::Interpreter::Create(model, io));
  RETURN_IF_ERROR(interp->AllocateTensors());
  for (int k = 0; k < invokes; ++k) RETURN_IF_ERROR(interp->Invoke());
  return Status::Ok();
}

void ExpectError(Status st, const std::string& op, const std::string& text) {
  EXPECT_FALSE(st.ok()) << "expected: " << text;
  EXPECT_NE(st.message().find(op), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find(text), std::string::npos) << st.ToString();
}

TEST(ControlFlowErrors, HostileModels) {
  ExpectError(RunGraph(WhileGraph(1, 7)), "WHILE", "body subgraph index 7 is out of range");
  ExpectError(RunGraph(WhileGraph(-1, 2)), "WHILE", "cond subgraph index -1 is out of range");
  ExpectError(RunGraph(WhileGraph(0, 2)), "WHILE", "is the subgraph containing the op");
  // cond = body: its outputs are not one bool.
  ExpectError(RunGraph(WhileGraph(2, 2)), "WHILE", "must have one bool scalar output");
  {
    // Two loops whose bodies run each other: a cycle caught at prepare, not a stack overflow.
    // Subgraph 2 (the body) gets a WHILE whose body is subgraph 3, a copy of the body whose
    // WHILE runs subgraph 2.
    Graph g = WhileGraph();
    g.subgraphs.push_back(g.subgraphs[2]);
    for (int self : {2, 3}) {
      Subgraph& s = g.subgraphs[self];
      Operator w;
      w.code = tflite::BuiltinOperator_WHILE;
      w.inputs = s.inputs;
      for (int32_t t : s.inputs) {
        Tensor copy = s.tensors[t];
        copy.name += "_loop";
        w.outputs.push_back(s.AddTensor(copy));
      }
      tflite::WhileOptionsT wo;
      wo.cond_subgraph_index = 1;
      wo.body_subgraph_index = self == 2 ? 3 : 2;
      w.options.Set(wo);
      s.ops.insert(s.ops.begin(), w);
    }
    ExpectError(RunGraph(std::move(g)), "WHILE", "used recursively");
  }
  {
    Graph g = IfGraph();
    g.main().tensors[0].type = DType::kInt32;  // condition not bool
    ExpectError(RunGraph(std::move(g)), "IF", "condition must be a bool scalar");
  }
  {
    Graph g = IfGraph();
    auto& o = *static_cast<tflite::IfOptionsT*>(g.main().ops[0].options.value);
    o.else_subgraph_index = 9;
    ExpectError(RunGraph(std::move(g)), "IF", "else subgraph index 9 is out of range");
  }
  {
    Graph g = VariablesGraph();
    g.main().ops.erase(g.main().ops.begin());  // no CALL_ONCE: read before any assignment
    ExpectError(RunGraph(std::move(g)), "READ_VARIABLE", "before any ASSIGN_VARIABLE");
  }
  {
    Graph g = VariablesGraph();
    auto& o = *static_cast<tflite::CallOnceOptionsT*>(g.main().ops[0].options.value);
    o.init_subgraph_index = 5;
    ExpectError(RunGraph(std::move(g)), "CALL_ONCE", "init subgraph index 5 is out of range");
  }
}

// A WHILE whose cond passes its true input through and whose body has no ops never ends by
// itself (TFLite would spin forever); Cancel() must still stop it.
TEST(ControlFlowRuntime, EndlessWhileIsCancellable) {
  GraphBuilder b;
  auto go = b.Input("go", DType::kBool, {});
  auto done = b.Tensor("done", DType::kBool, {});
  tflite::WhileOptionsT wo;
  wo.cond_subgraph_index = 1;
  wo.body_subgraph_index = 2;
  b.Op(tflite::BuiltinOperator_WHILE, {go}, {done}, wo);
  b.Output(done);
  for (int k = 0; k < 2; ++k) {
    b.NewSubgraph(k == 0 ? "cond" : "body");
    auto v = b.Input("v", DType::kBool, {});
    b.Output(v);
  }
  auto model = rt::Model::FromGraph(b.Finish());
  ASSERT_TRUE(model.ok());
  auto interp = rt::Interpreter::Create(*model);
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  ASSERT_TRUE((*interp)->AllocateTensors().ok());
  (*interp)->input(0)->data[0] = 1;
  Status result;
  std::thread runner([&] { result = (*interp)->Invoke(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  (*interp)->Cancel();
  runner.join();
  EXPECT_EQ(result.code(), StatusCode::kCancelled) << result.ToString();
  // Not cancelled, with a false condition: ends at once.
  (*interp)->input(0)->data[0] = 0;
  EXPECT_TRUE((*interp)->Invoke().ok());
}

TEST(ControlFlowRuntime, VariablesPersistAndCallOnceRunsOnce) {
  auto model = rt::Model::FromGraph(VariablesGraph());
  ASSERT_TRUE(model.ok());
  rt::InterpreterOptions io;
  io.op_resolver = StandIns();
  auto interp = rt::Interpreter::Create(*model, io);
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  rt::Interpreter& it = **interp;
  ASSERT_TRUE(it.AllocateTensors().ok());
  for (int k = 1; k <= 3; ++k) {
    float* x = it.input(0)->data_as<float>();
    for (int i = 0; i < 4; ++i) x[i] = 1.0f;
    Status st = it.Invoke();
    ASSERT_TRUE(st.ok()) << st.ToString();
    // a starts at {1,2,3,4} and grows by 1 per invoke.
    EXPECT_FLOAT_EQ(it.output(0)->data_as<float>()[0], 1.0f + k);
    EXPECT_FLOAT_EQ(it.output(0)->data_as<float>()[3], 4.0f + k);
  }
}

}  // namespace
}  // namespace edgeopt
