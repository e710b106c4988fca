#include "plugins/diffusion_common/unmasking.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace tessera {

Result<UnmaskRule> parse_unmask_rule(std::string_view name) {
  if (name == "threshold") return UnmaskRule::kThreshold;
  if (name == "sequential") return UnmaskRule::kSequential;
  if (name == "low_confidence") return UnmaskRule::kLowConfidence;
  if (name == "entropy_bounded") return UnmaskRule::kEntropyBounded;
  return invalid_argument("decode.unmask = \"" + std::string(name) +
                          "\" is not a rule; choose threshold, sequential, low_confidence or "
                          "entropy_bounded");
}

int reveal_quota(int block, int steps, int step) {
  return block / steps + (step < block % steps ? 1 : 0);
}

void BlockUnmasker::candidate(const DiffusionModel& model, std::span<const float> row,
                              Sampler& sampler) {
  row_.assign(row.begin(), row.end());
  row_[static_cast<std::size_t>(model.mask)] = -std::numeric_limits<float>::infinity();
  Candidate& c = candidates_.back();
  if (sampler.greedy()) {
    // The plain softmax ranks a greedy lane's candidates (a one-hot
    // distribution would make every candidate certain), after the penalties
    // (distribution() below applies them itself).
    sampler.penalise(row_);
    c.token = argmax(row_);
    const float top = row_[static_cast<std::size_t>(c.token)];
    double sum = 0, weighted = 0;
    for (const float logit : row_) {
      if (!(logit > -std::numeric_limits<float>::infinity())) continue;
      const double e = std::exp(static_cast<double>(logit - top));
      sum += e;
      weighted += e * static_cast<double>(logit - top);
    }
    c.confidence = 1.0 / sum;
    c.entropy = std::log(sum) - weighted / sum;
    return;
  }
  sampler.distribution(row_, probs_);
  c.token = sampler.sample_from(probs_);
  c.confidence = probs_[static_cast<std::size_t>(c.token)];
  c.entropy = 0;
  for (const float p : probs_)
    if (p > 0) c.entropy -= static_cast<double>(p) * std::log(static_cast<double>(p));
}

int BlockUnmasker::step(const DiffusionModel& model, const UnmaskSettings& settings, int step,
                        std::span<const float> logits, std::span<int32_t> tokens, Sampler& sampler,
                        std::span<TokenLogprob> records, int top) {
  const auto vocab = static_cast<std::size_t>(model.vocab);
  candidates_.clear();
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] != model.mask) continue;
    candidates_.push_back({static_cast<int32_t>(i), 0, 0, 0});
    candidate(model, logits.subspan(i * vocab, vocab), sampler);
  }
  if (candidates_.empty()) return 0;
  const int masked = static_cast<int>(candidates_.size());
  const int quota =
      std::max(1, reveal_quota(static_cast<int>(tokens.size()), settings.steps, step));
  // Most confident first; ties keep position order. (std::sort with the
  // position as the tie-break orders as a stable sort would, without the
  // stable sort's temporary buffer: a decode step allocates nothing.)
  const auto by_confidence = [](const Candidate& a, const Candidate& b) {
    return a.confidence > b.confidence || (a.confidence == b.confidence && a.position < b.position);
  };
  int reveal = 0;
  switch (settings.rule) {
    case UnmaskRule::kSequential:  // candidates are in position order
      reveal = quota;
      break;
    case UnmaskRule::kLowConfidence:
      std::sort(candidates_.begin(), candidates_.end(), by_confidence);
      reveal = quota;
      break;
    case UnmaskRule::kThreshold:
      std::sort(candidates_.begin(), candidates_.end(), by_confidence);
      while (reveal < masked &&
             candidates_[static_cast<std::size_t>(reveal)].confidence > settings.threshold)
        ++reveal;
      reveal = std::max(reveal, quota);
      break;
    case UnmaskRule::kEntropyBounded: {
      std::sort(candidates_.begin(), candidates_.end(), [](const Candidate& a, const Candidate& b) {
        return a.entropy < b.entropy || (a.entropy == b.entropy && a.position < b.position);
      });
      double sum = 0;
      while (reveal < masked && sum < settings.entropy_bound)
        sum += candidates_[static_cast<std::size_t>(reveal++)].entropy;
      reveal = std::max(reveal, 1);
      break;
    }
  }
  if (step >= settings.steps - 1) reveal = masked;  // the block's last denoise forward
  reveal = std::min(reveal, masked);
  for (int r = 0; r < reveal; ++r) {
    const Candidate& c = candidates_[static_cast<std::size_t>(r)];
    const auto position = static_cast<std::size_t>(c.position);
    tokens[position] = c.token;
    sampler.observe(c.token);
    if (records.empty()) continue;
    const std::span<const float> row = logits.subspan(position * vocab, vocab);
    row_.assign(row.begin(), row.end());
    row_[static_cast<std::size_t>(model.mask)] = -std::numeric_limits<float>::infinity();
    records[position] = score_token(row_, c.token, top);
  }
  return reveal;
}

}  // namespace tessera
