// Builds a GGUF v3 file in memory: metadata of the common types and f32/f16
// tensors (or raw bytes of any ggml type), each tensor's data aligned. Used by
// tests to make valid and corrupted files and by model-conversion tools.
#pragma once

#include <cstring>

#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "core/gguf/gguf_file.h"
#include "core/gguf/gguf_types.h"
#include "core/status/status.h"
#include "core/tensor/dtype.h"

namespace tessera {

class GgufWriter {
 public:
  // Keys keep the order of their first set; setting a key again replaces its value.
  void set_u8(const std::string& key, uint8_t v) { set_scalar(key, GgufType::kUint8, v); }
  void set_i8(const std::string& key, int8_t v) { set_scalar(key, GgufType::kInt8, v); }
  void set_u16(const std::string& key, uint16_t v) { set_scalar(key, GgufType::kUint16, v); }
  void set_i16(const std::string& key, int16_t v) { set_scalar(key, GgufType::kInt16, v); }
  void set_u32(const std::string& key, uint32_t v) { set_scalar(key, GgufType::kUint32, v); }
  void set_i32(const std::string& key, int32_t v) { set_scalar(key, GgufType::kInt32, v); }
  void set_u64(const std::string& key, uint64_t v) { set_scalar(key, GgufType::kUint64, v); }
  void set_i64(const std::string& key, int64_t v) { set_scalar(key, GgufType::kInt64, v); }
  void set_f32(const std::string& key, float v) { set_scalar(key, GgufType::kFloat32, v); }
  void set_f64(const std::string& key, double v) { set_scalar(key, GgufType::kFloat64, v); }
  void set_bool(const std::string& key, bool v) {
    set_scalar(key, GgufType::kBool, static_cast<uint8_t>(v ? 1 : 0));
  }
  void set_string(const std::string& key, const std::string& v);
  void set_string_array(const std::string& key, const std::vector<std::string>& v);
  void set_bool_array(const std::string& key, const std::vector<bool>& v);
  // An array of uint8_t ... int64_t, float or double.
  template <typename T>
  void set_array(const std::string& key, std::span<const T> v) {
    std::vector<uint8_t> bytes;
    append(bytes, static_cast<uint32_t>(type_of<T>()));
    append(bytes, static_cast<uint64_t>(v.size()));
    for (const T& x : v) append(bytes, x);
    set_raw(key, GgufType::kArray, std::move(bytes));
  }

  // A value as GgufFile parsed it, re-encoded: copies metadata between files.
  // InvalidArgument for a nested array (GGUF allows them; no model uses one).
  Status set_value(const std::string& key, const GgufValue& value);

  // Also writes `general.alignment` (u32). Must be a power of two.
  Status set_alignment(uint32_t alignment);
  uint32_t alignment() const { return alignment_; }

  // Adds a tensor of `shape` (outermost first, rank 1..4) whose data is
  // shape-product elements of `dtype` at `data` (copied). InvalidArgument for a
  // bad shape or a duplicate name.
  Status add_tensor(const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                    const void* data);
  // Any ggml type, with its bytes as given (their count must match the type's
  // block layout).
  Status add_tensor_raw(const std::string& name, uint32_t ggml_type,
                        const std::vector<int64_t>& shape, std::vector<uint8_t> bytes);

  // The whole file.
  std::vector<uint8_t> serialize() const;
  // Writes serialize() to `path` through OutputFile (core/io/output_file.h):
  // links followed, anything but a regular file refused, a temporary renamed
  // onto the target; its errors name the path and leave the old file as it was.
  Status write_file(const std::string& path) const;

 private:
  struct KeyValue {
    std::string key;
    GgufType type;
    std::vector<uint8_t> value;  // the encoded value, after the type tag
  };
  struct TensorRecord {
    std::string name;
    uint32_t type;
    std::vector<uint64_t> ne;  // ggml order, innermost first
    std::vector<uint8_t> bytes;
  };

  template <typename T>
  static void append(std::vector<uint8_t>& out, T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    // resize + memcpy rather than insert: g++ 12 at -O3 reports a false
    // -Wstringop-overflow for a ranged insert of a few bytes.
    const std::size_t old_size = out.size();
    out.resize(old_size + sizeof(T));
    std::memcpy(out.data() + old_size, &v, sizeof(T));
  }
  static void append_string(std::vector<uint8_t>& out, const std::string& s);

  template <typename T>
  static constexpr GgufType type_of() {
    if constexpr (std::is_same_v<T, uint8_t>)
      return GgufType::kUint8;
    else if constexpr (std::is_same_v<T, int8_t>)
      return GgufType::kInt8;
    else if constexpr (std::is_same_v<T, uint16_t>)
      return GgufType::kUint16;
    else if constexpr (std::is_same_v<T, int16_t>)
      return GgufType::kInt16;
    else if constexpr (std::is_same_v<T, uint32_t>)
      return GgufType::kUint32;
    else if constexpr (std::is_same_v<T, int32_t>)
      return GgufType::kInt32;
    else if constexpr (std::is_same_v<T, uint64_t>)
      return GgufType::kUint64;
    else if constexpr (std::is_same_v<T, int64_t>)
      return GgufType::kInt64;
    else if constexpr (std::is_same_v<T, float>)
      return GgufType::kFloat32;
    else {
      static_assert(std::is_same_v<T, double>, "unsupported GGUF array element type");
      return GgufType::kFloat64;
    }
  }

  template <typename T>
  void set_scalar(const std::string& key, GgufType type, T v) {
    std::vector<uint8_t> bytes;
    append(bytes, v);
    set_raw(key, type, std::move(bytes));
  }
  void set_raw(const std::string& key, GgufType type, std::vector<uint8_t> value);

  uint32_t alignment_ = 32;
  std::vector<KeyValue> metadata_;
  std::vector<TensorRecord> tensors_;
};

}  // namespace tessera
