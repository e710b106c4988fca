// Tensors in the memory of the backend under test. Everything is allocated
// through Backend::allocate and moved only with Backend::write / read: the
// `data` of a tensor a backend allocated is never touched here (it is null on
// a device).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/backend/backend.h"
#include "core/status/status.h"

namespace tessera::conformance {

using Shape = std::vector<int64_t>;  // outermost first, 1 to 4 dimensions

// A contiguous tensor and the buffer it lies in (one buffer per tensor).
struct DeviceTensor {
  std::unique_ptr<Buffer> buffer;
  Tensor tensor;
};

// A contiguous host view of `shape` over `data` (the reference's inputs).
Tensor host_tensor(void* data, DType dtype, const Shape& shape);

// Uninitialised memory of the backend for a tensor of `shape`.
Result<DeviceTensor> allocate_tensor(Backend& backend, BufferUsage usage, DType dtype,
                                     const Shape& shape);
// A tensor holding `bytes` (exactly its size).
Result<DeviceTensor> upload(Backend& backend, BufferUsage usage, DType dtype, const Shape& shape,
                            std::span<const std::byte> bytes);
Result<DeviceTensor> upload_f32(Backend& backend, BufferUsage usage, const Shape& shape,
                                std::span<const float> values);
// The f32 tensor's values, read back after the work issued before.
Result<std::vector<float>> download_f32(Backend& backend, const Tensor& tensor);

}  // namespace tessera::conformance
