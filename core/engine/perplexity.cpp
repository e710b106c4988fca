#include "core/engine/perplexity.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/engine/engine.h"

namespace tessera {
namespace {

// -log softmax(row)[target], in double.
double row_nll(const float* row, int vocab, int32_t target) {
  const float max = *std::max_element(row, row + vocab);
  double sum = 0.0;
  for (int v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(row[v]) - max);
  return std::log(sum) + max - static_cast<double>(row[target]);
}

Status check_ids(std::span<const int32_t> tokens, int vocab) {
  // Targets are read as logit indices but never fed to the model, so the
  // forward's own check does not see the last one.
  for (std::size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || tokens[i] >= vocab)
      return invalid_argument("token " + std::to_string(i) + " is id " + std::to_string(tokens[i]) +
                              ", outside the vocabulary [0, " + std::to_string(vocab) + ")");
  return ok_status();
}

// Feeds `tokens` at positions 0.. into a new sequence, max_batch at a time;
// `score(position, logits_row)` sees every position's logits.
Status feed_and_score(Engine& engine, std::span<const int32_t> tokens,
                      const std::function<void(int64_t, const float*)>& score,
                      const std::function<void(int64_t)>& fed = nullptr) {
  const int vocab = engine.model().config.vocab_size;
  SequenceState sequence;
  RETURN_IF_ERROR(engine.begin_sequence(sequence));
  const int64_t chunk = engine.transformer().max_batch();
  const int64_t total = static_cast<int64_t>(tokens.size());
  std::vector<int32_t> positions(static_cast<std::size_t>(chunk));
  Status status;
  for (int64_t start = 0; start < total && status.ok(); start += chunk) {
    const int64_t count = std::min(chunk, total - start);
    std::iota(positions.begin(), positions.begin() + count, static_cast<int32_t>(start));
    auto logits = engine.transformer().forward(
        engine.cache(), sequence.id, tokens.subspan(static_cast<std::size_t>(start), count),
        std::span<const int32_t>(positions.data(), static_cast<std::size_t>(count)),
        LogitsWanted::kAll);
    if (!logits.ok()) {
      status = logits.status();
      break;
    }
    for (int64_t i = 0; i < count; ++i) score(start + i, logits->data() + i * vocab);
    if (fed) fed(start + count);
  }
  const Status released = engine.end_sequence(sequence);
  RETURN_IF_ERROR(status);
  return released;
}

}  // namespace

Result<PerplexityResult> score_tokens(Engine& engine, std::span<const int32_t> tokens,
                                      const std::function<void(int64_t, int64_t)>& progress) {
  if (tokens.size() < 2) return invalid_argument("scoring needs at least two tokens");
  const int64_t predictions = static_cast<int64_t>(tokens.size()) - 1;
  if (!engine.cache().policy().evicts && predictions > engine.max_tokens())
    return resource_exhausted("scoring " + std::to_string(predictions) +
                              " tokens needs cache.max_tokens >= " + std::to_string(predictions) +
                              " (it is " + std::to_string(engine.max_tokens()) +
                              "), or a store that evicts (cache.plugin = \"sink_window\")");
  const int vocab = engine.model().config.vocab_size;
  RETURN_IF_ERROR(check_ids(tokens, vocab));
  double total_nll = 0.0;
  // The last token is only a target.
  RETURN_IF_ERROR(feed_and_score(
      engine, tokens.first(tokens.size() - 1),
      [&](int64_t position, const float* row) {
        total_nll += row_nll(row, vocab, tokens[static_cast<std::size_t>(position + 1)]);
      },
      [&](int64_t done) {
        if (progress) progress(done, predictions);
      }));
  return PerplexityResult{predictions, total_nll / static_cast<double>(predictions)};
}

Result<PerplexityResult> score_windows(Engine& engine, std::span<const int32_t> tokens,
                                       int64_t window, int64_t chunks, int32_t bos,
                                       const std::function<void(int64_t, int64_t)>& progress) {
  if (window < 4) return invalid_argument("the scoring window must hold 4 tokens at least");
  if (!engine.cache().policy().evicts && window > engine.max_tokens())
    return resource_exhausted("a window of " + std::to_string(window) +
                              " tokens needs cache.max_tokens >= " + std::to_string(window));
  const int64_t fit = static_cast<int64_t>(tokens.size()) / window;
  if (fit < 1)
    return invalid_argument("the text gives " + std::to_string(tokens.size()) +
                            " tokens, fewer than one window of " + std::to_string(window));
  const int64_t n = chunks > 0 ? std::min(chunks, fit) : fit;
  const int vocab = engine.model().config.vocab_size;
  RETURN_IF_ERROR(check_ids(tokens.first(static_cast<std::size_t>(n * window)), vocab));
  const int64_t first = window / 2;
  double total_nll = 0.0;
  int64_t scored = 0;
  std::vector<int32_t> chunk(static_cast<std::size_t>(window));
  for (int64_t c = 0; c < n; ++c) {
    const auto source =
        tokens.subspan(static_cast<std::size_t>(c * window), static_cast<std::size_t>(window));
    std::copy(source.begin(), source.end(), chunk.begin());
    if (bos >= 0) chunk[0] = bos;
    RETURN_IF_ERROR(feed_and_score(engine, chunk, [&](int64_t position, const float* row) {
      if (position < first || position >= window - 1) return;
      total_nll += row_nll(row, vocab, chunk[static_cast<std::size_t>(position + 1)]);
      ++scored;
    }));
    if (progress) progress(c + 1, n);
  }
  return PerplexityResult{scored, total_nll / static_cast<double>(scored)};
}

}  // namespace tessera
