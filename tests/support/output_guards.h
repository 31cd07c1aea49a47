// Output guards for tests: each output of a known size is bound to a buffer of the test's own
// with guard bytes after it, so a kernel that writes past its output (a full vector over a
// tail, say) is caught at once instead of by a thread race or a clobbered neighbour in the
// arena. Binding re-plans the arena: call Bind after AllocateTensors and before writing inputs
// (it allocates again); outputs that cannot be bound (strings, dynamic shapes, constants) keep
// the arena.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/interpreter.h"

namespace edgeopt::testing {

class OutputGuards {
 public:
  Status Bind(rt::Interpreter& interp);
  // After Invoke: an error naming the output whose guard bytes changed.
  Status Check() const;
  // Gives the bound outputs back to the arena (before the buffers go), so the interpreter can
  // be invoked again.
  Status Release(rt::Interpreter& interp);

 private:
  static constexpr size_t kGuard = 256;
  static constexpr uint8_t kGuardByte = 0xA5;
  std::vector<std::vector<uint8_t>> buffers_;
};

}  // namespace edgeopt::testing
