// llama2.c checkpoints: the header checks, the size rule and the weight walk,
// with the real tok512 tokenizer; small models also run a forward.
#include <cstddef>
#include <cstdint>

#include "core/model/llama2c_model.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace tessera;
  static const auto tokenizer = fuzz::shared_file(TESSERA_SHARED_DIR "/models/tok512.bin");
  auto model = load_llama2c_model(fuzz::input_file("fuzz.bin", data, size), tokenizer);
  if (model.ok()) fuzz::run_small_forward(*model);
  return 0;
}
