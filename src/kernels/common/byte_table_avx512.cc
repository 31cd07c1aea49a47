// AVX-512 VBMI byte-table loop (byte_table.h). The scalar loop is inline in the header: this
// file is compiled with AVX-512 flags.
#include <immintrin.h>

#include "kernels/common/byte_table.h"

namespace edgeopt::kernels {
namespace {

// vpermi2b indexes 128 bytes by the low 7 bits of each byte; the top bit picks the half.
__attribute__((target("avx512vbmi"))) inline __m512i Lookup(__m512i v, __m512i t0, __m512i t1, __m512i t2, __m512i t3) {
  return _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), _mm512_permutex2var_epi8(t0, v, t1),
                                _mm512_permutex2var_epi8(t2, v, t3));
}

}  // namespace

__attribute__((target("avx512vbmi"))) void ApplyByteTableVbmi(const ByteTable& table, const uint8_t* in,
                                                             uint8_t* out, int64_t n) {
  const __m512i t0 = _mm512_loadu_si512(table.data());
  const __m512i t1 = _mm512_loadu_si512(table.data() + 64);
  const __m512i t2 = _mm512_loadu_si512(table.data() + 128);
  const __m512i t3 = _mm512_loadu_si512(table.data() + 192);
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) _mm512_storeu_si512(out + i, Lookup(_mm512_loadu_si512(in + i), t0, t1, t2, t3));
  if (i < n) {
    const __mmask64 m = (__mmask64{1} << (n - i)) - 1;
    _mm512_mask_storeu_epi8(out + i, m, Lookup(_mm512_maskz_loadu_epi8(m, in + i), t0, t1, t2, t3));
  }
}

}  // namespace edgeopt::kernels
