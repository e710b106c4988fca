#include "core/chat/conversation.h"

#include <utility>

namespace tessera::chat {

Conversation::Conversation(const ChatTemplate& chat_template, ChatRequest request)
    : template_(chat_template), request_(std::move(request)) {}

Result<std::string> Conversation::render(bool add_generation_prompt) const {
  ChatRequest request = request_;
  request.add_generation_prompt = add_generation_prompt;
  return template_.render(request);
}

Result<std::string> Conversation::add_user(std::string content, std::string_view fed) {
  // The rendering before the message, for the fallback (computed first: the
  // message is not in the conversation yet).
  std::string past;
  if (!request_.messages.empty()) {
    ASSIGN_OR_RETURN(past, render(/*add_generation_prompt=*/false));
  }
  request_.messages.push_back({"user", std::move(content)});
  Result<std::string> full = render(/*add_generation_prompt=*/true);
  if (!full.ok()) {
    request_.messages.pop_back();
    return full.status();
  }
  rewritten_ = full->compare(0, fed.size(), fed) != 0;
  if (!rewritten_) return full->substr(fed.size());
  // llama.cpp's rule: the new rendering past the old one's length, keeping a
  // newline the old rendering ended with.
  std::string text = !past.empty() && past.back() == '\n' ? "\n" : "";
  if (full->size() > past.size()) text += full->substr(past.size());
  return text;
}

void Conversation::add_assistant(std::string content) {
  request_.messages.push_back({"assistant", std::move(content)});
}

}  // namespace tessera::chat
