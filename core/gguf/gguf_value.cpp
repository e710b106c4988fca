// GgufValue and GgufTensorInfo helpers: type names and the printable forms
// that `tessera inspect` shows.
#include <cstring>

#include "core/gguf/gguf_file.h"
#include "core/util/strings.h"

namespace tessera {
namespace {

// Arrays longer than this print as "[N type: first, second, third, ...]".
constexpr uint64_t kMaxArrayElementsShown = 8;
constexpr uint64_t kSummaryElements = 3;
constexpr std::size_t kMaxStringChars = 120;        // a lone string value
constexpr std::size_t kMaxElementStringChars = 40;  // a string inside an array

std::string format_double(double v, bool as_float) {
  return as_float ? shortest_decimal(static_cast<float>(v)) : shortest_decimal(v);
}

// Quoted, with quotes, backslashes and control bytes escaped; bytes >= 0x80
// pass through so UTF-8 pieces such as "▁the" stay readable.
std::string quote(std::string_view s, std::size_t max_chars) {
  std::string out = "\"";
  const std::size_t n = std::min(s.size(), max_chars);
  for (std::size_t k = 0; k < n; ++k) {
    const auto c = static_cast<unsigned char>(s[k]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
  if (s.size() > max_chars) out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
}

// One fixed-size element of an array, printed.
std::string element_to_string(GgufType type, const uint8_t* p) {
  auto load = [p](auto v) {
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  switch (type) {
    case GgufType::kUint8:
      return std::to_string(load(uint8_t{}));
    case GgufType::kInt8:
      return std::to_string(load(int8_t{}));
    case GgufType::kUint16:
      return std::to_string(load(uint16_t{}));
    case GgufType::kInt16:
      return std::to_string(load(int16_t{}));
    case GgufType::kUint32:
      return std::to_string(load(uint32_t{}));
    case GgufType::kInt32:
      return std::to_string(load(int32_t{}));
    case GgufType::kUint64:
      return std::to_string(load(uint64_t{}));
    case GgufType::kInt64:
      return std::to_string(load(int64_t{}));
    case GgufType::kFloat32:
      return format_double(load(float{}), true);
    case GgufType::kFloat64:
      return format_double(load(double{}), false);
    case GgufType::kBool:
      return *p ? "true" : "false";
    case GgufType::kString:
    case GgufType::kArray:
      break;
  }
  return "?";
}

}  // namespace

bool GgufValue::is_integer() const {
  switch (type) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kUint16:
    case GgufType::kInt16:
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kUint64:
    case GgufType::kInt64:
      return true;
    default:
      return false;
  }
}

std::string GgufValue::type_name() const {
  if (type != GgufType::kArray) return std::string(gguf_type_name(type));
  return "array[" + std::string(gguf_type_name(element_type)) + "]";
}

std::string GgufValue::to_string() const {
  switch (type) {
    case GgufType::kUint8:
    case GgufType::kUint16:
    case GgufType::kUint32:
    case GgufType::kUint64:
      return std::to_string(u);
    case GgufType::kInt8:
    case GgufType::kInt16:
    case GgufType::kInt32:
    case GgufType::kInt64:
      return std::to_string(i);
    case GgufType::kFloat32:
      return format_double(f, true);
    case GgufType::kFloat64:
      return format_double(f, false);
    case GgufType::kBool:
      return u ? "true" : "false";
    case GgufType::kString:
      return quote(s, kMaxStringChars);
    case GgufType::kArray:
      break;
  }
  const bool summarise = count > kMaxArrayElementsShown;
  const uint64_t shown = summarise ? kSummaryElements : count;
  std::string out = "[";
  if (summarise) {
    const std::string element_name =
        element_type == GgufType::kString ? "strings" : std::string(gguf_type_name(element_type));
    out += std::to_string(count) + " " + element_name + ": ";
  }
  const std::size_t size = gguf_type_size(element_type);
  for (uint64_t e = 0; e < shown; ++e) {
    if (e) out += ", ";
    out += element_type == GgufType::kString ? quote(strings[e], kMaxElementStringChars)
                                             : element_to_string(element_type, elements + e * size);
  }
  if (summarise) out += ", ...";
  return out + "]";
}

std::vector<int64_t> GgufTensorInfo::shape() const {
  std::vector<int64_t> out;
  for (uint32_t d = n_dims; d-- > 0;) out.push_back(ne[d]);
  return out;
}

std::string GgufTensorInfo::shape_string() const {
  std::string out = "[";
  for (uint32_t d = n_dims; d-- > 0;) {
    out += std::to_string(ne[d]);
    if (d) out += ", ";
  }
  return out + "]";
}

}  // namespace tessera
