#include "core/session/session_manager.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <utility>

#include "core/engine/engine.h"

namespace tessera {
namespace {

// What a turn's options may ask for, checked before anything is made.
Status check_generate_options(const GenerateOptions& options) {
  if (options.max_tokens < 0)
    return invalid_argument("max_tokens is " + std::to_string(options.max_tokens) +
                            "; give 0 or more");
  if (options.logprobs > TokenLogprob::kMaxTop)
    return invalid_argument("logprobs asks for " + std::to_string(options.logprobs) +
                            " alternatives; at most " + std::to_string(TokenLogprob::kMaxTop));
  return ok_status();
}

}  // namespace

SessionManager::SessionManager(Engine& engine, SessionLimits limits,
                               std::function<Clock::time_point()> clock)
    : engine_(engine), limits_(limits), clock_(std::move(clock)), loop_(engine) {}

SessionManager::~SessionManager() {
  std::vector<std::string> ids;
  for (const auto& [id, session] : sessions_) ids.push_back(id);
  for (const std::string& id : ids) (void)close(id, sessions_.at(id).owner);
}

std::string SessionManager::new_id() {
  // 128 bits from the system's entropy source: ids are unguessable, not
  // merely unique.
  std::random_device entropy;
  std::string id;
  do {
    char text[33];
    uint32_t words[4];
    for (uint32_t& word : words) word = entropy();
    std::snprintf(text, sizeof text, "%08x%08x%08x%08x", words[0], words[1], words[2], words[3]);
    id = text;
  } while (sessions_.count(id) != 0 || ended_.count(id) != 0);
  return id;
}

std::string echoed_id(std::string_view id) {
  constexpr std::size_t kShown = 64;
  std::string shown;
  for (std::size_t i = 0; i < id.size() && i < kShown; ++i) {
    const auto c = static_cast<unsigned char>(id[i]);
    shown += c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '?';
  }
  if (id.size() > kShown) shown += "...";
  return shown;
}

namespace {

// 53 bits: a client in JavaScript (whose numbers are doubles) can send the
// seed back exactly, and it fits any API's signed 64-bit seed.
uint64_t drawn_seed() {
  std::random_device entropy;
  return ((uint64_t{entropy()} << 32) | entropy()) & ((uint64_t{1} << 53) - 1);
}

}  // namespace

Result<SessionManager::Session*> SessionManager::find(const std::string& id,
                                                      const std::string& owner) {
  const auto it = sessions_.find(id);
  if (it != sessions_.end() && it->second.owner == owner) return &it->second;
  // Another key's session, live or ended, is reported exactly as an unknown
  // one: a caller learns nothing about sessions that are not its own.
  if (it == sessions_.end()) {
    const auto ended = ended_.find(id);
    if (ended != ended_.end() && ended->second.owner == owner)
      return not_found("session " + echoed_id(id) + " ended: " + ended->second.reason);
  }
  return not_found("no session " + echoed_id(id) + " (never created, or not this key's)");
}

int64_t SessionManager::sessions_of(const std::string& owner) const {
  int64_t held = 0;
  for (const auto& [id, session] : sessions_) held += session.owner == owner ? 1 : 0;
  return held;
}

bool SessionManager::has_room_for(const std::string& owner) const {
  const auto idle = [&](bool own_only) {
    for (const auto& [id, session] : sessions_)
      if (!session.turn && (!own_only || session.owner == owner)) return true;
    return false;
  };
  // Evicting one of its own at the quota also frees a slot of the server's.
  if (limits_.max_sessions_per_key > 0 && sessions_of(owner) >= limits_.max_sessions_per_key)
    return idle(/*own_only=*/true);
  return static_cast<int64_t>(sessions_.size()) < limits_.max_sessions || idle(false);
}

Status SessionManager::make_room(const std::string& owner, const std::string& spared) {
  const auto older = [](const auto& a, const auto& b) {
    return a->second.last_use < b->second.last_use;
  };
  if (limits_.max_sessions_per_key > 0) {
    const int64_t held = sessions_of(owner);
    if (held >= limits_.max_sessions_per_key) {
      auto victim = sessions_.end();
      for (auto it = sessions_.begin(); it != sessions_.end(); ++it)
        if (it->second.owner == owner && !it->second.turn && it->first != spared &&
            (victim == sessions_.end() || older(it, victim)))
          victim = it;
      if (victim == sessions_.end())
        return resource_exhausted("all " + std::to_string(held) +
                                  " sessions of this key (server.max_sessions_per_key) are "
                                  "generating; retry when one ends, or raise "
                                  "server.max_sessions_per_key");
      ++counters_.evicted_key_quota;
      end_session(victim->first,
                  "evicted (least recently used of its key, at server.max_sessions_per_key = " +
                      std::to_string(limits_.max_sessions_per_key) + ")");
    }
  }
  if (static_cast<int64_t>(sessions_.size()) < limits_.max_sessions) return ok_status();
  // The least recently used idle session of the key holding the most: a key
  // is never evicted for one that holds more than it.
  std::map<std::string, int64_t> held;
  for (const auto& [id, session] : sessions_) ++held[session.owner];
  auto victim = sessions_.end();
  for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
    if (it->second.turn || it->first == spared) continue;
    if (victim == sessions_.end()) {
      victim = it;
      continue;
    }
    const int64_t mine = held.at(it->second.owner), theirs = held.at(victim->second.owner);
    if (mine > theirs || (mine == theirs && older(it, victim))) victim = it;
  }
  if (victim == sessions_.end())
    return resource_exhausted("all " + std::to_string(sessions_.size()) +
                              " sessions (server.max_sessions) are generating; retry when one "
                              "ends, or raise server.max_sessions");
  ++counters_.evicted_lru;
  end_session(victim->first, "evicted (least recently used, at server.max_sessions = " +
                                 std::to_string(limits_.max_sessions) + ")");
  return ok_status();
}

void SessionManager::end_session(std::string id, const std::string& reason) {
  const auto it = sessions_.find(id);
  if (it == sessions_.end()) return;
  (void)engine_.end_sequence(it->second.lane);
  ended_[id] = {it->second.owner, reason};
  sessions_.erase(it);
  ++room_events_;
  ended_order_.push_back(id);
  if (ended_order_.size() > kRemembered) {
    ended_.erase(ended_order_.front());
    ended_order_.pop_front();
  }
}

Status SessionManager::check_tokens(std::span<const int32_t> tokens, int64_t held,
                                    int64_t capacity) const {
  const int32_t vocab = static_cast<int32_t>(engine_.model().config.vocab_size);
  for (std::size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || tokens[i] >= vocab)
      return invalid_argument("token " + std::to_string(i) + " is " + std::to_string(tokens[i]) +
                              ", outside this model's vocabulary [0, " + std::to_string(vocab) +
                              "); nothing was appended");
  const int64_t room = capacity - 1;
  const int64_t after = held + static_cast<int64_t>(tokens.size());
  if (!engine_.cache().policy().evicts && after > room)
    return resource_exhausted("the session would hold " + std::to_string(after) +
                              " tokens, but its cache holds " + std::to_string(room + 1) +
                              " (cache.max_tokens) with room for one more; nothing was appended");
  return ok_status();
}

uint64_t SessionManager::chosen_seed(const SessionOptions& options) const {
  if (options.seed) return *options.seed;
  if (limits_.default_seed) return *limits_.default_seed;
  return drawn_seed();
}

Result<std::string> SessionManager::add_session(const SessionOptions& options,
                                                const std::string& owner) {
  SequenceState chosen;  // the proposer checked before anything changes
  if (options.proposer) RETURN_IF_ERROR(engine_.choose_proposer(chosen, *options.proposer));
  RETURN_IF_ERROR(make_room(owner));
  const uint64_t seed = chosen_seed(options);
  const std::string id = new_id();
  Session& session = sessions_[id];
  session.owner = owner;
  session.last_use = clock_();
  session.seed = seed;
  if (Status st = engine_.begin_sequence(session.lane, seed); !st.ok()) {
    sessions_.erase(id);
    return st;
  }
  session.lane.proposer = chosen.proposer;
  if (options.sampling) {
    SamplingParams params = *options.sampling;
    params.seed = seed;
    session.lane.sampler = Sampler(params);
  }
  ++counters_.created;
  return id;
}

Result<std::string> SessionManager::create(const SessionOptions& options,
                                           const std::string& owner) {
  return add_session(options, owner);
}

Result<StartedSession> SessionManager::start_turn(
    const SessionOptions& options, const std::string& owner, std::span<const int32_t> prompt,
    const GenerateOptions& generate_options, ScoredTokenSink sink,
    std::function<void(const GenerateOutcome&)> done) {
  if (prompt.empty()) return invalid_argument("the prompt has no tokens");
  RETURN_IF_ERROR(check_generate_options(generate_options));
  RETURN_IF_ERROR(check_tokens(prompt, 0, engine_.max_tokens()));
  ASSIGN_OR_RETURN(const std::string id, add_session(options, owner));
  Session& session = sessions_.at(id);
  session.lane.tokens.assign(prompt.begin(), prompt.end());
  counters_.tokens_in += static_cast<int64_t>(prompt.size());
  Result<int64_t> reused = engine_.reuse_cached_prefix(session.lane);
  if (!reused.ok()) {
    end_session(id, "failed: " + reused.status().to_string());
    return reused.status();
  }
  if (Status st = submit_turn(id, session, generate_options, std::move(sink), std::move(done));
      !st.ok()) {
    end_session(id, "failed: " + st.to_string());
    return st;
  }
  return StartedSession{id, session.seed, *reused};
}

Status SessionManager::append(const std::string& id, const std::string& owner,
                              std::span<const int32_t> tokens) {
  ASSIGN_OR_RETURN(Session * session, find(id, owner));
  if (session->turn)
    return failed_precondition("session " + id + " is generating; append after its turn ends");
  RETURN_IF_ERROR(check_tokens(tokens, static_cast<int64_t>(session->lane.tokens.size()),
                               session->lane.capacity));
  const bool first = session->lane.tokens.empty();
  session->lane.tokens.insert(session->lane.tokens.end(), tokens.begin(), tokens.end());
  session->last_use = clock_();
  counters_.tokens_in += static_cast<int64_t>(tokens.size());
  // A new session's first tokens may begin from the prefix cache.
  if (first) {
    Result<int64_t> reused = engine_.reuse_cached_prefix(session->lane);
    if (!reused.ok()) {
      session->lane.tokens.clear();
      return reused.status();
    }
  }
  return ok_status();
}

Status SessionManager::generate(const std::string& id, const std::string& owner,
                                const GenerateOptions& options, ScoredTokenSink sink,
                                std::function<void(const GenerateOutcome&)> done) {
  ASSIGN_OR_RETURN(Session * session, find(id, owner));
  return submit_turn(id, *session, options, std::move(sink), std::move(done));
}

Status SessionManager::submit_turn(const std::string& id, Session& session,
                                   const GenerateOptions& options, ScoredTokenSink sink,
                                   std::function<void(const GenerateOutcome&)> done) {
  if (session.turn) return failed_precondition("session " + id + " is already generating");
  if (session.lane.tokens.empty())
    return failed_precondition("session " + id + " has no tokens; append some first");
  RETURN_IF_ERROR(check_generate_options(options));
  session.lane.logprobs = options.logprobs;
  Turn turn;
  turn.lane = &session.lane;
  turn.max_new_tokens = options.max_tokens;
  turn.stop_at_eos = options.stop_at_eos;
  turn.stop_at_bos = false;
  turn.stop_tokens = options.stop_tokens;
  turn.trim_past_stop = true;
  turn.sink = [this, sink = std::move(sink)](int32_t token, int lane, const TokenLogprob* logprob) {
    ++counters_.tokens_out;
    return sink(token, lane, logprob);
  };
  turn.done = [this, id, done = std::move(done)](const TurnOutcome& outcome) {
    ++room_events_;
    const auto it = sessions_.find(id);
    if (it != sessions_.end()) {
      it->second.turn.reset();
      it->second.last_use = clock_();
      // What the turn computed is there for later prompts that share it.
      if (outcome.stop_reason != "error") (void)engine_.publish_prefix(it->second.lane);
    }
    if (outcome.stop_reason == "error") {
      failed_.push_back({id, outcome.generated, done});  // closed after the step
      return;
    }
    if (done)
      done({outcome.stop_reason, outcome.generated, ok_status(), outcome.steps, outcome.drafted});
  };
  session.last_use = clock_();
  // A turn that ends at once (max_tokens 0) hears of it inside submit: its
  // done resets the placeholder, and the session must not stay generating.
  session.turn = TurnId{0};
  const TurnId submitted = loop_.submit(std::move(turn));
  if (session.turn) session.turn = submitted;
  return ok_status();
}

Status SessionManager::cancel(const std::string& id, const std::string& owner) {
  ASSIGN_OR_RETURN(Session * session, find(id, owner));
  if (session->turn) loop_.cancel(*session->turn);
  return ok_status();
}

Result<std::string> SessionManager::fork(const std::string& id, const std::string& owner) {
  ASSIGN_OR_RETURN(Session * source, find(id, owner));
  if (source->turn)
    return failed_precondition("session " + id + " is generating; fork it after its turn ends");
  RETURN_IF_ERROR(make_room(owner, /*spared=*/id));
  ASSIGN_OR_RETURN(source, find(id, owner));  // the map may have changed under the pointer
  const std::string fork_id = new_id();
  Session& fork = sessions_[fork_id];
  fork.owner = owner;
  fork.last_use = clock_();
  if (Status st = engine_.fork_sequence(source->lane, fork.lane); !st.ok()) {
    sessions_.erase(fork_id);
    return st;
  }
  fork.seed = source->seed;
  source->last_use = clock_();
  ++counters_.created;
  return fork_id;
}

Status SessionManager::close(const std::string& id, const std::string& owner) {
  ASSIGN_OR_RETURN(Session * session, find(id, owner));
  if (session->turn) loop_.cancel(*session->turn, "closed");
  ++counters_.closed;
  end_session(id, "closed by its owner");
  return ok_status();
}

Result<SessionInfo> SessionManager::info(const std::string& id, const std::string& owner,
                                         bool with_history) {
  ASSIGN_OR_RETURN(Session * session, find(id, owner));
  SessionInfo info;
  info.id = id;
  info.tokens = static_cast<int64_t>(session->lane.tokens.size());
  if (!session->lane.tokens.empty()) info.last_token = session->lane.tokens.back();
  info.cached = session->lane.cached;
  ASSIGN_OR_RETURN(const SequenceInfo stored, engine_.cache().info(session->lane.id));
  info.stored_entries = stored.stored;
  ASSIGN_OR_RETURN(const SequenceBytes bytes, engine_.cache().sequence_bytes(session->lane.id));
  info.kv_bytes = bytes.held;
  info.kv_shared_bytes = bytes.shared;
  info.proposer = engine_.proposer_name(session->lane);
  info.idle_seconds =
      session->turn ? 0.0 : std::chrono::duration<double>(clock_() - session->last_use).count();
  info.generating = session->turn.has_value();
  info.seed = session->seed;
  if (with_history) info.history = session->lane.tokens;
  session->last_use = clock_();  // asking is a use: LRU spares it
  return info;
}

std::size_t SessionManager::step() {
  const int64_t steps_before = loop_.steps();
  const Status stepped = loop_.step();
  const std::size_t lanes = loop_.steps() > steps_before ? loop_.last_step_lanes() : 0;
  std::vector<FailedTurn> failed;
  failed.swap(failed_);
  for (FailedTurn& turn : failed) {
    ++counters_.failed;
    const Status reason = failed_precondition(
        "session " + turn.id + " was closed: its step failed (" + stepped.to_string() + ")");
    end_session(turn.id, "failed: " + stepped.to_string());
    if (turn.done) turn.done({"error", turn.generated, reason});
  }
  return lanes;
}

void SessionManager::cancel_all(const std::string& reason) {
  std::vector<TurnId> turns;
  for (const auto& [id, session] : sessions_)
    if (session.turn) turns.push_back(*session.turn);
  for (const TurnId turn : turns) loop_.cancel(turn, reason);
}

void SessionManager::expire_idle() {
  if (limits_.idle_ttl_seconds <= 0) return;
  const auto now = clock_();
  std::vector<std::string> expired;
  for (const auto& [id, session] : sessions_)
    if (!session.turn &&
        std::chrono::duration<double>(now - session.last_use).count() > limits_.idle_ttl_seconds)
      expired.push_back(id);
  for (const std::string& id : expired) {
    ++counters_.evicted_ttl;
    end_session(id, "evicted (idle longer than server.session_idle_ttl_s = " +
                        std::to_string(static_cast<int64_t>(limits_.idle_ttl_seconds)) + " s)");
  }
}

}  // namespace tessera
