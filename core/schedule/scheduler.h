// Decides which lanes take part in each step, and how much of a waiting
// history each feeds. A scheduler plugin is a policy: it sees the running
// lanes (core/engine/decode_loop.h) and writes a plan; the decode loop runs
// the plan through the engine, delivers the tokens and applies the stopping
// rules, so no policy can emit a token twice, lose one, or touch K/V.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "core/plugin/plugin_object.h"
#include "core/schedule/generation.h"

namespace tessera {

// A running lane as a scheduler sees it when it plans a step.
struct LaneView {
  // The lanes of one request (its branches) share a group; they run as one
  // (the `single` scheduler steps them together). A server session's turns
  // are groups of one.
  uint64_t group = 0;
  uint64_t submitted = 0;  // order of submission: lower came first
  // Tokens of the lane's history to feed before it can decode: chunks of
  // them go into a step's forward beside other lanes' decodes. 0: ready to
  // decode (a verifier that prefills otherwise, block diffusion, takes the
  // whole history inside the lane's first decode step and shows 0 here).
  int64_t prefill_waiting = 0;
  // Batch rows a decode step of this lane may take: its waiting token and
  // the largest draft the proposer makes.
  int64_t decode_rows = 1;
};

// What one step runs: lanes (indices into the views) that decode, and lanes
// fed a chunk of so many of their waiting tokens (at most prefill_waiting).
// A lane is in at most one of the two lists.
struct StepPlan {
  std::vector<std::size_t> decode;
  std::vector<std::pair<std::size_t, int64_t>> prefill;
  void clear() {
    decode.clear();
    prefill.clear();
  }
  bool empty() const { return decode.empty() && prefill.empty(); }
};

class Scheduler : public PluginObject {
 public:
  // Plans the next step of `lanes` (at least one). `max_rows` is how many
  // batch rows one forward holds (decode.max_batch). The plan must run at
  // least one lane, so the loop always makes progress.
  virtual void plan(std::span<const LaneView> lanes, int64_t max_rows, StepPlan& plan) = 0;
};

}  // namespace tessera
