#include "support/fast_vs_reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "runtime/cpu.h"

namespace edgeopt::testing {
namespace {

struct Run {
  std::vector<TensorValue> outputs;
  std::vector<rt::OpInfo> ops;
};

Expected<Run> RunOnce(std::shared_ptr<const rt::Model> model, const std::vector<TensorValue>& inputs,
                      const rt::InterpreterOptions& options) {
  ASSIGN_OR_RETURN(auto interp, rt::Interpreter::Create(model, options));
  Run r;
  ASSIGN_OR_RETURN(r.outputs, InvokeWith(*interp, inputs));
  r.ops = interp->ops();
  return r;
}

// Float values (complex64 as two floats) within check's tolerance: all of them, or only
// float number *index.
bool WithinTolerance(const TensorValue& a, const TensorValue& b, const FastCheck& check, const size_t* index) {
  const auto* x = reinterpret_cast<const float*>(a.data.data());
  const auto* y = reinterpret_cast<const float*>(b.data.data());
  const size_t n = a.data.size() / sizeof(float);
  for (size_t i = index ? *index : 0; i < (index ? *index + 1 : n); ++i) {
    if (std::isnan(x[i]) || std::isnan(y[i])) {
      if (std::isnan(x[i]) != std::isnan(y[i])) return false;
      continue;
    }
    if (x[i] == y[i]) continue;  // also equal infinities
    if (!(std::fabs(static_cast<double>(x[i]) - y[i]) <= check.atol + check.rtol * std::fabs(static_cast<double>(x[i]))))
      return false;
  }
  return true;
}

}  // namespace

bool HaveAvx2() { return rt::Cpu().has_avx2_fma(); }

bool ExpectFastMatchesReference(std::shared_ptr<const rt::Model> model, const std::string& what,
                                const FastCheck& check) {
  CompareOptions copts;
  copts.seed = check.seed;
  const std::vector<TensorValue> inputs = check.inputs.empty() ? RandomInputs(model->graph(), copts) : check.inputs;
  rt::InterpreterOptions ref_opts;
  ref_opts.reference_kernels_only = true;
  rt::InterpreterOptions fast_opts;
  fast_opts.num_threads = check.threads;
  fast_opts.cpu = check.cpu;
  auto ref = RunOnce(model, inputs, ref_opts);
  auto fast = RunOnce(model, inputs, fast_opts);
  if (!ref.ok() || !fast.ok()) {
    ADD_FAILURE() << what << ": " << (!ref.ok() ? "reference: " + ref.status().ToString() : "")
                  << (!fast.ok() ? " fast: " + fast.status().ToString() : "");
    return false;
  }
  bool ok = true;
  if (!check.op_type.empty()) {
    for (const rt::OpInfo& op : fast->ops) {
      const bool checked = op.type == check.op_type || std::find(check.more_op_types.begin(), check.more_op_types.end(),
                                                                  op.type) != check.more_op_types.end();
      if (!checked || op.folded) continue;
      // An op fused into another one ran that op's kernel ("fused/.../int8/avx512vnni/...").
      std::string variant = op.variant;
      if (int first = -1; std::sscanf(variant.c_str(), "fused into #%d", &first) == 1)
        for (const rt::OpInfo& host : fast->ops)
          if (host.index == first) variant = op.variant + " (" + host.variant + ")";
      bool found = false;
      for (size_t at = 0; at <= check.variant.size();) {
        const size_t bar = std::min(check.variant.find('|', at), check.variant.size());
        found = found || variant.find(check.variant.substr(at, bar - at)) != std::string::npos;
        at = bar + 1;
      }
      if (!found) {
        ADD_FAILURE() << what << ": op " << op.index << " (" << op.type << ") ran " << variant << ", expected a "
                      << check.variant << " variant";
        ok = false;
      }
    }
  }
  for (size_t i = 0; i < ref->outputs.size() && i < fast->outputs.size(); ++i) {
    const TensorValue& a = ref->outputs[i];
    const TensorValue& b = fast->outputs[i];
    if (a.shape != b.shape || a.data.size() != b.data.size()) {
      ADD_FAILURE() << what << ": output " << i << " shape differs";
      ok = false;
      continue;
    }
    const bool tolerant = (check.atol > 0 || check.rtol > 0) && (a.type == DType::kFloat32 || a.type == DType::kComplex64);
    if (tolerant ? !WithinTolerance(a, b, check, nullptr) : std::memcmp(a.data.data(), b.data.data(), a.data.size()) != 0) {
      const size_t es = tolerant ? sizeof(float) : DTypeBytes(a.type, 1);
      size_t first = 0, count = 0;
      for (size_t e = 0; e * es < a.data.size(); ++e)
        if (tolerant ? !WithinTolerance(a, b, check, &e) : std::memcmp(&a.data[e * es], &b.data[e * es], es) != 0) {
          if (count == 0) first = e;
          ++count;
        }
      std::ostringstream s;
      s << what << " (threads " << check.threads << "): output " << i << " differs in " << count << " of "
        << a.data.size() / es << (tolerant ? " float values" : " elements") << "; first at " << first << ": reference "
        << (tolerant ? reinterpret_cast<const float*>(a.data.data())[first] : a.At(first)) << ", fast "
        << (tolerant ? reinterpret_cast<const float*>(b.data.data())[first] : b.At(first));
      ADD_FAILURE() << s.str();
      ok = false;
    }
  }
  return ok;
}

bool ExpectFastMatchesReference(const Graph& g, const std::string& what, const FastCheck& check) {
  auto model = rt::Model::FromGraph(g);
  if (!model.ok()) {
    ADD_FAILURE() << what << ": " << model.status().ToString();
    return false;
  }
  return ExpectFastMatchesReference(*model, what, check);
}

FastAndReference MakeFastAndReference(Graph g, int threads) {
  FastAndReference r;
  auto model = rt::Model::FromGraph(std::move(g));
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  if (!model.ok()) return r;
  rt::InterpreterOptions fast_opt, ref_opt;
  fast_opt.num_threads = threads;
  ref_opt.reference_kernels_only = true;
  auto fast = rt::Interpreter::Create(*model, fast_opt);
  auto ref = rt::Interpreter::Create(*model, ref_opt);
  if (!fast.ok() || !ref.ok() || !(*fast)->AllocateTensors().ok() || !(*ref)->AllocateTensors().ok()) {
    ADD_FAILURE() << "cannot create or allocate the fast and reference interpreters";
    return r;
  }
  r.fast = std::move(*fast);
  r.ref = std::move(*ref);
  return r;
}

void ExpectFloatRoundsMatchReference(const Graph& g, std::mt19937& rng, int threads, const std::string& want_variant,
                                     const std::string& what) {
  FastAndReference it = MakeFastAndReference(g, threads);
  ASSERT_TRUE(it.fast && it.ref) << what;
  rt::Interpreter& fast = *it.fast;
  rt::Interpreter& ref = *it.ref;
  EXPECT_EQ(fast.ops()[0].variant, want_variant) << what;
  const int64_t n = fast.input(0)->num_elements();
  for (int round = 0; round < 3; ++round) {
    std::vector<float> x(static_cast<size_t>(n), 0.0f);
    if (round != 1) {
      std::uniform_real_distribution<float> d(round == 2 ? 0.1f : -3.0f, 2.0f);
      for (float& v : x) v = d(rng);
    }
    std::memcpy(fast.input(0)->data, x.data(), x.size() * sizeof(float));
    std::memcpy(ref.input(0)->data, x.data(), x.size() * sizeof(float));
    ASSERT_TRUE(fast.Invoke().ok());
    ASSERT_TRUE(ref.Invoke().ok());
    const rt::RtTensor* got = fast.output(0);
    const rt::RtTensor* want = ref.output(0);
    ASSERT_EQ(got->shape, want->shape);
    int bad = 0;
    for (int64_t i = 0; i < want->num_elements(); ++i)
      if (std::memcmp(got->data_as<float>() + i, want->data_as<float>() + i, sizeof(float)) != 0 && bad++ < 5)
        ADD_FAILURE() << what << " threads " << threads << " round " << round << " element " << i << ": got "
                      << got->data_as<float>()[i] << " want " << want->data_as<float>()[i];
  }
}

}  // namespace edgeopt::testing
