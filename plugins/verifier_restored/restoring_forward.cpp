#include "plugins/verifier_restored/restoring_forward.h"

#include <algorithm>

#include "plugins/verifier_restored/evicted_run.h"

namespace tessera {

RestoringForward::RestoringForward(Transformer& target, Transformer& restorer,
                                   const KVProjection& projection, int chunk, int64_t max_tokens)
    : target_(target),
      restorer_(restorer),
      projection_(projection),
      chunk_(std::max(1, std::min(chunk, std::min(target.max_batch(), restorer.max_batch())))) {
  history_.reserve(target.cache_geometry(), max_tokens);
  batch_.reserve(1);
}

std::size_t RestoringForward::restorer_scratch_bytes() const {
  // The target restoring itself runs in its own scratch, held anyway.
  return &restorer_ == &target_ ? 0 : restorer_.scratch_bytes();
}

Status RestoringForward::prefill(CheckedCacheStore& cache, SequenceId seq,
                                 std::span<const int32_t> tokens, int64_t cached,
                                 DecodeCounters& counters) {
  if (static_cast<int64_t>(tokens.size()) <= cached) return ok_status();
  RETURN_IF_ERROR(history_.compute(target_, cache, seq, tokens, chunk_, counters.target_forwards));
  counters.restoration_peak_bytes = std::max(counters.restoration_peak_bytes, history_.bytes());
  return history_.append_to(cache, seq, cached);
}

Result<std::span<const float>> RestoringForward::step(CheckedCacheStore& cache, SequenceId seq,
                                                      std::span<const int32_t> tokens,
                                                      DecodeCounters& counters) {
  if (tokens.empty()) return invalid_argument("restored step: no token to feed");
  ASSIGN_OR_RETURN(const EvictedRun run, evicted_run(cache, seq));
  ASSIGN_OR_RETURN(const SequenceInfo info, cache.info(seq));
  if (info.logical_length + 1 != static_cast<int64_t>(tokens.size()))
    return failed_precondition("restored step: the store holds " +
                               std::to_string(info.logical_length) + " tokens of sequence " +
                               std::to_string(seq) + ", not all but the last of " +
                               std::to_string(tokens.size()));
  TransientKV restored;
  if (!run.empty()) {
    RETURN_IF_ERROR(history_.compute(restorer_, cache, seq,
                                     tokens.first(static_cast<std::size_t>(run.end)), chunk_,
                                     counters.restorer_forwards));
    projection_.apply(history_, run.begin, run.end);
    restored = history_.transient(seq, run.begin, run.end);
    ++counters.restoration_steps;
    counters.restored_positions += run.size();
    counters.restoration_peak_bytes =
        std::max(counters.restoration_peak_bytes, history_.bytes() + restorer_scratch_bytes());
  }
  batch_.clear();
  batch_.add(tokens.back(), seq, static_cast<int32_t>(tokens.size() - 1), -1,
             kWriteKv | kOutputLogits);
  ForwardOptions options;
  options.unwindowed = true;
  options.transient = std::span<const TransientKV>(&restored, run.empty() ? 0 : 1);
  ASSIGN_OR_RETURN(const std::span<const float> logits, target_.forward(cache, batch_, options));
  ++counters.target_forwards;
  return logits;
}

}  // namespace tessera
