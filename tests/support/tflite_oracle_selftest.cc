// Self-test / smoke check of the TFLite 2.9 oracle wrapper (tests/support/tflite_oracle.*).
// Not a unit test of edgeopt: it checks that the reference runtime loads, runs real models from
// /work/shared/models with and without XNNPACK, that XNNPACK and the built-in kernels agree on
// the float model, that error paths produce useful Status messages, and it prints a timing of
// MobileNetV2 int8 (1 thread, XNNPACK+QS8 vs built-in kernels).
//
//   tflite_oracle_selftest [--models DIR] [--all] [--runs N]
//     --all   additionally load + invoke EVERY *.tflite in DIR with and without XNNPACK and
//             print a table of what fails and why (does not affect the exit code).
// Exit code 0 when all checks pass, 1 otherwise, 77 (skip) when the library is not installed.
//
// Manual build (until CMake wires it):
//   g++ -std=c++20 -O2 -I src -I tests -DEDGEOPT_SOURCE_DIR="\"$PWD\""
//       tests/support/tflite_oracle.cc tests/support/tflite_oracle_selftest.cc -ldl -o /tmp/oracle_selftest
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "support/tflite_oracle.h"

using namespace edgeopt;
using namespace edgeopt::testing;

namespace {

int g_failures = 0;

void Check(bool ok, const std::string& what) {
  std::printf("  [%s] %s\n", ok ? "PASS" : "FAIL", what.c_str());
  if (!ok) ++g_failures;
}

// Seeded random bytes for one input, in a range sensible for its type.
std::vector<uint8_t> RandomInput(const OracleTensor& t, uint32_t seed) {
  std::mt19937 rng(seed);
  size_t n = t.NumElements();
  std::vector<uint8_t> bytes(n * std::max<size_t>(OracleTypeSize(t.type), 1));
  auto put = [&](size_t i, auto v) { std::memcpy(bytes.data() + i * sizeof(v), &v, sizeof(v)); };
  for (size_t i = 0; i < n; ++i) {
    switch (t.type) {
      case kOracleFloat32: put(i, std::uniform_real_distribution<float>(-1.f, 1.f)(rng)); break;
      case kOracleInt32: put(i, static_cast<int32_t>(rng() % 100)); break;  // e.g. token ids
      case kOracleInt64: put(i, static_cast<int64_t>(rng() % 100)); break;
      case kOracleBool: put(i, static_cast<uint8_t>(rng() & 1)); break;
      case kOracleInt16: put(i, static_cast<int16_t>(rng())); break;
      default:
        for (size_t b = 0; b < OracleTypeSize(t.type); ++b) bytes[i * OracleTypeSize(t.type) + b] = rng() & 0xff;
    }
  }
  return bytes;
}

std::string FirstValues(const OracleTensor& t, size_t k = 5) {
  std::string s;
  size_t n = std::min(k, t.NumElements());
  char buf[64];
  for (size_t i = 0; i < n; ++i) {
    switch (t.type) {
      case kOracleFloat32: std::snprintf(buf, sizeof buf, "%.6g", t.Values<float>()[i]); break;
      case kOracleUInt8: std::snprintf(buf, sizeof buf, "%u", t.data[i]); break;
      case kOracleInt8: std::snprintf(buf, sizeof buf, "%d", static_cast<int8_t>(t.data[i])); break;
      case kOracleInt32: std::snprintf(buf, sizeof buf, "%d", t.Values<int32_t>()[i]); break;
      default: std::snprintf(buf, sizeof buf, "0x%02x", t.data[i]);
    }
    s += (i ? " " : "") + std::string(buf);
  }
  return s;
}

struct Diff {
  double max_abs = 0;      // float: max |a-b|; quantized: max LSB difference
  double max_rel = 0;      // float: max |a-b| / max(|b|, 1e-6 * max|b|)
  double rel_to_range = 0; // float: max |a-b| / max|b|
};

Diff Compare(const OracleTensor& a, const OracleTensor& b) {
  Diff d;
  if (a.type == kOracleFloat32) {
    auto x = a.Values<float>(), y = b.Values<float>();
    double range = 0;
    for (float v : y) range = std::max(range, std::fabs(double(v)));
    for (size_t i = 0; i < std::min(x.size(), y.size()); ++i) {
      double e = std::fabs(double(x[i]) - y[i]);
      d.max_abs = std::max(d.max_abs, e);
      d.max_rel = std::max(d.max_rel, e / std::max(std::fabs(double(y[i])), 1e-6 * range + 1e-30));
    }
    d.rel_to_range = range > 0 ? d.max_abs / range : d.max_abs;
  } else if (a.type == kOracleUInt8 || a.type == kOracleInt8) {
    for (size_t i = 0; i < std::min(a.data.size(), b.data.size()); ++i) {
      int x = a.type == kOracleInt8 ? int(int8_t(a.data[i])) : int(a.data[i]);
      int y = b.type == kOracleInt8 ? int(int8_t(b.data[i])) : int(b.data[i]);
      d.max_abs = std::max(d.max_abs, double(std::abs(x - y)));
    }
  } else {
    d.max_abs = a.data == b.data ? 0 : 1;
  }
  return d;
}

struct Config {
  const char* name;
  OracleOptions options;
};

const std::vector<Config> kConfigs = {
    {"builtin", {1, false, 0}},
    {"xnnpack", {1, true, 0}},
    {"xnnpack+QS8", {1, true, kXnnpackFlagQS8}},
    {"xnnpack+QU8", {1, true, kXnnpackFlagQU8}},
    {"xnnpack+QS8|QU8", {1, true, kXnnpackFlagQS8 | kXnnpackFlagQU8}},
};

// Runs one model under all configs with the same seeded inputs; prints and compares to builtin.
void RunModel(const std::shared_ptr<TfliteOracle>& oracle, const std::string& path, bool float_strict) {
  std::printf("\n== %s\n", std::filesystem::path(path).filename().c_str());
  std::vector<OracleTensor> reference;
  std::vector<OracleTensor> inputs;
  for (const Config& c : kConfigs) {
    auto session = OracleSession::Create(path, c.options, oracle);
    if (!session.ok()) {
      std::printf("  %-16s create: %s\n", c.name, session.status().ToString().c_str());
      Check(c.options.xnnpack, std::string(c.name) + " session creation");
      continue;
    }
    if (inputs.empty()) {
      inputs = (*session)->inputs();
      for (size_t i = 0; i < inputs.size(); ++i) {
        inputs[i].data = RandomInput(inputs[i], 1234 + static_cast<uint32_t>(i));
        std::printf("  input %zu '%s' %s%s scale=%g zp=%d\n", i, inputs[i].name.c_str(),
                    OracleTypeName(inputs[i].type).c_str(), ShapeToString(inputs[i].shape).c_str(),
                    inputs[i].scale, inputs[i].zero_point);
      }
    }
    Status st;
    for (size_t i = 0; i < inputs.size() && st.ok(); ++i)
      st = (*session)->SetInput(int(i), inputs[i].data.data(), inputs[i].data.size());
    if (st.ok()) st = (*session)->Invoke();
    if (!st.ok()) {
      std::printf("  %-16s run: %s\n", c.name, st.ToString().c_str());
      Check(false, std::string(c.name) + " invoke");
      continue;
    }
    auto outs = (*session)->GetOutputs();
    Check(outs.ok(), std::string(c.name) + " outputs");
    if (!outs.ok()) continue;
    for (size_t i = 0; i < outs->size(); ++i) {
      const OracleTensor& o = (*outs)[i];
      std::printf("  %-16s out %zu '%s' %s%s: %s", c.name, i, o.name.c_str(), OracleTypeName(o.type).c_str(),
                  ShapeToString(o.shape).c_str(), FirstValues(o).c_str());
      if (!reference.empty()) {
        Diff d = Compare(o, reference[i]);
        if (o.type == kOracleFloat32)
          std::printf("  | vs builtin: max_abs=%.3g max_rel=%.3g rel_to_range=%.3g", d.max_abs, d.max_rel,
                      d.rel_to_range);
        else
          std::printf("  | vs builtin: max diff %g LSB", d.max_abs);
        if (float_strict && o.type == kOracleFloat32) {
          std::printf("\n");
          Check(d.rel_to_range <= 1e-4, std::string(c.name) + " agrees with builtin within 1e-4 relative");
          continue;
        }
      }
      std::printf("\n");
    }
    if (reference.empty()) reference = *outs;
  }
}

void TimeModel(const std::shared_ptr<TfliteOracle>& oracle, const std::string& path, int runs) {
  std::printf("\n== timing %s, 1 thread, %d runs after 5 warm-up\n",
              std::filesystem::path(path).filename().c_str(), runs);
  for (const Config& c : {kConfigs[0], kConfigs[2]}) {
    auto session = OracleSession::Create(path, c.options, oracle);
    if (!session.ok()) {
      Check(false, std::string(c.name) + ": " + session.status().ToString());
      continue;
    }
    auto in = (*session)->inputs();
    for (size_t i = 0; i < in.size(); ++i) {
      auto bytes = RandomInput(in[i], 99);
      Check((*session)->SetInput(int(i), bytes.data(), bytes.size()).ok(), "set input");
    }
    auto ms = (*session)->TimeInvokes(5, runs);
    if (!ms.ok()) {
      Check(false, ms.status().ToString());
      continue;
    }
    auto sorted = *ms;
    std::sort(sorted.begin(), sorted.end());
    std::printf("  %-12s median %.2f ms  (min %.2f, max %.2f)\n", c.name, MedianMs(*ms), sorted.front(),
                sorted.back());
  }
}

void ErrorPaths(const std::shared_ptr<TfliteOracle>& oracle, const std::string& dir) {
  std::printf("\n== error paths\n");
  auto missing = OracleSession::Create(dir + "/does_not_exist.tflite", {}, oracle);
  std::printf("  missing file: %s\n", missing.status().ToString().c_str());
  Check(!missing.ok() && missing.status().code() == StatusCode::kNotFound, "missing file -> not found");

  const char garbage[] = "this is not a flatbuffer, just some bytes to feed the verifier..";
  auto bad = OracleSession::CreateFromBuffer(garbage, sizeof garbage, {}, oracle, "garbage.tflite");
  std::printf("  garbage buffer: %s\n", bad.status().ToString().c_str());
  Check(!bad.ok() && bad.status().message().find("garbage.tflite") != std::string::npos &&
            bad.status().message().find("TFLite says") != std::string::npos,
        "garbage buffer -> invalid model with TFLite's text");

  std::string float_model = dir + "/mobilenet_v1_0.25_224_float.tflite";
  auto s = OracleSession::Create(float_model, {}, oracle);
  Check(s.ok(), "create float model");
  if (!s.ok()) return;
  Status wrong = (*s)->SetInput(0, garbage, sizeof garbage);
  std::printf("  wrong input size: %s\n", wrong.ToString().c_str());
  Check(!wrong.ok(), "wrong input size rejected");
  Status rs = (*s)->ResizeInput(0, {1, 224, 224, 5});
  std::printf("  bad resize: %s\n", rs.ToString().c_str());
  Check(!rs.ok() && rs.message().find("TFLite says") != std::string::npos, "bad resize carries TFLite text");
  // Batch resize works (then restore).
  Status rs2 = (*s)->ResizeInput(0, {2, 224, 224, 3});
  Check(rs2.ok() && (*s)->inputs()[0].shape == std::vector<int>({2, 224, 224, 3}), "resize to batch 2");

  // Buffer-based creation of a real model and RunOnce with a resized input.
  std::FILE* f = std::fopen(float_model.c_str(), "rb");
  std::vector<uint8_t> bytes;
  if (f) {
    char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) bytes.insert(bytes.end(), buf, buf + n);
    std::fclose(f);
  }
  auto fromMem = OracleSession::CreateFromBuffer(bytes.data(), bytes.size(), {}, oracle, "mem:mobilenet");
  Check(fromMem.ok(), "CreateFromBuffer on a real model");
  OracleTensor in = (*s)->inputs()[0];
  in.shape = {2, 224, 224, 3};
  in.data = RandomInput(in, 5);
  auto outs = RunOnce(float_model, {in}, {}, oracle);
  Check(outs.ok() && (*outs)[0].shape == std::vector<int>({2, 1001}), "RunOnce resizes to batch 2 -> [2,1001]");
}

void SweepAll(const std::shared_ptr<TfliteOracle>& oracle, const std::string& dir) {
  std::printf("\n== sweep: every model in %s (load + invoke with seeded random inputs)\n", dir.c_str());
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".tflite") paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());
  for (const std::string& p : paths) {
    for (const Config& c : kConfigs) {
      auto session = OracleSession::Create(p, c.options, oracle);
      std::string result;
      if (!session.ok()) {
        result = "FAIL create: " + session.status().ToString();
      } else {
        Status st;
        auto in = (*session)->inputs();
        for (size_t i = 0; i < in.size() && st.ok(); ++i) {
          auto b = RandomInput(in[i], 7 + uint32_t(i));
          st = (*session)->SetInput(int(i), b.data(), b.size());
        }
        if (st.ok()) st = (*session)->Invoke();
        result = st.ok() ? "ok" : "FAIL invoke: " + st.ToString();
        if (st.ok()) {
          auto o = (*session)->GetOutputs();
          result += " (" + std::to_string(o->size()) + " outputs, out0 " + OracleTypeName((*o)[0].type) +
                    ShapeToString((*o)[0].shape) + ")";
        }
      }
      std::printf("  %-42s %-16s %s\n", std::filesystem::path(p).filename().c_str(), c.name, result.c_str());
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "/work/shared/models";
  bool all = false;
  int runs = 30;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--models" && i + 1 < argc) dir = argv[++i];
    else if (a == "--all") all = true;
    else if (a == "--runs" && i + 1 < argc) runs = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--models DIR] [--all] [--runs N]\n", argv[0]);
      return 2;
    }
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (!TfliteOracle::LibraryPresent()) {
    std::printf("SKIP: %s\n", TfliteOracle::MissingReason().c_str());
    return 77;
  }
  auto oracle = TfliteOracle::Load();
  if (!oracle.ok()) {
    std::printf("FAIL: %s\n", oracle.status().ToString().c_str());
    return 1;
  }
  std::printf("TFLite %s from %s\n", (*oracle)->Version().c_str(), (*oracle)->lib_path().c_str());
  auto again = TfliteOracle::Load();
  Check(again.ok() && again->get() == oracle->get(), "Load() caches the library (dlopen once)");

  RunModel(*oracle, dir + "/mobilenet_v1_0.25_224_float.tflite", /*float_strict=*/true);
  RunModel(*oracle, dir + "/mobilenet_v2_1.0_224_ptq_int8.tflite", false);
  RunModel(*oracle, dir + "/ssd_mobilenet_v1_coco_quant.tflite", false);
  RunModel(*oracle, dir + "/mnist_lstm_float.tflite", /*float_strict=*/true);
  ErrorPaths(*oracle, dir);
  TimeModel(*oracle, dir + "/mobilenet_v2_1.0_224_ptq_int8.tflite", runs);
  if (all) SweepAll(*oracle, dir);

  std::printf("\n%s (%d failure%s)\n", g_failures ? "FAILED" : "ALL PASSED", g_failures, g_failures == 1 ? "" : "s");
  return g_failures ? 1 : 0;
}
