#include "core/tensor/tensor.h"

#include <algorithm>

#include "core/backend/buffer.h"
#include "core/status/status.h"

namespace tessera {

Tensor Tensor::contiguous(void* data, DType dtype, std::initializer_list<int64_t> shape) {
  Tensor t;
  t.data = data;
  t.dtype = dtype;
  t.rank = static_cast<int>(shape.size());
  int i = 0;
  for (int64_t s : shape) t.shape[static_cast<std::size_t>(i++)] = s;
  int64_t step = 1;
  for (int d = t.rank - 1; d >= 0; --d) {
    t.stride[static_cast<std::size_t>(d)] = step;
    step *= t.shape[static_cast<std::size_t>(d)];
  }
  return t;
}

Tensor Tensor::in_buffer(Buffer& buffer, std::size_t offset, DType dtype,
                         std::initializer_list<int64_t> shape) {
  void* host = buffer.host_data();
  Tensor t =
      contiguous(host == nullptr ? nullptr : static_cast<char*>(host) + offset, dtype, shape);
  t.buffer = &buffer;
  t.offset = offset;
  return t;
}

Tensor Tensor::reshaped(std::initializer_list<int64_t> new_shape) const {
  Tensor t = contiguous(data, dtype, new_shape);
  t.buffer = buffer;
  t.offset = offset;
  return t;
}

Tensor Tensor::view(int64_t first, std::initializer_list<int64_t> new_shape,
                    std::initializer_list<int64_t> strides) const {
  TESSERA_CHECK(new_shape.size() == strides.size() && new_shape.size() <= 4,
                "Tensor::view: a stride per dimension, at most 4");
  TESSERA_CHECK(!dtype_is_blocked(dtype), "Tensor::view: a block format has no element offset");
  const std::size_t bytes = static_cast<std::size_t>(first) * dtype_row_bytes(dtype, 1);
  Tensor t;
  t.dtype = dtype;
  t.rank = static_cast<int>(new_shape.size());
  std::copy(new_shape.begin(), new_shape.end(), t.shape.begin());
  std::copy(strides.begin(), strides.end(), t.stride.begin());
  t.data = data == nullptr ? nullptr : static_cast<char*>(data) + bytes;
  t.buffer = buffer;
  t.offset = offset + bytes;
  return t;
}

int64_t Tensor::elements() const {
  int64_t n = 1;
  for (int d = 0; d < rank; ++d) n *= shape[static_cast<std::size_t>(d)];
  return n;
}

bool Tensor::is_contiguous() const {
  int64_t step = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (shape[static_cast<std::size_t>(d)] != 1 && stride[static_cast<std::size_t>(d)] != step)
      return false;
    step *= shape[static_cast<std::size_t>(d)];
  }
  return true;
}

std::string Tensor::describe() const {
  std::string s(dtype_name(dtype));
  s += '[';
  for (int d = 0; d < rank; ++d) {
    if (d) s += ", ";
    s += std::to_string(shape[static_cast<std::size_t>(d)]);
  }
  return s + ']';
}

}  // namespace tessera
