// Turns a row of logits into a token: greedy argmax, or a draw from the
// softmax at a temperature, restricted to the top_k most likely tokens and
// then to the smallest nucleus of mass top_p. Presence and frequency
// penalties (OpenAI's) first lower the logit of every token the sequence has
// emitted: by presence_penalty once, and by frequency_penalty per emission.
//
// A Sampler is not thread-safe (it reuses internal buffers, also in the const
// distribution()); give each sequence its own. It is one sequence's random
// stream: every draw of that sequence (a token, a speculative acceptance
// test, a residual) comes from it, so sequences decoded side by side never
// change each other's draws.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/sampling/rng.h"

namespace tessera {

struct SamplingParams {
  float temperature = 0;  // <= 0: greedy
  int top_k = 0;          // <= 0: no limit
  float top_p = 1;        // >= 1: no nucleus cut
  uint64_t seed = 0;
  // Subtracted from the logit of a token already emitted (observe()): once
  // for presence, once per emission for frequency. 0: off. (ABI 7.0)
  float presence_penalty = 0;
  float frequency_penalty = 0;
};

class Sampler {
 public:
  Sampler() : Sampler(SamplingParams{}) {}
  explicit Sampler(const SamplingParams& params);

  // A token id in [0, logits.size()). Greedy: the argmax (ties -> lowest id),
  // drawing no random number. Otherwise exactly one uniform draw from
  // distribution(). A token whose logit is -inf or NaN is never returned; a
  // row where every logit is -inf or NaN is a bug in the caller (checked). If
  // some logits are +inf, the draw is uniform over those. logits is only read
  // during the call.
  int32_t sample(std::span<const float> logits);

  // The exact distribution sample() draws from, written to probs (resized to
  // logits.size()): softmax(logits / temperature) restricted to the top_k
  // largest logits (ties -> lower id), renormalised, then restricted to the
  // smallest prefix (in that order) whose mass reaches top_p, renormalised.
  // Greedy: one-hot at the argmax.
  void distribution(std::span<const float> logits, std::vector<float>& probs) const;

  // One uniform draw in [0, 1) from this sampler's stream (an acceptance test).
  double uniform() { return rng_.uniform(); }
  // A draw from `probs` (weights >= 0 with a positive finite sum, normalised
  // here): one uniform draw u, the lowest id whose cumulative weight exceeds u
  // times the sum. The residual of exact speculative acceptance is drawn so.
  int32_t sample_from(std::span<const float> probs);
  // Restarts the random sequence (as if constructed with this seed).
  void reseed(uint64_t seed);

  // A token the sequence emitted: the penalties count it from the next
  // call on. Verifiers call it for every token they emit, in order, as they
  // decide it (a speculative path's later positions see its earlier tokens).
  void observe(int32_t token);
  // The logits every draw and distribution of this sampler start from: the
  // row itself without penalties (or before any emission), else a copy with
  // the penalties applied, valid until the next call.
  std::span<const float> penalised(std::span<const float> logits) const;
  // The same, in place.
  void penalise(std::span<float> logits) const;
  bool penalises() const { return params_.presence_penalty != 0 || params_.frequency_penalty != 0; }
  // True when the distribution is always one-hot: temperature <= 0 or top_k == 1.
  bool greedy() const;
  const SamplingParams& params() const { return params_; }

 private:
  // Fills kept_ (token ids in draw order) and weights_ (unnormalised
  // probabilities, same order) and returns their sum. Non-greedy only.
  double prepare(std::span<const float> logits) const;

  SamplingParams params_;
  Rng rng_;
  // Per-call buffers, kept between calls so that sampling does not allocate.
  mutable std::vector<int32_t> kept_;
  mutable std::vector<double> weights_;
  mutable std::vector<float> penalised_;
  // Emissions per token id (sized to the largest seen) and the ids seen, so
  // applying the penalties costs the distinct tokens, not the vocabulary.
  std::vector<int32_t> counts_;
  std::vector<int32_t> seen_;
};

// The argmax of logits, ties -> lowest id; NaN and -inf never win. -1 if no
// logit is above -inf.
int32_t argmax(std::span<const float> logits);

}  // namespace tessera
