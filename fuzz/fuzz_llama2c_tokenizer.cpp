// llama2.c tokenizer files: the reader, then the tokenizer built from what it
// read, encoding text and decoding every id.
#include <cstddef>
#include <cstdint>

#include "core/model/llama2c_model.h"
#include "core/tokenizer/llama2c_tokenizer_file.h"
#include "core/tokenizer/tokenizer.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace tessera;
  auto vocab = parse_llama2c_tokenizer(*fuzz::input_file("fuzz_tokenizer.bin", data, size));
  if (!vocab.ok()) return 0;
  apply_llama2c_vocabulary_conventions(*vocab);
  const Tokenizer tokenizer(std::move(vocab).value());
  if (auto ids = tokenizer.encode("Once upon a time, \xe2\x82\xac \xff<s>", true); ids.ok()) {
    for (int32_t id : *ids)
      if (id < 0 || id >= tokenizer.vocabulary().size()) __builtin_trap();
    (void)tokenizer.decode(*ids);
  }
  for (int32_t id = -1; id <= tokenizer.vocabulary().size(); ++id)
    (void)tokenizer.decode_token(1, id);
  return 0;
}
