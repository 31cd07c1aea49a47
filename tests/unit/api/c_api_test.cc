// The C API (include/edgeopt/c_api.h): the happy path, C custom ops, and every error path
// (NULL pointers, bad indices, wrong sizes, missing files) giving a status and a message.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "edgeopt/c_api.h"
#include "unit/api/test_models.h"

namespace edgeopt {
namespace {

using api_test::Serialize;

std::string LastError(const EoInterpreter* it = nullptr) { return EoGetLastErrorMessage(it); }

struct ModelBytes {
  std::vector<uint8_t> bytes;
  explicit ModelBytes(const Graph& g) : bytes(Serialize(g)) {}
  EoModel* Create() const { return EoModelCreate(bytes.data(), bytes.size()); }
};

// C custom op "AddK": out = in + k, k from the first custom-options byte (the op state).
struct AddKCounters {
  std::atomic<int> inits{0}, frees{0}, prepares{0}, invokes{0};
  std::atomic<bool> fail{false};
  std::atomic<int> sleep_ms{0};
  std::atomic<bool> started{false};
};

void* AddKInit(void* user_data, const void* options, size_t size) {
  auto* c = static_cast<AddKCounters*>(user_data);
  ++c->inits;
  auto* k = new float(size > 0 ? static_cast<const uint8_t*>(options)[0] : 1.0f);
  return k;
}

void AddKFree(void* user_data, void* state) {
  ++static_cast<AddKCounters*>(user_data)->frees;
  delete static_cast<float*>(state);
}

EoStatus AddKPrepare(void* user_data, void*, EoOpContext* ctx) {
  ++static_cast<AddKCounters*>(user_data)->prepares;
  const EoTensor* in = EoOpContextGetInput(ctx, 0);
  if (!in || EoTensorType(in) != kEoFloat32) {
    EoOpContextSetError(ctx, "AddK wants a float32 input");
    return kEoInvalidArgument;
  }
  int32_t dims[8];
  const int32_t n = EoTensorNumDims(in);
  for (int32_t i = 0; i < n; ++i) dims[i] = EoTensorDim(in, i);
  return EoOpContextSetOutputShape(ctx, 0, dims, n);
}

EoStatus AddKInvoke(void* user_data, void* state, EoOpContext* ctx) {
  auto* c = static_cast<AddKCounters*>(user_data);
  ++c->invokes;
  c->started = true;
  if (c->sleep_ms) std::this_thread::sleep_for(std::chrono::milliseconds(c->sleep_ms));
  if (c->fail) {
    EoOpContextSetError(ctx, "AddK was told to fail");
    return kEoUnsupported;
  }
  const EoTensor* in = EoOpContextGetInput(ctx, 0);
  EoTensor* out = EoOpContextGetOutput(ctx, 0);
  const float* x = static_cast<const float*>(EoTensorData(in));
  float* y = static_cast<float*>(EoTensorData(out));
  const size_t n = EoTensorByteSize(in) / sizeof(float);
  if (EoTensorByteSize(out) != EoTensorByteSize(in)) return kEoInternal;
  for (size_t i = 0; i < n; ++i) y[i] = x[i] + *static_cast<float*>(state);
  return kEoOk;
}

EoCustomOp AddKOp(AddKCounters* counters) {
  EoCustomOp op = {};
  op.name = "AddK";
  op.user_data = counters;
  op.init = AddKInit;
  op.free = AddKFree;
  op.prepare = AddKPrepare;
  op.invoke = AddKInvoke;
  return op;
}

EoInterpreter* CreateWithAddK(const EoModel* model, AddKCounters* counters) {
  EoInterpreterOptions* o = EoInterpreterOptionsCreate();
  EoCustomOp op = AddKOp(counters);
  EXPECT_EQ(EoInterpreterOptionsAddCustomOp(o, &op), kEoOk);
  EoInterpreter* it = EoInterpreterCreate(model, o);
  EoInterpreterOptionsDelete(o);  // the interpreter does not need the options afterwards
  return it;
}

TEST(CApi, LibraryInfo) {
  EXPECT_STREQ(EoVersion(), "0.1.0");
  EXPECT_STREQ(EoStatusName(kEoOk), "ok");
  EXPECT_STREQ(EoStatusName(kEoNotFound), "not found");
  EXPECT_STREQ(EoStatusName(kEoOutOfMemory), "out of memory");
  EXPECT_STREQ(EoStatusName(static_cast<EoStatus>(1234)), "unknown");
  EXPECT_STREQ(EoTypeName(kEoInt8), "int8");
  EXPECT_STREQ(EoTypeName(kEoFloat32), "float32");
  EXPECT_STREQ(EoTypeName(kEoNoType), "invalid");
  EXPECT_STREQ(EoTypeName(static_cast<EoType>(99)), "invalid");
  // The C enum mirrors DType.
  EXPECT_EQ(static_cast<int>(kEoBFloat16), static_cast<int>(DType::kBFloat16));
  EXPECT_EQ(static_cast<int>(kEoInt8), static_cast<int>(DType::kInt8));
}

TEST(CApi, ModelErrors) {
  EXPECT_EQ(EoModelCreateFromFile("/nonexistent/model.tflite"), nullptr);
  EXPECT_EQ(EoGetLastErrorStatus(nullptr), kEoNotFound);
  EXPECT_NE(LastError().find("/nonexistent/model.tflite"), std::string::npos) << LastError();

  EXPECT_EQ(EoModelCreateFromFile(nullptr), nullptr);
  EXPECT_EQ(EoGetLastErrorStatus(nullptr), kEoInvalidArgument);
  EXPECT_NE(LastError().find("model_path"), std::string::npos) << LastError();

  EXPECT_EQ(EoModelCreate(nullptr, 10), nullptr);
  EXPECT_EQ(EoGetLastErrorStatus(nullptr), kEoInvalidArgument);

  const char garbage[64] = "definitely not a tflite model";
  EXPECT_EQ(EoModelCreate(garbage, sizeof(garbage)), nullptr);
  EXPECT_EQ(EoGetLastErrorStatus(nullptr), kEoInvalidModel);
  EXPECT_FALSE(LastError().empty());
  EXPECT_EQ(EoModelCreate(garbage, 0), nullptr);
  EXPECT_EQ(EoGetLastErrorStatus(nullptr), kEoInvalidModel);

  // Truncated model.
  ModelBytes m(api_test::Int8Reshape());
  EXPECT_EQ(EoModelCreate(m.bytes.data(), m.bytes.size() / 2), nullptr);
  EXPECT_EQ(EoGetLastErrorStatus(nullptr), kEoInvalidModel);

  EoModelDelete(nullptr);  // no-op
}

TEST(CApi, OptionsErrors) {
  EXPECT_EQ(EoInterpreterOptionsSetNumThreads(nullptr, 2), kEoInvalidArgument);
  EXPECT_NE(LastError().find("options"), std::string::npos);
  EXPECT_EQ(EoInterpreterOptionsSetReferenceKernelsOnly(nullptr, 1), kEoInvalidArgument);
  EoInterpreterOptions* o = EoInterpreterOptionsCreate();
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(EoInterpreterOptionsSetNumThreads(o, 2), kEoOk);
  EXPECT_EQ(EoInterpreterOptionsSetReferenceKernelsOnly(o, 1), kEoOk);

  AddKCounters c;
  EoCustomOp op = AddKOp(&c);
  EXPECT_EQ(EoInterpreterOptionsAddCustomOp(nullptr, &op), kEoInvalidArgument);
  EXPECT_EQ(EoInterpreterOptionsAddCustomOp(o, nullptr), kEoInvalidArgument);
  EoCustomOp unnamed = op;
  unnamed.name = nullptr;
  EXPECT_EQ(EoInterpreterOptionsAddCustomOp(o, &unnamed), kEoInvalidArgument);
  unnamed.name = "";
  EXPECT_EQ(EoInterpreterOptionsAddCustomOp(o, &unnamed), kEoInvalidArgument);
  EoCustomOp no_invoke = op;
  no_invoke.invoke = nullptr;
  EXPECT_EQ(EoInterpreterOptionsAddCustomOp(o, &no_invoke), kEoInvalidArgument);
  EXPECT_NE(LastError().find("invoke"), std::string::npos) << LastError();
  // The name is copied: the caller's buffer may change afterwards.
  char name[8] = "AddK";
  op.name = name;
  EXPECT_EQ(EoInterpreterOptionsAddCustomOp(o, &op), kEoOk);
  std::strcpy(name, "Xyz");
  op.name = "AddK";
  EXPECT_EQ(EoInterpreterOptionsAddCustomOp(o, &op), kEoInvalidArgument);  // already added
  EXPECT_NE(LastError().find("already"), std::string::npos) << LastError();

  ModelBytes m(api_test::AddKChain(2));
  EoModel* model = m.Create();
  ASSERT_NE(model, nullptr);
  EoInterpreter* it = EoInterpreterCreate(model, o);
  ASSERT_NE(it, nullptr) << LastError();
  EXPECT_EQ(c.inits.load(), 2);
  EoInterpreterDelete(it);
  EXPECT_EQ(c.frees.load(), 2);
  EoInterpreterOptionsDelete(o);
  EoInterpreterOptionsDelete(nullptr);
  EoModelDelete(model);
}

TEST(CApi, InterpreterCreateErrors) {
  EXPECT_EQ(EoInterpreterCreate(nullptr, nullptr), nullptr);
  EXPECT_EQ(EoGetLastErrorStatus(nullptr), kEoInvalidArgument);
  EXPECT_NE(LastError().find("model"), std::string::npos);

  ModelBytes m(api_test::AddKChain(2));
  EoModel* model = m.Create();
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(EoInterpreterCreate(model, nullptr), nullptr);  // AddK has no kernel
  EXPECT_EQ(EoGetLastErrorStatus(nullptr), kEoUnsupported);
  EXPECT_NE(LastError().find("'AddK'"), std::string::npos) << LastError();
  EXPECT_NE(LastError().find("op 0"), std::string::npos) << LastError();
  EoModelDelete(model);
}

TEST(CApi, RunsABuiltinModel) {
  ModelBytes m(api_test::Int8Reshape());
  EoModel* model = m.Create();
  ASSERT_NE(model, nullptr) << LastError();
  EoInterpreter* it = EoInterpreterCreate(model, nullptr);
  ASSERT_NE(it, nullptr) << LastError();
  EoModelDelete(model);  // the interpreter keeps what it needs
  EXPECT_EQ(EoInterpreterGetInputTensorCount(it), 1);
  EXPECT_EQ(EoInterpreterGetOutputTensorCount(it), 1);
  EXPECT_STREQ(EoGetLastErrorMessage(it), "");
  EXPECT_EQ(EoGetLastErrorStatus(it), kEoOk);

  EoTensor* in = EoInterpreterGetInputTensor(it, 0);
  ASSERT_NE(in, nullptr);
  EXPECT_EQ(EoInterpreterGetInputTensorByName(it, "x"), in);
  EXPECT_EQ(EoTensorType(in), kEoInt8);
  EXPECT_STREQ(EoTensorName(in), "x");
  ASSERT_EQ(EoTensorNumDims(in), 3);
  EXPECT_EQ(EoTensorDim(in, 0), 1);
  EXPECT_EQ(EoTensorDim(in, 1), 2);
  EXPECT_EQ(EoTensorDim(in, 2), 3);
  EXPECT_EQ(EoTensorByteSize(in), 6u);
  EXPECT_NE(EoTensorData(in), nullptr);
  EoQuantizationParams q = EoTensorQuantizationParams(in);
  EXPECT_FLOAT_EQ(q.scale, 0.5f);
  EXPECT_EQ(q.zero_point, 3);
  const float* scales = nullptr;
  const int64_t* zps = nullptr;
  int32_t count = -1, axis = -1;
  EXPECT_EQ(EoTensorPerChannelQuantization(in, &scales, &zps, &count, &axis), kEoOk);
  ASSERT_EQ(count, 1);
  EXPECT_FLOAT_EQ(scales[0], 0.5f);
  EXPECT_EQ(zps[0], 3);
  EXPECT_EQ(axis, 0);
  EXPECT_EQ(EoTensorPerChannelQuantization(in, nullptr, nullptr, nullptr, nullptr), kEoOk);

  const int8_t x[6] = {-3, -2, -1, 0, 1, 2};
  ASSERT_EQ(EoTensorCopyFromBuffer(in, x, sizeof(x)), kEoOk);
  ASSERT_EQ(EoInterpreterInvoke(it), kEoOk) << EoGetLastErrorMessage(it);
  const EoTensor* out = EoInterpreterGetOutputTensor(it, 0);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(EoInterpreterGetOutputTensorByName(it, "y"), out);
  EXPECT_EQ(EoTensorNumDims(out), 2);
  EXPECT_EQ(EoTensorDim(out, 0), 3);
  int8_t y[6] = {};
  ASSERT_EQ(EoTensorCopyToBuffer(out, y, sizeof(y)), kEoOk);
  EXPECT_EQ(std::memcmp(x, y, sizeof(x)), 0);
  EXPECT_EQ(EoInterpreterAllocateTensors(it), kEoOk);
  EoInterpreterDelete(it);
  EoInterpreterDelete(nullptr);  // no-op
}

TEST(CApi, NullPointersNeverCrash) {
  EXPECT_EQ(EoInterpreterGetInputTensorCount(nullptr), -1);
  EXPECT_EQ(EoInterpreterGetOutputTensorCount(nullptr), -1);
  EXPECT_EQ(EoInterpreterGetInputTensor(nullptr, 0), nullptr);
  EXPECT_EQ(EoInterpreterGetOutputTensor(nullptr, 0), nullptr);
  EXPECT_EQ(EoInterpreterGetInputTensorByName(nullptr, "x"), nullptr);
  EXPECT_EQ(EoInterpreterGetOutputTensorByName(nullptr, "x"), nullptr);
  const int32_t dims[1] = {1};
  EXPECT_EQ(EoInterpreterResizeInputTensor(nullptr, 0, dims, 1), kEoInvalidArgument);
  EXPECT_EQ(EoInterpreterAllocateTensors(nullptr), kEoInvalidArgument);
  EXPECT_EQ(EoInterpreterInvoke(nullptr), kEoInvalidArgument);
  EXPECT_NE(LastError().find("EoInterpreterInvoke"), std::string::npos) << LastError();
  EXPECT_EQ(EoInterpreterCancel(nullptr), kEoInvalidArgument);
  char buf[4];
  EXPECT_EQ(EoInterpreterBindInput(nullptr, 0, buf, sizeof(buf)), kEoInvalidArgument);
  EXPECT_EQ(EoInterpreterBindOutput(nullptr, 0, buf, sizeof(buf)), kEoInvalidArgument);

  EXPECT_EQ(EoTensorType(nullptr), kEoNoType);
  EXPECT_EQ(EoTensorNumDims(nullptr), -1);
  EXPECT_EQ(EoTensorDim(nullptr, 0), -1);
  EXPECT_EQ(EoTensorByteSize(nullptr), 0u);
  EXPECT_EQ(EoTensorData(nullptr), nullptr);
  EXPECT_STREQ(EoTensorName(nullptr), "");
  EoQuantizationParams q = EoTensorQuantizationParams(nullptr);
  EXPECT_EQ(q.scale, 0.0f);
  EXPECT_EQ(q.zero_point, 0);
  EXPECT_EQ(EoTensorPerChannelQuantization(nullptr, nullptr, nullptr, nullptr, nullptr), kEoInvalidArgument);
  EXPECT_EQ(EoTensorCopyFromBuffer(nullptr, buf, sizeof(buf)), kEoInvalidArgument);
  EXPECT_EQ(EoTensorCopyToBuffer(nullptr, buf, sizeof(buf)), kEoInvalidArgument);
  EXPECT_EQ(EoGetLastErrorStatus(nullptr), kEoInvalidArgument);
  EXPECT_NE(LastError().find("tensor"), std::string::npos) << LastError();

  EXPECT_EQ(EoOpContextGetInputCount(nullptr), -1);
  EXPECT_EQ(EoOpContextGetOutputCount(nullptr), -1);
  EXPECT_EQ(EoOpContextGetInput(nullptr, 0), nullptr);
  EXPECT_EQ(EoOpContextGetOutput(nullptr, 0), nullptr);
  EXPECT_EQ(EoOpContextSetOutputShape(nullptr, 0, dims, 1), kEoInvalidArgument);
  EoOpContextSetError(nullptr, "x");
}

TEST(CApi, BadIndicesSizesAndNames) {
  ModelBytes m(api_test::Int8Reshape());
  EoModel* model = m.Create();
  EoInterpreter* it = EoInterpreterCreate(model, nullptr);
  ASSERT_NE(it, nullptr);

  EXPECT_EQ(EoInterpreterGetInputTensor(it, 1), nullptr);
  EXPECT_EQ(EoGetLastErrorStatus(it), kEoInvalidArgument);
  EXPECT_NE(std::string(EoGetLastErrorMessage(it)).find("out of range"), std::string::npos) << EoGetLastErrorMessage(it);
  EXPECT_EQ(EoGetLastErrorMessage(it), LastError(it));
  EXPECT_EQ(LastError(), LastError(it));  // also recorded for the thread
  EXPECT_EQ(EoInterpreterGetInputTensor(it, -1), nullptr);
  EXPECT_EQ(EoInterpreterGetOutputTensor(it, 1), nullptr);
  EXPECT_EQ(EoInterpreterGetOutputTensor(it, INT32_MIN), nullptr);
  EXPECT_EQ(EoInterpreterGetInputTensorByName(it, "nope"), nullptr);
  EXPECT_EQ(EoGetLastErrorStatus(it), kEoNotFound);
  EXPECT_NE(LastError(it).find("'nope'"), std::string::npos) << LastError(it);
  EXPECT_EQ(EoInterpreterGetOutputTensorByName(it, nullptr), nullptr);
  EXPECT_EQ(EoGetLastErrorStatus(it), kEoInvalidArgument);

  EoTensor* in = EoInterpreterGetInputTensor(it, 0);
  EXPECT_EQ(EoTensorDim(in, 3), -1);
  EXPECT_NE(LastError(it).find("rank 3"), std::string::npos) << LastError(it);
  EXPECT_EQ(EoTensorDim(in, -1), -1);

  int8_t buf[16] = {};
  EXPECT_EQ(EoTensorCopyFromBuffer(in, buf, 5), kEoInvalidArgument);
  EXPECT_NE(LastError(it).find("6 bytes"), std::string::npos) << LastError(it);
  EXPECT_EQ(EoTensorCopyFromBuffer(in, buf, 7), kEoInvalidArgument);
  EXPECT_EQ(EoTensorCopyFromBuffer(in, nullptr, 6), kEoInvalidArgument);
  EXPECT_EQ(EoTensorCopyToBuffer(in, buf, 16), kEoInvalidArgument);
  EXPECT_EQ(EoTensorCopyToBuffer(in, nullptr, 6), kEoInvalidArgument);

  const int32_t dims[2] = {4, 2};
  EXPECT_EQ(EoInterpreterResizeInputTensor(it, 1, dims, 2), kEoInvalidArgument);
  EXPECT_EQ(EoInterpreterResizeInputTensor(it, 0, nullptr, 2), kEoInvalidArgument);
  EXPECT_EQ(EoInterpreterResizeInputTensor(it, 0, dims, -1), kEoInvalidArgument);
  // The model has no shape signature, so any shape is accepted by resize; RESHAPE then fails.
  EXPECT_EQ(EoInterpreterResizeInputTensor(it, 0, dims, 2), kEoOk);
  EXPECT_NE(EoInterpreterAllocateTensors(it), kEoOk);
  EXPECT_NE(LastError(it).find("RESHAPE"), std::string::npos) << LastError(it);

  EXPECT_EQ(EoInterpreterBindInput(it, 3, buf, sizeof(buf)), kEoInvalidArgument);
  EXPECT_EQ(EoInterpreterBindOutput(it, 0, buf, 2), kEoInvalidArgument);
  EXPECT_NE(LastError(it).find("bytes"), std::string::npos) << LastError(it);
  EoInterpreterDelete(it);
  EoModelDelete(model);
}

TEST(CApi, CustomOpsResizeAndBinding) {
  Graph g = api_test::AddKChain(3, {1, 4});
  g.main().tensors[g.main().inputs[0]].shape_signature = {-1, 4};
  ModelBytes m(g);
  EoModel* model = m.Create();
  AddKCounters c;
  EoInterpreter* it = CreateWithAddK(model, &c);
  ASSERT_NE(it, nullptr) << LastError();
  EXPECT_EQ(c.inits.load(), 3);
  EXPECT_GE(c.prepares.load(), 3);

  const int32_t dims[2] = {2, 4};
  ASSERT_EQ(EoInterpreterResizeInputTensor(it, 0, dims, 2), kEoOk);
  ASSERT_EQ(EoInterpreterAllocateTensors(it), kEoOk) << LastError(it);
  EoTensor* in = EoInterpreterGetInputTensor(it, 0);
  EXPECT_EQ(EoTensorDim(in, 0), 2);
  EXPECT_EQ(EoTensorByteSize(in), 32u);
  float x[8];
  for (int i = 0; i < 8; ++i) x[i] = static_cast<float>(i);
  ASSERT_EQ(EoTensorCopyFromBuffer(in, x, sizeof(x)), kEoOk);
  ASSERT_EQ(EoInterpreterInvoke(it), kEoOk) << LastError(it);
  EXPECT_EQ(c.invokes.load(), 3);
  const EoTensor* out = EoInterpreterGetOutputTensor(it, 0);
  EXPECT_EQ(EoTensorDim(out, 0), 2);
  float y[8];
  ASSERT_EQ(EoTensorCopyToBuffer(out, y, sizeof(y)), kEoOk);
  EXPECT_FLOAT_EQ(y[7], 13.0f);  // 7 + 1 + 2 + 3

  const int32_t bad[2] = {2, 5};
  EXPECT_EQ(EoInterpreterResizeInputTensor(it, 0, bad, 2), kEoInvalidArgument);
  EXPECT_NE(LastError(it).find("cannot resize"), std::string::npos) << LastError(it);

  // Zero-copy.
  alignas(64) float bin[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  alignas(64) float bout[8] = {};
  ASSERT_EQ(EoInterpreterBindInput(it, 0, bin, sizeof(bin)), kEoOk);
  ASSERT_EQ(EoInterpreterBindOutput(it, 0, bout, sizeof(bout)), kEoOk);
  ASSERT_EQ(EoInterpreterInvoke(it), kEoOk) << LastError(it);
  EXPECT_FLOAT_EQ(bout[0], 7.0f);
  EXPECT_EQ(EoTensorData(in), static_cast<void*>(bin));

  // A failing callback: its status and message come back.
  c.fail = true;
  EXPECT_EQ(EoInterpreterInvoke(it), kEoUnsupported);
  EXPECT_NE(LastError(it).find("AddK was told to fail"), std::string::npos) << LastError(it);
  EXPECT_NE(LastError(it).find("op 0"), std::string::npos) << LastError(it);
  c.fail = false;
  EXPECT_EQ(EoInterpreterInvoke(it), kEoOk);

  EoInterpreterDelete(it);
  EXPECT_EQ(c.frees.load(), 3);
  EoModelDelete(model);
}

EoStatus ProbeContext(void*, void*, EoOpContext* ctx) {
  // Every misuse of the op context inside a callback is an error, not a crash.
  if (EoOpContextGetInputCount(ctx) != 1 || EoOpContextGetOutputCount(ctx) != 1) return kEoInternal;
  if (EoOpContextGetInput(ctx, 1) != nullptr || EoOpContextGetInput(ctx, -1) != nullptr) return kEoInternal;
  if (EoOpContextGetOutput(ctx, 1) != nullptr) return kEoInternal;
  const int32_t dims[1] = {2};
  if (EoOpContextSetOutputShape(ctx, 1, dims, 1) == kEoOk) return kEoInternal;
  if (EoOpContextSetOutputShape(ctx, 0, nullptr, 1) == kEoOk) return kEoInternal;
  if (EoOpContextSetOutputShape(ctx, 0, dims, -1) == kEoOk) return kEoInternal;
  const int32_t negative[1] = {-2};
  if (EoOpContextSetOutputShape(ctx, 0, negative, 1) == kEoOk) return kEoInternal;
  EoOpContextSetError(ctx, nullptr);
  return EoOpContextSetOutputShape(ctx, 0, dims, 1);
}

EoStatus NoMessage(void*, void*, EoOpContext*) { return static_cast<EoStatus>(77); }

TEST(CApi, OpContextMisuseAndUnknownStatus) {
  GraphBuilder b;
  auto x = b.Input("x", DType::kFloat32, {2});
  auto y = b.Tensor("y", DType::kFloat32, {2});
  b.CustomOp("Probe", {x}, {y});
  b.Output(y);
  ModelBytes m(b.Finish());
  EoModel* model = m.Create();
  EoInterpreterOptions* o = EoInterpreterOptionsCreate();
  EoCustomOp op = {};
  op.name = "Probe";
  op.prepare = ProbeContext;
  op.invoke = NoMessage;
  ASSERT_EQ(EoInterpreterOptionsAddCustomOp(o, &op), kEoOk);
  EoInterpreter* it = EoInterpreterCreate(model, o);
  ASSERT_NE(it, nullptr) << LastError();
  // An out-of-range status from a callback is reported as internal, with a message.
  EXPECT_EQ(EoInterpreterInvoke(it), kEoInternal);
  EXPECT_NE(LastError(it).find("Probe"), std::string::npos) << LastError(it);
  EXPECT_NE(LastError(it).find("invoke returned"), std::string::npos) << LastError(it);
  EoInterpreterDelete(it);
  EoInterpreterOptionsDelete(o);
  EoModelDelete(model);
}

TEST(CApi, CancelFromAnotherThread) {
  GraphBuilder b;
  int32_t t = b.Input("x", DType::kFloat32, {4});
  for (int i = 0; i < 100; ++i) {
    char name[16];  // (GCC 12 warns falsely on "t" + std::to_string(i) here)
    std::snprintf(name, sizeof(name), "s%d", i);
    int32_t y = b.Tensor(name, DType::kFloat32, {4});
    b.CustomOp("AddK", {t}, {y}, {1});
    t = y;
  }
  b.Output(t);
  ModelBytes m(b.Finish());
  EoModel* model = m.Create();
  AddKCounters c;
  c.sleep_ms = 2;
  EoInterpreter* it = CreateWithAddK(model, &c);
  ASSERT_NE(it, nullptr) << LastError();
  std::thread canceller([&] {
    while (!c.started.load()) std::this_thread::yield();
    EXPECT_EQ(EoInterpreterCancel(it), kEoOk);
  });
  EXPECT_EQ(EoInterpreterInvoke(it), kEoCancelled);
  canceller.join();
  EXPECT_LT(c.invokes.load(), 100);
  EXPECT_NE(LastError(it).find("cancelled"), std::string::npos) << LastError(it);
  c.sleep_ms = 0;
  EXPECT_EQ(EoInterpreterInvoke(it), kEoOk);
  EoInterpreterDelete(it);
  EoModelDelete(model);
}

TEST(CApi, LoadImage) {
  ModelBytes m(api_test::Int8Reshape());  // input [1,2,3] int8: an [H,W,C] image of 1x2 RGB pixels
  EoModel* model = m.Create();
  EoInterpreter* it = EoInterpreterCreate(model, nullptr);
  ASSERT_NE(it, nullptr);
  EoTensor* in = EoInterpreterGetInputTensor(it, 0);
  const std::string path = ::testing::TempDir() + "/edgeopt_c_api_image.bmp";
  api_test::WriteBmp(path, 4, 2, 200, 100, 0);
  EXPECT_EQ(EoTensorLoadImage(nullptr, path.c_str(), nullptr), kEoInvalidArgument);
  EXPECT_EQ(EoTensorLoadImage(in, nullptr, nullptr), kEoInvalidArgument);
  EXPECT_EQ(EoTensorLoadImage(in, (path + ".missing").c_str(), nullptr), kEoNotFound);
  EXPECT_NE(LastError(it).find(".missing"), std::string::npos) << LastError(it);
  // 8-bit input, automatic normalization: raw pixels shifted into int8.
  ASSERT_EQ(EoTensorLoadImage(in, path.c_str(), nullptr), kEoOk) << LastError(it);
  const int8_t* x = static_cast<const int8_t*>(EoTensorData(in));
  EXPECT_EQ(x[0], 200 - 128);
  EXPECT_EQ(x[1], 100 - 128);
  EXPECT_EQ(x[2], -128);
  // With a range the values are quantized with the input's scale 0.5 and zero point 3.
  const float range[2] = {0.0f, 51.0f};
  ASSERT_EQ(EoTensorLoadImage(in, path.c_str(), range), kEoOk) << LastError(it);
  EXPECT_EQ(x[0], 40 * 2 + 3);
  EXPECT_EQ(x[2], 3);
  const float bad_range[2] = {1.0f, 0.0f};
  EXPECT_EQ(EoTensorLoadImage(in, path.c_str(), bad_range), kEoInvalidArgument);
  std::remove(path.c_str());
  EoInterpreterDelete(it);
  EoModelDelete(model);
}

TEST(CApi, ErrorsArePerThread) {
  EXPECT_EQ(EoModelCreateFromFile("/nonexistent/a.tflite"), nullptr);
  std::string other;
  std::thread([&] {
    EXPECT_STREQ(EoGetLastErrorMessage(nullptr), "");  // nothing failed on this thread yet
    EXPECT_EQ(EoModelCreateFromFile("/nonexistent/b.tflite"), nullptr);
    other = EoGetLastErrorMessage(nullptr);
  }).join();
  EXPECT_NE(other.find("b.tflite"), std::string::npos) << other;
  EXPECT_NE(LastError().find("a.tflite"), std::string::npos) << LastError();
}

}  // namespace
}  // namespace edgeopt
