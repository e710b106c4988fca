// A generation request as the CLI, the benchmarks and the tests make it, what
// comes back from it, and the sink its tokens stream into.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/decode/sequence_state.h"

namespace tessera {

struct GenerationRequest {
  std::vector<int32_t> prompt;  // token ids, BOS included when wanted
  // Multi-branch decoding: continuations that share the prompt, each decoded
  // to its end as a lane of its own (decode.branch_layout says how they share
  // the prompt's K/V). Empty: the prompt alone is one lane. A branch may be
  // empty (it continues the prompt itself).
  std::vector<std::vector<int32_t>> branches;
  int64_t max_new_tokens = 128;  // per lane
  bool stop_at_eos = true;
  // The seed of the request's random stream instead of sampling.seed (each
  // branch's stream is derived from it).
  std::optional<uint64_t> seed;
};

struct GenerationStats {
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;  // all lanes
  int64_t steps = 0;             // engine steps (one target verification forward each)
  double prefill_seconds = 0;
  double decode_seconds = 0;
  std::string stop_reason;  // "max_tokens" | "eos" | "cache_full" | "stopped" | "mixed"
  // Per branch (empty without branches): why it stopped and what it generated.
  std::vector<std::string> branch_stop_reasons;
  std::vector<int64_t> branch_tokens;
  // Forwards, drafted and accepted tokens (core/decode/sequence_state.h).
  DecodeCounters decode;
  // The cache at the end, before the sequences were released (CacheBytes).
  std::size_t kv_live_bytes = 0;
  std::size_t kv_peak_bytes = 0;
  std::size_t kv_capacity_bytes = 0;
  std::size_t kv_copied_bytes = 0;  // copied during this generation (forks, copy-on-write)
  int64_t kv_entries = 0;           // entries stored at the end, all sequences
};

// Receives every emitted token as soon as it exists, with its lane: the
// branch index (0 without branches). Returning false stops the generation
// early.
using TokenSink = std::function<bool(int32_t token, int lane)>;
// The decode loop's and the sessions' sink: the same, with the token's
// log-probability record when its lane asked for them (SequenceState::
// logprobs), else null.
using ScoredTokenSink = std::function<bool(int32_t token, int lane, const TokenLogprob* logprob)>;

}  // namespace tessera
