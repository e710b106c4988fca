// The values a chat template computes with: Jinja's (Python's) data model cut
// down to what chat templates use. Arrays, objects and namespaces are shared by
// reference as in Python, so `ns.x = ...` and `list.append(...)` are seen by
// every holder; strings are immutable and shared too; everything else is a
// plain value.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "core/status/status.h"

namespace tessera::chat {

class Value;
using Array = std::vector<Value>;

class Object;
class Budget;

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kArray, kObject, kFunction };

  Value() = default;  // undefined
  Value(const Value&) = default;
  Value(Value&&) noexcept = default;
  Value& operator=(const Value&) = default;
  Value& operator=(Value&&) noexcept = default;
  // Lists and dicts nested inside are torn down from a worklist, not by
  // recursion: a template can nest values as deep as its step budget lets
  // it, far past what the stack holds.
  ~Value();
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value floating(double d);
  static Value string(std::string s);
  static Value array(Array items = {});
  static Value object();
  static Value object(Object entries);
  // A namespace(...) object: an object whose attributes `set` may assign.
  static Value name_space(Object entries);
  // A global function or a template macro, by name (what `x is defined`
  // sees for strftime_now and friends); the renderer resolves the call.
  static Value function(std::string name);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return is_int() || is_float(); }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_object() const { return kind_ == Kind::kObject; }
  bool is_namespace() const { return kind_ == Kind::kObject && namespace_; }
  bool is_function() const { return kind_ == Kind::kFunction; }

  bool as_bool() const { return std::get<bool>(data_); }
  int64_t as_int() const { return std::get<int64_t>(data_); }
  double as_float() const { return std::get<double>(data_); }
  // A number (int, float or bool) as a double.
  double as_double() const;
  // The text of a string, or the name of a function.
  const std::string& as_string() const {
    return *std::get<std::shared_ptr<const std::string>>(data_);
  }
  const Array& as_array() const { return *std::get<std::shared_ptr<Array>>(data_); }
  Array& mutable_array() const { return *std::get<std::shared_ptr<Array>>(data_); }
  const Object& as_object() const { return *std::get<std::shared_ptr<Object>>(data_); }
  Object& mutable_object() const { return *std::get<std::shared_ptr<Object>>(data_); }
  // The identity of an array or object (for cycle checks); null otherwise.
  const void* container_identity() const;

  // Python truthiness: empty strings, arrays and objects, 0, none and
  // undefined are false.
  bool truthy() const;
  // The Jinja type name used in error messages ("string", "list", ...).
  std::string_view type_name() const;

  // Convenience for C++ callers building contexts.
  Value& set(std::string key, Value value);  // this must be an object
  Value& push_back(Value value);             // this must be an array

 private:
  // Moves the lists and dicts this one holds into `out` when this is their
  // last holder (so they die there, not inside this one's destructor).
  void release_nested(std::vector<Value>& out);

  Kind kind_ = Kind::kUndefined;
  bool namespace_ = false;
  // Strings are immutable and shared, so copying a value (into a list, a
  // loop variable, a macro's scope) is O(1) whatever its length.
  std::variant<std::monostate, bool, int64_t, double, std::shared_ptr<const std::string>,
               std::shared_ptr<Array>, std::shared_ptr<Object>>
      data_;
};

// An insertion-ordered string-keyed map (Python dicts keep insertion order, and
// tojson prints keys in that order). Lookup is linear while the map is small
// and hashed past kIndexFrom keys: a dict from the request, or a scope of
// many variables, must not make every lookup cost its size.
class Object {
 public:
  const Value* find(std::string_view key) const;
  Value* find(std::string_view key);
  void set(std::string key, Value value);  // replaces in place or appends
  const std::vector<std::pair<std::string, Value>>& entries() const { return entries_; }
  // For changing values in place; keys must stay as they are (the index).
  std::vector<std::pair<std::string, Value>>& mutable_entries() { return entries_; }
  std::size_t size() const { return entries_.size(); }

 private:
  static constexpr std::size_t kIndexFrom = 32;
  std::size_t position(std::string_view key) const;  // entries_.size() when absent

  std::vector<std::pair<std::string, Value>> entries_;
  struct KeyHash {
    using is_transparent = void;  // find by string_view, no copy of the key
    std::size_t operator()(std::string_view key) const {
      return std::hash<std::string_view>{}(key);
    }
  };
  std::unordered_map<std::string, std::size_t, KeyHash, std::equal_to<>>
      index_;  // empty below kIndexFrom keys
};

// Equality as Python's ==: numbers compare by value across int/float/bool,
// containers element by element (with a worklist: values may nest deeply),
// each pair of items compared costing a step.
Result<bool> values_equal(const Value& a, const Value& b, Budget& budget);

// A copy that shares no list or dict with `value` (below 256 levels), so a
// template's append or namespace assignment never reaches the caller's data.
Value deep_copy(const Value& value);

// Parses JSON into a Value; objects keep their key order, integers that fit
// int64 stay integers. InvalidArgument on malformed JSON or nesting deeper
// than 256.
Result<Value> value_from_json(std::string_view json);

// Python's repr() of a float ("1.0", "0.1", "1e+16").
std::string python_float_repr(double d);

}  // namespace tessera::chat
