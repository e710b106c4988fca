// How values become text: Python's str() for {{ }} output, repr() inside
// containers, and JSON as transformers' tojson writes it
// (json.dumps(ensure_ascii=False), ", " and ": " separators, "," with indent).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/chat/budget.h"
#include "core/chat/value.h"
#include "core/status/status.h"

namespace tessera::chat {

// Text built from a value within a size limit and a Budget: every append is
// checked before the text grows (and refused past the limit), and every value
// visited costs a step, so printing a shared value ([x, x] sixty times over)
// ends at the limit instead of walking 2^60 paths. All serialisation (output,
// repr, JSON, join, ~) writes through one of these.
class TextSink {
 public:
  // Appends to `out`, which is to stay within `max_bytes` in all; `budget`
  // may be null (text for an error message, bounded by size alone).
  TextSink(std::string& out, std::size_t max_bytes, Budget* budget)
      : out_(out), max_bytes_(max_bytes), budget_(budget) {}

  void append(std::string_view s);
  void append(char c) { append(std::string_view(&c, 1)); }
  // Before a value is written: the first failure so far, or a step charged.
  Status visit();
  const Status& status() const { return failure_; }

 private:
  std::string& out_;
  std::size_t max_bytes_;
  Budget* budget_;
  Status failure_;
};

// str(value) appended: undefined is "", none "None", booleans "True"/"False",
// floats as Python prints them, lists and dicts as Python's repr.
Status append_output(const Value& value, TextSink& out);
// repr(value) appended: strings quoted as Python quotes them.
Status append_repr(const Value& value, TextSink& out);
// JSON text appended; `indent` as json.dumps' indent (none: one line), keys in
// insertion order unless sort_keys. Undefined prints as null.
// InvalidArgument past 128 levels of nesting.
Status append_json(const Value& value, std::optional<int> indent, bool sort_keys, TextSink& out);

// The same into a string of the budget's size limit.
Result<std::string> to_output(const Value& value, Budget& budget);
Result<std::string> to_json(const Value& value, std::optional<int> indent, bool sort_keys,
                            Budget& budget);
// str() of a scalar (no walk, so no budget); a container prints as "".
std::string scalar_output(const Value& value);
// repr(value) cut to about 200 bytes ("..." after), for error messages.
std::string short_repr(const Value& value);

// Byte offsets of each UTF-8 character of `s` (invalid bytes count as one
// character each), plus s.size() at the end.
std::vector<std::size_t> utf8_char_offsets(const std::string& s);

}  // namespace tessera::chat
