// The OpenAI-compatible HTTP API's request and response bodies
// (/v1/completions, /v1/chat/completions), as llama-server and vLLM speak
// it: parsing with errors that name the field, and the JSON written back,
// whole or as server-sent-event chunks. No I/O here (fuzzed by
// fuzz/openai_request_fuzz.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/chat/chat_template.h"
#include "core/status/status.h"

namespace tessera::serve {

struct CompletionRequest {
  bool chat = false;
  std::string model;
  // /v1/completions: the prompt as text, or as token ids.
  std::string prompt;
  std::vector<int32_t> prompt_tokens;
  bool prompt_is_tokens = false;
  // /v1/chat/completions.
  std::vector<chat::ChatMessage> messages;
  std::optional<int64_t> max_tokens;  // absent: the server's default
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<int64_t> top_k;  // llama-server's extension
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
  bool ignore_eos = false;  // llama-server's extension: run to max_tokens
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  // Token log-probabilities with this many alternatives: /v1/completions'
  // `logprobs` (an integer), chat's `logprobs: true` with `top_logprobs`.
  std::optional<int> logprobs;
  std::optional<double> presence_penalty;  // in [-2, 2]
  std::optional<double> frequency_penalty;
};

// INVALID_ARGUMENT naming the field for a body that is not what the API
// takes (bad JSON, wrong types, out-of-range values, an empty prompt or
// message list, `n` other than 1); UNIMPLEMENTED naming the field for a
// feature this server does not have (echo, logit_bias, best_of, suffix,
// response_format other than text, tools), never silently ignored.
Result<CompletionRequest> parse_completion_request(std::string_view body, bool chat);

// One generated token as `logprobs` report it: its text, log-probability
// (the model's, temperature 1; -9999 stands for -inf, as OpenAI writes it),
// the most likely alternatives, and where its text starts in the answer.
struct TokenChoice {
  std::string token;
  float logprob = 0;
};
struct ScoredToken {
  std::string token;
  float logprob = 0;
  std::vector<TokenChoice> top;
  int64_t text_offset = 0;  // bytes of the answer before this token's text
};

struct CompletionResult {
  std::string id;  // "cmpl-..." / "chatcmpl-..."
  std::string model;
  int64_t created = 0;  // Unix seconds
  std::string text;
  std::string finish_reason;  // "stop" | "length"
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;  // of them, those the prefix cache held
  int64_t completion_tokens = 0;
  uint64_t seed = 0;                // the sampler's seed (the request's, or drawn for it)
  bool logprobs = false;            // the request asked for them
  std::vector<ScoredToken> scored;  // the whole answer's (non-streamed)
};

// Now, in Unix seconds (the `created` of responses and models).
int64_t unix_seconds();

// The whole response body.
std::string completion_json(const CompletionResult& result, bool chat);
// One server-sent event (`data: {...}\n\n`) carrying `text`, and with
// result.logprobs the log-probabilities of the tokens it carries; with
// finish_reason set, the last chunk. `first` (chat): the chunk carries the
// assistant role.
std::string completion_chunk(const CompletionResult& result, bool chat, const std::string& text,
                             const std::string& finish_reason, bool first,
                             const std::vector<ScoredToken>& scored = {});
// The usage chunk (stream_options.include_usage) and the stream's end.
std::string usage_chunk(const CompletionResult& result, bool chat);
inline constexpr std::string_view kStreamDone = "data: [DONE]\n\n";

// {"error": {...}} as OpenAI writes errors (code and param null when absent).
std::string error_json(std::string_view message, std::string_view type,
                       const std::optional<std::string>& code,
                       const std::optional<std::string>& param = std::nullopt);
// The field an error message names ("'top_p' must be ..." -> "top_p").
std::optional<std::string> error_param(std::string_view message);
// GET /v1/models, and GET /v1/models/{id} for the one served.
std::string models_json(const std::string& model, int64_t created);
std::string model_json(const std::string& model, int64_t created);

// The finish_reason of a turn that ended its answer: "stop" (end of text, a
// stop token or string), "length" (max_tokens, or the context is full);
// nullopt for a turn cut short (shutdown, cancelled, a failure), which must
// not look complete.
std::optional<std::string> complete_finish_reason(const std::string& stop_reason);

}  // namespace tessera::serve
