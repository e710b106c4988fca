// Dot products of one weight row with one activation row: the inner loop of
// every matmul. Each kernel has a scalar reference and, where the machine has
// it, a SIMD version chosen at run time; both follow one summation order, so
// they give the same bits and a token's logits do not depend on the path, the
// batch it is in or the thread count (docs/performance.md, "Summation order"):
//
//  - float rows (f32, f16, bf16 weights; x f32): 32 lanes; lane l accumulates
//    fma(w[i], x[i], acc) over i = l (mod 32) of the 32-aligned prefix; lanes
//    l, l + 8, l + 16, l + 24 are added as (a + b) + (c + d), the eight sums
//    as ((s0 + s4) + (s2 + s6)) + ((s1 + s5) + (s3 + s7)); then the tail, in
//    order, by fma.
//  - integer rows (q8_0, q4_0 weights; x quantized to Q8Block): per block
//    of 32, eight exact int32 sums of four consecutive products; lane l of
//    accumulator b % 2 takes fma(d_w * d_x, float(sum_l), acc); the two
//    accumulators are added lane by lane, then the same eight-lane tree.
//  - k-quant rows (q4_K, q6_K; x quantized to Q8KBlock, one scale per 256):
//    per super-block of 256, eight exact int32 lane sums over its blocks of
//    32 of sub_scale * (sum of four consecutive products) (q6_K: lanes 0-3
//    and 4-7 take the two sub-scales of each block of 32); lane l of
//    accumulator s % 2 takes fma(d_w * d_x, float(lane sum), acc); q4_K's
//    minimums, sum over blocks of m * (x codes' sum), are one int per
//    super-block, taken as fma(dmin_w * d_x, float(it), mins) in order and
//    subtracted after the eight-lane tree.
#pragma once

#include <cstdint>

#include "core/tensor/dtype.h"

namespace tessera::cpu {

// An activation block for the integer kernels: 32 values as d * q, q in
// [-127, 127], d = max|x| / 127 (an f32, so no fp16 rounding of the scale).
struct Q8Block {
  float d;
  int8_t q[32];
};

// The same over 256 values (a k-quant super-block), with the sum of each 32
// codes (q4_K's minimums need them).
struct Q8KBlock {
  float d;
  int16_t sums[8];
  int8_t q[256];
};

struct DotKernels {
  const char* name;  // "scalar", "avx2"
  float (*f32)(const float* w, const float* x, int64_t k);
  float (*f16)(const uint16_t* w, const float* x, int64_t k);
  float (*bf16)(const uint16_t* w, const float* x, int64_t k);
  // w: `blocks` blocks of ggml q8_0 / q4_0; x: as many Q8Blocks.
  float (*q8_0)(const uint8_t* w, const Q8Block* x, int64_t blocks);
  float (*q4_0)(const uint8_t* w, const Q8Block* x, int64_t blocks);
  // w: `supers` super-blocks of ggml q4_K / q6_K; x: as many Q8KBlocks.
  float (*q4_K)(const uint8_t* w, const Q8KBlock* x, int64_t supers);
  float (*q6_K)(const uint8_t* w, const Q8KBlock* x, int64_t supers);
  // k (a multiple of 32) floats -> k / 32 blocks.
  void (*quantize_q8)(const float* x, int64_t k, Q8Block* out);
  // k (a multiple of 256) floats -> k / 256 blocks.
  void (*quantize_q8k)(const float* x, int64_t k, Q8KBlock* out);
};

using IntegerDot = float (*)(const uint8_t* w, const Q8Block* x, int64_t blocks);
using KQuantDot = float (*)(const uint8_t* w, const Q8KBlock* x, int64_t supers);
// The set's kernel for q8_0 / q4_0 weights, or null for the other types.
IntegerDot integer_dot_for(const DotKernels& set, DType dtype);
// The set's kernel for q4_K / q6_K weights, or null for the other types.
KQuantDot kquant_dot_for(const DotKernels& set, DType dtype);

// The portable reference.
const DotKernels& scalar_dot_kernels();
// The AVX2 + FMA + F16C kernels, or null when this build or CPU has none.
const DotKernels* avx2_dot_kernels();
// The fastest set this CPU runs; TESSERA_CPU_KERNELS=scalar in the
// environment forces the reference (for comparisons).
const DotKernels& best_dot_kernels();

}  // namespace tessera::cpu
