// Fast integer elementwise / quantize / pooling kernels (kernels/quant_fast) against their
// reference kernels, one thread, on the shapes of the real models (MobileNetV2, ResNet-8 heads).
// Every iteration invokes the fast interpreter and the reference-only one on the same one-op
// graph (load on a shared machine hits both alike). Counters:
//   fast_us / ref_us   mean microseconds per invoke
//   speedup            ref_us / fast_us
//   Gelem/s            output elements per second of the fast kernel
//   build/bench/edgeopt_kernel_bench --benchmark_filter=QuantFast
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <random>

#include "graph/builder.h"
#include "runtime/interpreter.h"

namespace edgeopt {
namespace {

double NowUs() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct BenchCase {
  const char* name;
  Graph graph;
};

BenchCase MakeCase(int index) {
  GraphBuilder b(1);
  const DType i8 = DType::kInt8, u8 = DType::kUInt8;
  switch (index) {
    case 0: case 1: {  // ADD int8 same shape / per-channel vector (MobileNetV2 residual, bias-like add)
      const auto x = b.Input("x", i8, {1, 56, 56, 24}, Quant(0.31f, -3));
      const auto y = index == 0 ? b.Input("y", i8, {1, 56, 56, 24}, Quant(0.27f, 5)) : b.Input("y", i8, {24}, Quant(0.27f, 5));
      const auto z = b.Tensor("z", i8, {1, 56, 56, 24}, Quant(0.4f, -1));
      b.Op(tflite::BuiltinOperator_ADD, {x, y}, {z}, tflite::AddOptionsT());
      b.Output(z);
      return {index == 0 ? "ADD int8 [1,56,56,24]+[1,56,56,24]" : "ADD int8 [1,56,56,24]+[24]", b.Finish()};
    }
    case 2: {
      const auto x = b.Input("x", u8, {1, 56, 56, 24}, Quant(0.31f, 120));
      const auto y = b.Input("y", u8, {1, 56, 56, 24}, Quant(0.02f, 130));
      const auto z = b.Tensor("z", u8, {1, 56, 56, 24}, Quant(0.4f, 128));
      b.Op(tflite::BuiltinOperator_MUL, {x, y}, {z}, tflite::MulOptionsT());
      b.Output(z);
      return {"MUL uint8 [1,56,56,24]", b.Finish()};
    }
    case 3: {
      const auto x = b.Input("x", u8, {1, 224, 224, 3}, Quant(0.0078125f, 128));
      const auto z = b.Tensor("z", i8, {1, 224, 224, 3}, Quant(0.0078125f, 0));
      b.Op(tflite::BuiltinOperator_QUANTIZE, {x}, {z});
      b.Output(z);
      return {"QUANTIZE uint8->int8 sign flip [1,224,224,3]", b.Finish()};
    }
    case 4: {
      const auto x = b.Input("x", DType::kFloat32, {1, 224, 224, 3});
      const auto z = b.Tensor("z", i8, {1, 224, 224, 3}, Quant(0.0078125f, -1));
      b.Op(tflite::BuiltinOperator_QUANTIZE, {x}, {z});
      b.Output(z);
      return {"QUANTIZE float32->int8 [1,224,224,3]", b.Finish()};
    }
    case 5: {
      const auto x = b.Input("x", i8, {1, 224, 224, 3}, Quant(0.0078125f, -1));
      const auto z = b.Tensor("z", DType::kFloat32, {1, 224, 224, 3});
      b.Op(tflite::BuiltinOperator_DEQUANTIZE, {x}, {z});
      b.Output(z);
      return {"DEQUANTIZE int8->float32 [1,224,224,3]", b.Finish()};
    }
    case 6: case 7: {
      const bool avg = index == 6;
      const std::vector<int32_t> in = avg ? std::vector<int32_t>{1, 7, 7, 1280} : std::vector<int32_t>{1, 56, 56, 64};
      const std::vector<int32_t> out = avg ? std::vector<int32_t>{1, 1, 1, 1280} : std::vector<int32_t>{1, 28, 28, 64};
      const auto x = b.Input("x", u8, in, Quant(0.02f, 3));
      const auto z = b.Tensor("z", u8, out, Quant(0.02f, 3));
      tflite::Pool2DOptionsT o;
      o.padding = avg ? tflite::Padding_VALID : tflite::Padding_SAME;
      o.filter_height = o.filter_width = avg ? 7 : 3;
      o.stride_h = o.stride_w = avg ? 1 : 2;
      b.Op(avg ? tflite::BuiltinOperator_AVERAGE_POOL_2D : tflite::BuiltinOperator_MAX_POOL_2D, {x}, {z}, o);
      b.Output(z);
      return {avg ? "AVERAGE_POOL_2D uint8 7x7 [1,7,7,1280]" : "MAX_POOL_2D uint8 3x3/2 [1,56,56,64]", b.Finish()};
    }
    case 8: {
      const auto x = b.Input("x", i8, {1, 7, 7, 1280}, Quant(0.02f, -5));
      const auto axes = b.Const<int32_t>("axes", DType::kInt32, {2}, {1, 2});
      const auto z = b.Tensor("z", i8, {1, 1280}, Quant(0.01f, 3));
      b.Op(tflite::BuiltinOperator_MEAN, {x, axes}, {z}, tflite::ReducerOptionsT());
      b.Output(z);
      return {"MEAN int8 axes {1,2} [1,7,7,1280]", b.Finish()};
    }
  }
  return {"", Graph()};
}

std::unique_ptr<rt::Interpreter> Make(const Graph& g, bool reference_only) {
  auto model = rt::Model::FromGraph(g);
  if (!model.ok()) return nullptr;
  rt::InterpreterOptions o;
  o.num_threads = 1;
  o.reference_kernels_only = reference_only;
  auto it = rt::Interpreter::Create(*model, o);
  if (!it.ok() || !(*it)->AllocateTensors().ok()) return nullptr;
  std::mt19937 rng(3);
  for (int i = 0; i < (*it)->num_inputs(); ++i) {
    rt::RtTensor* t = (*it)->input(i);
    if (t->type == DType::kFloat32) {
      std::uniform_real_distribution<float> u(-1, 1);
      for (int64_t k = 0; k < t->num_elements(); ++k) t->data_as<float>()[k] = u(rng);
    } else {
      for (size_t k = 0; k < t->bytes; ++k) t->data[k] = static_cast<uint8_t>(rng());
    }
  }
  return std::move(*it);
}

void BM_QuantFast(benchmark::State& state) {
  BenchCase c = MakeCase(static_cast<int>(state.range(0)));
  auto fast = Make(c.graph, false), ref = Make(c.graph, true);
  if (!fast || !ref) {
    state.SkipWithError("could not create the interpreters");
    return;
  }
  state.SetLabel(std::string(c.name) + " [" + fast->ops().at(0).variant + " vs " + ref->ops().at(0).variant + "]");
  double fast_us = 0, ref_us = 0;
  for (auto _ : state) {
    const double t0 = NowUs();
    (void)fast->Invoke();
    const double t1 = NowUs();
    (void)ref->Invoke();
    ref_us += NowUs() - t1;
    fast_us += t1 - t0;
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["fast_us"] = fast_us / n;
  state.counters["ref_us"] = ref_us / n;
  state.counters["speedup"] = ref_us / fast_us;
  state.counters["Gelem/s"] = static_cast<double>(fast->output(0)->num_elements()) * n / fast_us / 1e3;
}
BENCHMARK(BM_QuantFast)->DenseRange(0, 8)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace edgeopt
