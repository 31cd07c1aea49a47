// The public C++ API (include/edgeopt/edgeopt.h). Models are built in memory; everything after
// that goes through the public API only.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include <unistd.h>

#include "edgeopt/edgeopt.h"
#include "unit/api/test_models.h"

namespace edgeopt {
namespace {

using api_test::AddKChain;
using api_test::Serialize;

std::shared_ptr<const Model> Load(const Graph& g) {
  auto bytes = Serialize(g);
  auto m = Model::FromBuffer(bytes.data(), bytes.size());
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? *m : nullptr;
}

// out = in + k (float32); k is the first custom-options byte.
class AddK : public CustomKernel {
 public:
  explicit AddK(float k) : k_(k) {}
  Status Prepare(CustomKernelContext& ctx) override {
    if (!ctx.input(0).has_type<float>()) return ctx.Error("wants float32");
    return ctx.SetOutputShape(0, ctx.input(0).shape());
  }
  Status Invoke(CustomKernelContext& ctx) override {
    auto in = ctx.input(0).data_as<const float>();
    auto out = ctx.output(0).data_as<float>();
    if (in.size() != out.size()) return ctx.Error("size mismatch");
    for (size_t i = 0; i < in.size(); ++i) out[i] = in[i] + k_;
    return Status::Ok();
  }
  std::string variant() const override { return "addk/f32/public"; }

 private:
  float k_;
};

CustomOp AddKOp() {
  return {"AddK", [](const CustomOpInfo& info) -> Expected<std::unique_ptr<CustomKernel>> {
            if (info.inputs.size() != 1 || info.outputs.size() != 1) return InvalidArgument("AddK takes one input");
            const float k = info.custom_options.empty() ? 1.0f : info.custom_options[0];
            return std::unique_ptr<CustomKernel>(new AddK(k));
          }};
}

InterpreterOptions WithAddK() {
  InterpreterOptions o;
  o.custom_ops.push_back(AddKOp());
  return o;
}

std::unique_ptr<Interpreter> Make(const Graph& g, const InterpreterOptions& o = WithAddK()) {
  auto it = Interpreter::Create(Load(g), o);
  EXPECT_TRUE(it.ok()) << it.status().ToString();
  return it.ok() ? std::move(*it) : nullptr;
}

TEST(PublicApi, LoadErrorsAreValues) {
  auto missing = Model::FromFile("/nonexistent/dir/model.tflite");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/nonexistent/dir/model.tflite"), std::string::npos);

  const char garbage[] = "this is not a flatbuffer at all, not even close......";
  auto bad = Model::FromBuffer(garbage, sizeof(garbage));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidModel) << bad.status().ToString();

  EXPECT_FALSE(Model::FromBuffer(nullptr, 100).ok());
  EXPECT_FALSE(Model::FromBuffer(garbage, 0).ok());

  auto none = Interpreter::Create(nullptr);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidArgument);

  // A custom op without a kernel fails at creation, naming the op.
  auto no_kernel = Interpreter::Create(Load(AddKChain(2)));
  ASSERT_FALSE(no_kernel.ok());
  EXPECT_EQ(no_kernel.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(no_kernel.status().message().find("op 0"), std::string::npos) << no_kernel.status().message();
  EXPECT_NE(no_kernel.status().message().find("'AddK'"), std::string::npos) << no_kernel.status().message();

  // Bad options are refused with a message.
  InterpreterOptions dup = WithAddK();
  dup.custom_ops.push_back(AddKOp());
  auto twice = Interpreter::Create(Load(AddKChain(1)), dup);
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("registered twice"), std::string::npos);
  InterpreterOptions no_create;
  no_create.custom_ops.push_back({"AddK", nullptr});
  EXPECT_FALSE(Interpreter::Create(Load(AddKChain(1)), no_create).ok());
}

TEST(PublicApi, FromFileMapsAModel) {
  const auto path = std::filesystem::temp_directory_path() / ("edgeopt_api_test_" + std::to_string(::getpid()) + ".tflite");
  auto bytes = Serialize(AddKChain(3));
  {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  auto model = Model::FromFile(path.string());
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto it = Interpreter::Create(*model, WithAddK());
  ASSERT_TRUE(it.ok()) << it.status().ToString();
  std::filesystem::remove(path);  // the mapping stays valid
  const float x[6] = {0, 1, 2, 3, 4, 5};
  ASSERT_TRUE((*it)->input(0).CopyFrom(x, sizeof(x)).ok());
  ASSERT_TRUE((*it)->Invoke().ok());
  EXPECT_FLOAT_EQ((*it)->output(0).data_as<const float>()[5], 11.0f);
}

TEST(PublicApi, ModelMetadata) {
  auto model = Load(AddKChain(3));
  ASSERT_TRUE(model);
  EXPECT_EQ(model->description(), "addk chain");
  EXPECT_EQ(model->num_subgraphs(), 1);
  EXPECT_EQ(model->num_ops(), 3);
  ASSERT_EQ(model->inputs().size(), 1u);
  EXPECT_EQ(model->inputs()[0].name, "x");
  EXPECT_EQ(model->inputs()[0].type, DType::kFloat32);
  EXPECT_EQ(model->inputs()[0].shape, (std::vector<int32_t>{2, 3}));
  ASSERT_EQ(model->outputs().size(), 1u);
  EXPECT_EQ(model->outputs()[0].name, "t2");
  EXPECT_TRUE(model->signature_keys().empty());

  auto sig = Load(api_test::TwoSignatures());
  ASSERT_TRUE(sig);
  EXPECT_EQ(sig->signature_keys(), (std::vector<std::string>{"add", "add_more"}));
  auto infos = sig->signatures();
  ASSERT_EQ(infos.size(), 2u);
  EXPECT_EQ(infos[1].input_names, std::vector<std::string>{"values"});
  EXPECT_EQ(infos[1].output_names, std::vector<std::string>{"result"});
  EXPECT_STREQ(Version(), "0.1.0");
}

TEST(PublicApi, RunsCustomOpsAndReportsThem) {
  auto it = Make(AddKChain(4));
  ASSERT_TRUE(it);
  EXPECT_EQ(it->num_inputs(), 1);
  EXPECT_EQ(it->num_outputs(), 1);
  auto x = it->input(0).data_as<float>();
  ASSERT_EQ(x.size(), 6u);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  ASSERT_TRUE(it->Invoke().ok());
  auto y = it->output(0).data_as<const float>();
  ASSERT_EQ(y.size(), 6u);
  for (size_t i = 0; i < y.size(); ++i) EXPECT_FLOAT_EQ(y[i], i + 10.0f);
  auto ops = it->ops();
  ASSERT_EQ(ops.size(), 4u);
  EXPECT_EQ(ops[0].type, "AddK");
  EXPECT_EQ(ops[0].variant, "addk/f32/public");
  EXPECT_EQ(ops[0].backend, "cpu");
  EXPECT_EQ(it->num_threads(), 1);
  EXPECT_GT(it->arena_bytes(), 0u);
  EXPECT_EQ(it->packed_weight_bytes(), 0u);
  EXPECT_EQ(it->model().num_ops(), 4);
}

TEST(PublicApi, LookupByNameAndEmptyViews) {
  auto it = Make(AddKChain(2));
  ASSERT_TRUE(it);
  EXPECT_TRUE(it->input("x").ok());
  EXPECT_EQ(it->input("x").name(), "x");
  EXPECT_TRUE(it->output("t1").ok());
  EXPECT_EQ(it->input_index("x"), 0);
  EXPECT_EQ(it->output_index("nope"), -1);

  TensorView missing = it->input("nope");
  EXPECT_FALSE(missing.ok());
  EXPECT_FALSE(missing);
  EXPECT_EQ(missing.name(), "");
  EXPECT_TRUE(missing.shape().empty());
  EXPECT_EQ(missing.bytes(), 0u);
  EXPECT_EQ(missing.data(), nullptr);
  EXPECT_TRUE(missing.data_as<float>().empty());
  float buf[1];
  EXPECT_FALSE(missing.CopyFrom(buf, sizeof(buf)).ok());
  EXPECT_FALSE(missing.CopyTo(buf, sizeof(buf)).ok());
  EXPECT_FALSE(it->input(1).ok());
  EXPECT_FALSE(it->input(-1).ok());
  EXPECT_FALSE(it->output(7).ok());

  auto found = it->FindInput("nope");
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.status().code(), StatusCode::kNotFound);
  EXPECT_NE(found.status().message().find("'nope'"), std::string::npos);
  EXPECT_NE(found.status().message().find("'x'"), std::string::npos) << found.status().message();
  auto found_out = it->FindOutput("t1");
  ASSERT_TRUE(found_out.ok());
  EXPECT_EQ(found_out->name(), "t1");

  // Signature names of the main subgraph work too.
  auto sig = Make(api_test::TwoSignatures());
  ASSERT_TRUE(sig);
  EXPECT_EQ(sig->input("in").name(), "x");
  EXPECT_EQ(sig->output("out").name(), "y");
}

TEST(PublicApi, TypedSpansCheckTheDType) {
  auto it = Make(AddKChain(1));
  ASSERT_TRUE(it);
  TensorView in = it->input(0);
  EXPECT_EQ(in.type(), DType::kFloat32);
  EXPECT_TRUE(in.has_type<float>());
  EXPECT_FALSE(in.has_type<int8_t>());
  EXPECT_EQ(in.data_as<float>().size(), 6u);
  EXPECT_EQ(in.data_as<const float>().size(), 6u);
  EXPECT_TRUE(in.data_as<int8_t>().empty());
  EXPECT_TRUE(in.data_as<int32_t>().empty());
  EXPECT_TRUE(in.data_as<double>().empty());
  EXPECT_EQ(in.num_dims(), 2);
  EXPECT_EQ(in.dim(0), 2);
  EXPECT_EQ(in.dim(-1), 3);
  EXPECT_EQ(in.dim(5), 0);
  EXPECT_EQ(in.num_elements(), 6);
  EXPECT_EQ(in.bytes(), 24u);
  EXPECT_FALSE(in.is_constant());
  EXPECT_EQ(in.scale(), 0.0f);
  EXPECT_TRUE(in.scales().empty());

  auto q = Make(api_test::Int8Reshape(), {});
  ASSERT_TRUE(q);
  TensorView qin = q->input(0);
  EXPECT_EQ(qin.type(), DType::kInt8);
  EXPECT_TRUE(qin.data_as<float>().empty());
  auto x = qin.data_as<int8_t>();
  ASSERT_EQ(x.size(), 6u);
  EXPECT_FLOAT_EQ(qin.scale(), 0.5f);
  EXPECT_EQ(qin.zero_point(), 3);
  ASSERT_EQ(qin.scales().size(), 1u);
  ASSERT_EQ(qin.zero_points().size(), 1u);
  EXPECT_EQ(qin.zero_points()[0], 3);
  for (int i = 0; i < 6; ++i) x[i] = static_cast<int8_t>(i - 3);
  ASSERT_TRUE(q->Invoke().ok());
  EXPECT_EQ(q->output(0).shape(), (std::vector<int32_t>{3, 2}));
  auto y = q->output(0).data_as<const int8_t>();
  ASSERT_EQ(y.size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y[i], i - 3);
}

TEST(PublicApi, CopyFromAndCopyToCheckSizes) {
  auto it = Make(AddKChain(1));
  ASSERT_TRUE(it);
  float x[6] = {1, 2, 3, 4, 5, 6};
  Status small = it->input(0).CopyFrom(x, 5 * sizeof(float));
  EXPECT_EQ(small.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(small.message().find("24 bytes"), std::string::npos) << small.message();
  EXPECT_NE(small.message().find("'x'"), std::string::npos) << small.message();
  float big[7];
  EXPECT_FALSE(it->input(0).CopyFrom(big, sizeof(big)).ok());
  EXPECT_FALSE(it->input(0).CopyFrom(nullptr, sizeof(x)).ok());
  ASSERT_TRUE(it->input(0).CopyFrom(x, sizeof(x)).ok());
  ASSERT_TRUE(it->Invoke().ok());
  float y[6] = {};
  EXPECT_FALSE(it->output(0).CopyTo(y, 4).ok());
  EXPECT_FALSE(it->output(0).CopyTo(nullptr, sizeof(y)).ok());
  ASSERT_TRUE(it->output(0).CopyTo(y, sizeof(y)).ok());
  EXPECT_FLOAT_EQ(y[5], 7.0f);
}

TEST(PublicApi, ResizeInputReplans) {
  Graph g = AddKChain(2, {1, 4});
  g.main().tensors[g.main().inputs[0]].shape_signature = {-1, 4};
  auto it = Make(g);
  ASSERT_TRUE(it);
  ASSERT_TRUE(it->ResizeInput(0, {3, 4}).ok());
  ASSERT_TRUE(it->AllocateTensors().ok());
  TensorView in = it->input(0);
  EXPECT_EQ(in.shape(), (std::vector<int32_t>{3, 4}));
  auto x = in.data_as<float>();
  ASSERT_EQ(x.size(), 12u);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  ASSERT_TRUE(it->Invoke().ok());
  EXPECT_EQ(it->output(0).shape(), (std::vector<int32_t>{3, 4}));
  EXPECT_FLOAT_EQ(it->output(0).data_as<const float>()[11], 14.0f);
  // Invoke re-plans by itself after a resize.
  ASSERT_TRUE(it->ResizeInput(0, {2, 4}).ok());
  ASSERT_TRUE(it->Invoke().ok());
  EXPECT_EQ(it->output(0).num_elements(), 8);

  Status fixed = it->ResizeInput(0, {2, 5});
  EXPECT_EQ(fixed.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(fixed.message().find("cannot resize"), std::string::npos) << fixed.message();
  EXPECT_FALSE(it->ResizeInput(3, {1, 4}).ok());
  EXPECT_FALSE(it->ResizeInput(0, {-2, 4}).ok());
}

TEST(PublicApi, ZeroCopyBinding) {
  auto it = Make(AddKChain(2));
  ASSERT_TRUE(it);
  alignas(64) float in[6] = {0, 1, 2, 3, 4, 5};
  alignas(64) float out[6] = {};
  ASSERT_TRUE(it->BindInput(0, in, sizeof(in)).ok());
  ASSERT_TRUE(it->BindOutput(0, out, sizeof(out)).ok());
  ASSERT_TRUE(it->Invoke().ok());
  EXPECT_EQ(it->input(0).data(), static_cast<void*>(in));
  EXPECT_EQ(it->output(0).data(), static_cast<void*>(out));
  EXPECT_FLOAT_EQ(out[5], 8.0f);
  in[0] = 100;
  ASSERT_TRUE(it->Invoke().ok());
  EXPECT_FLOAT_EQ(out[0], 103.0f);
  float small[2];
  EXPECT_FALSE(it->BindInput(0, small, sizeof(small)).ok());
  EXPECT_FALSE(it->BindInput(1, in, sizeof(in)).ok());
  EXPECT_FALSE(it->BindOutput(-1, out, sizeof(out)).ok());
  // Unbinding returns the tensors to interpreter storage.
  ASSERT_TRUE(it->BindInput(0, nullptr, 0).ok());
  ASSERT_TRUE(it->BindOutput(0, nullptr, 0).ok());
  ASSERT_TRUE(it->AllocateTensors().ok());
  EXPECT_NE(it->input(0).data(), static_cast<void*>(in));
  ASSERT_TRUE(it->input(0).CopyFrom(in, sizeof(in)).ok());
  ASSERT_TRUE(it->Invoke().ok());
  EXPECT_FLOAT_EQ(it->output(0).data_as<const float>()[0], 103.0f);
}

// Output [n] filled with n, where n is the input's first value: a data-dependent shape.
class Repeat : public CustomKernel {
 public:
  Status Prepare(CustomKernelContext& ctx) override {
    if (!ctx.in_invoke()) return ctx.MarkOutputDynamic(0);
    return Status::Ok();
  }
  Status Invoke(CustomKernelContext& ctx) override {
    const int n = static_cast<int>(ctx.input(0).data_as<const float>()[0]);
    if (n < 0) return ctx.Error("negative count");
    if (Status st = ctx.SetOutputShape(0, {n}); !st.ok()) return st;
    for (float& v : ctx.output(0).data_as<float>()) v = static_cast<float>(n);
    return Status::Ok();
  }
};

TEST(PublicApi, CustomOpContextAndErrors) {
  // Info given to the factory: options, tensors (constant weights included).
  CustomOpInfo seen;
  InterpreterOptions o;
  o.custom_ops.push_back({"Scale", [&](const CustomOpInfo& info) -> Expected<std::unique_ptr<CustomKernel>> {
                            seen = info;
                            return std::unique_ptr<CustomKernel>(new AddK(0));
                          }});
  GraphBuilder b;
  auto x = b.Input("x", DType::kFloat32, {2});
  auto w = b.Const<float>("w", DType::kFloat32, {2}, {3.0f, 4.0f}, QuantPerAxis({0.1f, 0.2f}, 0));
  auto y = b.Tensor("y", DType::kFloat32, {2});
  b.CustomOp("Scale", {x, w, kNoTensor}, {y}, {7, 8, 9});
  b.Output(y);
  auto it = Interpreter::Create(Load(b.Finish()), o);
  ASSERT_TRUE(it.ok()) << it.status().ToString();
  EXPECT_EQ(seen.name, "Scale");
  EXPECT_EQ(seen.op_index, 0);
  EXPECT_EQ(std::vector<uint8_t>(seen.custom_options.begin(), seen.custom_options.end()),
            (std::vector<uint8_t>{7, 8, 9}));
  ASSERT_EQ(seen.inputs.size(), 3u);
  EXPECT_EQ(seen.inputs[0].name, "x");
  EXPECT_FALSE(seen.inputs[0].is_constant);
  EXPECT_TRUE(seen.inputs[1].is_constant);
  EXPECT_EQ(seen.inputs[1].scales, (std::vector<float>{0.1f, 0.2f}));
  ASSERT_EQ(seen.inputs[1].constant_data.size(), 8u);
  float w1;
  std::memcpy(&w1, seen.inputs[1].constant_data.data() + 4, 4);
  EXPECT_FLOAT_EQ(w1, 4.0f);
  EXPECT_EQ(seen.inputs[2].index, -1);  // omitted optional input
  ASSERT_EQ(seen.outputs.size(), 1u);
  EXPECT_EQ(seen.outputs[0].name, "y");
  EXPECT_EQ((*it)->ops()[0].variant, "addk/f32/public");

  // A factory error names the op.
  InterpreterOptions failing;
  failing.custom_ops.push_back({"AddK", [](const CustomOpInfo&) -> Expected<std::unique_ptr<CustomKernel>> {
                                  return Unsupported("no AddK today");
                                }});
  auto f = Interpreter::Create(Load(AddKChain(2)), failing);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("op 0"), std::string::npos) << f.status().message();
  EXPECT_NE(f.status().message().find("no AddK today"), std::string::npos) << f.status().message();

  // A factory returning no kernel, and one throwing, are errors, not crashes.
  InterpreterOptions null_kernel;
  null_kernel.custom_ops.push_back({"AddK", [](const CustomOpInfo&) -> Expected<std::unique_ptr<CustomKernel>> {
                                      return std::unique_ptr<CustomKernel>();
                                    }});
  EXPECT_FALSE(Interpreter::Create(Load(AddKChain(1)), null_kernel).ok());
  InterpreterOptions throwing;
  throwing.custom_ops.push_back({"AddK", [](const CustomOpInfo&) -> Expected<std::unique_ptr<CustomKernel>> {
                                   throw std::runtime_error("boom");
                                 }});
  auto t = Interpreter::Create(Load(AddKChain(1)), throwing);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInternal);
  EXPECT_NE(t.status().message().find("boom"), std::string::npos) << t.status().message();
}

class Throwing : public CustomKernel {
 public:
  Status Prepare(CustomKernelContext& ctx) override { return ctx.SetOutputShape(0, ctx.input(0).shape()); }
  Status Invoke(CustomKernelContext&) override { throw std::runtime_error("kernel exploded"); }
};

TEST(PublicApi, CustomKernelExceptionsBecomeErrorsAndDynamicShapesWork) {
  InterpreterOptions o = WithAddK();
  o.custom_ops.push_back({"Throwing", [](const CustomOpInfo&) -> Expected<std::unique_ptr<CustomKernel>> {
                            return std::unique_ptr<CustomKernel>(new Throwing());
                          }});
  o.custom_ops.push_back({"Repeat", [](const CustomOpInfo&) -> Expected<std::unique_ptr<CustomKernel>> {
                            return std::unique_ptr<CustomKernel>(new Repeat());
                          }});
  {
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, {2});
    auto y = b.Tensor("y", DType::kFloat32, {2});
    b.CustomOp("Throwing", {x}, {y});
    b.Output(y);
    auto it = Interpreter::Create(Load(b.Finish()), o);
    ASSERT_TRUE(it.ok()) << it.status().ToString();
    EXPECT_EQ((*it)->ops()[0].variant, "custom/Throwing");
    Status st = (*it)->Invoke();
    EXPECT_EQ(st.code(), StatusCode::kInternal);
    EXPECT_NE(st.message().find("kernel exploded"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("op 0"), std::string::npos) << st.message();
    // The interpreter stays usable.
    EXPECT_FALSE((*it)->Invoke().ok());
  }
  {
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, {1});
    auto r = b.Tensor("r", DType::kFloat32, {0});
    b.CustomOp("Repeat", {x}, {r});
    auto y = b.Tensor("y", DType::kFloat32, {0});
    b.CustomOp("AddK", {r}, {y}, {1});
    b.Output(y);
    auto it = Interpreter::Create(Load(b.Finish()), o);
    ASSERT_TRUE(it.ok()) << it.status().ToString();
    for (int n : {3, 5, 1}) {
      (*it)->input(0).data_as<float>()[0] = static_cast<float>(n);
      ASSERT_TRUE((*it)->Invoke().ok());
      TensorView out = (*it)->output(0);
      ASSERT_EQ(out.shape(), std::vector<int32_t>{n});
      for (float v : out.data_as<const float>()) EXPECT_FLOAT_EQ(v, n + 1.0f);
    }
    (*it)->input(0).data_as<float>()[0] = -1;
    Status st = (*it)->Invoke();
    EXPECT_NE(st.message().find("Repeat: negative count"), std::string::npos) << st.message();
  }
}

// Claims AddK ops and runs each partition as one kernel adding the sum of the constants.
class AddKDelegate : public Delegate {
 public:
  std::string name() const override { return "public-delegate"; }
  std::vector<int> SupportedOps(const ModelView& model) override {
    views++;
    std::vector<int> out;
    for (const OpView& op : model.ops)
      if (op.is_custom && op.type == "AddK") out.push_back(op.index);
    return out;
  }
  Expected<std::unique_ptr<CustomKernel>> CreatePartitionKernel(const PartitionInfo& p) override {
    float total = 0;
    for (int op : p.op_indices) total += p.model->ops[op].custom_options[0];
    partitions.push_back(p.op_indices);
    inputs.push_back(p.inputs);
    outputs.push_back(p.outputs);
    input_names.push_back(p.model->tensors[p.inputs[0]].name);
    return std::unique_ptr<CustomKernel>(new AddK(total));
  }
  int views = 0;
  std::vector<std::vector<int>> partitions;
  std::vector<std::vector<int32_t>> inputs, outputs;
  std::vector<std::string> input_names;
};

TEST(PublicApi, DelegateClaimsPartitions) {
  GraphBuilder b;
  int32_t x = b.Input("x", DType::kFloat32, {3});
  int32_t a = b.Tensor("a", DType::kFloat32, {3});
  b.CustomOp("AddK", {x}, {a}, {1});
  int32_t c = b.Tensor("c", DType::kFloat32, {3});
  b.CustomOp("AddK", {a}, {c}, {2});
  int32_t d = b.Tensor("d", DType::kFloat32, {3});
  b.CustomOp("Other", {c}, {d}, {0});  // CPU: splits the partitions
  int32_t e = b.Tensor("e", DType::kFloat32, {3});
  b.CustomOp("AddK", {d}, {e}, {4});
  b.Output(e);
  auto del = std::make_shared<AddKDelegate>();
  InterpreterOptions o;
  o.custom_ops.push_back({"Other", [](const CustomOpInfo&) -> Expected<std::unique_ptr<CustomKernel>> {
                            return std::unique_ptr<CustomKernel>(new AddK(0));
                          }});
  o.delegates.push_back(del);
  auto it = Interpreter::Create(Load(b.Finish()), o);
  ASSERT_TRUE(it.ok()) << it.status().ToString();
  EXPECT_EQ(del->views, 1);
  ASSERT_EQ(del->partitions.size(), 2u);
  EXPECT_EQ(del->partitions[0], (std::vector<int>{0, 1}));
  EXPECT_EQ(del->partitions[1], (std::vector<int>{3}));
  EXPECT_EQ(del->inputs[0], std::vector<int32_t>{x});
  EXPECT_EQ(del->outputs[0], std::vector<int32_t>{c});  // a stays inside the partition
  EXPECT_EQ(del->input_names[0], "x");
  auto ops = (*it)->ops();
  ASSERT_EQ(ops.size(), 4u);
  EXPECT_EQ(ops[0].backend, "public-delegate");
  EXPECT_EQ(ops[0].variant, "addk/f32/public");
  EXPECT_EQ(ops[0].partition, ops[1].partition);
  EXPECT_EQ(ops[2].backend, "cpu");
  EXPECT_EQ(ops[3].backend, "public-delegate");
  const float in[3] = {0, 1, 2};
  ASSERT_TRUE((*it)->input(0).CopyFrom(in, sizeof(in)).ok());
  ASSERT_TRUE((*it)->Invoke().ok());
  EXPECT_FLOAT_EQ((*it)->output(0).data_as<const float>()[2], 9.0f);
}

class BrokenDelegate : public Delegate {
 public:
  explicit BrokenDelegate(int mode) : mode_(mode) {}
  std::string name() const override { return "broken"; }
  std::vector<int> SupportedOps(const ModelView&) override {
    if (mode_ == 0) throw std::runtime_error("cannot look");
    return {0};
  }
  Expected<std::unique_ptr<CustomKernel>> CreatePartitionKernel(const PartitionInfo&) override {
    if (mode_ == 1) return Unsupported("no device");
    throw std::runtime_error("device on fire");
  }

 private:
  int mode_;
};

TEST(PublicApi, DelegateFailuresAreReported) {
  const char* expected[] = {"cannot look", "no device", "device on fire"};
  for (int mode = 0; mode < 3; ++mode) {
    InterpreterOptions o = WithAddK();
    o.delegates.push_back(std::make_shared<BrokenDelegate>(mode));
    auto it = Interpreter::Create(Load(AddKChain(2)), o);
    ASSERT_FALSE(it.ok()) << mode;
    EXPECT_NE(it.status().message().find(expected[mode]), std::string::npos) << it.status().message();
    EXPECT_NE(it.status().message().find("broken"), std::string::npos) << it.status().message();
  }
  InterpreterOptions null_delegate;
  null_delegate.delegates.push_back(nullptr);
  EXPECT_FALSE(Interpreter::Create(Load(AddKChain(1)), null_delegate).ok());
}

TEST(PublicApi, SignatureRunner) {
  auto it = Make(api_test::TwoSignatures());
  ASSERT_TRUE(it);
  EXPECT_EQ(it->signature_keys(), (std::vector<std::string>{"add", "add_more"}));
  auto missing = it->GetSignature("nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("add_more"), std::string::npos) << missing.status().message();

  auto more = it->GetSignature("add_more");
  ASSERT_TRUE(more.ok()) << more.status().ToString();
  SignatureRunner& r = *more;
  EXPECT_EQ(r.key(), "add_more");
  EXPECT_EQ(r.input_names(), std::vector<std::string>{"values"});
  EXPECT_EQ(r.output_names(), std::vector<std::string>{"result"});
  EXPECT_FALSE(r.input("v").ok());  // signature names only
  TensorView in = r.input("values");
  ASSERT_TRUE(in.ok());
  EXPECT_EQ(in.name(), "v");
  auto x = in.data_as<float>();
  ASSERT_EQ(x.size(), 3u);
  x[0] = 1, x[1] = 2, x[2] = 3;
  ASSERT_TRUE(r.Invoke().ok());
  EXPECT_FLOAT_EQ(r.output("result").data_as<const float>()[2], 8.0f);

  // Resizable input of the signature.
  ASSERT_TRUE(r.ResizeInput("values", {5}).ok());
  ASSERT_TRUE(r.AllocateTensors().ok());
  ASSERT_EQ(r.input("values").num_elements(), 5);
  for (float& v : r.input("values").data_as<float>()) v = 10;
  ASSERT_TRUE(r.Invoke().ok());
  EXPECT_EQ(r.output("result").shape(), std::vector<int32_t>{5});
  EXPECT_FLOAT_EQ(r.output("result").data_as<const float>()[4], 15.0f);
  EXPECT_EQ(r.ResizeInput("nope", {1}).code(), StatusCode::kNotFound);

  // The main signature shares state with the interpreter's own inputs.
  auto add = it->GetSignature("add");
  ASSERT_TRUE(add.ok());
  ASSERT_TRUE(add->input("in").data_as<float>().size() == 2);
  add->input("in").data_as<float>()[0] = 41;
  ASSERT_TRUE(add->Invoke().ok());
  EXPECT_FLOAT_EQ(it->output(0).data_as<const float>()[0], 42.0f);

  // A default-constructed runner fails cleanly.
  SignatureRunner empty;
  EXPECT_FALSE(empty.Invoke().ok());
  EXPECT_FALSE(empty.AllocateTensors().ok());
  EXPECT_FALSE(empty.input("values").ok());
}

TEST(PublicApi, Profiling) {
  auto it = Make(AddKChain(5));
  ASSERT_TRUE(it);
  ASSERT_TRUE(it->Invoke().ok());
  EXPECT_TRUE(it->last_profile().empty());
  it->EnableProfiling(true);
  ASSERT_TRUE(it->Invoke().ok());
  auto prof = it->last_profile();
  ASSERT_EQ(prof.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(prof[i].op_index, i);
    EXPECT_LE(prof[i].begin_ns, prof[i].end_ns);
  }
}

class Sleepy : public CustomKernel {
 public:
  explicit Sleepy(std::atomic<bool>* started) : started_(started) {}
  Status Prepare(CustomKernelContext& ctx) override { return ctx.SetOutputShape(0, ctx.input(0).shape()); }
  Status Invoke(CustomKernelContext& ctx) override {
    started_->store(true);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return ctx.output(0).CopyFrom(ctx.input(0).data(), ctx.input(0).bytes());
  }

 private:
  std::atomic<bool>* started_;
};

TEST(PublicApi, CancelFromAnotherThread) {
  std::atomic<bool> started{false};
  InterpreterOptions o;
  o.custom_ops.push_back({"Sleepy", [&](const CustomOpInfo&) -> Expected<std::unique_ptr<CustomKernel>> {
                            return std::unique_ptr<CustomKernel>(new Sleepy(&started));
                          }});
  GraphBuilder b;
  int32_t t = b.Input("x", DType::kFloat32, {4});
  for (int i = 0; i < 100; ++i) {
    char name[16];  // (GCC 12 warns falsely on "t" + std::to_string(i) here)
    std::snprintf(name, sizeof(name), "s%d", i);
    int32_t y = b.Tensor(name, DType::kFloat32, {4});
    b.CustomOp("Sleepy", {t}, {y});
    t = y;
  }
  b.Output(t);
  auto it = Make(b.Finish(), o);
  ASSERT_TRUE(it);
  std::thread canceller([&] {
    while (!started.load()) std::this_thread::yield();
    it->Cancel();
  });
  Status st = it->Invoke();
  canceller.join();
  EXPECT_EQ(st.code(), StatusCode::kCancelled) << st.ToString();
  EXPECT_TRUE(it->Invoke().ok());
}

TEST(PublicApi, SeveralInterpretersShareAModel) {
  auto model = Load(AddKChain(3));
  auto a = Interpreter::Create(model, WithAddK());
  auto b = Interpreter::Create(model, WithAddK());
  ASSERT_TRUE(a.ok() && b.ok());
  model.reset();  // interpreters keep the model alive
  (*a)->input(0).data_as<float>()[0] = 1;
  (*b)->input(0).data_as<float>()[0] = 2;
  ASSERT_TRUE((*a)->Invoke().ok());
  ASSERT_TRUE((*b)->Invoke().ok());
  EXPECT_FLOAT_EQ((*a)->output(0).data_as<const float>()[0], 7.0f);
  EXPECT_FLOAT_EQ((*b)->output(0).data_as<const float>()[0], 8.0f);
  EXPECT_EQ((*a)->model().num_ops(), 3);
}

TEST(PublicApi, LoadImageAsInput) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("edgeopt_api_img_" + std::to_string(::getpid()) + ".bmp")).string();
  api_test::WriteBmp(path, 8, 6, 255, 0, 51);

  GraphBuilder b;
  auto x = b.Input("image", DType::kUInt8, {1, 4, 4, 3}, Quant(1.0f, 0));
  auto y = b.Tensor("y", DType::kUInt8, {48}, Quant(1.0f, 0));
  tflite::ReshapeOptionsT ro;
  ro.new_shape = {48};
  b.Op(tflite::BuiltinOperator_RESHAPE, {x}, {y}, ro);
  b.Output(y);
  auto u8 = Make(b.Finish(), {});
  ASSERT_TRUE(u8);
  auto bytes = LoadImageAsInput(path, u8->input(0));
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  ASSERT_EQ(bytes->size(), 48u);
  EXPECT_EQ((*bytes)[0], 255);
  EXPECT_EQ((*bytes)[1], 0);
  EXPECT_EQ((*bytes)[2], 51);
  ASSERT_TRUE(u8->input(0).CopyFrom(bytes->data(), bytes->size()).ok());
  ASSERT_TRUE(u8->Invoke().ok());
  EXPECT_EQ(u8->output(0).data_as<const uint8_t>()[47], 51);

  // Float input: [0, 1] range on request, [-1, 1] by default.
  auto f = Make(AddKChain(1, {1, 2, 2, 3}));
  ASSERT_TRUE(f);
  ImageOptions unit;
  unit.normalization = ImageOptions::Normalization::kRange;
  unit.range_min = 0;
  unit.range_max = 1;
  auto fb = LoadImageAsInput(path, f->input(0), unit);
  ASSERT_TRUE(fb.ok()) << fb.status().ToString();
  ASSERT_EQ(fb->size(), 48u);
  float v[12];
  std::memcpy(v, fb->data(), sizeof(v));
  EXPECT_NEAR(v[0], 1.0f, 1e-6);
  EXPECT_NEAR(v[1], 0.0f, 1e-6);
  EXPECT_NEAR(v[2], 0.2f, 1e-6);
  auto def = LoadImageAsInput(path, f->input(0));
  ASSERT_TRUE(def.ok());
  std::memcpy(v, def->data(), sizeof(v));
  EXPECT_NEAR(v[1], -1.0f, 1e-6);
  ImageOptions ms;
  ms.normalization = ImageOptions::Normalization::kMeanStd;
  ms.mean = {127.5f};
  ms.stddev = {127.5f};
  auto msb = LoadImageAsInput(path, f->input(0), ms);
  ASSERT_TRUE(msb.ok());
  std::memcpy(v, msb->data(), sizeof(v));
  EXPECT_NEAR(v[0], 1.0f, 1e-6);

  // Errors.
  auto missing = LoadImageAsInput(path + ".missing.bmp", f->input(0));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(LoadImageAsInput(path, TensorView()).ok());
  auto rank2 = Make(AddKChain(1));
  auto wrong_shape = LoadImageAsInput(path, rank2->input(0));
  ASSERT_FALSE(wrong_shape.ok());
  EXPECT_NE(wrong_shape.status().message().find("input 'x'"), std::string::npos) << wrong_shape.status().message();
  ms.stddev = {0};
  EXPECT_FALSE(LoadImageAsInput(path, f->input(0), ms).ok());
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace edgeopt
