// AVX-512 (F, BW, DQ, VL, VNNI, VBMI) versions of dot_kernels.h, compiled per
// function and chosen at run time, like the AVX2 ones. The summation order is
// the same, and a 512-bit register is exactly one output's accumulators:
// 16 float lanes for float rows; the even and odd blocks' eight lanes for
// integer rows, so a pair of blocks is one vpdpbusd.
#include <cstring>

#include "backends/cpu/dot_kernels.h"
#include "backends/cpu/dot_order.h"
#include "backends/cpu/panel_tiles.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>

#include "backends/cpu/x86_simd.h"

#define TESSERA_AVX512                                                      \
  __attribute__((                                                           \
      target("avx2,fma,f16c,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni," \
             "avx512vbmi,gfni")))

namespace tessera::cpu {
namespace {

TESSERA_AVX512 inline __m512 load16(const float* p) {
  return _mm512_loadu_ps(p);
}
TESSERA_AVX512 inline __m512 load16(const uint16_t* p) {  // f16
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
TESSERA_AVX512 inline __m512 load16(const Bf16* p) {
  const __m512i wide =
      _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
}

// Lanes l and l + 8 added, then the eight-lane tree.
TESSERA_AVX512 inline float fold16(__m512 v) {
  return sum_lanes(_mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)));
}

template <typename Weight>
struct FloatTiles {
  template <int R, int T>
  struct Tile {
    TESSERA_AVX512 static void run(const FloatPanel& p, int64_t r0, int64_t t0) {
      const Weight* w[R];
      const float* x[T];
      for (int r = 0; r < R; ++r)
        w[r] =
            reinterpret_cast<const Weight*>(p.w + static_cast<std::size_t>(r0 + r) * p.row_bytes);
      for (int t = 0; t < T; ++t) x[t] = p.x + (t0 + t) * p.x_stride;
      __m512 acc[R][T];
      for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
      int64_t i = 0;
      for (; i + kFloatLanes <= p.k; i += kFloatLanes) {
        __m512 wv[R];
        for (int r = 0; r < R; ++r) {
          prefetch_ahead(w[r] + i, prefetch_distance(R, p.row_bytes));
          wv[r] = load16(w[r] + i);
        }
        for (int t = 0; t < T; ++t) {
          const __m512 xv = _mm512_loadu_ps(x[t] + i);
          for (int r = 0; r < R; ++r) acc[r][t] = _mm512_fmadd_ps(wv[r], xv, acc[r][t]);
        }
      }
      for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) {
          float v = fold16(acc[r][t]);
          for (int64_t j = i; j < p.k; ++j)
            v = _mm_cvtss_f32(
                _mm_fmadd_ss(_mm_set_ss(to_f32(w[r][j])), _mm_set_ss(x[t][j]), _mm_set_ss(v)));
          p.out[(t0 + t) * p.out_stride + r0 + r] = v;
        }
    }
  };
};

// Two fp16 block scales as [d0 x 8, d1 x 8] (the even and odd accumulators'
// lanes), or for q4_0's layout [d0 x 4, d1 x 4, d0 x 4, d1 x 4].
TESSERA_AVX512 inline __m512 pair_scales(float d0, float d1, __m512i spread) {
  return _mm512_permutexvar_ps(spread, _mm512_zextps128_ps512(_mm_setr_ps(d0, d1, 0, 0)));
}

// Integer rows, two blocks per register, as unsigned codes u with a fixed
// offset: w = u - offset, so sum(w * x) = vpdpbusd(u, x) - offset * sum(x),
// and the correction (per token and block pair) is shared by every row.
//
// q8_0: codes of blocks b and b + 1 in order (lanes 0-7 block b, 8-15 b + 1);
// q4_0: each block's low nibbles (elements 0-15) and high ones (16-31) in
// 128-bit quarters [b low, b+1 low, b high, b+1 high], x permuted the same
// way, so the int32 lanes are [b 0-3, b+1 0-3, b 4-7, b+1 4-7].
struct Q8_0Pairs {
  static constexpr int64_t kBytes = kQ8_0Bytes;
  static constexpr int kOffset = 128;
  static constexpr __mmask16 kEvenLanes = 0x00FF;
  TESSERA_AVX512 static __m512i spread() {
    return _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  }
  // Blocks b and (when `two`) b + 1 of a row, and their scales spread: the
  // fp16 scales are words 0 and 17 of the pair's first 64 bytes.
  TESSERA_AVX512 static __m512i codes(const uint8_t* row, int64_t b, int64_t /*blocks*/, bool two,
                                      __m512& scales) {
    const uint8_t* block = row + b * kQ8_0Bytes;
    const __m512i head =
        two ? _mm512_loadu_si512(block) : _mm512_maskz_loadu_epi8((uint64_t{1} << 34) - 1, block);
    const __m512i halves =
        _mm512_permutexvar_epi16(_mm512_setr_epi32(0, 0, 0, 0, 0x00110011, 0x00110011, 0x00110011,
                                                   0x00110011, 0, 0, 0, 0, 0, 0, 0, 0),
                                 head);
    scales = _mm512_cvtph_ps(_mm512_castsi512_si256(halves));
    const __m256i second = two ? load32(block + kQ8_0Bytes + 2) : _mm256_setzero_si256();
    const __m512i both = _mm512_inserti64x4(_mm512_zextsi256_si512(load32(block + 2)), second, 1);
    return _mm512_xor_si512(both, _mm512_set1_epi8(static_cast<char>(0x80)));
  }
  TESSERA_AVX512 static __m512i activations(const Q8Block* x, int64_t b, bool two) {
    const __m256i second = two ? load32(x[b + 1].q) : _mm256_setzero_si256();
    return _mm512_inserti64x4(_mm512_zextsi256_si512(load32(x[b].q)), second, 1);
  }
  // Eight lanes per block, as the reference orders them: s[l] = even + odd.
  TESSERA_AVX512 static float fold(__m512 acc) {
    return sum_lanes(_mm256_add_ps(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1)));
  }
};

struct Q4_0Pairs {
  static constexpr int64_t kBytes = kQ4_0Bytes;
  static constexpr int kOffset = 8;
  static constexpr __mmask16 kEvenLanes = 0x0F0F;
  TESSERA_AVX512 static __m512i spread() {
    return _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1);
  }
  // Both blocks from one (masked: never past the row) load of their 36
  // bytes; vpermb puts each block's 16 code bytes where its nibbles go, one
  // affine bit transform (GFNI) keeps the low nibble in the lower 32 bytes
  // and shifts the high one down in the upper 32, and the fp16 scales (words
  // 0 and 9) are spread by one word permute before conversion.
  TESSERA_AVX512 static __m512i codes(const uint8_t* row, int64_t b, int64_t blocks, bool two,
                                      __m512& scales) {
    const uint8_t* block = row + b * kQ4_0Bytes;
    // A plain 64-byte load while the row goes on that far (masked loads are
    // several times slower), a masked one at its end.
    const __m512i raw = b + 4 <= blocks
                            ? _mm512_loadu_si512(block)
                            : _mm512_maskz_loadu_epi8(
                                  two ? (uint64_t{1} << 36) - 1 : (uint64_t{1} << 18) - 1, block);
    const __m512i bytes = _mm512_permutexvar_epi8(
        _mm512_setr_epi32(0x05040302, 0x09080706, 0x0D0C0B0A, 0x11100F0E, 0x17161514, 0x1B1A1918,
                          0x1F1E1D1C, 0x23222120, 0x05040302, 0x09080706, 0x0D0C0B0A, 0x11100F0E,
                          0x17161514, 0x1B1A1918, 0x1F1E1D1C, 0x23222120),
        raw);
    const __m512i halves =
        _mm512_permutexvar_epi16(_mm512_setr_epi32(0, 0, 0x00090009, 0x00090009, 0, 0, 0x00090009,
                                                   0x00090009, 0, 0, 0, 0, 0, 0, 0, 0),
                                 raw);
    scales = _mm512_cvtph_ps(_mm512_castsi512_si256(halves));
    // Per 64-bit lane, the bit matrix of x & 0x0F (lower half) or x >> 4.
    const __m512i nibbles = _mm512_setr_epi64(
        0x0102040800000000LL, 0x0102040800000000LL, 0x0102040800000000LL, 0x0102040800000000LL,
        0x1020408000000000LL, 0x1020408000000000LL, 0x1020408000000000LL, 0x1020408000000000LL);
    return _mm512_gf2p8affine_epi64_epi8(bytes, nibbles, 0);
  }
  TESSERA_AVX512 static __m512i activations(const Q8Block* x, int64_t b, bool two) {
    const __m256i second = two ? load32(x[b + 1].q) : _mm256_setzero_si256();
    const __m512i both = _mm512_inserti64x4(_mm512_zextsi256_si512(load32(x[b].q)), second, 1);
    // [b 0-15, b 16-31, b+1 0-15, b+1 16-31] -> [b 0-15, b+1 0-15, b 16-31, b+1 16-31]
    return _mm512_shuffle_i64x2(both, both, _MM_SHUFFLE(3, 1, 2, 0));
  }
  TESSERA_AVX512 static float fold(__m512 acc) {
    const __m128 low = _mm_add_ps(_mm512_castps512_ps128(acc), _mm512_extractf32x4_ps(acc, 1));
    const __m128 high = _mm_add_ps(_mm512_extractf32x4_ps(acc, 2), _mm512_extractf32x4_ps(acc, 3));
    return sum_lanes(_mm256_insertf128_ps(_mm256_castps128_ps256(low), high, 1));
  }
};

// A token's activations for two blocks as the integer tiles read them
// (arrange_q8, once per matmul): the codes in the weight type's lane order,
// the offset correction and the scales spread over the lanes. A lone last
// block leaves the odd half zero.
struct ArrangedPair {
  int8_t q[64];
  int32_t start[16];  // -offset * (the sum of each lane's four codes)
  float d[16];
};

// One ArrangedPair per two blocks (the last may hold one).
IntegerActivationLayout arranged_pairs(int64_t blocks) {
  const int64_t pairs = (blocks + 1) / 2;
  return {static_cast<std::size_t>(pairs) * sizeof(ArrangedPair), pairs};
}

template <typename Pairs>
TESSERA_AVX512 void arrange_pairs(const Q8Block* in, int64_t blocks, ArrangedPair* out) {
  const __m512i spread = Pairs::spread();
  const __m512i offset = _mm512_set1_epi8(static_cast<char>(Pairs::kOffset));
  for (int64_t b = 0; b < blocks; b += 2, ++out) {
    const bool two = b + 1 < blocks;
    const __m512i xv = Pairs::activations(in, b, two);
    _mm512_storeu_si512(out->q, xv);
    _mm512_storeu_si512(out->start,
                        _mm512_sub_epi32(_mm512_setzero_si512(),
                                         _mm512_dpbusd_epi32(_mm512_setzero_si512(), offset, xv)));
    _mm512_storeu_ps(out->d, pair_scales(in[b].d, two ? in[b + 1].d : 0.0f, spread));
  }
}

TESSERA_AVX512 void arrange_q8(DType dtype, const Q8Block* in, int64_t blocks, void* out) {
  auto* pairs = static_cast<ArrangedPair*>(out);
  if (dtype == DType::kQ4_0)
    arrange_pairs<Q4_0Pairs>(in, blocks, pairs);
  else
    arrange_pairs<Q8_0Pairs>(in, blocks, pairs);
}

template <typename Pairs>
struct IntegerTiles {
  template <int R, int T>
  struct Tile {
    // Blocks b and (when `two`) b + 1 into every output's accumulator; a
    // lone last block only into the even lanes.
    TESSERA_AVX512 static inline void pair(const uint8_t* const* w, const ArrangedPair* const* x,
                                           int64_t b, int64_t blocks, std::size_t ahead, bool two,
                                           __m512 (&acc)[R][T]) {
      const __mmask16 lanes = two ? 0xFFFF : Pairs::kEvenLanes;
      __m512i codes[R];
      __m512 dw[R];
      for (int r = 0; r < R; ++r) {
        prefetch_ahead(w[r] + b * Pairs::kBytes, ahead);
        prefetch_ahead(w[r] + b * Pairs::kBytes + 64, ahead);
        codes[r] = Pairs::codes(w[r], b, blocks, two, dw[r]);
      }
      for (int t = 0; t < T; ++t) {
        const ArrangedPair& a = x[t][b / 2];
        const __m512i xv = _mm512_loadu_si512(a.q);
        const __m512i start = _mm512_loadu_si512(a.start);
        const __m512 dx = _mm512_loadu_ps(a.d);
        for (int r = 0; r < R; ++r) {
          const __m512 sums = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(start, codes[r], xv));
          acc[r][t] = _mm512_mask3_fmadd_ps(_mm512_mul_ps(dw[r], dx), sums, acc[r][t], lanes);
        }
      }
    }
    TESSERA_AVX512 static void run(const QuantPanel& p, int64_t r0, int64_t t0) {
      const uint8_t* w[R];
      const ArrangedPair* x[T];
      for (int r = 0; r < R; ++r) w[r] = p.w + static_cast<std::size_t>(r0 + r) * p.row_bytes;
      for (int t = 0; t < T; ++t)
        x[t] = static_cast<const ArrangedPair*>(p.x) + (t0 + t) * p.x_stride;
      __m512 acc[R][T];
      for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
      int64_t b = 0;
      for (; b + 2 <= p.blocks; b += 2)
        pair(w, x, b, p.blocks, prefetch_distance(R, p.row_bytes), true, acc);
      if (b < p.blocks) pair(w, x, b, p.blocks, prefetch_distance(R, p.row_bytes), false, acc);
      for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t)
          p.out[(t0 + t) * p.out_stride + r0 + r] = Pairs::fold(acc[r][t]);
    }
  };
};

// k-quants: 64 codes (two blocks of 32) per register, one int32 register of
// lane sums per super-block folded to the eight lanes of the order at its
// end (integer sums: exact in any grouping).

TESSERA_AVX512 inline __m512i load64(const void* p) {
  return _mm512_loadu_si512(p);
}

// Adds the halves of sixteen int32 lanes (block 2j's and 2j+1's) and takes the
// eight sums into the accumulator of the super-block's parity.
TESSERA_AVX512 inline __m256 scaled_lanes(__m512i lanes, float scale, __m256 acc) {
  const __m256i eight =
      _mm256_add_epi32(_mm512_castsi512_si256(lanes), _mm512_extracti64x4_epi64(lanes, 1));
  return _mm256_fmadd_ps(_mm256_set1_ps(scale), _mm256_cvtepi32_ps(eight), acc);
}

// q4_K's eight 6-bit scales and eight 6-bit minimums (the 12 bytes after d
// and dmin) as int16 vectors, all at once (q4_K_scale_min for every j).
TESSERA_AVX512 inline void q4_K_scales(const uint8_t* packed, __m128i& scales, __m128i& mins) {
  uint32_t u[3];
  std::memcpy(u, packed, 12);
  const uint32_t low6 = 0x3F3F3F3F, low4 = 0x0F0F0F0F, top2 = 0x03030303;
  const uint32_t sc_low = u[0] & low6, m_low = u[1] & low6;
  const uint32_t sc_high = (u[2] & low4) | (((u[0] >> 6) & top2) << 4);
  const uint32_t m_high = ((u[2] >> 4) & low4) | (((u[1] >> 6) & top2) << 4);
  scales =
      _mm_cvtepu8_epi16(_mm_setr_epi32(static_cast<int>(sc_low), static_cast<int>(sc_high), 0, 0));
  mins = _mm_cvtepu8_epi16(_mm_setr_epi32(static_cast<int>(m_low), static_cast<int>(m_high), 0, 0));
}

template <int R, int T>
struct Q4_KTile {
  // Super-block s of the tile's rows into `acc` (the even or the odd ones).
  TESSERA_AVX512 static inline void add_super_block(const QuantPanel& p, int64_t r0,
                                                    const Q8KBlock* const* x, int64_t s,
                                                    __m256 (&acc)[R][T], float (&mins)[R][T]) {
    const __m512i nibble = _mm512_set1_epi8(0x0F);
#pragma GCC unroll 4  // the accumulators stay in registers
    for (int r = 0; r < R; ++r) {
      const uint8_t* super = p.w + static_cast<std::size_t>(r0 + r) * p.row_bytes + s * kQ4_KBytes;
      for (int64_t line = 0; line < kQ4_KBytes; line += 64)
        prefetch_ahead(super + line, prefetch_distance(R, p.row_bytes));
      __m128i sc16, m16;
      q4_K_scales(super + 4, sc16, m16);
      // Pair j: blocks 2j (low nibbles of 32 bytes) and 2j+1 (high ones),
      // 64 consecutive elements, and their scales as [sc 2j x 16, sc 2j+1 x 16].
      __m512i codes[4], scale[4];
      for (int j = 0; j < 4; ++j) {
        const __m256i packed = load32(super + 16 + 32 * j);
        codes[j] = _mm512_and_si512(
            _mm512_inserti64x4(_mm512_zextsi256_si512(packed), _mm256_srli_epi16(packed, 4), 1),
            nibble);
        const __m512i pick =
            _mm512_inserti64x4(_mm512_set1_epi16(static_cast<int16_t>(2 * j)),
                               _mm256_set1_epi16(static_cast<int16_t>(2 * j + 1)), 1);
        scale[j] = _mm512_permutexvar_epi16(pick, _mm512_zextsi128_si512(sc16));
      }
      const float d = half_scale(super), dmin = half_scale(super + 2);
      for (int t = 0; t < T; ++t) {
        __m512i lanes = _mm512_setzero_si512();
        for (int j = 0; j < 4; ++j)
          lanes = _mm512_add_epi32(
              lanes, _mm512_madd_epi16(_mm512_maddubs_epi16(codes[j], load64(x[t][s].q + 64 * j)),
                                       scale[j]));
        acc[r][t] = scaled_lanes(lanes, d * x[t][s].d, acc[r][t]);
        // sum of m * (x codes' sum) over the eight blocks: exact in int32.
        const __m128i products =
            _mm_madd_epi16(m16, _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[t][s].sums)));
        const __m128i twos = _mm_add_epi32(products, _mm_unpackhi_epi64(products, products));
        const int32_t min_sum = _mm_cvtsi128_si32(_mm_add_epi32(twos, _mm_shuffle_epi32(twos, 1)));
        mins[r][t] = _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(dmin * x[t][s].d),
                                                _mm_set_ss(static_cast<float>(min_sum)),
                                                _mm_set_ss(mins[r][t])));
      }
    }
  }
  TESSERA_AVX512 static void run(const QuantPanel& p, int64_t r0, int64_t t0) {
    const Q8KBlock* x[T];
    for (int t = 0; t < T; ++t) x[t] = static_cast<const Q8KBlock*>(p.x) + (t0 + t) * p.x_stride;
    __m256 even[R][T], odd[R][T];
    float mins[R][T] = {};
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) even[r][t] = odd[r][t] = _mm256_setzero_ps();
    int64_t s = 0;
    for (; s + 2 <= p.blocks; s += 2) {
      add_super_block(p, r0, x, s, even, mins);
      add_super_block(p, r0, x, s + 1, odd, mins);
    }
    if (s < p.blocks) add_super_block(p, r0, x, s, even, mins);
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t)
        p.out[(t0 + t) * p.out_stride + r0 + r] =
            sum_lanes(_mm256_add_ps(even[r][t], odd[r][t])) - mins[r][t];
  }
};

template <int R, int T>
struct Q6_KTile {
  // Super-block s of the tile's rows into `acc` (the even or the odd ones).
  TESSERA_AVX512 static inline void add_super_block(const QuantPanel& p, int64_t r0,
                                                    const Q8KBlock* const* x, int64_t s,
                                                    __m256 (&acc)[R][T]) {
    const __m512i nibble = _mm512_set1_epi8(0x0F), pair_bits = _mm512_set1_epi8(3);
    const __m512i offset = _mm512_set1_epi8(32);
#pragma GCC unroll 4  // the accumulators stay in registers
    for (int r = 0; r < R; ++r) {
      const uint8_t* super = p.w + static_cast<std::size_t>(r0 + r) * p.row_bytes + s * kQ6_KBytes;
      for (int64_t line = 0; line < kQ6_KBytes; line += 64)
        prefetch_ahead(super + line, prefetch_distance(R, p.row_bytes));
      const __m512i sub_scales = _mm512_zextsi256_si512(
          _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(super + 192))));
      // Pair j = blocks 2j, 2j+1 (64 elements): half h = j / 2 of the
      // super-block; low nibbles (j even) or high ones of 64 ql bytes, and
      // the top bits of 32 qh bytes shifted by 0 and 2 (j even) or 4 and 6.
      __m512i magnitude[4], scale[4];
      __mmask64 negative[4];
      for (int j = 0; j < 4; ++j) {
        const int h = j / 2;
        const __m512i ql = load64(super + 64 * h);
        const __m256i qh = load32(super + 128 + 32 * h);
        const __m512i low = _mm512_and_si512(j % 2 ? _mm512_srli_epi16(ql, 4) : ql, nibble);
        const __m512i shifts =
            _mm512_inserti64x4(_mm512_set1_epi16(static_cast<int16_t>(4 * (j % 2))),
                               _mm256_set1_epi16(static_cast<int16_t>(4 * (j % 2) + 2)), 1);
        const __m512i top = _mm512_and_si512(
            _mm512_srlv_epi16(_mm512_inserti64x4(_mm512_zextsi256_si512(qh), qh, 1), shifts),
            pair_bits);
        const __m512i codes =
            _mm512_sub_epi8(_mm512_or_si512(low, _mm512_slli_epi16(top, 4)), offset);
        magnitude[j] = _mm512_abs_epi8(codes);
        negative[j] = _mm512_movepi8_mask(codes);
        // int16 words 8g..8g+7 take sub-scale 4j + g (16 elements each).
        const __m512i pick = _mm512_setr_epi64(0, 0, 0x0001000100010001LL, 0x0001000100010001LL,
                                               0x0002000200020002LL, 0x0002000200020002LL,
                                               0x0003000300030003LL, 0x0003000300030003LL);
        scale[j] = _mm512_permutexvar_epi16(
            _mm512_add_epi16(pick, _mm512_set1_epi16(static_cast<int16_t>(4 * j))), sub_scales);
      }
      const float d = half_scale(super + 208);
      for (int t = 0; t < T; ++t) {
        __m512i lanes = _mm512_setzero_si512();
        for (int j = 0; j < 4; ++j) {
          // Pair j's elements: block 2j of the order is c = 4h + 2(j % 2).
          const int c = 4 * (j / 2) + 2 * (j % 2);
          const __m512i xv = load64(x[t][s].q + 32 * c);
          const __m512i signed_x =
              _mm512_mask_sub_epi8(xv, negative[j], _mm512_setzero_si512(), xv);
          lanes = _mm512_add_epi32(
              lanes, _mm512_madd_epi16(_mm512_maddubs_epi16(magnitude[j], signed_x), scale[j]));
        }
        acc[r][t] = scaled_lanes(lanes, d * x[t][s].d, acc[r][t]);
      }
    }
  }
  TESSERA_AVX512 static void run(const QuantPanel& p, int64_t r0, int64_t t0) {
    const Q8KBlock* x[T];
    for (int t = 0; t < T; ++t) x[t] = static_cast<const Q8KBlock*>(p.x) + (t0 + t) * p.x_stride;
    __m256 even[R][T], odd[R][T];
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) even[r][t] = odd[r][t] = _mm256_setzero_ps();
    int64_t s = 0;
    for (; s + 2 <= p.blocks; s += 2) {
      add_super_block(p, r0, x, s, even);
      add_super_block(p, r0, x, s + 1, odd);
    }
    if (s < p.blocks) add_super_block(p, r0, x, s, even);
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t)
        p.out[(t0 + t) * p.out_stride + r0 + r] = sum_lanes(_mm256_add_ps(even[r][t], odd[r][t]));
  }
};

bool cpu_has_avx512_vnni_vbmi() {
  // F16C from CPUID (not every compiler's __builtin_cpu_supports knows it).
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)) != 0;
  return f16c && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vbmi") &&
         __builtin_cpu_supports("gfni");
}

}  // namespace

const DotKernels* avx512_dot_kernels() {
  static const DotKernels* const kernels = []() -> const DotKernels* {
    const DotKernels* avx2 = avx2_dot_kernels();
    if (avx2 == nullptr || !cpu_has_avx512_vnni_vbmi()) return nullptr;
    static DotKernels set = *avx2;  // activation quantizing: AVX2
    set.name = "avx512";
    // Tiles (rows x tokens), decode / prompt. Decode streams weights once:
    // one row at a time, asking four rows ahead, ran 1.1b generation 6-28%
    // faster than several rows side by side (float, q8_0, k-quants; the
    // others stayed within noise), except q4_0, whose 4-row tile keeps the
    // core busy while its unpacking waits. Prompts: float 4 x 4 (sixteen
    // outputs from eight loads); integer 4 x 3; k-quants 2 x 3 (each row's
    // scales decoded once for the tokens).
    set.f32 = tiled_panel<FloatPanel, 1, 4, 4, FloatTiles<float>::template Tile>;
    set.f16 = tiled_panel<FloatPanel, 1, 4, 4, FloatTiles<uint16_t>::template Tile>;
    set.bf16 = tiled_panel<FloatPanel, 1, 4, 4, FloatTiles<Bf16>::template Tile>;
    set.q8_0 = tiled_panel<QuantPanel, 1, 4, 3, IntegerTiles<Q8_0Pairs>::template Tile>;
    set.q4_0 = tiled_panel<QuantPanel, 4, 4, 3, IntegerTiles<Q4_0Pairs>::template Tile>;
    set.q4_K = tiled_panel<QuantPanel, 1, 2, 3, Q4_KTile>;
    set.q6_K = tiled_panel<QuantPanel, 1, 2, 3, Q6_KTile>;
    set.arrange_q8 = arrange_q8;
    set.arranged_q8_layout = arranged_pairs;
    return &set;
  }();
  return kernels;
}

}  // namespace tessera::cpu

#else

namespace tessera::cpu {
const DotKernels* avx512_dot_kernels() {
  return nullptr;
}
}  // namespace tessera::cpu

#endif
