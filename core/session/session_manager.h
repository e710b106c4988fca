// Sessions: long-lived lanes that keep their history's K/V between turns.
// A session is a cache sequence and the raw tokens it holds; each turn
// appends tokens and generates, feeding only what is new (never the history
// again). Many sessions share one engine and one decode loop, stepped by the
// thread that owns this object (it is not thread-safe; SessionRuntime puts a
// thread and a queue around it).
//
// The contract (docs/serving.md): ids are 128 random bits; a session is seen
// only by the key that created it (when keys are in use), and another key
// asking about it, live or ended, gets the answer an unknown id gets; at most
// max_sessions live, idle ones evicted to make room and any idle past the
// TTL expired, each eviction counted with its reason and remembered, so a
// later call by its key says why it is gone. A session whose step fails is
// closed with the reason (FAILED_PRECONDITION to its caller), never silently
// reset. INV-1 and INV-2 are checked by CheckedCacheStore after every
// mutation; INV-3 by tests/schedule and tests/session.
//
// Which idle session makes room (a generating one never does):
//   - A key at max_sessions_per_key evicts its own least recently used idle
//     session; when all of its sessions generate, RESOURCE_EXHAUSTED (naming
//     server.max_sessions_per_key), whatever room the server has.
//   - At max_sessions, the victim is the least recently used idle session of
//     the key holding the most live sessions among the keys with an idle one
//     (ties: the least recently used across them). A key is thus never
//     evicted for a key holding more idle sessions than it; without keys (one
//     owner) this is plain LRU. When every session generates,
//     RESOURCE_EXHAUSTED (naming server.max_sessions).
//
// Seeds: a session's sampler starts from SessionOptions::seed; without one,
// from SessionLimits::default_seed when the server fixes it, else from a
// seed drawn from the system's entropy source (53 bits: below 2^53, exact in
// JSON for any client). SessionInfo::seed reports it, so any run can be
// replayed.
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
#include <string_view>
#include <vector>

#include "core/engine/decode_loop.h"
#include "core/sampling/sampler.h"
#include "core/status/status.h"

namespace tessera {

class Engine;

struct SessionLimits {
  int64_t max_sessions = 64;
  double idle_ttl_seconds = 1800;  // <= 0: sessions never expire
  // Live sessions one key may hold (server.max_sessions_per_key); 0: no quota.
  int64_t max_sessions_per_key = 0;
  // The seed of a session that brings none. tessera serve sets it to the
  // config's sampling.seed only when the config (or --set) gives that key: a
  // server meant to be reproducible. Unset, each such session draws its own.
  std::optional<uint64_t> default_seed = std::nullopt;
};

struct SessionOptions {
  std::optional<SamplingParams> sampling;  // default: the config's [sampling]
  // Default: SessionLimits::default_seed, else drawn from the entropy source
  // (sampling's own seed is not used: unseeded sessions would all be alike).
  std::optional<uint64_t> seed;
  // One of Engine::proposer_choices(); default: decode.proposer.
  std::optional<std::string> proposer;
};

struct GenerateOptions {
  int64_t max_tokens = 128;
  std::vector<int32_t> stop_tokens;  // end the turn (kept in the history, not streamed)
  bool stop_at_eos = true;           // the vocabulary's end-of-generation tokens
  // >= 0: each token comes with its log-probability and this many of the
  // most likely alternatives (at most TokenLogprob::kMaxTop); -1: none.
  int logprobs = -1;
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
  uint64_t seed = 0;             // its sampler's seed (a fork: its source's)
  std::vector<int32_t> history;  // the raw history's ids, only when info() is asked for them
};

// A session made by start_turn, its turn running.
struct StartedSession {
  std::string id;
  uint64_t seed = 0;  // its sampler's seed, as SessionInfo::seed
  // Prompt tokens whose K/V came from the prefix cache (the OpenAI API's
  // usage.prompt_tokens_details.cached_tokens); 0 without it.
  int64_t cached_tokens = 0;
};

// Why sessions were evicted, and other counts the metrics report.
struct SessionCounters {
  int64_t created = 0;
  int64_t closed = 0;
  int64_t evicted_lru = 0;
  int64_t evicted_ttl = 0;
  int64_t evicted_key_quota = 0;  // made room for its own key at max_sessions_per_key
  int64_t failed = 0;             // closed because a step failed (an invariant broke)
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

// `id` as error messages echo it: at most 64 characters (then "..."), and
// only printable ASCII (others become '?'), so a huge or binary id sent by a
// client never comes back in a status it cannot carry.
std::string echoed_id(std::string_view id);

class SessionManager {
 public:
  using Clock = std::chrono::steady_clock;

  SessionManager(Engine& engine, SessionLimits limits,
                 std::function<Clock::time_point()> clock = Clock::now);
  ~SessionManager();
  SessionManager(const SessionManager&) = delete;
  SessionManager& operator=(const SessionManager&) = delete;

  // A new session (owned by `owner`, the caller's key, "" without keys).
  // At capacity an idle session is evicted (the rule above); when none may
  // be, RESOURCE_EXHAUSTED.
  Result<std::string> create(const SessionOptions& options, const std::string& owner);
  // create, append(prompt) and generate in one call, so the new session is
  // generating (never evicted) from the moment it exists: a request that
  // needs one turn of a session of its own (the HTTP API). Everything is
  // checked before the session is made; nothing is left behind on an error,
  // and no error names the session. `prompt` must not be empty.
  Result<StartedSession> start_turn(const SessionOptions& options, const std::string& owner,
                                    std::span<const int32_t> prompt,
                                    const GenerateOptions& generate_options, ScoredTokenSink sink,
                                    std::function<void(const GenerateOutcome&)> done);
  // The seed a session made with `options` starts from: options.seed, else
  // default_seed, else one drawn from the entropy source. Reads only the
  // limits: safe from any thread.
  uint64_t chosen_seed(const SessionOptions& options) const;
  // Whether create for `owner` would find room now (a free slot, or an idle
  // session it may evict).
  bool has_room_for(const std::string& owner) const;
  // Appends raw token ids to the history (each checked against the
  // vocabulary; none appended if one is out of range). Not while it
  // generates (FAILED_PRECONDITION). The tokens are fed at the next turn.
  Status append(const std::string& id, const std::string& owner, std::span<const int32_t> tokens);
  // Starts a turn: `sink` gets each token as the loop produces it (false
  // cancels), `done` once at the end. One turn per session at a time.
  Status generate(const std::string& id, const std::string& owner, const GenerateOptions& options,
                  ScoredTokenSink sink, std::function<void(const GenerateOutcome&)> done);
  // Ends the session's running turn ("cancelled"); nothing when it has none.
  Status cancel(const std::string& id, const std::string& owner);
  // A new session with the same history (its K/V forked: copy-on-write on
  // paged, copied elsewhere) and the same sampler state.
  Result<std::string> fork(const std::string& id, const std::string& owner);
  // Ends the session (a running turn ends "closed").
  Status close(const std::string& id, const std::string& owner);
  // What the session holds (its history's ids too `with_history`). Asking
  // counts as a use: it is less likely to be evicted.
  Result<SessionInfo> info(const std::string& id, const std::string& owner,
                           bool with_history = false);

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
  // Turns ended plus sessions ended so far: when it moves, room may have
  // been made (SessionRuntime::wait_for_capacity).
  int64_t room_events() const { return room_events_; }

 private:
  struct Session {
    std::string owner;
    SequenceState lane;
    Clock::time_point last_use;
    std::optional<TurnId> turn;
    uint64_t seed = 0;
  };
  struct Ended {
    std::string owner;
    std::string reason;
  };

  // The session, or NOT_FOUND (saying why when it was evicted or failed, to
  // its own key only).
  Result<Session*> find(const std::string& id, const std::string& owner);
  // Evicts an idle session other than `spared` when `owner` is at its quota
  // or the server is full (the rule above), or RESOURCE_EXHAUSTED.
  Status make_room(const std::string& owner, const std::string& spared = {});
  // The token ids checked against the vocabulary, and the history they
  // would make after `held` tokens against a cache of `capacity`; the
  // messages name no session.
  Status check_tokens(std::span<const int32_t> tokens, int64_t held, int64_t capacity) const;
  // A session in sessions_ (not yet counted as created), its sampler seeded.
  Result<std::string> add_session(const SessionOptions& options, const std::string& owner);
  Status submit_turn(const std::string& id, Session& session, const GenerateOptions& options,
                     ScoredTokenSink sink, std::function<void(const GenerateOutcome&)> done);
  int64_t sessions_of(const std::string& owner) const;
  // Releases the session's sequence and remembers why it ended (`id` by
  // value: callers pass the map key this erases).
  void end_session(std::string id, const std::string& reason);
  std::string new_id();

  Engine& engine_;
  SessionLimits limits_;
  std::function<Clock::time_point()> clock_;
  DecodeLoop loop_;
  std::map<std::string, Session> sessions_;
  // Why recent sessions ended (the last kRemembered), for NOT_FOUND messages
  // to their own key.
  static constexpr std::size_t kRemembered = 4096;
  std::map<std::string, Ended> ended_;
  std::deque<std::string> ended_order_;
  SessionCounters counters_;
  int64_t room_events_ = 0;
  // Turns that ended in a failed step: their sessions close after it.
  struct FailedTurn {
    std::string id;
    int64_t generated = 0;
    std::function<void(const GenerateOutcome&)> done;
  };
  std::vector<FailedTurn> failed_;
};

}  // namespace tessera
