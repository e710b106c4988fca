// Hugging Face tokenizer.json (the `tokenizers` library's file) as a
// Vocabulary: a BPE model (vocab, merges as "a b" strings or [a, b] pairs,
// ignore_merges, byte_fallback, unk_token, fuse_unk), the normalizers NFC,
// Replace (string patterns), Prepend and Sequence, the pre-tokenizers Split
// (regex or string pattern, any behaviour), ByteLevel, Metaspace and Sequence,
// the decoders ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace and
// Sequence, added_tokens (special ones become control tokens), and a
// TemplateProcessing post_processor's leading/trailing special token as
// add_bos/add_eos. tokenizer_config.json beside the file, when present, names
// bos/eos and carries the chat template.
//
// Anything else is Unimplemented naming its JSON path, e.g.
// `pre_tokenizer.pretokenizers[1].type = "Digits" is not supported`.
#pragma once

#include <string>
#include <string_view>

#include "core/model/model.h"

namespace tessera {

// `json` is the text of tokenizer.json; `config_json` that of
// tokenizer_config.json, or empty. `origin` names the file in messages.
Result<Vocabulary> parse_tokenizer_json(std::string_view json, std::string_view config_json,
                                        const std::string& origin);

// Reads `path` and the tokenizer_config.json in the same directory.
Result<Vocabulary> load_tokenizer_json(const std::string& path);

// Whether `bytes` look like JSON (the first non-blank byte is '{').
bool looks_like_json(std::string_view bytes);

}  // namespace tessera
