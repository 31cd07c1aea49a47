// Helpers shared by the fast float32 operators (gemm/, dwconv/, pool_f32/, binary_f32/).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "graph/graph.h"
#include "kernels/common/kernel_util.h"
#include "kernels/common/nn_util.h"
#include "kernels/common/quant_utils.h"
#include "kernels/gemm/gemm.h"
#include "runtime/constant_fold.h"
#include "runtime/kernel.h"

namespace edgeopt::kernels {

// Clamp bounds of a fused activation; false for activations that are not a clamp (TANH,
// SIGN_BIT), which the fast kernels leave to the reference.
inline bool FusedMinMax(int activation, gemm::MinMax* mm) {
  return FloatActivationRange(activation, &mm->min, &mm->max);
}

inline bool IsFloat32(const Tensor* t) { return t && t->type == DType::kFloat32; }

// Input i holds the same values at every invoke: a constant of the right size (element_bytes per
// value: 4 for the float kernels, 1 for 8-bit weights), or the output of a chain of ops whose
// inputs are all constants (DEQUANTIZE of float16 weights, DENSIFY of sparse ones, DENSIFY then
// DEQUANTIZE), which the interpreter folds at allocation. The latter has no data at creation
// time: kernels pack it in Prepare or at the first invoke.
inline bool ConstantOrFolded(const rt::KernelCreateContext& cc, int i, int64_t element_bytes = 4) {
  const Tensor* t = cc.input(i);
  if (!t || t->sparsity) return false;
  if (cc.is_constant(i)) return static_cast<int64_t>(cc.constant_data(i).size()) == t->num_elements() * element_bytes;
  return rt::IsConstantOrFoldable(cc.graph, cc.subgraph, cc.op.inputs[i]);
}

// Static checks shared by the packed-GEMM kernels (CONV_2D, FULLY_CONNECTED, CONV_3D): float
// tensors, constant (or folded) float weights of rank `weights_rank` and bias (or no bias) with
// as many elements as the weights' dimension `out_dim` (the output channels).
inline bool FloatWeightsAndBias(const rt::KernelCreateContext& cc, int weights_rank, int out_dim = 0) {
  if (cc.reference_only || cc.num_inputs() < 2 || cc.num_outputs() != 1) return false;
  const Tensor* in = cc.input(0);
  const Tensor* w = cc.input(1);
  const Tensor* bias = cc.input(2);
  if (!IsFloat32(in) || !IsFloat32(w) || !IsFloat32(cc.output(0))) return false;
  if (static_cast<int>(w->shape.size()) != weights_rank || !ConstantOrFolded(cc, 1)) return false;
  if (bias && (!IsFloat32(bias) || bias->num_elements() != w->shape[out_dim] || !ConstantOrFolded(cc, 2)))
    return false;
  return true;
}

// The fast float CONV_2D kernels' Prepare checks, as the reference kernel (kernels/conv) makes
// them, with its messages: input of rank 4, the filter's input channels equal to the input's
// (grouped convolution is declined at creation; the input may have been resized since), and
// the output window of the filter [O, KH, KW, I] over the input.
inline Status CheckConvShapes(rt::KernelContext& ctx, WindowGeometry* wg) {
  const rt::RtTensor* in = ctx.input(0);
  const rt::RtTensor* w = ctx.input(1);
  if (in->rank() != 4) return ctx.Error("input " + Describe(*in) + " must have rank 4 (NHWC)");
  if (w->dim(3) != in->dim(3))
    return ctx.UnsupportedError("input channels " + std::to_string(in->dim(3)) + " of " + Describe(*in) +
                                " differ from the filter's " + std::to_string(w->dim(3)) +
                                " (grouped convolution is left to the reference kernel)");
  return ComputeConvWindow(ctx, GetOptions<tflite::Conv2DOptionsT>(ctx.op()), w->dim(1), w->dim(2), in->dim(1),
                           in->dim(2), wg);
}

// Packed data for graph op `graph_op` of ctx's subgraph, made once per model and shared by every
// interpreter of it (through the model's PackedWeightCache; made privately if the host has none).
// `what` names the layout. A fused kernel packs each op it runs under that op's own key, so
// fused and unfused interpreters of one model share the packed weights.
template <typename T>
std::shared_ptr<const T> GetOrPackFor(rt::KernelContext& ctx, int graph_op, const std::string& what,
                                      const std::function<T()>& make) {
  rt::PackedWeightCache* cache = ctx.host() ? ctx.host()->packed_cache() : nullptr;
  if (!cache) return std::make_shared<const T>(make());
  const std::string key = what + "/sg" + std::to_string(ctx.host()->subgraph_index()) + "/op" +
                          std::to_string(graph_op);
  return std::static_pointer_cast<const T>(
      cache->GetOrCreate(key, [&]() -> std::shared_ptr<const void> { return std::make_shared<const T>(make()); }));
}

// The same for the op ctx runs.
template <typename T>
std::shared_ptr<const T> GetOrPack(rt::KernelContext& ctx, const std::string& what, const std::function<T()>& make) {
  return GetOrPackFor<T>(ctx, ctx.graph_op_index(), what, make);
}

}  // namespace edgeopt::kernels
