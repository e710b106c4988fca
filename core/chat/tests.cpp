// The tests (x is name) of builtins.h, with Jinja2's semantics.
#include <set>

#include "core/chat/builtins.h"

namespace tessera::chat {
namespace {

bool all_cased(const std::string& s, bool lower) {
  for (char c : s)
    if (lower ? (c >= 'A' && c <= 'Z') : (c >= 'a' && c <= 'z')) return false;
  return true;
}

}  // namespace

bool is_known_test(std::string_view name) {
  static const std::set<std::string_view> kTests = {
      "defined",  "undefined", "none",    "string", "number", "integer", "float", "mapping",
      "iterable", "sequence",  "boolean", "true",   "false",  "odd",     "even",  "divisibleby",
      "equalto",  "eq",        "==",      "ne",     "!=",     "lt",      "<",     "gt",
      ">",        "in",        "lower",   "upper",  "sameas", "callable"};
  return kTests.count(name) > 0;
}

Result<bool> apply_test(std::string_view name, const Value& v, const CallArgs& args,
                        const BuiltinEnv& env) {
  const Value& arg = args.get(0, "other");
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "mapping") return v.is_object();
  if (name == "iterable") return v.is_array() || v.is_object() || v.is_string();
  if (name == "sequence") return v.is_array() || v.is_object() || v.is_string();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "callable") return v.is_function();
  if (name == "lower" || name == "upper") {
    if (!v.is_string()) return false;
    return all_cased(v.as_string(), name == "lower");
  }
  if (name == "odd" || name == "even" || name == "divisibleby") {
    if (!v.is_int()) return invalid_argument("test '" + std::string(name) + "' needs an integer");
    if (name == "divisibleby") {
      if (!arg.is_int() || arg.as_int() == 0)
        return invalid_argument("divisibleby needs a non-zero integer argument");
      if (arg.as_int() == -1) return true;
      return v.as_int() % arg.as_int() == 0;
    }
    return (v.as_int() % 2 != 0) == (name == "odd");
  }
  if (name == "equalto" || name == "eq" || name == "==") return values_equal(v, arg, *env.budget);
  if (name == "ne" || name == "!=") {
    ASSIGN_OR_RETURN(const bool equal, values_equal(v, arg, *env.budget));
    return !equal;
  }
  if (name == "sameas") {
    if (v.container_identity()) return v.container_identity() == arg.container_identity();
    if (v.kind() != arg.kind()) return false;
    return values_equal(v, arg, *env.budget);
  }
  if (name == "lt" || name == "<" || name == "gt" || name == ">") {
    if (!(v.is_number() && arg.is_number()))
      return invalid_argument("test '" + std::string(name) + "' compares numbers");
    return (name == "lt" || name == "<") ? v.as_double() < arg.as_double()
                                         : v.as_double() > arg.as_double();
  }
  if (name == "in") {
    if (arg.is_string() && v.is_string())
      return SubstringSearch(v.as_string()).find(arg.as_string()) != std::string::npos;
    if (arg.is_array()) {
      for (const Value& item : arg.as_array()) {
        ASSIGN_OR_RETURN(const bool equal, values_equal(item, v, *env.budget));
        if (equal) return true;
      }
      return false;
    }
    if (arg.is_object()) return v.is_string() && arg.as_object().find(v.as_string()) != nullptr;
    return invalid_argument("test 'in' needs a string, list or dict to look in");
  }
  return unimplemented("no test named '" + std::string(name) + "'");
}

}  // namespace tessera::chat
