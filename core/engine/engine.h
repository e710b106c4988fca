// Builds a runnable pipeline from a config: model, backend, cache store with
// its codec, proposer, verifier and scheduler, each plugin chosen by name, and
// the services plugins reach the core through. Lanes
// (core/decode/sequence_state.h) go through begin/prefill/step/end; the
// decode loop (core/engine/decode_loop.h) steps many of them as the
// configured scheduler plans.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/cache/checked_cache_store.h"
#include "core/cache/prefix_cache.h"
#include "core/config/config.h"
#include "core/decode/draft.h"
#include "core/decode/proposer.h"
#include "core/decode/verifier.h"
#include "core/engine/memory_budget.h"
#include "core/model/model.h"
#include "core/model/transformer.h"
#include "core/plugin/registry.h"
#include "core/sampling/sampler.h"
#include "core/schedule/scheduler.h"
#include "core/tokenizer/tokenizer.h"

namespace tessera {

class EngineServices;

// Which plugin serves each role, for reports.
struct EngineDescription {
  std::string model_path;
  std::string backend, cache, codec, proposer, verifier, scheduler;
  DeviceInfo device;
};

// How the branches of a request share their prompt (decode.branch_layout).
enum class BranchLayout { kBim, kBatched };

class Engine {
 public:
  // `registry` must already be scanned and must outlive the engine.
  static Result<std::unique_ptr<Engine>> create(const Config& config,
                                                const PluginRegistry& registry);
  ~Engine();

  const LoadedModel& model() const { return *model_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  Transformer& transformer() { return *transformer_; }
  Backend& backend() { return *backend_; }
  CheckedCacheStore& cache() { return *cache_; }
  // The configured KV codec (layers in cache.codec_skip_layers use identity).
  const Compressor& codec() const { return *codec_; }
  // The configured codec's storage per head_dim floats of K or V, in bits: a
  // vector that spans a token's KV heads (cache.codec_span = "token") counts
  // its share, so the figure compares across spans.
  double codec_bits_per_head_vector() const;
  const SamplingParams& sampling() const { return sampling_; }
  const EngineDescription& description() const { return description_; }
  // Things worth telling the user that do not stop the engine (a cache longer
  // than the model's trained context); the CLI prints them to stderr.
  const std::vector<std::string>& warnings() const { return warnings_; }
  // Entries one sequence may hold (cache.max_tokens). A store that evicts
  // (cache().policy().evicts) lets sequences run longer than this.
  int64_t max_tokens() const { return max_tokens_; }
  // decode.max_tokens: tokens to generate unless the caller says otherwise.
  int64_t default_new_tokens() const { return default_new_tokens_; }
  BranchLayout branch_layout() const { return branch_layout_; }
  bool drafts() const { return description_.proposer != "none"; }
  PluginServices& services();
  // Counters of the decoding since the last reset (schedulers reset them).
  DecodeCounters& counters() { return counters_; }

  // The proposers a lane may draft with: decode.proposer first, then
  // decode.alternate_proposers.
  std::vector<std::string> proposer_choices() const;
  // Makes the lane draft with the proposer `name` (one of proposer_choices);
  // before its first step only. INVALID_ARGUMENT lists the choices.
  Status choose_proposer(SequenceState& lane, std::string_view name) const;
  const std::string& proposer_name(const SequenceState& lane) const;

  // A lane in a new cache sequence; its tokens are the caller's (the prompt).
  // Its sampler takes [sampling], with `seed` instead of sampling.seed if given.
  Status begin_sequence(SequenceState& lane, std::optional<uint64_t> seed = std::nullopt);
  // A lane that continues `prefix` as its branch `branch` (>= 1): in the
  // prefix's own sequence (bim) or in a fork of it (batched). The lane's
  // tokens become the prefix's cached ones; the caller appends its own.
  // Default seed: the prefix's seed mixed with the branch, the same in both
  // layouts, so they draw the same numbers.
  Status begin_branch(const SequenceState& prefix, BranchId branch, SequenceState& lane,
                      std::optional<uint64_t> seed = std::nullopt);
  // A lane in a new sequence forked from `source`'s (copy-on-write on
  // paged, copied elsewhere): the same tokens, K/V and sampler state (its
  // random stream goes on from where the source's is); its proposer begins
  // afresh at its first step. `source` must own its sequence.
  Status fork_sequence(const SequenceState& source, SequenceState& lane);
  // Feeds the lane's waiting tokens into the cache as the verifier decodes
  // them (a prompt that branches continue, or a long history), without
  // sampling: all but the last for `ar`, whole blocks for block diffusion.
  Status prefill(SequenceState& lane);
  // Tokens of the lane's history a scheduler may feed in chunks before the
  // lane decodes (LaneView::prefill_waiting): all but the last waiting one
  // when the verifier chunks prefills, else 0.
  int64_t prefill_waiting(const SequenceState& lane) const;
  // Batch rows the lane's next decode step may take: its waiting token and
  // a draft as long as its last one (LaneView::decode_rows).
  int64_t decode_rows(const SequenceState& lane) const;
  // One decode step of `lanes`: each proposes (the proposer's begin() at a
  // lane's first step), one verification for all, each observes. Appends each
  // lane's emitted tokens to its tokens and to emitted[i].
  Status step(std::span<SequenceState* const> lanes, std::span<std::vector<int32_t>> emitted);
  Status step(SequenceState& lane, std::vector<int32_t>& emitted);
  // The same step with other lanes' prefill chunks in its forward
  // (Verifier::feed_and_verify; `lanes` may be empty). With `fit_drafts`,
  // drafts are cut, the longest first, so the chunks and the lanes fit
  // decode.max_batch rows (lanes of several requests in one step); without,
  // drafts too long for one forward are refused with what to change.
  Status step(std::span<const PrefillChunk> chunks, std::span<SequenceState* const> lanes,
              std::span<std::vector<int32_t>> emitted, bool fit_drafts = false);
  // Keeps the lane's tokens [0, end) and its cache up to what they need (the
  // last kept token waits to be fed, like any last emitted one): what a step
  // emitted past a turn's end leaves it. `end` must be past every token the
  // lane held before its last step, so proposers' state stays true. Only for
  // a lane that owns its sequence.
  Status keep_tokens(SequenceState& lane, int64_t end);
  // Ends the lane: its proposer state, and its cache sequence unless the
  // lane is a branch kept in its prefix's sequence.
  Status end_sequence(SequenceState& lane);

  // The memory check of Engine::create again, for `sequences` sequences of
  // cache.max_tokens each at once (tessera serve: server.max_sessions).
  // `prefix_cache_bytes`: the prefix cache's budget besides.
  Status check_memory_for(int64_t sequences, uint64_t prefix_cache_bytes = 0) const;

  // The configured scheduler: it plans the steps of a decode loop.
  Scheduler& scheduler() { return *scheduler_; }

  // Automatic prefix caching (core/cache/prefix_cache.h) within
  // `budget_bytes` of held blocks: tessera serve's server.prefix_cache_mib.
  // FAILED_PRECONDITION saying what to change where this engine cannot (a
  // store that shares no blocks, a verifier whose K/V are not a prefix's).
  Status enable_prefix_cache(std::size_t budget_bytes);
  bool prefix_caching() const { return prefix_cache_ != nullptr; }
  // A lane just begun (nothing cached yet) whose tokens are its prompt
  // begins with the longest cached prefix of them, leaving at least one to
  // feed; returns the tokens reused (0 without the cache, or on a miss).
  Result<int64_t> reuse_cached_prefix(SequenceState& lane);
  // Keeps the full blocks of the lane's cached tokens for later lanes.
  Status publish_prefix(const SequenceState& lane);
  std::optional<PrefixCacheStats> prefix_cache_stats() const;

  // Runs a request to its end on a decode loop (core/engine/request_run.h).
  Result<GenerationStats> generate(const GenerationRequest& request, const TokenSink& sink);

 private:
  friend struct EngineBuilder;  // engine_create.cpp: the steps of create()
  Engine();
  DecodeContext context();

  std::unique_ptr<LoadedModel> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Transformer> transformer_;
  std::unique_ptr<Compressor> codec_;           // the configured codec
  std::unique_ptr<Compressor> identity_codec_;  // for cache.codec_skip_layers
  std::vector<const Compressor*> layer_codecs_;
  std::unique_ptr<CheckedCacheStore> cache_;
  std::unique_ptr<PrefixCache> prefix_cache_;  // after cache_: it drops its blocks there
  // What decides a token's K/V besides the tokens before it (model file,
  // cache and codec settings, backend): the prefix cache's root key.
  std::string kv_identity_;
  std::unique_ptr<EngineServices> services_;
  std::unique_ptr<Proposer> proposer_;
  // decode.alternate_proposers, by name; lane.proposer k > 0 is alternates_[k - 1].
  std::vector<std::pair<std::string, std::unique_ptr<Proposer>>> alternates_;
  Proposer& proposer_of(const SequenceState& lane) {
    return lane.proposer == 0 ? *proposer_
                              : *alternates_[static_cast<std::size_t>(lane.proposer - 1)].second;
  }
  std::unique_ptr<Verifier> verifier_;
  std::unique_ptr<Scheduler> scheduler_;
  EngineDescription description_;
  std::vector<std::string> warnings_;
  SamplingParams sampling_;
  int64_t max_tokens_ = 0;
  int64_t default_new_tokens_ = 0;
  MemoryRequest memory_;  // what Engine::create checked
  BranchLayout branch_layout_ = BranchLayout::kBim;
  SequenceId next_sequence_ = 0;
  DecodeCounters counters_;
  // Reused every step: one draft and one step record per lane.
  std::vector<Draft> drafts_;
  std::vector<LaneStep> lane_steps_;
  std::vector<std::size_t> emitted_before_;
};

}  // namespace tessera
