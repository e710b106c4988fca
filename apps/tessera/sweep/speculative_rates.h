// What speculative decoding did, as rates of its counters, and the speed-up
// its acceptance and costs predict. Shared by the sweep's `speculative` task
// and `tessera bench --spec`.
#pragma once

#include "core/decode/sequence_state.h"

namespace tessera::sweep {

struct SpeculativeRates {
  double acceptance = 0;         // accepted / drafted: per drafted token
  double drafted_per_step = 0;   // drafted / verify_steps: gamma of a chain
  double accepted_per_step = 0;  // accepted / verify_steps
  double tokens_per_step = 0;    // emitted / verify_steps: tokens per target forward
  double draft_forwards_per_step = 0;
  double propose_seconds_per_step = 0;
  double verify_seconds_per_step = 0;
  double propose_seconds_per_drafted = 0;
};

// Rates of `counters` (0 where a denominator is 0).
SpeculativeRates rates_of(const DecodeCounters& counters);

// Leviathan et al. (2023), a chain of `gamma` drafts, each accepted with
// probability `alpha` independently: expected tokens per verification step,
// (1 - alpha^(gamma+1)) / (1 - alpha) (gamma + 1 at alpha = 1).
double chain_tokens_per_step(double alpha, double gamma);
// The speed-up over plain decoding it predicts when one draft token costs `c`
// target forwards and verifying gamma + 1 tokens costs one:
// chain_tokens_per_step / (gamma * c + 1).
double chain_speedup(double alpha, double gamma, double c);
// A draft that is not a chain (a tree): the measured tokens per step over
// 1 + proposing time per step / plain target time per token.
double tree_speedup(double tokens_per_step, double propose_seconds_per_step,
                    double plain_seconds_per_token);

}  // namespace tessera::sweep
