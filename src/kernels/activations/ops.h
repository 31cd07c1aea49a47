// Registration of the activation family's parts (called by register.cc).
#pragma once

#include "runtime/registry.h"

namespace edgeopt::kernels::activations {

void RegisterRelu(rt::OpRegistry& r);     // RELU RELU6 RELU_N1_TO_1 RELU_0_TO_1 LEAKY_RELU PRELU HARD_SWISH ELU GELU
void RegisterSigmoid(rt::OpRegistry& r);  // LOGISTIC TANH
void RegisterSoftmax(rt::OpRegistry& r);  // SOFTMAX LOG_SOFTMAX
// The float32 fast paths (float_act.cc) in front of the reference kernels registered before.
void RegisterFastFloatActivations(rt::OpRegistry& r);

}  // namespace edgeopt::kernels::activations
