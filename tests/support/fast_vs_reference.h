// Optimized kernels against the reference kernels: one model run twice on the same seeded
// random inputs, once with InterpreterOptions::reference_kernels_only and once with the fast
// kernels (optionally several threads); every output must be byte-identical (or, for float
// paths, within a stated tolerance). Optionally checks
// that the fast run really used the expected variant (so a declined fast path cannot pass as
// "equal to the reference" by running the reference twice).
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "runtime/interpreter.h"
#include "support/conformance.h"

namespace edgeopt::testing {

struct FastCheck {
  int threads = 1;
  uint64_t seed = 1;
  // When set: every op of type `op_type` ("CONV_2D") must run a variant containing `variant`
  // (or one of its '|'-separated alternatives).
  std::string op_type;
  std::vector<std::string> more_op_types;  // further op types checked the same way
  std::string variant = "avx2";
  // CPU features the fast run may use (null: this CPU's, rt::Cpu()); e.g. an "avx2" cap to test
  // the AVX2 variants on an AVX-512 machine.
  const rt::CpuFeatures* cpu = nullptr;
  // Inputs (random from `seed` when empty).
  std::vector<TensorValue> inputs;
  // Float paths: when either is set, float32 / complex64 outputs may differ by
  // atol + rtol * |reference| per value (NaN must meet NaN); other outputs stay byte-exact.
  double atol = 0, rtol = 0;
};

// Returns whether the outputs matched (and the variant check passed); reports failures through
// GoogleTest with `what` and the first differing element.
bool ExpectFastMatchesReference(const Graph& g, const std::string& what, const FastCheck& check = {});
bool ExpectFastMatchesReference(std::shared_ptr<const rt::Model> model, const std::string& what,
                                const FastCheck& check = {});

// The graph's model with the fast kernels (`threads`) and with reference kernels only, both
// allocated; null pointers (and a test failure) when any step fails.
struct FastAndReference {
  std::unique_ptr<rt::Interpreter> fast, ref;
};
FastAndReference MakeFastAndReference(Graph g, int threads);

// A graph whose input 0 is float32 (other inputs constant) run with the fast kernels (`threads`)
// and with reference kernels only, over three rounds of input 0: uniform in [-3, 2), all zeros,
// uniform in [0.1, 2) (one sign: an asymmetric zero point at the range end); output 0 must be
// byte-identical and the fast run's op 0 must run `want_variant`. Failures are reported through
// GoogleTest with `what`.
void ExpectFloatRoundsMatchReference(const Graph& g, std::mt19937& rng, int threads, const std::string& want_variant,
                                     const std::string& what);

// True when this CPU runs the AVX2 kernels (tests of them skip otherwise).
bool HaveAvx2();

}  // namespace edgeopt::testing
