// The sessions behind a server: a SessionManager owned by one thread that
// steps its decode loop, and a thread-safe face for the request threads
// (gRPC, HTTP). Every call is a command run on the loop thread between two
// steps, so the engine is only ever touched there; a turn's tokens come back
// through a TokenStream the request thread reads as they are produced.
#pragma once

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
  Result<SessionInfo> info(const std::string& id, const std::string& owner);
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
  bool stopping_ = false;
  bool stopped_ = false;
  std::thread thread_;
};

}  // namespace tessera
