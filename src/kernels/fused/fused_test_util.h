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

// Runs `model` once on float inputs (one vector per input, in order) with `threads` threads and
// InterpreterOptions::fuse_ops = fuse.
inline FusionRun RunWithFusion(const std::shared_ptr<const rt::Model>& model,
                               const std::vector<std::vector<float>>& inputs, int threads, bool fuse) {
  FusionRun r;
  rt::InterpreterOptions io;
  io.num_threads = threads;
  io.fuse_ops = fuse;
  auto interp = rt::Interpreter::Create(model, io);
  EXPECT_TRUE(interp.ok()) << interp.status().ToString();
  if (!interp.ok()) return r;
  for (size_t k = 0; k < inputs.size(); ++k)
    std::memcpy((*interp)->input(static_cast<int>(k))->data, inputs[k].data(), inputs[k].size() * sizeof(float));
  const Status st = (*interp)->Invoke();
  EXPECT_TRUE(st.ok()) << st.ToString();
  for (int k = 0; k < (*interp)->num_outputs(); ++k) {
    const rt::RtTensor* o = (*interp)->output(k);
    r.outs.emplace_back(o->data, o->data + o->bytes);
  }
  for (const auto& info : (*interp)->ops()) r.variants.push_back(info.variant);
  return r;
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
