// The sessions behind a server: a SessionManager owned by one thread that
// steps its decode loop, and a thread-safe face for the request threads
// (gRPC, HTTP). Every call is a command run on the loop thread between two
// steps, so the engine is only ever touched there; a turn's tokens come back
// through a TokenStream the request thread reads as they are produced.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "core/session/session_manager.h"
#include "core/session/session_metrics.h"

namespace tessera {

// One turn's tokens, from the loop thread to the thread that serves it.
class TokenStream {
 public:
  struct Event {
    bool end = false;
    int32_t token = -1;
    double seconds = 0;       // since the turn started (end: its total)
    GenerateOutcome outcome;  // when end
    // The token's log-probability record, when the turn asked for them.
    std::optional<TokenLogprob> logprob;
  };
  // The next event, waiting for it; false once the end was read.
  bool next(Event& event);
  // The reader is gone (a client that disconnected): the turn is cancelled
  // at the next step, and its session stays usable.
  void abandon();

 private:
  friend class SessionRuntime;
  void push(Event event);
  bool abandoned() const;

  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Event> events_;
  bool ended_ = false;
  bool abandoned_ = false;
};

// A one-turn session started by SessionRuntime::start_turn.
struct StartedTurn {
  std::string session_id;
  uint64_t seed = 0;  // its sampler's seed: send it back to replay the turn
  std::shared_ptr<TokenStream> stream;
  int64_t cached_tokens = 0;  // prompt tokens whose K/V came from the prefix cache
};

class SessionRuntime {
 public:
  SessionRuntime(Engine& engine, SessionLimits limits);
  ~SessionRuntime();  // shutdown()
  SessionRuntime(const SessionRuntime&) = delete;
  SessionRuntime& operator=(const SessionRuntime&) = delete;

  Result<std::string> create(const SessionOptions& options, const std::string& owner);
  Status append(const std::string& id, const std::string& owner, std::vector<int32_t> tokens);
  Result<std::shared_ptr<TokenStream>> generate(const std::string& id, const std::string& owner,
                                                const GenerateOptions& options);
  Status cancel(const std::string& id, const std::string& owner);
  Result<std::string> fork(const std::string& id, const std::string& owner);
  Status close(const std::string& id, const std::string& owner);
  // Creates a session, appends `prompt` and starts its turn in one command
  // of the loop thread (SessionManager::start_turn): the session generates
  // from the moment it exists, so no other request can evict it before its
  // turn. RESOURCE_EXHAUSTED when no idle session may make room (every
  // session, or every one of the key's at its quota, is generating); retry
  // after wait_for_capacity. Its errors name no session. The session stays
  // after the turn: close it.
  Result<StartedTurn> start_turn(const SessionOptions& options, const std::string& owner,
                                 std::vector<int32_t> prompt, const GenerateOptions& generate);
  // Waits until `owner` could get a session (a free slot, or an idle session
  // the rules let it evict) and returns true; false once `deadline` passes
  // without one. It wakes when a turn or a session ends (signalled from the
  // loop thread), so no polling; true at once while shutting down (the
  // retried call then says UNAVAILABLE). Room found is not reserved: another
  // caller may take it first, so retry start_turn (or create) and wait
  // again on RESOURCE_EXHAUSTED.
  bool wait_for_capacity(const std::string& owner, std::chrono::steady_clock::time_point deadline);
  Result<SessionInfo> info(const std::string& id, const std::string& owner,
                           bool with_history = false);
  // SessionManager::chosen_seed: set options.seed to it before create to
  // learn the seed a new session gets.
  uint64_t chosen_seed(const SessionOptions& options) const {
    return sessions_.chosen_seed(options);
  }
  SessionMetrics metrics();

  // Ends every running turn ("shutdown", streamed to its reader) and stops
  // the loop thread; calls after it are UNAVAILABLE.
  void shutdown();

 private:
  // Runs `command` on the loop thread and waits for it (UNAVAILABLE once
  // shut down).
  Status run(const std::function<Status(SessionManager&)>& command);
  template <typename T>
  Result<T> run_for(const std::function<Result<T>(SessionManager&)>& command);
  void loop_thread();
  // The callbacks that carry a turn's tokens and end to `stream`.
  static ScoredTokenSink stream_sink(const std::shared_ptr<TokenStream>& stream,
                                     std::chrono::steady_clock::time_point start);
  static std::function<void(const GenerateOutcome&)> stream_end(
      const std::shared_ptr<TokenStream>& stream, std::chrono::steady_clock::time_point start);
  // Tells wait_for_capacity's waiters when turns or sessions ended (loop
  // thread).
  void publish_room_events();

  Engine& engine_;
  SessionManager sessions_;
  SessionMetrics metrics_;  // written on the loop thread, read under mutex_
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> commands_;
  // Streams of running turns, to cancel those whose reader left.
  struct Reader {
    std::string id, owner;
    std::weak_ptr<TokenStream> stream;
  };
  std::vector<Reader> streams_;  // loop thread only
  std::condition_variable room_;
  int64_t room_events_ = 0;            // under mutex_: SessionManager::room_events, published
  int64_t room_events_published_ = 0;  // loop thread only
  bool stopping_ = false;
  bool stopped_ = false;
  std::thread thread_;
};

}  // namespace tessera
