// What `tessera sweep` measures at one grid point, each task a function of
// the point's engine (and, for fidelity, a reference engine with the full,
// uncompressed cache). Metrics come back as named numbers, in a fixed order.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "apps/tessera/sweep/sweep_spec.h"
#include "core/engine/engine.h"
#include "core/plugin/registry.h"
#include "core/status/status.h"
#include "plugins/verifier_restored/restoration_settings.h"

namespace tessera::sweep {

using Metrics = std::vector<std::pair<std::string, double>>;

// `restored` (perplexity, fidelity, recall): the engine's verifier
// `restored` options, the logits then coming from restored steps
// (position_logits.h); null for any other verifier: the plain forward.

// mean nll (nats per token) and perplexity over the text.
Status measure_perplexity(Engine& engine, std::span<const int32_t> tokens, Metrics& out,
                          const RestorationSettings* restored = nullptr);

// Against `reference` (the same model, the whole text in a static cache, no
// codec): the mean KL divergence KL(reference || point) and top-1 agreement of
// every position's next-token distribution; and, per layer, the K and V
// relative MSE mean||x - x^||^2 / mean||x||^2 of the point's codec on the
// reference's exact K/V (keys as the point's codec stage sees them). The
// same past the window (queries at t >= sink + window; every position when
// the store keeps all), with the mean nll there of the point and of the
// reference (kl_past_window, top1_past_window, nll_past_window,
// full_nll_past_window).
Status measure_fidelity(Engine& engine, Engine& reference, std::span<const int32_t> tokens,
                        Metrics& out, const RestorationSettings* restored = nullptr);

// recall_source "text": a passage of recall_length tokens of the text, the
// recall_filler tokens after it, the passage again. "random": recall_length
// random ordinary tokens, recall_filler tokens of text, the same tokens again.
// `recall` is the fraction of the second copy the model predicts (greedy);
// `recall_control` the same with another passage (other random tokens) in
// place of the first copy: what the model predicts without recalling it;
// `recall_gain` their difference. All are means over recall_trials draws from
// `seed`, each followed by its spread over the draws, the sample standard
// deviation (recall_std, recall_control_std, recall_gain_std; NaN for one
// draw).
Status measure_recall(Engine& engine, std::span<const int32_t> text, const SweepSettings& settings,
                      Metrics& out, const RestorationSettings* restored = nullptr);

// KV bytes after the whole text was fed: live, per token, the most live at
// any point, and reserved.
Status measure_memory(Engine& engine, std::span<const int32_t> tokens, Metrics& out);

// Prefill tokens/s over the start of the text, then decode tokens/s for
// `new_tokens` greedy tokens. Reported, never judged.
Status measure_speed(Engine& engine, std::span<const int32_t> tokens, int64_t new_tokens,
                     Metrics& out);

// `speculative`: `new_tokens` greedy tokens after the start of the text (the
// prompt of measure_speed) with the point's engine, and with `plain` (the
// point's config with decode.proposer = "none", speculative_baseline_config)
// as the baseline, decoding alone timed (timed_decode.h), the two alternating
// three times (tokens/s are medians). Metrics:
// acceptance (accepted / drafted), accepted_per_step, tokens_per_step and
// draft_forwards_per_step (per verification step), spec_tokens_per_s,
// plain_tokens_per_s, speedup (their ratio) and identical (1 when the tokens
// equal the baseline's, as greedy speculative decoding must give).
Status measure_speculative(Engine& engine, Engine& plain, std::span<const int32_t> tokens,
                           int64_t new_tokens, Metrics& out);

// The baseline of the speculative task: the point without its proposer.
Result<Config> speculative_baseline_config(const Config& point, const PluginRegistry& registry);

// The config of the fidelity reference for a point: the same model, backend
// and codec stage, a static store big enough for `tokens`, the identity codec.
Result<Config> reference_config(const Config& point, int64_t tokens);

}  // namespace tessera::sweep
