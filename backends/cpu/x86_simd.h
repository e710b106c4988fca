// Helpers shared by the x86 kernel files (dot_kernels_avx2.cpp,
// dot_kernels_avx512.cpp): each function carries its target attribute, so it
// is only called from code compiled for those features, behind a CPU check.
// Internal linkage: no file's instantiation can stand in for another's.
#pragma once

// GCC 12's AVX-512 headers build "undefined" registers from themselves, which
// its own -Wuninitialized then reports where they are inlined (GCC bug
// 105593); the warnings are about the header, not this code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "backends/cpu/dot_kernels.h"
#include "backends/cpu/panel_tiles.h"
#include "core/tensor/dtype.h"

#define TESSERA_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace tessera::cpu {
namespace {

// The eight-lane tree of sum_eight_lanes on a register.
TESSERA_AVX2 inline float sum_lanes(__m256 v) {
  const __m128 halves = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 pairs = _mm_add_ps(halves, _mm_movehl_ps(halves, halves));
  return _mm_cvtss_f32(_mm_add_ss(pairs, _mm_movehdup_ps(pairs)));
}

// The three float-row weight types: 8 floats from a pointer, and one.
TESSERA_AVX2 inline __m256 load8(const float* p) {
  return _mm256_loadu_ps(p);
}
TESSERA_AVX2 inline float to_f32(float v) {
  return v;
}
TESSERA_AVX2 inline __m256 load8(const uint16_t* p) {  // f16
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
TESSERA_AVX2 inline float to_f32(uint16_t h) {
  return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
}
// bf16 is the top half of an f32: widen and shift.
struct Bf16 {
  uint16_t bits;
};
TESSERA_AVX2 inline __m256 load8(const Bf16* p) {
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}
TESSERA_AVX2 inline float to_f32(Bf16 b) {
  return bf16_to_float(b.bits);
}

TESSERA_AVX2 inline float half_scale(const uint8_t* block) {
  uint16_t h;
  std::memcpy(&h, block, 2);
  return to_f32(h);
}

// Asks for the line `ahead` bytes past p: a tile's kernel reads its rows
// side by side, at the same place in the next tile's rows. A tile streams
// several rows at once, more streams (and on short rows, shorter ones) than
// the hardware prefetcher picks up by itself.
inline void prefetch_ahead(const void* p, std::size_t ahead) {
  _mm_prefetch(static_cast<const char*>(p) + ahead, _MM_HINT_T0);
}

// How far ahead a tile of `rows` rows asks: the next tile's rows, and at
// least four rows on. (Measured on 110m/1.1b generation: one-row tiles
// asking four rows ahead beat eight-row tiles, and several rows streamed
// side by side without these requests ran at half speed.)
constexpr std::size_t prefetch_distance(int rows, std::size_t row_bytes) {
  return static_cast<std::size_t>(rows < 4 ? 4 : rows) * row_bytes;
}

// acc + a * b with one rounding, as std::fma.
TESSERA_AVX2 inline float fma_scalar(float a, float b, float acc) {
  return _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(a), _mm_set_ss(b), _mm_set_ss(acc)));
}

// The sum of four or eight int32 lanes (integers: exact in any grouping).
TESSERA_AVX2 inline int32_t sum_int_lanes(__m128i four) {
  const __m128i two = _mm_add_epi32(four, _mm_unpackhi_epi64(four, four));
  return _mm_cvtsi128_si32(_mm_add_epi32(two, _mm_shuffle_epi32(two, 1)));
}
TESSERA_AVX2 inline int32_t sum_int_lanes(__m256i v) {
  return sum_int_lanes(_mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1)));
}

TESSERA_AVX2 inline __m256i load32(const void* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// The int32 of two int16 words: what vpmaddwd / vpdpwssd pair with a
// register's words.
inline int32_t word_pair(int16_t low, int16_t high) {
  return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint16_t>(low)) |
                              (static_cast<uint32_t>(static_cast<uint16_t>(high)) << 16));
}

// How far ahead a decode's stream of interleaved groups asks (8 KiB beat 4
// and 16 on 1.1b-shaped matrices, matmul_bench).
constexpr std::size_t kPrefetchBytes = 8192;

// Decode: a group is one stream, every line of it asked for a fixed distance
// ahead (kPrefetchBytes for block-quantized groups). (A prompt's row block is
// cached after its first tokens: asking there costs time.)
template <bool kStream>
inline void stream_ahead(const uint8_t* p, std::size_t bytes, std::size_t ahead = kPrefetchBytes) {
  if (kStream)
    for (std::size_t line = 0; line < bytes; line += 64) prefetch_ahead(p + line, ahead);
}

// A token's block as the x86 integer kernels read it (arrange_q8, once per
// matmul): the codes, the scale, and the sum's start for weights held as
// unsigned codes u = w + offset, -offset * sum(q).
struct ArrangedBlock {
  int8_t q[32];
  int32_t start;
  float d;
};

inline IntegerActivationLayout arranged_blocks(int64_t blocks) {
  return {static_cast<std::size_t>(blocks) * sizeof(ArrangedBlock), blocks};
}

inline void arrange_blocks(const Q8Block* in, int64_t blocks, int32_t offset, ArrangedBlock* out) {
  for (int64_t b = 0; b < blocks; ++b) {
    int32_t sum = 0;
    for (const int8_t q : in[b].q) sum += q;
    std::memcpy(out[b].q, in[b].q, 32);
    out[b].start = -offset * sum;
    out[b].d = in[b].d;
  }
}

// Half rows (f16, bf16) for the kernels that put sixteen rows in a
// register's lanes (dot_kernels.h, "half rows"): a source hands a tile
// blocks of elements i .. i + 15 of its sixteen rows, element-major
// (element e's sixteen rows at e * 16, one per lane), and single elements
// for a row length's tail.
inline constexpr int kHalfBlock = 16;  // elements per block
using HalfScratch = uint16_t[kHalfBlock * kHalfBlock];

// An interleaved group (interleaved_rows.h): already element-major, read in
// place.
template <typename Weight>
struct HalfGroup {
  const Weight* group = nullptr;
  HalfGroup() = default;
  HalfGroup(const FloatPanel& p, int64_t r0, int /*rows: a whole group*/)
      : group(reinterpret_cast<const Weight*>(p.w + static_cast<std::size_t>(r0) * p.row_bytes)) {}
  const Weight* block(int64_t i, HalfScratch& /*unused*/) const { return group + i * kHalfBlock; }
  const Weight* element(int64_t i, uint16_t (&/*unused*/)[kHalfBlock]) const {
    return group + i * kHalfBlock;
  }
  // Decode: asks for the block's lines 1 KiB on (with four groups read at
  // once, 1.1b f16 generation ran 15-20% slower without).
  void ask_ahead(int64_t i) const {
    const auto* at = reinterpret_cast<const uint8_t*>(group + i * kHalfBlock);
    for (std::size_t line = 0; line < sizeof(HalfScratch); line += 64)
      prefetch_ahead(at + line, 1024);
  }
};

// 16 x 16 16-bit values transposed in registers: in[r] = row r's elements
// 0..15; out[kTransposedAt[e]] = element e of rows 0..15 (four rounds of
// unpacks leave the elements in this order).
inline constexpr int kTransposedAt[16] = {0, 4, 2, 6, 1, 5, 3, 7, 8, 12, 10, 14, 9, 13, 11, 15};
TESSERA_AVX2 inline void transpose_words(__m256i (&v)[16]) {
  __m256i a[16];
  for (int r = 0; r < 16; r += 2) {
    a[r] = _mm256_unpacklo_epi16(v[r], v[r + 1]);
    a[r + 1] = _mm256_unpackhi_epi16(v[r], v[r + 1]);
  }
  for (int r = 0; r < 16; r += 4)
    for (int j = 0; j < 2; ++j) {
      v[r + j] = _mm256_unpacklo_epi32(a[r + j], a[r + j + 2]);
      v[r + j + 2] = _mm256_unpackhi_epi32(a[r + j], a[r + j + 2]);
    }
  for (int r = 0; r < 16; r += 8)
    for (int j = 0; j < 4; ++j) {
      a[r + j] = _mm256_unpacklo_epi64(v[r + j], v[r + j + 4]);
      a[r + j + 4] = _mm256_unpackhi_epi64(v[r + j], v[r + j + 4]);
    }
  for (int j = 0; j < 8; ++j) {
    v[j] = _mm256_permute2x128_si256(a[j], a[j + 8], 0x20);
    v[j + 8] = _mm256_permute2x128_si256(a[j], a[j + 8], 0x31);
  }
}

// Up to sixteen rows in GGUF's layout (mapped weights, row counts not a
// multiple of 16): each block transposed into the tile's scratch, every row
// read in order (rows past `rows` repeat the last; their lanes are not
// stored).
template <typename Weight>
struct RowHalves {
  const uint8_t* first = nullptr;
  std::size_t row_bytes = 0;
  int rows = 0;
  RowHalves() = default;
  RowHalves(const FloatPanel& p, int64_t r0, int count)
      : first(p.w + static_cast<std::size_t>(r0) * p.row_bytes),
        row_bytes(p.row_bytes),
        rows(count) {}
  TESSERA_AVX2 const Weight* block(int64_t i, HalfScratch& scratch) const {
    __m256i v[16];
    for (int r = 0; r < 16; ++r)
      v[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(
          first + static_cast<std::size_t>(r < rows ? r : rows - 1) * row_bytes + 2 * i));
    transpose_words(v);
    for (int e = 0; e < 16; ++e)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(scratch + e * kHalfBlock),
                          v[kTransposedAt[e]]);
    return reinterpret_cast<const Weight*>(scratch);
  }
  const Weight* element(int64_t i, uint16_t (&lanes)[kHalfBlock]) const {
    for (int r = 0; r < kHalfBlock; ++r)
      std::memcpy(&lanes[r],
                  first + static_cast<std::size_t>(r < rows ? r : rows - 1) * row_bytes + 2 * i, 2);
    return reinterpret_cast<const Weight*>(lanes);
  }
};

// Tiles whose sums go on from the values in out (Tiles::run<T, true>).
template <typename Tiles>
struct Resumed {
  template <int T>
  static void run(const FloatPanel& p, int64_t r0, int64_t t0, int rows) {
    Tiles::template run<T, true>(p, r0, t0, rows);
  }
};

// Prompts over half rows in GGUF's layout: kRows rows at a time, a stretch
// of 256 elements of them transposed once into an element-major copy on the
// stack, which every token then reads as interleaved groups
// (group_panel, kTokens tokens at a time); from the second
// stretch on, each sum goes on from the one in out (the same chain, element
// by element). (Transposing in each tile instead, for every 8 tokens, ran
// 1.1b f16 prompts from the file mapping at 60% of the speed of the f32
// order's row tiles before.)
template <typename Tiles, typename Weight, int kRows, int kTokens>
TESSERA_AVX2 void row_halves_prompt(const FloatPanel& p) {
  constexpr int64_t kStretch = 256;
  alignas(64) uint16_t copy[kRows * kStretch];  // 16 KiB for 32 rows
  for (int64_t r0 = 0; r0 < p.rows; r0 += kRows) {
    const int rows = static_cast<int>(std::min<int64_t>(kRows, p.rows - r0));
    for (int64_t c = 0; c < p.k; c += kStretch) {
      const int64_t len = std::min(kStretch, p.k - c);
      for (int g = 0; g * kHalfBlock < rows; ++g) {
        const RowHalves<Weight> rows_of(p, r0 + g * kHalfBlock,
                                        std::min<int>(kHalfBlock, rows - g * kHalfBlock));
        uint16_t* group = copy + g * kHalfBlock * len;
        int64_t e = 0;
        for (; e + kHalfBlock <= len; e += kHalfBlock)
          rows_of.block(c + e, *reinterpret_cast<HalfScratch*>(group + e * kHalfBlock));
        for (; e < len; ++e) {
          uint16_t lanes[kHalfBlock];
          std::memcpy(group + e * kHalfBlock, rows_of.element(c + e, lanes), sizeof lanes);
        }
      }
      const FloatPanel stretch{reinterpret_cast<const uint8_t*>(copy),
                               static_cast<std::size_t>(len) * sizeof(uint16_t),
                               rows,
                               p.x + c,
                               p.x_stride,
                               p.tokens,
                               len,
                               p.out + r0,
                               p.out_stride};
      if (c == 0)
        group_panel<FloatPanel, Tiles, kRows, kTokens>(stretch);
      else
        group_panel<FloatPanel, Resumed<Tiles>, kRows, kTokens>(stretch);
    }
  }
}

// A kernel set's f16 / bf16 panels from its HalfRowTiles<Weight, Source>.
// Interleaved groups: decode kStreams groups at once, one from each part of
// the panel (group_decode_streams); prompts in tiles of kRows x kTokens.
template <template <typename, template <typename> class> class Tiles, typename Weight, int kStreams,
          int kRows, int kTokens>
void half_group_rows_panel(const FloatPanel& p) {
  using Groups = Tiles<Weight, HalfGroup>;
  if (p.tokens == 1)
    group_decode_streams<FloatPanel, Groups, kHalfBlock, kStreams>(p);
  else
    group_panel<FloatPanel, Groups, kRows, kTokens>(p);
}

// Rows in GGUF's layout: decode sixteen rows at a time, transposed block by
// block; prompts as row_halves_prompt.
template <template <typename, template <typename> class> class Tiles, typename Weight, int kRows,
          int kTokens>
void row_halves_panel(const FloatPanel& p) {
  if (p.tokens == 1)
    group_panel<FloatPanel, Tiles<Weight, RowHalves>, kHalfBlock, 1>(p);
  else
    row_halves_prompt<Tiles<Weight, HalfGroup>, Weight, kRows, kTokens>(p);
}

}  // namespace
}  // namespace tessera::cpu
