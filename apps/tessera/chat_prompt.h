// The chat template a command renders with, and the encoding of its text:
// shared by `generate --chat` and `tessera chat`.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/chat/chat_template.h"
#include "core/engine/engine.h"

namespace tessera::cli {

struct ChatSetup {
  std::unique_ptr<chat::ChatTemplate> chat_template;
  chat::ChatRequest request;  // bos/eos token text; the system message when given
  std::string origin;         // where the template came from, for messages
};

// `choice`: a built-in template's name or a file; empty takes the model's own
// (GGUF tokenizer.chat_template, tokenizer_config.json), else "chatml" with a
// warning appended to `warnings` (llama-server's default). `option` names
// where `choice` came from ("--template", "server.chat_template") when it is
// neither a file nor a built-in name.
Result<ChatSetup> chat_setup(const Engine& engine, const std::string& choice,
                             std::string_view option, const std::string& system,
                             std::vector<std::string>& warnings);

// Token ids of rendered chat text: special tokens parsed; BOS added only at
// the start of a sequence and only when the template did not write it.
Result<std::vector<int32_t>> encode_chat_text(const Tokenizer& tokenizer, const std::string& text,
                                              bool sequence_start);

}  // namespace tessera::cli
