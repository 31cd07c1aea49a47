// Registration of the fast integer elementwise / quantize / pooling kernels, in front of the
// factories registered before (same pattern as RegisterFastInt8Kernels: the fast factory is asked
// first, declines with nullptr, and the earlier factory takes the op).
#include "kernels/quant_fast/quant_fast.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {

void RegisterFastQuantKernels(rt::OpRegistry& r) {
  AddFastWithFallback(r, tflite::BuiltinOperator_ADD, MakeQuantBinaryFast);
  AddFastWithFallback(r, tflite::BuiltinOperator_SUB, MakeQuantBinaryFast);
  AddFastWithFallback(r, tflite::BuiltinOperator_MUL, MakeQuantBinaryFast);
  AddFastWithFallback(r, tflite::BuiltinOperator_SQUARED_DIFFERENCE, MakeSquaredDifferenceQuantFast);
  AddFastWithFallback(r, tflite::BuiltinOperator_QUANTIZE, MakeQuantizeFast);
  AddFastWithFallback(r, tflite::BuiltinOperator_DEQUANTIZE, MakeDequantizeFast);
  AddFastWithFallback(r, tflite::BuiltinOperator_AVERAGE_POOL_2D, MakePoolFast);
  AddFastWithFallback(r, tflite::BuiltinOperator_MAX_POOL_2D, MakePoolFast);
  AddFastWithFallback(r, tflite::BuiltinOperator_MEAN, MakeMeanFast);
  AddFastWithFallback(r, tflite::BuiltinOperator_SUM, MakeMeanFast);
  AddFastWithFallback(r, tflite::BuiltinOperator_PRELU, MakePreluQuantFast);
  for (auto op : {tflite::BuiltinOperator_RELU, tflite::BuiltinOperator_RELU6, tflite::BuiltinOperator_LEAKY_RELU,
                  tflite::BuiltinOperator_LOGISTIC, tflite::BuiltinOperator_TANH})
    AddFastWithFallback(r, op, MakeAct16Fast);
}

}  // namespace edgeopt::kernels
