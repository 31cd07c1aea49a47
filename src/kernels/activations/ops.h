// Registration of the activation family's parts (called by register.cc).
#pragma once

#include "runtime/registry.h"

namespace edgeopt::kernels::activations {

void RegisterRelu(rt::OpRegistry& r);     // RELU RELU6 RELU_N1_TO_1 RELU_0_TO_1 LEAKY_RELU PRELU HARD_SWISH ELU GELU
void RegisterSigmoid(rt::OpRegistry& r);  // LOGISTIC TANH
void RegisterSoftmax(rt::OpRegistry& r);  // SOFTMAX LOG_SOFTMAX

}  // namespace edgeopt::kernels::activations
