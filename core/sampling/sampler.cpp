#include "core/sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/status/status.h"

namespace tessera {

int32_t argmax(std::span<const float> logits) {
  int32_t best = -1;
  float best_value = -std::numeric_limits<float>::infinity();
  for (std::size_t i = 0; i < logits.size(); ++i) {
    if (logits[i] > best_value) {  // strict: ties keep the lower id; NaN fails
      best_value = logits[i];
      best = static_cast<int32_t>(i);
    }
  }
  return best;
}

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {}

void Sampler::reseed(uint64_t seed) {
  params_.seed = seed;
  rng_.reseed(seed);
}

void Sampler::observe(int32_t token) {
  if (!penalises() || token < 0) return;
  const auto id = static_cast<std::size_t>(token);
  if (counts_.size() <= id) counts_.resize(id + 1, 0);
  if (counts_[id]++ == 0) seen_.push_back(token);
}

void Sampler::penalise(std::span<float> logits) const {
  for (const int32_t token : seen_) {
    const auto id = static_cast<std::size_t>(token);
    if (id >= logits.size()) continue;
    logits[id] -=
        params_.presence_penalty + params_.frequency_penalty * static_cast<float>(counts_[id]);
  }
}

std::span<const float> Sampler::penalised(std::span<const float> logits) const {
  if (seen_.empty()) return logits;
  penalised_.assign(logits.begin(), logits.end());
  penalise(penalised_);
  return penalised_;
}

bool Sampler::greedy() const {
  return !(params_.temperature > 0) || params_.top_k == 1;
}

double Sampler::prepare(std::span<const float> logits) const {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const int32_t best = argmax(logits);
  TESSERA_CHECK(best >= 0, "sampler: every logit is -inf or NaN");
  const double max_logit = logits[static_cast<std::size_t>(best)];
  const double temperature = params_.temperature;
  // exp((logit - max) / T), in (0, 1]; +inf logits share the mass equally.
  auto weight = [&](int32_t id) {
    const float l = logits[static_cast<std::size_t>(id)];
    if (max_logit == kInf) return l == kInf ? 1.0 : 0.0;
    return std::exp((static_cast<double>(l) - max_logit) / temperature);
  };
  // Descending logit, ties -> lower id: the order top_k and top_p cut in.
  auto before = [&](int32_t a, int32_t b) {
    const float la = logits[static_cast<std::size_t>(a)];
    const float lb = logits[static_cast<std::size_t>(b)];
    return la > lb || (la == lb && a < b);
  };

  // Sized once for the vocabulary: sampling allocates nothing per token.
  kept_.reserve(logits.size());
  weights_.reserve(logits.size());
  kept_.clear();
  for (std::size_t i = 0; i < logits.size(); ++i)
    if (logits[i] > -kInf && !(max_logit == kInf && logits[i] != kInf))
      kept_.push_back(static_cast<int32_t>(i));

  const auto top_k = static_cast<std::size_t>(std::max(params_.top_k, 0));
  bool sorted = false;
  if (top_k > 0 && top_k < kept_.size()) {
    std::partial_sort(kept_.begin(), kept_.begin() + static_cast<std::ptrdiff_t>(top_k),
                      kept_.end(), before);
    kept_.resize(top_k);
    sorted = true;
  }

  weights_.clear();
  if (!(params_.top_p < 1.0f) || kept_.size() == 1) {
    double total = 0;
    for (int32_t id : kept_) {
      weights_.push_back(weight(id));
      total += weights_.back();
    }
    return total;
  }

  double mass = 0;
  for (int32_t id : kept_) mass += weight(id);
  if (!sorted) {
    // A token of probability below (1 - top_p) / (count - 1) cannot be in the
    // smallest nucleus (the tokens from it on could not reach 1 - top_p), so
    // drop those before sorting; half the bound leaves room for rounding.
    const double cutoff = 0.5 * (1.0 - static_cast<double>(params_.top_p)) /
                          static_cast<double>(kept_.size() - 1) * mass;
    std::erase_if(kept_, [&](int32_t id) { return weight(id) < cutoff; });
    std::sort(kept_.begin(), kept_.end(), before);
  }
  const double target = static_cast<double>(params_.top_p) * mass;
  double total = 0;
  std::size_t keep = 0;
  while (keep < kept_.size()) {
    weights_.push_back(weight(kept_[keep]));
    total += weights_.back();
    ++keep;
    if (total >= target) break;
  }
  kept_.resize(keep);
  return total;
}

void Sampler::distribution(std::span<const float> raw, std::vector<float>& probs) const {
  const std::span<const float> logits = penalised(raw);
  probs.assign(logits.size(), 0.0f);
  if (greedy()) {
    const int32_t best = argmax(logits);
    TESSERA_CHECK(best >= 0, "sampler: every logit is -inf or NaN");
    probs[static_cast<std::size_t>(best)] = 1.0f;
    return;
  }
  const double total = prepare(logits);
  for (std::size_t j = 0; j < kept_.size(); ++j)
    probs[static_cast<std::size_t>(kept_[j])] = static_cast<float>(weights_[j] / total);
}

int32_t Sampler::sample_from(std::span<const float> probs) {
  double total = 0;
  for (const float p : probs) total += p;
  TESSERA_CHECK(total > 0 && std::isfinite(total), "sampler: a distribution without mass");
  const double u = rng_.uniform() * total;
  double cumulative = 0;
  int32_t last = -1;
  for (std::size_t i = 0; i < probs.size(); ++i) {
    if (probs[i] <= 0) continue;
    cumulative += probs[i];
    last = static_cast<int32_t>(i);
    if (u < cumulative) return last;
  }
  return last;  // u rounded up to the total
}

int32_t Sampler::sample(std::span<const float> raw) {
  const std::span<const float> logits = penalised(raw);
  if (greedy()) {
    const int32_t best = argmax(logits);
    TESSERA_CHECK(best >= 0, "sampler: every logit is -inf or NaN");
    return best;
  }
  const double total = prepare(logits);
  const double u = rng_.uniform() * total;
  double cumulative = 0;
  for (std::size_t j = 0; j < kept_.size(); ++j) {
    cumulative += weights_[j];
    if (u < cumulative) return kept_[j];
  }
  // u rounded up to the total: take the last token that has any weight.
  std::size_t j = kept_.size() - 1;
  while (j > 0 && weights_[j] == 0) --j;
  return kept_[j];
}

}  // namespace tessera
