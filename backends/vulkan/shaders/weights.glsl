// Bytes of a weight tensor bound as 32-bit words (`w_words`, declared by the
// including shader), at any byte address, and the per-element decoders of
// core/tensor/block_quant.h's formats. A tensor's binding covers whole words
// (buffers are allocated in multiples of 16 bytes), so reading the word after
// an unaligned address stays inside it.
#ifndef TESSERA_VULKAN_WEIGHTS_GLSL
#define TESSERA_VULKAN_WEIGHTS_GLSL

uint w_byte(uint b) {
  return (w_words[b >> 2] >> ((b & 3u) * 8u)) & 0xFFu;
}

// The 16 bits at an even byte address.
uint w_u16(uint b) {
  return (w_words[b >> 2] >> ((b & 2u) * 8u)) & 0xFFFFu;
}

// The 32 bits at any byte address, little-endian.
uint w_u32(uint b) {
  const uint shift = (b & 3u) * 8u;
  const uint i = b >> 2;
  if (shift == 0u) return w_words[i];
  return (w_words[i] >> shift) | (w_words[i + 1u] << (32u - shift));
}

float w_half(uint b) {
  return unpackHalf2x16(w_u16(b)).x;
}

int w_int8(uint b) {
  return bitfieldExtract(int(w_byte(b)), 0, 8);
}

// q4_K sub-block j's 6-bit scale and min from the 12 bytes at `packed`
// (block_quant.h's q4_K_scale_min).
void q4_K_scale_min(uint j, uint packed, out int scale, out int minimum) {
  if (j < 4u) {
    scale = int(w_byte(packed + j) & 63u);
    minimum = int(w_byte(packed + j + 4u) & 63u);
  } else {
    scale = int((w_byte(packed + j + 4u) & 0xFu) | ((w_byte(packed + j - 4u) >> 6) << 4));
    minimum = int((w_byte(packed + j + 4u) >> 4) | ((w_byte(packed + j) >> 6) << 4));
  }
}

// Element i of the row whose first byte is `row`, as dequantize_row gives
// it (the same products, unfused).
float decode_element(int dtype, uint row, uint i) {
  if (dtype == DT_F32) return uintBitsToFloat(w_u32(row + 4u * i));
  if (dtype == DT_F16) return w_half(row + 2u * i);
  if (dtype == DT_BF16) return uintBitsToFloat(w_u16(row + 2u * i) << 16);
  if (dtype == DT_Q8_0) {
    const uint base = row + 34u * (i / 32u);
    precise float v = w_half(base) * float(w_int8(base + 2u + i % 32u));
    return v;
  }
  if (dtype == DT_Q4_0) {
    const uint base = row + 18u * (i / 32u);
    const uint j = i % 32u;
    const uint byte_value = w_byte(base + 2u + (j % 16u));
    const int q = int(j < 16u ? (byte_value & 0xFu) : (byte_value >> 4)) - 8;
    precise float v = w_half(base) * float(q);
    return v;
  }
  if (dtype == DT_Q4_K) {
    const uint base = row + 144u * (i / 256u);
    const uint e = i % 256u;
    int sc, m;
    q4_K_scale_min(e / 32u, base + 4u, sc, m);
    const uint code = (w_byte(base + 16u + 32u * (e / 64u) + e % 32u) >> (4u * ((e / 32u) % 2u))) & 0xFu;
    precise float step = w_half(base) * float(sc);
    precise float offset = w_half(base + 2u) * float(m);
    precise float v = step * float(code) - offset;
    return v;
  }
  // q6_K
  const uint base = row + 210u * (i / 256u);
  const uint e = i % 256u;
  const uint half_index = e / 128u, r = e % 128u, quarter = r / 32u, l = r % 32u;
  const uint low = w_byte(base + 64u * half_index + l + 32u * (quarter & 1u));
  const uint high = w_byte(base + 128u + 32u * half_index + l);
  const int q = int(((low >> (4u * (quarter >> 1))) & 0xFu) | (((high >> (2u * quarter)) & 3u) << 4)) - 32;
  const int sc = w_int8(base + 192u + 8u * half_index + l / 16u + 2u * quarter);
  precise float v = w_half(base + 208u) * float(sc) * float(q);
  return v;
}

#endif
