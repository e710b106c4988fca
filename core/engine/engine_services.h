// The engine's PluginServices (core/plugin/services.h): what proposers,
// verifiers and schedulers may reach. It owns the models they load (weights
// in the engine's backend) and the identity codec of the drafters' caches;
// the engine destroys it after the plugins that use them.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/backend/backend.h"
#include "core/cache/checked_cache_store.h"
#include "core/config/config.h"
#include "core/model/model.h"
#include "core/model/transformer.h"
#include "core/plugin/registry.h"
#include "core/plugin/services.h"
#include "core/sampling/sampler.h"

namespace tessera {

class EngineServices final : public PluginServices {
 public:
  // Keeps a copy of `config`; `registry` must outlive it.
  EngineServices(const Config& config, const PluginRegistry& registry, SamplingParams sampling,
                 int max_batch, int64_t max_tokens);
  ~EngineServices() override;

  // Set by the engine as its parts come up.
  void set_backend(Backend* backend) { backend_ = backend; }
  void set_target(const LoadedModel* model, Transformer* target) {
    target_model_ = model;
    target_ = target;
  }
  // The store plugin and options drafters' caches are made with.
  void set_cache_plugin(const PluginRecord* record, OptionValues options) {
    cache_record_ = record;
    cache_options_ = std::move(options);
  }
  // Checked options of plugins of a kind, by name (the [decode] plugins).
  void set_options(std::string kind, std::string name, OptionValues options) {
    options_[{std::move(kind), std::move(name)}] = std::move(options);
  }

  Result<Backend*> backend() override;
  Result<const LoadedModel*> target_model() override;
  Result<Transformer*> target() override;
  const SamplingParams& sampling() const override { return sampling_; }
  int max_batch() const override { return max_batch_; }
  int64_t max_tokens() const override { return max_tokens_; }
  Result<const LoadedModel*> load_model(std::string_view name, std::string_view option_key,
                                        std::string_view tokenizer) override;
  Result<std::unique_ptr<Transformer>> make_transformer(const LoadedModel& model) override;
  Result<std::unique_ptr<Transformer>> make_sized_transformer(const LoadedModel& model,
                                                              int max_batch) override;
  Result<std::unique_ptr<CheckedCacheStore>> make_cache(const LoadedModel& model) override;
  Result<std::unique_ptr<PluginObject>> create_plugin(std::string_view kind,
                                                      std::string_view name) override;
  Result<std::string> find_file(std::string_view name, std::string_view option_key,
                                std::string_view what) override;

 private:
  const Config config_;
  const PluginRegistry& registry_;
  SamplingParams sampling_;
  int max_batch_;
  int64_t max_tokens_;
  Backend* backend_ = nullptr;
  const LoadedModel* target_model_ = nullptr;
  Transformer* target_ = nullptr;
  const PluginRecord* cache_record_ = nullptr;
  OptionValues cache_options_;
  std::map<std::pair<std::string, std::string>, OptionValues> options_;
  std::vector<std::pair<std::string, std::unique_ptr<LoadedModel>>> models_;  // by resolved path
  std::unique_ptr<Compressor> identity_codec_;
  // One per cache made: a store may keep the span of codecs it was given.
  std::vector<std::unique_ptr<std::vector<const Compressor*>>> layer_codec_lists_;
};

}  // namespace tessera
