#include "core/unicode/pretokenizer_fast_paths.h"

#include "core/unicode/unicode_data.h"

namespace tessera::unicode::fast_path {
namespace {

using Pieces = std::vector<std::pair<uint32_t, uint32_t>>;

// The text with its flags looked up once per code point; past the end reads as nothing.
class Text {
 public:
  explicit Text(std::span<const char32_t> cps) : cps_(cps), flags_(cps.size() + 1, 0) {
    for (size_t i = 0; i < cps.size(); ++i) flags_[i] = flags_of(cps[i]);
  }
  uint32_t size() const { return static_cast<uint32_t>(cps_.size()); }
  char32_t at(uint32_t i) const { return i < cps_.size() ? cps_[i] : 0; }
  uint16_t flags(uint32_t i) const { return i < cps_.size() ? flags_[i] : 0; }
  bool is(uint32_t i, uint16_t mask) const { return (flags(i) & mask) != 0; }
  // [^\s\p{L}\p{N}]
  bool is_other(uint32_t i) const {
    return i < cps_.size() && !(flags(i) & (kWhitespace | kLetter | kNumber));
  }
  bool is_newline(uint32_t i) const { return at(i) == '\r' || at(i) == '\n'; }
  // The end of the run of `mask` (or of is_other) starting at i.
  uint32_t run_end(uint32_t i, uint16_t mask) const {
    while (i < size() && is(i, mask)) ++i;
    return i;
  }
  uint32_t other_run_end(uint32_t i) const {
    while (is_other(i)) ++i;
    return i;
  }

 private:
  std::span<const char32_t> cps_;
  std::vector<uint16_t> flags_;
};

bool letter_is(char32_t cp, char lower, Contractions rule) {
  switch (rule) {
    case Contractions::kExact:
      return cp == static_cast<char32_t>(lower);
    case Contractions::kAsciiCase:
      return cp == static_cast<char32_t>(lower) || cp == static_cast<char32_t>(lower - 32);
    case Contractions::kCaseFold:
      return simple_casefold(cp) == static_cast<char32_t>(lower);
  }
  return false;
}

// 's|'t|'re|'ve|'m|'ll|'d at i: the end, or 0.
uint32_t contraction_end(const Text& text, uint32_t i, Contractions rule) {
  if (text.at(i) != '\'' || i + 1 >= text.size()) return 0;
  const char32_t a = text.at(i + 1);
  for (char single : {'s', 't', 'm', 'd'})
    if (letter_is(a, single, rule)) return i + 2;
  if (i + 2 >= text.size()) return 0;
  const char32_t b = text.at(i + 2);
  static constexpr char kPairs[][2] = {{'r', 'e'}, {'v', 'e'}, {'l', 'l'}};
  for (const auto& pair : kPairs)
    if (letter_is(a, pair[0], rule) && letter_is(b, pair[1], rule)) return i + 3;
  return 0;
}

// \s+(?!\S) at i (i starts a whitespace run ending at run_end): the end, or 0.
uint32_t spaces_not_before_nonspace(const Text& text, uint32_t i, uint32_t run_end) {
  if (run_end == text.size()) return run_end;
  return run_end - 1 > i ? run_end - 1 : 0;
}

void add(Pieces& pieces, uint32_t& gap_begin, uint32_t begin, uint32_t end) {
  if (begin > gap_begin) pieces.emplace_back(gap_begin, begin);
  pieces.emplace_back(begin, end);
  gap_begin = end;
}

// The match of the GPT-2 pattern at i, or 0.
uint32_t gpt2_match(const Text& text, uint32_t i, const Gpt2Options& options) {
  if (uint32_t end = contraction_end(text, i, options.contractions)) return end;
  const uint32_t body = text.at(i) == ' ' ? i + 1 : i;
  for (uint16_t mask : {uint16_t{kLetter}, uint16_t{kNumber}}) {
    if (text.is(body, mask)) return text.run_end(body, mask);
  }
  if (text.is_other(body)) return text.other_run_end(body);
  if (text.is(i, kWhitespace)) {
    const uint32_t run_end = text.run_end(i, kWhitespace);
    if (uint32_t end = spaces_not_before_nonspace(text, i, run_end)) return end;
    if (options.trailing_whitespace) return run_end;
  }
  return 0;
}

// The match of the Llama 3 pattern at i (every code point starts one).
uint32_t llama3_match(const Text& text, uint32_t i, const Llama3Options& options) {
  if (uint32_t end = contraction_end(text, i, options.contractions)) return end;
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (text.is(i, kLetter)) return text.run_end(i, kLetter);
  if (!text.is_newline(i) && !text.is(i, kNumber) && text.is(i + 1, kLetter))
    return text.run_end(i + 1, kLetter);
  // \p{N}{1,max}
  if (text.is(i, kNumber)) {
    uint32_t end = i;
    while (end < text.size() && end - i < static_cast<uint32_t>(options.max_digits) &&
           text.is(end, kNumber))
      ++end;
    return end;
  }
  //  ?[^\s\p{L}\p{N}]+[\r\n]*
  const uint32_t body = text.at(i) == ' ' ? i + 1 : i;
  if (text.is_other(body)) {
    uint32_t end = text.other_run_end(body);
    while (text.is_newline(end)) ++end;
    return end;
  }
  // Whitespace from here on.
  const uint32_t run_end = text.run_end(i, kWhitespace);
  // \s*[\r\n]+ : up to and including the last \r or \n of the run.
  for (uint32_t j = run_end; j > i; --j)
    if (text.is_newline(j - 1)) return j;
  if (uint32_t end = spaces_not_before_nonspace(text, i, run_end)) return end;
  return run_end;  // \s+
}

}  // namespace

void split_gpt2(std::span<const char32_t> cps, const Gpt2Options& options, Pieces& pieces) {
  const Text text(cps);
  uint32_t gap_begin = 0;
  for (uint32_t i = 0; i < text.size();) {
    const uint32_t end = gpt2_match(text, i, options);
    if (end > i) {
      add(pieces, gap_begin, i, end);
      i = end;
    } else {
      ++i;
    }
  }
  if (text.size() > gap_begin) pieces.emplace_back(gap_begin, text.size());
}

void split_llama3(std::span<const char32_t> cps, const Llama3Options& options, Pieces& pieces) {
  const Text text(cps);
  uint32_t gap_begin = 0;
  for (uint32_t i = 0; i < text.size();) {
    const uint32_t end = llama3_match(text, i, options);
    if (end > i) {
      add(pieces, gap_begin, i, end);
      i = end;
    } else {
      ++i;
    }
  }
  if (text.size() > gap_begin) pieces.emplace_back(gap_begin, text.size());
}

}  // namespace tessera::unicode::fast_path
