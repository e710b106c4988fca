// The tokenizer on arbitrary bytes. The first byte picks a vocabulary:
//   even: tok512 (stories260K's; byte fallback for all 256 bytes), where
//         decode(encode(text)) must give the text back exactly, unless the
//         text holds U+2581 itself (it reads back as a space, as in
//         SentencePiece; the fuzzer found this one);
//   odd:  a vocabulary without byte tokens and without an unknown token,
//         where text it cannot spell must be an error, never an id outside it.
// The same bytes are also decoded as a list of token ids.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "core/model/llama2c_model.h"
#include "core/tokenizer/llama2c_tokenizer_file.h"
#include "core/tokenizer/tokenizer.h"
#include "fuzz/fuzz_support.h"

namespace {

using namespace tessera;

const Tokenizer& tok512() {
  static const Tokenizer* t = [] {
    auto vocab =
        parse_llama2c_tokenizer(*fuzz::shared_file(TESSERA_SHARED_DIR "/models/tok512.bin"));
    if (!vocab.ok()) __builtin_trap();
    apply_llama2c_vocabulary_conventions(*vocab);
    return new Tokenizer(std::move(vocab).value());
  }();
  return *t;
}

// tok512's text pieces only: no byte tokens, no unknown token.
const Tokenizer& no_fallback() {
  static const Tokenizer* t = [] {
    Vocabulary v = tok512().vocabulary();
    for (auto& type : v.types)
      if (type == TokenType::kByte || type == TokenType::kUnknown) type = TokenType::kUnused;
    v.unk_id = -1;
    return new Tokenizer(std::move(v));
  }();
  return *t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool round_trip = (data[0] & 1) == 0;
  const Tokenizer& tokenizer = round_trip ? tok512() : no_fallback();
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  const int32_t vocab_size = tokenizer.vocabulary().size();

  auto ids = tokenizer.encode(text, /*add_bos=*/(data[0] & 2) != 0);
  if (round_trip && !ids.ok()) __builtin_trap();  // tok512 spells every byte
  if (ids.ok()) {
    for (int32_t id : *ids)
      if (id < 0 || id >= vocab_size) __builtin_trap();
    const std::string back = tokenizer.decode(*ids);
    const bool has_space_mark = text.find("\xe2\x96\x81") != std::string_view::npos;
    if (round_trip && !has_space_mark && back != text) __builtin_trap();
  }

  std::vector<int32_t> arbitrary((size - 1) / 4);
  if (!arbitrary.empty()) std::memcpy(arbitrary.data(), data + 1, arbitrary.size() * 4);
  (void)tokenizer.decode(arbitrary);
  return 0;
}
