// The AVX-512 loop of the channel PAD + ADD fusion (pad_add_f32.cc).
#include "kernels/common/avx512_intrin.h"
#include <algorithm>

#include "kernels/common/vec_f32.h"
#include "kernels/fused/fused.h"

namespace edgeopt::kernels::fused {

void ChannelPadAddAvx512(const float* x, int cin, const float* full, int c, bool padded_first, float* out,
                         int64_t pixels, gemm::MinMax mm) {
  const __m512 lo = _mm512_set1_ps(mm.min), hi = _mm512_set1_ps(mm.max);
  for (int64_t p = 0; p < pixels; ++p, x += cin, full += c, out += c) {
    for (int j = 0; j < c; j += 16) {
      const __mmask16 valid = Avx512F32::TailMask(std::min(16, c - j));
      // The PAD's channels: x below cin, +0.0 above (the masked-off lanes load +0.0).
      const __mmask16 in_x = Avx512F32::TailMask(std::clamp(cin - j, 0, 16));
      const __m512 f = _mm512_maskz_loadu_ps(valid, full + j);
      const __m512 v = _mm512_maskz_loadu_ps(static_cast<__mmask16>(in_x & valid), x + j);
      const __m512 s = padded_first ? _mm512_add_ps(v, f) : _mm512_add_ps(f, v);
      _mm512_mask_storeu_ps(out + j, valid, _mm512_min_ps(hi, _mm512_max_ps(lo, s)));
    }
  }
}

}  // namespace edgeopt::kernels::fused
