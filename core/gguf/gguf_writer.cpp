#include "core/gguf/gguf_writer.h"

#include <cstring>
#include <string>
#include <string_view>

#include "core/io/output_file.h"

namespace tessera {

void GgufWriter::append_string(std::vector<uint8_t>& out, const std::string& s) {
  append(out, static_cast<uint64_t>(s.size()));
  const std::size_t old_size = out.size();
  out.resize(old_size + s.size());
  if (!s.empty()) std::memcpy(out.data() + old_size, s.data(), s.size());
}

void GgufWriter::set_raw(const std::string& key, GgufType type, std::vector<uint8_t> value) {
  for (KeyValue& kv : metadata_) {
    if (kv.key == key) {
      kv.type = type;
      kv.value = std::move(value);
      return;
    }
  }
  metadata_.push_back(KeyValue{key, type, std::move(value)});
}

void GgufWriter::set_string(const std::string& key, const std::string& v) {
  std::vector<uint8_t> bytes;
  append_string(bytes, v);
  set_raw(key, GgufType::kString, std::move(bytes));
}

void GgufWriter::set_string_array(const std::string& key, const std::vector<std::string>& v) {
  std::vector<uint8_t> bytes;
  append(bytes, static_cast<uint32_t>(GgufType::kString));
  append(bytes, static_cast<uint64_t>(v.size()));
  for (const std::string& s : v) append_string(bytes, s);
  set_raw(key, GgufType::kArray, std::move(bytes));
}

Status GgufWriter::set_value(const std::string& key, const GgufValue& value) {
  std::vector<uint8_t> bytes;
  const auto scalar = [&](GgufType type, auto stored) {
    append(bytes, stored);
    set_raw(key, type, std::move(bytes));
    return ok_status();
  };
  switch (value.type) {
    case GgufType::kUint8:
    case GgufType::kBool:
      return scalar(value.type, static_cast<uint8_t>(value.u));
    case GgufType::kInt8:
      return scalar(value.type, static_cast<int8_t>(value.i));
    case GgufType::kUint16:
      return scalar(value.type, static_cast<uint16_t>(value.u));
    case GgufType::kInt16:
      return scalar(value.type, static_cast<int16_t>(value.i));
    case GgufType::kUint32:
      return scalar(value.type, static_cast<uint32_t>(value.u));
    case GgufType::kInt32:
      return scalar(value.type, static_cast<int32_t>(value.i));
    case GgufType::kUint64:
      return scalar(value.type, value.u);
    case GgufType::kInt64:
      return scalar(value.type, value.i);
    case GgufType::kFloat32:
      return scalar(value.type, static_cast<float>(value.f));
    case GgufType::kFloat64:
      return scalar(value.type, value.f);
    case GgufType::kString:
      append_string(bytes, std::string(value.s));
      set_raw(key, GgufType::kString, std::move(bytes));
      return ok_status();
    case GgufType::kArray:
      break;
  }
  append(bytes, static_cast<uint32_t>(value.element_type));
  append(bytes, value.count);
  if (value.element_type == GgufType::kString) {
    for (std::string_view s : value.strings) append_string(bytes, std::string(s));
  } else {
    const std::size_t size = gguf_type_size(value.element_type);
    if (size == 0)
      return invalid_argument("metadata key '" + key + "': nested arrays are not copied");
    bytes.insert(bytes.end(), value.elements, value.elements + value.count * size);
  }
  set_raw(key, GgufType::kArray, std::move(bytes));
  return ok_status();
}

void GgufWriter::set_bool_array(const std::string& key, const std::vector<bool>& v) {
  std::vector<uint8_t> bytes;
  append(bytes, static_cast<uint32_t>(GgufType::kBool));
  append(bytes, static_cast<uint64_t>(v.size()));
  for (bool b : v) append(bytes, static_cast<uint8_t>(b ? 1 : 0));
  set_raw(key, GgufType::kArray, std::move(bytes));
}

Status GgufWriter::set_alignment(uint32_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    return invalid_argument("GGUF alignment " + std::to_string(alignment) +
                            " is not a power of two");
  alignment_ = alignment;
  set_u32("general.alignment", alignment);
  return ok_status();
}

Status GgufWriter::add_tensor(const std::string& name, DType dtype,
                              const std::vector<int64_t>& shape, const void* data) {
  int64_t elements = 1;
  for (int64_t d : shape) {
    if (d <= 0 || __builtin_mul_overflow(elements, d, &elements))
      return invalid_argument("tensor '" + name + "': bad shape");
  }
  if (shape.empty() || shape.size() > 4)
    return invalid_argument("tensor '" + name + "': rank must be 1 to 4");
  if (shape.back() % dtype_layout(dtype).block_elements != 0)
    return invalid_argument("tensor '" + name + "': rows of " + std::to_string(shape.back()) +
                            " are not whole " + std::string(dtype_name(dtype)) + " blocks of " +
                            std::to_string(dtype_layout(dtype).block_elements));
  const std::size_t n = dtype_row_bytes(dtype, elements);
  const auto* p = static_cast<const uint8_t*>(data);
  return add_tensor_raw(name, static_cast<uint32_t>(dtype_to_ggml_type(dtype)), shape,
                        std::vector<uint8_t>(p, p + n));
}

Status GgufWriter::add_tensor_raw(const std::string& name, uint32_t ggml_type,
                                  const std::vector<int64_t>& shape, std::vector<uint8_t> bytes) {
  const auto traits = ggml_type_traits(ggml_type);
  if (!traits) return invalid_argument("tensor '" + name + "': unknown ggml type");
  if (shape.empty() || shape.size() > 4)
    return invalid_argument("tensor '" + name + "': rank must be 1 to 4");
  for (const TensorRecord& t : tensors_) {
    if (t.name == name) return invalid_argument("duplicate tensor name '" + name + "'");
  }
  TensorRecord record{name, ggml_type, {}, {}};
  int64_t elements = 1;
  for (auto it = shape.rbegin(); it != shape.rend(); ++it) {
    if (*it <= 0 || __builtin_mul_overflow(elements, *it, &elements))
      return invalid_argument("tensor '" + name + "': bad shape");
    record.ne.push_back(static_cast<uint64_t>(*it));
  }
  if (shape.back() % traits->block_elements != 0)
    return invalid_argument("tensor '" + name + "': innermost dimension is not a multiple of " +
                            std::to_string(traits->block_elements));
  const auto expected =
      static_cast<std::size_t>(elements / traits->block_elements * traits->block_bytes);
  if (bytes.size() != expected)
    return invalid_argument("tensor '" + name + "': " + std::to_string(bytes.size()) +
                            " bytes given, the shape needs " + std::to_string(expected));
  record.bytes = std::move(bytes);
  tensors_.push_back(std::move(record));
  return ok_status();
}

std::vector<uint8_t> GgufWriter::serialize() const {
  std::vector<uint8_t> out = {'G', 'G', 'U', 'F'};
  append(out, uint32_t{3});
  append(out, static_cast<uint64_t>(tensors_.size()));
  append(out, static_cast<uint64_t>(metadata_.size()));
  for (const KeyValue& kv : metadata_) {
    append_string(out, kv.key);
    append(out, static_cast<uint32_t>(kv.type));
    out.insert(out.end(), kv.value.begin(), kv.value.end());
  }
  const auto align = [this](uint64_t x) { return (x + alignment_ - 1) / alignment_ * alignment_; };
  uint64_t offset = 0;  // within the data section
  for (const TensorRecord& t : tensors_) {
    append_string(out, t.name);
    append(out, static_cast<uint32_t>(t.ne.size()));
    for (uint64_t ne : t.ne) append(out, ne);
    append(out, t.type);
    append(out, offset);
    offset = align(offset + t.bytes.size());
  }
  out.resize(align(out.size()), 0);
  const std::size_t data_start = out.size();
  offset = 0;
  for (const TensorRecord& t : tensors_) {
    out.resize(data_start + offset, 0);
    out.insert(out.end(), t.bytes.begin(), t.bytes.end());
    offset = align(offset + t.bytes.size());
  }
  return out;
}

Status GgufWriter::write_file(const std::string& path) const {
  const std::vector<uint8_t> bytes = serialize();
  // Through a temporary renamed onto the target: a reader (or a mapping) of
  // an existing file keeps the old contents, and a failed or interrupted
  // write never leaves a half file under the final name.
  ASSIGN_OR_RETURN(OutputFile file, OutputFile::create(path, "GGUF file"));
  RETURN_IF_ERROR(
      file.write(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size())));
  return file.commit();
}

}  // namespace tessera
