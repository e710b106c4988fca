// Runs many lanes' turns through one engine, a step at a time: the
// configured scheduler plans each step (which lanes decode, which feed a
// chunk of their history), the engine runs it as one forward, and the loop
// hands each emitted token to its turn's sink and ends turns by the stopping
// rules (end of generation, max tokens, a full cache, a sink that says stop,
// a cancel). Engine::generate runs one request on it; the server runs its
// sessions' turns on one loop, stepped by one thread.
//
// The loop never owns a lane: the submitter begins it (Engine::begin_sequence
// or begin_branch), keeps it alive while its turn runs, and ends or keeps it
// after. A lane takes part in one turn at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/decode/decode_context.h"
#include "core/decode/sequence_state.h"
#include "core/schedule/scheduler.h"
#include "core/status/status.h"

namespace tessera {

class Engine;

using TurnId = uint64_t;

struct TurnOutcome {
  TurnId id = 0;
  // "eos" | "stop_token" | "max_tokens" | "cache_full" | "stopped" (the sink
  // said so) |
  // "cancelled" | "error" (the step it was in failed; the lane's cache
  // sequence may then be behind its tokens and is best ended).
  std::string stop_reason;
  int64_t generated = 0;  // tokens handed to the sink
  int64_t steps = 0;      // decode steps the turn's lane took
  int64_t drafted = 0;    // tokens its proposer drafted in them
};

struct Turn {
  SequenceState* lane = nullptr;  // begun; its waiting tokens are fed first
  uint64_t group = 0;             // lanes of one request share one (0: a group of its own)
  int sink_lane = 0;              // passed to the sink beside each token
  int64_t max_new_tokens = 128;
  // The vocabulary's end-of-generation tokens end the turn, not handed to
  // the sink; so does BOS with stop_at_bos (llama2.c-trained models emit it
  // at a story's end).
  bool stop_at_eos = true;
  bool stop_at_bos = true;
  // Tokens that end the turn too ("stop_token"), kept in the lane like EOS.
  std::vector<int32_t> stop_tokens;
  // Keep only the tokens up to where the turn stopped: what the last step
  // emitted past it (accepted draft tokens) leaves the lane and the cache, so
  // the lane can take another turn (chat, sessions; Engine::keep_tokens).
  // Only for a lane that owns its cache sequence.
  bool trim_past_stop = false;
  ScoredTokenSink sink;                          // false: stop the turn ("stopped")
  std::function<void(const TurnOutcome&)> done;  // once, when the turn ends
};

class DecodeLoop {
 public:
  explicit DecodeLoop(Engine& engine);

  // Adds a turn; it takes part from the next step. A turn with
  // max_new_tokens <= 0 ends at once ("max_tokens").
  TurnId submit(Turn turn);
  // Ends the turn with `reason` before its next step (at once when no step is
  // running; a sink may cancel turns). False for an unknown or ended turn.
  bool cancel(TurnId id, std::string reason = "cancelled");
  bool idle() const { return turns_.empty() && joining_.empty(); }
  std::size_t running() const { return turns_.size() + joining_.size(); }

  // One step of the running turns. A failed step ends the turns that were in
  // it ("error") and returns why; the loop stays usable for the others.
  Status step();
  int64_t steps() const { return steps_; }
  // Lanes the last step ran (decoding or fed a chunk).
  std::size_t last_step_lanes() const { return last_step_lanes_; }

 private:
  struct Running {
    TurnId id = 0;
    Turn turn;
    uint64_t submitted = 0;
    int64_t generated = 0;
    int64_t steps = 0, drafted = 0;
    std::string stop_reason;  // set: ends before the next step
  };

  void stop_full_lanes();
  // Asks the scheduler for the step's plan, checks it, and lays out the
  // step's chunks and lanes.
  Status plan_step();
  // Hands each decoded lane's tokens to its turn; a failed step ends the
  // turns that were in it ("error").
  Status deliver_step(const Status& stepped);
  // Hands the turn's newly emitted tokens to its sink; sets its stop_reason
  // when one of them ends it.
  Status deliver(Running& turn, std::span<const int32_t> emitted);
  // Ends the turns that have a stop reason.
  void finish_stopped();

  Engine& engine_;
  std::vector<Running> turns_;
  std::vector<Running> joining_;  // submitted during a step; they join after it
  TurnId next_id_ = 1;
  uint64_t next_submitted_ = 0;
  int64_t steps_ = 0;
  std::size_t last_step_lanes_ = 0;
  bool in_step_ = false;
  // Reused every step.
  std::vector<LaneView> views_;
  StepPlan plan_;
  std::vector<PrefillChunk> chunks_;
  std::vector<SequenceState*> decode_lanes_;
  std::vector<std::vector<int32_t>> emitted_;
};

}  // namespace tessera
