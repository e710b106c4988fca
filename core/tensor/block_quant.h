// Rows of any dtype to f32 and back, in GGUF's own layouts (ggml's block
// structs, byte for byte), so files written by llama.cpp load as they are and
// files written by `tessera quantize` load in llama.cpp. These are the scalar
// references: backends may read blocks faster, never differently.
//
//   q8_0  per 32: fp16 d, int8 q[32]                    x = d * q
//   q4_0  per 32: fp16 d, 16 bytes of nibbles           x = d * (q - 8); byte j holds
//                                                       elements j (low) and j + 16 (high)
//   q4_K  per 256: fp16 d, fp16 dmin, 12 bytes of 6-bit sub-scales sc[8] and mins m[8],
//         128 bytes of nibbles                          x = d * sc[s] * q - dmin * m[s]
//         (s = element / 32; bytes 32i..32i+31 hold sub-blocks 2i (low) and 2i + 1 (high))
//   q6_K  per 256: 128 bytes of low nibbles, 64 bytes of high 2-bit pairs, int8 sc[16],
//         fp16 d                                        x = d * sc[element / 16] * (q - 32)
#pragma once

#include <cstdint>

#include "core/tensor/dtype.h"

namespace tessera {

// dst[0, n) = the n elements of `dtype` at src. n must be a whole number of
// blocks (callers check rows at load time).
void dequantize_row(DType dtype, const void* src, int64_t n, float* dst);

// dst (dtype_row_bytes(dtype, n) bytes) = src[0, n) in `dtype`: round to
// nearest for f16/bf16; for the block formats, scales from each block's
// range, then every element to its nearest code. Deterministic.
void quantize_row(DType dtype, const float* src, int64_t n, void* dst);

// q4_K sub-block j's (0..7) 6-bit scale and min from the 12 packed bytes that
// follow d and dmin (shared with the backends' kernels).
inline void q4_K_scale_min(int j, const uint8_t* packed, int& scale, int& min) {
  if (j < 4) {
    scale = packed[j] & 63;
    min = packed[j + 4] & 63;
  } else {
    scale = (packed[j + 4] & 0xF) | ((packed[j - 4] >> 6) << 4);
    min = (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4);
  }
}

}  // namespace tessera
