#include "apps/tessera/sweep/position_logits.h"

#include <algorithm>
#include <numeric>

#include "plugins/verifier_restored/restoring_forward.h"

namespace tessera::sweep {
namespace {

Result<std::vector<float>> plain_logits(Engine& engine, std::span<const int32_t> tokens,
                                        SequenceId seq) {
  const auto vocab = static_cast<std::size_t>(engine.model().config.vocab_size);
  std::vector<float> logits;
  logits.reserve(tokens.size() * vocab);
  const auto chunk = static_cast<std::size_t>(engine.transformer().max_batch());
  std::vector<int32_t> positions(chunk);
  for (std::size_t start = 0; start < tokens.size(); start += chunk) {
    const std::size_t n = std::min(chunk, tokens.size() - start);
    std::iota(positions.begin(), positions.begin() + static_cast<std::ptrdiff_t>(n),
              static_cast<int32_t>(start));
    ASSIGN_OR_RETURN(
        const std::span<const float> rows,
        engine.transformer().forward(engine.cache(), seq, tokens.subspan(start, n),
                                     std::span(positions).first(n), LogitsWanted::kAll));
    logits.insert(logits.end(), rows.begin(), rows.end());
  }
  return logits;
}

Result<std::vector<float>> restored_logits(Engine& engine, std::span<const int32_t> tokens,
                                           SequenceId seq, const RestorationSettings& settings) {
  ASSIGN_OR_RETURN(const RestorerParts parts, make_restorer_parts(engine.services(), settings));
  RETURN_IF_ERROR(check_key_stage(parts, settings, engine.cache().stored_keys()));
  Transformer& target = engine.transformer();
  const int64_t chunk = settings.restore_chunk;
  RestoringForward forward(target, parts.restorer(target), *parts.projection,
                           chunk > 0 ? static_cast<int>(chunk) : target.max_batch(),
                           static_cast<int64_t>(tokens.size()));
  const auto vocab = static_cast<std::size_t>(engine.model().config.vocab_size);
  std::vector<float> logits;
  logits.reserve(tokens.size() * vocab);
  DecodeCounters counters;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    ASSIGN_OR_RETURN(const std::span<const float> row,
                     forward.step(engine.cache(), seq, tokens.first(i + 1), counters));
    logits.insert(logits.end(), row.begin(), row.end());
  }
  return logits;
}

}  // namespace

Result<std::vector<float>> position_logits(Engine& engine, std::span<const int32_t> tokens,
                                           const RestorationSettings* restored) {
  // Over a store that keeps everything, restoring has nothing to bring back.
  const bool restoring = restored != nullptr && engine.cache().policy().evicts;
  SequenceState seq;
  RETURN_IF_ERROR(engine.begin_sequence(seq));
  Result<std::vector<float>> logits = restoring ? restored_logits(engine, tokens, seq.id, *restored)
                                                : plain_logits(engine, tokens, seq.id);
  const Status released = engine.end_sequence(seq);
  if (!logits.ok()) return logits.status();
  RETURN_IF_ERROR(released);
  return logits;
}

}  // namespace tessera::sweep
