// Which masked positions of a block a denoise forward reveals, and with what
// tokens (algorithms.md §2.3). After each denoise forward every masked
// position gets a candidate: the argmax of the softmax for a greedy lane,
// else a draw from the lane sampler's distribution, the mask token never
// among them; its confidence is that candidate's probability. Then a rule
// picks the positions to reveal; revealed tokens are never masked again.
//
//   threshold       every candidate with confidence > threshold; if fewer
//                   than the step's quota pass, the quota's most confident
//                   (SDAR's dynamic low-confidence rule, Fast-dLLM's)
//   sequential      the quota's leftmost masked positions
//   low_confidence  the quota's most confident (SDAR's static rule)
//   entropy_bounded ascending entropy, the shortest prefix whose summed
//                   entropy reaches entropy_bound (at least one)
//
// The quota of step s of `steps` for a block of B tokens is B / steps, plus
// one for the first B % steps steps, so `steps` forwards reveal a whole
// block; the last step reveals whatever is still masked.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/sampling/sampler.h"
#include "core/sampling/token_logprob.h"
#include "core/status/status.h"
#include "plugins/diffusion_common/diffusion_model.h"

namespace tessera {

enum class UnmaskRule : uint8_t { kThreshold, kSequential, kLowConfidence, kEntropyBounded };

// The rule named by decode.unmask.
Result<UnmaskRule> parse_unmask_rule(std::string_view name);

struct UnmaskSettings {
  UnmaskRule rule = UnmaskRule::kThreshold;
  int steps = 4;  // denoise forwards a block may take
  double threshold = 0.9;
  double entropy_bound = 0.35;
};

// Positions to reveal at step `step` (0-based) of `steps`, for a block of `block` tokens.
int reveal_quota(int block, int steps, int step);

class BlockUnmasker {
 public:
  // One denoise step for one block: `tokens` holds the block (mask where not
  // yet decoded), `logits` its rows [block, vocab] from the denoise forward.
  // Reveals positions by `settings` and returns how many (>= 1 while any is
  // masked). Draws from `sampler` only when it samples; ranks on its
  // penalised rows and observes each revealed token. With `records` (one per
  // block position), a revealed position's record gets its token's
  // log-probability and `top` alternatives over the row without the mask.
  int step(const DiffusionModel& model, const UnmaskSettings& settings, int step,
           std::span<const float> logits, std::span<int32_t> tokens, Sampler& sampler,
           std::span<TokenLogprob> records = {}, int top = 0);

 private:
  // The candidate token, its confidence and its distribution's entropy for
  // the masked position whose logits are `row`.
  void candidate(const DiffusionModel& model, std::span<const float> row, Sampler& sampler);

  struct Candidate {
    int32_t position = 0;
    int32_t token = 0;
    double confidence = 0;
    double entropy = 0;
  };
  std::vector<Candidate> candidates_;
  std::vector<float> row_;  // a logits row with the mask token removed
  std::vector<float> probs_;
};

}  // namespace tessera
