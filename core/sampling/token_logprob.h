// An emitted token's log-probability and the most likely alternatives at its
// position, as the OpenAI API's `logprobs` report them: the model's own
// distribution, log_softmax of the raw logits (temperature 1, before
// penalties, top-k or top-p), as vLLM reports by default. Fixed-size, so
// recording one allocates nothing.
#pragma once

#include <array>
#include <cstdint>
#include <span>

namespace tessera {

struct TokenLogprob {
  static constexpr int kMaxTop = 20;  // OpenAI's limit on top_logprobs
  int32_t token = -1;
  float logprob = 0;
  int top_count = 0;  // alternatives below, most likely first (ties: lower id)
  std::array<int32_t, kMaxTop> top_tokens{};
  std::array<float, kMaxTop> top_logprobs{};
};

// The record of `token` at a position whose logits are `logits`, with the
// `top` (clamped to [0, kMaxTop]) most likely tokens. -inf and NaN logits
// have probability 0 (logprob -inf) and are never among the alternatives.
TokenLogprob score_token(std::span<const float> logits, int32_t token, int top);

}  // namespace tessera
