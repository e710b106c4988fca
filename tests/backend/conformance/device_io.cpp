#include "tests/backend/conformance/device_io.h"

#include <string>

namespace tessera::conformance {
namespace {

// A contiguous view of `shape` over `data`, in `buffer` at 0 when it has one.
Tensor view_of(void* data, Buffer* buffer, DType dtype, const Shape& shape) {
  TESSERA_CHECK(!shape.empty() && shape.size() <= 4, "conformance: a tensor has 1 to 4 dimensions");
  Tensor t;
  t.data = data;
  t.dtype = dtype;
  t.rank = static_cast<int>(shape.size());
  int64_t step = 1;
  for (int d = t.rank - 1; d >= 0; --d) {
    const auto i = static_cast<std::size_t>(d);
    t.shape[i] = shape[i];
    t.stride[i] = step;
    step *= shape[i];
  }
  t.buffer = buffer;
  t.offset = 0;
  return t;
}

}  // namespace

Tensor host_tensor(void* data, DType dtype, const Shape& shape) {
  return view_of(data, nullptr, dtype, shape);
}

Result<DeviceTensor> allocate_tensor(Backend& backend, BufferUsage usage, DType dtype,
                                     const Shape& shape) {
  const Tensor probe = view_of(nullptr, nullptr, dtype, shape);
  const std::size_t bytes = probe.bytes();
  TESSERA_CHECK(bytes > 0 || probe.elements() == 0,
                "conformance: rows of " + probe.describe() + " are not whole blocks");
  DeviceTensor out;
  ASSIGN_OR_RETURN(out.buffer, backend.allocate(bytes, usage));
  if (out.buffer == nullptr) return internal_error("allocate returned no buffer");
  if (out.buffer->size() < bytes)
    return internal_error("allocate(" + std::to_string(bytes) + ") returned a buffer of " +
                          std::to_string(out.buffer->size()) + " bytes");
  if (out.buffer->usage() != usage)
    return internal_error("allocate for " + std::string(buffer_usage_name(usage)) +
                          " returned a buffer for " +
                          std::string(buffer_usage_name(out.buffer->usage())));
  // The data pointer is the buffer's own (null on a device); never written here.
  out.tensor = view_of(out.buffer->host_data(), out.buffer.get(), dtype, shape);
  return out;
}

Result<DeviceTensor> upload(Backend& backend, BufferUsage usage, DType dtype, const Shape& shape,
                            std::span<const std::byte> bytes) {
  ASSIGN_OR_RETURN(DeviceTensor out, allocate_tensor(backend, usage, dtype, shape));
  RETURN_IF_ERROR(backend.write(out.tensor, bytes).with_context("write " + out.tensor.describe()));
  return out;
}

Result<DeviceTensor> upload_f32(Backend& backend, BufferUsage usage, const Shape& shape,
                                std::span<const float> values) {
  return upload(backend, usage, DType::kF32, shape, std::as_bytes(values));
}

Result<std::vector<float>> download_f32(Backend& backend, const Tensor& tensor) {
  if (tensor.dtype != DType::kF32) return internal_error("download_f32 of " + tensor.describe());
  std::vector<float> values(static_cast<std::size_t>(tensor.elements()));
  RETURN_IF_ERROR(backend.read(tensor, std::as_writable_bytes(std::span<float>(values)))
                      .with_context("read " + tensor.describe()));
  return values;
}

}  // namespace tessera::conformance
