#include "core/chat/format.h"

#include <algorithm>
#include <cstdio>

namespace tessera::chat {

void TextSink::append(std::string_view s) {
  if (!failure_.ok()) return;
  if (s.size() > max_bytes_ - std::min(max_bytes_, out_.size())) {
    if (budget_) failure_ = budget_->check_bytes(out_.size() + s.size());
    if (failure_.ok())  // a sink smaller than the budget's limit
      failure_ = resource_exhausted("text passed " + std::to_string(max_bytes_) + " bytes");
    return;
  }
  out_.append(s);
}

Status TextSink::visit() {
  if (!failure_.ok()) return failure_;
  if (budget_) failure_ = budget_->charge(1);
  return failure_;
}

namespace {

constexpr int kMaxDepth = 128;

void repr_string(const std::string& s, TextSink& out) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  out.append(quote);
  // Runs of plain bytes are appended whole (one size check each).
  std::size_t plain = 0;
  const auto flush = [&](std::size_t end) {
    out.append(std::string_view(s).substr(plain, end - plain));
  };
  for (std::size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const bool escaped =
        c == static_cast<unsigned char>(quote) || c == '\\' || c < 0x20 || c == 0x7f;
    if (!escaped) continue;
    flush(i);
    plain = i + 1;
    if (c == static_cast<unsigned char>(quote) || c == '\\') {
      out.append('\\');
      out.append(static_cast<char>(c));
    } else if (c == '\n') {
      out.append("\\n");
    } else if (c == '\r') {
      out.append("\\r");
    } else if (c == '\t') {
      out.append("\\t");
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out.append(hex);
    }
  }
  flush(s.size());
  out.append(quote);
}

Status append_repr_at(const Value& value, TextSink& out, int depth) {
  RETURN_IF_ERROR(out.visit());
  if (depth > kMaxDepth) {
    out.append("...");
    return out.status();
  }
  switch (value.kind()) {
    case Value::Kind::kString:
      repr_string(value.as_string(), out);
      break;
    case Value::Kind::kArray: {
      out.append('[');
      bool first = true;
      for (const Value& item : value.as_array()) {
        if (!first) out.append(", ");
        first = false;
        RETURN_IF_ERROR(append_repr_at(item, out, depth + 1));
      }
      out.append(']');
      break;
    }
    case Value::Kind::kObject: {
      if (value.is_namespace()) out.append("<Namespace ");
      out.append('{');
      bool first = true;
      for (const auto& [key, item] : value.as_object().entries()) {
        if (!first) out.append(", ");
        first = false;
        repr_string(key, out);
        out.append(": ");
        RETURN_IF_ERROR(append_repr_at(item, out, depth + 1));
      }
      out.append('}');
      if (value.is_namespace()) out.append('>');
      break;
    }
    case Value::Kind::kUndefined:
      out.append("Undefined");
      break;
    case Value::Kind::kFunction:
      out.append("<function " + value.as_string() + ">");
      break;
    default:
      out.append(scalar_output(value));
  }
  return out.status();
}

void json_string(const std::string& s, TextSink& out) {
  out.append('"');
  std::size_t plain = 0;
  const auto flush = [&](std::size_t end) {
    out.append(std::string_view(s).substr(plain, end - plain));
  };
  for (std::size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    flush(i);
    plain = i + 1;
    switch (c) {
      case '"':
        out.append("\\\"");
        break;
      case '\\':
        out.append("\\\\");
        break;
      case '\n':
        out.append("\\n");
        break;
      case '\r':
        out.append("\\r");
        break;
      case '\t':
        out.append("\\t");
        break;
      case '\b':
        out.append("\\b");
        break;
      case '\f':
        out.append("\\f");
        break;
      default: {
        char hex[8];
        std::snprintf(hex, sizeof hex, "\\u%04x", c);
        out.append(hex);
      }
    }
  }
  flush(s.size());
  out.append('"');
}

Status append_json_at(const Value& value, std::optional<int> indent, bool sort_keys, int depth,
                      TextSink& out) {
  RETURN_IF_ERROR(out.visit());
  if (depth > kMaxDepth)
    return invalid_argument("tojson: value nested deeper than " + std::to_string(kMaxDepth));
  const auto newline = [&](int level) {
    out.append('\n');
    const std::size_t spaces = static_cast<std::size_t>(*indent) * static_cast<std::size_t>(level);
    for (std::size_t i = 0; i < spaces && out.status().ok(); i += 64)
      out.append(std::string(std::min<std::size_t>(64, spaces - i), ' '));
  };
  switch (value.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      out.append("null");
      break;
    case Value::Kind::kFunction:
      return invalid_argument("tojson: a function is not JSON");
    case Value::Kind::kBool:
      out.append(value.as_bool() ? "true" : "false");
      break;
    case Value::Kind::kInt:
      out.append(std::to_string(value.as_int()));
      break;
    case Value::Kind::kFloat: {
      const std::string r = python_float_repr(value.as_float());
      out.append(r == "nan" ? "NaN" : r == "inf" ? "Infinity" : r == "-inf" ? "-Infinity" : r);
      break;
    }
    case Value::Kind::kString:
      json_string(value.as_string(), out);
      break;
    case Value::Kind::kArray: {
      const Array& items = value.as_array();
      if (items.empty()) {
        out.append("[]");
        break;
      }
      out.append('[');
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out.append(indent ? "," : ", ");
        if (indent) newline(depth + 1);
        RETURN_IF_ERROR(append_json_at(items[i], indent, sort_keys, depth + 1, out));
      }
      if (indent) newline(depth);
      out.append(']');
      break;
    }
    case Value::Kind::kObject: {
      std::vector<const std::pair<std::string, Value>*> entries;
      for (const auto& entry : value.as_object().entries()) entries.push_back(&entry);
      if (sort_keys)
        std::stable_sort(entries.begin(), entries.end(),
                         [](auto* a, auto* b) { return a->first < b->first; });
      if (entries.empty()) {
        out.append("{}");
        break;
      }
      out.append('{');
      for (std::size_t i = 0; i < entries.size(); ++i) {
        if (i > 0) out.append(indent ? "," : ", ");
        if (indent) newline(depth + 1);
        json_string(entries[i]->first, out);
        out.append(": ");
        RETURN_IF_ERROR(append_json_at(entries[i]->second, indent, sort_keys, depth + 1, out));
      }
      if (indent) newline(depth);
      out.append('}');
      break;
    }
  }
  return out.status();
}

}  // namespace

std::string scalar_output(const Value& value) {
  switch (value.kind()) {
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
    default:
      return "";
  }
}

Status append_output(const Value& value, TextSink& out) {
  if (value.is_array() || value.is_object() || value.is_function()) return append_repr(value, out);
  RETURN_IF_ERROR(out.visit());
  if (value.is_string())
    out.append(value.as_string());
  else if (!value.is_undefined())
    out.append(scalar_output(value));
  return out.status();
}

Status append_repr(const Value& value, TextSink& out) {
  return append_repr_at(value, out, 0);
}

Status append_json(const Value& value, std::optional<int> indent, bool sort_keys, TextSink& out) {
  if (indent && *indent < 0) indent = 0;
  return append_json_at(value, indent, sort_keys, 0, out);
}

Result<std::string> to_output(const Value& value, Budget& budget) {
  std::string text;
  TextSink out(text, budget.max_bytes(), &budget);
  RETURN_IF_ERROR(append_output(value, out));
  return text;
}

Result<std::string> to_json(const Value& value, std::optional<int> indent, bool sort_keys,
                            Budget& budget) {
  std::string text;
  TextSink out(text, budget.max_bytes(), &budget);
  RETURN_IF_ERROR(append_json(value, indent, sort_keys, out));
  return text;
}

std::string short_repr(const Value& value) {
  std::string text;
  TextSink out(text, 200, nullptr);
  if (!append_repr(value, out).ok()) text += "...";
  return text;
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
