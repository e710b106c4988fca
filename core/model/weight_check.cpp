#include "core/model/weight_check.h"

#include <cmath>
#include <memory>

#include "core/io/mapped_file.h"
#include "core/tensor/block_quant.h"
#include "core/util/strings.h"

namespace tessera {
std::vector<NonFiniteTensor> find_non_finite_weights(const LoadedModel& model) {
  std::vector<NonFiniteTensor> found;
  // A backend that copied the weights let go of the mapping: map the file
  // again (this scan only runs to explain an error, or on request).
  std::shared_ptr<const MappedFile> file = model.file;
  if (!file) {
    auto reopened = MappedFile::open(model.path);
    if (!reopened.ok()) return found;
    file = std::move(reopened).value();
  }
  const uint8_t* base = file->data();
  const uint64_t file_size = file->size();
  std::vector<float> row;
  for (const TensorInfo& info : model.tensors) {
    uint64_t elements = 1;
    for (int64_t d : info.shape) elements *= static_cast<uint64_t>(d);
    const uint64_t bytes = dtype_row_bytes(info.dtype, static_cast<int64_t>(elements));
    if (info.offset > file_size || bytes > file_size - info.offset) continue;  // loader checked
    NonFiniteTensor bad{info.name};
    // Row by row through the reference decoding, so a block format's scales
    // are checked as the values they make.
    const int64_t row_length = info.shape.empty() ? 1 : info.shape.back();
    const std::size_t row_bytes = dtype_row_bytes(info.dtype, row_length);
    row.resize(static_cast<std::size_t>(row_length));
    const uint8_t* data = base + info.offset;
    for (uint64_t i = 0; i < elements; ++i) {
      const auto column = static_cast<std::size_t>(i % static_cast<uint64_t>(row_length));
      if (column == 0)
        dequantize_row(info.dtype, data + (i / static_cast<uint64_t>(row_length)) * row_bytes,
                       row_length, row.data());
      const float value = row[column];
      if (std::isfinite(value)) continue;
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
