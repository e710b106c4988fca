#include "core/session/session_runtime.h"

#include <chrono>
#include <future>
#include <utility>

#include "core/engine/engine.h"

namespace tessera {

bool TokenStream::next(Event& event) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (ended_ && events_.empty()) return false;
  ready_.wait(lock, [&] { return !events_.empty(); });
  event = std::move(events_.front());
  events_.pop_front();
  if (event.end) ended_ = true;
  return true;
}

void TokenStream::abandon() {
  std::lock_guard<std::mutex> lock(mutex_);
  abandoned_ = true;
}

void TokenStream::push(Event event) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back(std::move(event));
  }
  ready_.notify_one();
}

bool TokenStream::abandoned() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return abandoned_;
}

SessionRuntime::SessionRuntime(Engine& engine, SessionLimits limits)
    : engine_(engine), sessions_(engine, limits), thread_([this] { loop_thread(); }) {}

SessionRuntime::~SessionRuntime() {
  shutdown();
}

void SessionRuntime::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  wake_.notify_all();
  room_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Status SessionRuntime::run(const std::function<Status(SessionManager&)>& command) {
  std::promise<Status> result;
  std::future<Status> done = result.get_future();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return unavailable("the server is shutting down");
    commands_.push_back([&] { result.set_value(command(sessions_)); });
  }
  wake_.notify_all();
  return done.get();
}

void SessionRuntime::loop_thread() {
  for (;;) {
    std::deque<std::function<void()>> commands;
    bool stopping = false;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      // Idle: sleep until a command comes (or a minute passes: TTLs run on).
      if (commands_.empty() && !stopping_ && !sessions_.generating())
        wake_.wait_for(lock, std::chrono::seconds(1),
                       [&] { return !commands_.empty() || stopping_; });
      commands.swap(commands_);
      stopping = stopping_;
    }
    for (auto& command : commands) command();
    publish_room_events();
    if (stopping) break;
    // Turns whose reader left are cancelled; their sessions stay.
    for (auto it = streams_.begin(); it != streams_.end();) {
      const auto stream = it->stream.lock();
      if (!stream) {
        it = streams_.erase(it);
        continue;
      }
      if (stream->abandoned()) (void)sessions_.cancel(it->id, it->owner);
      ++it;
    }
    sessions_.expire_idle();
    if (!sessions_.generating()) {
      publish_room_events();
      continue;
    }
    const auto start = std::chrono::steady_clock::now();
    const std::size_t lanes = sessions_.step();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    publish_room_events();
    std::lock_guard<std::mutex> lock(mutex_);
    if (lanes > 0) {
      ++metrics_.steps;
      metrics_.step_seconds.observe(seconds);
      metrics_.batch_lanes.observe(static_cast<double>(lanes));
    }
  }
  // Shutdown: every running turn ends with a status its reader sees.
  sessions_.cancel_all("shutdown");
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopped_ = true;
    // Commands that came after the last swap fail rather than hang.
    for (auto& command : commands_) command();
    commands_.clear();
  }
}

void SessionRuntime::publish_room_events() {
  const int64_t events = sessions_.room_events();
  if (events == room_events_published_) return;
  room_events_published_ = events;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    room_events_ = events;
  }
  room_.notify_all();
}

template <typename T>
Result<T> SessionRuntime::run_for(const std::function<Result<T>(SessionManager&)>& command) {
  std::optional<Result<T>> result;
  const Status ran = run([&](SessionManager& sessions) {
    result.emplace(command(sessions));
    return ok_status();
  });
  RETURN_IF_ERROR(ran);
  return std::move(*result);
}

Result<std::string> SessionRuntime::create(const SessionOptions& options,
                                           const std::string& owner) {
  return run_for<std::string>(
      [&](SessionManager& sessions) { return sessions.create(options, owner); });
}

Status SessionRuntime::append(const std::string& id, const std::string& owner,
                              std::vector<int32_t> tokens) {
  return run([&](SessionManager& sessions) { return sessions.append(id, owner, tokens); });
}

ScoredTokenSink SessionRuntime::stream_sink(const std::shared_ptr<TokenStream>& stream,
                                            std::chrono::steady_clock::time_point start) {
  return [weak = std::weak_ptr<TokenStream>(stream), start](int32_t token, int,
                                                            const TokenLogprob* logprob) {
    const auto reader = weak.lock();
    if (!reader || reader->abandoned()) return false;
    TokenStream::Event event;
    event.token = token;
    event.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (logprob) event.logprob = *logprob;
    reader->push(std::move(event));
    return true;
  };
}

std::function<void(const GenerateOutcome&)> SessionRuntime::stream_end(
    const std::shared_ptr<TokenStream>& stream, std::chrono::steady_clock::time_point start) {
  return [weak = std::weak_ptr<TokenStream>(stream), start](const GenerateOutcome& outcome) {
    if (const auto reader = weak.lock())
      reader->push({true, -1,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                    outcome, std::nullopt});
  };
}

Result<std::shared_ptr<TokenStream>> SessionRuntime::generate(const std::string& id,
                                                              const std::string& owner,
                                                              const GenerateOptions& options) {
  auto stream = std::make_shared<TokenStream>();
  const Status ran = run([&](SessionManager& sessions) -> Status {
    const auto start = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(sessions.generate(id, owner, options, stream_sink(stream, start),
                                      stream_end(stream, start)));
    streams_.push_back({id, owner, stream});
    return ok_status();
  });
  RETURN_IF_ERROR(ran);
  return stream;
}

Result<StartedTurn> SessionRuntime::start_turn(const SessionOptions& options,
                                               const std::string& owner,
                                               std::vector<int32_t> prompt,
                                               const GenerateOptions& generate) {
  auto stream = std::make_shared<TokenStream>();
  return run_for<StartedTurn>([&](SessionManager& sessions) -> Result<StartedTurn> {
    const auto start = std::chrono::steady_clock::now();
    ASSIGN_OR_RETURN(const StartedSession started,
                     sessions.start_turn(options, owner, prompt, generate,
                                         stream_sink(stream, start), stream_end(stream, start)));
    streams_.push_back({started.id, owner, stream});
    return StartedTurn{started.id, started.seed, stream, started.cached_tokens};
  });
}

bool SessionRuntime::wait_for_capacity(const std::string& owner,
                                       std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    int64_t seen = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return true;
      seen = room_events_;  // read before the check: an end after it still wakes us
    }
    const Result<bool> room = run_for<bool>(
        [&](SessionManager& sessions) -> Result<bool> { return sessions.has_room_for(owner); });
    if (!room.ok() || *room) return true;
    std::unique_lock<std::mutex> lock(mutex_);
    if (!room_.wait_until(lock, deadline, [&] { return room_events_ != seen || stopping_; }))
      return false;
  }
}

Status SessionRuntime::cancel(const std::string& id, const std::string& owner) {
  return run([&](SessionManager& sessions) { return sessions.cancel(id, owner); });
}

Result<std::string> SessionRuntime::fork(const std::string& id, const std::string& owner) {
  return run_for<std::string>([&](SessionManager& sessions) { return sessions.fork(id, owner); });
}

Status SessionRuntime::close(const std::string& id, const std::string& owner) {
  return run([&](SessionManager& sessions) { return sessions.close(id, owner); });
}

Result<SessionInfo> SessionRuntime::info(const std::string& id, const std::string& owner,
                                         bool with_history) {
  return run_for<SessionInfo>(
      [&](SessionManager& sessions) { return sessions.info(id, owner, with_history); });
}

SessionMetrics SessionRuntime::metrics() {
  SessionMetrics metrics;
  const Status st = run([&](SessionManager& sessions) {
    metrics.sessions = sessions.counters();
    metrics.live_sessions = static_cast<int64_t>(sessions.live());
    const CacheBytes bytes = engine_.cache().bytes();
    metrics.kv_live_bytes = bytes.live;
    metrics.kv_peak_bytes = bytes.peak;
    metrics.prefix_cache = engine_.prefix_cache_stats();
    return ok_status();
  });
  std::lock_guard<std::mutex> lock(mutex_);
  metrics.steps = metrics_.steps;
  metrics.step_seconds = metrics_.step_seconds;
  metrics.batch_lanes = metrics_.batch_lanes;
  (void)st;  // after shutdown: the last counts the loop thread wrote
  return metrics;
}

}  // namespace tessera
