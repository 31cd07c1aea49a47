// A non-owning reference to a callable, for functions that call what they are given only while
// they run (the thread pool's jobs, the GEMM task loop): two pointers, copied freely, never
// allocating, whatever the callable captures. The callable must outlive every call through the
// reference; passing a lambda straight to such a function is fine, as the temporary lives until
// the call returns.
#pragma once

#include <type_traits>
#include <utility>

namespace edgeopt {

template <typename Signature>
class FunctionRef;

template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef> &&
                                                    std::is_invocable_r_v<R, const F&, Args...>>>
  FunctionRef(const F& f)  // NOLINT(google-explicit-constructor): converts like std::function
      : object_(&f), call_([](const void* object, Args... args) -> R {
          return (*static_cast<const F*>(object))(std::forward<Args>(args)...);
        }) {}

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  const void* object_;
  R (*call_)(const void*, Args...);
};

}  // namespace edgeopt
