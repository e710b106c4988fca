#include "core/chat/value.h"
#include "core/chat/budget.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

namespace tessera::chat {

std::size_t Object::position(std::string_view key) const {
  if (!index_.empty()) {
    const auto it = index_.find(key);
    return it == index_.end() ? entries_.size() : it->second;
  }
  for (std::size_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].first == key) return i;
  return entries_.size();
}

const Value* Object::find(std::string_view key) const {
  const std::size_t at = position(key);
  return at < entries_.size() ? &entries_[at].second : nullptr;
}

Value* Object::find(std::string_view key) {
  const std::size_t at = position(key);
  return at < entries_.size() ? &entries_[at].second : nullptr;
}

void Object::set(std::string key, Value value) {
  if (Value* existing = find(key)) {
    *existing = std::move(value);
    return;
  }
  if (!index_.empty()) {
    index_.emplace(key, entries_.size());
  } else if (entries_.size() + 1 >= kIndexFrom) {
    for (std::size_t i = 0; i < entries_.size(); ++i) index_.emplace(entries_[i].first, i);
    index_.emplace(key, entries_.size());
  }
  entries_.emplace_back(std::move(key), std::move(value));
}

Value::~Value() {
  if (kind_ != Kind::kArray && kind_ != Kind::kObject) return;
  std::vector<Value> pending;
  release_nested(pending);
  while (!pending.empty()) {
    Value last = std::move(pending.back());
    pending.pop_back();
    last.release_nested(pending);
  }  // `last` dies holding nothing nested, so its destructor stops here
}

void Value::release_nested(std::vector<Value>& out) {
  const auto keep = [&](Value& item) {
    if (item.is_array() || item.is_object()) out.push_back(std::exchange(item, Value()));
  };
  if (kind_ == Kind::kArray) {
    const auto& items = std::get<std::shared_ptr<Array>>(data_);
    if (items.use_count() != 1) return;  // another holder keeps it (or it was moved from)
    for (Value& item : *items) keep(item);
  } else if (kind_ == Kind::kObject) {
    const auto& entries = std::get<std::shared_ptr<Object>>(data_);
    if (entries.use_count() != 1) return;
    for (auto& [key, item] : entries->mutable_entries()) keep(item);
  }
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}

Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.data_ = b;
  return v;
}

Value Value::integer(int64_t i) {
  Value v;
  v.kind_ = Kind::kInt;
  v.data_ = i;
  return v;
}

Value Value::floating(double d) {
  Value v;
  v.kind_ = Kind::kFloat;
  v.data_ = d;
  return v;
}

Value Value::string(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.data_ = std::make_shared<const std::string>(std::move(s));
  return v;
}

Value Value::array(Array items) {
  Value v;
  v.kind_ = Kind::kArray;
  v.data_ = std::make_shared<Array>(std::move(items));
  return v;
}

Value Value::object() {
  return object(Object());
}

Value Value::object(Object entries) {
  Value v;
  v.kind_ = Kind::kObject;
  v.data_ = std::make_shared<Object>(std::move(entries));
  return v;
}

Value Value::name_space(Object entries) {
  Value v = object(std::move(entries));
  v.namespace_ = true;
  return v;
}

Value Value::function(std::string name) {
  Value v;
  v.kind_ = Kind::kFunction;
  v.data_ = std::make_shared<const std::string>(std::move(name));
  return v;
}

double Value::as_double() const {
  switch (kind_) {
    case Kind::kBool:
      return as_bool() ? 1.0 : 0.0;
    case Kind::kInt:
      return static_cast<double>(as_int());
    case Kind::kFloat:
      return as_float();
    default:
      return 0.0;
  }
}

const void* Value::container_identity() const {
  if (is_array()) return std::get<std::shared_ptr<Array>>(data_).get();
  if (is_object()) return std::get<std::shared_ptr<Object>>(data_).get();
  return nullptr;
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return as_bool();
    case Kind::kInt:
      return as_int() != 0;
    case Kind::kFloat:
      return as_float() != 0.0;
    case Kind::kString:
      return !as_string().empty();
    case Kind::kArray:
      return !as_array().empty();
    case Kind::kObject:
      return is_namespace() || as_object().size() > 0;
    case Kind::kFunction:
      return true;
  }
  return false;
}

std::string_view Value::type_name() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "undefined";
    case Kind::kNone:
      return "none";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "string";
    case Kind::kArray:
      return "list";
    case Kind::kObject:
      return is_namespace() ? "namespace" : "dict";
    case Kind::kFunction:
      return "function";
  }
  return "?";
}

Value& Value::set(std::string key, Value value) {
  TESSERA_CHECK(is_object(), "Value::set on a non-object");
  mutable_object().set(std::move(key), std::move(value));
  return *this;
}

Value& Value::push_back(Value value) {
  TESSERA_CHECK(is_array(), "Value::push_back on a non-array");
  mutable_array().push_back(std::move(value));
  return *this;
}

namespace {

// One level of ==; containers of equal shape queue their items in `pending`.
// Strings of the same length cost their bytes (comparing them reads them).
Result<bool> shallow_equal(const Value& a, const Value& b,
                           std::vector<std::pair<const Value*, const Value*>>& pending,
                           Budget& budget) {
  const bool a_num = a.is_number() || a.is_bool();
  const bool b_num = b.is_number() || b.is_bool();
  if (a_num && b_num) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    const int64_t x = a.is_bool() ? a.as_bool() : a.as_int();
    const int64_t y = b.is_bool() ? b.as_bool() : b.as_int();
    return x == y;
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kString:
    case Value::Kind::kFunction:
      if (a.as_string().size() != b.as_string().size()) return false;
      RETURN_IF_ERROR(budget.charge(a.as_string().size() / Budget::kBytesPerStep));
      return a.as_string() == b.as_string();
    case Value::Kind::kArray: {
      if (a.container_identity() == b.container_identity()) return true;
      const Array& x = a.as_array();
      const Array& y = b.as_array();
      if (x.size() != y.size()) return false;
      for (std::size_t i = 0; i < x.size(); ++i) pending.emplace_back(&x[i], &y[i]);
      return true;
    }
    case Value::Kind::kObject: {
      if (a.container_identity() == b.container_identity()) return true;
      const Object& x = a.as_object();
      const Object& y = b.as_object();
      if (x.size() != y.size() || a.is_namespace() || b.is_namespace()) return false;
      for (const auto& [key, value] : x.entries()) {
        const Value* other = y.find(key);
        if (!other) return false;
        pending.emplace_back(&value, other);
      }
      return true;
    }
    default:
      return false;
  }
}

}  // namespace

Result<bool> values_equal(const Value& a, const Value& b, Budget& budget) {
  std::vector<std::pair<const Value*, const Value*>> pending{{&a, &b}};
  // Each pair of containers once: shared items would otherwise be compared
  // once per path to them, which doubles per level in x = [x, x].
  std::set<std::pair<const void*, const void*>> compared;
  while (!pending.empty()) {
    const auto [x, y] = pending.back();
    pending.pop_back();
    RETURN_IF_ERROR(budget.charge());
    if (x->container_identity() && y->container_identity() &&
        !compared.emplace(x->container_identity(), y->container_identity()).second)
      continue;
    ASSIGN_OR_RETURN(const bool equal, shallow_equal(*x, *y, pending, budget));
    if (!equal) return false;
  }
  return true;
}

namespace {

Value deep_copy_at(const Value& value, int depth) {
  if (depth > 256) return value;
  if (value.is_array()) {
    Array items;
    items.reserve(value.as_array().size());
    for (const Value& item : value.as_array()) items.push_back(deep_copy_at(item, depth + 1));
    return Value::array(std::move(items));
  }
  if (value.is_object()) {
    Object entries;
    for (const auto& [key, item] : value.as_object().entries())
      entries.set(key, deep_copy_at(item, depth + 1));
    return value.is_namespace() ? Value::name_space(std::move(entries))
                                : Value::object(std::move(entries));
  }
  return value;
}

constexpr int kMaxJsonDepth = 256;

Result<Value> from_json(const nlohmann::ordered_json& j, int depth) {
  if (depth > kMaxJsonDepth)
    return invalid_argument("JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                            " levels; chat messages never need that");
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value::boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value::integer(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value::floating(static_cast<double>(u));
      return Value::integer(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value::floating(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value::string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      Array items;
      items.reserve(j.size());
      for (const auto& element : j) {
        ASSIGN_OR_RETURN(Value item, from_json(element, depth + 1));
        items.push_back(std::move(item));
      }
      return Value::array(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Object entries;
      for (const auto& [key, element] : j.items()) {
        ASSIGN_OR_RETURN(Value item, from_json(element, depth + 1));
        entries.set(key, std::move(item));
      }
      return Value::object(std::move(entries));
    }
    default:
      return invalid_argument("JSON value of an unsupported type (binary)");
  }
}

// nlohmann's parser is recursive; refuse deep nesting before handing it over.
bool nesting_within(std::string_view json, int limit) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

}  // namespace

Value deep_copy(const Value& value) {
  return deep_copy_at(value, 0);
}

Result<Value> value_from_json(std::string_view json) {
  if (!nesting_within(json, kMaxJsonDepth))
    return invalid_argument("JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                            " levels; chat messages never need that");
  auto parsed = nlohmann::ordered_json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded())
    return invalid_argument(
        "malformed JSON for chat template values (messages, tools or extra "
        "variables); check it with a JSON validator");
  return from_json(parsed, 0);
}

std::string python_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0.0) return std::signbit(d) ? "-0.0" : "0.0";
  // Shortest round-trip digits, then Python's layout: positional when the
  // decimal exponent is in [-4, 16), scientific otherwise.
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, d, std::chars_format::scientific);
  if (ec != std::errc()) return "nan";
  std::string sci(buffer, end);
  const bool negative = sci[0] == '-';
  if (negative) sci.erase(0, 1);
  const std::size_t e_pos = sci.find('e');
  std::string digits = sci.substr(0, e_pos);
  const int exponent = std::stoi(sci.substr(e_pos + 1));
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  std::string out;
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out = "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
    } else if (static_cast<std::size_t>(exponent) + 1 >= digits.size()) {
      out =
          digits + std::string(static_cast<std::size_t>(exponent) + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, static_cast<std::size_t>(exponent) + 1) + "." +
            digits.substr(static_cast<std::size_t>(exponent) + 1);
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char exp_text[16];
    std::snprintf(exp_text, sizeof exp_text, "e%c%02d", exponent < 0 ? '-' : '+',
                  exponent < 0 ? -exponent : exponent);
    out += exp_text;
  }
  return negative ? "-" + out : out;
}

}  // namespace tessera::chat
