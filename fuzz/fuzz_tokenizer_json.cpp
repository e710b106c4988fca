// The tokenizer.json reader on arbitrary bytes: a Status or a vocabulary,
// never a crash, an exception or an absurd allocation. A vocabulary that
// loads is made into a tokenizer (which may refuse it) and, if that works,
// encodes and decodes a fixed text, and the input itself (so a long added
// token meets a long text that keeps nearly matching it: the added-token
// split must stay linear): ids must stay inside the vocabulary.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/tokenizer_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace tessera;
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  auto vocab = parse_tokenizer_json(json, "", "fuzz.json");
  if (!vocab.ok()) return 0;
  auto tokenizer = make_tokenizer(std::move(vocab).value());
  if (!tokenizer.ok()) return 0;
  const std::string_view texts[] = {"Hello world <|im_start|> 123 \xc3\xa9\xff", json};
  for (const std::string_view text : texts) {
    for (const bool parse_special : {false, true}) {
      auto ids = tokenizer->encode(text, EncodeOptions{.parse_special = parse_special});
      if (!ids.ok()) continue;  // e.g. no unk and no byte fallback
      for (int32_t id : *ids)
        if (id < 0 || id >= tokenizer->vocabulary().size()) __builtin_trap();
      (void)tokenizer->decode(*ids, /*print_control=*/parse_special);
    }
  }
  return 0;
}
