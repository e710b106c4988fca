#include "core/tensor/tensor.h"

#include "core/backend/buffer.h"

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
