// One request at a time, to its end: the embedded scheduler. Each step runs
// every lane of the oldest request (its branches side by side, one
// verification forward for all); a lane's waiting prompt is fed whole
// inside its first step. Others wait their turn.
#pragma once

#include "core/plugin/options.h"
#include "core/schedule/scheduler.h"

namespace tessera {

class SingleScheduler final : public Scheduler {
 public:
  explicit SingleScheduler(const OptionValues& options);
  void plan(std::span<const LaneView> lanes, int64_t max_rows, StepPlan& plan) override;
};

}  // namespace tessera
