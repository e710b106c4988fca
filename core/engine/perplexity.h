// Scoring text: the mean negative log-likelihood of each token given the ones
// before it.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "core/status/status.h"

namespace tessera {

class Engine;

struct PerplexityResult {
  int64_t tokens = 0;     // predictions scored
  double mean_nll = 0.0;  // nats per token
};

// Scores tokens[1..] given tokens[0..i) (tokens[0] is normally BOS). Needs
// tokens.size() - 1 <= cache.max_tokens unless the store evicts (then any
// length: memory stays flat), and every id inside the vocabulary
// (InvalidArgument naming the first one outside). progress(done, total) is called after
// each chunk (optional).
Result<PerplexityResult> score_tokens(
    Engine& engine, std::span<const int32_t> tokens,
    const std::function<void(int64_t, int64_t)>& progress = nullptr);

// Scores as llama.cpp's llama-perplexity does, so the two compare on the same
// file: the tokens are cut into `chunks` windows of `window` tokens (as many
// as fit when chunks <= 0), each decoded in a sequence of its own with its
// first token replaced by `bos` (when bos >= 0), and only the second half of
// each window is scored: the logits at positions window/2 .. window-2 predict
// the next token. InvalidArgument when not even one window fits.
Result<PerplexityResult> score_windows(
    Engine& engine, std::span<const int32_t> tokens, int64_t window, int64_t chunks, int32_t bos,
    const std::function<void(int64_t, int64_t)>& progress = nullptr);

}  // namespace tessera
