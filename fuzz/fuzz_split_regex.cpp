// core/unicode on arbitrary bytes: the first byte says how many of the following bytes
// are a pre-tokenizer pattern; the rest is text. Compiling must give a SplitRegex or a
// Status (never a crash); splitting under a small step budget must finish, and its pieces
// must tile the text in order. The text also goes through both UTF-8 decoders and
// NFC/NFD, which must be idempotent.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/unicode/normalize.h"
#include "core/unicode/split_regex.h"
#include "core/unicode/utf8.h"

namespace {

using namespace tessera::unicode;

void check_tiling(const std::vector<std::pair<uint32_t, uint32_t>>& pieces, size_t size) {
  uint32_t next = 0;
  for (auto [begin, end] : pieces) {
    if (begin != next || end <= begin) __builtin_trap();
    next = end;
  }
  if (next != size) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t pattern_size = std::min<size_t>(data[0], size - 1);
  const std::string_view pattern(reinterpret_cast<const char*>(data + 1), pattern_size);
  const std::string_view text(reinterpret_cast<const char*>(data + 1 + pattern_size),
                              size - 1 - pattern_size);

  std::vector<char32_t> cps;
  std::vector<uint32_t> offsets;
  for (Utf8Errors errors : {Utf8Errors::kLlamaCpp, Utf8Errors::kWhatwg}) {
    decode_utf8(text, cps, &offsets, errors);
    if (offsets.size() != cps.size() + 1 || offsets.back() != text.size()) __builtin_trap();
  }
  const std::string composed = nfc(text);
  if (nfc(composed) != composed) __builtin_trap();
  const std::string decomposed = nfd(text);
  if (nfd(decomposed) != decomposed || nfc(decomposed) != composed) __builtin_trap();

  for (RegexDialect dialect : {RegexDialect::kOniguruma, RegexDialect::kLlamaCpp}) {
    auto regex = SplitRegex::compile(pattern, dialect);
    if (!regex.ok()) continue;
    std::vector<std::pair<uint32_t, uint32_t>> pieces;
    const auto status = regex->split_checked(cps, pieces, /*step_budget=*/20000);
    (void)status;  // an exhausted budget is a Status; the pieces still tile the text
    check_tiling(pieces, cps.size());
  }
  return 0;
}
