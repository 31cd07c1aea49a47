// AVX-512 VNNI parts of the int8 / uint8 GEMM (qgemm_vnni.h): the R x NV-panel micro-kernel with
// the fused 16-lane requantization, and the byte helpers used to pack A.
#include "kernels/common/avx512_intrin.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "kernels/common/lanes16_avx512.h"
#include "kernels/common/float_requant_avx512.h"
#include "kernels/gemm_int8/qgemm_vnni.h"

namespace edgeopt::kernels::qgemm {
namespace {

// Rows per tile for NV panels (16 NV output channels): R x NV accumulators, up to 24 of the 32
// zmm registers; the rest hold the NV weight vectors and the broadcast A group.
constexpr int RowsFor(int nv) { return nv == 4 ? 6 : nv == 3 ? 8 : 12; }

// Calls tile(p, nv, r, tr, cols_last) for the tiles of rows [0, rows) x panels [p0, p1) of an
// N-column B: panels in blocks of at most 4, as even as possible (9 panels: 3 + 3 + 3, 6: 3 + 3),
// each block's rows in tiles of RowsFor(nv) (tr rows from r); cols_last: the valid columns of
// the block's last panel. A few rows (7..12: a short output row of the direct im2col, e.g.
// ResNet-8's 8x8 layers) take narrower blocks whose tiles hold them all (8 rows of 4 panels: two
// 8 x 2 tiles instead of 6 x 4 + 2 x 4, which read every weight twice).
template <typename F>
void ForEachTile(int rows, int p0, int p1, int N, F tile) {
  const int np = p1 - p0;
  if (np <= 0 || rows <= 0) return;
  const int widest = rows <= RowsFor(4) || rows > RowsFor(2) ? 4 : rows <= RowsFor(3) ? 3 : 2;
  const int blocks = (np + widest - 1) / widest;
  int p = p0;
  for (int blk = 0; blk < blocks; ++blk) {
    const int nv = np / blocks + (blk < np % blocks ? 1 : 0);
    const int mr = RowsFor(nv);
    const int cols_last = std::min(16, N - (p + nv - 1) * 16);
    // The rows in as few tiles as mr allows, of even sizes (16 rows: 8 + 8, not 12 + 4, whose 8
    // accumulators are too few to hide vpdpbusd's latency over a long k loop).
    const int tiles = (rows + mr - 1) / mr;
    for (int i = 0, r = 0; i < tiles; ++i) {
      const int tr = rows / tiles + (i < rows % tiles ? 1 : 0);
      tile(p, nv, r, tr, cols_last);
      r += tr;
    }
    p += nv;
  }
}

struct TileArgs {
  const uint8_t* a;
  int64_t lda;
  const int32_t* koff;      // k group g of a row at a + koff[g]
  int K4;
  const int8_t* b;          // first panel of the block
  int64_t panel_stride;     // bytes between panels
  const RequantPanel16* q;  // output constants of the first panel
  const int32_t* row_term;  // per row, or null
  // Split weights (PackedB8::split): the block's first panel's extra_begin entry, else null.
  const int32_t* extra_begin;
  const int32_t* extra_group;
  const int8_t* extra;
  uint8_t* c;
  int64_t ldc;
  int cols_last;            // valid columns of the last panel (1..16)
  int32_t act_min, act_max;
};

inline __m512i Load(const void* p) { return _mm512_load_si512(p); }

// ruy's requantization of 16 accumulators (the forms of qgemm.h's RequantGroup / Requant8):
// general: ((x + bias) << left) * m + round, shifted right in 64 bits, plus the adjusted zero point;
// a folded bias or no left shift leave bias / left at 0, so one form covers the three of AVX2.
inline __m512i RequantGeneral(__m512i x, const RequantPanel16& q) {
  x = _mm512_add_epi32(x, Load(q.bias));
  x = _mm512_sllv_epi32(x, Load(q.left));
  __m512i p_e = _mm512_mul_epi32(x, Load(q.mult));
  __m512i p_o = _mm512_mul_epi32(_mm512_srli_epi64(x, 32), Load(q.mult_o));
  p_e = _mm512_srlv_epi64(_mm512_add_epi64(p_e, Load(q.round_e)), Load(q.shift_e));
  p_o = _mm512_srlv_epi64(_mm512_add_epi64(p_o, Load(q.round_o)), Load(q.shift_o));
  // Odd lanes: the low dword of p_o's qwords moved up.
  const __m512i r = _mm512_mask_shuffle_epi32(p_e, 0xAAAA, p_o, static_cast<_MM_PERM_ENUM>(0xA0));
  return _mm512_add_epi32(r, Load(q.zp_adj));
}

// Requant8::half_range: 2x * m + round in 64 bits, the high dword shifted right by r.
inline __m512i RequantHalf(__m512i x, const RequantPanel16& q) {
  const __m512i x2 = _mm512_add_epi32(x, x);
  __m512i p_e = _mm512_mul_epi32(x2, Load(q.mult));
  __m512i p_o = _mm512_mul_epi32(_mm512_shuffle_epi32(x2, static_cast<_MM_PERM_ENUM>(0xF5)), Load(q.mult_o));
  p_e = _mm512_add_epi64(p_e, Load(q.round_e));
  p_o = _mm512_add_epi64(p_o, Load(q.round_o));
  // Even lanes: the high dwords of p_e moved down; odd lanes: p_o's high dwords, in place.
  __m512i h = _mm512_mask_shuffle_epi32(p_o, 0x5555, p_e, static_cast<_MM_PERM_ENUM>(0xF5));
  h = _mm512_srlv_epi32(h, Load(q.rshift));
  return _mm512_add_epi32(h, Load(q.zp_adj));
}

// VnniStage::kHigh (qgemm_vnni.h): acc * m + C exactly in signed 64 bits, the high dword shifted
// arithmetically by r - 1; the output zero point is part of C.
inline __m512i RequantHigh(__m512i x, const RequantPanel16& q) {
  __m512i p_e = _mm512_mul_epi32(x, Load(q.mult));
  __m512i p_o = _mm512_mul_epi32(_mm512_shuffle_epi32(x, static_cast<_MM_PERM_ENUM>(0xF5)), Load(q.mult_o));
  p_e = _mm512_add_epi64(p_e, Load(q.high_e));
  p_o = _mm512_add_epi64(p_o, Load(q.high_o));
  const __m512i h = _mm512_mask_shuffle_epi32(p_o, 0x5555, p_e, static_cast<_MM_PERM_ENUM>(0xF5));
  return _mm512_srav_epi32(h, Load(q.high_shift));
}

// RequantHigh with the panel's constants in registers, as one asm block (even: 0x5555).
__attribute__((always_inline)) inline __m512i RequantHighRegs(__m512i x, __m512i m_e, __m512i m_o, __m512i h_e,
                                                            __m512i h_o, __m512i sh, __mmask16 even) {
  // One temporary: x itself takes the even products.
  __m512i t;
  asm("vpshufd $0xf5, %[x], %[t]\n\t"
      "vpmuldq %[mo], %[t], %[t]\n\t"
      "vpaddq %[ho], %[t], %[t]\n\t"
      "vpmuldq %[me], %[x], %[x]\n\t"
      "vpaddq %[he], %[x], %[x]\n\t"
      "vpshufd $0xf5, %[x], %[t]%{%[k]%}\n\t"
      "vpsravd %[sh], %[t], %[x]"
      : [x] "+v"(x), [t] "=&v"(t)
      : [me] "v"(m_e), [mo] "v"(m_o), [he] "v"(h_e), [ho] "v"(h_o), [sh] "v"(sh), [k] "Yk"(even));
  return x;
}

// VnniStage::kFloat (qgemm_vnni.h) with the panel's constants s, c in registers: floor(float(x) *
// s + c), the multiply-add and the conversion rounding down.
__attribute__((always_inline)) inline __m512i RequantFloatRegs(__m512i x, __m512i s, __m512i c) {
  return FloatRequant16(x, s, c);
}

inline __m512i RequantFloat(__m512i x, const RequantPanel16& q) {
  return RequantFloatRegs(x, Load(q.fscale), Load(q.foffset));
}

// VnniStage::kFloat2: s_hi, s_lo and c (FloatRequant2x16).
inline __m512i RequantFloat2(__m512i x, const RequantPanel16& q) {
  return FloatRequant2x16(x, Load(q.fscale), Load(q.fscale_lo), Load(q.foffset));
}

constexpr bool FloatStage(VnniStage s) { return s == VnniStage::kFloat || s == VnniStage::kFloat2; }
// The stages whose constants a tile holds in registers for all its rows.
constexpr bool RegisterStage(VnniStage s) { return s == VnniStage::kHigh || FloatStage(s); }

// A register stage S on x: the high-dword form's five constants (even: 0x5555), or the float
// forms' two (s, c in m_e, h_e) or three (s_lo in m_o).
template <VnniStage S>
__attribute__((always_inline)) inline __m512i StageRegs(__m512i x, __m512i m_e, __m512i m_o, __m512i h_e, __m512i h_o,
                                                       __m512i sh, __mmask16 even) {
  if constexpr (S == VnniStage::kFloat) return RequantFloatRegs(x, m_e, h_e);
  if constexpr (S == VnniStage::kFloat2) return FloatRequant2x16(x, m_e, m_o, h_e);
  return RequantHighRegs(x, m_e, m_o, h_e, h_o, sh, even);
}
// The register constants of panel q for stage S (the float forms' unused ones are never read).
#define EDGEOPT_STAGE_CONSTS(S, q_, WRAP)                                                                   \
  const __m512i m_e = WRAP(Load(FloatStage(S) ? static_cast<const void*>((q_).fscale) : (q_).mult));        \
  const __m512i h_e = WRAP(Load(FloatStage(S) ? static_cast<const void*>((q_).foffset) : (q_).high_e));     \
  const __m512i m_o = S == VnniStage::kFloat ? m_e                                                          \
                      : WRAP(Load(S == VnniStage::kFloat2 ? static_cast<const void*>((q_).fscale_lo) : (q_).mult_o)); \
  const __m512i h_o = FloatStage(S) ? m_e : WRAP(Load((q_).high_o));                                        \
  const __m512i sh = FloatStage(S) ? m_e : WRAP(Load((q_).high_shift))

// Inside a tile with R rows, stage S (RegisterStage) and a mask `even_lanes` = 0x5555: panel Q's
// constants loaded into registers once, then for each row r: y = the stage of IN (an expression
// of r); EXPR (which stores y).
#define EDGEOPT_NO_WRAP(v) (v)
#define EDGEOPT_HIGH_STAGE_ROWS(Q, IN, EXPR)                                                                \
  do {                                                                                                     \
    EDGEOPT_STAGE_CONSTS(S, (Q), EDGEOPT_NO_WRAP);                                                         \
    _Pragma("GCC unroll 16") for (int r = 0; r < R; ++r) {                                                 \
      const __m512i y = StageRegs<S>(IN, m_e, m_o, h_e, h_o, sh, even_lanes);                              \
      EXPR;                                                                                                \
    }                                                                                                      \
  } while (0)

// VnniStage::kTwoRound (qgemm_vnni.h): floor(((x + bias) << left) * m + 2^30) / 2^31) in 64
// bits, then divided by 2^r rounding half away from zero (as RoundingDivideByPOT: the remainder
// against 2^(r-1) - 1, one more for negative values), plus the zero point.
inline __m512i RequantTwoRound(__m512i x, const RequantPanel16& q) {
  x = _mm512_sllv_epi32(_mm512_add_epi32(x, Load(q.bias)), Load(q.left));
  __m512i p_e = _mm512_mul_epi32(x, Load(q.mult));
  __m512i p_o = _mm512_mul_epi32(_mm512_shuffle_epi32(x, static_cast<_MM_PERM_ENUM>(0xF5)), Load(q.mult_o));
  p_e = _mm512_srai_epi64(_mm512_add_epi64(p_e, Load(q.round_e)), 31);
  p_o = _mm512_srai_epi64(_mm512_add_epi64(p_o, Load(q.round_o)), 31);
  const __m512i v = _mm512_mask_shuffle_epi32(p_e, 0xAAAA, p_o, static_cast<_MM_PERM_ENUM>(0xA0));
  const __m512i rem = _mm512_and_si512(v, Load(q.rmask));
  const __m512i threshold = _mm512_sub_epi32(Load(q.rhalf), _mm512_srai_epi32(v, 31));
  const __m512i y = _mm512_srav_epi32(v, Load(q.rshift));
  const __m512i r = _mm512_mask_sub_epi32(y, _mm512_cmpgt_epi32_mask(rem, threshold), y, _mm512_set1_epi32(-1));
  return _mm512_add_epi32(r, Load(q.zp_adj));
}

template <VnniStage S>
inline __m512i Requant(__m512i x, const RequantPanel16& q) {
  if constexpr (S == VnniStage::kTwoRound) return RequantTwoRound(x, q);
  if constexpr (S == VnniStage::kHigh) return RequantHigh(x, q);
  if constexpr (S == VnniStage::kFloat) return RequantFloat(x, q);
  if constexpr (S == VnniStage::kFloat2) return RequantFloat2(x, q);
  if constexpr (S == VnniStage::kHalf) return RequantHalf(x, q);
  return RequantGeneral(x, q);
}

// 16 requantized values to bytes (VnniStore says which clamps the saturating conversions make
// unnecessary).
template <VnniStore W>
inline __m128i ToBytes(__m512i y, __m512i lo, __m512i hi) {
  if constexpr (W == VnniStore::kSat) return _mm512_cvtsepi32_epi8(y);
  if constexpr (W == VnniStore::kLoSat) return _mm512_cvtsepi32_epi8(_mm512_max_epi32(y, lo));
  if constexpr (W == VnniStore::kLoUSat) return _mm512_cvtusepi32_epi8(_mm512_max_epi32(y, lo));
  return _mm512_cvtepi32_epi8(_mm512_min_epi32(_mm512_max_epi32(y, lo), hi));
}

// Whether store mode w writes uint8 bytes (unsigned packs and clamps).
constexpr bool UnsignedBytes(VnniStore w) { return w == VnniStore::kLoUSat || w == VnniStore::kClampU; }

// The constants of RowBytes: plain fields, no member functions called through `this`.
struct RowConsts {
  __m512i lo8, hi8, perm;
  RowConsts(VnniStore w, int32_t act_min, int32_t act_max) {
    const bool uns = UnsignedBytes(w);
    const int32_t type_min = uns ? 0 : -128, type_max = uns ? 255 : 127;
    lo8 = _mm512_set1_epi8(static_cast<char>(std::clamp(act_min, type_min, type_max)));
    hi8 = _mm512_set1_epi8(static_cast<char>(std::clamp(act_max, type_min, type_max)));
    perm = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  }
};

// The int16 packs p01, p23 packed to bytes with saturation (uint8: unsigned) and clamped to
// [lo8, hi8] as far as the store mode needs: per 128-bit lane, p01's words then p23's.
template <VnniStore W>
__attribute__((always_inline)) inline __m512i PackBytes(__m512i p01, __m512i p23, __m512i lo8, __m512i hi8) {
  __m512i b;
  if constexpr (UnsignedBytes(W)) {
    b = _mm512_packus_epi16(p01, p23);
    b = _mm512_max_epu8(b, lo8);
    if constexpr (W == VnniStore::kClampU) b = _mm512_min_epu8(b, hi8);
  } else {
    b = _mm512_packs_epi16(p01, p23);
    if constexpr (W != VnniStore::kSat) b = _mm512_max_epi8(b, lo8);
    if constexpr (W == VnniStore::kClamp) b = _mm512_min_epi8(b, hi8);
  }
  return b;
}

// One row's bytes from its int16 packs p01 (panels 0, 1) and p23 (panels 2, 3, or repeats),
// clamped and stored under `mask` (see Tile).
template <VnniStore W>
__attribute__((always_inline)) inline void RowBytes(__m512i p01, __m512i p23, __m512i lo8, __m512i hi8,
                                                    __m512i perm, __mmask64 mask, uint8_t* dst) {
  _mm512_mask_storeu_epi8(dst, mask, _mm512_permutexvar_epi32(perm, PackBytes<W>(p01, p23, lo8, hi8)));
}

// The sums of a tile of R rows x NV panels (Tile, TileRun): acc[r][v] from the panel's start value
// (plus the row's term) over the K4 groups of A rows a_rows + r * lda and the split weights'
// extra groups. Fully unrolled over rows and panels (GCC keeps acc[][] in registers only then).
template <int R, int NV>
__attribute__((always_inline)) inline void TileSums(const TileArgs& t, const uint8_t* a_rows, const int32_t* row_term,
                                                    __m512i (&acc)[R][NV]) {
  const RequantPanel16* const q = t.q;
  _Pragma("GCC unroll 16")
  for (int v = 0; v < NV; ++v) {
    const __m512i init = Load(q[v].init);
    _Pragma("GCC unroll 16")
    for (int r = 0; r < R; ++r)
      acc[r][v] = row_term ? _mm512_add_epi32(init, _mm512_set1_epi32(row_term[r])) : init;
  }
  const int8_t* b = t.b;
  const int32_t* koff = t.koff;
  const int64_t lda = t.lda, panel_stride = t.panel_stride;
  for (int k = 0; k < t.K4; ++k) {
    const uint8_t* a = a_rows + koff[k];
    __m512i w[NV];
    _Pragma("GCC unroll 16")
    for (int v = 0; v < NV; ++v) w[v] = Load(b + v * panel_stride);
    _Pragma("GCC unroll 16")
    for (int r = 0; r < R; ++r) {
      int32_t group;
      std::memcpy(&group, a + r * lda, 4);
      const __m512i x = _mm512_set1_epi32(group);
      _Pragma("GCC unroll 16")
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], x, w[v]);
    }
    b += 64;
  }
  if (t.extra_begin) {
    // The split weights' remainder groups, panel by panel (few: PackWeightsVnni's SplitPays).
    _Pragma("GCC unroll 16")
    for (int v = 0; v < NV; ++v) {
      for (int e = t.extra_begin[v]; e < t.extra_begin[v + 1]; ++e) {
        const __m512i w = Load(t.extra + int64_t{e} * 64);
        const uint8_t* a = a_rows + koff[t.extra_group[e]];
        _Pragma("GCC unroll 16")
        for (int r = 0; r < R; ++r) {
          int32_t group;
          std::memcpy(&group, a + r * lda, 4);
          acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], _mm512_set1_epi32(group), w);
        }
      }
    }
  }
  // Without this GCC 12 keeps the accumulators of the high-dword stage's tiles on the stack
  // through the whole k loop (its register allocator; the half-range stage's tiles were fine).
  _Pragma("GCC unroll 16")
  for (int r = 0; r < R; ++r) {
    _Pragma("GCC unroll 16")
    for (int v = 0; v < NV; ++v) asm("" : "+v"(acc[r][v]));
  }
}

// The output stage of a tile: acc[r][v] requantized (stage S) and stored as bytes (W) at
// c + r * ldc, the last panel's t.cols_last columns valid.
template <int R, int NV, VnniStage S, VnniStore W>
__attribute__((always_inline)) inline void TileOut(const TileArgs& t, uint8_t* const c, __m512i (&acc)[R][NV]) {
  // Locals: stores through uint8_t* may alias t, which would make every field reload.
  const RequantPanel16* const q = t.q;
  const int64_t ldc = t.ldc;
  const int cols_last = t.cols_last;
  if constexpr (NV >= 2) {
    // A row's NV (2..4) panels become bytes together (RowBytes): two saturating packs to int16
    // and one to 8 bits put lane L's four values of panel v at dword 4L + v, one vpermd moves
    // them to dword 4v + L (column order), the clamps run on 64 bytes and one store (masked past
    // the valid columns) writes the row. Saturating to int16, then to int8 (uint8: act_max > 127,
    // the activation range lies inside the output type) and clamping inside that type is the
    // clamp of the int32 value, so the bytes are those of ToBytes. Per 16 outputs ~1.75
    // instructions and a quarter of a store instead of 2-4 and a store. The constants are plain
    // values (RowConsts): kept in a struct whose member functions stored through `this`, they
    // made GCC 12 keep acc[][] in memory.
    const int bytes = 16 * (NV - 1) + cols_last;
    const __mmask64 mask = bytes == 64 ? ~__mmask64{0} : (__mmask64{1} << bytes) - 1;
    // The row stores (the bytes' signedness is part of the store mode: a branch per row made
    // GCC 12 keep acc[][] in memory for the 4-panel tiles).
#define EDGEOPT_VNNI_ROWS(P01, P23)                                                                         \
  do {                                                                                                     \
    const RowConsts k(W, t.act_min, t.act_max);                                                            \
    _Pragma("GCC unroll 16") for (int r = 0; r < R; ++r)                                                   \
        RowBytes<W>(P01, P23, k.lo8, k.hi8, k.perm, mask, c + r * ldc);                              \
  } while (0)
    if constexpr (RegisterStage(S)) {
      // Panel by panel, each panel's constants in registers for all its rows (RequantHighRegs'
      // five, RequantFloatRegs' two; with intrinsics GCC 12 read them from memory per row: 7 loads
      // per 16 outputs with the k loop's, at 2 per cycle), packed to int16 as soon as a pair of
      // panels is done, so that at most 31 vector registers are live. No loop over the panels: GCC 12 did not unroll it
      // before scalar replacement and kept acc[][] in memory.
      const __mmask16 even_lanes = 0x5555;  // for EDGEOPT_HIGH_STAGE_ROWS
      __m512i p01[R], y2[R];
      EDGEOPT_HIGH_STAGE_ROWS(q[0], acc[r][0], p01[r] = y);
      EDGEOPT_HIGH_STAGE_ROWS(q[1], acc[r][1], p01[r] = _mm512_packs_epi32(p01[r], y));
      if constexpr (NV == 2) {
        // Two rows per pack: the second row's int16 pack takes the place of panels 2-3 (RowBytes),
        // so one byte pack, clamp and vpermd serve both rows' 32 bytes, then a 32-byte store
        // each (one shuffle, vextracti64x4, for the upper row) instead of two of each.
        const RowConsts k(W, t.act_min, t.act_max);
        const bool full = bytes == 32;
        const __mmask32 half = full ? ~__mmask32{0} : static_cast<__mmask32>(mask);
        _Pragma("GCC unroll 16")
        for (int r = 0; r + 1 < R; r += 2) {
          const __m512i v = _mm512_permutexvar_epi32(k.perm, PackBytes<W>(p01[r], p01[r + 1], k.lo8, k.hi8));
          const __m256i lo_row = _mm512_castsi512_si256(v), hi_row = _mm512_extracti64x4_epi64(v, 1);
          if (full) {
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * ldc), lo_row);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + (r + 1) * ldc), hi_row);
          } else {
            _mm256_mask_storeu_epi8(c + r * ldc, half, lo_row);
            _mm256_mask_storeu_epi8(c + (r + 1) * ldc, half, hi_row);
          }
        }
        if constexpr (R % 2 == 1) RowBytes<W>(p01[R - 1], p01[R - 1], k.lo8, k.hi8, k.perm, mask, c + (R - 1) * ldc);
      } else {
        EDGEOPT_HIGH_STAGE_ROWS(q[2], acc[r][2], y2[r] = y);
        if constexpr (NV == 4) {
          EDGEOPT_HIGH_STAGE_ROWS(q[NV - 1], acc[r][NV - 1], y2[r] = _mm512_packs_epi32(y2[r], y));
        } else {
          _Pragma("GCC unroll 16")
          for (int r = 0; r < R; ++r) y2[r] = _mm512_packs_epi32(y2[r], y2[r]);
        }
        EDGEOPT_VNNI_ROWS(p01[r], y2[r]);
      }
    } else {
      // The general and half-range stages (kClamp / kClampU): row by row.
      const RowConsts k(W, t.act_min, t.act_max);
      _Pragma("GCC unroll 16")
      for (int r = 0; r < R; ++r) {
        const __m512i p01 = _mm512_packs_epi32(Requant<S>(acc[r][0], q[0]), Requant<S>(acc[r][1], q[1]));
        __m512i p23 = p01;
        if constexpr (NV == 4) {
          p23 = _mm512_packs_epi32(Requant<S>(acc[r][2], q[2]), Requant<S>(acc[r][3], q[3]));
        } else if constexpr (NV == 3) {
          const __m512i y2 = Requant<S>(acc[r][2], q[2]);
          p23 = _mm512_packs_epi32(y2, y2);
        }
        RowBytes<W>(p01, p23, k.lo8, k.hi8, k.perm, mask, c + r * ldc);
      }
    }
#undef EDGEOPT_VNNI_ROWS
  } else {
    // One panel: the rows requantized (the high-dword stage with the panel's constants in
    // registers, as the wider tiles do: read from memory per row (RequantHigh), 5 loads and a
    // mask load per 16 outputs, a 12-row tile of K = 16 took 1.44x the time, of K = 144 1.11x,
    // a tile alone in a loop on Zen 5), then a 16-byte down-conversion and store per row.
    __m512i rows[R];
    if constexpr (RegisterStage(S)) {
      const __mmask16 even_lanes = 0x5555;  // for EDGEOPT_HIGH_STAGE_ROWS
      EDGEOPT_HIGH_STAGE_ROWS(q[0], acc[r][0], rows[r] = y);
    } else {
      _Pragma("GCC unroll 16")
      for (int r = 0; r < R; ++r) rows[r] = Requant<S>(acc[r][0], q[0]);
    }
    const __m512i lo = _mm512_set1_epi32(t.act_min), hi = _mm512_set1_epi32(t.act_max);
    const __mmask16 last = static_cast<__mmask16>((1u << cols_last) - 1);
    _Pragma("GCC unroll 16")
    for (int r = 0; r < R; ++r) {
      const __m128i bytes = ToBytes<W>(rows[r], lo, hi);
      if (cols_last == 16)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(c + r * ldc), bytes);
      else
        _mm_mask_storeu_epi8(c + r * ldc, last, bytes);
    }
  }
}

// One tile: R rows x NV panels from t.a, t.row_term to t.c.
template <int R, int NV, VnniStage S, VnniStore W>
void Tile(const TileArgs& t) {
  uint8_t* const c = t.c;
  __m512i acc[R][NV];
  TileSums<R, NV>(t, t.a, t.row_term, acc);
  TileOut<R, NV, S, W>(t, c, acc);
}

// `tiles` consecutive tiles of R rows (tile i from A rows t.a + i R lda, row terms t.row_term +
// i R, to t.c + i R ldc), software-pipelined: the sums of tile i + 1 are written before the
// output stage of tile i, two sets of accumulators alternating. The output stage (two vpmuldq
// per 16 outputs on the multiply pipes, the shuffles, shifts and packs on the others) then runs
// beside the next tile's vpdpbusd; one tile after another, the out-of-order window overlapped
// almost nothing of them, and with a short k loop the output stage is half the time. Zen 5, a
// run of 120 rows alone in a loop against 12x2 / 8x3 tiles (identical bytes): K = 16 1.36x /
// 1.23x, K = 24 1.32x / 1.21x, K = 64 1.16x / 1.09x, K = 144 1.08x / 1.04x (kRunRows rows of 2
// panels; 5 or 8 rows, or 4 rows of 3 panels, gained less: registers). In real models less
// (kRunMaxK4 says where VnniChunk takes it).
template <int R, int NV, VnniStage S, VnniStore W>
void TileRun(const TileArgs& t, int tiles) {
  __m512i acc0[R][NV], acc1[R][NV];
  const int64_t a_step = R * t.lda, c_step = R * t.ldc;
  const auto terms = [&](int i) { return t.row_term ? t.row_term + int64_t{i} * R : nullptr; };
  TileSums<R, NV>(t, t.a, terms(0), acc0);
  int i = 1;
  for (; i + 1 < tiles; i += 2) {
    TileSums<R, NV>(t, t.a + i * a_step, terms(i), acc1);
    TileOut<R, NV, S, W>(t, t.c + (i - 1) * c_step, acc0);
    TileSums<R, NV>(t, t.a + (i + 1) * a_step, terms(i + 1), acc0);
    TileOut<R, NV, S, W>(t, t.c + i * c_step, acc1);
  }
  if (i < tiles) {
    TileSums<R, NV>(t, t.a + i * a_step, terms(i), acc1);
    TileOut<R, NV, S, W>(t, t.c + (i - 1) * c_step, acc0);
    TileOut<R, NV, S, W>(t, t.c + i * c_step, acc1);
  } else {
    TileOut<R, NV, S, W>(t, t.c + (i - 1) * c_step, acc0);
  }
}

using TileFn = void (*)(const TileArgs&);

// TileRun's tiles (rows x 2 panels) and the deepest k loop (K4 groups) that takes them. In
// MobileNetV2 int8 (per-op profile, old and new binary alternated): K = 16, 24, 32 with 96, 144,
// 192 outputs 1.05x, 1.04x-1.11x, 1.05x; at K = 64 the 6 x 4 tiles (one read of A for four
// panels) were as fast (384 outputs, 1.02x) or faster (kws_dscnn's 64 -> 64, whole model 0.976x).
constexpr int kRunRows = 6;
constexpr int kRunMaxK4 = 8;
// Whether a chunk of `rows` rows (e.g. a direct convolution's output row) takes runs: three
// tiles or more, or two and no rows left. Two tiles and a 4-row one (16 rows: ResNet-8's 1x1
// stride-2 16 -> 32) ran 0.95 -> 1.04 us; 12 rows as two tiles paid (vww_96 int8 1.017x).
constexpr bool RunsPay(int rows) { return rows >= 3 * kRunRows || rows == 2 * kRunRows; }

template <int NV, VnniStage S, VnniStore W, size_t... I>
constexpr std::array<TileFn, sizeof...(I)> TileTable(std::index_sequence<I...>) {
  return {&Tile<static_cast<int>(I) + 1, NV, S, W>...};
}

// Tiles of NV panels, indexed by rows - 1.
template <int NV, VnniStage S, VnniStore W>
struct Tiles {
  static constexpr auto table = TileTable<NV, S, W>(std::make_index_sequence<RowsFor(NV)>());
};

template <VnniStage S, VnniStore W>
TileFn PickTile(int nv, int rows) {
  switch (nv) {
    case 4: return Tiles<4, S, W>::table[static_cast<size_t>(rows - 1)];
    case 3: return Tiles<3, S, W>::table[static_cast<size_t>(rows - 1)];
    case 2: return Tiles<2, S, W>::table[static_cast<size_t>(rows - 1)];
    default: return Tiles<1, S, W>::table[static_cast<size_t>(rows - 1)];
  }
}

// f.template operator()<S, W>() for a register stage S and the output's store mode W.
template <VnniStage S, typename F>
decltype(auto) WithStore(const VnniOutput& out, F&& f) {
  switch (out.store) {
    case VnniStore::kSat: return f.template operator()<S, VnniStore::kSat>();
    case VnniStore::kLoSat: return f.template operator()<S, VnniStore::kLoSat>();
    case VnniStore::kLoUSat: return f.template operator()<S, VnniStore::kLoUSat>();
    case VnniStore::kClampU: return f.template operator()<S, VnniStore::kClampU>();
    case VnniStore::kClamp: break;
  }
  return f.template operator()<S, VnniStore::kClamp>();
}

// f.template operator()<S, W>() for the output's stage S and store mode W (the general and
// half-range stages always clamp, see BuildVnniOutput).
template <typename F>
decltype(auto) WithStageAndStore(const VnniOutput& out, F&& f) {
  const bool u = out.store == VnniStore::kClampU;
  switch (out.stage) {
    case VnniStage::kGeneral:
      return u ? f.template operator()<VnniStage::kGeneral, VnniStore::kClampU>()
               : f.template operator()<VnniStage::kGeneral, VnniStore::kClamp>();
    case VnniStage::kHalf:
      return u ? f.template operator()<VnniStage::kHalf, VnniStore::kClampU>()
               : f.template operator()<VnniStage::kHalf, VnniStore::kClamp>();
    case VnniStage::kTwoRound:
      return u ? f.template operator()<VnniStage::kTwoRound, VnniStore::kClampU>()
               : f.template operator()<VnniStage::kTwoRound, VnniStore::kClamp>();
    case VnniStage::kHigh: return WithStore<VnniStage::kHigh>(out, f);
    case VnniStage::kFloat2: return WithStore<VnniStage::kFloat2>(out, f);
    case VnniStage::kFloat: break;
  }
  return WithStore<VnniStage::kFloat>(out, f);
}

// The tile of the output's stage and store mode.
TileFn PickTile(const VnniOutput& out, int nv, int rows) {
  return WithStageAndStore(out, [&]<VnniStage S, VnniStore W>() { return PickTile<S, W>(nv, rows); });
}

// Lane p: the sum of v[p]'s 16 int32 lanes (wrapping), through the shared float-register
// reduction with an integer add.
inline __m512i ReduceLanes16(const __m512i* v) {
  __m512 f[16];
  for (int j = 0; j < 16; ++j) f[j] = _mm512_castsi512_ps(v[j]);
  return _mm512_castps_si512(kernels::ReduceLanes16(f, [](__m512 a, __m512 b) {
    return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(a), _mm512_castps_si512(b)));
  }));
}

// KH > 0: window rows of at most 64 bytes (one block) and k_h == KH, the weights in registers;
// KH == 0: any shape.
template <VnniStage S, VnniStore W, int KH>
void SingleRow(const uint8_t* a, int64_t pixel_stride, int pixels, const VnniSingle& s, const VnniOutput& out,
               uint8_t* c) {
  const __m512i lo = _mm512_set1_epi32(out.act_min), hi = _mm512_set1_epi32(out.act_max);
  const __m512i init = Load(s.q.init);
  const int blocks = s.blocks, k_h = s.k_h;
  const int64_t ky_stride = s.ky_stride;
  const uint64_t* masks = s.masks.data();
  const __mmask64 m0 = masks[0];
  __m512i wv[KH > 0 ? KH : 1];
  for (int ky = 0; ky < KH; ++ky) wv[ky] = Load(s.w.get() + 64 * ky);
  for (int p0 = 0; p0 < pixels; p0 += 16) {
    const int n = std::min(16, pixels - p0);
    __m512i acc[16];
    for (int j = 0; j < 16; ++j) acc[j] = _mm512_setzero_si512();
    for (int j = 0; j < n; ++j) {
      const uint8_t* row = a + (p0 + j) * pixel_stride;
      __m512i sum = _mm512_setzero_si512();
      if constexpr (KH > 0) {
        _Pragma("GCC unroll 8")
        for (int ky = 0; ky < KH; ++ky)
          sum = _mm512_dpbusd_epi32(sum, _mm512_maskz_loadu_epi8(m0, row + ky * ky_stride), wv[ky]);
      } else {
        const int8_t* w = s.w.get();
        for (int ky = 0; ky < k_h; ++ky, row += ky_stride)
          for (int b = 0; b < blocks; ++b, w += 64)
            sum = _mm512_dpbusd_epi32(sum, _mm512_maskz_loadu_epi8(masks[b], row + 64 * b), Load(w));
      }
      acc[j] = sum;
    }
    const __m512i x = _mm512_add_epi32(ReduceLanes16(acc), init);
    const __m128i bytes = ToBytes<W>(Requant<S>(x, s.q), lo, hi);
    _mm_mask_storeu_epi8(c + p0, static_cast<__mmask16>((1u << n) - 1), bytes);
  }
}

template <VnniStage S, VnniStore W>
void SingleRowShape(const uint8_t* a, int64_t pixel_stride, int pixels, const VnniSingle& s, const VnniOutput& out,
                    uint8_t* c) {
  if (s.blocks == 1) {
    switch (s.k_h) {
      case 1: return SingleRow<S, W, 1>(a, pixel_stride, pixels, s, out, c);
      case 3: return SingleRow<S, W, 3>(a, pixel_stride, pixels, s, out, c);
      case 5: return SingleRow<S, W, 5>(a, pixel_stride, pixels, s, out, c);
      case 7: return SingleRow<S, W, 7>(a, pixel_stride, pixels, s, out, c);
      default: break;
    }
  }
  SingleRow<S, W, 0>(a, pixel_stride, pixels, s, out, c);
}

// acc += x (u8) times the 4 int8 bytes at w in every lane: vpdpbusd with a broadcast memory
// operand (GCC 12 emits a separate vpbroadcastd for the intrinsic on _mm512_set1_epi32(*w)).
__attribute__((always_inline)) inline __m512i DpbusdBroadcast(__m512i acc, __m512i x, const int32_t* w) {
  asm("vpdpbusd %[w]%{1to16%}, %[x], %[acc]" : [acc] "+v"(acc) : [x] "v"(x), [w] "m"(*w));
  return acc;
}

// VnniLanes (qgemm_vnni.h): NG (1 or 2) quads of 4 output channels. AVX-512 VBMI (vpermi2b) is
// outside this file's ISA flags: only this function uses it (callers check rt::CpuFeatures::avx512vbmi).
template <int NG, bool kRowSum, VnniStage S, VnniStore W, size_t... I>
__attribute__((target("avx512vbmi"))) void LanesRows(const uint8_t* a, int64_t a_row, int rows, int pixels,
                                                     const VnniLanes& s, const VnniOutput& out, uint8_t* c,
                                                     int64_t c_row, std::index_sequence<I...>) {
  // acc[] is only ever indexed by the constants I (folds, no loops): GCC 12 kept it on the stack,
  // stored at every k step, when loops indexed it.
  const RowConsts k(W, out.act_min, out.act_max);
  const int N = s.N, steps = static_cast<int>(s.row_off.size());
  const int64_t px = s.pixel_stride;
  const int64_t* row_off = s.row_off.data();
  const int8_t* idx = s.idx.get();
  const int32_t* w = s.w.get();
  const int32_t* ones = s.ones.get();
  const __m512i f = _mm512_set1_epi32(s.f);
  const int8_t* out_idx = s.out_idx.get();
  const RequantPanel16* q = s.q.data();
  for (int r = 0; r < rows; ++r) {
    for (int p0 = 0; p0 < pixels; p0 += 16) {
      const int np = std::min(16, pixels - p0);
      __m512i acc[] = {Load(q[I].init)...};
      // One step per k group of each filter row; its window row's two loads come from L1.
      const uint8_t* win = a + r * a_row + p0 * px;
      __m512i sum = _mm512_setzero_si512();  // kRowSum: the window sums
      for (int t = 0; t < steps; ++t) {
        const uint8_t* row = win + row_off[t];
        const __m512i x =
            _mm512_permutex2var_epi8(_mm512_loadu_si512(row), Load(idx + 64 * t), _mm512_loadu_si512(row + 64));
        const int32_t* wt = w + 4 * NG * t;
        ((acc[I] = DpbusdBroadcast(acc[I], x, wt + I)), ...);
        if constexpr (kRowSum) sum = DpbusdBroadcast(sum, x, ones + t);
      }
      if constexpr (kRowSum) {
        sum = _mm512_mullo_epi32(sum, f);
        ((acc[I] = _mm512_add_epi32(acc[I], sum)), ...);
      }
      const __m512i y[] = {Requant<S>(acc[I], q[I])...};
      // Per quad: two saturating packs, then clamps.
      __m512i b8[NG];
      _Pragma("GCC unroll 2")
      for (int g = 0; g < NG; ++g)
        b8[g] = PackBytes<W>(_mm512_packs_epi32(y[4 * g], y[4 * g + 1]), _mm512_packs_epi32(y[4 * g + 2], y[4 * g + 3]),
                             k.lo8, k.hi8);
      // Pixel quad kq's 4 N bytes, pixel-major, in one store.
      uint8_t* dst = c + r * c_row + int64_t{p0} * N;
      for (int kq = 0; kq < 4 && 4 * kq < np; ++kq) {
        const __m512i o = _mm512_permutex2var_epi8(b8[0], Load(out_idx + 64 * kq), b8[NG - 1]);
        const int valid = std::min(4, np - 4 * kq);
        _mm512_mask_storeu_epi8(dst + 4 * kq * N, _bzhi_u64(~uint64_t{0}, static_cast<unsigned>(valid * N)), o);
      }
    }
  }
}

}  // namespace

void VnniLanesRows(const uint8_t* a, int64_t a_row, int rows, int pixels, const VnniLanes& s, const VnniOutput& out,
                   uint8_t* c, int64_t c_row) {
  WithStageAndStore(out, [&]<VnniStage S, VnniStore W>() {
    const auto quads = [&]<bool kRowSum>() {
      if (s.q.size() == 4)
        return LanesRows<1, kRowSum, S, W>(a, a_row, rows, pixels, s, out, c, c_row, std::make_index_sequence<4>());
      return LanesRows<2, kRowSum, S, W>(a, a_row, rows, pixels, s, out, c, c_row, std::make_index_sequence<8>());
    };
    if (s.f != 0) return quads.template operator()<true>();
    return quads.template operator()<false>();
  });
}

void VnniSingleRow(const uint8_t* a, int64_t pixel_stride, int pixels, const VnniSingle& s, const VnniOutput& out,
                   uint8_t* c) {
  WithStageAndStore(out, [&]<VnniStage S, VnniStore W>() { SingleRowShape<S, W>(a, pixel_stride, pixels, s, out, c); });
}

namespace {

// 16 output columns of a pair tile's row from vectors lo_v (columns 0..7) and hi_v (8..15):
// even plus odd lanes, the panel's start value and row term, the output stage, stored under m.
template <VnniStage S, VnniStore W>
__attribute__((always_inline)) inline void PairOut(__m512i lo_v, __m512i hi_v, __m512i even, __m512i odd,
                                                   const RequantPanel16& q, int32_t row_term, __m512i lo, __m512i hi,
                                                   uint8_t* dst, __mmask16 m) {
  __m512i x = _mm512_add_epi32(_mm512_permutex2var_epi32(lo_v, even, hi_v), _mm512_permutex2var_epi32(lo_v, odd, hi_v));
  x = _mm512_add_epi32(x, _mm512_add_epi32(Load(q.init), _mm512_set1_epi32(row_term)));
  const __m128i bytes = ToBytes<W>(Requant<S>(x, q), lo, hi);
  if (m == 0xFFFF)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), bytes);
  else
    _mm_mask_storeu_epi8(dst, m, bytes);
}

// N <= 24 over k-group pairs (PackedB8::pairs): R rows x V vectors of 8 columns per row, lanes
// 2j / 2j + 1 of vector v summing column 8v + j over the even / odd k groups. The tiles above
// feed one vpdpbusd per 4-byte broadcast of A for N <= 16 (13 loads per 12 vpdpbusd: the loads
// set their pace) and spend half a panel on N = 17..24; here an 8-byte broadcast feeds V
// vpdpbusd of 8 useful columns each (12 x 2 tiles: 14 loads per 24 vpdpbusd, 8 x 3: 11 per
// 24). The even and odd lanes are added before the same output stage: integer sums, so the
// results are those of the tiles above, bit for bit. t.cols_last holds N here.
template <int R, int V, VnniStage S, VnniStore W>
void PairTile(const TileArgs& t) {
  const RequantPanel16* const q = t.q;
  uint8_t* const c = t.c;
  const int64_t ldc = t.ldc, lda = t.lda;
  const int n = t.cols_last;  // all columns (1..24)
  __m512i acc[R][V];
  _Pragma("GCC unroll 16")
  for (int r = 0; r < R; ++r)
    _Pragma("GCC unroll 4")
    for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_si512();
  const int8_t* b = t.b;
  const int32_t* koff = t.koff;
  for (int p = 0; p < t.K4 / 2; ++p, b += V * 64) {
    const uint8_t* a = t.a + koff[2 * p];
    __m512i w[V];
    _Pragma("GCC unroll 4")
    for (int v = 0; v < V; ++v) w[v] = Load(b + v * 64);
    _Pragma("GCC unroll 16")
    for (int r = 0; r < R; ++r) {
      int64_t groups;
      std::memcpy(&groups, a + r * lda, 8);
      const __m512i x = _mm512_set1_epi64(groups);
      _Pragma("GCC unroll 4")
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], x, w[v]);
    }
  }
  _Pragma("GCC unroll 16")
  for (int r = 0; r < R; ++r)
    _Pragma("GCC unroll 4")
    for (int v = 0; v < V; ++v) asm("" : "+v"(acc[r][v]));
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const __m512i lo = _mm512_set1_epi32(t.act_min), hi = _mm512_set1_epi32(t.act_max);
  const int n0 = n < 16 ? n : 16;
  const __mmask16 m0 = static_cast<__mmask16>((1u << n0) - 1), m1 = static_cast<__mmask16>((1u << (n - n0)) - 1);
  if constexpr (RegisterStage(S)) {
    // As Tile: the even and odd lanes of every row added first (half the registers), then each
    // panel's output constants held in registers for all rows (RequantHighRegs); with three
    // vectors a row's 24 columns are packed together into one store (see RowBytes).
    const __mmask16 even_lanes = 0x5555;  // for EDGEOPT_HIGH_STAGE_ROWS
    if constexpr (V == 1) {
      // N <= 8: two rows per vector, row r's columns in lanes 0-7 and row r + 1's in lanes 8-15
      // (the panel's constants of columns 0-7 repeated in the upper half), so half the output
      // stages and, for N = 8 rows stored next to each other, one 16-byte store per two rows.
      const auto twice = [](__m512i v) { return _mm512_shuffle_i64x2(v, v, 0x44); };
      const __m512i init = twice(Load(q[0].init));
      EDGEOPT_STAGE_CONSTS(S, q[0], twice);
      const bool packed_rows = n == 8 && ldc == 8;
      _Pragma("GCC unroll 8")
      for (int i = 0; i < (R + 1) / 2; ++i) {
        const int r0 = 2 * i, r1 = 2 * i + 1 < R ? 2 * i + 1 : 2 * i;
        __m512i x = _mm512_add_epi32(_mm512_permutex2var_epi32(acc[r0][0], even, acc[r1][0]),
                                     _mm512_permutex2var_epi32(acc[r0][0], odd, acc[r1][0]));
        x = _mm512_add_epi32(x, init);
        if (t.row_term)
          x = _mm512_add_epi32(x, _mm512_mask_blend_epi32(0xFF00, _mm512_set1_epi32(t.row_term[r0]),
                                                          _mm512_set1_epi32(t.row_term[r1])));
        const __m128i bytes = ToBytes<W>(StageRegs<S>(x, m_e, m_o, h_e, h_o, sh, even_lanes), lo, hi);
        if (r1 != r0 && packed_rows) {
          _mm_storeu_si128(reinterpret_cast<__m128i*>(c + r0 * ldc), bytes);
        } else {
          _mm_mask_storeu_epi8(c + r0 * ldc, m0, bytes);
          if (r1 != r0) _mm_mask_storeu_epi8(c + r1 * ldc, m0, _mm_srli_si128(bytes, 8));
        }
      }
      return;
    }
    __m512i x0[R], x1[R];
#define EDGEOPT_PAIR_SUMS(X, v0, v1, panel)                                                                 \
  do {                                                                                                     \
    const __m512i init = Load(q[panel].init);                                                              \
    _Pragma("GCC unroll 16") for (int r = 0; r < R; ++r) {                                                 \
      const int32_t term = t.row_term ? t.row_term[r] : 0;                                                 \
      X[r] = _mm512_add_epi32(_mm512_add_epi32(_mm512_permutex2var_epi32(acc[r][v0], even, acc[r][v1]),    \
                                               _mm512_permutex2var_epi32(acc[r][v0], odd, acc[r][v1])),    \
                              _mm512_add_epi32(init, _mm512_set1_epi32(term)));                            \
    }                                                                                                      \
  } while (0)
    EDGEOPT_PAIR_SUMS(x0, 0, V >= 2 ? 1 : 0, 0);
    if constexpr (V == 3) EDGEOPT_PAIR_SUMS(x1, 2, 2, 1);
    EDGEOPT_HIGH_STAGE_ROWS(q[0], x0[r], x0[r] = y);
    if constexpr (V == 3) {
      EDGEOPT_HIGH_STAGE_ROWS(q[1], x1[r], x1[r] = y);
      const RowConsts k(W, t.act_min, t.act_max);
      const __mmask64 mask = (__mmask64{1} << n) - 1;
      _Pragma("GCC unroll 16")
      for (int r = 0; r < R; ++r) {
        const __m512i p = _mm512_packs_epi32(x0[r], x1[r]);
        RowBytes<W>(p, p, k.lo8, k.hi8, k.perm, mask, c + r * ldc);
      }
    } else {
      (void)x1;
      _Pragma("GCC unroll 16")
      for (int r = 0; r < R; ++r) {
        const __m128i bytes = ToBytes<W>(x0[r], lo, hi);
        if (m0 == 0xFFFF)
          _mm_storeu_si128(reinterpret_cast<__m128i*>(c + r * ldc), bytes);
        else
          _mm_mask_storeu_epi8(c + r * ldc, m0, bytes);
      }
    }
#undef EDGEOPT_PAIR_SUMS
    return;
  }
  _Pragma("GCC unroll 16")
  for (int r = 0; r < R; ++r) {
    const int32_t term = t.row_term ? t.row_term[r] : 0;
    PairOut<S, W>(acc[r][0], V >= 2 ? acc[r][1] : acc[r][0], even, odd, q[0], term, lo, hi, c + r * ldc, m0);
    if constexpr (V == 3) PairOut<S, W>(acc[r][2], acc[r][2], even, odd, q[1], term, lo, hi, c + r * ldc + 16, m1);
  }
}

template <int V, VnniStage S, VnniStore W, size_t... I>
constexpr std::array<TileFn, sizeof...(I)> PairTileTable(std::index_sequence<I...>) {
  return {&PairTile<static_cast<int>(I) + 1, V, S, W>...};
}
// Rows per pair tile: 24 accumulators.
constexpr int PairRowsFor(int v) { return v == 3 ? 8 : 12; }
template <int V, VnniStage S, VnniStore W>
struct PairTiles {
  static constexpr auto table = PairTileTable<V, S, W>(std::make_index_sequence<PairRowsFor(V)>());
};

}  // namespace

void MinMaxInt8(const int8_t* w, int64_t n, int32_t* lo, int32_t* hi) {
  __m512i mn = _mm512_set1_epi8(127), mx = _mm512_set1_epi8(-128);
  for (int64_t i = 0; i < n; i += 64) {
    const __mmask64 k = n - i >= 64 ? ~__mmask64{0} : _bzhi_u64(~uint64_t{0}, static_cast<unsigned>(n - i));
    const __m512i v = _mm512_maskz_loadu_epi8(k, w + i);
    mn = _mm512_mask_min_epi8(mn, k, mn, v);
    mx = _mm512_mask_max_epi8(mx, k, mx, v);
  }
  alignas(64) int8_t a[64], b[64];
  _mm512_store_si512(a, mn);
  _mm512_store_si512(b, mx);
  *lo = *std::min_element(a, a + 64);
  *hi = *std::max_element(b, b + 64);
}

void PackRhsPanels(const int8_t* w, bool k_major, int32_t zp, PackedB8* out) {
  const int N = out->N, K = out->K, K4 = out->K4;
  const __m512i off = _mm512_set1_epi8(static_cast<char>(out->b_offset)), zpv = _mm512_set1_epi8(static_cast<char>(zp));
  const __m512i ones = _mm512_set1_epi8(1);
  // Row starts of one panel for the [N][K] gathers: lane j reads 4 bytes at row j's k group.
  const __m512i rows = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                          _mm512_set1_epi32(K));
  const int whole = K / 4;  // k groups with all 4 k inside the matrix
  for (int p = 0; p < out->panels; ++p) {
    const int n0 = 16 * p, nv = std::min(16, N - n0);
    const __mmask16 lanes = static_cast<__mmask16>((1u << nv) - 1);
    const __mmask64 col_bytes = nv == 16 ? ~__mmask64{0} : _bzhi_u64(~uint64_t{0}, static_cast<unsigned>(4 * nv));
    int8_t* dst = out->data.get() + static_cast<size_t>(p) * K4 * 64;
    __m512i csum = _mm512_setzero_si512(), asum = _mm512_setzero_si512();
    for (int g = 0; g < K4; ++g) {
      __m512i raw;
      __mmask64 valid = col_bytes;
      if (g >= whole) valid &= 0x1111111111111111ull * ((1u << (K - 4 * g)) - 1);  // the k inside the matrix
      if (k_major) {
        // Rows k = 4g .. 4g + 3 (those inside), 16 columns each, interleaved into 16 x 4 bytes.
        __m128i r[4];
        for (int i = 0; i < 4; ++i)
          r[i] = 4 * g + i < K ? _mm_maskz_loadu_epi8(lanes, w + static_cast<int64_t>(4 * g + i) * N + n0)
                               : _mm_setzero_si128();
        const __m128i a = _mm_unpacklo_epi8(r[0], r[1]), b = _mm_unpackhi_epi8(r[0], r[1]);
        const __m128i c = _mm_unpacklo_epi8(r[2], r[3]), d = _mm_unpackhi_epi8(r[2], r[3]);
        raw = _mm512_inserti32x4(_mm512_castsi128_si512(_mm_unpacklo_epi16(a, c)), _mm_unpackhi_epi16(a, c), 1);
        raw = _mm512_inserti32x4(raw, _mm_unpacklo_epi16(b, d), 2);
        raw = _mm512_inserti32x4(raw, _mm_unpackhi_epi16(b, d), 3);
      } else if (g < whole) {
        raw = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), lanes, rows, w + static_cast<int64_t>(n0) * K + 4 * g, 1);
      } else {
        // The last, partial k group: byte by byte (a gather would read past the matrix).
        alignas(64) int8_t t[64] = {};
        for (int j = 0; j < nv; ++j)
          for (int k = 4 * g; k < K; ++k) t[4 * j + k - 4 * g] = w[static_cast<int64_t>(n0 + j) * K + k];
        raw = _mm512_load_si512(t);
      }
      const __m512i v = _mm512_maskz_sub_epi8(valid, raw, off);
      _mm512_storeu_si512(dst + static_cast<size_t>(g) * 64, v);
      csum = _mm512_dpbusd_epi32(csum, ones, v);
      const __m512i dist = _mm512_maskz_sub_epi8(valid, _mm512_max_epi8(raw, zpv), _mm512_min_epi8(raw, zpv));
      asum = _mm512_dpbusd_epi32(asum, dist, ones);  // |w - zp| in 0..255 as unsigned bytes
    }
    _mm512_storeu_si512(out->col_sum.data() + n0, csum);
    alignas(64) int32_t a[16];
    _mm512_store_si512(a, asum);
    for (int j = 0; j < nv; ++j) out->abs_sum[static_cast<size_t>(n0 + j)] = a[j];
  }
}

bool PairTilesApply(const PackedB8& b, const int32_t* koff) {
  if (b.pairs.size == 0) return false;
  for (int p = 0; p + 1 < b.K4; p += 2)
    if (koff[p + 1] != koff[p] + 4) return false;
  return true;
}

void VnniChunk(const uint8_t* a, int64_t lda, const int32_t* koff, int rows, const PackedB8& b, int p0, int p1,
               const VnniOutput& out, const int32_t* row_term, uint8_t* c, int64_t ldc, int groups,
               int64_t a_group, int64_t c_group) {
  TileArgs t;
  t.lda = lda;
  t.koff = koff;
  t.K4 = b.K4;
  t.panel_stride = int64_t{b.K4} * 64;
  t.ldc = ldc;
  t.act_min = out.act_min;
  t.act_max = out.act_max;
  t.extra_group = b.extra_group.data();
  t.extra = b.extra.get();
  if (p0 == 0 && p1 == b.panels && PairTilesApply(b, koff)) {
    t.b = b.pairs.get();
    t.extra_begin = nullptr;
    t.q = out.panels.data();
    t.cols_last = b.N;
    const int vectors = (b.N + 7) / 8, tile_rows = PairRowsFor(vectors);
    const auto tiles = [&]<VnniStage S, VnniStore W>() -> const TileFn* {
      switch (vectors) {
        case 1: return PairTiles<1, S, W>::table.data();
        case 2: return PairTiles<2, S, W>::table.data();
        default: return PairTiles<3, S, W>::table.data();
      }
    };
    const TileFn* table = WithStageAndStore(out, tiles);
    for (int g = 0; g < groups; ++g) {
      for (int r = 0; r < rows; r += tile_rows) {
        t.a = a + g * a_group + r * lda;
        t.row_term = row_term ? row_term + int64_t{g} * rows + r : nullptr;
        t.c = c + g * c_group + r * ldc;
        table[std::min(tile_rows, rows - r) - 1](t);
      }
    }
    return;
  }
  // t for the tile of group g from row r of the block starting at panel p.
  auto place = [&](int g, int p, int r, int cols_last) {
    t.b = b.panel(p);
    t.extra_begin = b.split() ? b.extra_begin.data() + p : nullptr;
    t.q = out.panels.data() + p;
    t.cols_last = cols_last;
    t.a = a + g * a_group + r * lda;
    t.row_term = row_term ? row_term + int64_t{g} * rows + r : nullptr;
    t.c = c + g * c_group + r * ldc + p * 16;
  };
  if (b.K4 <= kRunMaxK4 && RunsPay(rows) && p1 - p0 >= 2) {
    // A short k loop: blocks of two panels in software-pipelined runs of kRunRows-row tiles
    // (TileRun); the rows after the last whole tile, and an odd last panel, in single tiles.
    const auto run_fn = WithStageAndStore(out, []<VnniStage S, VnniStore W>() { return &TileRun<kRunRows, 2, S, W>; });
    const int whole = rows / kRunRows, left = rows - whole * kRunRows;
    const int pairs_end = p1 - (p1 - p0) % 2;
    for (int g = 0; g < groups; ++g) {
      for (int p = p0; p < pairs_end; p += 2) {
        const int cols_last = std::min(16, b.N - (p + 1) * 16);
        place(g, p, 0, cols_last);
        run_fn(t, whole);
        if (left) {
          place(g, p, whole * kRunRows, cols_last);
          PickTile(out, 2, left)(t);
        }
      }
      if (pairs_end < p1) {
        ForEachTile(rows, pairs_end, p1, b.N, [&](int p, int nv, int r, int tr, int cols_last) {
          place(g, p, r, cols_last);
          PickTile(out, nv, tr)(t);
        });
      }
    }
    return;
  }
  // The tiles of one chunk, chosen once for all groups (up to kCalls; more: chosen per group).
  // Against choosing them per group: ResNet-8 int8 1.012x, vww_96 1.008x (in-process A/B).
  struct Call {
    TileFn fn;
    int p, r, cols_last;
  };
  constexpr int kCalls = 64;
  Call calls[kCalls];
  int n = 0;
  ForEachTile(rows, p0, p1, b.N, [&](int p, int nv, int r, int tr, int cols_last) {
    if (n < kCalls) calls[n] = {PickTile(out, nv, tr), p, r, cols_last};
    ++n;
  });
  auto run = [&](int g, TileFn fn, int p, int r, int cols_last) {
    place(g, p, r, cols_last);
    fn(t);
  };
  for (int g = 0; g < groups; ++g) {
    if (n <= kCalls) {
      for (int i = 0; i < n; ++i) run(g, calls[i].fn, calls[i].p, calls[i].r, calls[i].cols_last);
    } else {
      ForEachTile(rows, p0, p1, b.N, [&](int p, int nv, int r, int tr, int cols_last) {
        run(g, PickTile(out, nv, tr), p, r, cols_last);
      });
    }
  }
}

namespace {

// dst[i] = src[i] ^ f for i < n.
inline void XorCopy(const uint8_t* src, int64_t n, __m512i f, uint8_t* dst) {
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) _mm512_storeu_si512(dst + i, _mm512_xor_si512(_mm512_loadu_si512(src + i), f));
  if (i < n) {
    const __mmask64 m = _bzhi_u64(~uint64_t{0}, static_cast<unsigned>(n - i));
    _mm512_mask_storeu_epi8(dst + i, m, _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, src + i), f));
  }
}

}  // namespace

void FillPaddedImage8(const PaddedImage8& f, int64_t r0, int64_t r1, uint8_t* img) {
  const int64_t row_len = int64_t{f.pw} * f.C, left = int64_t{f.pad_w} * f.C, inner = int64_t{f.in_w} * f.C;
  const int64_t right = row_len - left - inner;
  const __m512i border = _mm512_set1_epi8(static_cast<char>(f.border));
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(f.flip));
  auto fill = [&](uint8_t* d, int64_t n) {
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) _mm512_storeu_si512(d + i, border);
    if (i < n) _mm512_mask_storeu_epi8(d + i, _bzhi_u64(~uint64_t{0}, static_cast<unsigned>(n - i)), border);
  };
  int64_t b = r0 / f.ph;
  int y = static_cast<int>(r0 % f.ph);
  for (int64_t r = r0; r < r1; ++r) {
    uint8_t* dst = img + r * row_len;
    const int iy = y - f.pad_h;
    if (iy < 0 || iy >= f.in_h) {
      fill(dst, row_len);
    } else {
      const uint8_t* src = f.in + (b * f.in_h + iy) * inner;
      fill(dst, left);
      XorCopy(src, inner, flip, dst + left);
      fill(dst + left + inner, right);
    }
    if (++y == f.ph) {
      y = 0;
      ++b;
    }
  }
}

// ---- 16x8: int16 activations x int8 weights widened to int16 (vpdpwssd) ----
namespace {

struct Tile16Args {
  const int16_t* a;
  int64_t lda;               // int16 elements between rows
  int K2;
  const int16_t* b;          // first panel of the block
  int64_t panel_stride;      // int16 elements between panels
  const Requant16Panel* q;   // output constants of the first panel
  const Requant16Panel* pair_q = nullptr;  // Int16VnniOutput::pairs (N <= 8), or null
  int16_t* c;
  int64_t ldc;
  int cols_last;             // valid columns of the last panel (1..16)
  int32_t act_min, act_max;
};

// Int16VnniOutput's stages (the accumulators already hold the bias).
enum Stage16 { kWide = 0, kTwoRound = 1, kNarrow = 2 };

// Stage for 16 accumulators. kWide / kTwoRound: x * m + add in 64 bits, shifted right
// arithmetically, the low dwords of the even and odd lanes merged; kTwoRound: x shifted left first
// and the result divided by 2^r rounding half away from zero. kNarrow: the same value as kWide's
// kInt64Bias in 32-bit lanes (see Requant16Panel).
template <int kStage>
inline __m512i Requant16(__m512i x, const Requant16Panel& q) {
  if constexpr (kStage == kNarrow) {
    const __m512i hi = _mm512_madd_epi16(x, Load(q.m_hi));
    const __m512i lo = _mm512_mulhi_epu16(x, Load(q.m_lo));
    return _mm512_srav_epi32(_mm512_add_epi32(_mm512_add_epi32(hi, lo), Load(q.round)), Load(q.nshift));
  }
  if constexpr (kStage == kTwoRound) x = _mm512_sllv_epi32(x, Load(q.left));
  __m512i p_e = _mm512_mul_epi32(x, Load(q.mult));
  __m512i p_o = _mm512_mul_epi32(_mm512_shuffle_epi32(x, static_cast<_MM_PERM_ENUM>(0xF5)), Load(q.mult_o));
  p_e = _mm512_srav_epi64(_mm512_add_epi64(p_e, Load(q.add_e)), Load(q.shift_e));
  p_o = _mm512_srav_epi64(_mm512_add_epi64(p_o, Load(q.add_o)), Load(q.shift_o));
  const __m512i h = _mm512_mask_shuffle_epi32(p_e, 0xAAAA, p_o, static_cast<_MM_PERM_ENUM>(0xA0));
  if constexpr (kStage != kTwoRound) return h;
  const __m512i rem = _mm512_and_si512(h, Load(q.rmask));
  const __m512i threshold = _mm512_sub_epi32(Load(q.rhalf), _mm512_srai_epi32(h, 31));
  const __m512i y = _mm512_srav_epi32(h, Load(q.rshift));
  return _mm512_mask_sub_epi32(y, _mm512_cmpgt_epi32_mask(rem, threshold), y, _mm512_set1_epi32(-1));
}

// R rows x NV panels, fully unrolled (as Tile above).
template <int R, int NV, int kStage>
void Tile16(const Tile16Args& t) {
  const Requant16Panel* const q = t.q;
  int16_t* const c = t.c;
  const int64_t ldc = t.ldc;
  const int cols_last = t.cols_last;
  __m512i acc[R][NV];
  _Pragma("GCC unroll 16")
  for (int r = 0; r < R; ++r) {
    _Pragma("GCC unroll 16")
    for (int v = 0; v < NV; ++v) acc[r][v] = Load(q[v].bias);
  }
  const int16_t* b = t.b;
  const int16_t* a = t.a;
  const int64_t lda = t.lda, panel_stride = t.panel_stride;
  for (int k = 0; k < t.K2; ++k) {
    __m512i w[NV];
    _Pragma("GCC unroll 16")
    for (int v = 0; v < NV; ++v) w[v] = Load(b + v * panel_stride);
    _Pragma("GCC unroll 16")
    for (int r = 0; r < R; ++r) {
      int32_t pair;
      std::memcpy(&pair, a + r * lda, 4);
      const __m512i x = _mm512_set1_epi32(pair);
      _Pragma("GCC unroll 16")
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpwssd_epi32(acc[r][v], x, w[v]);
    }
    b += 32;
    a += 2;
  }
  _Pragma("GCC unroll 16")
  for (int r = 0; r < R; ++r) {
    _Pragma("GCC unroll 16")
    for (int v = 0; v < NV; ++v) asm("" : "+v"(acc[r][v]));
  }
  const __m512i lo = _mm512_set1_epi32(t.act_min), hi = _mm512_set1_epi32(t.act_max);
  const __mmask16 last = static_cast<__mmask16>((1u << cols_last) - 1);
  if constexpr (NV == 1) {
    if (t.pair_q) {
      // N <= 8: rows r and r + 1 in one vector (lanes 0-7 and 8-15), one output stage for both;
      // N = 8 rows next to each other go out in one 32-byte store.
      const bool packed_rows = cols_last == 8 && ldc == 8;
      _Pragma("GCC unroll 8")
      for (int i = 0; i < (R + 1) / 2; ++i) {
        const int r0 = 2 * i, r1 = 2 * i + 1 < R ? 2 * i + 1 : 2 * i;
        const __m512i x = _mm512_shuffle_i64x2(acc[r0][0], acc[r1][0], 0x44);
        const __m512i y = _mm512_min_epi32(_mm512_max_epi32(Requant16<kStage>(x, *t.pair_q), lo), hi);
        const __m256i h = _mm512_cvtepi32_epi16(y);
        if (r1 != r0 && packed_rows) {
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r0 * ldc), h);
        } else {
          _mm_mask_storeu_epi16(c + r0 * ldc, static_cast<__mmask8>(last), _mm256_castsi256_si128(h));
          if (r1 != r0) _mm_mask_storeu_epi16(c + r1 * ldc, static_cast<__mmask8>(last), _mm256_extracti128_si256(h, 1));
        }
      }
      return;
    }
  }
  _Pragma("GCC unroll 16")
  for (int r = 0; r < R; ++r) {
    _Pragma("GCC unroll 16")
    for (int v = 0; v < NV; ++v) {
      const __m512i y = _mm512_min_epi32(_mm512_max_epi32(Requant16<kStage>(acc[r][v], q[v]), lo), hi);
      const __m256i h = _mm512_cvtepi32_epi16(y);
      int16_t* dst = c + r * ldc + 16 * v;
      if (v + 1 < NV || cols_last == 16) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), h);
      } else {
        _mm256_mask_storeu_epi16(dst, last, h);
      }
    }
  }
}

// Int16VnniOutput::long_sums: R rows (1..4) of one panel, the k pairs in blocks of
// kLongBlockPairs summed in int32 and added into int64 sums (lanes 0-7 and 8-15), then
// (sum * m + add) >> shift per lane in 64 bits, truncated to 32 bits as the reference's int64
// requantization does, clamped.
template <int R>
void TileLong16(const Tile16Args& t) {
  const Requant16Panel& q = t.q[0];
  __m512i lo[R], hi[R];
  for (int r = 0; r < R; ++r) lo[r] = hi[r] = _mm512_setzero_si512();
  for (int k0 = 0; k0 < t.K2; k0 += kLongBlockPairs) {
    const int k1 = std::min(t.K2, k0 + kLongBlockPairs);
    __m512i acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_si512();
    const int16_t* b = t.b + int64_t{k0} * 32;
    for (int k = k0; k < k1; ++k, b += 32) {
      const __m512i w = Load(b);
      for (int r = 0; r < R; ++r) {
        int32_t pair;
        std::memcpy(&pair, t.a + r * t.lda + 2 * k, 4);
        acc[r] = _mm512_dpwssd_epi32(acc[r], _mm512_set1_epi32(pair), w);
      }
    }
    for (int r = 0; r < R; ++r) {
      lo[r] = _mm512_add_epi64(lo[r], _mm512_cvtepi32_epi64(_mm512_castsi512_si256(acc[r])));
      hi[r] = _mm512_add_epi64(hi[r], _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(acc[r], 1)));
    }
  }
  const __m512i m_lo = Load(q.lane_mult), m_hi = Load(q.lane_mult + 8);
  const __m512i a_lo = Load(q.lane_add), a_hi = Load(q.lane_add + 8);
  const __m512i s_lo = Load(q.lane_shift), s_hi = Load(q.lane_shift + 8);
  const __m512i vmin = _mm512_set1_epi32(t.act_min), vmax = _mm512_set1_epi32(t.act_max);
  const __mmask16 last = static_cast<__mmask16>((1u << t.cols_last) - 1);
  for (int r = 0; r < R; ++r) {
    const __m256i y_lo = _mm512_cvtepi64_epi32(_mm512_srav_epi64(_mm512_add_epi64(_mm512_mullo_epi64(lo[r], m_lo), a_lo), s_lo));
    const __m256i y_hi = _mm512_cvtepi64_epi32(_mm512_srav_epi64(_mm512_add_epi64(_mm512_mullo_epi64(hi[r], m_hi), a_hi), s_hi));
    __m512i y = _mm512_inserti64x4(_mm512_castsi256_si512(y_lo), y_hi, 1);
    y = _mm512_min_epi32(_mm512_max_epi32(y, vmin), vmax);
    _mm256_mask_storeu_epi16(t.c + r * t.ldc, last, _mm512_cvtepi32_epi16(y));
  }
}

// Int16VnniOutput::single: `rows` outputs into c[0..rows), 16 at a time: dot(j) gives the int32
// lanes of output j's products (summed across lanes here, wrapping as the tiles' accumulators),
// then the bias, the stage and the clamp on 16 outputs at once.
template <int kStage, typename Dot>
__attribute__((always_inline)) inline void SingleOutputs16(int rows, const Requant16Panel& q, int32_t act_min,
                                                           int32_t act_max, int16_t* c, Dot dot) {
  const __m512i lo = _mm512_set1_epi32(act_min), hi = _mm512_set1_epi32(act_max);
  for (int r0 = 0; r0 < rows; r0 += 16) {
    const int n = std::min(16, rows - r0);
    __m512i acc[16];
    for (int j = 0; j < 16; ++j) acc[j] = _mm512_setzero_si512();
    for (int j = 0; j < n; ++j) acc[j] = dot(r0 + j);
    const __m512i x = _mm512_add_epi32(ReduceLanes16(acc), Load(q.bias));
    const __m512i y = _mm512_min_epi32(_mm512_max_epi32(Requant16<kStage>(x, q), lo), hi);
    _mm256_mask_storeu_epi16(c + r0, static_cast<__mmask16>((1u << n) - 1), _mm512_cvtepi32_epi16(y));
  }
}

// The mask of the int16 values of block `blk` (32 values each) inside a row of `len` values.
inline __mmask32 BlockMask16(int len, int blk) {
  const int left = len - 32 * blk;
  return left >= 32 ? ~__mmask32{0} : static_cast<__mmask32>((1u << left) - 1);
}

// Rows [0, rows) of packed A times B's only column into consecutive outputs (ldc 1). Column 0's
// k pairs are gathered from the panel once per call (false, nothing done, when K is too long
// for that stack copy or ldc is not 1).
template <int kStage>
bool Single16(const int16_t* a, int64_t lda, int rows, const PackedB& b, const Requant16Panel& q, int32_t act_min,
              int32_t act_max, int16_t* c, int64_t ldc) {
  constexpr int kMaxBlocks = 16;  // 256 k pairs
  const int K2 = b.K2, blocks = (K2 + 15) / 16;
  if (blocks > kMaxBlocks || blocks == 0 || ldc != 1) return false;
  alignas(64) int32_t w[kMaxBlocks * 16] = {};
  const int16_t* panel = b.panel(0);
  for (int k = 0; k < K2; ++k) std::memcpy(&w[k], panel + 32 * k, 4);  // column 0's pair k
  const __mmask32 last = BlockMask16(2 * K2, blocks - 1);
  SingleOutputs16<kStage>(rows, q, act_min, act_max, c, [&](int r) {
    const int16_t* row = a + r * lda;
    __m512i sum = _mm512_setzero_si512();
    for (int blk = 0; blk + 1 < blocks; ++blk)
      sum = _mm512_dpwssd_epi32(sum, _mm512_loadu_si512(row + 32 * blk), Load(w + 16 * blk));
    return _mm512_dpwssd_epi32(sum, _mm512_maskz_loadu_epi16(last, row + 32 * (blocks - 1)), Load(w + 16 * (blocks - 1)));
  });
  return true;
}

using Tile16Fn = void (*)(const Tile16Args&);

template <int NV, int kStage, size_t... I>
constexpr std::array<Tile16Fn, sizeof...(I)> Tile16Table(std::index_sequence<I...>) {
  return {&Tile16<static_cast<int>(I) + 1, NV, kStage>...};
}
template <int NV, int kStage>
struct Tiles16 {
  static constexpr auto table = Tile16Table<NV, kStage>(std::make_index_sequence<RowsFor(NV)>());
};

template <int kStage>
Tile16Fn PickTile16(int nv, int rows) {
  switch (nv) {
    case 4: return Tiles16<4, kStage>::table[static_cast<size_t>(rows - 1)];
    case 3: return Tiles16<3, kStage>::table[static_cast<size_t>(rows - 1)];
    case 2: return Tiles16<2, kStage>::table[static_cast<size_t>(rows - 1)];
    default: return Tiles16<1, kStage>::table[static_cast<size_t>(rows - 1)];
  }
}

}  // namespace

void Int16VnniChunk(const int16_t* a, int64_t lda, int rows, const PackedB& b, int p0, int p1,
                    const Int16VnniOutput& out, int16_t* c, int64_t ldc) {
  Tile16Args t;
  t.lda = lda;
  t.K2 = b.K2;
  t.panel_stride = int64_t{b.K2} * 2 * kNR;
  t.ldc = ldc;
  t.act_min = out.act_min;
  t.act_max = out.act_max;
  if (out.long_sums) {
    constexpr Tile16Fn kLong[] = {&TileLong16<1>, &TileLong16<2>, &TileLong16<3>, &TileLong16<4>};
    for (int p = p0; p < p1; ++p) {
      t.b = b.panel(p);
      t.q = out.panels.data() + p;
      t.cols_last = std::min(16, b.N - 16 * p);
      for (int r = 0; r < rows; r += 4) {
        t.a = a + r * lda;
        t.c = c + r * ldc + p * 16;
        kLong[std::min(4, rows - r) - 1](t);
      }
    }
    return;
  }
  if (!out.single.empty() && b.N == 1 && p0 == 0 && p1 == 1) {
    const Requant16Panel& q = out.single[0];
    const bool done = out.narrow      ? Single16<kNarrow>(a, lda, rows, b, q, out.act_min, out.act_max, c, ldc)
                      : out.two_round ? Single16<kTwoRound>(a, lda, rows, b, q, out.act_min, out.act_max, c, ldc)
                                      : Single16<kWide>(a, lda, rows, b, q, out.act_min, out.act_max, c, ldc);
    if (done) return;
  }
  t.pair_q = !out.pairs.empty() && b.N <= 8 ? out.pairs.data() : nullptr;
  ForEachTile(rows, p0, p1, b.N, [&](int p, int nv, int r, int tr, int cols_last) {
    t.b = b.panel(p);
    t.q = out.panels.data() + p;
    t.cols_last = cols_last;
    t.a = a + r * lda;
    t.c = c + r * ldc + p * 16;
    (out.narrow      ? PickTile16<kNarrow>(nv, tr)
     : out.two_round ? PickTile16<kTwoRound>(nv, tr)
                     : PickTile16<kWide>(nv, tr))(t);
  });
}

void Int16SingleRow(const int16_t* a, int64_t pixel_stride, int pixels, const Int16SingleWeights& s,
                    const Int16VnniOutput& out, int16_t* c) {
  const Requant16Panel& q = out.single[0];
  const int blocks = s.blocks, k_h = s.k_h, len = s.row_len;
  const int64_t ky_stride = s.ky_stride;
  const int16_t* w = s.w.data();
  const auto run = [&]<int kStage>() {
    SingleOutputs16<kStage>(pixels, q, out.act_min, out.act_max, c, [&](int p) {
      const int16_t* win = a + p * pixel_stride;
      __m512i sum = _mm512_setzero_si512();
      for (int ky = 0; ky < k_h; ++ky)
        for (int blk = 0; blk < blocks; ++blk)
          sum = _mm512_dpwssd_epi32(sum, _mm512_maskz_loadu_epi16(BlockMask16(len, blk), win + ky * ky_stride + 32 * blk),
                                    _mm512_loadu_si512(w + (ky * blocks + blk) * 32));
      return sum;
    });
  };
  if (out.narrow) return run.template operator()<kNarrow>();
  if (out.two_round) return run.template operator()<kTwoRound>();
  run.template operator()<kWide>();
}

int32_t RowSumU8(const uint8_t* p, int64_t n) {
  __m512i s = _mm512_setzero_si512();
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) s = _mm512_add_epi64(s, _mm512_sad_epu8(_mm512_loadu_si512(p + i), _mm512_setzero_si512()));
  if (i < n) {
    const __mmask64 m = _bzhi_u64(~uint64_t{0}, static_cast<unsigned>(n - i));
    s = _mm512_add_epi64(s, _mm512_sad_epu8(_mm512_maskz_loadu_epi8(m, p + i), _mm512_setzero_si512()));
  }
  return static_cast<int32_t>(_mm512_reduce_add_epi64(s));
}

void CopyFlip(const uint8_t* src, int64_t n, uint8_t flip, uint8_t* dst) {
  XorCopy(src, n, _mm512_set1_epi8(static_cast<char>(flip)), dst);
}

}  // namespace edgeopt::kernels::qgemm
