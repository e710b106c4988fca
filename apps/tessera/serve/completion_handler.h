// POST /v1/completions and /v1/chat/completions: a request body in, a
// whole response or a stream of server-sent events out. Each completion is
// a session of its own, created, fed its prompt and started in one step (so
// no other request can evict it before it runs), and closed when it ends.
// At server.max_sessions a request waits for a free session up to
// server.queue_timeout_s, then gets 503 with Retry-After. An answer that
// was cut short (shutdown, a failure) never ends like a complete one.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "apps/tessera/chat_prompt.h"
#include "apps/tessera/serve/http_responder.h"
#include "core/session/session_runtime.h"

namespace tessera::serve {

struct CompletionRequest;

struct CompletionSettings {
  int64_t default_max_tokens = 256;  // when a request gives none
  std::string model_name;
  double queue_timeout_s = 30;  // waiting for a free session at the limit
};

class CompletionHandler {
 public:
  CompletionHandler(Engine& engine, SessionRuntime& runtime, cli::ChatSetup chat,
                    CompletionSettings settings)
      : engine_(engine),
        runtime_(runtime),
        chat_(std::move(chat)),
        settings_(std::move(settings)) {}

  // Answers one request of `key` (already authorised).
  void handle(const std::string& body, const std::string& key, bool chat, HttpResponder& out);
  // Completions being answered now.
  int in_flight() const { return in_flight_.load(); }

 private:
  Result<std::vector<int32_t>> prompt_tokens(const CompletionRequest& request) const;

  Engine& engine_;
  SessionRuntime& runtime_;
  cli::ChatSetup chat_;
  CompletionSettings settings_;
  std::atomic<int> in_flight_{0};
};

// The HTTP status and OpenAI error body of a failed call.
struct HttpError {
  int status = 500;
  std::string body;
};
// `field`: the request field at fault (OpenAI's `param`) when the message
// does not begin by naming one ('top_p' must be ...); given only for a 400.
HttpError http_error(const Status& status, const std::optional<std::string>& field = std::nullopt);

}  // namespace tessera::serve
