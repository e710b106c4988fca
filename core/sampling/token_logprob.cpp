#include "core/sampling/token_logprob.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/status/status.h"

namespace tessera {

TokenLogprob score_token(std::span<const float> logits, int32_t token, int top) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  TESSERA_CHECK(token >= 0 && static_cast<std::size_t>(token) < logits.size(),
                "score_token: token outside the row");
  double max_logit = -kInf;
  for (const float l : logits)
    if (l > max_logit) max_logit = l;
  TESSERA_CHECK(max_logit > -kInf, "score_token: every logit is -inf or NaN");
  // log-sum-exp in double; +inf logits share the mass equally.
  double sum = 0;
  for (const float l : logits) {
    if (!(l > -kInf)) continue;
    sum +=
        max_logit == kInf ? (l == kInf ? 1.0 : 0.0) : std::exp(static_cast<double>(l) - max_logit);
  }
  const auto logprob_of = [&](float l) -> float {
    if (!(l > -kInf)) return -kInf;
    if (max_logit == kInf) return l == kInf ? static_cast<float>(-std::log(sum)) : -kInf;
    return static_cast<float>(static_cast<double>(l) - max_logit - std::log(sum));
  };

  TokenLogprob out;
  out.token = token;
  out.logprob = logprob_of(logits[static_cast<std::size_t>(token)]);
  const int want = std::clamp(top, 0, TokenLogprob::kMaxTop);
  // The `want` best by one pass of insertion into a short sorted list:
  // descending logit, ties -> lower id.
  int count = 0;
  for (std::size_t i = 0; i < logits.size() && want > 0; ++i) {
    const float l = logits[i];
    if (!(l > -kInf)) continue;
    if (count == want && !(l > logits[static_cast<std::size_t>(out.top_tokens[count - 1])]))
      continue;
    int at = count < want ? count++ : want - 1;
    while (at > 0 && l > logits[static_cast<std::size_t>(out.top_tokens[at - 1])]) {
      out.top_tokens[at] = out.top_tokens[at - 1];
      --at;
    }
    out.top_tokens[at] = static_cast<int32_t>(i);
  }
  out.top_count = count;
  for (int j = 0; j < count; ++j)
    out.top_logprobs[j] = logprob_of(logits[static_cast<std::size_t>(out.top_tokens[j])]);
  return out;
}

}  // namespace tessera
