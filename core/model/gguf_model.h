// The GGUF side of load_model / load_vocabulary (llama architecture,
// SentencePiece vocabulary). Internal to core/model; callers use model.h.
#pragma once

#include "core/gguf/gguf_file.h"
#include "core/model/model.h"
#include "core/status/status.h"

namespace tessera {

// Validates the hyper-parameters, every expected tensor (presence, shape,
// dtype) and the vocabulary; the result keeps `gguf.file()` alive.
Result<LoadedModel> load_gguf_model(const GgufFile& gguf);

// The tokenizer.ggml.* vocabulary; works on a vocabulary-only file.
Result<Vocabulary> load_gguf_vocabulary(const GgufFile& gguf);

}  // namespace tessera
