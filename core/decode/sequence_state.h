// One lane of decoding: a sequence, or one branch of a sequence under the
// single-sequence branch layout (BIM). Everything that belongs to it lives
// here, so interleaved lanes (branches now, server sessions later) never
// touch each other's randomness or drafts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/cache/cache_store.h"
#include "core/sampling/sampler.h"
#include "core/sampling/token_logprob.h"

namespace tessera {

// A proposer's own per-lane state (a draft model's cache sequence, an n-gram
// index, ...): the proposer makes it in begin() and is the only one to read it.
class ProposerState {
 public:
  virtual ~ProposerState() = default;
};

struct SequenceState {
  SequenceId id = 0;    // the cache sequence the lane's K/V live in
  BranchId branch = 0;  // 0: the sequence itself; b > 0: its branch b (BIM)
  // The lane's tokens: the shared prefix, then its own. tokens[0, cached) have
  // K/V in the cache (in the lane's view: the prefix and its branch); the
  // rest wait to be fed (the prompt at first, then the last emitted token).
  // Token i sits at position i.
  std::vector<int32_t> tokens;
  int64_t cached = 0;
  int64_t capacity = 0;  // entries the cache sequence may hold (shared by its branches)
  Sampler sampler;       // the lane's random stream and sampling transform
  std::unique_ptr<ProposerState> proposer_state;
  bool proposer_begun = false;  // Proposer::begin ran (the engine calls it at the first step)
  bool owns_sequence = true;    // false for a branch kept in its prefix's sequence
  int64_t last_draft = 0;       // tokens the proposer drafted at the lane's last step
  // Which of the engine's proposers drafts for the lane (ABI 6.1): 0 is
  // decode.proposer, k > 0 the k-th of decode.alternate_proposers
  // (Engine::choose_proposer). Fixed once the lane has stepped.
  int proposer = 0;
  // Log-probabilities (ABI 7.0): >= 0 asks the verifier for each emitted
  // token's TokenLogprob with this many alternatives (at most
  // TokenLogprob::kMaxTop); -1: none. The engine keeps the last step's in
  // step_logprobs, one per token it appended to `tokens`.
  int logprobs = -1;
  std::vector<TokenLogprob> step_logprobs;
};

// What decoding did, summed over the lanes of a generation.
struct DecodeCounters {
  int64_t target_forwards = 0;  // forwards of the target model (prefill and verification)
  int64_t verify_steps = 0;     // verification forwards (one may serve several lanes)
  int64_t draft_forwards =
      0;                 // forwards run to draft (a draft model, or the target's first layers)
  int64_t drafted = 0;   // draft tokens verified (within the room the cache had)
  int64_t accepted = 0;  // draft tokens accepted
  int64_t emitted = 0;   // tokens the verifier emitted (accepted + one per lane and step)
  // Block diffusion: forwards that denoise a block (they write no K/V), and
  // forwards that write finished blocks' K/V (a block's commit, and the
  // block-causal prefill of a prompt's whole blocks).
  int64_t denoise_forwards = 0;
  int64_t commit_forwards = 0;
  // Wall time of the steps' parts (Engine::step): proposing (drafting) and
  // verifying (the target forward, acceptance, the commit).
  double propose_seconds = 0;
  double verify_seconds = 0;
  // K/V restoration (verifier `restored`, ABI 3.2): steps that restored
  // evicted entries, the positions restored summed over those steps, and the
  // most bytes one step held transiently for them (the restored K/V of every
  // layer, the restorer's K/V of the history they depend on included).
  int64_t restoration_steps = 0;
  int64_t restored_positions = 0;
  int64_t restorer_forwards = 0;  // the restorer's forwards (the target's too for "self")
  std::size_t restoration_peak_bytes = 0;
};

}  // namespace tessera
