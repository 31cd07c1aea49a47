// Fused kernels: runs of consecutive ops that one kernel computes together so that the tensors
// between them never go to memory. The interpreter asks the matchers registered here
// (OpRegistry::AddFusion) at each op, before resolving it on its own; a match takes the run's ops
// and gives them one kernel and a synthetic operator (the run's outside inputs and its output).
// Off with InterpreterOptions::fuse_ops = false or EDGEOPT_FUSE=0 (for A/B runs), and whenever
// the interpreter must keep every tensor (preserve_all_tensors) or use reference kernels only.
//
// `bench --profile` shows a run once, on its first op, with the fused variant (e.g.
// "fused/pw+dw+pw/f32/avx512"); the other ops of the run read "fused into #<first op>".
#pragma once

#include "runtime/registry.h"

namespace edgeopt::kernels::fused {

// Float32 MobileNet blocks: [1×1 CONV_2D ->] DEPTHWISE_CONV_2D (depth multiplier 1, vector
// kernels) -> 1×1 CONV_2D, constant weights, clamp activations, each intermediate read only by
// the next op and not a subgraph output, the largest of them (static shapes) at least
// limits.min_inner_bytes (dw_chain_f32.cc).
rt::FusedRun MatchDwChainF32(const rt::KernelCreateContext& cc, const rt::FusionLimits& limits);

// A RELU / RELU6 / RELU_N1_TO_1 right after a CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, ADD,
// SUB or MUL without an activation of its own becomes its fused activation (float32, or
// quantized with equal input and output parameters; act_into_producer.cc). Shown as
// "fused/<producer's variant>+relu".
rt::FusedRun MatchActivationIntoProducer(const rt::KernelCreateContext& cc, const rt::FusionLimits& limits);

// Tensor t, made by op `producer`, is read only by op producer + 1, as its input 0, and is not a
// subgraph output: a fused kernel may keep it to itself.
bool PrivateLink(const Subgraph& s, int producer);

}  // namespace edgeopt::kernels::fused
