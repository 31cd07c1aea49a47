#include "kernels/common/lut.h"

#include <algorithm>

namespace edgeopt::kernels {

void BuildInt16Lut(double (*func)(double), double input_min, double input_max, double output_min, double output_max,
                   int16_t* lut) {
  constexpr int kSteps = 512;
  const double step = (input_max - input_min) / kSteps;
  const double half_step = step / 2;
  const double output_scaling_inv = 65536.0 / (output_max - output_min);
  const double table_min = -32768.0, table_max = 32767.0;
  for (int i = 0; i < kSteps; ++i) {
    const double val = func(input_min + i * step);
    const double val_midpoint = func(input_min + i * step + half_step);
    const double val_next = func(input_min + (i + 1) * step);
    const double sample_val = std::round(val * output_scaling_inv);
    const double midpoint_interp_val = std::round((val_next * output_scaling_inv + std::round(val * output_scaling_inv)) / 2);
    const double midpoint_val = std::round(val_midpoint * output_scaling_inv);
    const double midpoint_err = midpoint_interp_val - midpoint_val;
    const double bias = std::round(midpoint_err / 2);
    lut[i] = static_cast<int16_t>(std::min(std::max(sample_val - bias, table_min), table_max));
  }
  lut[kSteps] = static_cast<int16_t>(std::min(std::max(std::round(func(input_max) * output_scaling_inv), table_min), table_max));
}

// These are LiteRT's table values (common.h sigmoid_table_uint16), kept as data because they
// are not reproducible from a closed formula: within +-1 of round(65536 * sigmoid(i / 24)),
// the last entry saturated to 65535. Bit-exact int16 LOGISTIC/TANH depend on every entry.
const std::array<uint16_t, 256>& SigmoidTableQ016() {
  static constexpr std::array<uint16_t, 256> kTable = {
      32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432, 42064, 42688,
      43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409,
      51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
      57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110,
      61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186,
      63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
      64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900,
      64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208,
      65221, 65234, 65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
      65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433, 65438, 65442, 65445, 65449,
      65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474, 65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491,
      65493, 65495, 65497, 65498, 65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
      65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524,
      65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530,
      65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
      65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65535,
  };
  return kTable;
}

bool CheckedLog2(float x, int* log2_result) {
  const float x_log2 = std::log(x) * (1.0f / std::log(2.0f));
  const float x_log2_rounded = std::round(x_log2);
  const float x_log2_fracpart = x_log2 - x_log2_rounded;
  *log2_result = static_cast<int>(x_log2_rounded);
  return std::abs(x_log2_fracpart) < 1e-3f;
}

}  // namespace edgeopt::kernels
