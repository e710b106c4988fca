// A multi-turn conversation fed into one KV sequence: the messages so far, and
// for each new user message the text to append so that the model sees the
// chat template's rendering of the whole conversation without re-reading any
// of it (the sequence keeps its K/V across turns).
//
// The text to append is the template's rendering of every message, with the
// generation prompt, minus what the sequence already holds (`fed`: the text
// of its tokens, special tokens spelled out). Templates that rewrite earlier
// turns when a new one arrives (Qwen3 drops older assistant reasoning) cannot
// continue the held text; then the append is computed as llama.cpp's
// common_chat_format_single does (the new rendering past the length of the
// old one), and `rewritten()` says so.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/chat/chat_template.h"
#include "core/status/status.h"

namespace tessera::chat {

class Conversation {
 public:
  // `request` holds the template variables every rendering uses (bos/eos
  // token text, extra variables, the clock); its messages start the
  // conversation (a system message, say).
  Conversation(const ChatTemplate& chat_template, ChatRequest request);

  // The text to feed after `fed` (what the sequence holds now) for a new user
  // message, ending with the generation prompt. The message joins the
  // conversation.
  Result<std::string> add_user(std::string content, std::string_view fed);
  // The model's reply to the last user message, as generated (end-of-turn
  // token excluded).
  void add_assistant(std::string content);

  const std::vector<ChatMessage>& messages() const { return request_.messages; }
  // Whether the last add_user could not continue the held text (see above).
  bool rewritten() const { return rewritten_; }

 private:
  Result<std::string> render(bool add_generation_prompt) const;

  const ChatTemplate& template_;
  ChatRequest request_;
  bool rewritten_ = false;
};

}  // namespace tessera::chat
