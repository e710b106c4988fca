// Reads a llama2.c tokenizer file: int32 max_token_length, then per token a
// float32 score, an int32 byte length and the bytes. Spaces in pieces become
// U+2581 so the vocabulary matches the GGUF form.
#pragma once

#include <string>

#include "core/io/mapped_file.h"
#include "core/model/model.h"
#include "core/status/status.h"

namespace tessera {

Result<Vocabulary> read_llama2c_tokenizer(const std::string& path);

// The same from bytes already in memory; `file.path()` names it in messages.
Result<Vocabulary> parse_llama2c_tokenizer(const MappedFile& file);

}  // namespace tessera
