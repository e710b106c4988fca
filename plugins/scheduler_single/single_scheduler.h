// Runs one request at a time to completion: the embedded scheduler. A request
// with branches runs them side by side, one verification forward per step for
// every unfinished branch.
#pragma once

#include <chrono>
#include <span>
#include <string>
#include <vector>

#include "core/decode/sequence_state.h"
#include "core/plugin/options.h"
#include "core/schedule/scheduler.h"
#include "core/tokenizer/tokenizer.h"

namespace tessera {

class SingleScheduler final : public Scheduler {
 public:
  explicit SingleScheduler(const OptionValues& options);
  Result<GenerationStats> run(Engine& engine, const GenerationRequest& request,
                              const TokenSink& sink) override;

 private:
  // A lane being generated, with what the scheduler tracks of it.
  struct Lane {
    SequenceState state;
    int64_t generated = 0;
    std::string stop_reason;  // empty while it runs
  };

  // Starts the lanes of `request`: one, or a prefilled prefix and a lane per branch.
  Status start_lanes(Engine& engine, const GenerationRequest& request);
  // Steps the unfinished lanes until each stops; fills the timing and counts.
  Status run_lanes(Engine& engine, const GenerationRequest& request, const TokenSink& sink,
                   GenerationStats& stats);
  // Marks lanes whose sequence has no room for the step's pending tokens.
  void stop_full_lanes(Engine& engine);
  // Hands a lane's emitted tokens to the sink; false when the sink asked to stop.
  bool deliver(const GenerationRequest& request, const TokenSink& sink, std::size_t index,
               std::span<const int32_t> emitted, const Tokenizer& tokenizer);
  void fill_cache_stats(Engine& engine, GenerationStats& stats) const;
  Status end_lanes(Engine& engine);

  std::vector<Lane> lanes_;
  SequenceState prefix_;  // the shared prompt of branches
  bool has_prefix_ = false;
  // Reused across steps.
  std::vector<SequenceState*> active_;
  std::vector<std::size_t> active_index_;
  std::vector<std::vector<int32_t>> emitted_;  // per active lane, in step order
};

}  // namespace tessera
