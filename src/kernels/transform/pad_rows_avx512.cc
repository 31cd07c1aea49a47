// PAD / PADV2 rows with AVX-512 (plan.elem must divide 64). Rows are short in NHWC channel
// padding (a few dozen values: BlazeFace's [1,64,64,24] -> [1,64,64,28]), where one library
// call, or even one masked store, per piece costs more than the copy. So each 64-byte piece of
// an output row of up to 512 bytes is assembled in a register: one plain load blended into the
// pad pattern, or, at the input's two ends, one masked load merging into it (masked-out lanes
// never fault, so the load may start before the input row or run past it); and written with a
// plain store that may run into the following rows: they are written after it, in order. Only
// where a store would cross the end of this task's rows is it masked, so threads never write
// each other's rows. Longer rows (spatial padding) fill, copy 64 bytes at a time and fill, each
// part ending in one masked store. The pattern is the pad value repeated over 64 bytes (64 is a
// multiple of every element size, and rows start at element offsets).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/transform/pad_rows.h"

namespace edgeopt::kernels::transform {
namespace {

inline __mmask64 FirstBytes(int64_t n) {
  return n >= 64 ? ~__mmask64{0} : n <= 0 ? __mmask64{0} : _bzhi_u64(~uint64_t{0}, static_cast<unsigned>(n));
}

// What every row of one call shares (bytes).
struct RowGeometry {
  __m512i pattern;
  int64_t before, row_in, row_out;
  uintptr_t in_lo, in_hi;  // the input: plain loads inside it, masked ones (never faulting) at its ends
  uintptr_t limit;         // end of this task's rows: plain stores before it, masked ones across it
  // Byte j of piece c (64 bytes at c) is input byte c + j - before when that lies in [0, row_in).
  __mmask64 PieceMask(int64_t c) const { return FirstBytes(before + row_in - c) & ~FirstBytes(before - c); }
  void Store(uint8_t* dst, __mmask64 tail, __m512i v) const {
    if (reinterpret_cast<uintptr_t>(dst) + 64 <= limit) {
      _mm512_storeu_si512(dst, v);
    } else {
      _mm512_mask_storeu_epi8(dst, tail, v);
    }
  }
  __m512i Load(uintptr_t a, __mmask64 m) const {
    const auto* ap = reinterpret_cast<const void*>(a);
    return a >= in_lo && a + 64 <= in_hi ? _mm512_mask_blend_epi8(m, pattern, _mm512_loadu_si512(ap))
                                         : _mm512_mask_loadu_epi8(pattern, m, ap);
  }
};

// `bytes` bytes of the pattern, nothing past them.
void FillBytes(__m512i pattern, uint8_t* dst, int64_t bytes) {
  int64_t i = 0;
  for (; i + 64 <= bytes; i += 64) _mm512_storeu_si512(dst + i, pattern);
  if (i < bytes) _mm512_mask_storeu_epi8(dst + i, FirstBytes(bytes - i), pattern);
}

// n rows of pad value.
void FillRows(const RowGeometry& g, uint8_t* dst, int64_t n) {
  for (int64_t r = 0; r < n; ++r, dst += g.row_out)
    for (int64_t c = 0; c < g.row_out; c += 64) g.Store(dst + c, FirstBytes(g.row_out - c), g.pattern);
}

// n rows whose input rows start at `src` and step by `step` bytes.
void CopyRows(const RowGeometry& g, uintptr_t src, int64_t step, uint8_t* dst, int64_t n) {
  src -= static_cast<uintptr_t>(g.before);
  if (g.row_out <= 64) {  // one piece per row: channel padding
    const __mmask64 m = g.PieceMask(0), tail = FirstBytes(g.row_out);
    for (int64_t r = 0; r < n; ++r, src += static_cast<uintptr_t>(step), dst += g.row_out)
      g.Store(dst, tail, g.Load(src, m));
    return;
  }
  constexpr int64_t kKept = 8;
  if (g.row_out <= kKept * 64) {  // a few pieces: their masks worked out once
    __mmask64 m[kKept], tail[kKept];
    const int64_t pieces = (g.row_out + 63) / 64;
    for (int64_t k = 0; k < pieces; ++k) {
      m[k] = g.PieceMask(k * 64);
      tail[k] = FirstBytes(g.row_out - k * 64);
    }
    for (int64_t r = 0; r < n; ++r, src += static_cast<uintptr_t>(step), dst += g.row_out)
      for (int64_t k = 0; k < pieces; ++k) g.Store(dst + k * 64, tail[k], g.Load(src + static_cast<uintptr_t>(k * 64), m[k]));
    return;
  }
  // Long rows: fill, 64-byte copies, fill, each ending in one masked store (nothing written
  // past the row, so the per-piece checks above are not needed).
  src += static_cast<uintptr_t>(g.before);
  const int64_t after = g.row_out - g.before - g.row_in;
  for (int64_t r = 0; r < n; ++r, src += static_cast<uintptr_t>(step), dst += g.row_out) {
    FillBytes(g.pattern, dst, g.before);
    const auto* s8 = reinterpret_cast<const uint8_t*>(src);
    uint8_t* d = dst + g.before;
    int64_t i = 0;
    for (; i + 64 <= g.row_in; i += 64) _mm512_storeu_si512(d + i, _mm512_loadu_si512(s8 + i));
    if (i < g.row_in) {
      const __mmask64 m = FirstBytes(g.row_in - i);
      _mm512_mask_storeu_epi8(d + i, m, _mm512_maskz_loadu_epi8(m, s8 + i));
    }
    FillBytes(g.pattern, d + g.row_in, after);
  }
}

}  // namespace

void PadRowRangeAvx512(const PadRowPlan& p, const uint8_t* in, uint8_t* out, const uint8_t* value, int64_t r0,
                       int64_t r1) {
  if (r0 >= r1) return;
  alignas(64) uint8_t bytes[64];
  for (size_t i = 0; i < 64; i += p.elem) std::memcpy(bytes + i, value, p.elem);
  const auto elem = static_cast<int64_t>(p.elem);
  RowGeometry g;
  g.pattern = _mm512_load_si512(bytes);
  g.before = p.before * elem;
  g.row_in = p.row_in * elem;
  g.row_out = g.before + g.row_in + p.after * elem;
  int64_t in_bytes = g.row_in;
  for (const auto& a : p.outer) in_bytes *= a.size;
  g.in_lo = reinterpret_cast<uintptr_t>(in);
  g.in_hi = g.in_lo + static_cast<uintptr_t>(in_bytes);
  g.limit = reinterpret_cast<uintptr_t>(out + r1 * g.row_out);
  const int nd = static_cast<int>(p.outer.size());
  if (nd == 0) {  // one row (rank 1, or rank 0)
    CopyRows(g, g.in_lo, 0, out, 1);
    return;
  }
  // Runs of rows along the innermost outer axis, the axes before it located once per run; a
  // run is [pad rows | rows from the input | pad rows].
  const PadRowPlan::Axis& last = p.outer[static_cast<size_t>(nd - 1)];
  for (int64_t r = r0; r < r1;) {
    int64_t rem = r / last.out_size, base = 0;
    bool pad_outer = false;
    for (int d = nd - 2; d >= 0; --d) {
      const PadRowPlan::Axis& a = p.outer[static_cast<size_t>(d)];
      const int64_t i = rem % a.out_size - a.before;
      rem /= a.out_size;
      pad_outer = pad_outer || i < 0 || i >= a.size;
      base += i * a.in_stride;
    }
    const int64_t j0 = r % last.out_size, j1 = std::min(last.out_size, j0 + (r1 - r));
    uint8_t* dst = out + r * g.row_out;
    // Input rows of this run: indices [last.before, last.before + last.size) within [j0, j1).
    const int64_t c0 = pad_outer ? j1 : std::clamp(last.before, j0, j1);
    const int64_t c1 = pad_outer ? j1 : std::clamp(last.before + last.size, c0, j1);
    FillRows(g, dst, c0 - j0);
    const int64_t step = last.in_stride * elem;
    CopyRows(g, g.in_lo + static_cast<uintptr_t>((base + (c0 - last.before) * last.in_stride) * elem), step,
             dst + (c0 - j0) * g.row_out, c1 - c0);
    FillRows(g, dst + (c1 - j0) * g.row_out, j1 - c1);
    r += j1 - j0;
  }
}

}  // namespace edgeopt::kernels::transform
