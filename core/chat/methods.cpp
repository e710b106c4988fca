// Methods and global functions (builtins.h); filters are in filters.cpp, tests
// in tests.cpp.
#include <cstdio>
#include <set>
#include <unordered_set>
#include <vector>

#include "core/chat/builtins.h"
#include "core/chat/format.h"

namespace tessera::chat {

const Value& CallArgs::get(std::size_t index, std::string_view name) const {
  static const Value kUndefined;
  if (index < positional.size()) return positional[index];
  for (const auto& [key, value] : keyword)
    if (key == name) return value;
  return kUndefined;
}

namespace {

bool is_python_space(unsigned char c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

std::string ascii_lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

std::string ascii_upper(std::string s) {
  for (char& c : s)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return s;
}

bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// str.title(): a letter after a non-letter is upper case, other letters lower.
std::string python_title(const std::string& s) {
  std::string out = s;
  bool previous_letter = false;
  for (char& c : out) {
    if (is_alpha(c)) {
      c = previous_letter ? ascii_lower(std::string(1, c))[0] : ascii_upper(std::string(1, c))[0];
      previous_letter = true;
    } else {
      previous_letter = static_cast<unsigned char>(c) >= 0x80 && previous_letter;
    }
  }
  return out;
}

Result<std::string> string_argument(const Value& v, std::string_view what) {
  if (!v.is_string())
    return invalid_argument(std::string(what) + " must be a string, not " +
                            std::string(v.type_name()));
  return v.as_string();
}

Result<Value> split(const std::string& s, const Value& sep, const Value& maxsplit_value,
                    Budget& budget) {
  int64_t maxsplit = -1;
  if (maxsplit_value.is_int()) maxsplit = maxsplit_value.as_int();
  Array parts;
  if (sep.is_undefined() || sep.is_none()) {
    std::size_t i = 0;
    while (true) {
      while (i < s.size() && is_python_space(static_cast<unsigned char>(s[i]))) ++i;
      if (i >= s.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit) {
        std::size_t end = s.size();
        while (end > i && is_python_space(static_cast<unsigned char>(s[end - 1]))) --end;
        parts.push_back(Value::string(s.substr(i, end - i)));
        break;
      }
      std::size_t k = i;
      while (k < s.size() && !is_python_space(static_cast<unsigned char>(s[k]))) ++k;
      RETURN_IF_ERROR(budget.charge_push(parts.size()));
      parts.push_back(Value::string(s.substr(i, k - i)));
      i = k;
    }
    return Value::array(std::move(parts));
  }
  ASSIGN_OR_RETURN(std::string separator, string_argument(sep, "split's separator"));
  if (separator.empty()) return invalid_argument("split: empty separator");
  const SubstringSearch search(separator);
  std::size_t start = 0;
  while (true) {
    const std::size_t found = search.find(s, start);
    if (found == std::string::npos ||
        (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit)) {
      parts.push_back(Value::string(s.substr(start)));
      break;
    }
    RETURN_IF_ERROR(budget.charge_push(parts.size()));
    parts.push_back(Value::string(s.substr(start, found - start)));
    start = found + separator.size();
  }
  return Value::array(std::move(parts));
}

Result<Value> affix_test(const std::string& s, const Value& affixes, bool prefix) {
  const auto matches = [&](const std::string& a) {
    if (a.size() > s.size()) return false;
    return prefix ? s.compare(0, a.size(), a) == 0
                  : s.compare(s.size() - a.size(), a.size(), a) == 0;
  };
  if (affixes.is_string()) return Value::boolean(matches(affixes.as_string()));
  if (affixes.is_array()) {
    for (const Value& a : affixes.as_array()) {
      if (!a.is_string())
        return invalid_argument("startswith/endswith: tuple items must be strings");
      if (matches(a.as_string())) return Value::boolean(true);
    }
    return Value::boolean(false);
  }
  return invalid_argument("startswith/endswith takes a string or a tuple of strings");
}

Result<Value> string_method(const std::string& s, std::string_view name, const CallArgs& args,
                            const BuiltinEnv& env) {
  if (name == "strip") return Value::string(strip_chars(s, args.get(0, "chars"), true, true));
  if (name == "lstrip") return Value::string(strip_chars(s, args.get(0, "chars"), true, false));
  if (name == "rstrip") return Value::string(strip_chars(s, args.get(0, "chars"), false, true));
  if (name == "split") return split(s, args.get(0, "sep"), args.get(1, "maxsplit"), *env.budget);
  if (name == "startswith") return affix_test(s, args.get(0, "prefix"), true);
  if (name == "endswith") return affix_test(s, args.get(0, "suffix"), false);
  if (name == "upper") return Value::string(ascii_upper(s));
  if (name == "lower") return Value::string(ascii_lower(s));
  if (name == "title") return Value::string(python_title(s));
  if (name == "capitalize") {
    std::string out = ascii_lower(s);
    if (!out.empty()) out[0] = ascii_upper(out.substr(0, 1))[0];
    return Value::string(out);
  }
  if (name == "replace") {
    CallArgs filter_args;
    filter_args.positional = {args.get(0, "old"), args.get(1, "new"), args.get(2, "count")};
    return apply_filter("replace", Value::string(s), filter_args, env);
  }
  if (name == "find" || name == "count") {
    ASSIGN_OR_RETURN(std::string needle, string_argument(args.get(0, "sub"), name));
    const SubstringSearch search(needle);
    if (name == "find") {
      const std::size_t at = search.find(s);
      if (at == std::string::npos) return Value::integer(-1);
      return Value::integer(static_cast<int64_t>(utf8_char_offsets(s.substr(0, at)).size() - 1));
    }
    if (needle.empty()) return Value::integer(static_cast<int64_t>(utf8_char_offsets(s).size()));
    int64_t count = 0;
    for (std::size_t at = search.find(s); at != std::string::npos;
         at = search.find(s, at + needle.size()))
      ++count;
    return Value::integer(count);
  }
  if (name == "join") {
    CallArgs filter_args;
    filter_args.positional = {Value::string(s)};
    return apply_filter("join", args.get(0, "iterable"), filter_args, env);
  }
  if (name == "isdigit" || name == "isspace" || name == "isalpha") {
    if (s.empty()) return Value::boolean(false);
    for (char c : s) {
      const bool ok = name == "isdigit"   ? (c >= '0' && c <= '9')
                      : name == "isspace" ? is_python_space(static_cast<unsigned char>(c))
                                          : is_alpha(c);
      if (!ok) return Value::boolean(false);
    }
    return Value::boolean(true);
  }
  return unimplemented("string has no method '" + std::string(name) + "' in this renderer");
}

Result<Value> dict_method(const Value& object, std::string_view name, const CallArgs& args,
                          const BuiltinEnv& env) {
  const Object& entries = object.as_object();
  if (name == "items" || name == "keys" || name == "values") {
    RETURN_IF_ERROR(env.budget->charge_items(entries.size()));
    Array out;
    for (const auto& [key, value] : entries.entries()) {
      if (name == "items")
        out.push_back(Value::array({Value::string(key), value}));
      else if (name == "keys")
        out.push_back(Value::string(key));
      else
        out.push_back(value);
    }
    return Value::array(std::move(out));
  }
  if (name == "get") {
    const Value& key = args.get(0, "key");
    const Value* found = key.is_string() ? entries.find(key.as_string()) : nullptr;
    if (found) return *found;
    const Value& fallback = args.get(1, "default");
    return fallback.is_undefined() ? Value::none() : fallback;
  }
  return unimplemented("dict has no method '" + std::string(name) + "' in this renderer");
}

Result<Value> list_method(const Value& list, std::string_view name, const CallArgs& args,
                          const BuiltinEnv& env) {
  if (name == "append") {
    const Value& item = args.get(0, "item");
    ASSIGN_OR_RETURN(const bool cycle,
                     contains_container(item, list.container_identity(), *env.budget));
    if (cycle) return invalid_argument("append would put a list inside itself");
    if (list.as_array().size() >= env.budget->max_items())
      return resource_exhausted("list grew past " + std::to_string(env.budget->max_items()) +
                                " items");
    list.mutable_array().push_back(item);
    return Value::none();
  }
  if (name == "pop") {
    Array& items = list.mutable_array();
    if (items.empty()) return invalid_argument("pop from an empty list");
    int64_t index = args.get(0, "index").is_int() ? args.get(0, "index").as_int() : -1;
    const int64_t size = static_cast<int64_t>(items.size());
    if (index < 0) index += size;
    if (index < 0 || index >= size) return invalid_argument("pop index out of range");
    RETURN_IF_ERROR(env.budget->charge(static_cast<uint64_t>(size - index)));  // the items moved
    Value out = items[static_cast<std::size_t>(index)];
    items.erase(items.begin() + index);
    return out;
  }
  return unimplemented("list has no method '" + std::string(name) + "' in this renderer");
}

Result<Value> range(const CallArgs& args, const BuiltinEnv& env) {
  int64_t start = 0, stop = 0, step = 1;
  for (const Value& v : args.positional)
    if (!v.is_int()) return invalid_argument("range() takes integers");
  if (args.positional.size() == 1) {
    stop = args.positional[0].as_int();
  } else if (args.positional.size() == 2 || args.positional.size() == 3) {
    start = args.positional[0].as_int();
    stop = args.positional[1].as_int();
    if (args.positional.size() == 3) step = args.positional[2].as_int();
  } else {
    return invalid_argument("range() takes 1 to 3 integers");
  }
  if (step == 0) return invalid_argument("range() step must not be zero");
  Array out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (out.size() >= env.budget->max_items())
      return resource_exhausted("range() past " + std::to_string(env.budget->max_items()) +
                                " items");
    RETURN_IF_ERROR(env.budget->charge());
    out.push_back(Value::integer(i));
    if ((step > 0 && i > INT64_MAX - step) || (step < 0 && i < INT64_MIN - step)) break;
  }
  return Value::array(std::move(out));
}

}  // namespace

SubstringSearch::SubstringSearch(std::string_view needle) : needle_(needle) {
  if (needle.size() <= 64) return;  // find's worst case is 64 times the text: fine
  border_.assign(needle.size(), 0);
  for (std::size_t i = 1, k = 0; i < needle.size(); ++i) {
    while (k > 0 && needle[i] != needle[k]) k = border_[k - 1];
    if (needle[i] == needle[k]) ++k;
    border_[i] = k;
  }
}

std::size_t SubstringSearch::find(std::string_view text, std::size_t from) const {
  if (border_.empty()) return text.find(needle_, from);
  for (std::size_t i = from, k = 0; i < text.size(); ++i) {
    while (k > 0 && text[i] != needle_[k]) k = border_[k - 1];
    if (text[i] == needle_[k]) ++k;
    if (k == needle_.size()) return i + 1 - k;
  }
  return std::string_view::npos;
}

std::string strip_chars(const std::string& s, const Value& chars, bool left, bool right) {
  const bool whitespace = !chars.is_string();
  // A table, not a search of `chars` per byte (which may be megabytes long).
  bool strip[256] = {};
  if (!whitespace)
    for (const char c : chars.as_string()) strip[static_cast<unsigned char>(c)] = true;
  const auto strip_this = [&](char c) {
    return whitespace ? is_python_space(static_cast<unsigned char>(c))
                      : strip[static_cast<unsigned char>(c)];
  };
  std::size_t begin = 0, end = s.size();
  if (left)
    while (begin < end && strip_this(s[begin])) ++begin;
  if (right)
    while (end > begin && strip_this(s[end - 1])) --end;
  return s.substr(begin, end - begin);
}

Result<bool> contains_container(const Value& value, const void* identity, Budget& budget) {
  if (identity == nullptr) return false;
  // A worklist, as values may nest deeply; each container once, as they may
  // share (x = [x, x] doubles the paths through x each time).
  std::vector<const Value*> pending{&value};
  std::unordered_set<const void*> seen;
  while (!pending.empty()) {
    const Value* v = pending.back();
    pending.pop_back();
    RETURN_IF_ERROR(budget.charge());
    if (v->container_identity() == identity) return true;
    if (v->container_identity() && !seen.insert(v->container_identity()).second) continue;
    if (v->is_array()) {
      for (const Value& item : v->as_array()) pending.push_back(&item);
    } else if (v->is_object()) {
      for (const auto& [key, item] : v->as_object().entries()) pending.push_back(&item);
    }
  }
  return false;
}

bool is_known_method(std::string_view name) {
  static const std::set<std::string_view> kMethods = {
      "strip",   "lstrip",     "rstrip",  "split",  "startswith", "endswith", "upper",   "lower",
      "title",   "capitalize", "replace", "find",   "count",      "join",     "isdigit", "isspace",
      "isalpha", "items",      "keys",    "values", "get",        "append",   "pop"};
  return kMethods.count(name) > 0;
}

Result<Value> call_method(const Value& object, std::string_view name, const CallArgs& args,
                          const BuiltinEnv& env) {
  if (object.is_string()) return string_method(object.as_string(), name, args, env);
  if (object.is_object() && !object.is_namespace()) return dict_method(object, name, args, env);
  if (object.is_array()) return list_method(object, name, args, env);
  return invalid_argument("cannot call method '" + std::string(name) + "' on a value of type " +
                          std::string(object.type_name()));
}

bool is_known_global(std::string_view name) {
  return name == "raise_exception" || name == "range" || name == "namespace" || name == "dict" ||
         name == "strftime_now";
}

Result<Value> call_global(std::string_view name, const CallArgs& args, const BuiltinEnv& env) {
  if (name == "raise_exception") {
    const Value& message = args.get(0, "message");
    ASSIGN_OR_RETURN(std::string text, to_output(message, *env.budget));
    return invalid_argument("the template raised an exception: " + text);
  }
  if (name == "range") return range(args, env);
  if (name == "namespace" || name == "dict") {
    Object entries;
    const auto set = [&](const std::string& key, const Value& value) -> Status {
      RETURN_IF_ERROR(env.budget->charge());  // an item copied
      entries.set(key, value);
      return ok_status();
    };
    if (!args.positional.empty()) {
      const Value& source = args.positional[0];
      if (source.is_object()) {
        for (const auto& [key, value] : source.as_object().entries())
          RETURN_IF_ERROR(set(key, value));
      } else if (source.is_array()) {
        for (const Value& pair : source.as_array()) {
          if (!pair.is_array() || pair.as_array().size() != 2 || !pair.as_array()[0].is_string())
            return invalid_argument(std::string(name) + "() takes [key, value] pairs");
          RETURN_IF_ERROR(set(pair.as_array()[0].as_string(), pair.as_array()[1]));
        }
      } else {
        return invalid_argument(std::string(name) + "() takes a dict or a list of pairs");
      }
    }
    for (const auto& [key, value] : args.keyword) RETURN_IF_ERROR(set(key, value));
    return name == "dict" ? Value::object(std::move(entries))
                          : Value::name_space(std::move(entries));
  }
  if (name == "strftime_now") {
    const Value& format = args.get(0, "format");
    if (!format.is_string()) return invalid_argument("strftime_now() takes a format string");
    if (format.as_string().size() > 256) return invalid_argument("strftime_now() format too long");
    char buffer[4096];
    const std::size_t n =
        std::strftime(buffer, sizeof buffer, format.as_string().c_str(), &env.now);
    return Value::string(std::string(buffer, n));
  }
  return unimplemented("no global function named '" + std::string(name) + "'");
}

}  // namespace tessera::chat
