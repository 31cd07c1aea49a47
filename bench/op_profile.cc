// edgeopt_op_profile: edgeopt alone on one model — median latency and a per-op profile (kernel
// variant, MACs, median time, GFLOP/s), to see where an invoke spends its time.
//
//   edgeopt_op_profile [--threads N] [--runs R] [--top K] [--stand-ins] MODEL.tflite
// --stand-ins: stand-in float kernels for ops without one yet (tests/support/float_stand_ins.h).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "median.h"
#include "runtime/interpreter.h"
#include "support/conformance.h"
#include "support/float_stand_ins.h"

using namespace edgeopt;

namespace {

using bench::Median;

}  // namespace

int main(int argc, char** argv) {
  int threads = 1, runs = 50, top = 25;
  bool stand_ins = false;
  std::string path;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "--threads" && i + 1 < argc) threads = std::stoi(argv[++i]);
    else if (s == "--runs" && i + 1 < argc) runs = std::stoi(argv[++i]);
    else if (s == "--top" && i + 1 < argc) top = std::stoi(argv[++i]);
    else if (s == "--stand-ins") stand_ins = true;
    else path = s;
  }
  if (path.empty()) {
    std::fprintf(stderr, "usage: edgeopt_op_profile [--threads N] [--runs R] [--top K] [--stand-ins] MODEL.tflite\n");
    return 2;
  }
  auto model = rt::Model::FromFile(path);
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.status().ToString().c_str());
    return 1;
  }
  rt::InterpreterOptions io;
  io.num_threads = threads;
  if (stand_ins) io.op_resolver = testing::FloatStandInsForMissingOps();
  auto interp = rt::Interpreter::Create(*model, io);
  if (!interp.ok()) {
    std::fprintf(stderr, "%s\n", interp.status().ToString().c_str());
    return 1;
  }
  auto inputs = testing::RandomInputs((*model)->graph(), testing::CompareOptions{});
  for (size_t i = 0; i < inputs.size(); ++i)
    std::memcpy((*interp)->input(static_cast<int>(i))->data, inputs[i].data.data(), inputs[i].data.size());
  for (int w = 0; w < 5; ++w) (void)(*interp)->Invoke();

  // Plain latency first (profiling off), then the per-op profile.
  std::vector<double> total;
  for (int r = 0; r < runs; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    (void)(*interp)->Invoke();
    total.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  (*interp)->EnableProfiling(true);
  const auto ops = (*interp)->ops();
  std::map<int, std::vector<double>> per_op;
  for (int r = 0; r < runs; ++r) {
    (void)(*interp)->Invoke();
    for (const auto& t : (*interp)->last_profile()) per_op[t.op_index].push_back((t.end_ns - t.begin_ns) * 1e-6);
  }
  struct Row {
    int index;
    std::string type, variant;
    int64_t macs;
    double ms;
  };
  std::vector<Row> rows;
  double sum = 0;
  for (const auto& info : ops) {
    if (info.folded) continue;
    const double ms = Median(per_op[info.index]);
    sum += ms;
    rows.push_back({info.index, info.type, info.variant, info.macs, ms});
  }
  std::printf("%s: %d threads, median invoke %.3f ms (min %.3f), sum of op medians %.3f ms\n", path.c_str(), threads,
              Median(total), *std::min_element(total.begin(), total.end()), sum);
  std::map<std::string, double> by_variant;
  for (const auto& r : rows) by_variant[r.variant] += r.ms;
  for (const auto& [v, ms] : by_variant) std::printf("  %-32s %8.3f ms %5.1f%%\n", v.c_str(), ms, 100 * ms / sum);
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.ms > b.ms; });
  std::printf("%5s %-20s %-28s %10s %9s %8s  %s\n", "op", "type", "variant", "MMACs", "ms", "GFLOP/s",
              "input -> output (weights)");
  const Subgraph& sg = (*model)->graph().subgraphs[0];
  for (int i = 0; i < std::min<int>(top, static_cast<int>(rows.size())); ++i) {
    const Row& r = rows[i];
    const Operator& op = sg.ops[r.index];
    auto shape = [&](int32_t t) { return t >= 0 ? rt::ShapeToString(sg.tensors[t].shape) : std::string("-"); };
    std::string shapes = op.inputs.empty() ? "" : shape(op.inputs[0]);
    shapes += " -> " + (op.outputs.empty() ? std::string("-") : shape(op.outputs[0]));
    if (op.inputs.size() > 1) shapes += " (" + shape(op.inputs[1]) + ")";
    std::printf("%5d %-20s %-28s %10.2f %9.4f %8.1f  %s\n", r.index, r.type.c_str(), r.variant.c_str(), r.macs * 1e-6,
                r.ms, r.ms > 0 ? 2.0 * r.macs / (r.ms * 1e6) : 0.0, shapes.c_str());
  }
  return 0;
}
