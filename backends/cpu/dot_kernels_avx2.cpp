// AVX2 + FMA + F16C versions of dot_kernels.h, compiled for those features
// function by function (the rest of the build stays baseline x86-64) and
// chosen at run time only on a CPU that has them. Same order, same bits as
// the scalar reference.
#include <cstring>

#include "backends/cpu/dot_kernels.h"
#include "backends/cpu/dot_order.h"
#include "core/tensor/block_quant.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>

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

// The 32 float lanes as four 8-lane accumulators; then the tail, in order.
template <typename Weight>
TESSERA_AVX2 inline float dot_float_rows(const Weight* w, const float* x, int64_t k) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  int64_t i = 0;
  for (; i + kFloatLanes <= k; i += kFloatLanes) {
    acc0 = _mm256_fmadd_ps(load8(w + i), _mm256_loadu_ps(x + i), acc0);
    acc1 = _mm256_fmadd_ps(load8(w + i + 8), _mm256_loadu_ps(x + i + 8), acc1);
    acc2 = _mm256_fmadd_ps(load8(w + i + 16), _mm256_loadu_ps(x + i + 16), acc2);
    acc3 = _mm256_fmadd_ps(load8(w + i + 24), _mm256_loadu_ps(x + i + 24), acc3);
  }
  float r = sum_lanes(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
  for (; i < k; ++i)
    r = _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(to_f32(w[i])), _mm_set_ss(x[i]), _mm_set_ss(r)));
  return r;
}

TESSERA_AVX2 float dot_f32(const float* w, const float* x, int64_t k) {
  return dot_float_rows(w, x, k);
}

TESSERA_AVX2 float dot_f16(const uint16_t* w, const float* x, int64_t k) {
  return dot_float_rows(w, x, k);
}

TESSERA_AVX2 float dot_bf16(const uint16_t* w, const float* x, int64_t k) {
  return dot_float_rows(reinterpret_cast<const Bf16*>(w), x, k);
}

TESSERA_AVX2 inline float half_scale(const uint8_t* block) {
  uint16_t h;
  std::memcpy(&h, block, 2);
  return to_f32(h);
}

// Eight int32 sums of four consecutive products of signed bytes, as floats.
TESSERA_AVX2 inline __m256 block_sums(__m256i w, __m256i x) {
  const __m256i products = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
  return _mm256_cvtepi32_ps(_mm256_madd_epi16(products, _mm256_set1_epi16(1)));
}

template <typename Unpack>
TESSERA_AVX2 inline float dot_int_blocks(Unpack unpack, const Q8Block* x, int64_t blocks) {
  __m256 even = _mm256_setzero_ps(), odd = even;
  int64_t b = 0;
  for (; b + 2 <= blocks; b += 2) {
    float d0, d1;
    const __m256i w0 = unpack(b, d0), w1 = unpack(b + 1, d1);
    const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].q));
    const __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b + 1].q));
    even = _mm256_fmadd_ps(_mm256_set1_ps(d0 * x[b].d), block_sums(w0, x0), even);
    odd = _mm256_fmadd_ps(_mm256_set1_ps(d1 * x[b + 1].d), block_sums(w1, x1), odd);
  }
  if (b < blocks) {
    float d0;
    const __m256i w0 = unpack(b, d0);
    const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].q));
    even = _mm256_fmadd_ps(_mm256_set1_ps(d0 * x[b].d), block_sums(w0, x0), even);
  }
  return sum_lanes(_mm256_add_ps(even, odd));
}

TESSERA_AVX2 float dot_q8_0(const uint8_t* w, const Q8Block* x, int64_t blocks) {
  return dot_int_blocks(
      [w](int64_t b, float& d) TESSERA_AVX2 {
        const uint8_t* block = w + b * kQ8_0Bytes;
        d = half_scale(block);
        return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 2));
      },
      x, blocks);
}

TESSERA_AVX2 float dot_q4_0(const uint8_t* w, const Q8Block* x, int64_t blocks) {
  return dot_int_blocks(
      [w](int64_t b, float& d) TESSERA_AVX2 {
        const uint8_t* block = w + b * kQ4_0Bytes;
        d = half_scale(block);
        const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2));
        const __m128i low = _mm_and_si128(packed, _mm_set1_epi8(0x0F));
        const __m128i high = _mm_and_si128(_mm_srli_epi16(packed, 4), _mm_set1_epi8(0x0F));
        // Elements 0..15 are the low nibbles, 16..31 the high ones.
        const __m256i codes = _mm256_set_m128i(high, low);
        return _mm256_sub_epi8(codes, _mm256_set1_epi8(8));
      },
      x, blocks);
}

TESSERA_AVX2 inline __m256i load32(const void* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// Eight int32 lanes: `scale` (int16, per pair of bytes) times the sums of
// four consecutive products of unsigned codes (0..15) with signed bytes.
TESSERA_AVX2 inline __m256i scaled_sums(__m256i codes, __m256i x, __m256i scale) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(codes, x), scale);
}

TESSERA_AVX2 float dot_q4_K(const uint8_t* w, const Q8KBlock* x, int64_t supers) {
  __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  float mins = 0;
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  for (int64_t s = 0; s < supers; ++s) {
    const uint8_t* super = w + s * kQ4_KBytes;
    __m256i lanes = _mm256_setzero_si256();
    int32_t min_sum = 0;
    for (int pair = 0; pair < 4; ++pair) {
      int sc0, m0, sc1, m1;
      q4_K_scale_min(2 * pair, super + 4, sc0, m0);
      q4_K_scale_min(2 * pair + 1, super + 4, sc1, m1);
      const __m256i packed = load32(super + 16 + 32 * pair);
      const __m256i low = _mm256_and_si256(packed, nibble);
      const __m256i high = _mm256_and_si256(_mm256_srli_epi16(packed, 4), nibble);
      lanes = _mm256_add_epi32(lanes, scaled_sums(low, load32(x[s].q + 64 * pair),
                                                  _mm256_set1_epi16(static_cast<int16_t>(sc0))));
      lanes = _mm256_add_epi32(lanes, scaled_sums(high, load32(x[s].q + 64 * pair + 32),
                                                  _mm256_set1_epi16(static_cast<int16_t>(sc1))));
      min_sum += m0 * x[s].sums[2 * pair] + m1 * x[s].sums[2 * pair + 1];
    }
    const float scale = half_scale(super) * x[s].d;
    acc[s & 1] = _mm256_fmadd_ps(_mm256_set1_ps(scale), _mm256_cvtepi32_ps(lanes), acc[s & 1]);
    mins = _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(half_scale(super + 2) * x[s].d),
                                      _mm_set_ss(static_cast<float>(min_sum)), _mm_set_ss(mins)));
  }
  return sum_lanes(_mm256_add_ps(acc[0], acc[1])) - mins;
}

TESSERA_AVX2 float dot_q6_K(const uint8_t* w, const Q8KBlock* x, int64_t supers) {
  __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  const __m256i nibble = _mm256_set1_epi8(0x0F), pair_bits = _mm256_set1_epi8(3);
  const __m256i offset = _mm256_set1_epi8(32);
  for (int64_t s = 0; s < supers; ++s) {
    const uint8_t* super = w + s * kQ6_KBytes;
    const auto* sub_scales = reinterpret_cast<const int8_t*>(super + 192);
    __m256i lanes = _mm256_setzero_si256();
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
        const __m256i xc = load32(x[s].q + 32 * c);
        const __m256i products =
            _mm256_maddubs_epi16(_mm256_sign_epi8(codes, codes), _mm256_sign_epi8(xc, codes));
        // int16 lanes 0-7 hold elements 0-15 (one sub-scale), 8-15 the rest.
        const __m256i scale = _mm256_set_m128i(_mm_set1_epi16(sub_scales[2 * c + 1]),
                                               _mm_set1_epi16(sub_scales[2 * c]));
        lanes = _mm256_add_epi32(lanes, _mm256_madd_epi16(products, scale));
      }
    }
    const float scale = half_scale(super + 208) * x[s].d;
    acc[s & 1] = _mm256_fmadd_ps(_mm256_set1_ps(scale), _mm256_cvtepi32_ps(lanes), acc[s & 1]);
  }
  return sum_lanes(_mm256_add_ps(acc[0], acc[1]));
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
  const __m256i pair_sums =
      _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), bytes), _mm256_set1_epi16(1));
  const __m128i quads =
      _mm_add_epi32(_mm256_castsi256_si128(pair_sums), _mm256_extracti128_si256(pair_sums, 1));
  const __m128i twos = _mm_add_epi32(quads, _mm_unpackhi_epi64(quads, quads));
  return _mm_cvtsi128_si32(_mm_add_epi32(twos, _mm_shuffle_epi32(twos, 1)));
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
  static const DotKernels kernels{"avx2",   dot_f32,  dot_f16,  dot_bf16,    dot_q8_0,
                                  dot_q4_0, dot_q4_K, dot_q6_K, quantize_q8, quantize_q8k};
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
