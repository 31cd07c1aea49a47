// Invoke allocates no memory (the runtime's rule: everything is sized at AllocateTensors), on
// every real model (shared and cached), with 1 and 2 threads. This binary's global operator new
// counts the allocations made while a test has counting on, on any thread (pool workers too).
// To find one: EDGEOPT_TRAP_ALLOC=1 gdb -ex run -ex bt --args edgeopt_unit_tests
// --gtest_filter='InvokeAllocations.*' stops at the first allocation inside an invoke.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include "runtime/interpreter.h"
#include "support/core/model_files.h"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<int64_t> g_allocations{0};
bool g_trap = false;

void* Allocate(size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    if (g_trap) __builtin_trap();
  }
  void* p = std::malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(size_t n) { return Allocate(n); }
void* operator new[](size_t n) { return Allocate(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }

namespace edgeopt::rt {
namespace {

TEST(InvokeAllocations, NoneOnAnyRealModel) {
  const std::vector<std::string> models = testing::AllRealModels();
  if (models.empty())
    GTEST_SKIP() << "no real models: " << testing::SharedModelsDir() << " is absent (place the shared folder beside the repo)";
  // The counter itself must see allocations, or a zero below would prove nothing.
  g_counting = true;
  delete new int(1);
  g_counting = false;
  ASSERT_EQ(g_allocations.exchange(0), 1);
  g_trap = std::getenv("EDGEOPT_TRAP_ALLOC") != nullptr;
  int checked = 0;
  for (const std::string& path : models) {
    auto model = Model::FromFile(path);
    ASSERT_TRUE(model.ok()) << path << ": " << model.status().ToString();
    for (int threads : {1, 2}) {
      InterpreterOptions options;
      options.num_threads = threads;
      auto interp = Interpreter::Create(*model, options);
      if (!interp.ok()) continue;  // models edgeopt does not run are covered elsewhere
      Interpreter& it = **interp;
      ASSERT_TRUE(it.AllocateTensors().ok()) << path;
      for (int i = 0; i < it.num_inputs(); ++i) std::memset(it.input(i)->data, 0, it.input(i)->bytes);
      // Warm-up: weights of folded constants are packed at the first invoke.
      for (int r = 0; r < 2; ++r) ASSERT_TRUE(it.Invoke().ok()) << path;
      g_allocations = 0;
      g_counting = true;
      Status st = it.Invoke();
      g_counting = false;
      ASSERT_TRUE(st.ok()) << path << ": " << st.ToString();
      EXPECT_EQ(g_allocations.load(), 0) << testing::Basename(path) << " with " << threads << " threads";
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace edgeopt::rt
