// AVX2 + FMA + F16C versions of dot_kernels.h, compiled for those features
// function by function (the rest of the build stays baseline x86-64) and
// chosen at run time only on a CPU that has them. Same order, same bits as
// the scalar reference, in register tiles of several rows and tokens
// (panel_tiles.h).
#include <cstring>

#include "backends/cpu/dot_kernels.h"
#include "backends/cpu/dot_order.h"
#include "backends/cpu/interleaved_rows.h"
#include "backends/cpu/panel_tiles.h"
#include "core/tensor/block_quant.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>

#include "backends/cpu/x86_simd.h"

namespace tessera::cpu {
namespace {

// A tile of R rows times T tokens of float rows: two 8-lane accumulators
// per output (lanes 0-7 and 8-15 of the 16-lane order), folded and then the
// tail, in order.
template <typename Weight>
struct FloatTiles {
  template <int R, int T>
  struct Tile {
    TESSERA_AVX2 static void run(const FloatPanel& p, int64_t r0, int64_t t0) {
      const Weight* w[R];
      const float* x[T];
      for (int r = 0; r < R; ++r)
        w[r] =
            reinterpret_cast<const Weight*>(p.w + static_cast<std::size_t>(r0 + r) * p.row_bytes);
      for (int t = 0; t < T; ++t) x[t] = p.x + (t0 + t) * p.x_stride;
      __m256 low[R][T], high[R][T];
      for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) low[r][t] = high[r][t] = _mm256_setzero_ps();
      int64_t i = 0;
      for (; i + kFloatLanes <= p.k; i += kFloatLanes) {
        __m256 wv[R];
        for (int r = 0; r < R; ++r) {
          prefetch_ahead(w[r] + i, R * p.row_bytes);
          wv[r] = load8(w[r] + i);
        }
        for (int t = 0; t < T; ++t) {
          const __m256 xv = _mm256_loadu_ps(x[t] + i);
          for (int r = 0; r < R; ++r) low[r][t] = _mm256_fmadd_ps(wv[r], xv, low[r][t]);
        }
        for (int r = 0; r < R; ++r) wv[r] = load8(w[r] + i + 8);
        for (int t = 0; t < T; ++t) {
          const __m256 xv = _mm256_loadu_ps(x[t] + i + 8);
          for (int r = 0; r < R; ++r) high[r][t] = _mm256_fmadd_ps(wv[r], xv, high[r][t]);
        }
      }
      for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) {
          float v = sum_lanes(_mm256_add_ps(low[r][t], high[r][t]));
          for (int64_t j = i; j < p.k; ++j)
            v = _mm_cvtss_f32(
                _mm_fmadd_ss(_mm_set_ss(to_f32(w[r][j])), _mm_set_ss(x[t][j]), _mm_set_ss(v)));
          p.out[(t0 + t) * p.out_stride + r0 + r] = v;
        }
    }
  };
};

// Half rows (f16, bf16), one row per lane: sixteen rows are two 8-lane
// halves, one FMA per element and half with x[i] broadcast (dot_kernels.h,
// "half rows"). The rows come from a source (x86_simd.h): a group
// interleaved at load, or rows in GGUF's layout transposed block by block.

// A group's outputs (its first `rows`) from the two halves.
TESSERA_AVX2 inline void store_halves(float* out, int rows, const __m256 (&v)[2]) {
  if (rows == kHalfBlock) {
    _mm256_storeu_ps(out, v[0]);
    _mm256_storeu_ps(out + 8, v[1]);
    return;
  }
  float all[kHalfBlock];
  _mm256_storeu_ps(all, v[0]);
  _mm256_storeu_ps(all + 8, v[1]);
  std::memcpy(out, all, static_cast<std::size_t>(rows) * sizeof(float));
}

// A tile's sums for rows r0 .. r0 + rows - 1 and tokens t0 .. t0 + T - 1:
// zero, or (kResume) the values in out, which each chain goes on from.
template <int T, bool kResume>
TESSERA_AVX2 inline void start_group_sums(const FloatPanel& p, int64_t r0, int64_t t0, int rows,
                                          __m256 (&acc)[T][2]) {
  for (int t = 0; t < T; ++t) {
    float start[kHalfBlock] = {};
    if (kResume)
      std::memcpy(start, p.out + (t0 + t) * p.out_stride + r0,
                  static_cast<std::size_t>(rows) * sizeof(float));
    acc[t][0] = _mm256_loadu_ps(start);
    acc[t][1] = _mm256_loadu_ps(start + 8);
  }
}

template <typename Weight, template <typename> class Source>
struct HalfRowTiles {
  // Rows r0 .. r0 + rows - 1 (rows <= 16) against tokens t0 .. t0 + T - 1;
  // kResume: each sum goes on from the value in out (row_halves_prompt).
  template <int T, bool kResume = false>
  TESSERA_AVX2 static void run(const FloatPanel& p, int64_t r0, int64_t t0, int rows) {
    const Source<Weight> source(p, r0, rows);
    const float* x[T];
    for (int t = 0; t < T; ++t) x[t] = p.x + (t0 + t) * p.x_stride;
    __m256 acc[T][2];
    start_group_sums<T, kResume>(p, r0, t0, rows, acc);
    alignas(32) HalfScratch scratch;
    int64_t i = 0;
    for (; i + kHalfBlock <= p.k; i += kHalfBlock) {
      const Weight* block = source.block(i, scratch);
      for (int e = 0; e < kHalfBlock; ++e) {
        const __m256 w[2] = {load8(block + e * kHalfBlock), load8(block + e * kHalfBlock + 8)};
        for (int t = 0; t < T; ++t) {
          const __m256 xv = _mm256_broadcast_ss(x[t] + i + e);
          for (int h = 0; h < 2; ++h) acc[t][h] = _mm256_fmadd_ps(w[h], xv, acc[t][h]);
        }
      }
    }
    for (; i < p.k; ++i) {
      uint16_t lanes[kHalfBlock];
      const Weight* element = source.element(i, lanes);
      const __m256 w[2] = {load8(element), load8(element + 8)};
      for (int t = 0; t < T; ++t) {
        const __m256 xv = _mm256_broadcast_ss(x[t] + i);
        for (int h = 0; h < 2; ++h) acc[t][h] = _mm256_fmadd_ps(w[h], xv, acc[t][h]);
      }
    }
    for (int t = 0; t < T; ++t) store_halves(p.out + (t0 + t) * p.out_stride + r0, rows, acc[t]);
  }

  // Decode over S groups at once, each from its own part of the panel
  // (group_decode_streams): every row's sum as run<1> makes it. (Asking
  // for lines ahead, as AVX-512 does, made no difference here: 1.1b f16
  // generation with TESSERA_CPU_KERNELS=avx2.)
  template <int S>
  TESSERA_AVX2 static void run_streams(const FloatPanel& p, const int64_t (&r0)[S]) {
    Source<Weight> source[S];
    for (int s = 0; s < S; ++s) source[s] = Source<Weight>(p, r0[s], kHalfBlock);
    __m256 acc[S][2];
    for (int s = 0; s < S; ++s) acc[s][0] = acc[s][1] = _mm256_setzero_ps();
    alignas(32) HalfScratch scratch[S];
    int64_t i = 0;
    for (; i + kHalfBlock <= p.k; i += kHalfBlock) {
      const Weight* block[S];
      for (int s = 0; s < S; ++s) block[s] = source[s].block(i, scratch[s]);
      for (int e = 0; e < kHalfBlock; ++e) {
        const __m256 xv = _mm256_broadcast_ss(p.x + i + e);
        for (int s = 0; s < S; ++s)
          for (int h = 0; h < 2; ++h)
            acc[s][h] = _mm256_fmadd_ps(load8(block[s] + e * kHalfBlock + 8 * h), xv, acc[s][h]);
      }
    }
    for (; i < p.k; ++i)
      for (int s = 0; s < S; ++s) {
        uint16_t lanes[kHalfBlock];
        const Weight* element = source[s].element(i, lanes);
        const __m256 xv = _mm256_broadcast_ss(p.x + i);
        for (int h = 0; h < 2; ++h)
          acc[s][h] = _mm256_fmadd_ps(load8(element + 8 * h), xv, acc[s][h]);
      }
    for (int s = 0; s < S; ++s) store_halves(p.out + r0[s], kHalfBlock, acc[s]);
  }
};

// A prompt tile over a group's stretch already converted to floats
// (element e of its sixteen rows at w + 16 e): tokens t0 .. t0 + T - 1 of
// the stretch's x, each sum going on from the value in out after the first
// stretch. The same chain per output as HalfRowTiles::run.
template <int T, bool kResume>
TESSERA_AVX2 void converted_group_tile(const float* w, int64_t len, const FloatPanel& p, int64_t r0,
                                       int rows, int64_t t0, int64_t c) {
  const float* x[T];
  for (int t = 0; t < T; ++t) x[t] = p.x + (t0 + t) * p.x_stride + c;
  __m256 acc[T][2];
  start_group_sums<T, kResume>(p, r0, t0, rows, acc);
  for (int64_t e = 0; e < len; ++e) {
    const __m256 w0 = _mm256_load_ps(w + e * kHalfBlock),
                 w1 = _mm256_load_ps(w + e * kHalfBlock + 8);
    for (int t = 0; t < T; ++t) {
      const __m256 xv = _mm256_broadcast_ss(x[t] + e);
      acc[t][0] = _mm256_fmadd_ps(w0, xv, acc[t][0]);
      acc[t][1] = _mm256_fmadd_ps(w1, xv, acc[t][1]);
    }
  }
  for (int t = 0; t < T; ++t) store_halves(p.out + (t0 + t) * p.out_stride + r0, rows, acc[t]);
}

template <int T>
TESSERA_AVX2 void converted_group_tiles(const float* w, int64_t len, const FloatPanel& p,
                                        int64_t r0, int rows, int64_t c) {
  int64_t t = 0;
  for (; t + T <= p.tokens; t += T)
    c == 0 ? converted_group_tile<T, false>(w, len, p, r0, rows, t, c)
           : converted_group_tile<T, true>(w, len, p, r0, rows, t, c);
  for (; t < p.tokens; ++t)
    c == 0 ? converted_group_tile<1, false>(w, len, p, r0, rows, t, c)
           : converted_group_tile<1, true>(w, len, p, r0, rows, t, c);
}

// Elements c .. c + len - 1 of sixteen rows from `source` (x86_simd.h: an
// interleaved group, or rows in GGUF's layout transposed block by block) as
// floats, element e's sixteen at floats + 16 e.
template <typename Weight, template <typename> class Source>
TESSERA_AVX2 void convert_stretch(const Source<Weight>& source, int64_t c, int64_t len,
                                  float* floats) {
  alignas(32) HalfScratch scratch;
  int64_t e = 0;
  for (; e + kHalfBlock <= len; e += kHalfBlock) {
    const Weight* block = source.block(c + e, scratch);
    for (int j = 0; j < kHalfBlock; ++j) {
      _mm256_store_ps(floats + (e + j) * kHalfBlock, load8(block + j * kHalfBlock));
      _mm256_store_ps(floats + (e + j) * kHalfBlock + 8, load8(block + j * kHalfBlock + 8));
    }
  }
  for (; e < len; ++e) {
    uint16_t lanes[kHalfBlock];
    const Weight* element = source.element(c + e, lanes);
    _mm256_store_ps(floats + e * kHalfBlock, load8(element));
    _mm256_store_ps(floats + e * kHalfBlock + 8, load8(element + 8));
  }
}

// Prompts over f16 / bf16 rows, sixteen at a time: a stretch of 256
// elements converted to floats once (16 KiB, in L1), then every token's
// tile reads the floats. Converting in every tile, as decode does, paid two
// conversions per element per 4 tokens beside its eight FMAs (bf16 prompts
// ran at 80% of f16's; now level), and in GGUF's layout a transposition
// per stretch and 32 rows too.
template <typename Weight, template <typename> class Source>
TESSERA_AVX2 void converted_prompt(const FloatPanel& p) {
  constexpr int64_t kStretch = 256;
  alignas(32) float floats[kStretch * kHalfBlock];
  for (int64_t r0 = 0; r0 < p.rows; r0 += kHalfBlock) {
    const int rows = static_cast<int>(std::min<int64_t>(kHalfBlock, p.rows - r0));
    const Source<Weight> source(p, r0, rows);
    for (int64_t c = 0; c < p.k; c += kStretch) {
      const int64_t len = std::min(kStretch, p.k - c);
      convert_stretch(source, c, len, floats);
      converted_group_tiles<4>(floats, len, p, r0, rows, c);
    }
  }
}

// f16 / bf16 panels: decode two interleaved groups at once, one from each
// half of the panel (four FMA chains), or sixteen rows in GGUF's layout
// transposed block by block; prompts sixteen rows x 4 tokens (eight
// accumulators) over stretches converted once.
template <typename Weight>
void half_group_panel(const FloatPanel& p) {
  if (p.tokens == 1)
    group_decode_streams<FloatPanel, HalfRowTiles<Weight, HalfGroup>, kHalfBlock, 2>(p);
  else
    converted_prompt<Weight, HalfGroup>(p);
}
template <typename Weight>
void row_halves_avx2_panel(const FloatPanel& p) {
  if (p.tokens == 1)
    group_panel<FloatPanel, HalfRowTiles<Weight, RowHalves>, kHalfBlock, 1>(p);
  else
    converted_prompt<Weight, RowHalves>(p);
}
template <typename Weight>
constexpr FloatPanelKernel kHalfGroupRows = half_group_panel<Weight>;
template <typename Weight>
constexpr FloatPanelKernel kRowHalves = row_halves_avx2_panel<Weight>;

// Eight int32 sums of four consecutive products of signed bytes w and x,
// given |w| (shared by every token).
TESSERA_AVX2 inline __m256i block_lanes(__m256i w, __m256i w_magnitude, __m256i x) {
  const __m256i products = _mm256_maddubs_epi16(w_magnitude, _mm256_sign_epi8(x, w));
  return _mm256_madd_epi16(products, _mm256_set1_epi16(1));
}

// Four rows' block sums [s0, s1, s2, s3] from their eight lanes each
// (integers: exact in any grouping).
TESSERA_AVX2 inline __m128i four_sums(const __m256i (&lanes)[4]) {
  const __m256i sums = _mm256_hadd_epi32(_mm256_hadd_epi32(lanes[0], lanes[1]),
                                         _mm256_hadd_epi32(lanes[2], lanes[3]));
  return _mm_add_epi32(_mm256_castsi256_si128(sums), _mm256_extracti128_si256(sums, 1));
}

// A block of 32 int8 weights and its scale.
struct Q8_0Codes {
  static constexpr int64_t kBytes = kQ8_0Bytes;
  TESSERA_AVX2 static __m256i unpack(const uint8_t* row, int64_t b, float& d) {
    const uint8_t* block = row + b * kQ8_0Bytes;
    d = half_scale(block);
    return load32(block + 2);
  }
};
struct Q4_0Codes {
  static constexpr int64_t kBytes = kQ4_0Bytes;
  TESSERA_AVX2 static __m256i unpack(const uint8_t* row, int64_t b, float& d) {
    const uint8_t* block = row + b * kQ4_0Bytes;
    d = half_scale(block);
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2));
    // Elements 0..15 are the low nibbles, 16..31 the high ones.
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed);
    return _mm256_sub_epi8(_mm256_and_si256(both, _mm256_set1_epi8(0x0F)), _mm256_set1_epi8(8));
  }
};

// A tile of up to four integer rows, one per lane of a 128-bit accumulator
// per token: per block, each row's exact sum and one FMA.
template <typename Codes>
struct IntegerTiles {
  template <int R, int T>
  struct Tile {
    static_assert(R <= 4, "one 128-bit lane per row");
    TESSERA_AVX2 static void run(const QuantPanel& p, int64_t r0, int64_t t0) {
      const uint8_t* w[R];
      const ArrangedBlock* x[T];
      for (int r = 0; r < R; ++r) w[r] = p.w + static_cast<std::size_t>(r0 + r) * p.row_bytes;
      for (int t = 0; t < T; ++t)
        x[t] = static_cast<const ArrangedBlock*>(p.x) + (t0 + t) * p.x_stride;
      __m128 acc[T];
      for (int t = 0; t < T; ++t) acc[t] = _mm_setzero_ps();
      for (int64_t b = 0; b < p.blocks; ++b) {
        __m256i codes[R], magnitude[R];
        alignas(16) float d[4] = {};
        for (int r = 0; r < R; ++r) {
          prefetch_ahead(w[r] + b * Codes::kBytes, prefetch_distance(R, p.row_bytes));
          codes[r] = Codes::unpack(w[r], b, d[r]);
          magnitude[r] = _mm256_sign_epi8(codes[r], codes[r]);
        }
        const __m128 dw = _mm_load_ps(d);
        for (int t = 0; t < T; ++t) {
          const __m256i xv = load32(x[t][b].q);
          __m256i lanes[4];
          for (int r = 0; r < 4; ++r)
            lanes[r] = r < R ? block_lanes(codes[r], magnitude[r], xv) : _mm256_setzero_si256();
          acc[t] = _mm_fmadd_ps(_mm_mul_ps(dw, _mm_set1_ps(x[t][b].d)),
                                _mm_cvtepi32_ps(four_sums(lanes)), acc[t]);
        }
      }
      for (int t = 0; t < T; ++t) {
        alignas(16) float out[4];
        _mm_store_ps(out, acc[t]);
        for (int r = 0; r < R; ++r) p.out[(t0 + t) * p.out_stride + r0 + r] = out[r];
      }
    }
  };
};

// Weights interleaved in groups of 16 rows (interleaved_rows.h), read as
// two halves of eight rows, one row per int32 lane of a 256-bit register:
// chunk c of a group block (64 bytes, four bytes per row) is two registers.
// Per block and token, each row's exact int32 sum, then one convert, one
// scale product and one FMA for eight outputs: no horizontal sums.

// x[4c .. 4c + 3] in every int32 lane.
TESSERA_AVX2 inline __m256i broadcast4(const int8_t* x) {
  int32_t four;
  std::memcpy(&four, x, 4);
  return _mm256_set1_epi32(four);
}

// Eight fp16 values (one per row of a half group) as floats.
TESSERA_AVX2 inline __m256 load_halves8(const uint8_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// acc[t] = fma(d_w * d_x, float(sums[t]), acc[t]) for eight rows: the end of
// a block (or super-block) in the summation order.
template <int T, typename Block>
TESSERA_AVX2 inline void scale_into(__m256 dw, const Block* const (&x)[T], const __m256i (&sums)[T],
                                    __m256 (&acc)[T]) {
  for (int t = 0; t < T; ++t)
    acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(x[t]->d)),
                             _mm256_cvtepi32_ps(sums[t]), acc[t]);
}

// Each format adds one block (q8_0, q4_0) or super-block (q4_K, q6_K) of
// half `half` of a group, at `block`, into the eight rows' accumulators.
// Byte o = 32 * half of every 64-byte unit or chunk is the half's.

// q8_0 (codes stored + 128): signed codes w = u ^ 0x80, and per token
// vpmaddubsw of |w| against x signed by w (products of 128 x 127 fit its
// int16 pairs, not those of u), vpmaddwd to int32 per chunk.
struct Q8_0Halves {
  static constexpr int64_t kBytes = kQ8_0Bytes;
  using Block = ArrangedBlock;
  template <int T>
  TESSERA_AVX2 static void add(const uint8_t* block, int half, const Block* const (&x)[T],
                               __m256 (&acc)[T]) {
    const uint8_t* chunks = block + 2 * kGroupRows + 32 * half;
    const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80)), ones = _mm256_set1_epi16(1);
    __m256i sums[T];
    for (int t = 0; t < T; ++t) sums[t] = _mm256_setzero_si256();
    for (int c = 0; c < 8; ++c) {
      const __m256i w = _mm256_xor_si256(load32(chunks + 64 * c), flip);
      const __m256i magnitude = _mm256_sign_epi8(w, w);
      for (int t = 0; t < T; ++t) {
        const __m256i products =
            _mm256_maddubs_epi16(magnitude, _mm256_sign_epi8(broadcast4(x[t]->q + 4 * c), w));
        sums[t] = _mm256_add_epi32(sums[t], _mm256_madd_epi16(products, ones));
      }
    }
    scale_into(load_halves8(block + 16 * half), x, sums, acc);
  }
};

// q4_0 (unsigned nibbles u = w + 8): vpmaddubsw of u against x directly;
// its int16 pairs (at most 2 x 15 x 128) add up over the eight code
// registers of a block without overflow, so one vpmaddwd per block, from
// the token's start, -8 * sum(x).
struct Q4_0Halves {
  static constexpr int64_t kBytes = kQ4_0Bytes;
  using Block = ArrangedBlock;
  template <int T>
  TESSERA_AVX2 static void add(const uint8_t* block, int half, const Block* const (&x)[T],
                               __m256 (&acc)[T]) {
    const uint8_t* chunks = block + 2 * kGroupRows + 32 * half;
    const __m256i nibble = _mm256_set1_epi8(0x0F);
    __m256i pairs[T];
    for (int t = 0; t < T; ++t) pairs[t] = _mm256_setzero_si256();
    for (int c = 0; c < 4; ++c) {
      const __m256i packed = load32(chunks + 64 * c);
      const __m256i low = _mm256_and_si256(packed, nibble);
      const __m256i high = _mm256_and_si256(_mm256_srli_epi16(packed, 4), nibble);
      for (int t = 0; t < T; ++t)
        pairs[t] = _mm256_add_epi16(
            pairs[t],
            _mm256_add_epi16(_mm256_maddubs_epi16(low, broadcast4(x[t]->q + 4 * c)),
                             _mm256_maddubs_epi16(high, broadcast4(x[t]->q + 16 + 4 * c))));
    }
    __m256i sums[T];
    for (int t = 0; t < T; ++t)
      sums[t] = _mm256_add_epi32(_mm256_madd_epi16(pairs[t], _mm256_set1_epi16(1)),
                                 _mm256_set1_epi32(x[t]->start));
    scale_into(load_halves8(block + 16 * half), x, sums, acc);
  }
};

// An int32 lane's low byte-wide field (bits 8 * byte ..) as the int16 pair
// (v, v), for vpmaddwd: v * (the sum of two int16 words).
TESSERA_AVX2 inline __m256i byte_as_pair(__m256i units, int byte, bool is_signed) {
  const __m256i high = _mm256_slli_epi32(units, 24 - 8 * byte);
  const __m256i v = is_signed ? _mm256_srai_epi32(high, 24) : _mm256_srli_epi32(high, 24);
  return _mm256_or_si256(_mm256_and_si256(v, _mm256_set1_epi32(0xFFFF)), _mm256_slli_epi32(v, 16));
}

// q4_K: per block of 32 (eight code registers of unsigned nibbles), the
// int16 pairs of vpmaddubsw summed (at most 8 x 2 x 15 x 128, no overflow),
// one vpmaddwd by the rows' 6-bit scale; the minimums, sum over blocks of
// m * (x codes' sum), by four vpmaddwd of minimum pairs against code-sum
// pairs; two FMAs, as the AVX-512 kernel.
struct Q4_KHalves {
  static constexpr int64_t kBytes = kQ4_KBytes;
  using Block = Q8KBlock;
  template <int T>
  TESSERA_AVX2 static void add(const uint8_t* super, int half, const Block* const (&x)[T],
                               __m256 (&acc)[T]) {
    const int o = 32 * half;
    const __m256i low6 = _mm256_set1_epi32(0x3F3F3F3F), low4 = _mm256_set1_epi32(0x0F0F0F0F);
    const __m256i top2 = _mm256_set1_epi32(0x03030303), nibble = _mm256_set1_epi8(0x0F);
    const __m256i words = _mm256_set1_epi32(0x00FF00FF);
    const __m256i u0 = load32(super + 64 + o), u1 = load32(super + 128 + o),
                  u2 = load32(super + 192 + o);
    const __m256i scales[2] = {
        _mm256_and_si256(u0, low6),
        _mm256_or_si256(_mm256_and_si256(u2, low4),
                        _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(u0, 6), top2), 4))};
    __m256i sums[T];
    for (int t = 0; t < T; ++t) sums[t] = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j) {
      const __m256i scale = byte_as_pair(scales[j / 4], j % 4, false);
      __m256i pairs[T];
      for (int t = 0; t < T; ++t) pairs[t] = _mm256_setzero_si256();
      for (int i = 0; i < 8; ++i) {
        const __m256i packed = load32(super + 256 + 64 * (8 * (j / 2) + i) + o);
        const __m256i codes =
            _mm256_and_si256(j % 2 ? _mm256_srli_epi16(packed, 4) : packed, nibble);
        for (int t = 0; t < T; ++t)
          pairs[t] = _mm256_add_epi16(
              pairs[t], _mm256_maddubs_epi16(codes, broadcast4(x[t]->q + 32 * j + 4 * i)));
      }
      for (int t = 0; t < T; ++t)
        sums[t] = _mm256_add_epi32(sums[t], _mm256_madd_epi16(pairs[t], scale));
    }
    // Minimums as int16 pairs per row: (m0, m2), (m1, m3), (m4, m6), (m5, m7).
    const __m256i mins_low = _mm256_and_si256(u1, low6);
    const __m256i mins_high =
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(u2, 4), low4),
                        _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(u1, 6), top2), 4));
    const __m256i min_pairs[4] = {_mm256_and_si256(mins_low, words),
                                  _mm256_and_si256(_mm256_srli_epi32(mins_low, 8), words),
                                  _mm256_and_si256(mins_high, words),
                                  _mm256_and_si256(_mm256_srli_epi32(mins_high, 8), words)};
    __m256i min_sums[T];
    for (int t = 0; t < T; ++t) {
      min_sums[t] = _mm256_setzero_si256();
      for (int k = 0; k < 4; ++k) {
        const int first = 4 * (k / 2) + k % 2;  // code sums first and first + 2
        min_sums[t] = _mm256_add_epi32(
            min_sums[t],
            _mm256_madd_epi16(min_pairs[k], _mm256_set1_epi32(word_pair(x[t]->sums[first],
                                                                        x[t]->sums[first + 2]))));
      }
    }
    scale_into(load_halves8(super + 16 * half), x, sums, acc);
    const __m256 dmin = load_halves8(super + 32 + 16 * half);
    for (int t = 0; t < T; ++t)
      acc[t] = _mm256_fnmadd_ps(_mm256_mul_ps(dmin, _mm256_set1_ps(x[t]->d)),
                                _mm256_cvtepi32_ps(min_sums[t]), acc[t]);
  }
};

// q6_K: per block of 16 (four code registers of unsigned 6-bit codes,
// assembled from the low-nibble and high-bit chunks), two pairs of
// vpmaddubsw summed in int16 (at most 2 x 2 x 63 x 128), vpmaddwd by the
// rows' int8 scale; the offset of 32 as eight vpmaddwd of scale pairs
// against the token's sums of 16; one FMA, as the AVX-512 kernel.
struct Q6_KHalves {
  static constexpr int64_t kBytes = kQ6_KBytes;
  using Block = Q8KBlock;
  template <int T>
  TESSERA_AVX2 static void add(const uint8_t* super, int half, const Block* const (&x)[T],
                               __m256 (&acc)[T]) {
    const int o = 32 * half;
    const uint8_t* scale_units = super + 32;  // four 4-byte units: scales 4k..4k+3
    const uint8_t* low_bits = super + 288;    // ql, 32 chunks
    const uint8_t* high_bits = super + 2336;  // qh, 16 chunks
    const __m256i nibble = _mm256_set1_epi8(0x0F), top = _mm256_set1_epi8(0x30);
    __m256i sums[T];
    for (int t = 0; t < T; ++t) sums[t] = _mm256_setzero_si256();
#pragma GCC unroll 16  // shifts and choices by block become constants
    for (int block = 0; block < 16; ++block) {
      const int h = block / 8, m = (block % 8) / 2, second = block % 2;
      const __m256i scale =
          byte_as_pair(load32(scale_units + 64 * (block / 4) + o), block % 4, true);
      __m256i codes[4];
      for (int i = 0; i < 4; ++i) {
        const int g = 4 * second + i;
        const __m256i low = load32(low_bits + 64 * (16 * h + 8 * (m % 2) + g) + o);
        const __m256i high = load32(high_bits + 64 * (8 * h + g) + o);
        // qh bits 2m, 2m + 1 to bits 4, 5.
        const __m256i placed = m == 0   ? _mm256_slli_epi16(high, 4)
                               : m == 1 ? _mm256_slli_epi16(high, 2)
                               : m == 2 ? high
                                        : _mm256_srli_epi16(high, 2);
        codes[i] =
            _mm256_or_si256(_mm256_and_si256(m >= 2 ? _mm256_srli_epi16(low, 4) : low, nibble),
                            _mm256_and_si256(placed, top));
      }
      for (int t = 0; t < T; ++t) {
        const int8_t* xq = x[t]->q + 16 * block;
        const __m256i first = _mm256_add_epi16(_mm256_maddubs_epi16(codes[0], broadcast4(xq)),
                                               _mm256_maddubs_epi16(codes[1], broadcast4(xq + 4)));
        const __m256i second_pair =
            _mm256_add_epi16(_mm256_maddubs_epi16(codes[2], broadcast4(xq + 8)),
                             _mm256_maddubs_epi16(codes[3], broadcast4(xq + 12)));
        sums[t] =
            _mm256_add_epi32(sums[t], _mm256_add_epi32(_mm256_madd_epi16(first, scale),
                                                       _mm256_madd_epi16(second_pair, scale)));
      }
    }
    // Scale pairs per row as int16 words: (sc 4k, sc 4k+2) and (4k+1, 4k+3).
    __m256i even[4], odd[4];
    for (int k = 0; k < 4; ++k) {
      const __m256i unit = load32(scale_units + 64 * k + o);
      even[k] = _mm256_srai_epi16(_mm256_slli_epi16(unit, 8), 8);
      odd[k] = _mm256_srai_epi16(unit, 8);
    }
    for (int t = 0; t < T; ++t) {
      const int16_t* halves = x[t]->half_sums;
      __m256i offset = _mm256_setzero_si256();
      for (int k = 0; k < 4; ++k) {
        offset = _mm256_add_epi32(
            offset, _mm256_madd_epi16(
                        even[k], _mm256_set1_epi32(word_pair(halves[4 * k], halves[4 * k + 2]))));
        offset = _mm256_add_epi32(
            offset, _mm256_madd_epi16(odd[k], _mm256_set1_epi32(word_pair(halves[4 * k + 1],
                                                                          halves[4 * k + 3]))));
      }
      sums[t] = _mm256_sub_epi32(sums[t], _mm256_slli_epi32(offset, 5));
    }
    scale_into(load_halves8(super + 16 * half), x, sums, acc);
  }
};

// kHalves halves of a group from row r0 (a group's first row, or its
// ninth with one half) against tokens t0 .. t0 + T - 1.
template <typename Format, int kHalves>
struct HalfGroupTiles {
  template <int T>
  TESSERA_AVX2 static void run(const QuantPanel& p, int64_t r0, int64_t t0, int /*rows*/) {
    using Block = typename Format::Block;
    const int first_half = static_cast<int>(r0 % kGroupRows) / 8;
    const uint8_t* group = p.w + static_cast<std::size_t>(r0 - r0 % kGroupRows) * p.row_bytes;
    const Block* x[T];
    for (int t = 0; t < T; ++t) x[t] = static_cast<const Block*>(p.x) + (t0 + t) * p.x_stride;
    __m256 acc[kHalves][T];
    for (int h = 0; h < kHalves; ++h)
      for (int t = 0; t < T; ++t) acc[h][t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < p.blocks; ++b) {
      const uint8_t* block = group + b * kGroupRows * Format::kBytes;
      stream_ahead<T == 1>(block, kGroupRows * Format::kBytes);
      const Block* xb[T];
      for (int t = 0; t < T; ++t) xb[t] = x[t] + b;
      for (int h = 0; h < kHalves; ++h) Format::add(block, first_half + h, xb, acc[h]);
    }
    for (int h = 0; h < kHalves; ++h)
      for (int t = 0; t < T; ++t)
        _mm256_storeu_ps(p.out + (t0 + t) * p.out_stride + r0 + 8 * h, acc[h][t]);
  }
};

// Decode: whole groups, one at a time (four at once, as the AVX-512
// q8_0 / q4_0 kernels read them, ran 1.1b q8_0 and q4_0 generation at half
// the speed with this set forced on a Zen 5: sixteen registers do not hold
// four groups' sums); prompts: half groups x 4 tokens (what sixteen
// registers hold).
template <typename Format>
void half_group_panel(const QuantPanel& p) {
  if (p.tokens == 1)
    group_panel<QuantPanel, HalfGroupTiles<Format, 2>, kGroupRows, 1>(p);
  else
    group_panel<QuantPanel, HalfGroupTiles<Format, 1>, kGroupRows / 2, 4>(p);
}

// The q8_0 / q4_0 kernels' activations: q4_0's nibbles are unsigned (sums
// start at -8 * sum(x)); q8_0's codes are read signed.
void arrange_q8(DType dtype, const Q8Block* in, int64_t blocks, void* out) {
  arrange_blocks(in, blocks, dtype == DType::kQ4_0 ? 8 : 0, static_cast<ArrangedBlock*>(out));
}

// Eight int32 lanes: `scale` (int16, per pair of bytes) times the sums of
// four consecutive products of unsigned codes (0..15) with signed bytes.
TESSERA_AVX2 inline __m256i scaled_sums(__m256i codes, __m256i x, __m256i scale) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(codes, x), scale);
}

// q4_K: per super-block and row, the scales are decoded once for every token.
template <int R, int T>
struct Q4_KTile {
  // Super-block s of the tile's rows into `acc`: one exact int32 per row and
  // token, one FMA.
  TESSERA_AVX2 static inline void add_super_block(const QuantPanel& p, int64_t r0,
                                                  const Q8KBlock* const* x, int64_t s,
                                                  float (&acc)[R][T]) {
    const __m256i nibble = _mm256_set1_epi8(0x0F);
#pragma GCC unroll 4  // the accumulators stay in registers
    for (int r = 0; r < R; ++r) {
      const uint8_t* super = p.w + static_cast<std::size_t>(r0 + r) * p.row_bytes + s * kQ4_KBytes;
      for (int64_t line = 0; line < kQ4_KBytes; line += 64)
        prefetch_ahead(super + line, R * p.row_bytes);
      int sc[8], m[8];
      for (int c = 0; c < 8; ++c) q4_K_scale_min(c, super + 4, sc[c], m[c]);
      __m256i lanes[T];
      for (int t = 0; t < T; ++t) lanes[t] = _mm256_setzero_si256();
      for (int pair = 0; pair < 4; ++pair) {
        const __m256i packed = load32(super + 16 + 32 * pair);
        const __m256i low = _mm256_and_si256(packed, nibble);
        const __m256i high = _mm256_and_si256(_mm256_srli_epi16(packed, 4), nibble);
        const __m256i sc0 = _mm256_set1_epi16(static_cast<int16_t>(sc[2 * pair]));
        const __m256i sc1 = _mm256_set1_epi16(static_cast<int16_t>(sc[2 * pair + 1]));
        for (int t = 0; t < T; ++t) {
          lanes[t] =
              _mm256_add_epi32(lanes[t], scaled_sums(low, load32(x[t][s].q + 64 * pair), sc0));
          lanes[t] = _mm256_add_epi32(lanes[t],
                                      scaled_sums(high, load32(x[t][s].q + 64 * pair + 32), sc1));
        }
      }
      const float d = half_scale(super), dmin = half_scale(super + 2);
      for (int t = 0; t < T; ++t) {
        int32_t min_sum = 0;
        for (int c = 0; c < 8; ++c) min_sum += m[c] * x[t][s].sums[c];
        acc[r][t] =
            fma_scalar(d * x[t][s].d, static_cast<float>(sum_int_lanes(lanes[t])), acc[r][t]);
        acc[r][t] = fma_scalar(-(dmin * x[t][s].d), static_cast<float>(min_sum), acc[r][t]);
      }
    }
  }
  TESSERA_AVX2 static void run(const QuantPanel& p, int64_t r0, int64_t t0) {
    const Q8KBlock* x[T];
    for (int t = 0; t < T; ++t) x[t] = static_cast<const Q8KBlock*>(p.x) + (t0 + t) * p.x_stride;
    float acc[R][T] = {};
    for (int64_t s = 0; s < p.blocks; ++s) add_super_block(p, r0, x, s, acc);
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) p.out[(t0 + t) * p.out_stride + r0 + r] = acc[r][t];
  }
};

// q6_K: the codes of a super-block and row are unpacked once for every token.
template <int R, int T>
struct Q6_KTile {
  // Super-block s of the tile's rows into `acc`: one exact int32 per row and
  // token, one FMA.
  TESSERA_AVX2 static inline void add_super_block(const QuantPanel& p, int64_t r0,
                                                  const Q8KBlock* const* x, int64_t s,
                                                  float (&acc)[R][T]) {
    const __m256i nibble = _mm256_set1_epi8(0x0F), pair_bits = _mm256_set1_epi8(3);
    const __m256i offset = _mm256_set1_epi8(32);
#pragma GCC unroll 4  // the accumulators stay in registers
    for (int r = 0; r < R; ++r) {
      const uint8_t* super = p.w + static_cast<std::size_t>(r0 + r) * p.row_bytes + s * kQ6_KBytes;
      for (int64_t line = 0; line < kQ6_KBytes; line += 64)
        prefetch_ahead(super + line, R * p.row_bytes);
      const auto* sub_scales = reinterpret_cast<const int8_t*>(super + 192);
      __m256i lanes[T];
      for (int t = 0; t < T; ++t) lanes[t] = _mm256_setzero_si256();
      for (int half = 0; half < 2; ++half) {
        const __m256i low0 = load32(super + 64 * half);
        const __m256i low1 = load32(super + 64 * half + 32);
        const __m256i high = load32(super + 128 + 32 * half);
        for (int part = 0; part < 4; ++part) {
          const int c = 4 * half + part;
          const __m256i low_bytes = (part & 1) ? low1 : low0;
          const __m256i low =
              _mm256_and_si256(part >> 1 ? _mm256_srli_epi16(low_bytes, 4) : low_bytes, nibble);
          const __m256i top =
              _mm256_and_si256(_mm256_srl_epi16(high, _mm_cvtsi32_si128(2 * part)), pair_bits);
          const __m256i codes =
              _mm256_sub_epi8(_mm256_or_si256(low, _mm256_slli_epi16(top, 4)), offset);
          const __m256i magnitude = _mm256_sign_epi8(codes, codes);
          // int16 lanes 0-7 hold elements 0-15 (one sub-scale), 8-15 the rest.
          const __m256i scale = _mm256_set_m128i(_mm_set1_epi16(sub_scales[2 * c + 1]),
                                                 _mm_set1_epi16(sub_scales[2 * c]));
          for (int t = 0; t < T; ++t) {
            const __m256i products = _mm256_maddubs_epi16(
                magnitude, _mm256_sign_epi8(load32(x[t][s].q + 32 * c), codes));
            lanes[t] = _mm256_add_epi32(lanes[t], _mm256_madd_epi16(products, scale));
          }
        }
      }
      const float d = half_scale(super + 208);
      for (int t = 0; t < T; ++t)
        acc[r][t] =
            fma_scalar(d * x[t][s].d, static_cast<float>(sum_int_lanes(lanes[t])), acc[r][t]);
    }
  }
  TESSERA_AVX2 static void run(const QuantPanel& p, int64_t r0, int64_t t0) {
    const Q8KBlock* x[T];
    for (int t = 0; t < T; ++t) x[t] = static_cast<const Q8KBlock*>(p.x) + (t0 + t) * p.x_stride;
    float acc[R][T] = {};
    for (int64_t s = 0; s < p.blocks; ++s) add_super_block(p, r0, x, s, acc);
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) p.out[(t0 + t) * p.out_stride + r0 + r] = acc[r][t];
  }
};

// Attention's vector steps (dot_kernels.h).

// exp_reference on eight lanes, step for step.
TESSERA_AVX2 inline __m256 exp8(__m256 x) {
  using namespace softmax_exp;
  const __m256 c = _mm256_min_ps(_mm256_set1_ps(kHigh), _mm256_max_ps(_mm256_set1_ps(kLow), x));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(c, _mm256_set1_ps(kLog2e)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kLn2High), c);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kLn2Low), r);
  __m256 y = _mm256_set1_ps(kP[0]);
  for (int i = 1; i < 6; ++i) y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(kP[i]));
  y = _mm256_add_ps(_mm256_fmadd_ps(y, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
  const __m256i two_n =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  const __m256 below = _mm256_cmp_ps(x, _mm256_set1_ps(kLow), _CMP_LT_OQ);
  return _mm256_andnot_ps(below, _mm256_mul_ps(y, _mm256_castsi256_ps(two_n)));
}

TESSERA_AVX2 void exp_shifted(float* x, int64_t n, float shift) {
  const __m256 s = _mm256_set1_ps(shift);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(x + i, exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), s)));
  if (i == n) return;
  float tail[8] = {};
  std::memcpy(tail, x + i, static_cast<std::size_t>(n - i) * sizeof(float));
  _mm256_storeu_ps(tail, exp8(_mm256_sub_ps(_mm256_loadu_ps(tail), s)));
  std::memcpy(x + i, tail, static_cast<std::size_t>(n - i) * sizeof(float));
}

// y held in registers, 32 floats at a time, while the rows pass (f32
// rows, or f16 / bf16 ones converted in registers).
template <typename Weight>
TESSERA_AVX2 void axpy_weight_rows(const float* a, const Weight* rows, int64_t row_stride,
                                   int64_t count, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256 acc[4];
    for (int c = 0; c < 4; ++c) acc[c] = _mm256_loadu_ps(y + i + 8 * c);
    for (int64_t j = 0; j < count; ++j) {
      const __m256 aj = _mm256_set1_ps(a[j]);
      const Weight* row = rows + j * row_stride + i;
      for (int c = 0; c < 4; ++c) acc[c] = _mm256_fmadd_ps(aj, load8(row + 8 * c), acc[c]);
    }
    for (int c = 0; c < 4; ++c) _mm256_storeu_ps(y + i + 8 * c, acc[c]);
  }
  for (; i + 8 <= n; i += 8) {
    __m256 acc = _mm256_loadu_ps(y + i);
    for (int64_t j = 0; j < count; ++j)
      acc = _mm256_fmadd_ps(_mm256_set1_ps(a[j]), load8(rows + j * row_stride + i), acc);
    _mm256_storeu_ps(y + i, acc);
  }
  for (; i < n; ++i)
    for (int64_t j = 0; j < count; ++j)
      y[i] = fma_scalar(a[j], to_f32(rows[j * row_stride + i]), y[i]);
}

TESSERA_AVX2 void axpy_rows(const float* a, const float* rows, int64_t row_stride, int64_t count,
                            float* y, int64_t n) {
  axpy_weight_rows(a, rows, row_stride, count, y, n);
}
TESSERA_AVX2 void axpy_f16_rows(const float* a, const uint16_t* rows, int64_t row_stride,
                                int64_t count, float* y, int64_t n) {
  axpy_weight_rows(a, rows, row_stride, count, y, n);
}
TESSERA_AVX2 void axpy_bf16_rows(const float* a, const uint16_t* rows, int64_t row_stride,
                                 int64_t count, float* y, int64_t n) {
  axpy_weight_rows(a, reinterpret_cast<const Bf16*>(rows), row_stride, count, y, n);
}

// int8 rows as stored: eight codes widened to floats, and a row's scale.
TESSERA_AVX2 inline __m256 load8_codes(const uint8_t* p) {
  int64_t bits;
  std::memcpy(&bits, p, 8);
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(bits)));
}
TESSERA_AVX2 inline float int8_row_scale(const Int8Rows& rows, int64_t j) {
  return half_scale(rows.codes + j * rows.row_bytes + rows.scale_offset);
}

// The f32-row order (lanes 0-7 and 8-15 in two registers, folded, then the
// tail), each row's codes widened once for up to four heads.
TESSERA_AVX2 void int8_row_scores(const Int8Rows& rows, const float* x, int64_t x_stride,
                                  int64_t heads, float* out, int64_t out_stride) {
  const int64_t body = rows.k / 16 * 16;
  for (int64_t j = 0; j < rows.count; ++j) {
    const uint8_t* codes = rows.codes + j * rows.row_bytes;
    const float scale = int8_row_scale(rows, j);
    const __m256 scale_v = _mm256_set1_ps(scale);
    for (int64_t h0 = 0; h0 < heads; h0 += 4) {
      const int64_t hn = std::min<int64_t>(4, heads - h0);
      __m256 low[4], high[4];
      for (int h = 0; h < 4; ++h) low[h] = high[h] = _mm256_setzero_ps();
      for (int64_t i = 0; i < body; i += 16) {
        const __m256 c_low = _mm256_mul_ps(load8_codes(codes + i), scale_v);
        const __m256 c_high = _mm256_mul_ps(load8_codes(codes + i + 8), scale_v);
        for (int64_t h = 0; h < hn; ++h) {
          const float* q = x + (h0 + h) * x_stride + i;
          low[h] = _mm256_fmadd_ps(c_low, _mm256_loadu_ps(q), low[h]);
          high[h] = _mm256_fmadd_ps(c_high, _mm256_loadu_ps(q + 8), high[h]);
        }
      }
      for (int64_t h = 0; h < hn; ++h) {
        const float* q = x + (h0 + h) * x_stride;
        float r = sum_lanes(_mm256_add_ps(low[h], high[h]));
        for (int64_t i = body; i < rows.k; ++i)
          r = fma_scalar(static_cast<float>(static_cast<int8_t>(codes[i])) * scale, q[i], r);
        out[(h0 + h) * out_stride + j] = r;
      }
    }
  }
}

// y held in registers, 32 floats at a time, while the rows pass.
TESSERA_AVX2 void axpy_int8_rows(const float* a, const Int8Rows& rows, float* y) {
  const int64_t n = rows.k;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256 acc[4];
    for (int c = 0; c < 4; ++c) acc[c] = _mm256_loadu_ps(y + i + 8 * c);
    for (int64_t j = 0; j < rows.count; ++j) {
      const __m256 aj = _mm256_set1_ps(a[j]), scale = _mm256_set1_ps(int8_row_scale(rows, j));
      const uint8_t* codes = rows.codes + j * rows.row_bytes + i;
      for (int c = 0; c < 4; ++c)
        acc[c] = _mm256_fmadd_ps(aj, _mm256_mul_ps(load8_codes(codes + 8 * c), scale), acc[c]);
    }
    for (int c = 0; c < 4; ++c) _mm256_storeu_ps(y + i + 8 * c, acc[c]);
  }
  for (; i + 8 <= n; i += 8) {
    __m256 acc = _mm256_loadu_ps(y + i);
    for (int64_t j = 0; j < rows.count; ++j)
      acc = _mm256_fmadd_ps(_mm256_set1_ps(a[j]),
                            _mm256_mul_ps(load8_codes(rows.codes + j * rows.row_bytes + i),
                                          _mm256_set1_ps(int8_row_scale(rows, j))),
                            acc);
    _mm256_storeu_ps(y + i, acc);
  }
  for (; i < n; ++i)
    for (int64_t j = 0; j < rows.count; ++j)
      y[i] =
          fma_scalar(a[j],
                     static_cast<float>(static_cast<int8_t>(rows.codes[j * rows.row_bytes + i])) *
                         int8_row_scale(rows, j),
                     y[i]);
}

// int4 rows as stored: the sixteen elements e0 .. e0 + 15 of a record (e0
// even) decoded to floats, code * its group's scale, as two halves.
TESSERA_AVX2 inline void int4_block(const Int4Rows& rows, const uint8_t* record, int64_t e0,
                                    __m256& low_half, __m256& high_half) {
  const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(record + e0 / 2));
  const __m128i nibble = _mm_set1_epi8(0x0F);
  const __m128i low = _mm_and_si128(bytes, nibble);
  const __m128i high = _mm_and_si128(_mm_srli_epi16(bytes, 4), nibble);
  const __m128i ordered = _mm_sub_epi8(_mm_unpacklo_epi8(low, high), _mm_set1_epi8(8));
  const __m256 codes_low = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(ordered));
  const __m256 codes_high = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(ordered, 8)));
  const uint8_t* scales = record + rows.scale_offset;
  __m256 scale_low, scale_high;
  if (e0 / rows.group == (e0 + 15) / rows.group) {
    scale_low = scale_high = _mm256_set1_ps(half_scale(scales + 2 * (e0 / rows.group)));
  } else {
    alignas(32) float each[16];
    for (int l = 0; l < 16; ++l) each[l] = half_scale(scales + 2 * ((e0 + l) / rows.group));
    scale_low = _mm256_load_ps(each);
    scale_high = _mm256_load_ps(each + 8);
  }
  low_half = _mm256_mul_ps(codes_low, scale_low);
  high_half = _mm256_mul_ps(codes_high, scale_high);
}
TESSERA_AVX2 inline float int4_element(const Int4Rows& rows, const uint8_t* record, int64_t e) {
  const uint8_t byte = record[e / 2];
  const int code = ((e & 1) != 0 ? byte >> 4 : byte & 0x0F) - 8;
  return static_cast<float>(code) * half_scale(record + rows.scale_offset + 2 * (e / rows.group));
}

// The f32-row order (lanes 0-7 and 8-15 in two registers, folded, then the
// tail), each row decoded once for up to four heads.
TESSERA_AVX2 void int4_row_scores(const Int4Rows& rows, const float* x, int64_t x_stride,
                                  int64_t heads, float* out, int64_t out_stride) {
  const int64_t body = rows.k / 16 * 16;
  for (int64_t j = 0; j < rows.count; ++j) {
    const uint8_t* record = rows.records + j * rows.row_bytes;
    for (int64_t h0 = 0; h0 < heads; h0 += 4) {
      const int64_t hn = std::min<int64_t>(4, heads - h0);
      __m256 low[4], high[4];
      for (int h = 0; h < 4; ++h) low[h] = high[h] = _mm256_setzero_ps();
      for (int64_t i = 0; i < body; i += 16) {
        __m256 e_low, e_high;
        int4_block(rows, record, rows.first + i, e_low, e_high);
        for (int64_t h = 0; h < hn; ++h) {
          const float* q = x + (h0 + h) * x_stride + i;
          low[h] = _mm256_fmadd_ps(e_low, _mm256_loadu_ps(q), low[h]);
          high[h] = _mm256_fmadd_ps(e_high, _mm256_loadu_ps(q + 8), high[h]);
        }
      }
      for (int64_t h = 0; h < hn; ++h) {
        const float* q = x + (h0 + h) * x_stride;
        float r = sum_lanes(_mm256_add_ps(low[h], high[h]));
        for (int64_t i = body; i < rows.k; ++i)
          r = fma_scalar(int4_element(rows, record, rows.first + i), q[i], r);
        out[(h0 + h) * out_stride + j] = r;
      }
    }
  }
}

TESSERA_AVX2 void axpy_int4_rows(const float* a, const Int4Rows& rows, float* y) {
  const int64_t n = rows.k, body = n / 16 * 16;
  for (int64_t i = 0; i < body; i += 16) {
    __m256 acc_low = _mm256_loadu_ps(y + i), acc_high = _mm256_loadu_ps(y + i + 8);
    for (int64_t j = 0; j < rows.count; ++j) {
      __m256 e_low, e_high;
      int4_block(rows, rows.records + j * rows.row_bytes, rows.first + i, e_low, e_high);
      const __m256 aj = _mm256_set1_ps(a[j]);
      acc_low = _mm256_fmadd_ps(aj, e_low, acc_low);
      acc_high = _mm256_fmadd_ps(aj, e_high, acc_high);
    }
    _mm256_storeu_ps(y + i, acc_low);
    _mm256_storeu_ps(y + i + 8, acc_high);
  }
  for (int64_t i = body; i < n; ++i)
    for (int64_t j = 0; j < rows.count; ++j)
      y[i] = fma_scalar(a[j], int4_element(rows, rows.records + j * rows.row_bytes, rows.first + i),
                        y[i]);
}

TESSERA_AVX2 inline __m256 silu_mul8(__m256 g, __m256 u) {
  const __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), g));
  const __m256 sigmoid =
      _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_add_ps(_mm256_set1_ps(1.0f), e));
  return _mm256_mul_ps(_mm256_mul_ps(g, sigmoid), u);
}

TESSERA_AVX2 void silu_mul(const float* g, const float* u, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, silu_mul8(_mm256_loadu_ps(g + i), _mm256_loadu_ps(u + i)));
  if (i == n) return;
  float tail_g[8] = {}, tail_u[8] = {};
  const auto bytes = static_cast<std::size_t>(n - i) * sizeof(float);
  std::memcpy(tail_g, g + i, bytes);
  std::memcpy(tail_u, u + i, bytes);
  _mm256_storeu_ps(tail_g, silu_mul8(_mm256_loadu_ps(tail_g), _mm256_loadu_ps(tail_u)));
  std::memcpy(out + i, tail_g, bytes);
}

// max|x| over 8n floats.
TESSERA_AVX2 inline float largest_magnitude(const float* x, int n8) {
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  __m256 amax = _mm256_setzero_ps();
  for (int j = 0; j < n8; ++j)
    amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign_bit, _mm256_loadu_ps(x + 8 * j)));
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// 32 values to codes against `inverse`, rounded to nearest even (as
// std::nearbyint) and clamped; returns the codes' sum.
TESSERA_AVX2 inline int32_t codes_of(const float* x, float inverse, int8_t* out) {
  const __m256 scale = _mm256_set1_ps(inverse);
  __m256i q[4];
  for (int j = 0; j < 4; ++j) {
    __m256 r = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * j), scale),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm256_min_ps(_mm256_max_ps(r, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
    q[j] = _mm256_cvtps_epi32(r);
  }
  // Pack 32 int32 to int8 in element order (the packs interleave 128-bit lanes).
  __m256i bytes =
      _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
  bytes = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), bytes);
  return sum_int_lanes(
      _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), bytes), _mm256_set1_epi16(1)));
}

TESSERA_AVX2 void quantize_q8(const float* x, int64_t k, Q8Block* out) {
  for (int64_t b = 0; b < k / 32; ++b, x += 32) {
    const float d = largest_magnitude(x, 4) / 127.0f;
    out[b].d = d;
    codes_of(x, d > 0 ? 1.0f / d : 0.0f, out[b].q);
  }
}

TESSERA_AVX2 void quantize_q8k(const float* x, int64_t k, Q8KBlock* out) {
  for (int64_t b = 0; b < k / 256; ++b, x += 256) {
    const float d = largest_magnitude(x, 32) / 127.0f;
    const float inverse = d > 0 ? 1.0f / d : 0.0f;
    out[b].d = d;
    for (int c = 0; c < 8; ++c)
      out[b].sums[c] = static_cast<int16_t>(codes_of(x + 32 * c, inverse, out[b].q + 32 * c));
    sum_halves(out[b]);
  }
}

}  // namespace

const DotKernels* avx2_dot_kernels() {
  // F16C from CPUID leaf 1 (ECX bit 29): not every compiler's
  // __builtin_cpu_supports knows its name.
  static const bool supported = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)) != 0;
    return f16c && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  // Tiles (rows x tokens), decode / prompt: f32 4 x 1 (eight FMA chains) /
  // 2 x 3 (six outputs from five loads); f16 / bf16 one row per lane, in
  // groups of 16 or transposed from GGUF's layout, two groups at once / 16 x 4;
  // block-quantized rows interleaved
  // 16 x 1 / 8 x 4 (one row per lane); in GGUF's layout, q8_0 / q4_0 4 x 1
  // / 4 x 2 (four rows per 128-bit accumulator), k-quants 2 x 1 / 2 x 2 (two accumulators per
  // output: what sixteen registers hold).
  static const DotKernels kernels{
      "avx2",
      tiled_panel<FloatPanel, 4, 2, 3, FloatTiles<float>::template Tile>,
      kRowHalves<uint16_t>,
      kRowHalves<Bf16>,
      kHalfGroupRows<uint16_t>,
      kHalfGroupRows<Bf16>,
      tiled_panel<FloatPanel, 4, 2, 3, FloatTiles<uint16_t>::template Tile>,
      tiled_panel<FloatPanel, 4, 2, 3, FloatTiles<Bf16>::template Tile>,
      tiled_panel<QuantPanel, 4, 4, 2, IntegerTiles<Q8_0Codes>::template Tile>,
      tiled_panel<QuantPanel, 4, 4, 2, IntegerTiles<Q4_0Codes>::template Tile>,
      half_group_panel<Q8_0Halves>,
      half_group_panel<Q4_0Halves>,
      tiled_panel<QuantPanel, 2, 2, 2, Q4_KTile>,
      tiled_panel<QuantPanel, 2, 2, 2, Q6_KTile>,
      half_group_panel<Q4_KHalves>,
      half_group_panel<Q6_KHalves>,
      quantize_q8,
      quantize_q8k,
      arrange_q8,
      arranged_blocks,
      exp_shifted,
      axpy_rows,
      axpy_f16_rows,
      axpy_bf16_rows,
      int8_row_scores,
      axpy_int8_rows,
      int4_row_scores,
      axpy_int4_rows,
      silu_mul};
  return supported ? &kernels : nullptr;
}

}  // namespace tessera::cpu

#else

namespace tessera::cpu {
const DotKernels* avx2_dot_kernels() {
  return nullptr;
}
}  // namespace tessera::cpu

#endif
