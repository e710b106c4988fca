#include "core/model/weight_check.h"

#include <cmath>
#include <cstring>

#include "core/io/mapped_file.h"
#include "core/util/strings.h"

namespace tessera {
namespace {

bool half_is_finite(uint16_t h) {
  return (h & 0x7C00u) != 0x7C00u;  // exponent all ones: inf or NaN
}

}  // namespace

std::vector<NonFiniteTensor> find_non_finite_weights(const LoadedModel& model) {
  std::vector<NonFiniteTensor> found;
  if (!model.file) return found;
  const uint8_t* base = model.file->data();
  const uint64_t file_size = model.file->size();
  for (const TensorInfo& info : model.tensors) {
    uint64_t elements = 1;
    for (int64_t d : info.shape) elements *= static_cast<uint64_t>(d);
    const uint64_t bytes = elements * dtype_size(info.dtype);
    if (info.offset > file_size || bytes > file_size - info.offset) continue;  // loader checked
    NonFiniteTensor bad{info.name};
    const uint8_t* data = base + info.offset;
    for (uint64_t i = 0; i < elements; ++i) {
      float value = 0;
      if (info.dtype == DType::kF16) {
        uint16_t h = 0;
        std::memcpy(&h, data + i * 2, 2);
        if (half_is_finite(h)) continue;
        value = half_to_float(h);
      } else {
        std::memcpy(&value, data + i * 4, 4);
        if (std::isfinite(value)) continue;
      }
      if (bad.count++ == 0) {
        bad.first_element = i;
        bad.first_value = value;
      }
    }
    if (bad.count > 0) found.push_back(std::move(bad));
  }
  return found;
}

std::string describe_non_finite(const std::vector<NonFiniteTensor>& tensors) {
  if (tensors.empty()) return "";
  const NonFiniteTensor& t = tensors.front();
  std::string text = "tensor '" + t.name + "' holds " + std::to_string(t.count) +
                     " non-finite value" + (t.count == 1 ? "" : "s") + " (the first, element " +
                     std::to_string(t.first_element) + ", is " + shortest_decimal(t.first_value) +
                     ")";
  if (tensors.size() > 1)
    text += ", and " + std::to_string(tensors.size() - 1) + " more tensor" +
            (tensors.size() == 2 ? " does" : "s do");
  return text;
}

}  // namespace tessera
