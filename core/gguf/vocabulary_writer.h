// A Vocabulary as GGUF tokenizer.* keys, the way llama.cpp's
// convert_hf_to_gguf.py writes them: tokenizer.ggml.model ("llama" or "gpt2"),
// tokens, token_type, scores (SentencePiece), merges and pre (byte-pair), the
// special token ids, add_bos/add_eos, and tokenizer.chat_template.
#pragma once

#include <string>

#include "core/gguf/gguf_writer.h"
#include "core/model/model.h"

namespace tessera {

// Unimplemented for a byte-pair vocabulary whose pre-tokenizer has no llama.cpp
// name (vocab.pre empty): llama.cpp could not tokenize with the file.
Status write_vocabulary_keys(const Vocabulary& vocab, GgufWriter& writer);

// The vocabulary of `path` as tokenizer.* keys: a GGUF's are copied as they
// are; a tokenizer.json (or llama2.c tokenizer) is converted as above.
// Returns the number of tokens.
Result<int64_t> write_vocabulary_from(const std::string& path, GgufWriter& writer);

// A GGUF holding only the vocabulary (general.architecture "llama", no
// hyper-parameters, no tensors), like llama.cpp's models/ggml-vocab-*.gguf:
// llama-tokenize reads it.
Status write_vocabulary_gguf(const Vocabulary& vocab, const std::string& path);

}  // namespace tessera
