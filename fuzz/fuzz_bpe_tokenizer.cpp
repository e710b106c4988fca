// The byte-pair tokenizer on arbitrary bytes, with a small GPT-2-style
// vocabulary: the 256 byte characters, a few merges, the gpt-2 pre-tokenizer,
// a control token and a user-defined one. The first byte picks parse_special
// (bit 0) and BOS (bit 1). Every byte is spellable, so encoding must succeed
// with ids inside the vocabulary, and where the text is UTF-8 (as llama.cpp
// reads it) decoding with control tokens printed must give it back exactly.
// The same bytes are also decoded as a list of token ids.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/tokenizer/byte_level.h"
#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/tokenizer_pipeline.h"
#include "core/unicode/utf8.h"

namespace {

using namespace tessera;

const Tokenizer& tokenizer() {
  static const Tokenizer* t = [] {
    Vocabulary v;
    v.kind = VocabularyKind::kBytePairs;
    v.add_space_prefix = false;
    for (int b = 0; b < 256; ++b) v.pieces.push_back(byte_level_char(static_cast<uint8_t>(b)));
    const std::string space = byte_level_char(' ');
    const std::string e_acute = byte_level_char(0xC3) + byte_level_char(0xA9);  // "é"
    for (const std::string& piece :
         std::vector<std::string>{space + "t", "he", space + "the", "in", "ing", space + "a", "er",
                                  space + space, e_acute})
      v.pieces.push_back(piece);
    v.merges = {space + " t",
                "h e",
                space + "t he",
                "i n",
                "in g",
                space + " a",
                "e r",
                space + " " + space,
                byte_level_char(0xC3) + " " + byte_level_char(0xA9)};
    v.pieces.push_back("<|endoftext|>");
    v.pieces.push_back("<think>");
    v.types.assign(v.pieces.size(), TokenType::kNormal);
    v.types[v.pieces.size() - 2] = TokenType::kControl;
    v.types[v.pieces.size() - 1] = TokenType::kUserDefined;
    v.bos_id = v.eos_id = static_cast<int32_t>(v.pieces.size() - 2);
    v.unk_id = -1;
    v.pre = "gpt-2";
    auto pipeline = pipeline_for_pre(v.pre);
    if (!pipeline.ok()) __builtin_trap();
    v.pipeline = std::make_shared<const TokenizerPipeline>(std::move(pipeline).value());
    auto made = make_tokenizer(std::move(v));
    if (!made.ok()) __builtin_trap();
    return new Tokenizer(std::move(made).value());
  }();
  return *t;
}

// Whether llama.cpp's UTF-8 reading keeps `text` as it is (no U+FFFD for a bad byte).
bool reads_back(std::string_view text) {
  std::vector<char32_t> cps;
  unicode::decode_utf8(text, cps);
  return unicode::to_utf8(cps.data(), cps.size()) == text;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const Tokenizer& t = tokenizer();
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  const EncodeOptions options{.add_special = (data[0] & 2) != 0,
                              .parse_special = (data[0] & 1) != 0};
  auto ids = t.encode(text, options);
  if (!ids.ok()) __builtin_trap();  // every byte has a token
  for (int32_t id : *ids)
    if (id < 0 || id >= t.vocabulary().size()) __builtin_trap();
  std::vector<int32_t> body = *ids;
  if (options.add_special && t.adds_bos() && !body.empty()) body.erase(body.begin());
  if (reads_back(text) && t.decode(body, /*print_control=*/true) != text) __builtin_trap();

  std::vector<int32_t> arbitrary((size - 1) / 4);
  if (!arbitrary.empty()) std::memcpy(arbitrary.data(), data + 1, arbitrary.size() * 4);
  (void)t.decode(arbitrary);
  int32_t previous = -1;
  for (int32_t id : arbitrary) {
    (void)t.decode_token(previous, id);
    previous = id;
  }
  return 0;
}
