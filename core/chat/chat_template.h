// Chat templates: the Jinja programs (tokenizer.chat_template in GGUF and
// tokenizer_config.json) that turn a list of messages into the prompt text a
// model was trained on. Parse once, render many times.
//
//   ASSIGN_OR_RETURN(auto tmpl, ChatTemplate::parse(source, "GGUF tokenizer.chat_template"));
//   ChatRequest request;
//   request.messages = {{"system", "Be brief."}, {"user", "Hi"}};
//   request.bos_token = "<|begin_of_text|>";
//   ASSIGN_OR_RETURN(std::string prompt, tmpl.render(request));
//
// The language is the subset of Jinja2 that real chat templates use, rendered
// as Hugging Face transformers renders them (trim_blocks and lstrip_blocks on,
// tojson as json.dumps(ensure_ascii=False)); docs/chat-templates.md lists what
// is supported. Errors:
//   - syntax errors: InvalidArgument "origin:line:column: ...";
//   - constructs not implemented (macro, call, an unknown filter, test or
//     method): Unimplemented "origin:line:column: ..." from parse();
//   - raise_exception("...") in the template: InvalidArgument carrying the text;
//   - runaway templates: ResourceExhausted (output size, list size, steps).
#pragma once

#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/chat/render.h"
#include "core/chat/value.h"
#include "core/status/status.h"

namespace tessera::chat {

struct Program;

struct ChatMessage {
  std::string role;
  std::string content;
};

struct ChatRequest {
  std::vector<ChatMessage> messages;
  // When set (an array), used as `messages` instead of the list above: for
  // tool calls, reasoning_content or multimodal content lists.
  Value messages_value;
  bool add_generation_prompt = true;
  std::string bos_token;  // the vocabulary's BOS/EOS text ("" when it has none)
  std::string eos_token;
  // More variables as an object (tools, enable_thinking, date_string, ...);
  // they override the ones above of the same name.
  Value extra;
  // What strftime_now() formats; the current UTC time when unset (set it
  // for reproducible prompts).
  std::optional<std::tm> now;
};

class ChatTemplate {
 public:
  // `origin` names the template in error messages (a file path,
  // "GGUF tokenizer.chat_template", "builtin chatml").
  static Result<ChatTemplate> parse(std::string_view source, std::string origin);

  Result<std::string> render(const ChatRequest& request) const;
  // The general form: `context` is an object of template variables.
  Result<std::string> render(const Value& context, const std::optional<std::tm>& now = {}) const;

  // The variables render(ChatRequest) passes, for callers that add more.
  static Value context_of(const ChatRequest& request);

  const std::string& origin() const;
  void set_limits(const RenderLimits& limits) { limits_ = limits; }

 private:
  explicit ChatTemplate(std::shared_ptr<const Program> program) : program_(std::move(program)) {}
  std::shared_ptr<const Program> program_;
  RenderLimits limits_;
};

// Templates tessera carries by name: "chatml" (llama-server's default when a
// model has none), "llama3", "gemma". NotFound lists the names.
Result<std::string_view> builtin_template(std::string_view name);
std::vector<std::string_view> builtin_template_names();

}  // namespace tessera::chat
