// Hugging Face Split over UTF-8 text: cut a word at the matches of a regex
// (core/unicode's SplitRegex, over code points) or of a literal string, and
// keep the matches as the behaviour says (Isolated, Removed,
// MergedWithPrevious, MergedWithNext, Contiguous; `invert` swaps matches and
// the text between them). Empty pieces are dropped.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status/status.h"
#include "core/tokenizer/tokenizer_pipeline.h"

namespace tessera {

namespace unicode {
class SplitRegex;
}

// InvalidArgument (with the engine's reason) for a pattern it cannot compile.
Result<std::unique_ptr<const unicode::SplitRegex>> compile_split_regex(const std::string& pattern);

void split_by_regex(const unicode::SplitRegex& regex, std::string_view text, SplitBehavior behavior,
                    bool invert, std::vector<std::string>& out);

void split_by_string(std::string_view delimiter, std::string_view text, SplitBehavior behavior,
                     bool invert, std::vector<std::string>& out);

}  // namespace tessera
