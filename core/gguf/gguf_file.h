// A GGUF reader (versions 2 and 3, little-endian) over a MappedFile. Parsing
// validates every count, length, type tag, shape and offset against the file
// before trusting it, so any input gives either a GgufFile or a Status that
// names the file, the byte offset and what is wrong (DataLoss for a corrupt
// file, Unimplemented for valid GGUF features this reader does not support).
//
// Layout: "GGUF", u32 version, u64 n_tensors, u64 n_kv; n_kv key/values
// (string key, u32 type, value); n_tensors tensor infos (string name, u32
// n_dims, u64 ne[n_dims], u32 ggml type, u64 offset); padding to
// `general.alignment` (default 32); the data section. Strings are a u64 byte
// length and the bytes; arrays a u32 element type, a u64 count and the elements.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/gguf/gguf_types.h"
#include "core/io/mapped_file.h"
#include "core/status/status.h"
#include "core/tensor/tensor.h"

namespace tessera {

inline constexpr uint32_t kGgufDefaultAlignment = 32;

// True when the file starts with the GGUF magic.
bool has_gguf_magic(const MappedFile& file);

// One metadata value as parsed. string_views and `elements` point into the
// mapping: valid while the GgufFile that produced the value (which holds the
// mapping) is alive.
struct GgufValue {
  GgufType type = GgufType::kUint8;
  uint64_t u = 0;      // kUint8/16/32/64 and kBool (0 or 1)
  int64_t i = 0;       // kInt8/16/32/64
  double f = 0;        // kFloat32/64
  std::string_view s;  // kString
  // kArray:
  GgufType element_type = GgufType::kUint8;
  uint64_t count = 0;
  const uint8_t* elements = nullptr;      // packed little-endian fixed-size elements
  std::vector<std::string_view> strings;  // the elements of an array of strings

  bool is_integer() const;  // any of the eight integer types
  bool is_array_of(GgufType element) const {
    return type == GgufType::kArray && element_type == element;
  }
  // "u32", "string", "array[string]"
  std::string type_name() const;
  // Printable form for `tessera inspect`: 4096, 1e-05, true, "llama",
  // [1, 2, 3], and long arrays summarised: [512 strings: "<unk>", "<s>", "</s>", ...].
  std::string to_string() const;
};

struct GgufKeyValue {
  std::string key;
  GgufValue value;
  uint64_t offset = 0;  // where the record (its key) starts in the file
};

struct GgufTensorInfo {
  std::string name;
  uint32_t n_dims = 0;
  std::array<int64_t, 4> ne{1, 1, 1, 1};  // ggml order: ne[0] is the innermost dimension
  uint32_t type = 0;                      // ggml type id (see GgmlType)
  uint64_t offset = 0;                    // from the start of the data section
  uint64_t file_offset = 0;               // from the start of the file
  int64_t elements = 0;
  uint64_t bytes = 0;
  uint64_t info_offset = 0;  // where the tensor info record starts in the file

  // Row-major shape, outermost first (ne reversed): token_embd is [vocab, dim].
  std::vector<int64_t> shape() const;
  // "[512, 64]"
  std::string shape_string() const;
  std::string type_name() const { return ggml_type_name(type); }
};

class GgufFile {
 public:
  // Maps and parses `path`; NotFound when it does not exist.
  static Result<GgufFile> open(const std::string& path);
  // Parses an already mapped file; the GgufFile keeps it alive.
  static Result<GgufFile> parse(std::shared_ptr<const MappedFile> file);

  const std::string& path() const { return file_->path(); }
  const std::shared_ptr<const MappedFile>& file() const { return file_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  // Start of the data section (aligned), in bytes from the start of the file.
  uint64_t data_offset() const { return data_offset_; }

  // In file order.
  const std::vector<GgufKeyValue>& metadata() const { return metadata_; }
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }

  bool has(std::string_view key) const { return find(key) != nullptr; }
  // nullptr when absent; valid while this GgufFile lives.
  const GgufValue* find(std::string_view key) const;
  const GgufTensorInfo* find_tensor(std::string_view name) const;

  // Typed getters: NotFound when the key is absent, DataLoss when its type
  // does not fit (integer getters accept any integer type whose value is in
  // range; float getters accept f32 and f64). Messages name the file and key.
  Result<uint32_t> get_u32(std::string_view key) const;
  Result<int32_t> get_i32(std::string_view key) const;
  Result<uint64_t> get_u64(std::string_view key) const;
  Result<int64_t> get_i64(std::string_view key) const;
  Result<float> get_f32(std::string_view key) const;
  Result<double> get_f64(std::string_view key) const;
  Result<bool> get_bool(std::string_view key) const;
  Result<std::string> get_string(std::string_view key) const;
  Result<std::vector<std::string>> get_string_array(std::string_view key) const;
  Result<std::vector<float>> get_f32_array(std::string_view key) const;
  Result<std::vector<int64_t>> get_int_array(std::string_view key) const;
  // The same, with `fallback` when the key is absent (a present key of the
  // wrong type is still an error).
  Result<uint32_t> get_u32_or(std::string_view key, uint32_t fallback) const;
  Result<float> get_f32_or(std::string_view key, float fallback) const;
  Result<bool> get_bool_or(std::string_view key, bool fallback) const;
  Result<std::string> get_string_or(std::string_view key, std::string fallback) const;

  // A view of the tensor's data in the mapping, shape outermost first. Only
  // f32 and f16 load; other types are Unimplemented (naming tensor and type).
  // The data is read-only memory: never write through the view.
  Result<Tensor> tensor(const GgufTensorInfo& info) const;
  Result<Tensor> tensor(std::string_view name) const;  // NotFound when absent

 private:
  friend class GgufParser;
  GgufFile() = default;

  Status key_error(std::string_view key, const GgufValue& value, std::string_view wanted) const;
  Result<const GgufValue*> require(std::string_view key) const;

  std::shared_ptr<const MappedFile> file_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kGgufDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<GgufKeyValue> metadata_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, std::size_t, std::less<>> key_index_;
  std::map<std::string, std::size_t, std::less<>> tensor_index_;
};

}  // namespace tessera
