#include "core/chat/chat_template.h"

#include "core/chat/ast.h"
#include "core/chat/parser.h"

namespace tessera::chat {

Result<ChatTemplate> ChatTemplate::parse(std::string_view source, std::string origin) {
  ASSIGN_OR_RETURN(Program program, parse_template(source, std::move(origin)));
  RETURN_IF_ERROR(check_supported(program));
  return ChatTemplate(std::make_shared<const Program>(std::move(program)));
}

const std::string& ChatTemplate::origin() const {
  return program_->origin;
}

Value ChatTemplate::context_of(const ChatRequest& request) {
  Value context = Value::object();
  if (request.messages_value.is_array()) {
    context.set("messages", request.messages_value);
  } else {
    Value messages = Value::array();
    for (const ChatMessage& m : request.messages) {
      Value message = Value::object();
      message.set("role", Value::string(m.role));
      message.set("content", Value::string(m.content));
      messages.push_back(std::move(message));
    }
    context.set("messages", std::move(messages));
  }
  context.set("add_generation_prompt", Value::boolean(request.add_generation_prompt));
  context.set("bos_token", Value::string(request.bos_token));
  context.set("eos_token", Value::string(request.eos_token));
  if (request.extra.is_object())
    for (const auto& [key, value] : request.extra.as_object().entries()) context.set(key, value);
  return context;
}

Result<std::string> ChatTemplate::render(const ChatRequest& request) const {
  return render(context_of(request), request.now);
}

Result<std::string> ChatTemplate::render(const Value& context,
                                         const std::optional<std::tm>& now) const {
  std::tm when{};
  if (now) {
    when = *now;
  } else {
    const std::time_t t = std::time(nullptr);
    gmtime_r(&t, &when);
  }
  return render_program(*program_, context, when, limits_);
}

namespace {

// Written for tessera from each family's published prompt format.
constexpr std::string_view kChatml =
    "{%- for message in messages -%}\n"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' -}}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}\n";

constexpr std::string_view kLlama3 =
    "{{- bos_token -}}\n"
    "{%- for message in messages -%}\n"
    "{{- '<|start_header_id|>' + message.role + '<|end_header_id|>\\n\\n' + message.content | "
    "trim + '<|eot_id|>' -}}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}"
    "{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}{%- endif -%}\n";

// Gemma has no system role: the system text opens the first user turn.
constexpr std::string_view kGemma =
    "{{- bos_token -}}\n"
    "{%- set ns = namespace(prefix='') -%}\n"
    "{%- for message in messages -%}\n"
    "{%- if message.role == 'system' -%}{%- set ns.prefix = message.content | trim + '\\n\\n' "
    "-%}\n"
    "{%- else -%}\n"
    "{%- set role = 'model' if message.role == 'assistant' else message.role -%}\n"
    "{{- '<start_of_turn>' + role + '\\n' + ns.prefix + message.content | trim + "
    "'<end_of_turn>\\n' -}}\n"
    "{%- set ns.prefix = '' -%}\n"
    "{%- endif -%}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}{{- '<start_of_turn>model\\n' -}}{%- endif -%}\n";

struct Builtin {
  std::string_view name;
  std::string_view source;
};
constexpr Builtin kBuiltins[] = {{"chatml", kChatml}, {"llama3", kLlama3}, {"gemma", kGemma}};

}  // namespace

std::vector<std::string_view> builtin_template_names() {
  std::vector<std::string_view> names;
  for (const Builtin& b : kBuiltins) names.push_back(b.name);
  return names;
}

Result<std::string_view> builtin_template(std::string_view name) {
  std::string known;
  for (const Builtin& b : kBuiltins) {
    if (b.name == name) return b.source;
    known += known.empty() ? "" : ", ";
    known += b.name;
  }
  return not_found("no built-in chat template named '" + std::string(name) + "' (have: " + known +
                   ")");
}

}  // namespace tessera::chat
