// The filters (x | name(...)) of builtins.h, with Jinja2's semantics.
#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_set>
#include <utility>

#include "core/chat/builtins.h"
#include "core/chat/format.h"

namespace tessera::chat {
namespace {

Result<Value> attribute_of(const Value& item, const std::string& path) {
  Value current = item;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t dot = path.find('.', start);
    if (dot == std::string::npos) dot = path.size();
    const std::string part = path.substr(start, dot - start);
    if (current.is_object()) {
      const Value* found = current.as_object().find(part);
      current = found ? *found : Value();
    } else if (current.is_array() && !part.empty() &&
               std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      const std::size_t index = std::stoull(part.size() > 18 ? "999999999999999999" : part);
      current = index < current.as_array().size() ? current.as_array()[index] : Value();
    } else {
      current = Value();
    }
    start = dot + 1;
  }
  return current;
}

// The items a filter walks, copied: a step each.
Result<Array> iterable_items(const Value& v, std::string_view filter, const BuiltinEnv& env) {
  if (v.is_array()) {
    RETURN_IF_ERROR(env.budget->charge_items(v.as_array().size()));
    return v.as_array();
  }
  if (v.is_undefined()) return Array{};
  if (v.is_object()) {
    RETURN_IF_ERROR(env.budget->charge_items(v.as_object().size()));
    Array keys;
    for (const auto& [key, value] : v.as_object().entries()) keys.push_back(Value::string(key));
    return keys;
  }
  if (v.is_string()) {
    const std::string& s = v.as_string();
    const auto offsets = utf8_char_offsets(s);
    RETURN_IF_ERROR(env.budget->charge_items(offsets.size() - 1));
    Array chars;
    for (std::size_t i = 0; i + 1 < offsets.size(); ++i)
      chars.push_back(Value::string(s.substr(offsets[i], offsets[i + 1] - offsets[i])));
    return chars;
  }
  return invalid_argument("filter '" + std::string(filter) + "' needs a list, not " +
                          std::string(v.type_name()));
}

// Orders values the way Python's sort does for what templates sort:
// numbers with numbers, strings with strings (optionally case-folded).
Result<bool> less_than(const Value& a, const Value& b, bool case_sensitive) {
  if ((a.is_number() || a.is_bool()) && (b.is_number() || b.is_bool()))
    return a.as_double() < b.as_double();
  if (a.is_string() && b.is_string()) {
    if (case_sensitive) return a.as_string() < b.as_string();
    // Case-folded in place (no copies of what may be megabytes).
    const auto fold = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
    return std::lexicographical_compare(
        a.as_string().begin(), a.as_string().end(), b.as_string().begin(), b.as_string().end(),
        [&](char x, char y) {
          return static_cast<unsigned char>(fold(x)) < static_cast<unsigned char>(fold(y));
        });
  }
  return invalid_argument("cannot order a " + std::string(a.type_name()) + " and a " +
                          std::string(b.type_name()));
}

Result<Value> sort_filter(const Value& subject, const CallArgs& args, bool dict_sort,
                          const BuiltinEnv& env) {
  ASSIGN_OR_RETURN(Array items, iterable_items(subject, "sort", env));
  if (dict_sort) {
    if (!subject.is_object()) return invalid_argument("dictsort needs a dict");
    items.clear();
    for (const auto& [key, value] : subject.as_object().entries())
      items.push_back(Value::array({Value::string(key), value}));
  }
  const bool reverse = args.get(dict_sort ? 2 : 0, "reverse").truthy();
  const bool case_sensitive = args.get(dict_sort ? 0 : 1, "case_sensitive").truthy();
  const Value& attribute = dict_sort ? Value() : args.get(2, "attribute");
  const bool by_value =
      dict_sort && args.get(1, "by").is_string() && args.get(1, "by").as_string() == "value";
  std::vector<std::pair<Value, Value>> keyed;
  for (const Value& item : items) {
    Value key = item;
    if (dict_sort)
      key = item.as_array()[by_value ? 1 : 0];
    else if (attribute.is_string()) {
      ASSIGN_OR_RETURN(key, attribute_of(item, attribute.as_string()));
    }
    keyed.emplace_back(std::move(key), item);
  }
  Status failure;
  // A step per comparison; once one fails the rest return at once.
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    if (!failure.ok()) return false;
    if (Status charged = env.budget->charge(); !charged.ok()) {
      failure = std::move(charged);
      return false;
    }
    if (x.first.is_string() && y.first.is_string()) {  // comparing strings reads them
      const std::size_t bytes = x.first.as_string().size() + y.first.as_string().size();
      if (Status read = env.budget->charge(bytes / Budget::kBytesPerStep); !read.ok()) {
        failure = std::move(read);
        return false;
      }
    }
    auto lt = reverse ? less_than(y.first, x.first, case_sensitive)
                      : less_than(x.first, y.first, case_sensitive);
    if (!lt.ok()) {
      if (failure.ok()) failure = lt.status();
      return false;
    }
    return *lt;
  });
  if (!failure.ok()) return failure;
  Array out;
  for (auto& [key, item] : keyed) out.push_back(std::move(item));
  return Value::array(std::move(out));
}

Result<Value> select_filter(std::string_view name, const Value& subject, const CallArgs& args,
                            const BuiltinEnv& env) {
  ASSIGN_OR_RETURN(Array items, iterable_items(subject, name, env));
  const bool by_attribute = name == "selectattr" || name == "rejectattr";
  const bool keep_on = name == "select" || name == "selectattr";
  std::size_t next = 0;
  std::string attribute;
  if (by_attribute) {
    if (!args.get(0, "").is_string())
      return invalid_argument(std::string(name) + " needs an attribute name");
    attribute = args.get(0, "").as_string();
    next = 1;
  }
  std::string test;
  if (next < args.positional.size()) {
    if (!args.positional[next].is_string())
      return invalid_argument(std::string(name) + " needs a test name");
    test = args.positional[next].as_string();
    if (!is_known_test(test)) return unimplemented("no test named '" + test + "'");
  }
  CallArgs test_args;
  for (std::size_t i = next + 1; i < args.positional.size(); ++i)
    test_args.positional.push_back(args.positional[i]);
  Array out;
  for (const Value& item : items) {
    Value probe = item;
    if (by_attribute) {
      ASSIGN_OR_RETURN(probe, attribute_of(item, attribute));
    }
    bool passed = probe.truthy();
    if (!test.empty()) {
      ASSIGN_OR_RETURN(passed, apply_test(test, probe, test_args, env));
    }
    if (passed == keep_on) out.push_back(item);
  }
  return Value::array(std::move(out));
}

Result<Value> map_filter(const Value& subject, const CallArgs& args, const BuiltinEnv& env) {
  ASSIGN_OR_RETURN(Array items, iterable_items(subject, "map", env));
  Array out;
  const Value& attribute = args.get(99, "attribute");
  if (attribute.is_string() || attribute.is_int()) {
    const std::string path =
        attribute.is_string() ? attribute.as_string() : std::to_string(attribute.as_int());
    const Value& fallback = args.get(99, "default");
    for (const Value& item : items) {
      ASSIGN_OR_RETURN(Value v, attribute_of(item, path));
      out.push_back(v.is_undefined() && !fallback.is_undefined() ? fallback : v);
    }
    return Value::array(std::move(out));
  }
  if (args.positional.empty() || !args.positional[0].is_string())
    return invalid_argument("map needs a filter name or attribute=");
  const std::string filter = args.positional[0].as_string();
  if (!is_known_filter(filter) || filter == "map")
    return unimplemented("no filter named '" + filter + "'");
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  for (const Value& item : items) {
    ASSIGN_OR_RETURN(Value v, apply_filter(filter, item, rest, env));
    out.push_back(std::move(v));
  }
  return Value::array(std::move(out));
}

Result<Value> indent_filter(const std::string& s, const CallArgs& args, const BuiltinEnv& env) {
  const Value& width = args.get(0, "width");
  std::string pad =
      width.is_string() ? width.as_string()
      : width.is_int()
          ? std::string(static_cast<std::size_t>(std::clamp<int64_t>(width.as_int(), 0, 1024)), ' ')
          : std::string(4, ' ');
  const bool first = args.get(1, "first").truthy();
  const bool blank = args.get(2, "blank").truthy();
  std::string out;
  std::size_t start = 0;
  bool first_line = true;
  while (true) {
    std::size_t nl = s.find('\n', start);
    const std::string line =
        s.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    if ((!first_line || first) && (blank || !line.empty())) out += pad;
    out += line;
    RETURN_IF_ERROR(env.budget->check_bytes(out.size()));
    if (nl == std::string::npos) break;
    out += '\n';
    start = nl + 1;
    first_line = false;
  }
  return Value::string(std::move(out));
}

Result<Value> replace_filter(const Value& subject, const CallArgs& args, const BuiltinEnv& env) {
  ASSIGN_OR_RETURN(const std::string s, to_output(subject, *env.budget));
  const Value& old_value = args.get(0, "old");
  const Value& new_value = args.get(1, "new");
  if (!old_value.is_string() || !new_value.is_string())
    return invalid_argument("replace takes two strings");
  int64_t count = args.get(2, "count").is_int() ? args.get(2, "count").as_int() : -1;
  const std::string& from = old_value.as_string();
  const std::string& to = new_value.as_string();
  std::string out;
  if (from.empty()) {  // Python inserts `to` around every character
    const auto offsets = utf8_char_offsets(s);
    for (std::size_t i = 0; i + 1 < offsets.size(); ++i) {
      if (count != 0) {
        out += to;
        if (count > 0) --count;
      }
      out.append(s, offsets[i], offsets[i + 1] - offsets[i]);
      RETURN_IF_ERROR(env.budget->check_bytes(out.size()));
    }
    if (count != 0) out += to;
    return Value::string(std::move(out));
  }
  const SubstringSearch search(from);
  std::size_t start = 0;
  while (count != 0) {
    const std::size_t at = search.find(s, start);
    if (at == std::string::npos) break;
    out.append(s, start, at - start);
    out += to;
    RETURN_IF_ERROR(env.budget->check_bytes(out.size()));
    start = at + from.size();
    if (count > 0) --count;
  }
  out.append(s, start, std::string::npos);
  return Value::string(std::move(out));
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

Result<Value> round_filter(const Value& subject, const CallArgs& args) {
  if (!subject.is_number() && !subject.is_bool()) return invalid_argument("round needs a number");
  const int64_t precision =
      args.get(0, "precision").is_int() ? args.get(0, "precision").as_int() : 0;
  const Value& method = args.get(1, "method");
  const std::string how = method.is_string() ? method.as_string() : "common";
  const double scale =
      std::pow(10.0, static_cast<double>(std::clamp<int64_t>(precision, -300, 300)));
  const double x = subject.as_double() * scale;
  // Python's round() (jinja2's "common") rounds halves to even.
  double r = how == "ceil" ? std::ceil(x) : how == "floor" ? std::floor(x) : std::nearbyint(x);
  if (how != "common" && how != "ceil" && how != "floor")
    return invalid_argument("round's method is common, ceil or floor");
  return Value::floating(r / scale);
}

// Scalars are told apart by hash, as Python's set does; lists and dicts (which
// Python cannot hash) by comparing with those kept, a step per item compared.
Result<Value> unique_filter(const Value& subject, const BuiltinEnv& env) {
  ASSIGN_OR_RETURN(Array items, iterable_items(subject, "unique", env));
  std::unordered_set<std::string> strings;
  std::unordered_set<int64_t> integers;  // ints, booleans and integral floats
  std::unordered_set<double> floats;     // NaN is never found, as NaN != NaN
  bool none = false, undefined = false;
  Array containers;
  Array out;
  for (const Value& item : items) {
    bool seen = false;
    if (item.is_string()) {
      RETURN_IF_ERROR(env.budget->charge(item.as_string().size() / Budget::kBytesPerStep));
      seen = !strings.insert(item.as_string()).second;
    } else if (item.is_int() || item.is_bool()) {
      seen = !integers.insert(item.is_bool() ? item.as_bool() : item.as_int()).second;
    } else if (item.is_float()) {
      const double d = item.as_float();
      if (d == std::trunc(d) && std::fabs(d) < 9.2e18)
        seen = !integers.insert(static_cast<int64_t>(d)).second;
      else
        seen = !floats.insert(d).second;
    } else if (item.is_none()) {
      seen = std::exchange(none, true);
    } else if (item.is_undefined()) {
      seen = std::exchange(undefined, true);
    } else {
      for (const Value& kept : containers) {
        ASSIGN_OR_RETURN(seen, values_equal(kept, item, *env.budget));
        if (seen) break;
      }
      if (!seen) containers.push_back(item);
    }
    if (!seen) out.push_back(item);
  }
  return Value::array(std::move(out));
}

}  // namespace

bool is_known_filter(std::string_view name) {
  static const std::set<std::string_view> kFilters = {
      "length",  "count",      "trim",       "tojson", "upper",   "lower",   "title", "capitalize",
      "replace", "join",       "first",      "last",   "default", "d",       "map",   "select",
      "reject",  "selectattr", "rejectattr", "list",   "string",  "int",     "float", "abs",
      "items",   "safe",       "indent",     "unique", "sort",    "reverse", "round", "e",
      "escape",  "dictsort",   "min",        "max",    "sum"};
  return kFilters.count(name) > 0;
}

Result<Value> apply_filter(std::string_view name, const Value& subject, const CallArgs& args,
                           const BuiltinEnv& env) {
  if (name == "length" || name == "count") {
    if (subject.is_string())
      return Value::integer(
          static_cast<int64_t>(utf8_char_offsets(subject.as_string()).size() - 1));
    if (subject.is_array()) return Value::integer(static_cast<int64_t>(subject.as_array().size()));
    if (subject.is_object())
      return Value::integer(static_cast<int64_t>(subject.as_object().size()));
    if (subject.is_undefined()) return Value::integer(0);
    return invalid_argument("length of a " + std::string(subject.type_name()));
  }
  if (name == "trim") {
    ASSIGN_OR_RETURN(const std::string text, to_output(subject, *env.budget));
    return Value::string(strip_chars(text, args.get(0, "chars"), true, true));
  }
  if (name == "tojson") {
    const Value& indent = args.get(0, "indent");
    std::optional<int> width;
    if (indent.is_int()) width = static_cast<int>(std::clamp<int64_t>(indent.as_int(), 0, 64));
    ASSIGN_OR_RETURN(std::string json,
                     to_json(subject, width, args.get(99, "sort_keys").truthy(), *env.budget));
    return Value::string(std::move(json));
  }
  if (name == "upper" || name == "lower" || name == "title" || name == "capitalize") {
    ASSIGN_OR_RETURN(std::string text, to_output(subject, *env.budget));
    return call_method(Value::string(std::move(text)), name, CallArgs{}, env);
  }
  if (name == "replace") return replace_filter(subject, args, env);
  if (name == "join") {
    ASSIGN_OR_RETURN(Array items, iterable_items(subject, "join", env));
    const Value& separator = args.get(0, "d");
    const Value& attribute = args.get(1, "attribute");
    std::string text;
    TextSink out(text, env.budget->max_bytes(), env.budget);
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (i > 0) RETURN_IF_ERROR(append_output(separator, out));
      Value item = items[i];
      if (attribute.is_string()) {
        ASSIGN_OR_RETURN(item, attribute_of(item, attribute.as_string()));
      }
      RETURN_IF_ERROR(append_output(item, out));
    }
    return Value::string(std::move(text));
  }
  if (name == "first" || name == "last") {
    if (subject.is_array()) {  // no copy needed
      const Array& items = subject.as_array();
      if (items.empty()) return Value();
      return name == "first" ? items.front() : items.back();
    }
    ASSIGN_OR_RETURN(Array items, iterable_items(subject, name, env));
    if (items.empty()) return Value();
    return name == "first" ? items.front() : items.back();
  }
  if (name == "default" || name == "d") {
    const bool boolean = args.get(1, "boolean").truthy();
    const bool use_default = subject.is_undefined() || (boolean && !subject.truthy());
    if (!use_default) return subject;
    const Value& fallback = args.get(0, "default_value");
    return fallback.is_undefined() ? Value::string("") : fallback;
  }
  if (name == "map") return map_filter(subject, args, env);
  if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr")
    return select_filter(name, subject, args, env);
  if (name == "list") {
    ASSIGN_OR_RETURN(Array items, iterable_items(subject, "list", env));
    return Value::array(std::move(items));
  }
  if (name == "items") {
    if (subject.is_undefined()) return Value::array();
    if (!subject.is_object()) return invalid_argument("items needs a dict");
    return call_method(subject, "items", CallArgs{}, env);
  }
  if (name == "string") {
    ASSIGN_OR_RETURN(std::string text, to_output(subject, *env.budget));
    return Value::string(std::move(text));
  }
  if (name == "safe") return subject;
  if (name == "e" || name == "escape") {
    ASSIGN_OR_RETURN(const std::string text, to_output(subject, *env.budget));
    std::string escaped = html_escape(text);
    RETURN_IF_ERROR(env.budget->check_bytes(escaped.size()));
    return Value::string(std::move(escaped));
  }
  if (name == "int" || name == "float") {
    const bool to_int = name == "int";
    Value fallback = args.get(0, "default");
    if (fallback.is_undefined()) fallback = to_int ? Value::integer(0) : Value::floating(0.0);
    double d = 0;
    if (subject.is_int() || subject.is_bool()) {
      if (to_int) return Value::integer(subject.is_bool() ? subject.as_bool() : subject.as_int());
      d = subject.as_double();
    } else if (subject.is_float()) {
      d = subject.as_float();
    } else if (subject.is_string()) {
      const std::string text = strip_chars(subject.as_string(), Value(), true, true);
      char* end = nullptr;
      d = std::strtod(text.c_str(), &end);
      if (text.empty() || end != text.c_str() + text.size()) return fallback;
    } else {
      return fallback;
    }
    if (!to_int) return Value::floating(d);
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return fallback;
    return Value::integer(static_cast<int64_t>(d));
  }
  if (name == "abs") {
    if (subject.is_int())
      return subject.as_int() == INT64_MIN
                 ? Value::floating(9.223372036854775808e18)
                 : Value::integer(subject.as_int() < 0 ? -subject.as_int() : subject.as_int());
    if (subject.is_float()) return Value::floating(std::fabs(subject.as_float()));
    return invalid_argument("abs needs a number");
  }
  if (name == "indent") {
    ASSIGN_OR_RETURN(const std::string text, to_output(subject, *env.budget));
    return indent_filter(text, args, env);
  }
  if (name == "unique") return unique_filter(subject, env);
  if (name == "sort") return sort_filter(subject, args, false, env);
  if (name == "dictsort") return sort_filter(subject, args, true, env);
  if (name == "reverse") {
    if (subject.is_string()) {
      ASSIGN_OR_RETURN(Array chars, iterable_items(subject, "reverse", env));
      std::string out;
      for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += it->as_string();
      return Value::string(std::move(out));
    }
    ASSIGN_OR_RETURN(Array items, iterable_items(subject, "reverse", env));
    std::reverse(items.begin(), items.end());
    return Value::array(std::move(items));
  }
  if (name == "round") return round_filter(subject, args);
  if (name == "min" || name == "max") {
    ASSIGN_OR_RETURN(Array items, iterable_items(subject, name, env));
    if (items.empty()) return Value();
    Value best = items[0];
    for (const Value& item : items) {
      if (item.is_string() && best.is_string())  // both are case-folded copies
        RETURN_IF_ERROR(env.budget->charge((item.as_string().size() + best.as_string().size()) /
                                           Budget::kBytesPerStep));
      ASSIGN_OR_RETURN(bool lt, less_than(item, best, false));
      ASSIGN_OR_RETURN(bool gt, less_than(best, item, false));
      if (name == "min" ? lt : gt) best = item;
    }
    return best;
  }
  if (name == "sum") {
    ASSIGN_OR_RETURN(Array items, iterable_items(subject, "sum", env));
    const Value& attribute = args.get(0, "attribute");
    bool any_float = false;
    int64_t total = 0;
    double total_f = 0;
    for (Value item : items) {
      if (attribute.is_string()) {
        ASSIGN_OR_RETURN(item, attribute_of(item, attribute.as_string()));
      }
      if (!item.is_number() && !item.is_bool()) return invalid_argument("sum of non-numbers");
      any_float = any_float || item.is_float();
      total_f += item.as_double();
      if (item.is_int() && __builtin_add_overflow(total, item.as_int(), &total))
        return invalid_argument("sum: integer overflow");
      if (item.is_bool()) total += item.as_bool();
    }
    return any_float ? Value::floating(total_f) : Value::integer(total);
  }
  return unimplemented("no filter named '" + std::string(name) + "'");
}

}  // namespace tessera::chat
