// A non-owning view of up to 4-D data in row-major order with explicit strides
// (in elements). Whoever created the memory owns it and must outlive the view.
// Host memory is reached through `data`; memory a device backend allocated is
// named by `buffer` and `offset` (docs/backends.md) and `data` is then null.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "core/tensor/dtype.h"

namespace tessera {

class Buffer;  // core/backend/backend.h

struct Tensor {
  void* data = nullptr;  // host memory; null for a tensor in device memory
  DType dtype = DType::kF32;
  int rank = 0;
  std::array<int64_t, 4> shape{};   // outermost first
  std::array<int64_t, 4> stride{};  // elements to step along each dimension
  // The backend memory the tensor lies in, and where in it (bytes). Null for
  // host memory the backend did not allocate (a file mapping, a std::vector);
  // a host buffer's tensors carry both `data` and `buffer`. (ABI 8.0)
  Buffer* buffer = nullptr;
  std::size_t offset = 0;

  // A contiguous view of `shape` over `data`.
  static Tensor contiguous(void* data, DType dtype, std::initializer_list<int64_t> shape);
  // A contiguous view of `shape` at `offset` bytes into `buffer`: `data` is
  // the buffer's host address there, or null for device memory.
  static Tensor in_buffer(Buffer& buffer, std::size_t offset, DType dtype,
                          std::initializer_list<int64_t> shape);
  // A contiguous view of `shape` over the same memory (host address, buffer
  // and offset alike): this tensor's elements, read in order.
  Tensor reshaped(std::initializer_list<int64_t> shape) const;
  // A view of the same memory starting `first` elements in, of `shape` with
  // `strides` (elements): host address, buffer offset alike. For element
  // types only, not block formats.
  Tensor view(int64_t first, std::initializer_list<int64_t> shape,
              std::initializer_list<int64_t> strides) const;
  // Whether the host may read `data` directly.
  bool on_host() const { return data != nullptr; }

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
