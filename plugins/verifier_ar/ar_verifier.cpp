#include "plugins/verifier_ar/ar_verifier.h"

#include <numeric>

#include "core/cache/checked_cache_store.h"
#include "core/model/transformer.h"
#include "core/sampling/sampler.h"

namespace tessera {

ArVerifier::ArVerifier(const OptionValues&) {}

Status ArVerifier::verify(DecodeContext& context, const Draft& draft,
                          std::vector<int32_t>& emitted) {
  if (!draft.empty()) {
    return unimplemented(
        "the ar verifier checks one token per step in this version; use decode.proposer = "
        "\"none\" (draft verification comes with speculative decoding)");
  }
  SequenceState& seq = context.sequence;
  const int64_t pending = static_cast<int64_t>(seq.tokens.size()) - seq.cached;
  if (pending <= 0) return failed_precondition("the sequence has no token to feed");
  ASSIGN_OR_RETURN(const SequenceInfo info, context.cache.info(seq.id));
  if (seq.cached != info.logical_length)
    return internal_error("sequence and cache disagree on the cached length");

  const std::span<const int32_t> tokens(seq.tokens.data() + seq.cached,
                                        static_cast<std::size_t>(pending));
  positions_.resize(tokens.size());
  std::iota(positions_.begin(), positions_.end(), static_cast<int32_t>(seq.cached));
  ASSIGN_OR_RETURN(std::span<const float> logits,
                   context.target.forward(context.cache, seq.id, tokens, positions_));
  seq.cached += pending;
  emitted.push_back(context.sampler.sample(logits));
  return ok_status();
}

}  // namespace tessera
