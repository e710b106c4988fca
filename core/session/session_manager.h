// Sessions: long-lived lanes that keep their history's K/V between turns.
// A session is a cache sequence and the raw tokens it holds; each turn
// appends tokens and generates, feeding only what is new (never the history
// again). Many sessions share one engine and one decode loop, stepped by the
// thread that owns this object (it is not thread-safe; SessionRuntime puts a
// thread and a queue around it).
//
// The contract (docs/serving.md): ids are 128 random bits; a session is seen
// only by the key that created it (when keys are in use); at most
// max_sessions live, the least recently used evicted to make room and any
// idle past the TTL expired, each eviction counted with its reason and
// remembered, so a later call on it says why it is gone. A session whose
// step fails is closed with the reason (FAILED_PRECONDITION to its caller),
// never silently reset. INV-1 and INV-2 are checked by CheckedCacheStore
// after every mutation; INV-3 by tests/schedule and tests/session.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/engine/decode_loop.h"
#include "core/sampling/sampler.h"
#include "core/status/status.h"

namespace tessera {

class Engine;

struct SessionLimits {
  int64_t max_sessions = 64;
  double idle_ttl_seconds = 1800;  // <= 0: sessions never expire
};

struct SessionOptions {
  std::optional<SamplingParams> sampling;  // default: the config's [sampling]
  std::optional<uint64_t> seed;            // default: sampling's seed
  // One of Engine::proposer_choices(); default: decode.proposer.
  std::optional<std::string> proposer;
};

struct GenerateOptions {
  int64_t max_tokens = 128;
  std::vector<int32_t> stop_tokens;  // end the turn (kept in the history, not streamed)
  bool stop_at_eos = true;           // the vocabulary's end-of-generation tokens
};

struct SessionInfo {
  std::string id;
  int64_t tokens = 0;               // the raw history, whole
  int32_t last_token = -1;          // its last (-1: empty): the text of what follows starts there
  int64_t cached = 0;               // of them with K/V in the cache
  int64_t stored_entries = 0;       // entries the store holds (fewer under sink_window)
  std::size_t kv_bytes = 0;         // K/V bytes of its stored entries (CacheStore::sequence_bytes)
  std::size_t kv_shared_bytes = 0;  // of them, in blocks shared with a fork
  std::string proposer;             // what drafts for it
  double idle_seconds = 0;          // since its last use
  bool generating = false;
};

// Why sessions were evicted, and other counts the metrics report.
struct SessionCounters {
  int64_t created = 0;
  int64_t closed = 0;
  int64_t evicted_lru = 0;
  int64_t evicted_ttl = 0;
  int64_t failed = 0;  // closed because a step failed (an invariant broke)
  int64_t tokens_in = 0;
  int64_t tokens_out = 0;
};

// A turn's end, as its caller hears of it.
struct GenerateOutcome {
  std::string stop_reason;  // the decode loop's, "stop_token", or "closed"
  int64_t generated = 0;
  Status status;        // not ok when the session failed during the turn
  int64_t steps = 0;    // decode steps it took
  int64_t drafted = 0;  // tokens its proposer drafted in them
};

class SessionManager {
 public:
  using Clock = std::chrono::steady_clock;

  SessionManager(Engine& engine, SessionLimits limits,
                 std::function<Clock::time_point()> clock = Clock::now);
  ~SessionManager();
  SessionManager(const SessionManager&) = delete;
  SessionManager& operator=(const SessionManager&) = delete;

  // A new session (owned by `owner`, the caller's key, "" without keys).
  // At capacity the least recently used idle session is evicted; when every
  // session is generating, RESOURCE_EXHAUSTED.
  Result<std::string> create(const SessionOptions& options, const std::string& owner);
  // Appends raw token ids to the history (each checked against the
  // vocabulary; none appended if one is out of range). Not while it
  // generates (FAILED_PRECONDITION). The tokens are fed at the next turn.
  Status append(const std::string& id, const std::string& owner, std::span<const int32_t> tokens);
  // Starts a turn: `sink` gets each token as the loop produces it (false
  // cancels), `done` once at the end. One turn per session at a time.
  Status generate(const std::string& id, const std::string& owner, const GenerateOptions& options,
                  TokenSink sink, std::function<void(const GenerateOutcome&)> done);
  // Ends the session's running turn ("cancelled"); nothing when it has none.
  Status cancel(const std::string& id, const std::string& owner);
  // A new session with the same history (its K/V forked: copy-on-write on
  // paged, copied elsewhere) and the same sampler state.
  Result<std::string> fork(const std::string& id, const std::string& owner);
  // Ends the session (a running turn ends "closed").
  Status close(const std::string& id, const std::string& owner);
  Result<SessionInfo> info(const std::string& id, const std::string& owner);

  // Runs one step of the running turns (nothing when none runs); returns the
  // lanes it ran. A failed step closes the sessions that were in it (counted
  // as failed).
  std::size_t step();
  bool generating() const { return !loop_.idle(); }
  // Evicts sessions idle past the TTL.
  void expire_idle();
  // Ends every running turn with `reason` (a server shutting down).
  void cancel_all(const std::string& reason);

  std::size_t live() const { return sessions_.size(); }
  const SessionCounters& counters() const { return counters_; }

 private:
  struct Session {
    std::string owner;
    SequenceState lane;
    Clock::time_point last_use;
    std::optional<TurnId> turn;
  };

  // The session, or NOT_FOUND (saying why when it was evicted or failed).
  Result<Session*> find(const std::string& id, const std::string& owner);
  Status make_room();
  // Releases the session's sequence and remembers why it ended (`id` by
  // value: callers pass the map key this erases).
  void end_session(std::string id, const std::string& reason);
  std::string new_id();

  Engine& engine_;
  SessionLimits limits_;
  std::function<Clock::time_point()> clock_;
  DecodeLoop loop_;
  std::map<std::string, Session> sessions_;
  // Why recent sessions ended (the last kRemembered), for NOT_FOUND messages.
  static constexpr std::size_t kRemembered = 4096;
  std::map<std::string, std::string> ended_;
  std::deque<std::string> ended_order_;
  SessionCounters counters_;
  // Turns that ended in a failed step: their sessions close after it.
  struct FailedTurn {
    std::string id;
    int64_t generated = 0;
    std::function<void(const GenerateOutcome&)> done;
  };
  std::vector<FailedTurn> failed_;
};

}  // namespace tessera
