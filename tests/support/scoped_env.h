// Sets an environment variable for one scope and restores it after (tests of switches that
// kernels read when an interpreter is created, e.g. EDGEOPT_HYBRID_DEQUANT).
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace edgeopt::testing {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace edgeopt::testing
