#include "plugins/scheduler_continuous/continuous_scheduler.h"

#include <algorithm>

namespace tessera {

ContinuousScheduler::ContinuousScheduler(const OptionValues& options)
    : max_batch_tokens_(options.get_int("max_batch_tokens")),
      prefill_chunk_(options.get_int("prefill_chunk")) {}

void ContinuousScheduler::plan(std::span<const LaneView> lanes, int64_t max_rows, StepPlan& plan) {
  const int64_t budget = max_batch_tokens_ > 0 ? std::min(max_batch_tokens_, max_rows) : max_rows;
  order_.resize(lanes.size());
  for (std::size_t i = 0; i < lanes.size(); ++i) order_[i] = i;
  std::sort(order_.begin(), order_.end(),
            [&](std::size_t a, std::size_t b) { return lanes[a].submitted < lanes[b].submitted; });
  const auto group_of = [&](std::size_t lane) { return lanes[lane].group; };

  // Decodes first: a request's lanes decode together once all of them are
  // fed, and only if all of them fit. The oldest always runs, so the loop
  // moves on even when one request alone is over the budget (its drafts are
  // then cut to fit).
  int64_t left = budget;
  std::vector<uint64_t> seen;
  for (const std::size_t first : order_) {
    const uint64_t group = group_of(first);
    if (std::find(seen.begin(), seen.end(), group) != seen.end()) continue;
    seen.push_back(group);
    bool ready = true;
    int64_t rows = 0;
    for (const LaneView& lane : lanes)
      if (lane.group == group) {
        ready = ready && lane.prefill_waiting == 0;
        rows += lane.decode_rows;
      }
    if (!ready || (rows > left && !plan.decode.empty())) continue;
    for (std::size_t i = 0; i < lanes.size(); ++i)
      if (lanes[i].group == group) plan.decode.push_back(i);
    left -= rows;
  }
  // Then chunks of waiting histories in the rows left (at least one token
  // when nothing decodes, so the loop moves on).
  if (plan.decode.empty()) left = std::max<int64_t>(left, 1);
  for (const std::size_t i : order_) {
    if (left <= 0) break;
    if (lanes[i].prefill_waiting == 0) continue;
    const int64_t chunk = std::min({lanes[i].prefill_waiting, prefill_chunk_, left});
    plan.prefill.emplace_back(i, chunk);
    left -= chunk;
  }
}

}  // namespace tessera
