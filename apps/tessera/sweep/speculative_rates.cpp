#include "apps/tessera/sweep/speculative_rates.h"

#include <cmath>
#include <cstdint>

namespace tessera::sweep {
namespace {

double ratio(double a, double b) {
  return b > 0 ? a / b : 0;
}

double ratio(int64_t a, int64_t b) {
  return ratio(static_cast<double>(a), static_cast<double>(b));
}

}  // namespace

SpeculativeRates rates_of(const DecodeCounters& c) {
  SpeculativeRates r;
  r.acceptance = ratio(c.accepted, c.drafted);
  r.drafted_per_step = ratio(c.drafted, c.verify_steps);
  r.accepted_per_step = ratio(c.accepted, c.verify_steps);
  r.tokens_per_step = ratio(c.emitted, c.verify_steps);
  r.draft_forwards_per_step = ratio(c.draft_forwards, c.verify_steps);
  r.propose_seconds_per_step = ratio(c.propose_seconds, static_cast<double>(c.verify_steps));
  r.verify_seconds_per_step = ratio(c.verify_seconds, static_cast<double>(c.verify_steps));
  r.propose_seconds_per_drafted = ratio(c.propose_seconds, static_cast<double>(c.drafted));
  return r;
}

double chain_tokens_per_step(double alpha, double gamma) {
  if (alpha >= 1) return gamma + 1;
  return (1 - std::pow(alpha, gamma + 1)) / (1 - alpha);
}

double chain_speedup(double alpha, double gamma, double c) {
  return chain_tokens_per_step(alpha, gamma) / (gamma * c + 1);
}

double tree_speedup(double tokens_per_step, double propose_seconds_per_step,
                    double plain_seconds_per_token) {
  if (!(plain_seconds_per_token > 0)) return 0;
  return tokens_per_step / (1 + propose_seconds_per_step / plain_seconds_per_token);
}

}  // namespace tessera::sweep
