#include "apps/tessera/serve/completion_handler.h"

#include <chrono>
#include <cstdio>
#include <optional>
#include <random>
#include <thread>
#include <utility>

#include "apps/tessera/serve/openai_api.h"
#include "apps/tessera/serve/text_stream.h"
#include "core/engine/engine.h"

namespace tessera::serve {
namespace {

using Clock = std::chrono::steady_clock;

std::string completion_id(bool chat) {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}();
  char text[40];
  std::snprintf(text, sizeof text, "%016llx%04llx", static_cast<unsigned long long>(salt),
                static_cast<unsigned long long>(counter++ & 0xffff));
  return std::string(chat ? "chatcmpl-" : "cmpl-") + text;
}

HttpResponse error_response(const HttpError& error) {
  return json_response(error.status, error.body);
}

// One completion: its session, its turn's stream, its text.
struct Completion {
  std::atomic<int>& in_flight;
  SessionRuntime& runtime;
  std::string session, owner;
  std::shared_ptr<TokenStream> stream;
  TextStream text;
  CompletionResult result;
  bool cancelled = false;  // a stop string ended it: the rest of the turn is dropped
  // With logprobs: the tokens pushed since the last chunk, the token before
  // the next (its text depends on it), and the answer's bytes so far.
  std::vector<ScoredToken> pending;
  int32_t previous = -1;
  int64_t offset = 0;
  std::string cut_short;  // the turn ended before its answer did (why)
  StatusCode cut_code = StatusCode::kOk;

  Completion(std::atomic<int>& counter, SessionRuntime& r, const Tokenizer& tokenizer,
             int32_t last_prompt_token, std::vector<std::string> stop)
      : in_flight(counter), runtime(r), text(tokenizer, last_prompt_token, std::move(stop)) {
    ++in_flight;
  }
  ~Completion() {
    if (stream) stream->abandon();
    if (!session.empty()) (void)runtime.close(session, owner);
    --in_flight;
  }

  // The next text to send, or nullopt at the end (finish_reason set, or
  // cut_short when the answer is incomplete).
  std::optional<std::string> next() {
    TokenStream::Event event;
    while (stream->next(event)) {
      if (event.end) {
        finish(event.outcome);
        return std::nullopt;
      }
      if (cancelled) continue;
      ++result.completion_tokens;
      if (event.logprob) score(*event.logprob);
      std::string piece = text.push(event.token);
      if (text.stopped()) {
        cancelled = true;
        (void)runtime.cancel(session, owner);
      }
      if (!piece.empty()) return piece;
    }
    return std::nullopt;
  }

  // A token's record as the API reports it, its text and its alternatives'
  // read after the token before it.
  void score(const TokenLogprob& record) {
    const Tokenizer& tokenizer = text.tokenizer();
    ScoredToken scored;
    scored.token = tokenizer.decode_token(previous, record.token);
    scored.logprob = record.logprob;
    scored.text_offset = offset;
    for (int j = 0; j < record.top_count; ++j) {
      const auto at = static_cast<std::size_t>(j);
      scored.top.push_back(
          {tokenizer.decode_token(previous, record.top_tokens[at]), record.top_logprobs[at]});
    }
    offset += static_cast<int64_t>(scored.token.size());
    previous = record.token;
    pending.push_back(std::move(scored));
  }
  // The records not yet sent, handed over.
  std::vector<ScoredToken> take_scored() {
    std::vector<ScoredToken> out;
    out.swap(pending);
    return out;
  }

  void finish(const GenerateOutcome& outcome) {
    if (cancelled) {  // our own cancel after a stop string
      result.finish_reason = "stop";
      return;
    }
    if (!outcome.status.ok()) {
      // The status names the request's internal session: the log has it,
      // the client gets what it needs.
      std::fprintf(stderr, "tessera serve: a completion's session failed: %s\n",
                   outcome.status.to_string().c_str());
      cut_short =
          "the session failed while generating; the answer is incomplete (the server "
          "log says why)";
      cut_code = StatusCode::kInternal;
      return;
    }
    if (auto reason = complete_finish_reason(outcome.stop_reason)) {
      result.finish_reason = *reason;
      return;
    }
    if (outcome.stop_reason == "shutdown") {
      cut_short = "the server is shutting down; the answer was cut short after " +
                  std::to_string(result.completion_tokens) + " tokens";
      cut_code = StatusCode::kUnavailable;
    } else {
      cut_short = "the turn ended before its answer did (" + outcome.stop_reason +
                  "); the answer is incomplete";
      cut_code = StatusCode::kInternal;
    }
  }
};

// Starts the request's turn, waiting (up to the queue deadline) while every
// session is busy.
Result<StartedTurn> start_when_free(SessionRuntime& runtime, const SessionOptions& options,
                                    const std::string& key, const std::vector<int32_t>& prompt,
                                    const GenerateOptions& generate, double queue_timeout_s) {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(queue_timeout_s));
  while (true) {
    auto started = runtime.start_turn(options, key, prompt, generate);
    if (started.ok() || started.status().code() != StatusCode::kResourceExhausted ||
        Clock::now() >= deadline)
      return started;
    if (!runtime.wait_for_capacity(key, deadline)) return started;
  }
}

}  // namespace

HttpError http_error(const Status& status, const std::optional<std::string>& field) {
  int code = 500;
  std::string type = "server_error";
  std::optional<std::string> error_code;
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
      code = 400;
      type = "invalid_request_error";
      break;
    case StatusCode::kNotFound:
      code = 404;
      type = "invalid_request_error";
      error_code = "not_found";
      break;
    case StatusCode::kResourceExhausted:
      code = 503;  // capacity of this server, not a rate the client exceeded
      error_code = "server_busy";
      break;
    case StatusCode::kUnavailable:
      code = 503;
      error_code = "server_unavailable";
      break;
    case StatusCode::kUnimplemented:
      code = 400;
      type = "invalid_request_error";
      error_code = "unsupported_parameter";
      break;
    default:
      break;
  }
  std::optional<std::string> param = error_param(status.message());
  if (!param && code == 400) param = field;
  return {code, error_json(status.message(), type, error_code, param)};
}

void CompletionHandler::handle(const std::string& body, const std::string& key, bool chat,
                               HttpResponder& out) {
  auto parsed = parse_completion_request(body, chat);
  if (!parsed.ok()) return (void)out.send(error_response(http_error(parsed.status())));
  const CompletionRequest& request = *parsed;
  auto tokens = prompt_tokens(request);
  // The prompt's own errors (ids outside the vocabulary, messages the
  // template cannot render) are the prompt field's.
  const std::string prompt_field = chat ? "messages" : "prompt";
  if (!tokens.ok())
    return (void)out.send(error_response(http_error(tokens.status(), prompt_field)));
  // A prompt the context cannot hold (with room for one token) is the
  // client's error, as OpenAI and llama-server answer it: 400, never a
  // retryable status.
  const int64_t context = engine_.max_tokens();
  if (!engine_.cache().policy().evicts && static_cast<int64_t>(tokens->size()) > context - 1)
    return (void)out.send(json_response(
        400, error_json("This model's maximum context length is " + std::to_string(context) +
                            " tokens (cache.max_tokens). However, your prompt is " +
                            std::to_string(tokens->size()) +
                            " tokens, leaving no room to generate. Shorten the prompt.",
                        "invalid_request_error", "context_length_exceeded", prompt_field)));

  SessionOptions session_options;
  SamplingParams sampling = engine_.sampling();
  if (request.temperature) sampling.temperature = static_cast<float>(*request.temperature);
  if (request.top_p) {
    // OpenAI takes top_p = 0: the smallest nucleus, the most likely token.
    if (*request.top_p <= 0) sampling.temperature = 0;
    sampling.top_p = static_cast<float>(*request.top_p);
  }
  if (request.top_k) sampling.top_k = static_cast<int>(*request.top_k);
  if (request.presence_penalty)
    sampling.presence_penalty = static_cast<float>(*request.presence_penalty);
  if (request.frequency_penalty)
    sampling.frequency_penalty = static_cast<float>(*request.frequency_penalty);
  session_options.sampling = sampling;
  session_options.seed = request.seed;
  auto completion = std::make_shared<Completion>(in_flight_, runtime_, engine_.tokenizer(),
                                                 tokens->back(), request.stop);
  completion->owner = key;
  completion->previous = tokens->back();
  completion->result.logprobs = request.logprobs.has_value();
  completion->result.id = completion_id(chat);
  completion->result.model = settings_.model_name;
  completion->result.created = unix_seconds();
  completion->result.prompt_tokens = static_cast<int64_t>(tokens->size());
  GenerateOptions generate;
  generate.max_tokens = request.max_tokens.value_or(settings_.default_max_tokens);
  generate.stop_at_eos = !request.ignore_eos;
  generate.logprobs = request.logprobs.value_or(-1);
  auto started =
      start_when_free(runtime_, session_options, key, *tokens, generate, settings_.queue_timeout_s);
  if (!started.ok()) {
    // A start refused as a bad request is about the prompt's tokens: the
    // other fields it checks were checked when the body was parsed.
    HttpResponse busy = error_response(http_error(started.status(), prompt_field));
    if (busy.status == 503) busy.headers.emplace_back("Retry-After", "1");
    return (void)out.send(busy);
  }
  completion->session = started->session_id;
  completion->stream = started->stream;
  completion->result.seed = started->seed;
  completion->result.cached_tokens = started->cached_tokens;
  // The seed a sampled answer drew, so the run can be replayed with it.
  const std::vector<std::pair<std::string, std::string>> headers = {
      {"X-Tessera-Seed", std::to_string(started->seed)}};

  if (!request.stream) {
    while (auto piece = completion->next()) completion->result.text += *piece;
    completion->result.text += completion->text.finish();
    completion->result.scored = completion->take_scored();
    if (!completion->cut_short.empty()) {
      HttpResponse cut =
          error_response(http_error(Status(completion->cut_code, completion->cut_short)));
      return (void)out.send(cut);
    }
    HttpResponse whole = json_response(200, completion_json(completion->result, chat));
    whole.headers = headers;
    return (void)out.send(whole);
  }
  std::vector<std::pair<std::string, std::string>> stream_headers = headers;
  stream_headers.emplace_back("Cache-Control", "no-cache");
  if (!out.start_stream(200, "text/event-stream", stream_headers)) return;
  bool first = true;
  // A write that fails means the client left: returning drops the
  // Completion, whose destructor cancels the turn.
  while (auto piece = completion->next()) {
    if (!out.write(completion_chunk(completion->result, chat, *piece, "", first,
                                    completion->take_scored())))
      return;
    first = false;
  }
  std::string tail = completion->text.finish();
  std::vector<ScoredToken> scored_tail = completion->take_scored();
  std::string end;
  if (!tail.empty() || first || !scored_tail.empty())
    end += completion_chunk(completion->result, chat, tail, "", first, scored_tail);
  if (!completion->cut_short.empty()) {
    // OpenAI's clients raise on an event carrying an error; no [DONE]
    // follows, so nothing reads this stream as a whole answer.
    end += "data: " + http_error(Status(completion->cut_code, completion->cut_short)).body + "\n\n";
  } else {
    end += completion_chunk(completion->result, chat, "", completion->result.finish_reason, false);
    if (request.include_usage) end += usage_chunk(completion->result, chat);
    end += kStreamDone;
  }
  if (out.write(end)) out.finish();
}

Result<std::vector<int32_t>> CompletionHandler::prompt_tokens(
    const CompletionRequest& request) const {
  if (request.prompt_is_tokens) return request.prompt_tokens;
  if (!request.chat) {
    // Raw user text: special-token text stays text.
    ASSIGN_OR_RETURN(std::vector<int32_t> ids,
                     engine_.tokenizer().encode(request.prompt, /*add_bos=*/true));
    if (ids.empty()) return invalid_argument("'prompt' encodes to no tokens");
    return ids;
  }
  chat::ChatRequest rendered = chat_.request;
  rendered.messages = request.messages;
  rendered.add_generation_prompt = true;
  auto text = chat_.chat_template->render(rendered);
  if (!text.ok())
    return invalid_argument("the chat template (" + chat_.origin +
                            ") cannot render these messages: " + text.status().message());
  return cli::encode_chat_text(engine_.tokenizer(), *text, /*sequence_start=*/true);
}

}  // namespace tessera::serve
