// How values become text: Python's str() for {{ }} output, repr() inside
// containers, and JSON as transformers' tojson writes it
// (json.dumps(ensure_ascii=False), ", " and ": " separators, "," with indent).
#pragma once

#include <optional>
#include <string>

#include "core/chat/value.h"
#include "core/status/status.h"

namespace tessera::chat {

// str(value): undefined is "", none "None", booleans "True"/"False", floats as
// Python prints them, lists and dicts as Python's repr.
std::string to_output(const Value& value);

// repr(value): strings quoted as Python quotes them.
std::string to_repr(const Value& value);

// JSON text; `indent` as json.dumps' indent (none: one line), keys in
// insertion order unless sort_keys. Undefined prints as null.
// InvalidArgument past 128 levels of nesting.
Result<std::string> to_json(const Value& value, std::optional<int> indent, bool sort_keys = false);

// Byte offsets of each UTF-8 character of `s` (invalid bytes count as one
// character each), plus s.size() at the end.
std::vector<std::size_t> utf8_char_offsets(const std::string& s);

}  // namespace tessera::chat
