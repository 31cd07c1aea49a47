// Helpers shared by the fast float32 operators (gemm/, dwconv/, pool_f32/, binary_f32/).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "graph/graph.h"
#include "kernels/common/quant_utils.h"
#include "kernels/gemm/gemm.h"
#include "runtime/kernel.h"

namespace edgeopt::kernels {

// Clamp bounds of a fused activation; false for activations that are not a clamp (TANH,
// SIGN_BIT), which the fast kernels leave to the reference.
inline bool FusedMinMax(int activation, gemm::MinMax* mm) {
  return FloatActivationRange(activation, &mm->min, &mm->max);
}

inline bool IsFloat32(const Tensor* t) { return t && t->type == DType::kFloat32; }

// Packed data for one op, made once per model and shared by every interpreter of it (through the
// model's PackedWeightCache; made privately if the host has none). `what` names the layout.
template <typename T>
std::shared_ptr<const T> GetOrPack(rt::KernelContext& ctx, const std::string& what, const std::function<T()>& make) {
  rt::PackedWeightCache* cache = ctx.host() ? ctx.host()->packed_cache() : nullptr;
  if (!cache) return std::make_shared<const T>(make());
  const std::string key = what + "/sg" + std::to_string(ctx.host()->subgraph_index()) + "/op" +
                          std::to_string(ctx.op_index());
  return std::static_pointer_cast<const T>(
      cache->GetOrCreate(key, [&]() -> std::shared_ptr<const void> { return std::make_shared<const T>(make()); }));
}

}  // namespace edgeopt::kernels
