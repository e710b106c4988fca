// Parses a pre-tokenizer pattern in the Oniguruma (Ruby syntax) dialect that Hugging Face
// tokenizers and llama.cpp's pattern lists are written in, into a small syntax tree.
// Unsupported constructs are Unimplemented naming the construct and its offset; malformed
// patterns are InvalidArgument. Internal to core/unicode.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "core/status/status.h"
#include "core/unicode/regex_program.h"

namespace tessera::unicode::regex {

struct Node {
  enum class Kind { kEmpty, kSet, kConcat, kAlternate, kRepeat, kLookahead, kAtomic, kAssert };
  enum class Greed { kGreedy, kLazy, kPossessive };

  Kind kind = Kind::kEmpty;
  std::vector<std::unique_ptr<Node>> children;
  uint32_t set = 0;       // kSet: index into Ast::sets
  int min = 0, max = -1;  // kRepeat: max -1 = unbounded
  Greed greed = Greed::kGreedy;
  bool negated = false;       // kLookahead
  Op assertion = Op::kMatch;  // kAssert: one of the anchor ops
  size_t offset = 0;          // byte offset in the pattern, for messages
};

struct Ast {
  std::unique_ptr<Node> root;
  std::vector<CharSet> sets;
};

Result<Ast> parse_pattern(std::string_view pattern);

// True when the node can match the empty string.
bool is_nullable(const Node& node);

}  // namespace tessera::unicode::regex
