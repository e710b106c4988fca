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

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "backends/cpu/dot_kernels.h"
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
// ahead (kPrefetchBytes for block-quantized groups; float groups ask one
// group ahead). (A prompt's row block is cached after its first tokens:
// asking there costs time.)
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

}  // namespace
}  // namespace tessera::cpu
