// q8_0 / q4_0 / q4_K / q6_K weights interleaved in groups of 16 rows: the
// layout the AVX-512 integer kernels read (the AVX2 ones too, as two halves
// of eight rows), one register lane per row, so a block of 16
// rows reduces to one exact int32 per row and lane and one multiply-add per
// block (dot_kernels.h, "integer rows"), with no horizontal sums.
//
// A group of 16 rows holds, block by block (b = 0, 1, ...), the 16 rows'
// block b field by field, each field's units side by side: unit k of row r
// at k * 16 * unit + r * unit. q8_0: the fp16 scales (2-byte units: 32
// bytes), then the codes in 4-byte units (eight 64-byte chunks, chunk c
// holding elements 4c..4c+3 of every row), stored as code + 128 (unsigned,
// as vpdpbusd reads them). q4_0: scales, then its 16 nibble bytes in four
// chunks (low nibbles elements 4c..4c+3, high ones 16 + 4c..). q4_K: d, dmin
// (2-byte units), the 12 bytes of 6-bit scales and minimums (three 4-byte
// units), then the 128 nibble bytes in 32 chunks. q6_K: d, the 16 int8
// scales (four 4-byte units), the 128 low-nibble bytes (32 chunks), the 64
// bytes of high bits (16 chunks). A group takes the bytes
// its 16 rows took in GGUF's layout, so a matrix keeps its size and row r
// belongs to the group starting at row r - r % 16. A matrix whose rows are
// not a whole number of groups keeps the rows past its last whole group in
// GGUF's layout, after the groups (the same bytes either way): Qwen's
// 151,669-row classifier is 9479 groups and 5 plain rows.
//
// f16 / bf16 rows go in groups of 16 too, element by element: element i of
// row r at i * 16 + r (2-byte units) past the group's start. One 32-byte
// load is then element i of sixteen rows, one per lane: the half-row order
// (dot_kernels.h) is one FMA per element for the sixteen rows, and a prompt
// tile uses it for every token with x[i] broadcast.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/tensor/dtype.h"

namespace tessera::cpu {

inline constexpr int64_t kGroupRows = 16;

// Rows per group for `dtype`: 16 (block types, f16, bf16), 0 (never
// interleaved: f32 and the rest).
int64_t group_rows(DType dtype);

// Whether a [rows, k] matrix of `dtype` can be held interleaved: q8_0, q4_0,
// q4_K or q6_K, or f16 / bf16 of any k; at least one whole group of rows.
bool interleavable(DType dtype, int64_t rows, int64_t k);
// Rows of a [rows, ...] matrix held in groups (the rest are plain, after them).
inline int64_t grouped_rows(DType dtype, int64_t rows) {
  const int64_t group = group_rows(dtype);
  return group > 0 ? rows - rows % group : 0;
}

// One group (group_rows(dtype) rows of k elements, GGUF's layout, rows
// row_bytes apart) into `out` (as many bytes, not overlapping it).
void interleave_group(DType dtype, const uint8_t* rows, std::size_t row_bytes, int64_t k,
                      uint8_t* out);

// Row `row` of an interleaved [rows, k] matrix (data at the first group) as
// floats: dequantize_row of the row before interleaving, value for value.
void dequantize_interleaved_row(DType dtype, const uint8_t* data, std::size_t row_bytes,
                                int64_t rows, int64_t row, int64_t k, float* out);

}  // namespace tessera::cpu
