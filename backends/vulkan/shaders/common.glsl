// What the shaders share. Indices are 32-bit: a binding is at most 4 GiB.
#ifndef TESSERA_VULKAN_COMMON_GLSL
#define TESSERA_VULKAN_COMMON_GLSL

// The workgroup of the shaders that reduce in shared memory: a multiple of
// every subgroup width (8 on lavapipe, 32 or 64 on GPUs); the reductions use
// barriers only, never subgroup operations.
#define WG 64u

// The DType numbers of core/tensor/dtype.h.
#define DT_F32 0
#define DT_F16 1
#define DT_BF16 2
#define DT_Q8_0 3
#define DT_Q4_0 4
#define DT_Q4_K 5
#define DT_Q6_K 6

// The workgroup's index in a dispatch of (x, y) groups laid out row by row.
uint flat_group() {
  return gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
}

float negative_infinity() {
  return uintBitsToFloat(0xff800000u);
}

// core/tensor/dtype.cpp's half_to_float, subnormals included (exact: every
// half is a float).
float from_half(uint h) {
  const uint sign = (h & 0x8000u) << 16;
  uint exponent = (h >> 10) & 0x1fu;
  uint mantissa = h & 0x3ffu;
  uint bits;
  if (exponent == 0x1fu) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0u) {
    bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  } else if (mantissa == 0u) {
    bits = sign;
  } else {
    exponent = 113u;
    while ((mantissa & 0x400u) == 0u) {
      mantissa <<= 1;
      --exponent;
    }
    bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
  }
  return uintBitsToFloat(bits);
}

#endif
