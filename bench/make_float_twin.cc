// edgeopt_make_float_twin: turns a fully quantized model (int8/uint8 activations, int8 weights,
// int32 biases) into its float32 twin for benchmarking float kernels on a real architecture
// with trained weights: constants are dequantized (per tensor or per channel), activations
// become float32 without quantization, and QUANTIZE/DEQUANTIZE ops disappear (their output
// readers read their input). This is how the float MobileNetV2 of /work/shared/anchors was made.
//
//   edgeopt_make_float_twin IN.tflite OUT.tflite
#include <cstdio>
#include <cstring>
#include <vector>

#include "format/reader.h"
#include "format/writer.h"
#include "graph/graph.h"

using namespace edgeopt;

namespace {

bool IsIntType(DType t) { return t == DType::kInt8 || t == DType::kUInt8 || t == DType::kInt32 || t == DType::kInt16; }

double IntAt(const uint8_t* p, DType t, int64_t i) {
  switch (t) {
    case DType::kInt8: return reinterpret_cast<const int8_t*>(p)[i];
    case DType::kUInt8: return p[i];
    case DType::kInt16: { int16_t v; std::memcpy(&v, p + 2 * i, 2); return v; }
    default: { int32_t v; std::memcpy(&v, p + 4 * i, 4); return v; }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: edgeopt_make_float_twin IN.tflite OUT.tflite\n");
    return 2;
  }
  auto read = ReadModelFile(argv[1]);
  if (!read.ok()) {
    std::fprintf(stderr, "%s\n", read.status().ToString().c_str());
    return 1;
  }
  Graph g = std::move(*read);
  for (Subgraph& sg : g.subgraphs) {
    for (Tensor& t : sg.tensors) {
      if (!t.is_quantized() || !IsIntType(t.type)) continue;
      if (g.IsConstant(t)) {
        const auto bytes = g.TensorData(t);
        const QuantParams& q = *t.quant;
        const int64_t n = t.num_elements();
        // Channel of element i along the quantized dimension (row-major).
        int64_t inner = 1;
        for (size_t d = q.quantized_dimension + 1; d < t.shape.size(); ++d) inner *= t.shape[d];
        const int64_t channels = t.shape.empty() ? 1 : t.shape[q.quantized_dimension];
        std::vector<float> f(n);
        for (int64_t i = 0; i < n; ++i) {
          const size_t c = q.per_axis() ? static_cast<size_t>((i / inner) % channels) : 0;
          f[i] = static_cast<float>(q.sc(c) * (IntAt(bytes.data(), t.type, i) - static_cast<double>(q.zp(c))));
        }
        t.buffer = g.AddBuffer(Buffer::FromValues<float>(f));
      }
      t.type = DType::kFloat32;
      t.quant.reset();
    }
    // Drop QUANTIZE / DEQUANTIZE: readers of the output read the input instead.
    for (int i = static_cast<int>(sg.ops.size()) - 1; i >= 0; --i) {
      const Operator& op = sg.ops[i];
      if (op.code != tflite::BuiltinOperator_QUANTIZE && op.code != tflite::BuiltinOperator_DEQUANTIZE) continue;
      if (sg.tensors[op.inputs[0]].type != DType::kFloat32 || sg.tensors[op.outputs[0]].type != DType::kFloat32) continue;
      const int32_t in = op.inputs[0], out = op.outputs[0];
      sg.RemoveOp(i);
      sg.ReplaceTensorUses(out, in);
      for (auto& sig : g.signatures)
        for (auto& m : sig.outputs)
          if (m.tensor_index == static_cast<uint32_t>(out)) m.tensor_index = in;
    }
  }
  g.DropUnused();
  Status st = WriteModelFile(g, argv[2]);
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.ToString().c_str());
    return 1;
  }
  std::printf("wrote %s\n", argv[2]);
  return 0;
}
