// pad_rows_impl.h's row loop with 64-byte AVX-512 moves: rows are short in NHWC channel padding
// (a few dozen values), where a library memcpy / memset call per piece costs more than the copy.
// Tails use byte masks; the fill pattern is the pad value repeated over 64 bytes (64 is a
// multiple of every element size, and fills start at element offsets, so the pattern lines up).
#include <immintrin.h>

#include <cstring>

#include "kernels/transform/pad_rows_impl.h"

namespace edgeopt::kernels::transform {
namespace {

inline __mmask64 FirstBytes(int64_t n) { return n >= 64 ? ~__mmask64{0} : _bzhi_u64(~uint64_t{0}, static_cast<unsigned>(n)); }

struct Avx512Ops {
  __m512i pattern;
  void Copy(uint8_t* dst, const uint8_t* src, int64_t bytes) const {
    int64_t i = 0;
    for (; i + 64 <= bytes; i += 64) _mm512_storeu_si512(dst + i, _mm512_loadu_si512(src + i));
    if (i < bytes) {
      const __mmask64 m = FirstBytes(bytes - i);
      _mm512_mask_storeu_epi8(dst + i, m, _mm512_maskz_loadu_epi8(m, src + i));
    }
  }
  void Fill(uint8_t* dst, int64_t bytes) const {
    int64_t i = 0;
    for (; i + 64 <= bytes; i += 64) _mm512_storeu_si512(dst + i, pattern);
    if (i < bytes) _mm512_mask_storeu_epi8(dst + i, FirstBytes(bytes - i), pattern);
  }
};

}  // namespace

void PadRowRangeAvx512(const PadRowPlan& p, const uint8_t* in, uint8_t* out, const uint8_t* value, int64_t r0,
                       int64_t r1) {
  alignas(64) uint8_t bytes[64];
  for (size_t i = 0; i < 64; i += p.elem) std::memcpy(bytes + i, value, p.elem);
  PadRowRange(p, in, out, Avx512Ops{_mm512_load_si512(bytes)}, r0, r1);
}

}  // namespace edgeopt::kernels::transform
