// How deep a TOML text nests, checked before toml++ parses it. toml++ walks
// nested tables recursively, so `a.a.a....= 1` or `[a.a.a...]` ten thousand
// levels deep overflows the stack inside the parser (it limits nested arrays
// and inline tables, not dotted keys). A tessera config needs three levels
// ([cache.codec] plugin = ...), so anything past kMaxTomlNesting is refused
// with the line and column where it goes too deep.
//
// Depth counts the nodes from the root: `a = 1` is 1, `[a.b]` then `c = 1` is
// 3, each array or inline table adds one for its elements. The scan
// understands TOML's strings, comments, arrays and inline tables, and keeps no
// recursion of its own. On text that is not valid TOML it stops and returns
// ok: toml++ then reports the syntax error, and it cannot build anything deep
// from text that ends before the nesting does.
#pragma once

#include <string>
#include <string_view>

#include "core/status/status.h"

namespace tessera {

inline constexpr int kMaxTomlNesting = 32;

// InvalidArgument "<source>:<line>:<column>: ..." when some key or value
// nests deeper than max_depth levels.
Status check_toml_nesting(std::string_view text, const std::string& source_name,
                          int max_depth = kMaxTomlNesting);

}  // namespace tessera
