// Small .tflite models for the public API tests, built with the (internal) GraphBuilder and
// serialized: the tests then use nothing but the public API on the bytes.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "format/writer.h"
#include "graph/builder.h"

namespace edgeopt::api_test {

inline std::vector<uint8_t> Serialize(const Graph& g) {
  auto bytes = SerializeModel(g);
  if (!bytes.ok()) return {};
  return std::move(*bytes);
}

// x [2,3] f32 -> AddK(1) -> AddK(2) -> ... (n custom ops; AddK adds its first custom-options byte).
inline Graph AddKChain(int n, std::vector<int32_t> shape = {2, 3}) {
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
  b.SetDescription("addk chain");
  return b.Finish();
}

// x [1,2,3] int8 (scale 0.5, zero point 3) -> RESHAPE -> y [3,2] int8 (built-in kernel only).
inline Graph Int8Reshape() {
  GraphBuilder b;
  auto x = b.Input("x", DType::kInt8, {1, 2, 3}, Quant(0.5f, 3));
  auto y = b.Tensor("y", DType::kInt8, {3, 2}, Quant(0.5f, 3));
  tflite::ReshapeOptionsT o;
  o.new_shape = {3, 2};
  b.Op(tflite::BuiltinOperator_RESHAPE, {x}, {y}, o);
  b.Output(y);
  return b.Finish();
}

// Two signatures: "add" (subgraph 0: AddK 1, input "in", output "out") and "add_more"
// (subgraph 1: AddK 5 on a resizable [-1] input "values", output "result").
inline Graph TwoSignatures() {
  GraphBuilder b;
  auto x = b.Input("x", DType::kFloat32, {2});
  auto y = b.Tensor("y", DType::kFloat32, {2});
  b.CustomOp("AddK", {x}, {y}, {1});
  b.Output(y);
  b.AddSignature("add", 0);
  b.NewSubgraph("more");
  auto v = b.Input("v", DType::kFloat32, {3});
  auto r = b.Tensor("r", DType::kFloat32, {3});
  b.CustomOp("AddK", {v}, {r}, {5});
  b.Output(r);
  b.current().tensors[v].shape_signature = {-1};
  b.AddSignature("add_more", 1);
  Graph g = b.Finish();
  g.signatures[0].inputs[0].name = "in";
  g.signatures[0].outputs[0].name = "out";
  g.signatures[1].inputs[0].name = "values";
  g.signatures[1].outputs[0].name = "result";
  return g;
}

// Writes a 24-bit BMP of w x h pixels, every pixel (r, g, b).
inline void WriteBmp(const std::string& path, int w, int h, uint8_t r, uint8_t g, uint8_t b) {
  const int row = (w * 3 + 3) / 4 * 4;
  const uint32_t size = 54 + static_cast<uint32_t>(row * h);
  std::vector<uint8_t> f(size, 0);
  auto put32 = [&](size_t at, uint32_t v) { std::memcpy(&f[at], &v, 4); };
  auto put16 = [&](size_t at, uint16_t v) { std::memcpy(&f[at], &v, 2); };
  f[0] = 'B', f[1] = 'M';
  put32(2, size);
  put32(10, 54);
  put32(14, 40);
  put32(18, static_cast<uint32_t>(w));
  put32(22, static_cast<uint32_t>(h));
  put16(26, 1);
  put16(28, 24);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint8_t* p = &f[54 + static_cast<size_t>(y) * row + x * 3];
      p[0] = b, p[1] = g, p[2] = r;
    }
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(f.data()), size);
}

}  // namespace edgeopt::api_test
