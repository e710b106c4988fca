#include "core/session/session_manager.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <utility>

#include "core/engine/engine.h"

namespace tessera {

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

Result<SessionManager::Session*> SessionManager::find(const std::string& id,
                                                      const std::string& owner) {
  const auto it = sessions_.find(id);
  // Another key's session is reported exactly as an unknown one: a caller
  // learns nothing about sessions that are not its own.
  if (it == sessions_.end() || it->second.owner != owner) {
    const auto ended = ended_.find(id);
    if (ended != ended_.end() && it == sessions_.end())
      return not_found("session " + id + " ended: " + ended->second);
    return not_found("no session " + id + " (never created, or not this key's)");
  }
  return &it->second;
}

Status SessionManager::make_room() {
  if (static_cast<int64_t>(sessions_.size()) < limits_.max_sessions) return ok_status();
  // The least recently used session that is not generating.
  auto victim = sessions_.end();
  for (auto it = sessions_.begin(); it != sessions_.end(); ++it)
    if (!it->second.turn &&
        (victim == sessions_.end() || it->second.last_use < victim->second.last_use))
      victim = it;
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
  sessions_.erase(it);
  ended_[id] = reason;
  ended_order_.push_back(id);
  if (ended_order_.size() > kRemembered) {
    ended_.erase(ended_order_.front());
    ended_order_.pop_front();
  }
}

Result<std::string> SessionManager::create(const SessionOptions& options,
                                           const std::string& owner) {
  SequenceState chosen;  // the proposer checked before anything changes
  if (options.proposer) RETURN_IF_ERROR(engine_.choose_proposer(chosen, *options.proposer));
  RETURN_IF_ERROR(make_room());
  const std::string id = new_id();
  Session& session = sessions_[id];
  session.owner = owner;
  session.last_use = clock_();
  if (Status st = engine_.begin_sequence(session.lane, options.seed); !st.ok()) {
    sessions_.erase(id);
    return st;
  }
  session.lane.proposer = chosen.proposer;
  if (options.sampling) {
    SamplingParams params = *options.sampling;
    params.seed = options.seed.value_or(params.seed);
    session.lane.sampler = Sampler(params);
  }
  ++counters_.created;
  return id;
}

Status SessionManager::append(const std::string& id, const std::string& owner,
                              std::span<const int32_t> tokens) {
  ASSIGN_OR_RETURN(Session * session, find(id, owner));
  if (session->turn)
    return failed_precondition("session " + id + " is generating; append after its turn ends");
  const int32_t vocab = static_cast<int32_t>(engine_.model().config.vocab_size);
  for (std::size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || tokens[i] >= vocab)
      return invalid_argument("token " + std::to_string(i) + " is " + std::to_string(tokens[i]) +
                              ", outside this model's vocabulary [0, " + std::to_string(vocab) +
                              "); nothing was appended");
  const int64_t room = session->lane.capacity - 1;
  const auto after = static_cast<int64_t>(session->lane.tokens.size() + tokens.size());
  if (!engine_.cache().policy().evicts && after > room)
    return resource_exhausted("session " + id + " would hold " + std::to_string(after) +
                              " tokens, but its cache holds " + std::to_string(room + 1) +
                              " (cache.max_tokens) with room for one more; nothing was appended");
  session->lane.tokens.insert(session->lane.tokens.end(), tokens.begin(), tokens.end());
  session->last_use = clock_();
  counters_.tokens_in += static_cast<int64_t>(tokens.size());
  return ok_status();
}

Status SessionManager::generate(const std::string& id, const std::string& owner,
                                const GenerateOptions& options, TokenSink sink,
                                std::function<void(const GenerateOutcome&)> done) {
  ASSIGN_OR_RETURN(Session * session, find(id, owner));
  if (session->turn) return failed_precondition("session " + id + " is already generating");
  if (session->lane.tokens.empty())
    return failed_precondition("session " + id + " has no tokens; append some first");
  if (options.max_tokens < 0)
    return invalid_argument("max_tokens is " + std::to_string(options.max_tokens) +
                            "; give 0 or more");
  Turn turn;
  turn.lane = &session->lane;
  turn.max_new_tokens = options.max_tokens;
  turn.stop_at_eos = options.stop_at_eos;
  turn.stop_at_bos = false;
  turn.stop_tokens = options.stop_tokens;
  turn.trim_past_stop = true;
  turn.sink = [this, sink = std::move(sink)](int32_t token, int lane) {
    ++counters_.tokens_out;
    return sink(token, lane);
  };
  turn.done = [this, id, done = std::move(done)](const TurnOutcome& outcome) {
    const auto it = sessions_.find(id);
    if (it != sessions_.end()) {
      it->second.turn.reset();
      it->second.last_use = clock_();
    }
    if (outcome.stop_reason == "error") {
      failed_.push_back({id, outcome.generated, done});  // closed after the step
      return;
    }
    if (done)
      done({outcome.stop_reason, outcome.generated, ok_status(), outcome.steps, outcome.drafted});
  };
  session->last_use = clock_();
  session->turn = loop_.submit(std::move(turn));
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
  RETURN_IF_ERROR(make_room());
  ASSIGN_OR_RETURN(source, find(id, owner));  // make_room never evicts it (it is in use now)
  const std::string fork_id = new_id();
  Session& fork = sessions_[fork_id];
  fork.owner = owner;
  fork.last_use = clock_();
  if (Status st = engine_.fork_sequence(source->lane, fork.lane); !st.ok()) {
    sessions_.erase(fork_id);
    return st;
  }
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

Result<SessionInfo> SessionManager::info(const std::string& id, const std::string& owner) {
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
