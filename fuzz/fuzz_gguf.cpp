// GGUF: the file reader, every metadata value as text, the vocabulary and
// tokenizer it gives, the llama loader and, for small models, a forward.
#include <cstddef>
#include <cstdint>

#include "core/gguf/gguf_file.h"
#include "core/model/gguf_model.h"
#include "core/tokenizer/tokenizer.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace tessera;
  auto gguf = GgufFile::parse(fuzz::input_file("fuzz.gguf", data, size));
  if (!gguf.ok()) return 0;
  for (const GgufKeyValue& kv : gguf->metadata()) (void)kv.value.to_string();
  for (const GgufTensorInfo& t : gguf->tensors()) (void)t.shape_string();
  if (auto vocab = load_gguf_vocabulary(*gguf); vocab.ok()) {
    const Tokenizer tokenizer(std::move(vocab).value());
    if (auto ids = tokenizer.encode("Once upon a time \xc3\xa9\xff", true); ids.ok())
      (void)tokenizer.decode(*ids);
  }
  if (auto model = load_gguf_model(*gguf); model.ok()) fuzz::run_small_forward(*model);
  return 0;
}
