#include "apps/tessera/serve/openai_api.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace tessera::serve {
namespace {

using nlohmann::json;

std::string dump(const json& value) {
  // Text a model wrote may hold invalid UTF-8: replaced, never thrown on.
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// OpenAI's most alternatives per token (top_logprobs).
constexpr int64_t kMaxLogprobs = 20;

Status field_error(const std::string& field, const std::string& what) {
  return invalid_argument("'" + field + "' " + what);
}

Result<double> number_in(const json& body, const std::string& field, double lo, double hi) {
  const json& v = body.at(field);
  if (!v.is_number()) return field_error(field, "must be a number");
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < lo || x > hi)
    return field_error(field, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                  "], got " + std::to_string(x));
  return x;
}

Result<int64_t> integer_in(const json& body, const std::string& field, int64_t lo, int64_t hi) {
  const json& v = body.at(field);
  if (!v.is_number_integer()) return field_error(field, "must be an integer");
  // Unsigned values past int64 are refused rather than wrapped.
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi))
    return field_error(field, "must be at most " + std::to_string(hi));
  const auto x = v.get<int64_t>();
  if (x < lo || x > hi)
    return field_error(field, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                  "], got " + std::to_string(x));
  return x;
}

// A message's content: a string, or a list of {"type": "text", "text": ...}.
Result<std::string> message_content(const json& content, std::size_t index) {
  const std::string field = "messages[" + std::to_string(index) + "].content";
  if (content.is_null()) return std::string();
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) return field_error(field, "must be a string or a list of parts");
  std::string text;
  for (const json& part : content) {
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
        !part.at("text").is_string())
      return field_error(field,
                         "has a part that is not {\"type\": \"text\", \"text\": ...}; "
                         "only text is supported");
    text += part.at("text").get<std::string>();
  }
  return text;
}

Status parse_prompt(const json& body, CompletionRequest& request) {
  if (!body.contains("prompt")) return field_error("prompt", "is required");
  const json& prompt = body.at("prompt");
  if (prompt.is_string()) {
    request.prompt = prompt.get<std::string>();
    if (request.prompt.empty()) return field_error("prompt", "is empty");
    return ok_status();
  }
  if (!prompt.is_array() || prompt.empty())
    return field_error("prompt", "must be a string or a non-empty list of token ids");
  if (prompt.size() == 1 && prompt.at(0).is_string()) {  // ["text"]: one prompt
    request.prompt = prompt.at(0).get<std::string>();
    if (request.prompt.empty()) return field_error("prompt", "is empty");
    return ok_status();
  }
  for (const json& id : prompt) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
        id.get<int64_t>() > std::numeric_limits<int32_t>::max())
      return field_error("prompt",
                         "must be a string or a list of token ids (one prompt; "
                         "batches of prompts are not supported)");
    request.prompt_tokens.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  request.prompt_is_tokens = true;
  return ok_status();
}

Status parse_messages(const json& body, CompletionRequest& request) {
  if (!body.contains("messages") || !body.at("messages").is_array() || body.at("messages").empty())
    return field_error("messages", "must be a non-empty list");
  const json& messages = body.at("messages");
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const json& m = messages.at(i);
    if (!m.is_object() || !m.contains("role") || !m.at("role").is_string())
      return field_error("messages[" + std::to_string(i) + "]", "needs a string 'role'");
    ASSIGN_OR_RETURN(std::string content, message_content(m.value("content", json()), i));
    request.messages.push_back({m.at("role").get<std::string>(), std::move(content)});
  }
  return ok_status();
}

Status parse_stop(const json& body, CompletionRequest& request) {
  if (!body.contains("stop") || body.at("stop").is_null()) return ok_status();
  const json& stop = body.at("stop");
  if (stop.is_string()) {
    request.stop.push_back(stop.get<std::string>());
    return ok_status();
  }
  if (!stop.is_array() || stop.size() > 16)
    return field_error("stop", "must be a string or a list of at most 16 strings");
  for (const json& s : stop) {
    if (!s.is_string()) return field_error("stop", "must hold strings only");
    request.stop.push_back(s.get<std::string>());
  }
  return ok_status();
}

// /v1/completions: `logprobs` is the number of alternatives (0 to 20; null:
// none). Chat: `logprobs` true or false, `top_logprobs` 0 to 20 with it.
Status parse_logprobs(const json& body, CompletionRequest& request) {
  const bool asked = body.contains("logprobs") && !body.at("logprobs").is_null();
  if (!request.chat) {
    if (!asked) return ok_status();
    ASSIGN_OR_RETURN(const int64_t top, integer_in(body, "logprobs", 0, kMaxLogprobs));
    request.logprobs = static_cast<int>(top);
    return ok_status();
  }
  bool wanted = false;
  if (asked) {
    if (!body.at("logprobs").is_boolean()) return field_error("logprobs", "must be true or false");
    wanted = body.at("logprobs").get<bool>();
  }
  int64_t top = 0;
  if (body.contains("top_logprobs") && !body.at("top_logprobs").is_null()) {
    ASSIGN_OR_RETURN(top, integer_in(body, "top_logprobs", 0, kMaxLogprobs));
    if (!wanted && top > 0) return field_error("top_logprobs", "needs 'logprobs': true");
  }
  if (wanted) request.logprobs = static_cast<int>(top);
  return ok_status();
}

Status parse_stream_options(const json& body, CompletionRequest& request) {
  if (!body.contains("stream_options") || body.at("stream_options").is_null()) return ok_status();
  const json& options = body.at("stream_options");
  if (!options.is_object()) return field_error("stream_options", "must be an object");
  if (!options.contains("include_usage") || options.at("include_usage").is_null())
    return ok_status();
  if (!options.at("include_usage").is_boolean())
    return field_error("stream_options.include_usage", "must be true or false");
  request.include_usage = options.at("include_usage").get<bool>();
  return ok_status();
}

bool is_empty(const json& v) {
  return v.is_null() || (v.is_structured() && v.empty());
}

// Fields whose feature is not served: refused by name when asked for, taken
// when they ask for nothing (false, 0, null, empty), as clients often send.
Status refuse_unimplemented(const json& body, bool chat) {
  const auto unsupported = [](const std::string& field, const std::string& what) {
    return Status(StatusCode::kUnimplemented,
                  "'" + field + "' is not supported by this server (" + what + ")");
  };
  if (body.contains("echo") && !(body.at("echo").is_null() ||
                                 (body.at("echo").is_boolean() && !body.at("echo").get<bool>())))
    return unsupported("echo", "the prompt is not echoed");
  if (body.contains("logit_bias") && !is_empty(body.at("logit_bias")))
    return unsupported("logit_bias", "logits are not biased");
  if (body.contains("best_of") && !body.at("best_of").is_null() &&
      !(body.at("best_of").is_number_integer() && body.at("best_of").get<int64_t>() == 1))
    return unsupported("best_of", "one completion is generated per request");
  if (body.contains("suffix") && !is_empty(body.at("suffix")) &&
      !(body.at("suffix").is_string() && body.at("suffix").get<std::string>().empty()))
    return unsupported("suffix", "insertion is not supported");
  if (body.contains("response_format") && !body.at("response_format").is_null()) {
    const json& format = body.at("response_format");
    if (!format.is_object() || format.value("type", json()) != "text")
      return unsupported("response_format", "only {\"type\": \"text\"} is served");
  }
  if (chat) {
    for (const char* field : {"tools", "functions"})
      if (body.contains(field) && !is_empty(body.at(field)))
        return unsupported(field, "tool calls are not supported");
    if (body.contains("tool_choice") && !body.at("tool_choice").is_null() &&
        body.at("tool_choice") != "none")
      return unsupported("tool_choice", "tool calls are not supported");
  }
  return ok_status();
}

}  // namespace

Result<CompletionRequest> parse_completion_request(std::string_view body_text, bool chat) {
  json body = json::parse(body_text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return invalid_argument("the request body is not valid JSON");
  if (!body.is_object()) return invalid_argument("the request body must be a JSON object");
  CompletionRequest request;
  request.chat = chat;
  if (body.contains("model")) {
    if (!body.at("model").is_string()) return field_error("model", "must be a string");
    request.model = body.at("model").get<std::string>();
  }
  RETURN_IF_ERROR(chat ? parse_messages(body, request) : parse_prompt(body, request));
  const char* max_field =
      chat && body.contains("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  if (body.contains(max_field) && !body.at(max_field).is_null()) {
    ASSIGN_OR_RETURN(request.max_tokens, integer_in(body, max_field, 0, 1 << 24));
  }
  if (body.contains("temperature") && !body.at("temperature").is_null()) {
    ASSIGN_OR_RETURN(request.temperature, number_in(body, "temperature", 0, 100));
  }
  if (body.contains("top_p") && !body.at("top_p").is_null()) {
    ASSIGN_OR_RETURN(request.top_p, number_in(body, "top_p", 0, 1));  // 0: greedy
  }
  if (body.contains("top_k") && !body.at("top_k").is_null()) {
    ASSIGN_OR_RETURN(request.top_k, integer_in(body, "top_k", 0, 1 << 24));
  }
  if (body.contains("seed") && !body.at("seed").is_null()) {
    ASSIGN_OR_RETURN(const int64_t seed,
                     integer_in(body, "seed", 0, std::numeric_limits<int64_t>::max()));
    request.seed = static_cast<uint64_t>(seed);
  }
  if (body.contains("n") && !body.at("n").is_null()) {
    ASSIGN_OR_RETURN(const int64_t n, integer_in(body, "n", 1, 1 << 20));
    if (n != 1) return field_error("n", "must be 1 (one choice per request)");
  }
  RETURN_IF_ERROR(parse_stop(body, request));
  for (auto [field, flag] :
       {std::pair{"stream", &request.stream}, std::pair{"ignore_eos", &request.ignore_eos}}) {
    if (!body.contains(field)) continue;
    if (!body.at(field).is_boolean()) return field_error(field, "must be true or false");
    *flag = body.at(field).get<bool>();
  }
  RETURN_IF_ERROR(parse_stream_options(body, request));
  RETURN_IF_ERROR(parse_logprobs(body, request));
  for (auto [field, value] : {std::pair{"presence_penalty", &request.presence_penalty},
                              std::pair{"frequency_penalty", &request.frequency_penalty}}) {
    if (!body.contains(field) || body.at(field).is_null()) continue;
    ASSIGN_OR_RETURN(*value, number_in(body, field, -2, 2));
  }
  RETURN_IF_ERROR(refuse_unimplemented(body, chat));
  return request;
}

std::optional<std::string> complete_finish_reason(const std::string& stop_reason) {
  if (stop_reason == "max_tokens" || stop_reason == "cache_full") return "length";
  if (stop_reason == "eos" || stop_reason == "stop_token") return "stop";
  return std::nullopt;
}

namespace {

json usage(const CompletionResult& r) {
  // cached_tokens as OpenAI reports its prompt caching.
  return {{"prompt_tokens", r.prompt_tokens},
          {"completion_tokens", r.completion_tokens},
          {"total_tokens", r.prompt_tokens + r.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", r.cached_tokens}}}};
}

// OpenAI writes a log-probability too small for a float as -9999.
double finite_logprob(float logprob) {
  return std::isfinite(logprob) ? static_cast<double>(logprob) : -9999.0;
}

json token_bytes(const std::string& text) {
  json bytes = json::array();
  for (const char c : text) bytes.push_back(static_cast<int>(static_cast<unsigned char>(c)));
  return bytes;
}

// choice.logprobs: chat's {"content": [...]}, or the completions API's
// parallel lists.
json logprobs_json(const std::vector<ScoredToken>& scored, bool chat) {
  if (chat) {
    json content = json::array();
    for (const ScoredToken& t : scored) {
      json top = json::array();
      for (const TokenChoice& c : t.top)
        top.push_back({{"token", c.token},
                       {"logprob", finite_logprob(c.logprob)},
                       {"bytes", token_bytes(c.token)}});
      content.push_back({{"token", t.token},
                         {"logprob", finite_logprob(t.logprob)},
                         {"bytes", token_bytes(t.token)},
                         {"top_logprobs", top}});
    }
    return {{"content", content}, {"refusal", nullptr}};
  }
  json tokens = json::array(), logprobs = json::array(), tops = json::array(),
       offsets = json::array();
  for (const ScoredToken& t : scored) {
    tokens.push_back(t.token);
    logprobs.push_back(finite_logprob(t.logprob));
    json top = json::object();
    for (const TokenChoice& c : t.top)
      if (!top.contains(c.token)) top[c.token] = finite_logprob(c.logprob);
    tops.push_back(top);
    offsets.push_back(t.text_offset);
  }
  return {{"tokens", tokens},
          {"token_logprobs", logprobs},
          {"top_logprobs", tops},
          {"text_offset", offsets}};
}

json base(const CompletionResult& r, const char* object) {
  return {{"id", r.id}, {"object", object}, {"created", r.created}, {"model", r.model}};
}

}  // namespace

int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string completion_json(const CompletionResult& r, bool chat) {
  json out = base(r, chat ? "chat.completion" : "text_completion");
  json choice = {{"index", 0},
                 {"finish_reason", r.finish_reason},
                 {"logprobs", r.logprobs ? logprobs_json(r.scored, chat) : json(nullptr)}};
  if (chat)
    choice["message"] = {{"role", "assistant"}, {"content", r.text}};
  else
    choice["text"] = r.text;
  out["choices"] = json::array({choice});
  out["usage"] = usage(r);
  out["seed"] = r.seed;
  return dump(out);
}

std::string completion_chunk(const CompletionResult& r, bool chat, const std::string& text,
                             const std::string& finish, bool first,
                             const std::vector<ScoredToken>& scored) {
  json out = base(r, chat ? "chat.completion.chunk" : "text_completion");
  json choice = {{"index", 0},
                 {"finish_reason", finish.empty() ? json(nullptr) : json(finish)},
                 {"logprobs", r.logprobs ? logprobs_json(scored, chat) : json(nullptr)}};
  if (chat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (!text.empty() || finish.empty()) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  out["choices"] = json::array({choice});
  return "data: " + dump(out) + "\n\n";
}

std::string usage_chunk(const CompletionResult& r, bool chat) {
  json out = base(r, chat ? "chat.completion.chunk" : "text_completion");
  out["choices"] = json::array();
  out["usage"] = usage(r);
  return "data: " + dump(out) + "\n\n";
}

std::string error_json(std::string_view message, std::string_view type,
                       const std::optional<std::string>& code,
                       const std::optional<std::string>& param) {
  return dump({{"error",
                {{"message", std::string(message)},
                 {"type", std::string(type)},
                 {"param", param ? json(*param) : json(nullptr)},
                 {"code", code ? json(*code) : json(nullptr)}}}});
}

std::optional<std::string> error_param(std::string_view message) {
  if (message.size() < 3 || message.front() != '\'') return std::nullopt;
  const std::size_t end = message.find('\'', 1);
  if (end == std::string_view::npos || end == 1 || end > 64) return std::nullopt;
  return std::string(message.substr(1, end - 1));
}

namespace {
json model_object(const std::string& model, int64_t created) {
  return {{"id", model}, {"object", "model"}, {"created", created}, {"owned_by", "tessera"}};
}
}  // namespace

std::string models_json(const std::string& model, int64_t created) {
  return dump({{"object", "list"}, {"data", json::array({model_object(model, created)})}});
}

std::string model_json(const std::string& model, int64_t created) {
  return dump(model_object(model, created));
}

}  // namespace tessera::serve
