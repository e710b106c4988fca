#include "apps/tessera/serve/http_server.h"

#include <sys/socket.h>

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <utility>

#include "apps/tessera/serve/openai_api.h"
#include "apps/tessera/serve/text_stream.h"
#include "core/engine/engine.h"
#include "core/session/session_metrics.h"

namespace tessera::serve {
namespace {

int http_status(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
      return 400;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kResourceExhausted:
      return 429;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kUnimplemented:
      return 501;
    default:
      return 500;
  }
}

void send_error(httplib::Response& res, int code, const std::string& message,
                const std::string& type, const std::string& error_code) {
  res.status = code;
  res.set_content(error_json(message, type, error_code), "application/json");
}

void send_status(httplib::Response& res, const Status& status) {
  const int code = http_status(status);
  send_error(res, code, status.message(),
             code == 400   ? "invalid_request_error"
             : code == 429 ? "rate_limit_error"
                           : "server_error",
             std::string(status_code_name(status.code())));
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string completion_id(bool chat) {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}();
  char text[40];
  std::snprintf(text, sizeof text, "%016llx%04llx", static_cast<unsigned long long>(salt),
                static_cast<unsigned long long>(counter++ & 0xffff));
  return std::string(chat ? "chatcmpl-" : "cmpl-") + text;
}

}  // namespace

// One completion: its session, its turn's stream, its text.
struct Completion {
  std::atomic<int>& in_flight;
  SessionRuntime& runtime;
  std::string session, owner;
  std::shared_ptr<TokenStream> stream;
  TextStream text;
  CompletionResult result;
  bool chat = false;
  bool first_chunk = true;
  bool cancelled = false;  // a stop string ended it: the rest of the turn is dropped

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

  // The next text to send, or nullopt at the end (finish_reason set).
  std::optional<std::string> next() {
    TokenStream::Event event;
    while (stream->next(event)) {
      if (event.end) {
        if (!event.outcome.status.ok()) {
          result.finish_reason = "error";
          return std::nullopt;
        }
        result.finish_reason = cancelled ? "stop" : finish_reason(event.outcome.stop_reason);
        return std::nullopt;
      }
      if (cancelled) continue;
      ++result.completion_tokens;
      std::string piece = text.push(event.token);
      if (text.stopped()) {
        cancelled = true;
        (void)runtime.cancel(session, owner);
      }
      if (!piece.empty()) return piece;
    }
    return std::nullopt;
  }
};

class HttpServer::Handlers {
 public:
  Handlers(Engine& engine, SessionRuntime& runtime, cli::ChatSetup chat, const HttpOptions& options)
      : engine_(engine), runtime_(runtime), chat_(std::move(chat)), options_(options) {}

  // The caller's key ("" without keys), or false after answering 401.
  bool authorize(const httplib::Request& req, httplib::Response& res, std::string& key) const {
    if (options_.api_keys.empty()) return true;
    const std::string header = req.get_header_value("Authorization");
    const std::string prefix = "Bearer ";
    if (header.compare(0, prefix.size(), prefix) == 0) {
      key = header.substr(prefix.size());
      for (const std::string& allowed : options_.api_keys)
        if (key == allowed) return true;
    }
    send_error(res, 401, "missing or unknown API key: send 'Authorization: Bearer <key>'",
               "invalid_request_error", "invalid_api_key");
    return false;
  }

  void complete(const httplib::Request& req, httplib::Response& res, bool chat) {
    std::string key;
    if (!authorize(req, res, key)) return;
    auto parsed = parse_completion_request(req.body, chat);
    if (!parsed.ok()) return send_status(res, parsed.status());
    const CompletionRequest& request = *parsed;
    auto tokens = prompt_tokens(request);
    if (!tokens.ok()) return send_status(res, tokens.status());

    SessionOptions session_options;
    SamplingParams sampling = engine_.sampling();
    if (request.temperature) sampling.temperature = static_cast<float>(*request.temperature);
    if (request.top_p) sampling.top_p = static_cast<float>(*request.top_p);
    if (request.top_k) sampling.top_k = static_cast<int>(*request.top_k);
    session_options.sampling = sampling;
    session_options.seed = request.seed;
    auto completion = std::make_shared<Completion>(in_flight_, runtime_, engine_.tokenizer(),
                                                   tokens->back(), request.stop);
    completion->owner = key;
    completion->chat = chat;
    completion->result.id = completion_id(chat);
    completion->result.model = options_.model_name;
    completion->result.created = unix_now();
    completion->result.prompt_tokens = static_cast<int64_t>(tokens->size());
    auto session = runtime_.create(session_options, key);
    if (!session.ok()) return send_status(res, session.status());
    completion->session = *session;
    if (Status st = runtime_.append(*session, key, *tokens); !st.ok()) return send_status(res, st);
    GenerateOptions generate;
    generate.max_tokens = request.max_tokens.value_or(options_.default_max_tokens);
    generate.stop_at_eos = !request.ignore_eos;
    auto stream = runtime_.generate(*session, key, generate);
    if (!stream.ok()) return send_status(res, stream.status());
    completion->stream = *stream;

    if (!request.stream) {
      while (auto piece = completion->next()) completion->result.text += *piece;
      completion->result.text += completion->text.finish();
      if (completion->result.finish_reason == "error")
        return send_error(res, 500, "the session failed while generating; see the server log",
                          "server_error", "FAILED_PRECONDITION");
      res.set_content(completion_json(completion->result, chat), "application/json");
      return;
    }
    const bool usage = request.include_usage;
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream", [completion, chat, usage](std::size_t, httplib::DataSink& sink) {
          // A write that fails means the client left: returning false ends
          // the response, and the Completion's destructor cancels the turn.
          if (auto piece = completion->next()) {
            const std::string chunk =
                completion_chunk(completion->result, chat, *piece, "", completion->first_chunk);
            completion->first_chunk = false;
            return sink.write(chunk.data(), chunk.size());
          }
          std::string tail = completion->text.finish();
          std::string out;
          if (!tail.empty() || completion->first_chunk)
            out += completion_chunk(completion->result, chat, tail, "", completion->first_chunk);
          out += completion_chunk(completion->result, chat, "", completion->result.finish_reason,
                                  false);
          if (usage) out += usage_chunk(completion->result, chat);
          out += kStreamDone;
          const bool written = sink.write(out.data(), out.size());
          sink.done();
          return written;
        });
  }

  void models(const httplib::Request& req, httplib::Response& res) const {
    std::string key;
    if (!authorize(req, res, key)) return;
    res.set_content(models_json(options_.model_name, started_), "application/json");
  }

  int in_flight() const { return in_flight_.load(); }

  void metrics(httplib::Response& res) {
    res.set_content(prometheus_text(runtime_.metrics()), "text/plain; version=0.0.4");
  }

 private:
  Result<std::vector<int32_t>> prompt_tokens(const CompletionRequest& request) const {
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

  Engine& engine_;
  SessionRuntime& runtime_;
  cli::ChatSetup chat_;
  HttpOptions options_;
  int64_t started_ = unix_now();
  std::atomic<int> in_flight_{0};
};

HttpServer::HttpServer(Engine& engine, SessionRuntime& runtime, cli::ChatSetup chat,
                       HttpOptions options)
    : server_(std::make_unique<httplib::Server>()),
      handlers_(std::make_unique<Handlers>(engine, runtime, std::move(chat), options)),
      options_(std::move(options)) {
  const int threads = options_.threads;
  server_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // Instead of cpp-httplib's default (SO_REUSEPORT, which lets a second
  // server bind a port already served): SO_REUSEADDR only, and the listening
  // socket kept so bind() can widen its backlog.
  server_->set_socket_options([this](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    listen_socket_ = sock;
  });
  Handlers& h = *handlers_;
  server_->Get("/health", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{\"status\":\"ok\"}", "application/json");
  });
  server_->Get("/metrics",
               [&h](const httplib::Request&, httplib::Response& res) { h.metrics(res); });
  server_->Get("/v1/models",
               [&h](const httplib::Request& req, httplib::Response& res) { h.models(req, res); });
  server_->Post("/v1/completions", [&h](const httplib::Request& req, httplib::Response& res) {
    h.complete(req, res, false);
  });
  server_->Post("/v1/chat/completions", [&h](const httplib::Request& req, httplib::Response& res) {
    h.complete(req, res, true);
  });
  server_->set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 404)
      res.set_content(error_json("no route " + req.method + " " + req.path +
                                     " (routes: /v1/completions, /v1/chat/completions, "
                                     "/v1/models, /health, /metrics)",
                                 "invalid_request_error", "not_found"),
                      "application/json");
  });
  server_->set_payload_max_length(16 << 20);
}

HttpServer::~HttpServer() {
  stop();
}

Status HttpServer::bind() {
  if (options_.port == 0) {
    port_ = server_->bind_to_any_port(options_.host);
    if (port_ < 0) return unavailable("cannot bind an HTTP port on " + options_.host);
  } else {
    if (!server_->bind_to_port(options_.host, options_.port))
      return unavailable("cannot listen on " + options_.host + ":" + std::to_string(options_.port) +
                         " (in use, or not an address of this machine); choose another with "
                         "--http HOST:PORT");
    port_ = options_.port;
  }
  // Debian's cpp-httplib is built with a listen backlog of 5: clients
  // connecting at once overflow it, and one the kernel leaves waiting is cut
  // by the server's read timeout. Listening again widens the queue.
  if (listen_socket_ >= 0) ::listen(listen_socket_, SOMAXCONN);
  return ok_status();
}

void HttpServer::serve() {
  server_->listen_after_bind();
}

void HttpServer::drain(double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (handlers_->in_flight() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

void HttpServer::stop() {
  if (server_) server_->stop();
}

}  // namespace tessera::serve
