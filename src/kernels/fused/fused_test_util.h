// Test helper shared by the fusion tests: one model run with fusion on or off.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/interpreter.h"

namespace edgeopt::testing {

struct FusionRun {
  std::vector<std::vector<uint8_t>> outs;  // every output's bytes
  std::vector<std::string> variants;       // every op's variant, in run order
};

// One invoke of an interpreter whose inputs are set: every output's bytes and every op's variant.
inline FusionRun InvokeAndCollect(rt::Interpreter& interp) {
  FusionRun r;
  const Status st = interp.Invoke();
  EXPECT_TRUE(st.ok()) << st.ToString();
  for (int k = 0; k < interp.num_outputs(); ++k) {
    const rt::RtTensor* o = interp.output(k);
    r.outs.emplace_back(o->data, o->data + o->bytes);
  }
  for (const auto& info : interp.ops()) r.variants.push_back(info.variant);
  return r;
}

// Runs `model` once on float inputs (one vector per input, in order) with `threads` threads and
// InterpreterOptions::fuse_ops = fuse.
inline FusionRun RunWithFusion(const std::shared_ptr<const rt::Model>& model,
                               const std::vector<std::vector<float>>& inputs, int threads, bool fuse) {
  rt::InterpreterOptions io;
  io.num_threads = threads;
  io.fuse_ops = fuse;
  auto interp = rt::Interpreter::Create(model, io);
  EXPECT_TRUE(interp.ok()) << interp.status().ToString();
  if (!interp.ok()) return {};
  for (size_t k = 0; k < inputs.size(); ++k)
    std::memcpy((*interp)->input(static_cast<int>(k))->data, inputs[k].data(), inputs[k].size() * sizeof(float));
  return InvokeAndCollect(**interp);
}

// Runs `model` with options `io` on raw bytes: input 0 gets x after a first invoke on x's bytes
// complemented (what a kernel keeps from one invoke to the next must follow the input); further
// inputs (a residual) keep fixed bytes made from x's.
inline FusionRun RunOnBytes(const std::shared_ptr<const rt::Model>& model, const std::vector<uint8_t>& x,
                            const rt::InterpreterOptions& io) {
  auto interp = rt::Interpreter::Create(model, io);
  EXPECT_TRUE(interp.ok()) << interp.status().ToString();
  if (!interp.ok()) return {};
  std::vector<uint8_t> other(x.size());
  for (size_t i = 0; i < x.size(); ++i) other[i] = static_cast<uint8_t>(~x[i]);
  std::memcpy((*interp)->input(0)->data, other.data(), other.size());
  for (int k = 1; k < (*interp)->num_inputs(); ++k) {
    rt::RtTensor* in = (*interp)->input(k);
    for (size_t e = 0; e < in->bytes; ++e) in->data[e] = static_cast<uint8_t>(x[(e * 7 + k) % x.size()] * 5 + 3);
  }
  EXPECT_TRUE((*interp)->Invoke().ok());
  std::memcpy((*interp)->input(0)->data, x.data(), x.size());
  return InvokeAndCollect(**interp);
}

// Uniform random values in [lo, hi) for every input of the model's main subgraph, in order.
inline std::vector<std::vector<float>> RandomFloatInputs(const rt::Model& model, std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<std::vector<float>> inputs;
  const auto& g = model.graph().main();
  for (int32_t t : g.inputs) {
    int64_t n = 1;
    for (int32_t d : g.tensors[t].shape) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (float& e : v) e = u(rng);
    inputs.push_back(std::move(v));
  }
  return inputs;
}

}  // namespace edgeopt::testing
