// Continuous batching: every step gathers the lanes that have work into one
// forward, within a budget of batch rows. Lanes ready to decode go first,
// oldest first (a request's lanes together), each taking its waiting token
// and a draft as long as its last; the rows left feed chunks of waiting
// histories (at most prefill_chunk tokens per lane), oldest first. A long
// prompt thus never stalls the sessions already generating, and a lane's
// tokens do not depend on who shares its forward (the kernels are batch
// invariant; docs/architecture.md, "Continuous batching").
#pragma once

#include <cstdint>
#include <vector>

#include "core/plugin/options.h"
#include "core/schedule/scheduler.h"

namespace tessera {

class ContinuousScheduler final : public Scheduler {
 public:
  explicit ContinuousScheduler(const OptionValues& options);
  void plan(std::span<const LaneView> lanes, int64_t max_rows, StepPlan& plan) override;

 private:
  int64_t max_batch_tokens_;  // 0: decode.max_batch
  int64_t prefill_chunk_;
  std::vector<std::size_t> order_;  // reused: lanes by submission
};

}  // namespace tessera
