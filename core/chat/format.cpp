#include "core/chat/format.h"

#include <algorithm>
#include <cstdio>

namespace tessera::chat {
namespace {

constexpr int kMaxDepth = 128;

void repr_string(const std::string& s, std::string& out) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  out += quote;
  for (unsigned char c : s) {
    if (c == static_cast<unsigned char>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += quote;
}

void append_repr(const Value& value, std::string& out, int depth) {
  if (depth > kMaxDepth) {
    out += "...";
    return;
  }
  switch (value.kind()) {
    case Value::Kind::kString:
      repr_string(value.as_string(), out);
      return;
    case Value::Kind::kArray: {
      out += '[';
      bool first = true;
      for (const Value& item : value.as_array()) {
        if (!first) out += ", ";
        first = false;
        append_repr(item, out, depth + 1);
      }
      out += ']';
      return;
    }
    case Value::Kind::kObject: {
      if (value.is_namespace()) out += "<Namespace ";
      out += '{';
      bool first = true;
      for (const auto& [key, item] : value.as_object().entries()) {
        if (!first) out += ", ";
        first = false;
        repr_string(key, out);
        out += ": ";
        append_repr(item, out, depth + 1);
      }
      out += '}';
      if (value.is_namespace()) out += '>';
      return;
    }
    case Value::Kind::kUndefined:
      out += "Undefined";
      return;
    case Value::Kind::kFunction:
      out += "<function " + value.as_string() + ">";
      return;
    default:
      out += to_output(value);
  }
}

void json_string(const std::string& s, std::string& out) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          char hex[8];
          std::snprintf(hex, sizeof hex, "\\u%04x", c);
          out += hex;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

Status append_json(const Value& value, std::optional<int> indent, bool sort_keys, int depth,
                   std::string& out) {
  if (depth > kMaxDepth)
    return invalid_argument("tojson: value nested deeper than " + std::to_string(kMaxDepth));
  const auto newline = [&](int level) {
    out += '\n';
    out.append(static_cast<std::size_t>(*indent) * static_cast<std::size_t>(level), ' ');
  };
  switch (value.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      out += "null";
      return ok_status();
    case Value::Kind::kFunction:
      return invalid_argument("tojson: a function is not JSON");
    case Value::Kind::kBool:
      out += value.as_bool() ? "true" : "false";
      return ok_status();
    case Value::Kind::kInt:
      out += std::to_string(value.as_int());
      return ok_status();
    case Value::Kind::kFloat: {
      const std::string r = python_float_repr(value.as_float());
      out += r == "nan" ? "NaN" : r == "inf" ? "Infinity" : r == "-inf" ? "-Infinity" : r;
      return ok_status();
    }
    case Value::Kind::kString:
      json_string(value.as_string(), out);
      return ok_status();
    case Value::Kind::kArray: {
      const Array& items = value.as_array();
      if (items.empty()) {
        out += "[]";
        return ok_status();
      }
      out += '[';
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += indent ? "," : ", ";
        if (indent) newline(depth + 1);
        RETURN_IF_ERROR(append_json(items[i], indent, sort_keys, depth + 1, out));
      }
      if (indent) newline(depth);
      out += ']';
      return ok_status();
    }
    case Value::Kind::kObject: {
      std::vector<const std::pair<std::string, Value>*> entries;
      for (const auto& entry : value.as_object().entries()) entries.push_back(&entry);
      if (sort_keys)
        std::stable_sort(entries.begin(), entries.end(),
                         [](auto* a, auto* b) { return a->first < b->first; });
      if (entries.empty()) {
        out += "{}";
        return ok_status();
      }
      out += '{';
      for (std::size_t i = 0; i < entries.size(); ++i) {
        if (i > 0) out += indent ? "," : ", ";
        if (indent) newline(depth + 1);
        json_string(entries[i]->first, out);
        out += ": ";
        RETURN_IF_ERROR(append_json(entries[i]->second, indent, sort_keys, depth + 1, out));
      }
      if (indent) newline(depth);
      out += '}';
      return ok_status();
    }
  }
  return ok_status();
}

}  // namespace

std::string to_output(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined:
      return "";
    case Value::Kind::kNone:
      return "None";
    case Value::Kind::kBool:
      return value.as_bool() ? "True" : "False";
    case Value::Kind::kInt:
      return std::to_string(value.as_int());
    case Value::Kind::kFloat:
      return python_float_repr(value.as_float());
    case Value::Kind::kString:
      return value.as_string();
    default: {
      std::string out;
      append_repr(value, out, 0);
      return out;
    }
  }
}

std::string to_repr(const Value& value) {
  std::string out;
  append_repr(value, out, 0);
  return out;
}

Result<std::string> to_json(const Value& value, std::optional<int> indent, bool sort_keys) {
  std::string out;
  if (indent && *indent < 0) indent = 0;
  RETURN_IF_ERROR(append_json(value, indent, sort_keys, 0, out));
  return out;
}

std::vector<std::size_t> utf8_char_offsets(const std::string& s) {
  std::vector<std::size_t> offsets;
  offsets.reserve(s.size() + 1);
  std::size_t i = 0;
  while (i < s.size()) {
    offsets.push_back(i);
    const unsigned char c = static_cast<unsigned char>(s[i]);
    std::size_t length = c < 0x80           ? 1
                         : (c >> 5) == 0x6  ? 2
                         : (c >> 4) == 0xE  ? 3
                         : (c >> 3) == 0x1E ? 4
                                            : 1;
    if (i + length > s.size()) length = 1;
    for (std::size_t k = 1; k < length; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) length = 1;
    i += length;
  }
  offsets.push_back(s.size());
  return offsets;
}

}  // namespace tessera::chat
