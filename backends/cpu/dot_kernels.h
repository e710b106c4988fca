// Panels of dot products, weight rows against activation rows: the inner
// loops of every matmul. A kernel computes a whole panel (the rows one thread
// owns, against every token) so that it can block it into register tiles
// (several rows times several tokens) and into cache-sized row blocks. Each
// weight type has a scalar reference and, where the machine has it, SIMD
// versions chosen at run time; every output follows one summation order
// whatever the tile, the path, the batch or the thread count, so a token's
// logits are the same bits computed alone or inside any prompt
// (docs/performance.md, "Summation order"):
//
//  - f32 rows (f32 weights, attention's scores; x f32): 16 lanes; lane l
//    accumulates fma(w[i], x[i], acc) over i = l (mod 16) of the 16-aligned
//    prefix; lanes l and l + 8 are added, the eight sums as
//    ((s0 + s4) + (s2 + s6)) + ((s1 + s5) + (s3 + s7)); then the tail, in
//    order, by fma. (One 512-bit register, or two 256-bit ones, per output.)
//  - half rows (f16, bf16 weights; x f32): one fma chain over the elements
//    in order, acc = fma(w[i], x[i], acc) from 0. (SIMD kernels put sixteen
//    rows in a register's lanes, interleaved_rows.h or gathered, and
//    broadcast x[i]: a prompt tile then loads one weight vector per element
//    for all its tokens, with no horizontal sums.)
//  - integer rows (q8_0, q4_0 weights; x quantized to Q8Block): per block
//    of 32, one exact int32 sum of the 32 products; the output is one fma
//    chain over the blocks in order, acc = fma(d_w * d_x, float(sum), acc)
//    from 0. (No lanes to fold: SIMD kernels put sixteen rows in a
//    register's lanes, interleaved_rows.h.)
//  - k-quant rows (q4_K, q6_K; x quantized to Q8KBlock, one scale per 256):
//    per super-block of 256, one exact int32: the sum over its sub-blocks
//    (q4_K: 8 of 32, q6_K: 16 of 16) of sub_scale * (sum of the products);
//    one fma chain over the super-blocks in order, acc = fma(d_w * d_x,
//    float(sum), acc); q4_K's minimums, sum over its blocks of m * (x codes'
//    sum), one int per super-block, join the chain right after it:
//    acc = fma(-(dmin_w * d_x), float(min_sum), acc).
#pragma once

#include <cstddef>
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
// codes (q4_K's minimums need them) and of each 16 (q6_K's offset).
struct Q8KBlock {
  float d;
  int16_t sums[8];
  int16_t half_sums[16];
  int8_t q[256];
};

// Fills block.half_sums from its codes.
void sum_halves(Q8KBlock& block);

// One token's activations for an integer kernel in a buffer: token t at byte
// t * token_bytes, panel x_stride = stride (in the kernel's units).
struct IntegerActivationLayout {
  std::size_t token_bytes;
  int64_t stride;
};

// out[t * out_stride + r] = dot(weight row r, activation row t) for r <
// rows, t < tokens. Weight row r starts at w + r * row_bytes (whole blocks).
struct FloatPanel {
  const uint8_t* w;
  std::size_t row_bytes;
  int64_t rows;
  const float* x;  // token t at x + t * x_stride
  int64_t x_stride;
  int64_t tokens;
  int64_t k;  // elements per row
  float* out;
  int64_t out_stride;
};

// The same with quantized activations: Q8Blocks for q8_0 / q4_0 weights
// (or, for a set with arrange_q8, what that writes), Q8KBlocks for q4_K /
// q6_K.
struct QuantPanel {
  const uint8_t* w;
  std::size_t row_bytes;
  int64_t rows;
  const void* x;  // token t at x + t * x_stride activation units (blocks)
  int64_t x_stride;
  int64_t tokens;
  int64_t blocks;  // per row: blocks of 32 (q8_0, q4_0) or super-blocks of 256
  float* out;
  int64_t out_stride;
};

// int8 K/V records read as stored (kv_records.h's kInt8Symmetric): row j's
// k codes at codes + j * row_bytes, its fp16 scale scale_offset bytes after
// its first code.
struct Int8Rows {
  const uint8_t* codes;
  int64_t row_bytes;
  int64_t scale_offset;
  int64_t count;
  int64_t k;
};

// int4 K/V records read as stored (kv_records.h's kInt4Symmetric): record
// j at records + j * row_bytes, element e's code in nibble e % 2 of byte e /
// 2 (less 8), its fp16 scale at scale_offset + 2 * (e / group) bytes; a
// row's k elements are the record's elements first .. first + k - 1 (first
// even).
struct Int4Rows {
  const uint8_t* records;
  int64_t row_bytes;
  int64_t scale_offset;
  int64_t first;
  int64_t group;
  int64_t count;
  int64_t k;
};

using FloatPanelKernel = void (*)(const FloatPanel& panel);
using QuantPanelKernel = void (*)(const QuantPanel& panel);

struct DotKernels {
  const char* name;  // "scalar", "avx2", "avx512"
  FloatPanelKernel f32, f16, bf16;
  // f16 / bf16 rows interleaved in groups of 16 (interleaved_rows.h; the
  // panel starts at a group), or null.
  FloatPanelKernel f16_groups, bf16_groups;
  // f16 / bf16 rows in the f32-row order: the bits of `f32` over the same
  // values converted to floats (K/V stored as half floats, read as stored).
  FloatPanelKernel f16_as_f32, bf16_as_f32;
  QuantPanelKernel q8_0, q4_0;  // x: Q8Block
  // The same for weights interleaved in groups of 16 rows (interleaved_rows.h;
  // the panel starts at a group); null when the set reads no such layout.
  QuantPanelKernel q8_0_groups, q4_0_groups;
  QuantPanelKernel q4_K, q6_K;  // x: Q8KBlock
  // q4_K / q6_K interleaved in groups of 16 rows, or null.
  QuantPanelKernel q4_K_groups, q6_K_groups;
  // k (a multiple of 32) floats -> k / 32 blocks.
  void (*quantize_q8)(const float* x, int64_t k, Q8Block* out);
  // k (a multiple of 256) floats -> k / 256 blocks.
  void (*quantize_q8k)(const float* x, int64_t k, Q8KBlock* out);
  // Null when the q8_0 / q4_0 kernels read Q8Blocks as they are. Otherwise
  // they read one token's blocks as arrange_q8(dtype, in, blocks, out)
  // writes them, laid out as arranged_q8_layout(blocks) says: done once per
  // matmul, not per tile of rows.
  void (*arrange_q8)(DType dtype, const Q8Block* in, int64_t blocks, void* out);
  IntegerActivationLayout (*arranged_q8_layout)(int64_t blocks);
  // Attention's vector steps, the same bits in every set (its scores are f32
  // panels): x[i] = exp_reference(x[i] - shift) (dot_order.h); for j <
  // count in order, y[i] = fma(a[j], rows[j * row_stride + i], y[i]) (a
  // run of value rows summed by their weights).
  void (*exp_shifted)(float* x, int64_t n, float shift);
  void (*axpy_rows)(const float* a, const float* rows, int64_t row_stride, int64_t count, float* y,
                    int64_t n);
  // The same over rows of f16 / bf16 (K/V stored as half floats, each
  // element converted to f32 exactly, then the same fma).
  void (*axpy_f16_rows)(const float* a, const uint16_t* rows, int64_t row_stride, int64_t count,
                        float* y, int64_t n);
  void (*axpy_bf16_rows)(const float* a, const uint16_t* rows, int64_t row_stride, int64_t count,
                         float* y, int64_t n);
  // int8 rows, each element decoded as the int8 codec decodes it, e = code
  // * scale (one f32 multiply): out[h * out_stride + j] = dot(x + h *
  // x_stride, row j's e) for h < heads, in the f32-row order; and for j <
  // count in order, y[i] = fma(a[j], e_j[i], y[i]) for i < k. So the bits of
  // `f32` and `axpy_rows` over the decoded rows.
  void (*int8_row_scores)(const Int8Rows& rows, const float* x, int64_t x_stride, int64_t heads,
                          float* out, int64_t out_stride);
  void (*axpy_int8_rows)(const float* a, const Int8Rows& rows, float* y);
  // The same over int4 rows, each element decoded as the int4 codec decodes
  // it (code * its group's scale).
  void (*int4_row_scores)(const Int4Rows& rows, const float* x, int64_t x_stride, int64_t heads,
                          float* out, int64_t out_stride);
  void (*axpy_int4_rows)(const float* a, const Int4Rows& rows, float* y);
  // The feed-forward's gate: out[i] = (g[i] * (1 / (1 + exp_reference(-g[i])))) * u[i].
  void (*silu_mul)(const float* g, const float* u, float* out, int64_t n);
};

// The set's kernel for f32 / f16 / bf16 weights, in GGUF's layout or
// interleaved, or null.
FloatPanelKernel float_panel_for(const DotKernels& set, DType dtype, bool interleaved = false);
// The set's kernel for q8_0 / q4_0 weights (Q8Block activations), in GGUF's
// layout or interleaved, or null.
QuantPanelKernel integer_panel_for(const DotKernels& set, DType dtype, bool interleaved = false);
// The set's kernel for q4_K / q6_K weights (Q8KBlock activations), in GGUF's
// layout or interleaved, or null.
QuantPanelKernel kquant_panel_for(const DotKernels& set, DType dtype, bool interleaved = false);
// Whether `set` has a kernel for `dtype` interleaved in groups of rows
// (interleaved_rows.h): what the CPU backend writes when it copies weights.
bool reads_interleaved(const DotKernels& set, DType dtype);

// Where one token's activations for `set`'s q8_0 / q4_0 kernels go.
IntegerActivationLayout integer_activation_layout(const DotKernels& set, int64_t blocks);
// One token (k floats, k a multiple of 32) quantized for `set`'s kernel for
// `dtype` into `out`; `blocks` (k / 32 of them) holds the Q8Blocks on the way
// when the set arranges them.
void quantize_for_integer_kernel(const DotKernels& set, DType dtype, const float* x, int64_t k,
                                 Q8Block* blocks, void* out);

// The portable reference.
const DotKernels& scalar_dot_kernels();
// The AVX2 + FMA + F16C kernels, or null when this build or CPU has none.
const DotKernels* avx2_dot_kernels();
// AVX-512 (F, BW, DQ, VL, VNNI, VBMI: Ice Lake, Zen 4 and later), or null;
// kernels it has no version of are the AVX2 ones.
const DotKernels* avx512_dot_kernels();
// The fastest set this CPU runs; TESSERA_CPU_KERNELS=scalar|avx2 in the
// environment caps it (for comparisons).
const DotKernels& best_dot_kernels();

}  // namespace tessera::cpu
