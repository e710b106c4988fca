#include "core/engine/perplexity.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/engine/engine.h"

namespace tessera {

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
  // Targets are read as logit indices but never fed to the model, so the
  // forward's own check does not see the last one.
  for (std::size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || tokens[i] >= vocab)
      return invalid_argument("token " + std::to_string(i) + " is id " + std::to_string(tokens[i]) +
                              ", outside the vocabulary [0, " + std::to_string(vocab) + ")");
  SequenceState sequence;
  RETURN_IF_ERROR(engine.begin_sequence(sequence));
  const int64_t chunk = engine.transformer().max_batch();
  std::vector<int32_t> positions(static_cast<std::size_t>(chunk));
  double total_nll = 0.0;
  Status status;
  for (int64_t start = 0; start < predictions && status.ok(); start += chunk) {
    const int64_t count = std::min(chunk, predictions - start);
    std::iota(positions.begin(), positions.begin() + count, static_cast<int32_t>(start));
    auto logits = engine.transformer().forward(
        engine.cache(), sequence.id, tokens.subspan(static_cast<std::size_t>(start), count),
        std::span<const int32_t>(positions.data(), static_cast<std::size_t>(count)),
        LogitsWanted::kAll);
    if (!logits.ok()) {
      status = logits.status();
      break;
    }
    for (int64_t i = 0; i < count; ++i) {
      const float* row = logits->data() + i * vocab;
      // log softmax in double: nll = logsumexp(row) - row[target].
      const float max = *std::max_element(row, row + vocab);
      double sum = 0.0;
      for (int v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(row[v]) - max);
      const int32_t target = tokens[static_cast<std::size_t>(start + i + 1)];
      total_nll += std::log(sum) + max - static_cast<double>(row[target]);
    }
    if (progress) progress(start + count, predictions);
  }
  const Status released = engine.end_sequence(sequence);
  RETURN_IF_ERROR(status);
  RETURN_IF_ERROR(released);
  return PerplexityResult{predictions, total_nll / static_cast<double>(predictions)};
}

}  // namespace tessera
