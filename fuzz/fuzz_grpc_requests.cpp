// The gRPC session API's handlers (tessera.v1.Runtime, through
// apps/tessera/serve/runtime_calls.h, as grpc_service.cpp calls them) on a
// real engine (stories260K, paged cache of 48 tokens a session, at most 4
// sessions), driven by a script of calls: each call is
//   [method and key byte] [length byte] [that many bytes: the request, protobuf]
// A request that does not parse is what gRPC itself refuses before any
// handler runs, so it is skipped. A session id of at most one byte names the
// k-th session this input created, so scripts reach real sessions: appends,
// turns, forks and closes in any order, under two keys.
//
// Oracles: every status is one the proto promises (OK, INVALID_ARGUMENT,
// NOT_FOUND, FAILED_PRECONDITION, RESOURCE_EXHAUSTED, UNAUTHENTICATED); a
// turn streams at most max_tokens tokens, then exactly one TurnEnd that
// counts them; a session's info keeps cached <= history (and its ids, when
// asked, are history_tokens many); an append that succeeds grows the history
// by what it appended; a new session's info reports the seed its creation
// did; no status message is long (echoed ids and names are capped).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <google/protobuf/stubs/logging.h>

#include "apps/tessera/serve/runtime_calls.h"
#include "core/engine/engine.h"
#include "fuzz/fuzz_support.h"

namespace {

using namespace tessera;

void check(bool condition) {
  if (!condition) std::abort();
}

void check_promised(const grpc::Status& status) {
  check(status.error_message().size() <= 1024);
  switch (status.error_code()) {
    case grpc::StatusCode::OK:
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::NOT_FOUND:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
    case grpc::StatusCode::UNAUTHENTICATED:
      return;
    default:
      std::abort();
  }
}

struct Served {
  std::unique_ptr<Engine> engine;
  std::unique_ptr<SessionRuntime> runtime;
  std::unique_ptr<serve::RuntimeCalls> calls;
};

Served& served() {
  static Served* s = [] {
    // A string field that is not UTF-8 is a parse failure (skipped), which
    // protobuf also logs; the log would drown the fuzzer's own output.
    google::protobuf::SetLogHandler(nullptr);
    auto* out = new Served;
    auto config =
        Config::parse(std::string("[model]\npath = \"") + TESSERA_SHARED_DIR +
                          "/models/stories260K.gguf\"\n[scheduler]\nplugin = "
                          "\"continuous\"\n[cache]\nplugin = \"paged\"\nmax_tokens = 48\n",
                      "fuzz.toml");
    check(config.ok());
    auto engine = Engine::create(*config, fuzz::builtin_registry());
    check(engine.ok());
    out->engine = std::move(engine).value();
    out->runtime = std::make_unique<SessionRuntime>(
        *out->engine, SessionLimits{.max_sessions = 4, .idle_ttl_seconds = 0});
    out->calls = std::make_unique<serve::RuntimeCalls>(*out->engine, *out->runtime);
    return out;
  }();
  return *s;
}

// Parses the request; a short session id names one of this input's sessions.
template <typename Request>
bool parse(const uint8_t* data, std::size_t size, const std::vector<std::string>& sessions,
           Request& request) {
  if (!request.ParseFromArray(data, static_cast<int>(size))) return false;
  if constexpr (requires { request.session_id(); }) {
    if (request.session_id().size() <= 1 && !sessions.empty()) {
      const std::size_t k = request.session_id().empty()
                                ? 0
                                : static_cast<uint8_t>(request.session_id()[0]) % sessions.size();
      request.set_session_id(sessions[k]);
    }
  }
  return true;
}

void run_call(int method, const std::string& key, const uint8_t* data, std::size_t size,
              std::vector<std::string>& sessions) {
  serve::RuntimeCalls& calls = *served().calls;
  switch (method) {
    case 0: {
      v1::CreateSessionRequest request;
      v1::CreateSessionResponse response;
      if (!parse(data, size, sessions, request)) return;
      const grpc::Status status = calls.create_session(key, request, response);
      check_promised(status);
      if (!status.ok()) return;
      sessions.push_back(response.session_id());
      v1::GetSessionInfoRequest ask;
      ask.set_session_id(response.session_id());
      v1::SessionInfo info;
      check(calls.session_info(key, ask, info).ok() && info.seed() == response.seed());
      return;
    }
    case 1: {
      v1::AppendTokensRequest request;
      v1::AppendTokensResponse response;
      if (!parse(data, size, sessions, request)) return;
      v1::GetSessionInfoRequest ask;
      ask.set_session_id(request.session_id());
      v1::SessionInfo before;
      const bool known = calls.session_info(key, ask, before).ok();
      const grpc::Status status = calls.append_tokens(key, request, response);
      check_promised(status);
      if (status.ok() && known)
        check(response.history_tokens() == before.history_tokens() + request.tokens_size());
      return;
    }
    case 2: {
      v1::GenerateRequest request;
      if (!parse(data, size, sessions, request)) return;
      int64_t tokens = 0, ends = 0, counted = -1;
      const grpc::Status status = calls.generate(
          key, request,
          [&](const v1::GenerateResponse& event) {
            if (event.has_end()) {
              ++ends;
              counted = event.end().generated();
            } else {
              check(ends == 0);
              ++tokens;
            }
            return true;
          },
          [] { return false; });
      check_promised(status);
      if (status.ok()) {
        check(ends == 1 && counted == tokens && tokens <= request.max_tokens());
      }
      return;
    }
    case 3: {
      v1::GetSessionInfoRequest request;
      v1::SessionInfo info;
      if (!parse(data, size, sessions, request)) return;
      const grpc::Status status = calls.session_info(key, request, info);
      check_promised(status);
      if (status.ok())
        check(info.cached_tokens() <= info.history_tokens() &&
              info.history_size() == (request.include_history() ? info.history_tokens() : 0));
      return;
    }
    case 4: {
      v1::ForkSessionRequest request;
      v1::CreateSessionResponse response;
      if (!parse(data, size, sessions, request)) return;
      const grpc::Status status = calls.fork_session(key, request, response);
      check_promised(status);
      if (status.ok()) sessions.push_back(response.session_id());
      return;
    }
    case 5: {
      v1::CloseSessionRequest request;
      if (!parse(data, size, sessions, request)) return;
      check_promised(calls.close_session(key, request));
      return;
    }
    case 6: {
      v1::TokenizeRequest request;
      v1::TokenizeResponse response;
      if (!parse(data, size, sessions, request)) return;
      check_promised(calls.tokenize(request, response));
      return;
    }
    default: {
      v1::DetokenizeRequest request;
      v1::DetokenizeResponse response;
      if (!parse(data, size, sessions, request)) return;
      check_promised(calls.detokenize(request, response));
      return;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::vector<std::string> keys = {"key-a", "key-b"};
  std::vector<std::string> sessions;
  std::size_t at = 0;
  for (int call = 0; call < 16 && at + 2 <= size; ++call) {
    const uint8_t head = data[at];
    const std::size_t length = std::min<std::size_t>(data[at + 1], size - at - 2);
    // Bits 3-4 of the head pick the caller: no key, key-a, key-b, a wrong key.
    static const std::optional<std::string> callers[] = {std::nullopt, "Bearer key-a",
                                                         "Bearer key-b", "Bearer nobody"};
    std::string key;
    const grpc::Status allowed = serve::authorize(keys, callers[(head >> 3) & 3], key);
    check_promised(allowed);
    if (allowed.ok()) run_call(head & 7, key, data + at + 2, length, sessions);
    at += 2 + length;
  }
  // The next input starts from no sessions of its own (keys see only theirs).
  for (const std::string& id : sessions) {
    for (const char* owner : {"key-a", "key-b"}) {
      v1::CloseSessionRequest request;
      request.set_session_id(id);
      (void)served().calls->close_session(owner, request);
    }
  }
  return 0;
}
