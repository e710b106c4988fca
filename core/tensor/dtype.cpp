#include "core/tensor/dtype.h"

#include <bit>
#include <cstring>

namespace tessera {

namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  DTypeLayout layout;
};

constexpr DTypeInfo kInfo[] = {
    {DType::kF32, "f32", {1, 4}},       {DType::kF16, "f16", {1, 2}},
    {DType::kBF16, "bf16", {1, 2}},     {DType::kQ8_0, "q8_0", {32, 34}},
    {DType::kQ4_0, "q4_0", {32, 18}},   {DType::kQ4_K, "q4_K", {256, 144}},
    {DType::kQ6_K, "q6_K", {256, 210}}, {DType::kU8, "u8", {1, 1}},
};

const DTypeInfo* info_of(DType dtype) {
  for (const DTypeInfo& i : kInfo)
    if (i.dtype == dtype) return &i;
  return nullptr;
}

}  // namespace

std::string_view dtype_name(DType dtype) {
  const DTypeInfo* i = info_of(dtype);
  return i ? i->name : "?";
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const DTypeInfo& i : kInfo)
    if (i.name == name) return i.dtype;
  return std::nullopt;
}

DTypeLayout dtype_layout(DType dtype) {
  const DTypeInfo* i = info_of(dtype);
  return i ? i->layout : DTypeLayout{1, 0};
}

std::size_t dtype_size(DType dtype) {
  const DTypeLayout l = dtype_layout(dtype);
  return l.block_elements == 1 ? static_cast<std::size_t>(l.block_bytes) : 0;
}

std::size_t dtype_row_bytes(DType dtype, int64_t elements) {
  const DTypeLayout l = dtype_layout(dtype);
  if (elements < 0 || elements % l.block_elements != 0) return 0;
  return static_cast<std::size_t>(elements / l.block_elements) *
         static_cast<std::size_t>(l.block_bytes);
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);  // inf / nan
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;  // signed zero
  } else {
    // Subnormal half: normalise the mantissa.
    exponent = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t float_to_half(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs >= 0x7f800000u) return sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0);
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // overflows to inf after rounding
  if (abs < 0x38800000u) {                        // result is subnormal or zero
    if (abs < 0x33000000u) return sign;
    const uint32_t exponent = abs >> 23;
    const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exponent;  // 14..24
    uint32_t half = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    return sign | static_cast<uint16_t>(half);
  }
  uint32_t half = ((abs - 0x38000000u) >> 13);
  const uint32_t rest = abs & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
  return sign | static_cast<uint16_t>(half);
}

uint16_t float_to_bf16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

}  // namespace tessera
