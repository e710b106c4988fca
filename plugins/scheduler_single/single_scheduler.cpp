#include "plugins/scheduler_single/single_scheduler.h"

namespace tessera {

SingleScheduler::SingleScheduler(const OptionValues&) {}

void SingleScheduler::plan(std::span<const LaneView> lanes, int64_t, StepPlan& plan) {
  std::size_t oldest = 0;
  for (std::size_t i = 1; i < lanes.size(); ++i)
    if (lanes[i].submitted < lanes[oldest].submitted) oldest = i;
  for (std::size_t i = 0; i < lanes.size(); ++i)
    if (lanes[i].group == lanes[oldest].group) plan.decode.push_back(i);
}

}  // namespace tessera
