// What llama.cpp decides about special tokens from their text when it loads a
// GGUF vocabulary (llama-vocab.cpp), so tessera treats the same file the same
// way: tokens spelled like an end of generation ("<|im_end|>", "<|eot_id|>",
// "<end_of_turn>", "</s>" ...) end a generation and are control tokens even
// where the file types them as normal, and a file without
// tokenizer.ggml.eot_token_id gets its end-of-turn token from the text.
// Hugging Face tokenizer.json vocabularies do not go through this: transformers
// takes the file's types as they are.
#pragma once

#include <span>
#include <string_view>

#include "core/model/model.h"

namespace tessera {

// The texts llama.cpp counts as end of generation (its special_eog_ids).
std::span<const std::string_view> end_of_generation_texts();

// Applies llama.cpp's load-time rules to a vocabulary read from a GGUF.
void apply_llama_cpp_token_rules(Vocabulary& vocab);

}  // namespace tessera
