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

// A GGUF holding only the vocabulary (no architecture, no tensors), like
// llama.cpp's models/ggml-vocab-*.gguf.
Status write_vocabulary_gguf(const Vocabulary& vocab, const std::string& path);

}  // namespace tessera
