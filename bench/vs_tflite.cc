// edgeopt_vs_tflite: latency of edgeopt and the TFLite 2.9 C library (XNNPACK delegate on, QS8
// flag for signed int8, same thread count) side by side in one process, on the same inputs.
// Runs alternate in rounds so that machine noise hits both alike; medians and the ratio
// edgeopt / TFLite are printed (below 1.0 means edgeopt is faster).
//
//   edgeopt_vs_tflite [--threads 1,2] [--rounds 10] [--runs 10] [--warmup 5] [--no-xnnpack]
//                     [--reference-kernels] [--cpu-time] [--settle-ms M] [--sequential] [--stand-ins]
//                     MODEL.tflite...
//
// --settle-ms M (multi-thread runs only; default 50, 0 turns it off): sleep before each block of
// runs, so the other runtime's worker threads, which spin for a while after their last job, have
// gone to sleep and take no CPU from the block measured. Each block then also starts with
// sleeping workers (like an application invoking every few frames rather than back to back).
// After the pause the block's runtime runs its warm-up count of untimed invokes, which wake
// its workers and the vCPUs again (MobileNetV2 float at 2 threads: 3.32 ms timed straight after
// the pause, 2.88-3.07 after them; TFLite likewise). Without settling the 2-thread figures
// measure the two runtimes fighting over the CPUs: TFLite's
// XNNPACK workers still spun for milliseconds after its block, and edgeopt's next block ran
// mostly on one thread (MobileNetV2 float at 2 threads: 3.95 ms against 3.57, ratio 1.11; with
// 5 / 20 / 60 ms of settling 0.85 / 0.70 / 0.67; --sequential 0.64).
//
// --sequential: all edgeopt rounds, then all TFLite rounds, each after a 300 ms pause, so that
// neither runtime's spinning worker threads compete with the other's runs. Alternation (the
// default) spreads machine noise evenly, but with several threads each runtime then runs right
// after the other's workers were active.
//
// --stand-ins: stand-in float kernels (tests/support/float_stand_ins.h) for the ops this build
// has no kernel for yet (RESIZE_BILINEAR, CONCATENATION, MEAN), so DeepLabV3 and MobileNetV2 run.
//
// --cpu-time: also the medians of the calling thread's CPU time per invoke, for 1-thread runs
// (both runtimes then compute on the calling thread only). On a loaded machine this counts only
// the time the thread actually ran, so it is far steadier than wall time.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core_link.h"
#include "median.h"
#include "runtime/interpreter.h"
#include "support/conformance.h"
#include "support/float_stand_ins.h"
#include "support/tflite_oracle.h"

using namespace edgeopt;

namespace {

using bench::Median;

double NowMs() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double ThreadCpuMs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

struct Args {
  std::vector<int> threads = {1};
  int rounds = 10, runs = 10, warmup = 5;
  bool xnnpack = true;
  bool reference = false;
  bool cpu_time = false;
  int settle_ms = 50;
  bool sequential = false;
  bool stand_ins = false;
  std::vector<std::string> models;
};

bool ParseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (s == "--threads") {
      a->threads.clear();
      std::string list = next();
      size_t pos = 0;
      while (pos < list.size()) {
        size_t comma = list.find(',', pos);
        a->threads.push_back(std::stoi(list.substr(pos, comma - pos)));
        pos = comma == std::string::npos ? list.size() : comma + 1;
      }
    } else if (s == "--rounds") {
      a->rounds = std::stoi(next());
    } else if (s == "--runs") {
      a->runs = std::stoi(next());
    } else if (s == "--warmup") {
      a->warmup = std::stoi(next());
    } else if (s == "--no-xnnpack") {
      a->xnnpack = false;
    } else if (s == "--reference-kernels") {
      a->reference = true;
    } else if (s == "--cpu-time") {
      a->cpu_time = true;
    } else if (s == "--stand-ins") {
      a->stand_ins = true;
    } else if (s == "--sequential") {
      a->sequential = true;
    } else if (s == "--settle-ms") {
      a->settle_ms = std::stoi(next());
    } else if (s == "-h" || s == "--help") {
      return false;
    } else if (!s.empty() && s[0] == '-') {
      std::fprintf(stderr, "unknown flag %s\n", s.c_str());
      return false;
    } else {
      a->models.push_back(s);
    }
  }
  return !a->models.empty();
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!ParseArgs(argc, argv, &args)) {
    std::fprintf(stderr,
                 "usage: edgeopt_vs_tflite [--threads 1,2] [--rounds R] [--runs N] [--warmup W] [--no-xnnpack]\n"
                 "                         [--reference-kernels] [--cpu-time] [--settle-ms M] [--sequential] [--stand-ins]\n"
                 "                         MODEL.tflite...\n");
    return 2;
  }
  if (!testing::Tflite29Available()) {
    std::fprintf(stderr, "%s\n", testing::TfliteOracle::MissingReason().c_str());
    return 1;
  }
  // 2-thread figures depend on how far apart the host placed the CPUs: say so before and after.
  const bool multi = std::any_of(args.threads.begin(), args.threads.end(), [](int t) { return t > 1; });
  if (multi) std::printf("before: %s\n", bench::MeasureCoreLink().ToString().c_str());
  std::printf("%-44s %3s %12s %12s %8s  %s\n", "model", "thr", "edgeopt ms", "tflite ms", "ratio", "tflite config");
  for (const std::string& path : args.models) {
    auto model = rt::Model::FromFile(path);
    if (!model.ok()) {
      std::fprintf(stderr, "%s: %s\n", path.c_str(), model.status().ToString().c_str());
      continue;
    }
    testing::CompareOptions copts;
    // Integer inputs are usually indices (token ids into an embedding GATHER): 0 and 1 are in
    // range of any table, where random 32-bit values would make both runtimes refuse the invoke.
    copts.int_lo = 0;
    copts.int_hi = 1;
    auto inputs = testing::RandomInputs((*model)->graph(), copts);
    std::string name = path.substr(path.find_last_of('/') + 1);
    for (int threads : args.threads) {
      rt::InterpreterOptions io;
      io.num_threads = threads;
      io.reference_kernels_only = args.reference;
      if (args.stand_ins) io.op_resolver = testing::FloatStandInsForMissingOps();
      auto interp = rt::Interpreter::Create(*model, io);
      if (!interp.ok()) {
        std::printf("%-44s %3d  edgeopt failed: %s\n", name.c_str(), threads, interp.status().ToString().c_str());
        continue;
      }
      for (size_t i = 0; i < inputs.size(); ++i)
        std::memcpy((*interp)->input(static_cast<int>(i))->data, inputs[i].data.data(), inputs[i].data.size());
      // TFLite: XNNPACK with QS8, falling back as the reference runtime itself would.
      std::unique_ptr<testing::OracleSession> session;
      std::string config;
      const std::vector<std::pair<uint32_t, std::string>> tries =
          args.xnnpack ? std::vector<std::pair<uint32_t, std::string>>{{testing::kXnnpackFlagQS8, "xnnpack+qs8"}, {0, "xnnpack"}}
                       : std::vector<std::pair<uint32_t, std::string>>{};
      for (const auto& [flags, label] : tries) {
        testing::OracleOptions oo;
        oo.threads = threads;
        oo.xnnpack = true;
        oo.xnnpack_flags = flags;
        auto s = testing::OracleSession::Create(path, oo);
        if (s.ok()) {
          session = std::move(*s);
          config = label;
          break;
        }
      }
      if (!session) {
        testing::OracleOptions oo;
        oo.threads = threads;
        auto s = testing::OracleSession::Create(path, oo);
        if (!s.ok()) {
          std::printf("%-44s %3d  tflite failed: %s\n", name.c_str(), threads, s.status().ToString().c_str());
          continue;
        }
        session = std::move(*s);
        config = args.xnnpack ? "builtin (xnnpack refused)" : "builtin";
      }
      std::string failure;
      for (size_t i = 0; i < inputs.size() && failure.empty(); ++i) {
        Status st = session->SetInput(static_cast<int>(i), inputs[i].data.data(), inputs[i].data.size());
        if (!st.ok()) failure = "tflite input " + std::to_string(i) + ": " + st.ToString();
      }
      for (int w = 0; w < args.warmup && failure.empty(); ++w) {
        if (Status st = (*interp)->Invoke(); !st.ok()) failure = "edgeopt: " + st.ToString();
        else if (Status st2 = session->Invoke(); !st2.ok()) failure = "tflite: " + st2.ToString();
      }
      if (!failure.empty()) {
        std::printf("%-44s %3d  invoke failed (%s)\n", name.c_str(), threads, failure.c_str());
        continue;
      }
      std::vector<double> ours, theirs, ours_cpu, theirs_cpu;
      // After the pause, untimed invokes (the warm-up count) wake the workers and the CPUs again.
      auto settle = [&](auto&& invoke) {
        if (threads > 1 && args.settle_ms > 0 && !args.sequential) {
          std::this_thread::sleep_for(std::chrono::milliseconds(args.settle_ms));
          for (int w = 0; w < args.warmup; ++w) invoke();
        }
      };
      auto run_ours = [&] {
        settle([&] { (void)(*interp)->Invoke(); });
        for (int k = 0; k < args.runs; ++k) {
          double c0 = ThreadCpuMs(), t0 = NowMs();
          (void)(*interp)->Invoke();
          ours.push_back(NowMs() - t0);
          ours_cpu.push_back(ThreadCpuMs() - c0);
        }
      };
      auto run_theirs = [&] {
        settle([&] { (void)session->Invoke(); });
        for (int k = 0; k < args.runs; ++k) {
          double c0 = ThreadCpuMs(), t0 = NowMs();
          (void)session->Invoke();
          theirs.push_back(NowMs() - t0);
          theirs_cpu.push_back(ThreadCpuMs() - c0);
        }
      };
      if (args.sequential) {
        // The warm-up just ran both: let TFLite's workers stop spinning before ours run.
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        for (int w = 0; w < args.warmup; ++w) (void)(*interp)->Invoke();
        for (int r = 0; r < args.rounds; ++r) run_ours();
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        for (int w = 0; w < args.warmup; ++w) (void)session->Invoke();
        for (int r = 0; r < args.rounds; ++r) run_theirs();
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
      } else {
        for (int r = 0; r < args.rounds; ++r) {
          run_ours();
          run_theirs();
        }
      }
      const double a = Median(ours), b = Median(theirs);
      // Sub-0.1 ms models (micro models) get more decimals: "0.000" would hide what the ratio compares.
      const int digits = std::min(a, b) < 0.1 ? 5 : 3;
      std::printf("%-44s %3d %12.*f %12.*f %8.2f  %s", name.c_str(), threads, digits, a, digits, b, a / b, config.c_str());
      if (args.cpu_time && threads == 1) {
        const double ac = Median(ours_cpu), bc = Median(theirs_cpu);
        std::printf("  | cpu ms %.*f %.*f ratio %.2f", digits, ac, digits, bc, ac / bc);
      }
      std::printf("\n");
      std::fflush(stdout);
    }
  }
  if (multi) std::printf("after: %s\n", bench::MeasureCoreLink().ToString().c_str());
  return 0;
}
