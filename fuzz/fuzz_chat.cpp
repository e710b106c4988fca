// Chat templates: arbitrary template text parsed, then rendered with a fixed
// conversation (system, user, an assistant turn with <think> and a tool call,
// a tool reply, tools) under tight limits.
//
// Oracles: parse and render end in a Status, never a crash, a hang or an
// allocation without bound; every error is one the API documents
// (InvalidArgument, Unimplemented, ResourceExhausted) and names the origin;
// output stays within the limit; rendering is deterministic (the same
// template renders the same text twice).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/chat/chat_template.h"

namespace {

using namespace tessera;
using namespace tessera::chat;

constexpr std::string_view kConversation = R"({
  "messages": [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Weather in \"Paris\"?\n"},
    {"role": "assistant", "content": "<think>\nLook it up.\n</think>\n\n",
     "tool_calls": [{"id": "call12345", "type": "function",
                     "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
    {"role": "tool", "content": "{\"sky\": \"clear\"}", "tool_call_id": "call12345"},
    {"role": "user", "content": [{"type": "text", "text": "Thanks"}, {"type": "image"}]}
  ],
  "tools": [{"type": "function", "function": {"name": "get_weather",
             "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}],
  "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>",
  "enable_thinking": false
})";

const Value& conversation() {
  static const Value* v = [] {
    auto parsed = value_from_json(kConversation);
    if (!parsed.ok()) __builtin_trap();
    return new Value(std::move(parsed).value());
  }();
  return *v;
}

bool documented(const Status& s) {
  return s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kUnimplemented ||
         s.code() == StatusCode::kResourceExhausted;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  auto tmpl = ChatTemplate::parse(source, "fuzz.jinja");
  if (!tmpl.ok()) {
    if (!documented(tmpl.status()) || tmpl.status().message().rfind("fuzz.jinja:", 0) != 0)
      __builtin_trap();
    return 0;
  }
  RenderLimits limits;
  limits.max_output_bytes = 1 << 16;
  limits.max_items = 1 << 12;
  limits.max_steps = 50000;
  tmpl->set_limits(limits);
  const std::tm now{};
  const auto first = tmpl->render(conversation(), now);
  if (!first.ok()) {
    if (!documented(first.status())) __builtin_trap();
    return 0;
  }
  if (first->size() > limits.max_output_bytes) __builtin_trap();
  const auto second = tmpl->render(conversation(), now);
  if (!second.ok() || *second != *first) __builtin_trap();
  // The same bytes as JSON values (the CLI and server pass messages this way).
  (void)value_from_json(source);
  return 0;
}
