// The bridge between the public API (include/edgeopt/edgeopt.h) and the runtime: constructs
// public handles from runtime objects and back. Library code only (the CLI may use it to hand a
// runtime Model to code written against the public API).
#pragma once

#include <memory>

#include "edgeopt/edgeopt.h"
#include "graph/graph.h"
#include "runtime/interpreter.h"

namespace edgeopt {

struct Model::Impl {
  std::shared_ptr<const rt::Model> model;
};

namespace api_internal {

struct Access {
  static TensorView View(rt::RtTensor* t) { return TensorView(t); }
  static rt::RtTensor* Tensor(const TensorView& v) { return v.t_; }
  static CustomKernelContext Context(rt::KernelContext* ctx) { return CustomKernelContext(ctx); }
  static rt::KernelContext* Context(const CustomKernelContext& ctx) { return ctx.ctx_; }

  static std::shared_ptr<const Model> Wrap(std::shared_ptr<const rt::Model> model) {
    auto m = std::shared_ptr<Model>(new Model());
    m->impl_->model = std::move(model);
    return m;
  }
  static const std::shared_ptr<const rt::Model>& Runtime(const Model& m) { return m.impl_->model; }
  static rt::Interpreter& Runtime(Interpreter& interpreter);
};

// Public descriptions of graph elements.
TensorInfo MakeTensorInfo(const Graph& graph, const Subgraph& subgraph, int32_t index);
ModelView MakeModelView(const Graph& graph, int subgraph_index);

// The runtime options implementing the public ones: custom ops become an OpRegistry, delegates
// are adapted to rt::Delegate.
Expected<rt::InterpreterOptions> ToRuntimeOptions(const InterpreterOptions& options);
// The first error a public delegate raised where the runtime interface cannot report one.
Status DelegateErrors(const rt::InterpreterOptions& options);

// Runs `fn` (application code: a custom kernel or delegate) and turns an exception escaping it
// into an error naming `what`, so it never unwinds through the runtime.
template <typename Fn>
auto CallApplication(const std::string& what, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const std::exception& e) {
    return Internal(what + " threw an exception: " + e.what());
  } catch (...) {
    return Internal(what + " threw an exception");
  }
}

}  // namespace api_internal
}  // namespace edgeopt
