// A non-owning view of up to 4-D data in row-major order with explicit strides
// (in elements). Whoever created the memory owns it and must outlive the view.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "core/tensor/dtype.h"

namespace tessera {

struct Tensor {
  void* data = nullptr;
  DType dtype = DType::kF32;
  int rank = 0;
  std::array<int64_t, 4> shape{};   // outermost first
  std::array<int64_t, 4> stride{};  // elements to step along each dimension

  // A contiguous view of `shape` over `data`.
  static Tensor contiguous(void* data, DType dtype, std::initializer_list<int64_t> shape);

  int64_t dim(int i) const { return shape[static_cast<std::size_t>(i)]; }
  int64_t elements() const;
  // Bytes of a contiguous tensor (whole blocks for a block format).
  std::size_t bytes() const { return dtype_row_bytes(dtype, elements()); }
  bool is_contiguous() const;
  // "f32[64, 512]"
  std::string describe() const;

  float* f32() const { return static_cast<float*>(data); }
  uint16_t* f16() const { return static_cast<uint16_t*>(data); }
};

}  // namespace tessera
