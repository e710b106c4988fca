// Element types of weights and activations.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tessera {

enum class DType : uint8_t { kF32 = 0, kF16 = 1 };

std::string_view dtype_name(DType dtype);
std::size_t dtype_size(DType dtype);

// IEEE half <-> float, exact for every finite half, round-to-nearest-even the other way.
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);

}  // namespace tessera
