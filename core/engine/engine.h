// Builds a runnable pipeline from a config: model, backend, cache store with
// its codec, sampler, proposer, verifier and scheduler, each plugin chosen by
// name. Schedulers drive sequences through begin/step/end.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/cache/checked_cache_store.h"
#include "core/config/config.h"
#include "core/decode/draft.h"
#include "core/decode/proposer.h"
#include "core/decode/verifier.h"
#include "core/model/model.h"
#include "core/model/transformer.h"
#include "core/plugin/registry.h"
#include "core/sampling/sampler.h"
#include "core/schedule/scheduler.h"
#include "core/tokenizer/tokenizer.h"

namespace tessera {

// Which plugin serves each role, for reports.
struct EngineDescription {
  std::string model_path;
  std::string backend, cache, codec, proposer, verifier, scheduler;
  DeviceInfo device;
};

class Engine {
 public:
  // `registry` must already be scanned; it must outlive the engine.
  static Result<std::unique_ptr<Engine>> create(const Config& config,
                                                const PluginRegistry& registry);
  ~Engine();

  const LoadedModel& model() const { return *model_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  Transformer& transformer() { return *transformer_; }
  CheckedCacheStore& cache() { return *cache_; }
  // The configured KV codec (layers in cache.codec_skip_layers use identity).
  const Compressor& codec() const { return *codec_; }
  // The configured codec's storage per head_dim floats of K or V, in bits: a
  // vector that spans a token's KV heads (cache.codec_span = "token") counts
  // its share, so the figure compares across spans.
  double codec_bits_per_head_vector() const;
  Sampler& sampler() { return *sampler_; }
  const EngineDescription& description() const { return description_; }
  // Things worth telling the user that do not stop the engine (a cache longer
  // than the model's trained context); the CLI prints them to stderr.
  const std::vector<std::string>& warnings() const { return warnings_; }
  // Entries one sequence may hold (cache.max_tokens). A store that evicts
  // (cache().policy().evicts) lets sequences run longer than this.
  int64_t max_tokens() const { return max_tokens_; }
  // decode.max_tokens: tokens to generate unless the caller says otherwise.
  int64_t default_new_tokens() const { return default_new_tokens_; }

  Status begin_sequence(SequenceState& sequence);
  // One decode step: propose, verify, let the proposer observe. Appends the
  // emitted tokens to sequence.tokens and to `emitted`.
  Status step(SequenceState& sequence, std::vector<int32_t>& emitted);
  Status end_sequence(SequenceState& sequence);

  // Runs a request through the configured scheduler.
  Result<GenerationStats> generate(const GenerationRequest& request, const TokenSink& sink);

 private:
  Engine() = default;

  std::unique_ptr<LoadedModel> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Transformer> transformer_;
  std::unique_ptr<Compressor> codec_;           // the configured codec
  std::unique_ptr<Compressor> identity_codec_;  // for cache.codec_skip_layers
  std::vector<const Compressor*> layer_codecs_;
  std::unique_ptr<CheckedCacheStore> cache_;
  std::unique_ptr<Sampler> sampler_;
  std::unique_ptr<Proposer> proposer_;
  std::unique_ptr<Verifier> verifier_;
  std::unique_ptr<Scheduler> scheduler_;
  EngineDescription description_;
  std::vector<std::string> warnings_;
  int64_t max_tokens_ = 0;
  int64_t default_new_tokens_ = 0;
  SequenceId next_sequence_ = 0;
  Draft draft_;  // reused every step
};

}  // namespace tessera
