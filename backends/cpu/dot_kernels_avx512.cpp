// AVX-512 (F, BW, DQ, VL, VNNI, VBMI, GFNI) versions of dot_kernels.h,
// compiled per function and chosen at run time, like the AVX2 ones. The
// summation order is the same. f32 rows: a 512-bit register is one
// output's 16 lanes. Half rows (f16, bf16): a register holds sixteen rows,
// one per lane, one FMA per element. Block-quantized rows: sixteen rows per
// register too, each lane's exact int32 per block (or super-block) scaled by
// one FMA. Weights are read interleaved in groups of 16 rows
// (interleaved_rows.h, written when the backend copies them) or gathered
// from GGUF's layout (q8_0, q4_0; f16 / bf16 transposed in registers;
// k-quants in GGUF's layout go row by row).
#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <type_traits>
#include <utility>

#include "backends/cpu/dot_kernels.h"
#include "backends/cpu/dot_order.h"
#include "backends/cpu/interleaved_rows.h"
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
          // Decode streams the rows from memory; a prompt's row block is
          // in cache after its first tokens (asking there cost 6-8%).
          if (T == 1) prefetch_ahead(w[r] + i, prefetch_distance(R, p.row_bytes));
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

// Half rows (f16, bf16), sixteen rows per register, one per lane: the
// half-row order (dot_kernels.h) is one FMA per element for all sixteen,
// x[i] broadcast. The rows come from a source (x86_simd.h): a group
// interleaved at load, or rows in GGUF's layout transposed block by block.

// out[r] for the tile's `rows` rows (a group's sixteen lanes, or fewer at a
// panel's edge).
TESSERA_AVX512 inline void store_lanes(float* out, int rows, __m512 v) {
  _mm512_mask_storeu_ps(out, static_cast<__mmask16>((1u << rows) - 1), v);
}

template <typename Weight, template <typename> class Source>
struct HalfRowTiles {
  // G sets of sixteen rows (G = 2: rows 16..31 in the second) times T tokens.
  // kResume: each sum goes on from the value in out (the chain of an
  // earlier stretch of the row; row_halves_prompt) instead of from 0.
  template <int G, int T, bool kResume = false>
  TESSERA_AVX512 static void tile(const FloatPanel& p, int64_t r0, int64_t t0, int rows) {
    Source<Weight> source[G];
    int lanes[G];
    for (int g = 0; g < G; ++g) {
      lanes[g] = std::min<int>(kHalfBlock, rows - g * kHalfBlock);
      source[g] = Source<Weight>(p, r0 + g * kHalfBlock, lanes[g]);
    }
    const float* x[T];
    for (int t = 0; t < T; ++t) x[t] = p.x + (t0 + t) * p.x_stride;
    __m512 acc[G][T];
    for (int g = 0; g < G; ++g)
      for (int t = 0; t < T; ++t)
        acc[g][t] =
            kResume ? _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << lanes[g]) - 1),
                                            p.out + (t0 + t) * p.out_stride + r0 + g * kHalfBlock)
                    : _mm512_setzero_ps();
    alignas(64) HalfScratch scratch[G];
    int64_t i = 0;
    for (; i + kHalfBlock <= p.k; i += kHalfBlock) {
      const Weight* block[G];
      for (int g = 0; g < G; ++g) block[g] = source[g].block(i, scratch[g]);
      for (int e = 0; e < kHalfBlock; ++e)
        for (int t = 0; t < T; ++t) {
          const __m512 xv = _mm512_set1_ps(x[t][i + e]);
          for (int g = 0; g < G; ++g)
            acc[g][t] = _mm512_fmadd_ps(load16(block[g] + e * kHalfBlock), xv, acc[g][t]);
        }
    }
    for (; i < p.k; ++i) {
      uint16_t element[G][kHalfBlock];
      __m512 w[G];
      for (int g = 0; g < G; ++g) w[g] = load16(source[g].element(i, element[g]));
      for (int t = 0; t < T; ++t)
        for (int g = 0; g < G; ++g)
          acc[g][t] = _mm512_fmadd_ps(w[g], _mm512_set1_ps(x[t][i]), acc[g][t]);
    }
    for (int g = 0; g < G; ++g)
      for (int t = 0; t < T; ++t)
        store_lanes(p.out + (t0 + t) * p.out_stride + r0 + g * kHalfBlock, lanes[g], acc[g][t]);
  }

  // Rows r0 .. r0 + rows - 1 (rows <= 32) against tokens t0 .. t0 + T - 1.
  template <int T, bool kResume = false>
  TESSERA_AVX512 static void run(const FloatPanel& p, int64_t r0, int64_t t0, int rows) {
    if (rows > kHalfBlock)
      tile<2, T, kResume>(p, r0, t0, rows);
    else
      tile<1, T, kResume>(p, r0, t0, rows);
  }

  // Decode over S groups at once, each from its own part of the panel
  // (group_decode_streams): every row's sum as run<1> makes it.
  template <int S>
  TESSERA_AVX512 static void run_streams(const FloatPanel& p, const int64_t (&r0)[S]) {
    Source<Weight> source[S];
    for (int s = 0; s < S; ++s) source[s] = Source<Weight>(p, r0[s], kHalfBlock);
    __m512 acc[S];
    for (int s = 0; s < S; ++s) acc[s] = _mm512_setzero_ps();
    alignas(64) HalfScratch scratch[S];
    int64_t i = 0;
    for (; i + kHalfBlock <= p.k; i += kHalfBlock) {
      const Weight* block[S];
      for (int s = 0; s < S; ++s) {
        source[s].ask_ahead(i);
        block[s] = source[s].block(i, scratch[s]);
      }
      for (int e = 0; e < kHalfBlock; ++e) {
        const __m512 xv = _mm512_set1_ps(p.x[i + e]);
        for (int s = 0; s < S; ++s)
          acc[s] = _mm512_fmadd_ps(load16(block[s] + e * kHalfBlock), xv, acc[s]);
      }
    }
    for (; i < p.k; ++i)
      for (int s = 0; s < S; ++s) {
        uint16_t element[kHalfBlock];
        acc[s] =
            _mm512_fmadd_ps(load16(source[s].element(i, element)), _mm512_set1_ps(p.x[i]), acc[s]);
      }
    for (int s = 0; s < S; ++s) store_lanes(p.out + r0[s], kHalfBlock, acc[s]);
  }
};

// f16 / bf16 panels: decode four groups at once, one from each quarter of
// the panel (one core keeps more lines in flight from four streams);
// prompts two groups (32 rows) x 8 tokens, sixteen accumulators fed by two
// weight loads and eight broadcasts per element. (More tokens per tile read
// slower: the tokens' activation rows lie a multiple of 4 KiB apart, and
// more than eight of them crowd one set of the L1 cache.)
template <typename Weight>
constexpr FloatPanelKernel kHalfGroupRows = half_group_rows_panel<HalfRowTiles, Weight, 4, 32, 8>;
template <typename Weight>
constexpr FloatPanelKernel kRowHalves = row_halves_panel<HalfRowTiles, Weight, 32, 8>;

// Integer rows, sixteen at a time, one row per lane: per block, eight
// vpdpbusd of unsigned codes u (w = u - offset) against a token's codes
// broadcast four at a time give each row's exact int32 sum, started at
// -offset * sum(x) (the same for every row); then one convert, one scale
// product and one FMA per block for the sixteen outputs.

// Unsigned codes u = w + offset: q4_0's nibbles (offset 8) and q8_0's codes
// stored + 128, so the blocks start at -offset * sum(x).
TESSERA_AVX512 void arrange_q8(DType dtype, const Q8Block* in, int64_t blocks, void* out) {
  arrange_blocks(in, blocks, dtype == DType::kQ4_0 ? 8 : 128, static_cast<ArrangedBlock*>(out));
}

// q4_0: four 64-byte chunks of nibbles per group block, split into the low
// (elements 4c..4c+3) and high (16 + 4c..) codes; q8_0: eight chunks of
// codes + 128. Either way code register c holds elements 4c..4c+3 of every
// row.
struct Q4_0Groups {
  static constexpr int64_t kBytes = kQ4_0Bytes;
  static constexpr int kChunks = 4;
  TESSERA_AVX512 static void split(const __m512i (&chunks)[kChunks], __m512i (&codes)[8]) {
    const __m512i nibble = _mm512_set1_epi8(0x0F);
    for (int c = 0; c < 4; ++c) {
      codes[c] = _mm512_and_si512(chunks[c], nibble);
      codes[c + 4] = _mm512_and_si512(_mm512_srli_epi16(chunks[c], 4), nibble);
    }
  }
  static constexpr char kFlip = 0;
};
struct Q8_0Groups {
  static constexpr int64_t kBytes = kQ8_0Bytes;
  static constexpr int kChunks = 8;
  TESSERA_AVX512 static void split(const __m512i (&chunks)[kChunks], __m512i (&codes)[8]) {
    for (int c = 0; c < 8; ++c) codes[c] = chunks[c];
  }
  static constexpr char kFlip = static_cast<char>(0x80);
};

// Where a tile's weights come from: a group interleaved at load
// (interleaved_rows.h), or up to 16 rows in GGUF's layout, gathered into the
// same registers (mapped weights, matrices of other row counts).
// sum + code register i times x[4i .. 4i + 3] (broadcast to every lane), for
// i < N: the rows' exact sums of 4N products.
template <int N>
TESSERA_AVX512 inline __m512i dot_codes(__m512i sum, const __m512i (&codes)[N], const int8_t* x) {
  for (int i = 0; i < N; ++i) {
    int32_t four;
    std::memcpy(&four, x + 4 * i, 4);
    sum = _mm512_dpbusd_epi32(sum, codes[i], _mm512_set1_epi32(four));
  }
  return sum;
}

// Sixteen fp16 values (one per row of a group) as floats.
TESSERA_AVX512 inline __m512 load_halves(const uint8_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// A group tile's sixteen outputs per token (the first `rows` of them).
template <int T>
TESSERA_AVX512 inline void store_rows(const QuantPanel& p, int64_t r0, int64_t t0, int rows,
                                      const __m512 (&acc)[T]) {
  const auto stored = static_cast<__mmask16>((1u << rows) - 1);
  for (int t = 0; t < T; ++t)
    _mm512_mask_storeu_ps(p.out + (t0 + t) * p.out_stride + r0, stored, acc[t]);
}

template <typename Format>
struct InterleavedGroup {
  const uint8_t* group;
  TESSERA_AVX512 InterleavedGroup(const QuantPanel& p, int64_t r0, int /*rows*/)
      : group(p.w + static_cast<std::size_t>(r0) * p.row_bytes) {}
  template <bool kStream>
  TESSERA_AVX512 void load(int64_t b, __m512& scales, __m512i (&chunks)[Format::kChunks]) const {
    const uint8_t* block = group + b * kGroupRows * Format::kBytes;
    stream_ahead<kStream>(block, kGroupRows * Format::kBytes);
    scales = load_halves(block);
    for (int c = 0; c < Format::kChunks; ++c)
      chunks[c] = _mm512_loadu_si512(block + 2 * kGroupRows + 64 * c);
  }
};
template <typename Format>
struct GatheredRows {
  const uint8_t* first;
  __m512i offsets;  // of each row from the first
  __mmask16 rows;
  TESSERA_AVX512 GatheredRows(const QuantPanel& p, int64_t r0, int count)
      : first(p.w + static_cast<std::size_t>(r0) * p.row_bytes),
        offsets(_mm512_mullo_epi32(
            _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
            _mm512_set1_epi32(static_cast<int>(p.row_bytes)))),
        rows(static_cast<__mmask16>((1u << count) - 1)) {}
  template <bool kStream>
  TESSERA_AVX512 void load(int64_t b, __m512& scales, __m512i (&chunks)[Format::kChunks]) const {
    const uint8_t* block = first + b * Format::kBytes;
    const __m512i zero = _mm512_setzero_si512();
    const __m512i heads = _mm512_mask_i32gather_epi32(zero, rows, offsets, block, 1);
    scales = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(heads));
    for (int c = 0; c < Format::kChunks; ++c)
      chunks[c] =
          _mm512_xor_si512(_mm512_mask_i32gather_epi32(zero, rows, offsets, block + 2 + 4 * c, 1),
                           _mm512_set1_epi8(Format::kFlip));
  }
};

template <typename Format, template <typename> class Source>
struct GroupTiles {
  // Rows r0 .. r0 + rows - 1 (rows <= 16) against tokens t0 .. t0 + T - 1.
  template <int T>
  TESSERA_AVX512 static void run(const QuantPanel& p, int64_t r0, int64_t t0, int rows) {
    const Source<Format> source(p, r0, rows);
    const ArrangedBlock* x[T];
    for (int t = 0; t < T; ++t)
      x[t] = static_cast<const ArrangedBlock*>(p.x) + (t0 + t) * p.x_stride;
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < p.blocks; ++b) {
      __m512 dw;
      __m512i chunks[Format::kChunks], codes[8];
      source.template load<T == 1>(b, dw, chunks);
      Format::split(chunks, codes);
      for (int t = 0; t < T; ++t) {
        const ArrangedBlock& a = x[t][b];
        const __m512i sums = dot_codes(_mm512_set1_epi32(a.start), codes, a.q);
        acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(dw, _mm512_set1_ps(a.d)), _mm512_cvtepi32_ps(sums),
                                 acc[t]);
      }
    }
    store_rows(p, r0, t0, rows, acc);
  }

  // Decode over S whole groups at once, as HalfRowTiles::run_streams.
  static constexpr int kDecodeStreams = 4;
  template <int S>
  TESSERA_AVX512 static void run_streams(const QuantPanel& p, const int64_t (&r0)[S]) {
    const auto* x = static_cast<const ArrangedBlock*>(p.x);
    __m512 acc[S][1];
    for (int s = 0; s < S; ++s) acc[s][0] = _mm512_setzero_ps();
    for (int64_t b = 0; b < p.blocks; ++b)
      for (int s = 0; s < S; ++s) {
        __m512 dw;
        __m512i chunks[Format::kChunks], codes[8];
        Source<Format>(p, r0[s], kGroupRows).template load<false>(b, dw, chunks);
        Format::split(chunks, codes);
        const __m512i sums = dot_codes(_mm512_set1_epi32(x[b].start), codes, x[b].q);
        acc[s][0] = _mm512_fmadd_ps(_mm512_mul_ps(dw, _mm512_set1_ps(x[b].d)),
                                    _mm512_cvtepi32_ps(sums), acc[s][0]);
      }
    for (int s = 0; s < S; ++s) store_rows(p, r0[s], 0, kGroupRows, acc[s]);
  }
};

// k-quants in GGUF's layout, row by row: 64 codes (two blocks of 32) per
// register, one int32 register of lane sums per super-block, summed to the
// super-block's one int32 at its end (integer sums: exact in any grouping).

TESSERA_AVX512 inline __m512i load64(const void* p) {
  return _mm512_loadu_si512(p);
}

// acc + scale * float(the sum of sixteen int32 lanes): the super-block's one
// exact sum and its FMA.
TESSERA_AVX512 inline float scaled_sum(__m512i lanes, float scale, float acc) {
  return fma_scalar(scale, static_cast<float>(_mm512_reduce_add_epi32(lanes)), acc);
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
  // Super-block s of the tile's rows into `acc`: one exact int32 per row and
  // token, one FMA.
  TESSERA_AVX512 static inline void add_super_block(const QuantPanel& p, int64_t r0,
                                                    const Q8KBlock* const* x, int64_t s,
                                                    float (&acc)[R][T]) {
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
        acc[r][t] = scaled_sum(lanes, d * x[t][s].d, acc[r][t]);
        // sum of m * (x codes' sum) over the eight blocks: exact in int32.
        const int32_t min_sum = sum_int_lanes(
            _mm_madd_epi16(m16, _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[t][s].sums))));
        acc[r][t] = fma_scalar(-(dmin * x[t][s].d), static_cast<float>(min_sum), acc[r][t]);
      }
    }
  }
  TESSERA_AVX512 static void run(const QuantPanel& p, int64_t r0, int64_t t0) {
    const Q8KBlock* x[T];
    for (int t = 0; t < T; ++t) x[t] = static_cast<const Q8KBlock*>(p.x) + (t0 + t) * p.x_stride;
    float acc[R][T] = {};
    for (int64_t s = 0; s < p.blocks; ++s) add_super_block(p, r0, x, s, acc);
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) p.out[(t0 + t) * p.out_stride + r0 + r] = acc[r][t];
  }
};

template <int R, int T>
struct Q6_KTile {
  // Super-block s of the tile's rows into `acc`: one exact int32 per row and
  // token, one FMA.
  TESSERA_AVX512 static inline void add_super_block(const QuantPanel& p, int64_t r0,
                                                    const Q8KBlock* const* x, int64_t s,
                                                    float (&acc)[R][T]) {
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
        acc[r][t] = scaled_sum(lanes, d * x[t][s].d, acc[r][t]);
      }
    }
  }
  TESSERA_AVX512 static void run(const QuantPanel& p, int64_t r0, int64_t t0) {
    const Q8KBlock* x[T];
    for (int t = 0; t < T; ++t) x[t] = static_cast<const Q8KBlock*>(p.x) + (t0 + t) * p.x_stride;
    float acc[R][T] = {};
    for (int64_t s = 0; s < p.blocks; ++s) add_super_block(p, r0, x, s, acc);
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) p.out[(t0 + t) * p.out_stride + r0 + r] = acc[r][t];
  }
};

// q4_K, sixteen rows per register (interleaved_rows.h). Per super-block
// and token: for each block of 32, eight vpdpbusd give the rows' exact sums,
// times their 6-bit scales (vpmulld) into one int32 per row; the minimums'
// sum is four vpdpwssd of int16 pairs of minimums against pairs of the
// token's code sums; then two FMAs for the sixteen outputs.
struct Q4_KGroups {
  static constexpr int64_t kBytes = kQ4_KBytes;
  template <int T>
  TESSERA_AVX512 static void add(const uint8_t* super, const Q8KBlock* const (&x)[T],
                                 __m512 (&acc)[T]) {
    const __m512i low6 = _mm512_set1_epi32(0x3F3F3F3F), low4 = _mm512_set1_epi32(0x0F0F0F0F);
    const __m512i top2 = _mm512_set1_epi32(0x03030303), byte = _mm512_set1_epi32(0xFF);
    const __m512i words = _mm512_set1_epi32(0x00FF00FF), nibble = _mm512_set1_epi8(0x0F);
    const __m512 d = load_halves(super), dmin = load_halves(super + 32);
    // Each row's 12 scale bytes as three dwords: the q4_K_scale_min bit
    // fields for all sixteen rows at once.
    const __m512i u0 = load64(super + 64), u1 = load64(super + 128), u2 = load64(super + 192);
    const __m512i scales[2] = {
        _mm512_and_si512(u0, low6),
        _mm512_or_si512(_mm512_and_si512(u2, low4),
                        _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(u0, 6), top2), 4))};
    const __m512i mins_low = _mm512_and_si512(u1, low6);
    const __m512i mins_high =
        _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(u2, 4), low4),
                        _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(u1, 6), top2), 4));
    __m512i sums[T];
    for (int t = 0; t < T; ++t) sums[t] = _mm512_setzero_si512();
    const uint8_t* chunks = super + 256;
    for (int j = 0; j < 8; ++j) {
      const __m512i scale = _mm512_and_si512(_mm512_srli_epi32(scales[j / 4], 8 * (j % 4)), byte);
      __m512i codes[8];
      for (int i = 0; i < 8; ++i) {
        const __m512i packed = load64(chunks + 64 * (8 * (j / 2) + i));
        codes[i] = _mm512_and_si512(j % 2 ? _mm512_srli_epi16(packed, 4) : packed, nibble);
      }
      for (int t = 0; t < T; ++t) {
        const __m512i block = dot_codes(_mm512_setzero_si512(), codes, x[t]->q + 32 * j);
        sums[t] = _mm512_add_epi32(sums[t], _mm512_mullo_epi32(block, scale));
      }
    }
    // Minimums as int16 pairs per row: (m0, m2), (m1, m3), (m4, m6), (m5, m7).
    const __m512i pairs[4] = {_mm512_and_si512(mins_low, words),
                              _mm512_and_si512(_mm512_srli_epi32(mins_low, 8), words),
                              _mm512_and_si512(mins_high, words),
                              _mm512_and_si512(_mm512_srli_epi32(mins_high, 8), words)};
    for (int t = 0; t < T; ++t) {
      const int16_t* code_sums = x[t]->sums;
      __m512i min_sums = _mm512_setzero_si512();
      for (int k = 0; k < 4; ++k) {
        const int first = 4 * (k / 2) + k % 2;  // sums first and first + 2
        min_sums = _mm512_dpwssd_epi32(
            min_sums, pairs[k],
            _mm512_set1_epi32(word_pair(code_sums[first], code_sums[first + 2])));
      }
      const __m512 dx = _mm512_set1_ps(x[t]->d);
      acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(d, dx), _mm512_cvtepi32_ps(sums[t]), acc[t]);
      acc[t] = _mm512_fnmadd_ps(_mm512_mul_ps(dmin, dx), _mm512_cvtepi32_ps(min_sums), acc[t]);
    }
  }
};

// q6_K, sixteen rows per register (interleaved_rows.h). Per super-block and
// token: for each block of 16, four vpdpbusd of the unsigned 6-bit codes
// give the rows' exact sums, times their int8 scales into one int32 per row;
// the codes' offset, 32 * (sum over blocks of scale * x codes' sum), is eight
// vpdpwssd of scale pairs against pairs of the token's sums of 16; one FMA.
struct Q6_KGroups {
  static constexpr int64_t kBytes = kQ6_KBytes;
  template <int T>
  TESSERA_AVX512 static void add(const uint8_t* super, const Q8KBlock* const (&x)[T],
                                 __m512 (&acc)[T]) {
    const __m512i nibble = _mm512_set1_epi8(0x0F), top = _mm512_set1_epi8(0x30);
    const __m512 d = load_halves(super);
    const uint8_t* scale_units = super + 32;  // four 4-byte units: scales 4k..4k+3
    const uint8_t* low_bits = super + 288;    // ql, 32 chunks
    const uint8_t* high_bits = super + 2336;  // qh, 16 chunks
    __m512i sums[T];
    for (int t = 0; t < T; ++t) sums[t] = _mm512_setzero_si512();
#pragma GCC unroll 16  // shifts and choices by block become constants
    for (int block = 0; block < 16; ++block) {
      // Elements 16 * block ..: half h, quarter m of it, first or second 16.
      const int h = block / 8, m = (block % 8) / 2, second = block % 2;
      const __m512i scale = _mm512_srai_epi32(
          _mm512_slli_epi32(load64(scale_units + 64 * (block / 4)), 24 - 8 * (block % 4)), 24);
      __m512i codes[4];
      for (int i = 0; i < 4; ++i) {
        const int g = 4 * second + i;
        const __m512i low = load64(low_bits + 64 * (16 * h + 8 * (m % 2) + g));
        const __m512i high = load64(high_bits + 64 * (8 * h + g));
        // qh bits 2m, 2m + 1 to bits 4, 5.
        const __m512i placed = m == 0   ? _mm512_slli_epi16(high, 4)
                               : m == 1 ? _mm512_slli_epi16(high, 2)
                               : m == 2 ? high
                                        : _mm512_srli_epi16(high, 2);
        codes[i] = _mm512_ternarylogic_epi32(
            _mm512_and_si512(m >= 2 ? _mm512_srli_epi16(low, 4) : low, nibble), placed, top,
            0xF8);  // a | (b & c)
      }
      for (int t = 0; t < T; ++t) {
        const __m512i partial = dot_codes(_mm512_setzero_si512(), codes, x[t]->q + 16 * block);
        sums[t] = _mm512_add_epi32(sums[t], _mm512_mullo_epi32(partial, scale));
      }
    }
    // Scale pairs per row as int16 words: (sc 4k, sc 4k+2) and (4k+1, 4k+3).
    __m512i even[4], odd[4];
    for (int k = 0; k < 4; ++k) {
      const __m512i unit = load64(scale_units + 64 * k);
      even[k] = _mm512_srai_epi16(_mm512_slli_epi16(unit, 8), 8);
      odd[k] = _mm512_srai_epi16(unit, 8);
    }
    for (int t = 0; t < T; ++t) {
      const int16_t* halves = x[t]->half_sums;
      __m512i offset = _mm512_setzero_si512();
      for (int k = 0; k < 4; ++k) {
        offset = _mm512_dpwssd_epi32(
            offset, even[k], _mm512_set1_epi32(word_pair(halves[4 * k], halves[4 * k + 2])));
        offset = _mm512_dpwssd_epi32(
            offset, odd[k], _mm512_set1_epi32(word_pair(halves[4 * k + 1], halves[4 * k + 3])));
      }
      const __m512i exact = _mm512_sub_epi32(sums[t], _mm512_slli_epi32(offset, 5));
      acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(x[t]->d)), _mm512_cvtepi32_ps(exact),
                               acc[t]);
    }
  }
};

// A k-quant format's super-blocks (Format::add) over a group of 16 rows
// against tokens t0 .. t0 + T - 1. Decode stays one group at a time: four
// or two groups at once (as GroupTiles) ran Q4_K_M generation 10-55% slower.
template <typename Format>
struct SuperBlockGroups {
  template <int T>
  TESSERA_AVX512 static void run(const QuantPanel& p, int64_t r0, int64_t t0, int rows) {
    constexpr int64_t kGroupSuper = kGroupRows * Format::kBytes;
    const uint8_t* group = p.w + static_cast<std::size_t>(r0) * p.row_bytes;
    const Q8KBlock* x[T];
    for (int t = 0; t < T; ++t) x[t] = static_cast<const Q8KBlock*>(p.x) + (t0 + t) * p.x_stride;
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t s = 0; s < p.blocks; ++s) {
      const uint8_t* super = group + s * kGroupSuper;
      stream_ahead<T == 1>(super, kGroupSuper);
      const Q8KBlock* xs[T];
      for (int t = 0; t < T; ++t) xs[t] = x[t] + s;
      Format::add(super, xs, acc);
    }
    store_rows(p, r0, t0, rows, acc);
  }
};

// Attention's vector steps (dot_kernels.h), with masked tails.

// exp_reference on sixteen lanes, step for step.
TESSERA_AVX512 inline __m512 exp16(__m512 x) {
  using namespace softmax_exp;
  const __m512 c = _mm512_min_ps(_mm512_set1_ps(kHigh), _mm512_max_ps(_mm512_set1_ps(kLow), x));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(c, _mm512_set1_ps(kLog2e)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-kLn2High), c);
  r = _mm512_fmadd_ps(n, _mm512_set1_ps(-kLn2Low), r);
  __m512 y = _mm512_set1_ps(kP[0]);
  for (int i = 1; i < 6; ++i) y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(kP[i]));
  y = _mm512_add_ps(_mm512_fmadd_ps(y, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
  const __m512i two_n =
      _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  const __mmask16 kept = _mm512_cmp_ps_mask(x, _mm512_set1_ps(kLow), _CMP_NLT_UQ);
  return _mm512_maskz_mul_ps(kept, y, _mm512_castsi512_ps(two_n));
}

TESSERA_AVX512 void exp_shifted(float* x, int64_t n, float shift) {
  const __m512 s = _mm512_set1_ps(shift);
  for (int64_t i = 0; i < n; i += 16) {
    const auto lanes = static_cast<__mmask16>(n - i >= 16 ? 0xFFFF : (1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(x + i, lanes,
                          exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(lanes, x + i), s)));
  }
}

// y held in registers, 64 floats at a time, while the rows pass (f32
// rows, or f16 / bf16 ones converted in registers).
template <typename Weight>
TESSERA_AVX512 inline __m512 load16_masked(__mmask16 lanes, const Weight* p) {
  if constexpr (std::is_same_v<Weight, float>) {
    return _mm512_maskz_loadu_ps(lanes, p);
  } else {
    Weight part[16] = {};
    std::memcpy(part, p, static_cast<std::size_t>(std::popcount(lanes)) * sizeof(Weight));
    return load16(part);
  }
}

template <typename Weight>
TESSERA_AVX512 void axpy_weight_rows(const float* a, const Weight* rows, int64_t row_stride,
                                     int64_t count, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    __m512 acc[4];
    for (int c = 0; c < 4; ++c) acc[c] = _mm512_loadu_ps(y + i + 16 * c);
    for (int64_t j = 0; j < count; ++j) {
      const __m512 aj = _mm512_set1_ps(a[j]);
      const Weight* row = rows + j * row_stride + i;
      for (int c = 0; c < 4; ++c) acc[c] = _mm512_fmadd_ps(aj, load16(row + 16 * c), acc[c]);
    }
    for (int c = 0; c < 4; ++c) _mm512_storeu_ps(y + i + 16 * c, acc[c]);
  }
  for (; i < n; i += 16) {
    const auto lanes = static_cast<__mmask16>(n - i >= 16 ? 0xFFFF : (1u << (n - i)) - 1);
    __m512 acc = _mm512_maskz_loadu_ps(lanes, y + i);
    for (int64_t j = 0; j < count; ++j)
      acc = _mm512_fmadd_ps(_mm512_set1_ps(a[j]),
                            lanes == 0xFFFF ? load16(rows + j * row_stride + i)
                                            : load16_masked(lanes, rows + j * row_stride + i),
                            acc);
    _mm512_mask_storeu_ps(y + i, lanes, acc);
  }
}

TESSERA_AVX512 void axpy_rows(const float* a, const float* rows, int64_t row_stride, int64_t count,
                              float* y, int64_t n) {
  axpy_weight_rows(a, rows, row_stride, count, y, n);
}
TESSERA_AVX512 void axpy_f16_rows(const float* a, const uint16_t* rows, int64_t row_stride,
                                  int64_t count, float* y, int64_t n) {
  axpy_weight_rows(a, rows, row_stride, count, y, n);
}
TESSERA_AVX512 void axpy_bf16_rows(const float* a, const uint16_t* rows, int64_t row_stride,
                                   int64_t count, float* y, int64_t n) {
  axpy_weight_rows(a, reinterpret_cast<const Bf16*>(rows), row_stride, count, y, n);
}

// int8 rows as stored: sixteen codes (or the first `lanes`) widened to
// floats, and a row's scale.
TESSERA_AVX512 inline __m512 load16_codes(const uint8_t* p) {
  return _mm512_cvtepi32_ps(
      _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}
TESSERA_AVX512 inline __m512 load16_codes(__mmask16 lanes, const uint8_t* p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(lanes, p)));
}
TESSERA_AVX512 inline float int8_row_scale(const Int8Rows& rows, int64_t j) {
  return half_scale(rows.codes + j * rows.row_bytes + rows.scale_offset);
}

// The f32-row order (sixteen lanes, folded, then the tail), each row's codes
// widened once for up to four heads.
TESSERA_AVX512 void int8_row_scores(const Int8Rows& rows, const float* x, int64_t x_stride,
                                    int64_t heads, float* out, int64_t out_stride) {
  const int64_t body = rows.k / 16 * 16;
  for (int64_t j = 0; j < rows.count; ++j) {
    const uint8_t* codes = rows.codes + j * rows.row_bytes;
    const float scale = int8_row_scale(rows, j);
    const __m512 scale_v = _mm512_set1_ps(scale);
    for (int64_t h0 = 0; h0 < heads; h0 += 4) {
      const int64_t hn = std::min<int64_t>(4, heads - h0);
      __m512 acc[4];
      for (int h = 0; h < 4; ++h) acc[h] = _mm512_setzero_ps();
      for (int64_t i = 0; i < body; i += 16) {
        const __m512 c = _mm512_mul_ps(load16_codes(codes + i), scale_v);
        for (int64_t h = 0; h < hn; ++h)
          acc[h] = _mm512_fmadd_ps(c, _mm512_loadu_ps(x + (h0 + h) * x_stride + i), acc[h]);
      }
      for (int64_t h = 0; h < hn; ++h) {
        const float* q = x + (h0 + h) * x_stride;
        float r = fold16(acc[h]);
        for (int64_t i = body; i < rows.k; ++i)
          r = fma_scalar(static_cast<float>(static_cast<int8_t>(codes[i])) * scale, q[i], r);
        out[(h0 + h) * out_stride + j] = r;
      }
    }
  }
}

// y held in registers, 64 floats at a time, while the rows pass.
TESSERA_AVX512 void axpy_int8_rows(const float* a, const Int8Rows& rows, float* y) {
  const int64_t n = rows.k;
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    __m512 acc[4];
    for (int c = 0; c < 4; ++c) acc[c] = _mm512_loadu_ps(y + i + 16 * c);
    for (int64_t j = 0; j < rows.count; ++j) {
      const __m512 aj = _mm512_set1_ps(a[j]), scale = _mm512_set1_ps(int8_row_scale(rows, j));
      const uint8_t* codes = rows.codes + j * rows.row_bytes + i;
      for (int c = 0; c < 4; ++c)
        acc[c] = _mm512_fmadd_ps(aj, _mm512_mul_ps(load16_codes(codes + 16 * c), scale), acc[c]);
    }
    for (int c = 0; c < 4; ++c) _mm512_storeu_ps(y + i + 16 * c, acc[c]);
  }
  for (; i < n; i += 16) {
    const auto lanes = static_cast<__mmask16>(n - i >= 16 ? 0xFFFF : (1u << (n - i)) - 1);
    __m512 acc = _mm512_maskz_loadu_ps(lanes, y + i);
    for (int64_t j = 0; j < rows.count; ++j)
      acc = _mm512_fmadd_ps(_mm512_set1_ps(a[j]),
                            _mm512_mul_ps(load16_codes(lanes, rows.codes + j * rows.row_bytes + i),
                                          _mm512_set1_ps(int8_row_scale(rows, j))),
                            acc);
    _mm512_mask_storeu_ps(y + i, lanes, acc);
  }
}

// int4 rows as stored: the sixteen elements e0 .. e0 + 15 of a record (e0
// even) decoded to floats, code * its group's scale.
TESSERA_AVX512 inline __m512 int4_block(const Int4Rows& rows, const uint8_t* record, int64_t e0) {
  const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(record + e0 / 2));
  const __m128i nibble = _mm_set1_epi8(0x0F);
  const __m128i low = _mm_and_si128(bytes, nibble);
  const __m128i high = _mm_and_si128(_mm_srli_epi16(bytes, 4), nibble);
  const __m512i codes =
      _mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm_unpacklo_epi8(low, high)), _mm512_set1_epi32(8));
  const uint8_t* scales = record + rows.scale_offset;
  __m512 scale;
  if (e0 / rows.group == (e0 + 15) / rows.group) {
    scale = _mm512_set1_ps(half_scale(scales + 2 * (e0 / rows.group)));
  } else {
    alignas(64) float each[16];
    for (int l = 0; l < 16; ++l) each[l] = half_scale(scales + 2 * ((e0 + l) / rows.group));
    scale = _mm512_load_ps(each);
  }
  return _mm512_mul_ps(_mm512_cvtepi32_ps(codes), scale);
}
TESSERA_AVX512 inline float int4_element(const Int4Rows& rows, const uint8_t* record, int64_t e) {
  const uint8_t byte = record[e / 2];
  const int code = ((e & 1) != 0 ? byte >> 4 : byte & 0x0F) - 8;
  return static_cast<float>(code) * half_scale(record + rows.scale_offset + 2 * (e / rows.group));
}

// The f32-row order over the decoded elements, each row decoded once for up
// to four heads.
TESSERA_AVX512 void int4_row_scores(const Int4Rows& rows, const float* x, int64_t x_stride,
                                    int64_t heads, float* out, int64_t out_stride) {
  const int64_t body = rows.k / 16 * 16;
  for (int64_t j = 0; j < rows.count; ++j) {
    const uint8_t* record = rows.records + j * rows.row_bytes;
    for (int64_t h0 = 0; h0 < heads; h0 += 4) {
      const int64_t hn = std::min<int64_t>(4, heads - h0);
      __m512 acc[4];
      for (int h = 0; h < 4; ++h) acc[h] = _mm512_setzero_ps();
      for (int64_t i = 0; i < body; i += 16) {
        const __m512 e = int4_block(rows, record, rows.first + i);
        for (int64_t h = 0; h < hn; ++h)
          acc[h] = _mm512_fmadd_ps(e, _mm512_loadu_ps(x + (h0 + h) * x_stride + i), acc[h]);
      }
      for (int64_t h = 0; h < hn; ++h) {
        const float* q = x + (h0 + h) * x_stride;
        float r = fold16(acc[h]);
        for (int64_t i = body; i < rows.k; ++i)
          r = fma_scalar(int4_element(rows, record, rows.first + i), q[i], r);
        out[(h0 + h) * out_stride + j] = r;
      }
    }
  }
}

TESSERA_AVX512 void axpy_int4_rows(const float* a, const Int4Rows& rows, float* y) {
  const int64_t n = rows.k, body = n / 16 * 16;
  for (int64_t i = 0; i < body; i += 16) {
    __m512 acc = _mm512_loadu_ps(y + i);
    for (int64_t j = 0; j < rows.count; ++j)
      acc =
          _mm512_fmadd_ps(_mm512_set1_ps(a[j]),
                          int4_block(rows, rows.records + j * rows.row_bytes, rows.first + i), acc);
    _mm512_storeu_ps(y + i, acc);
  }
  for (int64_t i = body; i < n; ++i)
    for (int64_t j = 0; j < rows.count; ++j)
      y[i] = fma_scalar(a[j], int4_element(rows, rows.records + j * rows.row_bytes, rows.first + i),
                        y[i]);
}

TESSERA_AVX512 void silu_mul(const float* g, const float* u, float* out, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const auto lanes = static_cast<__mmask16>(n - i >= 16 ? 0xFFFF : (1u << (n - i)) - 1);
    const __m512 gv = _mm512_maskz_loadu_ps(lanes, g + i);
    const __m512 e = exp16(_mm512_sub_ps(_mm512_setzero_ps(), gv));
    const __m512 sigmoid = _mm512_div_ps(one, _mm512_add_ps(one, e));
    _mm512_mask_storeu_ps(
        out + i, lanes,
        _mm512_mul_ps(_mm512_mul_ps(gv, sigmoid), _mm512_maskz_loadu_ps(lanes, u + i)));
  }
}

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
    // Tiles (rows x tokens), decode / prompt. f32 rows: decode streams
    // weights once, one row at a time asking four rows ahead (1.1b
    // generation 6% faster than several rows side by side); prompts 4 x 4
    // (sixteen outputs from eight loads). f16 / bf16, one row per lane,
    // interleaved in groups of 16 or transposed from GGUF's layout: decode
    // four groups at once, one from each quarter of the panel
    // (group_decode_streams) / 32 x 8. Block-quantized types: groups of 16
    // rows x 8 tokens; decode q8_0 / q4_0 four groups at once, q4_K / q6_K
    // one group as one stream asked for 8 KiB ahead; k-quants kept in GGUF's
    // layout (mapped weights, row counts not a multiple of 16) 1 x 1 / 2 x 3.
    set.f32 = tiled_panel<FloatPanel, 1, 4, 4, FloatTiles<float>::template Tile>;
    set.f16 = kRowHalves<uint16_t>;
    set.bf16 = kRowHalves<Bf16>;
    set.f16_groups = kHalfGroupRows<uint16_t>;
    set.bf16_groups = kHalfGroupRows<Bf16>;
    set.f16_as_f32 = tiled_panel<FloatPanel, 1, 4, 4, FloatTiles<uint16_t>::template Tile>;
    set.bf16_as_f32 = tiled_panel<FloatPanel, 1, 4, 4, FloatTiles<Bf16>::template Tile>;
    set.q8_0 = group_panel<QuantPanel, GroupTiles<Q8_0Groups, GatheredRows>, kGroupRows, 8>;
    set.q4_0 = group_panel<QuantPanel, GroupTiles<Q4_0Groups, GatheredRows>, kGroupRows, 8>;
    set.q8_0_groups =
        group_panel<QuantPanel, GroupTiles<Q8_0Groups, InterleavedGroup>, kGroupRows, 8>;
    set.q4_0_groups =
        group_panel<QuantPanel, GroupTiles<Q4_0Groups, InterleavedGroup>, kGroupRows, 8>;
    set.q4_K_groups = group_panel<QuantPanel, SuperBlockGroups<Q4_KGroups>, kGroupRows, 8>;
    set.q6_K_groups = group_panel<QuantPanel, SuperBlockGroups<Q6_KGroups>, kGroupRows, 8>;
    set.q4_K = tiled_panel<QuantPanel, 1, 2, 3, Q4_KTile>;
    set.q6_K = tiled_panel<QuantPanel, 1, 2, 3, Q6_KTile>;
    set.arrange_q8 = arrange_q8;
    set.arranged_q8_layout = arranged_blocks;
    set.exp_shifted = exp_shifted;
    set.axpy_rows = axpy_rows;
    set.axpy_f16_rows = axpy_f16_rows;
    set.axpy_bf16_rows = axpy_bf16_rows;
    set.int8_row_scores = int8_row_scores;
    set.axpy_int8_rows = axpy_int8_rows;
    set.int4_row_scores = int4_row_scores;
    set.axpy_int4_rows = axpy_int4_rows;
    set.silu_mul = silu_mul;
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
