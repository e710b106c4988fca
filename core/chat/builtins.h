// The filters (x | name), tests (x is name), methods (x.name(...)) and global
// functions (name(...)) templates may call. Each returns a value or an error
// message without a location; the renderer adds "origin:line:column".
#pragma once

#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/chat/budget.h"
#include "core/chat/value.h"
#include "core/status/status.h"

namespace tessera::chat {

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;

  // The argument at `index`, or the keyword `name`, or undefined.
  const Value& get(std::size_t index, std::string_view name) const;
};

// What builtins need from the render: its budget (limits and work spent) and
// the clock. Work linear in a list's length charges the budget per item.
struct BuiltinEnv {
  Budget* budget;
  std::tm now;  // strftime_now's "now"
};

bool is_known_filter(std::string_view name);
bool is_known_test(std::string_view name);
bool is_known_method(std::string_view name);
bool is_known_global(std::string_view name);

Result<Value> apply_filter(std::string_view name, const Value& subject, const CallArgs& args,
                           const BuiltinEnv& env);
Result<bool> apply_test(std::string_view name, const Value& subject, const CallArgs& args,
                        const BuiltinEnv& env);
Result<Value> call_method(const Value& object, std::string_view name, const CallArgs& args,
                          const BuiltinEnv& env);
// raise_exception's message comes back as InvalidArgument carrying it.
Result<Value> call_global(std::string_view name, const CallArgs& args, const BuiltinEnv& env);

// Whether `value` holds the container `identity` anywhere inside it (to keep
// append and namespace assignment from building reference cycles); a step per
// item looked at.
Result<bool> contains_container(const Value& value, const void* identity, Budget& budget);

// Substring search in time linear in the text and the needle (KMP for long
// needles): std::string::find compares the whole needle wherever its first
// byte occurs, O(n * m) for 'aa...ab' in 'aaaa...'.
class SubstringSearch {
 public:
  explicit SubstringSearch(std::string_view needle);
  // The first occurrence at or after `from`, or npos.
  std::size_t find(std::string_view text, std::size_t from = 0) const;

 private:
  std::string_view needle_;
  std::vector<std::size_t> border_;  // KMP's failure function; empty for short needles
};

// Python's str.strip family: `chars` none or undefined means whitespace.
std::string strip_chars(const std::string& s, const Value& chars, bool left, bool right);

}  // namespace tessera::chat
