// Hand-written matchers for the most used pre-tokenizer patterns, with exactly the
// leftmost-first semantics the generic machine gives them (tests/unicode checks the two
// agree on the reference corpus and on random text). Internal to core/unicode;
// SplitRegex::compile picks one when the pattern is one of these strings.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::unicode::fast_path {

// How the contraction alternatives compare letters: 's|'t|... (exact), the llama.cpp
// rewrite '[sS]|'[tT]|... (ASCII case) or Hugging Face's (?i:'s|'t|...) (simple case
// folding, so "'ſ" matches too).
enum class Contractions { kExact, kAsciiCase, kCaseFold };

struct Gpt2Options {
  Contractions contractions = Contractions::kExact;
  bool trailing_whitespace = false;  // the pattern ends with |\s+
};

struct Llama3Options {
  Contractions contractions = Contractions::kCaseFold;
  int max_digits = 3;  // \p{N}{1,3} (Llama 3), 1 for \p{N} (Qwen2)
};

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)(|\s+)?
void split_gpt2(std::span<const char32_t> cps, const Gpt2Options& options,
                std::vector<std::pair<uint32_t, uint32_t>>& pieces);

// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
void split_llama3(std::span<const char32_t> cps, const Llama3Options& options,
                  std::vector<std::pair<uint32_t, uint32_t>>& pieces);

}  // namespace tessera::unicode::fast_path
