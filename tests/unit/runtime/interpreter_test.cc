// Interpreter mechanics, independent of the built-in kernels: custom ops through the resolver,
// memory planning, folding, zero-copy binding, dynamic shapes, resizing, cancellation,
// delegates, and several interpreters over one model.
#include <gtest/gtest.h>

#include <cstdio>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>

#include "graph/builder.h"
#include "runtime/interpreter.h"
#include "runtime/memory_planner.h"

namespace edgeopt::rt {
namespace {

// out = in + k, float32; k is the first custom-options byte. Counts invokes.
class AddK : public OpKernel {
 public:
  explicit AddK(float k, std::atomic<int>* invokes) : k_(k), invokes_(invokes) {}
  Status Prepare(KernelContext& ctx) override { return ctx.SetOutputShape(0, ctx.input(0)->shape); }
  Status Invoke(KernelContext& ctx) override {
    if (invokes_) ++*invokes_;
    const float* in = ctx.input(0)->data_as<float>();
    float* out = ctx.output(0)->data_as<float>();
    for (int64_t i = 0; i < ctx.input(0)->num_elements(); ++i) out[i] = in[i] + k_;
    return Status::Ok();
  }
  std::string variant() const override { return "addk/f32/test"; }

 private:
  float k_;
  std::atomic<int>* invokes_;
};

// Output is [n] filled with n, where n is the input's first value (data-dependent shape).
class Repeat : public OpKernel {
 public:
  Status Prepare(KernelContext& ctx) override {
    if (!ctx.in_invoke() && !ctx.input(0)->is_constant()) {
      ctx.MarkOutputDynamic(0);
      return Status::Ok();
    }
    return SetShape(ctx);
  }
  Status Invoke(KernelContext& ctx) override {
    RETURN_IF_ERROR(SetShape(ctx));
    float* out = ctx.output(0)->data_as<float>();
    for (int64_t i = 0; i < ctx.output(0)->num_elements(); ++i) out[i] = static_cast<float>(ctx.output(0)->num_elements());
    return Status::Ok();
  }
  std::string variant() const override { return "repeat/f32/test"; }

 private:
  static Status SetShape(KernelContext& ctx) {
    const int n = static_cast<int>(ctx.input(0)->data_as<float>()[0]);
    if (n < 0 || n > 1000) return ctx.Error("bad count");
    return ctx.SetOutputShape(0, {n});
  }
};

// Waits until cancelled from outside (bounded), then copies input to output.
class Slow : public OpKernel {
 public:
  explicit Slow(std::atomic<bool>* started) : started_(started) {}
  Status Prepare(KernelContext& ctx) override { return ctx.SetOutputShape(0, ctx.input(0)->shape); }
  Status Invoke(KernelContext& ctx) override {
    started_->store(true);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::memcpy(ctx.output(0)->data, ctx.input(0)->data, ctx.input(0)->bytes);
    return Status::Ok();
  }
  std::string variant() const override { return "slow/test"; }

 private:
  std::atomic<bool>* started_;
};

struct TestOps {
  std::atomic<int> add_invokes{0};
  std::atomic<bool> slow_started{false};
  std::shared_ptr<OpRegistry> registry = std::make_shared<OpRegistry>();
  TestOps() {
    registry->AddCustom("AddK", [this](const KernelCreateContext& cc) -> Expected<std::unique_ptr<OpKernel>> {
      float k = cc.op.custom_options.empty() ? 1.0f : cc.op.custom_options[0];
      return std::unique_ptr<OpKernel>(new AddK(k, &add_invokes));
    });
    registry->AddCustom("Repeat", [](const KernelCreateContext&) -> Expected<std::unique_ptr<OpKernel>> {
      return std::unique_ptr<OpKernel>(new Repeat());
    });
    registry->AddCustom("Slow", [this](const KernelCreateContext&) -> Expected<std::unique_ptr<OpKernel>> {
      return std::unique_ptr<OpKernel>(new Slow(&slow_started));
    });
  }
  InterpreterOptions Options() {
    InterpreterOptions o;
    o.op_resolver = registry;
    return o;
  }
};

// x -> AddK(1) -> AddK(2) -> ... chain of n ops.
Graph Chain(int n, std::vector<int32_t> shape = {2, 3}) {
  GraphBuilder b;
  int32_t t = b.Input("x", DType::kFloat32, shape);
  for (int i = 0; i < n; ++i) {
    char name[16];  // (GCC 12 warns falsely on "t" + std::to_string(i) here)
    std::snprintf(name, sizeof(name), "t%d", i);
    int32_t y = b.Tensor(name, DType::kFloat32, shape);
    b.CustomOp("AddK", {t}, {y}, {static_cast<uint8_t>(i + 1)});
    t = y;
  }
  b.Output(t);
  return b.Finish();
}

std::shared_ptr<const Model> ToModel(Graph g) {
  auto m = Model::FromGraph(std::move(g));
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return *m;
}

TEST(MemoryPlanner, DisjointLifetimesShareAndOverlapsNeverCollide) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<PlanItem> items;
    const int n = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      int a = static_cast<int>(rng() % 30) - 1, b = static_cast<int>(rng() % 30) - 1;
      items.push_back({std::min(a, b), std::max(a, b), 1 + rng() % 5000});
    }
    std::vector<size_t> off;
    const size_t arena = PlanArena(items, 64, &off);
    size_t sum = 0;
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(off[i] % 64, 0u);
      EXPECT_LE(off[i] + items[i].bytes, arena);
      sum += (items[i].bytes + 63) / 64 * 64;
      for (int j = 0; j < i; ++j) {
        const bool time_overlap = !(items[i].last < items[j].first || items[j].last < items[i].first);
        const bool mem_overlap = off[i] < off[j] + items[j].bytes && off[j] < off[i] + items[i].bytes;
        EXPECT_FALSE(time_overlap && mem_overlap) << "trial " << trial;
      }
    }
    EXPECT_LE(arena, sum);
  }
  // A chain a->b->c: a and c never live together, so they share.
  std::vector<PlanItem> chain = {{0, 1, 1000}, {1, 2, 1000}, {2, 3, 1000}};
  std::vector<size_t> off;
  EXPECT_EQ(PlanArena(chain, 64, &off), 2048u);
}

TEST(Interpreter, CustomOpsRunAndArenaIsShared) {
  TestOps ops;
  auto interp = Interpreter::Create(ToModel(Chain(6)), ops.Options());
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  Interpreter& it = **interp;
  ASSERT_TRUE(it.AllocateTensors().ok());
  float* in = it.input(0)->data_as<float>();
  for (int i = 0; i < 6; ++i) in[i] = static_cast<float>(i);
  ASSERT_TRUE(it.Invoke().ok());
  const float* out = it.output(0)->data_as<float>();
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(out[i], i + 21.0f);  // 1+2+...+6
  // 7 tensors of 24 bytes (64 aligned): input + output live throughout, intermediates share.
  EXPECT_LT(it.arena_bytes(), 7u * 64u);
  EXPECT_EQ(it.ops().size(), 6u);
  EXPECT_EQ(it.ops()[0].variant, "addk/f32/test");
  EXPECT_EQ(it.ops()[0].backend, "cpu");
  // Invoking again with the same inputs gives the same outputs (inputs are not overwritten).
  ASSERT_TRUE(it.Invoke().ok());
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(it.output(0)->data_as<float>()[i], i + 21.0f);
}

TEST(Interpreter, PreserveAllTensorsKeepsIntermediatesReadable) {
  TestOps ops;
  InterpreterOptions o = ops.Options();
  o.preserve_all_tensors = true;
  auto interp = Interpreter::Create(ToModel(Chain(6)), o);
  ASSERT_TRUE(interp.ok());
  Interpreter& it = **interp;
  for (int i = 0; i < 6; ++i) it.input(0)->data_as<float>()[i] = 0;
  ASSERT_TRUE(it.Invoke().ok());
  // Intermediate k holds 1+2+...+(k+1).
  for (int k = 0; k < 6; ++k) {
    const RtTensor* t = it.main().tensor(1 + k);
    EXPECT_FLOAT_EQ(t->data_as<float>()[0], (k + 1) * (k + 2) / 2.0f) << t->name();
  }
  EXPECT_GE(it.arena_bytes(), 7u * 64u);
}

TEST(Interpreter, ReshapeOutputsShareTheirInputsMemory) {
  TestOps ops;
  GraphBuilder b;
  auto x = b.Input("x", DType::kFloat32, {2, 6});
  auto a = b.Tensor("a", DType::kFloat32, {2, 6});
  b.CustomOp("AddK", {x}, {a}, {1});
  auto r = b.Tensor("r", DType::kFloat32, {3, 4});
  tflite::ReshapeOptionsT ro;
  ro.new_shape = {3, 4};
  b.Op(tflite::BuiltinOperator_RESHAPE, {a}, {r}, ro);
  auto y = b.Tensor("y", DType::kFloat32, {3, 4});
  b.CustomOp("AddK", {r}, {y}, {2});
  b.Output(y);
  auto interp = Interpreter::Create(ToModel(b.Finish()), ops.Options());
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  Interpreter& it = **interp;
  EXPECT_EQ(it.main().tensor(a)->data, it.main().tensor(r)->data);  // no copy for the reshape
  for (int i = 0; i < 12; ++i) it.input(0)->data_as<float>()[i] = static_cast<float>(i);
  ASSERT_TRUE(it.Invoke().ok());
  for (int i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(it.output(0)->data_as<float>()[i], i + 3.0f);
}

TEST(Interpreter, MissingCustomOpAndUnknownBuiltinFailAtCreate) {
  auto g = Chain(2);
  auto interp = Interpreter::Create(ToModel(g));  // no resolver: AddK is unknown
  ASSERT_FALSE(interp.ok());
  EXPECT_EQ(interp.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(interp.status().message().find("op 0"), std::string::npos) << interp.status().message();
  EXPECT_NE(interp.status().message().find("'AddK'"), std::string::npos) << interp.status().message();

  GraphBuilder b;
  auto x = b.Input("x", DType::kFloat32, {1});
  auto y = b.Tensor("y", DType::kFloat32, {1});
  b.Op(static_cast<tflite::BuiltinOperator>(4000), {x}, {y});
  b.Output(y);
  auto interp2 = Interpreter::Create(ToModel(b.Finish()));
  ASSERT_FALSE(interp2.ok());
  EXPECT_NE(interp2.status().message().find("code 4000"), std::string::npos) << interp2.status().message();
}

TEST(Interpreter, ConstantInputsAreFoldedOnce) {
  TestOps ops;
  GraphBuilder b;
  auto c = b.Const<float>("c", DType::kFloat32, {2}, {1.0f, 2.0f});
  auto c2 = b.Tensor("c2", DType::kFloat32, {2});
  b.CustomOp("AddK", {c}, {c2}, {10});
  auto x = b.Input("x", DType::kFloat32, {2});
  auto y = b.Tensor("y", DType::kFloat32, {2});
  b.CustomOp("AddK", {x}, {y}, {1});
  b.Output(y);
  b.Output(c2);
  auto interp = Interpreter::Create(ToModel(b.Finish()), ops.Options());
  ASSERT_TRUE(interp.ok());
  // Custom ops are never folded (their semantics are unknown).
  ASSERT_TRUE((*interp)->AllocateTensors().ok());
  EXPECT_FALSE((*interp)->ops()[0].folded);
}

TEST(Interpreter, ZeroCopyBindingReadsAndWritesCallerBuffers) {
  TestOps ops;
  auto interp = Interpreter::Create(ToModel(Chain(2)), ops.Options());
  ASSERT_TRUE(interp.ok());
  Interpreter& it = **interp;
  alignas(64) float in[6] = {0, 1, 2, 3, 4, 5};
  alignas(64) float out[6] = {};
  ASSERT_TRUE(it.BindInput(0, in, sizeof(in)).ok());
  ASSERT_TRUE(it.BindOutput(0, out, sizeof(out)).ok());
  ASSERT_TRUE(it.Invoke().ok());
  EXPECT_EQ(it.input(0)->data, reinterpret_cast<uint8_t*>(in));
  EXPECT_EQ(it.output(0)->data, reinterpret_cast<uint8_t*>(out));
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(out[i], i + 3.0f);
  in[0] = 100;  // no copy: the next invoke sees the new value
  ASSERT_TRUE(it.Invoke().ok());
  EXPECT_FLOAT_EQ(out[0], 103.0f);
  // Too small a buffer is refused.
  float small[2];
  EXPECT_FALSE(it.BindInput(0, small, sizeof(small)).ok());
}

TEST(Interpreter, DynamicOutputShapes) {
  TestOps ops;
  GraphBuilder b;
  auto x = b.Input("x", DType::kFloat32, {1});
  auto r = b.Tensor("r", DType::kFloat32, {0});
  b.CustomOp("Repeat", {x}, {r});
  auto y = b.Tensor("y", DType::kFloat32, {0});
  b.CustomOp("AddK", {r}, {y}, {1});
  b.Output(y);
  auto interp = Interpreter::Create(ToModel(b.Finish()), ops.Options());
  ASSERT_TRUE(interp.ok());
  Interpreter& it = **interp;
  ASSERT_TRUE(it.AllocateTensors().ok());
  for (int n : {3, 7, 2}) {
    it.input(0)->data_as<float>()[0] = static_cast<float>(n);
    ASSERT_TRUE(it.Invoke().ok());
    ASSERT_EQ(it.output(0)->shape, Shape{n});
    for (int i = 0; i < n; ++i) EXPECT_FLOAT_EQ(it.output(0)->data_as<float>()[i], n + 1.0f);
  }
  it.input(0)->data_as<float>()[0] = -5;
  Status st = it.Invoke();
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("op 0 (Repeat)"), std::string::npos) << st.message();
}

TEST(Interpreter, ResizeInputReplansAndRespectsShapeSignature) {
  TestOps ops;
  Graph g = Chain(3, {1, 4});
  g.main().tensors[g.main().inputs[0]].shape_signature = {-1, 4};
  auto interp = Interpreter::Create(ToModel(g), ops.Options());
  ASSERT_TRUE(interp.ok());
  Interpreter& it = **interp;
  ASSERT_TRUE(it.ResizeInput(0, {5, 4}).ok());
  ASSERT_TRUE(it.AllocateTensors().ok());
  for (int i = 0; i < 20; ++i) it.input(0)->data_as<float>()[i] = static_cast<float>(i);
  ASSERT_TRUE(it.Invoke().ok());
  EXPECT_EQ(it.output(0)->shape, (Shape{5, 4}));
  EXPECT_FLOAT_EQ(it.output(0)->data_as<float>()[19], 25.0f);
  Status st = it.ResizeInput(0, {5, 3});  // the fixed dimension cannot change
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("cannot resize"), std::string::npos) << st.message();
}

TEST(Interpreter, CancelStopsAtTheNextOpBoundary) {
  TestOps ops;
  GraphBuilder b;
  int32_t t = b.Input("x", DType::kFloat32, {4});
  for (int i = 0; i < 50; ++i) {
    char name[16];  // (GCC 12 warns falsely on "t" + std::to_string(i) here)
    std::snprintf(name, sizeof(name), "s%d", i);
    int32_t y = b.Tensor(name, DType::kFloat32, {4});
    b.CustomOp("Slow", {t}, {y});
    t = y;
  }
  b.Output(t);
  auto interp = Interpreter::Create(ToModel(b.Finish()), ops.Options());
  ASSERT_TRUE(interp.ok());
  Interpreter& it = **interp;
  ASSERT_TRUE(it.AllocateTensors().ok());
  std::thread canceller([&] {
    while (!ops.slow_started.load()) std::this_thread::yield();
    it.Cancel();
  });
  Status st = it.Invoke();
  canceller.join();
  EXPECT_EQ(st.code(), StatusCode::kCancelled) << st.ToString();
  // The next invoke runs normally.
  ops.slow_started = false;
  EXPECT_TRUE(it.Invoke().ok());
}

TEST(Interpreter, SeveralInterpretersShareOneModel) {
  TestOps ops;
  auto model = ToModel(Chain(4));
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] {
      auto interp = Interpreter::Create(model, ops.Options());
      if (!interp.ok()) return;
      Interpreter& it = **interp;
      if (!it.AllocateTensors().ok()) return;
      for (int rep = 0; rep < 50; ++rep) {
        for (int i = 0; i < 6; ++i) it.input(0)->data_as<float>()[i] = static_cast<float>(k * 10 + i);
        if (!it.Invoke().ok()) return;
        for (int i = 0; i < 6; ++i)
          if (it.output(0)->data_as<float>()[i] != k * 10 + i + 10.0f) return;
      }
      ++good;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(good.load(), 4);
}

// A delegate that claims every AddK op and runs a partition as one step.
class AddKDelegate : public Delegate {
 public:
  std::string name() const override { return "test-delegate"; }
  std::vector<int> SupportedOps(const Graph& g, int sg) override {
    std::vector<int> out;
    for (size_t i = 0; i < g.subgraphs[sg].ops.size(); ++i)
      if (g.subgraphs[sg].ops[i].custom_code == "AddK") out.push_back(static_cast<int>(i));
    return out;
  }
  Expected<std::unique_ptr<OpKernel>> CreatePartitionKernel(const Graph& g, int sg, std::span<const int> ops,
                                                             const Operator& partition) override {
    float total = 0;
    for (int op : ops) total += g.subgraphs[sg].ops[op].custom_options[0];
    partitions.push_back({partition.inputs, partition.outputs});
    return std::unique_ptr<OpKernel>(new AddK(total, nullptr));
  }
  std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>> partitions;
};

TEST(Interpreter, DelegateClaimsPartitionsAndIsReported) {
  TestOps ops;
  GraphBuilder b;
  int32_t x = b.Input("x", DType::kFloat32, {3});
  int32_t a = b.Tensor("a", DType::kFloat32, {3});
  b.CustomOp("AddK", {x}, {a}, {1});
  int32_t c = b.Tensor("c", DType::kFloat32, {3});
  b.CustomOp("AddK", {a}, {c}, {2});
  int32_t d = b.Tensor("d", DType::kFloat32, {3});
  b.CustomOp("Slow", {c}, {d});  // not claimed: splits the partitions
  int32_t e = b.Tensor("e", DType::kFloat32, {3});
  b.CustomOp("AddK", {d}, {e}, {4});
  b.Output(e);
  auto del = std::make_shared<AddKDelegate>();
  InterpreterOptions o = ops.Options();
  o.delegates.push_back(del);
  auto interp = Interpreter::Create(ToModel(b.Finish()), o);
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  Interpreter& it = **interp;
  ASSERT_EQ(del->partitions.size(), 2u);
  EXPECT_EQ(del->partitions[0].first, std::vector<int32_t>{x});
  EXPECT_EQ(del->partitions[0].second, std::vector<int32_t>{c});  // a stays inside
  auto infos = it.ops();
  ASSERT_EQ(infos.size(), 4u);
  EXPECT_EQ(infos[0].backend, "test-delegate");
  EXPECT_EQ(infos[1].backend, "test-delegate");
  EXPECT_EQ(infos[2].backend, "cpu");
  EXPECT_EQ(infos[3].backend, "test-delegate");
  ASSERT_TRUE(it.AllocateTensors().ok());
  for (int i = 0; i < 3; ++i) it.input(0)->data_as<float>()[i] = static_cast<float>(i);
  ASSERT_TRUE(it.Invoke().ok());
  EXPECT_FLOAT_EQ(it.output(0)->data_as<float>()[2], 9.0f);
}

TEST(Interpreter, ProfilingRecordsEveryExecutedOp) {
  TestOps ops;
  auto interp = Interpreter::Create(ToModel(Chain(5)), ops.Options());
  ASSERT_TRUE(interp.ok());
  Interpreter& it = **interp;
  it.EnableProfiling(true);
  ASSERT_TRUE(it.Invoke().ok());
  ASSERT_EQ(it.last_profile().size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(it.last_profile()[i].op_index, static_cast<int>(i));
    EXPECT_LE(it.last_profile()[i].begin_ns, it.last_profile()[i].end_ns);
  }
  // One clock read per op boundary: each op begins exactly where the previous one ended, so the
  // per-op times add up to the profiled invoke with nothing lost between ops.
  for (size_t i = 1; i < 5; ++i) EXPECT_EQ(it.last_profile()[i].begin_ns, it.last_profile()[i - 1].end_ns);
  // A second invoke reuses the buffers and records the same ops again (not appended).
  ASSERT_TRUE(it.Invoke().ok());
  EXPECT_EQ(it.last_profile().size(), 5u);
  const std::vector<OpTiming> profiled = it.last_profile();
  it.EnableProfiling(false);
  ASSERT_TRUE(it.Invoke().ok());
  // The last profiled invoke stays readable, unchanged by unprofiled ones.
  ASSERT_EQ(it.last_profile().size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(it.last_profile()[i].begin_ns, profiled[i].begin_ns);
    EXPECT_EQ(it.last_profile()[i].end_ns, profiled[i].end_ns);
  }
  // A profiled invoke after that replaces it (ticks become times when asked for).
  it.EnableProfiling(true);
  ASSERT_TRUE(it.Invoke().ok());
  ASSERT_EQ(it.last_profile().size(), 5u);
  EXPECT_GE(it.last_profile()[0].begin_ns, profiled[4].end_ns);
}

TEST(Interpreter, ProfilerCostPerOpIsMeasured) {
  const double ns = ProfilerCostPerOpNs();
  EXPECT_GT(ns, 0.0);
  EXPECT_TRUE(std::isfinite(ns));
}

// Thread tuning (InterpreterOptions::tune_op_threads). The test kernels copy input to output and
// busy-wait: split_us when the pool splits their work (num_threads() > 1), alone_us when the
// op runs alone, and count their invokes alone. The two times differ by 6x or more, so the
// choice is never close, even with a noisy neighbour.
class Timed : public OpKernel {
 public:
  Timed(double split_us, double alone_us, std::atomic<int>* alone_runs)
      : split_us_(split_us), alone_us_(alone_us), alone_runs_(alone_runs) {}
  Status Prepare(KernelContext& ctx) override { return ctx.SetOutputShape(0, ctx.input(0)->shape); }
  Status Invoke(KernelContext& ctx) override {
    const bool alone = ctx.threads().num_threads() == 1;
    if (alone) alone_runs_->fetch_add(1);
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double, std::micro>(alone ? alone_us_ : split_us_);
    while (std::chrono::steady_clock::now() < end) {
    }
    std::memcpy(ctx.output(0)->data, ctx.input(0)->data, ctx.input(0)->bytes);
    return Status::Ok();
  }
  std::string variant() const override { return "timed/test"; }

 private:
  double split_us_, alone_us_;
  std::atomic<int>* alone_runs_;
};

struct TimedOps {
  // Per op kind: invokes that ran alone.
  std::atomic<int> lose{0}, gain{0}, big{0}, mid{0}, near{0};
  std::shared_ptr<OpRegistry> registry = std::make_shared<OpRegistry>();
  TimedOps() {
    // Small, and slower split (the fork and join of a tiny op): should run alone.
    registry->AddCustom("LoseSplit", [this](const KernelCreateContext&) -> Expected<std::unique_ptr<OpKernel>> {
      return std::unique_ptr<OpKernel>(new Timed(36, 3, &lose));
    });
    // Small and faster split: stays split.
    registry->AddCustom("GainSplit", [this](const KernelCreateContext&) -> Expected<std::unique_ptr<OpKernel>> {
      return std::unique_ptr<OpKernel>(new Timed(5, 30, &gain));
    });
    // Large (over the 50 us candidate limit split) and faster split: never tried alone on its
    // own; the whole-invoke trials run it alone with every other op and find that slower.
    registry->AddCustom("Big", [this](const KernelCreateContext&) -> Expected<std::unique_ptr<OpKernel>> {
      return std::unique_ptr<OpKernel>(new Timed(300, 450, &big));
    });
  }
  // Over the candidate limit and faster alone (an op whose split leaves its output in the other
  // core's cache for the next op): only the whole-invoke trials run it alone.
  void AddMid() {
    registry->AddCustom("Mid", [this](const KernelCreateContext&) -> Expected<std::unique_ptr<OpKernel>> {
      return std::unique_ptr<OpKernel>(new Timed(400, 300, &mid));
    });
  }
  // Over the candidate limit and a little (1/11) faster alone.
  void AddNear() {
    registry->AddCustom("Near", [this](const KernelCreateContext&) -> Expected<std::unique_ptr<OpKernel>> {
      return std::unique_ptr<OpKernel>(new Timed(440, 400, &near));
    });
  }
  InterpreterOptions Options(int threads, bool tune) {
    InterpreterOptions o;
    o.op_resolver = registry;
    o.num_threads = threads;
    o.tune_op_threads = tune;
    return o;
  }
};

// x -> kinds[0] -> kinds[1] -> ..., custom ops on [n] float32 (n resizable).
Graph CustomChain(const std::vector<const char*>& kinds) {
  GraphBuilder b;
  int32_t t = b.Input("x", DType::kFloat32, {4});
  for (size_t i = 0; i < kinds.size(); ++i) {
    char name[32];
    std::snprintf(name, sizeof(name), "t%d", static_cast<int>(i));
    const int32_t y = b.Tensor(name, DType::kFloat32, {4});
    b.CustomOp(kinds[i], {t}, {y}, {});
    t = y;
  }
  b.Output(t);
  return b.Finish();
}

Graph TimedChain() { return CustomChain({"LoseSplit", "GainSplit", "Big", "LoseSplit"}); }

std::vector<int> OpThreads(const Interpreter& it) {
  std::vector<int> v;
  for (const OpInfo& op : it.ops()) v.push_back(op.threads);
  return v;
}

TEST(Interpreter, ThreadTuningRunsAloneOnlySmallOpsThatLoseFromSplitting) {
  TimedOps ops;
  auto interp = Interpreter::Create(ToModel(TimedChain()), ops.Options(2, true));
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  Interpreter& it = **interp;
  EXPECT_EQ(OpThreads(it), (std::vector<int>{2, 2, 2, 2}));  // nothing decided before timing
  for (int i = 0; i < 4; ++i) it.input(0)->data_as<float>()[i] = static_cast<float>(i);
  // The cold invoke, 2 timed split, 3 pairs alone / split: decided by the end of invoke 9.
  for (int i = 0; i < 9; ++i) ASSERT_TRUE(it.Invoke().ok());
  EXPECT_EQ(OpThreads(it), (std::vector<int>{1, 2, 2, 1}));
  EXPECT_EQ(ops.big.load(), 0);
  EXPECT_FALSE(it.threads().serial());  // cleared after every op
  EXPECT_EQ(it.num_threads(), 2);
  // From then on one pair of timed invokes in 32 tries the other mode: over 64 invokes the
  // LoseSplit ops run alone in all but 2 each, GainSplit alone in 2. Every op alone is also
  // timed (whole-invoke mode): in 3 pairs (invokes 10-15), then in the first period's trial;
  // far slower (486 us against 311), the trials then come in every other period only, and the
  // second period's is skipped. Those 4 run GainSplit and Big alone.
  ops.lose = ops.gain = 0;
  for (int i = 0; i < 64; ++i) ASSERT_TRUE(it.Invoke().ok());
  EXPECT_EQ(ops.lose.load(), 2 * 62);
  EXPECT_EQ(ops.gain.load(), 2 + 4);
  EXPECT_EQ(ops.big.load(), 4);
  EXPECT_EQ(OpThreads(it), (std::vector<int>{1, 2, 2, 1}));
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(it.output(0)->data_as<float>()[i], static_cast<float>(i));
  // New shapes restart the tuning: every op split until timed again.
  ASSERT_TRUE(it.AllocateTensors().ok());
  EXPECT_EQ(OpThreads(it), (std::vector<int>{2, 2, 2, 2}));
  for (int i = 0; i < 9; ++i) ASSERT_TRUE(it.Invoke().ok());
  EXPECT_EQ(OpThreads(it), (std::vector<int>{1, 2, 2, 1}));
}

// A WHILE whose body runs a LoseSplit op and a Big one (x = Big(LoseSplit(x)); i = i + 1 while
// i < 4): the body's subgraph tunes its own ops (4 body invokes per outer invoke), and the pool's
// serial mode set around an inner op is back to the outer op's when it returns. (Big keeps the
// WHILE itself over the candidate limit: a WHILE run alone runs its body alone, and a body op's
// times are then booked as alone, interpreter.cc.)
Graph TimedWhile(bool big) {
  GraphBuilder b;
  const int32_t i0 = b.Input("i", DType::kInt32, {});
  const int32_t x0 = b.Input("x", DType::kFloat32, {4});
  const int32_t i1 = b.Tensor("i_out", DType::kInt32, {});
  const int32_t x1 = b.Tensor("x_out", DType::kFloat32, {4});
  tflite::WhileOptionsT wo;
  wo.cond_subgraph_index = 1;
  wo.body_subgraph_index = 2;
  b.Op(tflite::BuiltinOperator_WHILE, {i0, x0}, {i1, x1}, wo);
  b.Output(i1);
  b.Output(x1);
  b.NewSubgraph("cond");
  {
    const int32_t i = b.Input("i", DType::kInt32, {});
    b.Input("x", DType::kFloat32, {4});
    const int32_t four = b.Const<int32_t>("four", DType::kInt32, {}, {4});
    const int32_t less = b.Tensor("less", DType::kBool, {});
    b.Op(tflite::BuiltinOperator_LESS, {i, four}, {less});
    b.Output(less);
  }
  b.NewSubgraph("body");
  {
    const int32_t i = b.Input("i", DType::kInt32, {});
    const int32_t x = b.Input("x", DType::kFloat32, {4});
    const int32_t one = b.Const<int32_t>("one", DType::kInt32, {}, {1});
    const int32_t i_next = b.Tensor("i_next", DType::kInt32, {});
    tflite::AddOptionsT ao;
    b.Op(tflite::BuiltinOperator_ADD, {i, one}, {i_next}, ao);
    const int32_t x_mid = b.Tensor("x_mid", DType::kFloat32, {4});
    b.CustomOp("LoseSplit", {x}, {x_mid}, {});
    int32_t x_next = x_mid;
    if (big) {
      x_next = b.Tensor("x_next", DType::kFloat32, {4});
      b.CustomOp("Big", {x_mid}, {x_next}, {});
    }
    b.Output(i_next);
    b.Output(x_next);
  }
  return b.Finish();
}

TEST(Interpreter, ThreadTuningInsideAWhileBody) {
  TimedOps ops;
  auto interp = Interpreter::Create(ToModel(TimedWhile(true)), ops.Options(2, true));
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  Interpreter& it = **interp;
  auto run = [&] {
    it.input(0)->data_as<int32_t>()[0] = 0;
    for (int k = 0; k < 4; ++k) it.input(1)->data_as<float>()[k] = static_cast<float>(k);
    ASSERT_TRUE(it.Invoke().ok());
    EXPECT_EQ(it.output(0)->data_as<int32_t>()[0], 4);
    for (int k = 0; k < 4; ++k) EXPECT_FLOAT_EQ(it.output(1)->data_as<float>()[k], static_cast<float>(k));
    EXPECT_FALSE(it.threads().serial());
  };
  // The body's tuning ends after its 9th invoke, within the 3rd outer invoke.
  for (int i = 0; i < 3; ++i) run();
  ops.lose = 0;
  // 16 outer invokes = 64 body invokes: one timed pair in every 32 flips the op back to split
  // (twice in this window). The body's whole-invoke trials (every op alone) run Big alone: its
  // 3 first pairs' and its first period's, all in this window; far slower, the next period
  // skips its trial. The main subgraph runs one node (the WHILE): no whole-invoke trials there.
  for (int i = 0; i < 16; ++i) run();
  EXPECT_EQ(ops.lose.load(), 62);
  EXPECT_EQ(ops.big.load(), 4);

  // Without Big the WHILE itself is small, and the main subgraph times it alone now and then:
  // its body's ops then run alone in their "split" invokes. Booked as split, those times made the
  // body's op look no slower split, and it ran split for 32 body invokes at a time (half of them
  // here); booked as alone, it runs split only in the timed pairs: at most 1 in 32 body invokes
  // (320 here) and a few more while the main subgraph's first pairs run.
  TimedOps ops2;
  auto small = Interpreter::Create(ToModel(TimedWhile(false)), ops2.Options(2, true));
  ASSERT_TRUE(small.ok()) << small.status().ToString();
  for (int i = 0; i < 3 + 80; ++i) {
    if (i == 3) ops2.lose = 0;
    (*small)->input(0)->data_as<int32_t>()[0] = 0;
    ASSERT_TRUE((*small)->Invoke().ok());
    EXPECT_FALSE((*small)->threads().serial());
  }
  EXPECT_GE(ops2.lose.load(), 4 * 80 - 16);
}

// Whole-invoke mode. Heavy is a little faster split (10 us against 12 alone), so per op it
// stays split; Light takes 20 us split and alone 3 us after a Heavy that ran alone but 40 us after
// one that ran split (as an op reading what the other core wrote). Per op, Light alone looks
// fast only in the trials where every candidate runs alone, and the per-op choices (Heavy split,
// Light alone: 100 us) lose to every op alone (30 us), which only timing whole invokes shows.
class Chained : public OpKernel {
 public:
  Chained(bool heavy, std::atomic<bool>* heavy_split, std::atomic<int>* alone_runs)
      : heavy_(heavy), heavy_split_(heavy_split), alone_runs_(alone_runs) {}
  Status Prepare(KernelContext& ctx) override { return ctx.SetOutputShape(0, ctx.input(0)->shape); }
  Status Invoke(KernelContext& ctx) override {
    const bool alone = ctx.threads().num_threads() == 1;
    if (alone) alone_runs_->fetch_add(1);
    const double us = heavy_ ? (alone ? 12 : 10) : !alone ? 20 : heavy_split_->load() ? 40 : 3;
    if (heavy_) heavy_split_->store(!alone);
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double, std::micro>(us);
    while (std::chrono::steady_clock::now() < end) {
    }
    std::memcpy(ctx.output(0)->data, ctx.input(0)->data, ctx.input(0)->bytes);
    return Status::Ok();
  }
  std::string variant() const override { return heavy_ ? "heavy/test" : "light/test"; }

 private:
  bool heavy_;
  std::atomic<bool>* heavy_split_;
  std::atomic<int>* alone_runs_;
};

TEST(Interpreter, ThreadTuningRunsSmallInvokesWithEveryOpAloneWhenThatIsFaster) {
  std::atomic<bool> heavy_split{false};
  std::atomic<int> heavy_alone{0}, light_alone{0};
  auto registry = std::make_shared<OpRegistry>();
  registry->AddCustom("Heavy", [&](const KernelCreateContext&) -> Expected<std::unique_ptr<OpKernel>> {
    return std::unique_ptr<OpKernel>(new Chained(true, &heavy_split, &heavy_alone));
  });
  registry->AddCustom("Light", [&](const KernelCreateContext&) -> Expected<std::unique_ptr<OpKernel>> {
    return std::unique_ptr<OpKernel>(new Chained(false, &heavy_split, &light_alone));
  });
  InterpreterOptions o;
  o.op_resolver = registry;
  o.num_threads = 2;
  auto interp = Interpreter::Create(ToModel(CustomChain({"Heavy", "Light", "Heavy", "Light"})), o);
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  Interpreter& it = **interp;
  // The cold invoke, 2 timed split, 3 per-op pairs, 3 whole-invoke pairs: decided by invoke 15.
  for (int i = 0; i < 15; ++i) ASSERT_TRUE(it.Invoke().ok());
  EXPECT_EQ(OpThreads(it), (std::vector<int>{1, 1, 1, 1}));
  // From then on, in every 32 invokes one (the whole-invoke trial) runs the per-op choices: Heavy
  // split. Over 64 invokes each Heavy runs alone in 62.
  heavy_alone = 0;
  for (int i = 0; i < 64; ++i) ASSERT_TRUE(it.Invoke().ok());
  EXPECT_EQ(heavy_alone.load(), 2 * 62);
  EXPECT_FALSE(it.threads().serial());
  EXPECT_EQ(OpThreads(it), (std::vector<int>{1, 1, 1, 1}));
}

// A small invoke whose ops gain from splitting stays split; its whole-invoke trials (one in 32
// invokes, besides the per-op trial) are what it pays for being small.
TEST(Interpreter, ThreadTuningKeepsSmallInvokesSplitWhenSplittingPays) {
  TimedOps ops;
  auto interp = Interpreter::Create(ToModel(CustomChain({"GainSplit", "GainSplit"})), ops.Options(2, true));
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  for (int i = 0; i < 15; ++i) ASSERT_TRUE((*interp)->Invoke().ok());
  EXPECT_EQ(OpThreads(**interp), (std::vector<int>{2, 2}));
  ops.gain = 0;
  // Over 64 invokes: 2 per-op trials, and 1 whole-invoke trial: every op alone took 6x as long
  // (far slower), so the next period skips its trial.
  for (int i = 0; i < 64; ++i) ASSERT_TRUE((*interp)->Invoke().ok());
  EXPECT_EQ(ops.gain.load(), 2 * (2 + 1));
  EXPECT_EQ(OpThreads(**interp), (std::vector<int>{2, 2}));
}

// Not only small invokes: a 0.4 ms one whose large op is faster alone (which per-op trials never
// try) runs with every op alone (MediaPipe's face detectors: 0.83x at 2 threads before); its
// whole-invoke trial (the per-op choices) then comes once in every period.
TEST(Interpreter, ThreadTuningRunsLargerInvokesWithEveryOpAloneWhenThatIsFaster) {
  TimedOps ops;
  ops.AddMid();
  auto interp = Interpreter::Create(ToModel(CustomChain({"LoseSplit", "Mid", "LoseSplit"})), ops.Options(2, true));
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  for (int i = 0; i < 15; ++i) ASSERT_TRUE((*interp)->Invoke().ok());
  EXPECT_EQ(OpThreads(**interp), (std::vector<int>{1, 1, 1}));
  ops.mid = 0;
  for (int i = 0; i < 64; ++i) ASSERT_TRUE((*interp)->Invoke().ok());
  EXPECT_EQ(ops.mid.load(), 62);
  EXPECT_FALSE((*interp)->threads().serial());
}

// Whole invokes are compared with a narrower margin than single ops: every op alone 9% faster
// than the per-op choices (0.80 ms against 0.88) is enough (a margin of 1/8 kept it split).
TEST(Interpreter, ThreadTuningRunsEveryOpAloneWhenThatIsAFewPercentFaster) {
  TimedOps ops;
  ops.AddNear();
  auto interp = Interpreter::Create(ToModel(CustomChain({"Near", "Near"})), ops.Options(2, true));
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  for (int i = 0; i < 15; ++i) ASSERT_TRUE((*interp)->Invoke().ok());
  EXPECT_EQ(OpThreads(**interp), (std::vector<int>{1, 1}));
  ops.near = 0;
  for (int i = 0; i < 64; ++i) ASSERT_TRUE((*interp)->Invoke().ok());
  EXPECT_EQ(ops.near.load(), 2 * 62);  // the two whole-invoke trials run the per-op choices
}

TEST(Interpreter, ThreadTuningOffOrOneThreadSplitsEveryOp) {
  for (const auto& [threads, tune] : {std::pair{2, false}, std::pair{1, true}}) {
    TimedOps ops;
    auto interp = Interpreter::Create(ToModel(TimedChain()), ops.Options(threads, tune));
    ASSERT_TRUE(interp.ok()) << interp.status().ToString();
    for (int i = 0; i < 20; ++i) ASSERT_TRUE((*interp)->Invoke().ok());
    EXPECT_EQ(OpThreads(**interp), std::vector<int>(4, threads));
    // With one thread every op runs "alone"; with tuning off none does.
    EXPECT_EQ(ops.lose.load(), threads == 1 ? 40 : 0);
    EXPECT_EQ(ops.gain.load(), threads == 1 ? 20 : 0);
  }
}

}  // namespace
}  // namespace edgeopt::rt
