#include "core/gguf/gguf_file.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <limits>
#include <utility>

namespace tessera {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the GGUF reader assumes a little-endian host");

constexpr uint8_t kMagic[4] = {'G', 'G', 'U', 'F'};
// The smallest possible records, to reject absurd counts before looping:
// a key/value is a string length (8), a type (4) and at least one byte; a
// tensor info is a name length (8), n_dims (4), one ne (8), a type (4) and an offset (8).
constexpr uint64_t kMinKeyValueBytes = 13;
constexpr uint64_t kMinTensorInfoBytes = 32;
constexpr uint32_t kMaxDims = 4;
// Counts are only bounded by the file size; reserve no more than this up front
// so a corrupt count fails before it allocates much.
constexpr uint64_t kReserveLimit = 4096;

std::string hex_u32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

}  // namespace

bool has_gguf_magic(const MappedFile& file) {
  return file.size() >= 4 && std::memcmp(file.data(), kMagic, 4) == 0;
}

// Reads the file front to back; every read is bounds-checked first.
class GgufParser {
 public:
  explicit GgufParser(GgufFile& out) : out_(out), file_(*out.file_) {}

  Status parse() {
    RETURN_IF_ERROR(parse_header());
    RETURN_IF_ERROR(parse_metadata());
    RETURN_IF_ERROR(parse_alignment());
    RETURN_IF_ERROR(parse_tensor_infos());
    return check_tensor_data();
  }

 private:
  Status error_at(uint64_t offset, const std::string& what) const {
    return data_loss(file_.path() + ": at byte " + std::to_string(offset) + ": " + what);
  }
  uint64_t remaining() const { return file_.size() - pos_; }

  Status need(uint64_t bytes, std::string_view what) const {
    if (bytes > remaining()) {
      return error_at(pos_, "truncated: reading " + std::string(what) + " needs " +
                                std::to_string(bytes) + " bytes but only " +
                                std::to_string(remaining()) + " remain (file is " +
                                std::to_string(file_.size()) + " bytes)");
    }
    return ok_status();
  }

  template <typename T>
  Status read(T* value, std::string_view what) {
    RETURN_IF_ERROR(need(sizeof(T), what));
    std::memcpy(value, file_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return ok_status();
  }

  Status read_string(std::string_view* value, std::string_view what) {
    const uint64_t at = pos_;
    uint64_t length = 0;
    RETURN_IF_ERROR(read(&length, what));
    if (length > remaining()) {
      return error_at(at, "length of " + std::string(what) + " is " + std::to_string(length) +
                              " bytes, past the end of the file (" + std::to_string(remaining()) +
                              " bytes remain)");
    }
    *value = std::string_view(reinterpret_cast<const char*>(file_.data() + pos_), length);
    pos_ += length;
    return ok_status();
  }

  Status parse_header() {
    if (file_.size() < 4 || std::memcmp(file_.data(), kMagic, 4) != 0) {
      uint32_t magic = 0;
      if (file_.size() > 0)
        std::memcpy(&magic, file_.data(), std::min<std::size_t>(4, file_.size()));
      return error_at(0, "not a GGUF file: magic is " + hex_u32(magic) + ", expected \"GGUF\"");
    }
    pos_ = 4;
    uint32_t version = 0;
    RETURN_IF_ERROR(read(&version, "the version"));
    if (version == 1) {
      return unimplemented(file_.path() +
                           ": at byte 4: GGUF version 1 is not supported (only 2 and 3); "
                           "convert the model again with a current converter");
    }
    if (version != 2 && version != 3 && __builtin_bswap32(version) >= 1 &&
        __builtin_bswap32(version) <= 3) {
      return unimplemented(file_.path() +
                           ": at byte 4: this is a big-endian GGUF file, which is not supported");
    }
    if (version != 2 && version != 3) {
      return error_at(4, "unsupported GGUF version " + std::to_string(version) +
                             " (this reader handles versions 2 and 3)");
    }
    out_.version_ = version;

    RETURN_IF_ERROR(read(&n_tensors_, "the tensor count"));
    RETURN_IF_ERROR(read(&n_kv_, "the key/value count"));
    // Each record takes a minimum number of bytes, so a count the rest of the
    // file cannot hold is corrupt; checking it here bounds every later loop.
    const uint64_t rest = remaining();
    if (n_kv_ > rest / kMinKeyValueBytes) {
      return error_at(16, "key/value count " + std::to_string(n_kv_) +
                              " is impossible: the remaining " + std::to_string(rest) +
                              " bytes hold at most " + std::to_string(rest / kMinKeyValueBytes));
    }
    if (n_tensors_ > rest / kMinTensorInfoBytes ||
        n_kv_ * kMinKeyValueBytes + n_tensors_ * kMinTensorInfoBytes > rest) {
      return error_at(8, "tensor count " + std::to_string(n_tensors_) +
                             " is impossible: the remaining " + std::to_string(rest) +
                             " bytes cannot hold that many tensor infos after " +
                             std::to_string(n_kv_) + " key/values");
    }
    return ok_status();
  }

  Status parse_metadata() {
    out_.metadata_.reserve(std::min<uint64_t>(n_kv_, kReserveLimit));
    for (uint64_t k = 0; k < n_kv_; ++k) {
      GgufKeyValue kv;
      kv.offset = pos_;
      std::string_view key;
      RETURN_IF_ERROR(read_string(&key, "key #" + std::to_string(k)));
      kv.key = std::string(key);
      if (kv.key.empty()) return error_at(kv.offset, "key #" + std::to_string(k) + " is empty");
      if (out_.key_index_.count(kv.key) != 0)
        return error_at(kv.offset, "duplicate key '" + kv.key + "'");
      const std::string what = "the value of '" + kv.key + "'";
      RETURN_IF_ERROR(read_type(&kv.value.type, what));
      RETURN_IF_ERROR(read_value(&kv.value, what));
      out_.key_index_.emplace(kv.key, out_.metadata_.size());
      out_.metadata_.push_back(std::move(kv));
    }
    return ok_status();
  }

  Status read_type(GgufType* type, const std::string& what) {
    const uint64_t at = pos_;
    uint32_t raw = 0;
    RETURN_IF_ERROR(read(&raw, "the type of " + what));
    if (raw >= kGgufTypeCount) {
      return error_at(at, "unknown value type " + std::to_string(raw) + " for " + what +
                              " (valid types are 0 to " + std::to_string(kGgufTypeCount - 1) + ")");
    }
    *type = static_cast<GgufType>(raw);
    return ok_status();
  }

  // Reads one fixed-size scalar of `type` into value->u / i / f.
  Status read_scalar(GgufType type, GgufValue* value, const std::string& what) {
    const uint64_t at = pos_;
    switch (type) {
      case GgufType::kUint8:
        return read_uint<uint8_t>(value, what);
      case GgufType::kUint16:
        return read_uint<uint16_t>(value, what);
      case GgufType::kUint32:
        return read_uint<uint32_t>(value, what);
      case GgufType::kUint64:
        return read_uint<uint64_t>(value, what);
      case GgufType::kInt8:
        return read_int<int8_t>(value, what);
      case GgufType::kInt16:
        return read_int<int16_t>(value, what);
      case GgufType::kInt32:
        return read_int<int32_t>(value, what);
      case GgufType::kInt64:
        return read_int<int64_t>(value, what);
      case GgufType::kFloat32: {
        float v = 0;
        RETURN_IF_ERROR(read(&v, what));
        value->f = v;
        return ok_status();
      }
      case GgufType::kFloat64:
        return read(&value->f, what);
      case GgufType::kBool: {
        RETURN_IF_ERROR(read_uint<uint8_t>(value, what));
        if (value->u > 1)
          return error_at(
              at, what + " is a bool stored as " + std::to_string(value->u) + " (must be 0 or 1)");
        return ok_status();
      }
      case GgufType::kString:
      case GgufType::kArray:
        break;
    }
    return internal_error("read_scalar called for a non-scalar type");
  }
  template <typename T>
  Status read_uint(GgufValue* value, const std::string& what) {
    T v = 0;
    RETURN_IF_ERROR(read(&v, what));
    value->u = v;
    return ok_status();
  }
  template <typename T>
  Status read_int(GgufValue* value, const std::string& what) {
    T v = 0;
    RETURN_IF_ERROR(read(&v, what));
    value->i = v;
    return ok_status();
  }

  Status read_value(GgufValue* value, const std::string& what) {
    if (value->type == GgufType::kString) return read_string(&value->s, what);
    if (value->type != GgufType::kArray) return read_scalar(value->type, value, what);

    const uint64_t at = pos_;
    RETURN_IF_ERROR(read_type(&value->element_type, "the elements of " + what));
    if (value->element_type == GgufType::kArray) {
      return unimplemented(file_.path() + ": at byte " + std::to_string(at) + ": " + what +
                           " is an array of arrays, which this reader does not support");
    }
    const uint64_t count_at = pos_;
    RETURN_IF_ERROR(read(&value->count, "the element count of " + what));
    if (value->element_type == GgufType::kString) {
      if (value->count > remaining() / 8) {
        return error_at(count_at, what + " claims " + std::to_string(value->count) +
                                      " strings, but only " + std::to_string(remaining()) +
                                      " bytes remain");
      }
      value->strings.resize(value->count);
      for (uint64_t e = 0; e < value->count; ++e)
        RETURN_IF_ERROR(
            read_string(&value->strings[e], "string #" + std::to_string(e) + " of " + what));
      return ok_status();
    }
    const uint64_t size = gguf_type_size(value->element_type);
    if (value->count > remaining() / size) {
      return error_at(count_at, what + " claims " + std::to_string(value->count) + " " +
                                    std::string(gguf_type_name(value->element_type)) +
                                    " elements, past the end of the file (" +
                                    std::to_string(remaining()) + " bytes remain)");
    }
    value->elements = file_.data() + pos_;
    if (value->element_type == GgufType::kBool) {
      for (uint64_t e = 0; e < value->count; ++e) {
        if (value->elements[e] > 1)
          return error_at(pos_ + e, "element " + std::to_string(e) + " of " + what +
                                        " is a bool stored as " +
                                        std::to_string(value->elements[e]));
      }
    }
    pos_ += value->count * size;
    return ok_status();
  }

  Status parse_alignment() {
    const auto it = out_.key_index_.find("general.alignment");
    if (it == out_.key_index_.end()) return ok_status();
    const GgufKeyValue& kv = out_.metadata_[it->second];
    if (kv.value.type != GgufType::kUint32) {
      return error_at(kv.offset, "general.alignment must be a u32, found " + kv.value.type_name());
    }
    const uint64_t a = kv.value.u;
    if (a == 0 || (a & (a - 1)) != 0) {
      return error_at(kv.offset,
                      "general.alignment is " + std::to_string(a) + ", not a power of two");
    }
    out_.alignment_ = static_cast<uint32_t>(a);
    return ok_status();
  }

  Status parse_tensor_infos() {
    out_.tensors_.reserve(std::min<uint64_t>(n_tensors_, kReserveLimit));
    for (uint64_t t = 0; t < n_tensors_; ++t) {
      GgufTensorInfo info;
      info.info_offset = pos_;
      std::string_view name;
      RETURN_IF_ERROR(read_string(&name, "the name of tensor #" + std::to_string(t)));
      info.name = std::string(name);
      if (info.name.empty())
        return error_at(info.info_offset, "tensor #" + std::to_string(t) + " has an empty name");
      if (out_.tensor_index_.count(info.name) != 0)
        return error_at(info.info_offset, "duplicate tensor name '" + info.name + "'");
      const std::string what = "tensor '" + info.name + "'";

      const uint64_t dims_at = pos_;
      RETURN_IF_ERROR(read(&info.n_dims, "n_dims of " + what));
      if (info.n_dims == 0 || info.n_dims > kMaxDims) {
        return error_at(dims_at, what + " has n_dims = " + std::to_string(info.n_dims) +
                                     " (must be 1 to " + std::to_string(kMaxDims) + ")");
      }
      uint64_t elements = 1;
      for (uint32_t d = 0; d < info.n_dims; ++d) {
        const uint64_t ne_at = pos_;
        uint64_t ne = 0;
        RETURN_IF_ERROR(read(&ne, "ne[" + std::to_string(d) + "] of " + what));
        if (ne == 0 || ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          return error_at(ne_at, what + " has ne[" + std::to_string(d) +
                                     "] = " + std::to_string(static_cast<int64_t>(ne)) +
                                     " (dimensions must be positive)");
        }
        if (__builtin_mul_overflow(elements, ne, &elements) ||
            elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          return error_at(ne_at, what + ": the element count overflows 64 bits");
        }
        info.ne[d] = static_cast<int64_t>(ne);
      }
      info.elements = static_cast<int64_t>(elements);

      const uint64_t type_at = pos_;
      RETURN_IF_ERROR(read(&info.type, "the type of " + what));
      const auto traits = ggml_type_traits(info.type);
      if (!traits) {
        return error_at(type_at, what + " has unknown ggml type " + std::to_string(info.type));
      }
      if (info.ne[0] % traits->block_elements != 0) {
        return error_at(type_at, what + " has ne[0] = " + std::to_string(info.ne[0]) +
                                     ", not a multiple of the " + std::string(traits->name) +
                                     " block size " + std::to_string(traits->block_elements));
      }
      const uint64_t blocks = elements / static_cast<uint64_t>(traits->block_elements);
      if (__builtin_mul_overflow(blocks, static_cast<uint64_t>(traits->block_bytes), &info.bytes)) {
        return error_at(type_at, what + ": the byte size overflows 64 bits");
      }

      const uint64_t offset_at = pos_;
      RETURN_IF_ERROR(read(&info.offset, "the data offset of " + what));
      if (info.offset % out_.alignment_ != 0) {
        return error_at(offset_at, what + " has data offset " + std::to_string(info.offset) +
                                       ", not a multiple of the alignment " +
                                       std::to_string(out_.alignment_));
      }
      out_.tensor_index_.emplace(info.name, out_.tensors_.size());
      out_.tensors_.push_back(std::move(info));
    }
    return ok_status();
  }

  Status check_tensor_data() {
    const uint64_t a = out_.alignment_;
    // pos_ <= file size, so this cannot overflow for any u32 alignment.
    out_.data_offset_ = (pos_ + a - 1) / a * a;
    const uint64_t size = file_.size();
    for (GgufTensorInfo& info : out_.tensors_) {
      uint64_t begin = 0;
      uint64_t end = 0;
      if (__builtin_add_overflow(out_.data_offset_, info.offset, &begin) ||
          __builtin_add_overflow(begin, info.bytes, &end) || end > size) {
        return error_at(info.info_offset,
                        "the data of tensor '" + info.name + "' (" + std::to_string(info.bytes) +
                            " bytes at data offset " + std::to_string(info.offset) +
                            ", data section at byte " + std::to_string(out_.data_offset_) +
                            ") lies outside the file (" + std::to_string(size) + " bytes)");
      }
      info.file_offset = begin;
    }
    return ok_status();
  }

  GgufFile& out_;
  const MappedFile& file_;
  uint64_t pos_ = 0;
  uint64_t n_tensors_ = 0;
  uint64_t n_kv_ = 0;
};

Result<GgufFile> GgufFile::open(const std::string& path) {
  ASSIGN_OR_RETURN(std::shared_ptr<const MappedFile> file, MappedFile::open(path));
  return parse(std::move(file));
}

Result<GgufFile> GgufFile::parse(std::shared_ptr<const MappedFile> file) {
  TESSERA_CHECK(file != nullptr, "GgufFile::parse needs a file");
  GgufFile gguf;
  gguf.file_ = std::move(file);
  GgufParser parser(gguf);
  RETURN_IF_ERROR(parser.parse());
  return gguf;
}

const GgufValue* GgufFile::find(std::string_view key) const {
  const auto it = key_index_.find(key);
  return it == key_index_.end() ? nullptr : &metadata_[it->second].value;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

Result<Tensor> GgufFile::tensor(std::string_view name) const {
  const GgufTensorInfo* info = find_tensor(name);
  if (info == nullptr) return not_found(path() + ": no tensor named '" + std::string(name) + "'");
  return tensor(*info);
}

Result<Tensor> GgufFile::tensor(const GgufTensorInfo& info) const {
  const auto dtype = ggml_type_to_dtype(info.type);
  if (!dtype) {
    return unimplemented(path() + ": tensor '" + info.name + "' has type " + info.type_name() +
                         "; tessera loads " + loadable_ggml_type_names() +
                         " (convert with `tessera quantize`, or llama.cpp's llama-quantize)");
  }
  // Block formats are read as 16-bit scales and bytes: 2-byte alignment.
  const std::size_t align = dtype_is_blocked(*dtype) ? 2 : dtype_size(*dtype);
  if (info.file_offset % align != 0) {
    return data_loss(path() + ": at byte " + std::to_string(info.info_offset) + ": tensor '" +
                     info.name + "' data starts at byte " + std::to_string(info.file_offset) +
                     ", not aligned for " + info.type_name() + " (general.alignment " +
                     std::to_string(alignment_) + " is too small)");
  }
  Tensor t;
  // The mapping is read-only; Tensor has no const flavour, so callers must
  // treat weight views as read-only (writing would fault).
  t.data = const_cast<uint8_t*>(file_->data() + info.file_offset);
  t.dtype = *dtype;
  t.rank = static_cast<int>(info.n_dims);
  int64_t step = 1;
  for (int d = t.rank - 1; d >= 0; --d) {
    // Outermost first: shape[0] is ne[n_dims - 1].
    const auto ud = static_cast<std::size_t>(d);
    t.shape[ud] = info.ne[static_cast<std::size_t>(t.rank - 1 - d)];
    t.stride[ud] = step;
    step *= t.shape[ud];
  }
  return t;
}

// ---- typed getters ----

Result<const GgufValue*> GgufFile::require(std::string_view key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return not_found(path() + ": missing key '" + std::string(key) + "'");
  return value;
}

Status GgufFile::key_error(std::string_view key, const GgufValue& value,
                           std::string_view wanted) const {
  const auto it = key_index_.find(key);
  const uint64_t offset = it == key_index_.end() ? 0 : metadata_[it->second].offset;
  return data_loss(path() + ": at byte " + std::to_string(offset) + ": key '" + std::string(key) +
                   "' is " + value.type_name() + " " + value.to_string() + ", expected " +
                   std::string(wanted));
}

namespace {

// The value of an integer-typed GgufValue if it lies in [lo, hi].
template <typename T>
bool integer_in_range(const GgufValue& v, T* out) {
  if (!v.is_integer()) return false;
  const bool is_signed = v.type == GgufType::kInt8 || v.type == GgufType::kInt16 ||
                         v.type == GgufType::kInt32 || v.type == GgufType::kInt64;
  if (is_signed) {
    if (!std::in_range<T>(v.i)) return false;
    *out = static_cast<T>(v.i);
  } else {
    if (!std::in_range<T>(v.u)) return false;
    *out = static_cast<T>(v.u);
  }
  return true;
}

}  // namespace

Result<uint32_t> GgufFile::get_u32(std::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* v, require(key));
  uint32_t out = 0;
  if (!integer_in_range(*v, &out)) return key_error(key, *v, "an integer in [0, 2^32)");
  return out;
}

Result<int32_t> GgufFile::get_i32(std::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* v, require(key));
  int32_t out = 0;
  if (!integer_in_range(*v, &out)) return key_error(key, *v, "an integer in [-2^31, 2^31)");
  return out;
}

Result<uint64_t> GgufFile::get_u64(std::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* v, require(key));
  uint64_t out = 0;
  if (!integer_in_range(*v, &out)) return key_error(key, *v, "a non-negative integer");
  return out;
}

Result<int64_t> GgufFile::get_i64(std::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* v, require(key));
  int64_t out = 0;
  if (!integer_in_range(*v, &out)) return key_error(key, *v, "an integer in [-2^63, 2^63)");
  return out;
}

Result<double> GgufFile::get_f64(std::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* v, require(key));
  if (v->type != GgufType::kFloat32 && v->type != GgufType::kFloat64)
    return key_error(key, *v, "f32 or f64");
  return v->f;
}

Result<float> GgufFile::get_f32(std::string_view key) const {
  ASSIGN_OR_RETURN(double d, get_f64(key));
  return static_cast<float>(d);
}

Result<bool> GgufFile::get_bool(std::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* v, require(key));
  if (v->type != GgufType::kBool) return key_error(key, *v, "bool");
  return v->u != 0;
}

Result<std::string> GgufFile::get_string(std::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* v, require(key));
  if (v->type != GgufType::kString) return key_error(key, *v, "string");
  return std::string(v->s);
}

Result<std::vector<std::string>> GgufFile::get_string_array(std::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* v, require(key));
  if (!v->is_array_of(GgufType::kString)) return key_error(key, *v, "array[string]");
  return std::vector<std::string>(v->strings.begin(), v->strings.end());
}

Result<std::vector<float>> GgufFile::get_f32_array(std::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* v, require(key));
  std::vector<float> out;
  if (v->is_array_of(GgufType::kFloat32)) {
    out.resize(v->count);
    std::memcpy(out.data(), v->elements, v->count * sizeof(float));
  } else if (v->is_array_of(GgufType::kFloat64)) {
    out.resize(v->count);
    for (uint64_t e = 0; e < v->count; ++e) {
      double d = 0;
      std::memcpy(&d, v->elements + e * sizeof(double), sizeof d);
      out[e] = static_cast<float>(d);
    }
  } else {
    return key_error(key, *v, "array[f32]");
  }
  return out;
}

Result<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* v, require(key));
  if (v->type != GgufType::kArray) return key_error(key, *v, "an array of integers");
  GgufValue element;
  element.type = v->element_type;
  if (!element.is_integer()) return key_error(key, *v, "an array of integers");
  const std::size_t size = gguf_type_size(v->element_type);
  std::vector<int64_t> out(v->count);
  for (uint64_t e = 0; e < v->count; ++e) {
    const uint8_t* p = v->elements + e * size;
    switch (v->element_type) {
      case GgufType::kUint8:
        out[e] = *p;
        break;
      case GgufType::kInt8:
        out[e] = static_cast<int8_t>(*p);
        break;
      case GgufType::kUint16: {
        uint16_t x;
        std::memcpy(&x, p, 2);
        out[e] = x;
        break;
      }
      case GgufType::kInt16: {
        int16_t x;
        std::memcpy(&x, p, 2);
        out[e] = x;
        break;
      }
      case GgufType::kUint32: {
        uint32_t x;
        std::memcpy(&x, p, 4);
        out[e] = x;
        break;
      }
      case GgufType::kInt32: {
        int32_t x;
        std::memcpy(&x, p, 4);
        out[e] = x;
        break;
      }
      case GgufType::kInt64: {
        int64_t x;
        std::memcpy(&x, p, 8);
        out[e] = x;
        break;
      }
      case GgufType::kUint64: {
        uint64_t x;
        std::memcpy(&x, p, 8);
        if (!std::in_range<int64_t>(x))
          return key_error(key, *v,
                           "integers below 2^63 (element " + std::to_string(e) + " is " +
                               std::to_string(x) + ")");
        out[e] = static_cast<int64_t>(x);
        break;
      }
      default:
        break;
    }
  }
  return out;
}

Result<uint32_t> GgufFile::get_u32_or(std::string_view key, uint32_t fallback) const {
  return has(key) ? get_u32(key) : Result<uint32_t>(fallback);
}
Result<float> GgufFile::get_f32_or(std::string_view key, float fallback) const {
  return has(key) ? get_f32(key) : Result<float>(fallback);
}
Result<bool> GgufFile::get_bool_or(std::string_view key, bool fallback) const {
  return has(key) ? get_bool(key) : Result<bool>(fallback);
}
Result<std::string> GgufFile::get_string_or(std::string_view key, std::string fallback) const {
  return has(key) ? get_string(key) : Result<std::string>(std::move(fallback));
}

}  // namespace tessera
