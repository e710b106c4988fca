#include "core/engine/engine_services.h"

#include <filesystem>

#include "core/engine/model_cache.h"
#include "core/engine/weight_handover.h"
#include "core/io/file_lookup.h"
#include "core/io/mapped_file.h"
#include "core/plugin/plugin_kinds.h"

namespace tessera {
namespace {

Status not_yet(std::string_view what) {
  return failed_precondition(std::string(what) +
                             " is not ready yet: backends, codecs and cache stores are created "
                             "before it (only proposers, verifiers and schedulers may use it)");
}

}  // namespace

EngineServices::EngineServices(const Config& config, const PluginRegistry& registry,
                               SamplingParams sampling, int max_batch, int64_t max_tokens)
    : config_(config),
      registry_(registry),
      sampling_(sampling),
      max_batch_(max_batch),
      max_tokens_(max_tokens) {}

EngineServices::~EngineServices() = default;

Result<Backend*> EngineServices::backend() {
  if (backend_ == nullptr) return not_yet("the backend");
  return backend_;
}

Result<const LoadedModel*> EngineServices::target_model() {
  if (target_model_ == nullptr) return not_yet("the target model");
  return target_model_;
}

Result<Transformer*> EngineServices::target() {
  if (target_ == nullptr) return not_yet("the target's forward");
  return target_;
}

Result<const LoadedModel*> EngineServices::load_model(std::string_view name,
                                                      std::string_view option_key,
                                                      std::string_view tokenizer) {
  if (backend_ == nullptr) return not_yet("loading a model");
  const std::string key(option_key);
  if (name.empty())
    return invalid_argument(key + " is empty: name a model file (found like model.path)");
  auto located = find_file(name, key, "model file");
  if (!located.ok()) return located.status();
  const std::string path = *located;
  for (const auto& [loaded_path, model] : models_)
    if (loaded_path == path) return model.get();
  std::optional<std::string> tokenizer_path;
  if (!tokenizer.empty()) {
    auto found = find_file(tokenizer, key, "tokenizer file");
    if (!found.ok()) return found.status();
    tokenizer_path = *found;
  }
  auto loaded = tessera::load_model(path, tokenizer_path);
  if (!loaded.ok()) return loaded.status().with_context(key);
  auto model = std::make_unique<LoadedModel>(std::move(loaded).value());
  RETURN_IF_ERROR(hand_weights_to(*backend_, *model).with_context(key));
  models_.emplace_back(path, std::move(model));
  return models_.back().second.get();
}

Result<std::string> EngineServices::find_file(std::string_view name, std::string_view option_key,
                                              std::string_view what) {
  auto found = tessera::find_file(name, FileKind::kModel, config_.base_directory(option_key), what);
  if (!found.ok()) return found.status().with_context(std::string(option_key));
  return found;
}

Result<std::unique_ptr<Transformer>> EngineServices::make_transformer(const LoadedModel& model) {
  if (backend_ == nullptr) return not_yet("a forward");
  return Transformer::create(model, *backend_, max_batch_);
}

Result<std::unique_ptr<Transformer>> EngineServices::make_sized_transformer(
    const LoadedModel& model, int max_batch) {
  if (backend_ == nullptr) return not_yet("a forward");
  if (max_batch < 1 || max_batch > max_batch_)
    return invalid_argument(
        "a forward for " + std::to_string(max_batch) +
        " tokens: between 1 and decode.max_batch = " + std::to_string(max_batch_));
  return Transformer::create(model, *backend_, max_batch);
}

Result<std::unique_ptr<CheckedCacheStore>> EngineServices::make_cache(const LoadedModel& model) {
  if (cache_record_ == nullptr) return not_yet("a cache store");
  if (!identity_codec_) {
    ASSIGN_OR_RETURN(const PluginRecord* identity, registry_.find("compressor", "identity"));
    ASSIGN_OR_RETURN(identity_codec_,
                     tessera::create_plugin<Compressor>(registry_, *identity, OptionValues{}));
  }
  const ModelConfig& c = model.config;
  layer_codec_lists_.push_back(std::make_unique<std::vector<const Compressor*>>(
      static_cast<std::size_t>(c.n_layers), identity_codec_.get()));
  ModelCacheRequest request;
  request.registry = &registry_;
  request.store = cache_record_;
  request.store_options = &cache_options_;
  request.geometry = {c.n_layers, c.n_kv_heads, c.head_dim, 1};
  request.layer_codecs = *layer_codec_lists_.back();
  request.stored_keys = config_.get_string("cache.codec_stage") == "pre_rope"
                            ? StoredKeys::kBeforeRope
                            : StoredKeys::kRotated;
  request.max_tokens = max_tokens_;
  request.slack = max_batch_;
  request.swa_full = config_.get_bool("cache.swa_full");
  request.kv_backend = backend_;
  auto cache = make_model_cache(c, request);
  if (!cache.ok()) return cache.status().with_context("a cache for model " + model.path);
  return std::move(*cache);
}

Result<std::unique_ptr<PluginObject>> EngineServices::create_plugin(std::string_view kind,
                                                                    std::string_view name) {
  const PluginKind* known = find_plugin_kind(kind);
  if (known == nullptr) return invalid_argument("no plugin kind '" + std::string(kind) + "'");
  ASSIGN_OR_RETURN(const PluginRecord* record, registry_.find(kind, name));
  const auto options = options_.find({std::string(kind), std::string(name)});
  if (options != options_.end()) return registry_.create(*record, options->second, this);
  // Not named in the config: what its section says of its own options.
  const std::string description = std::string(kind) + " plugin '" + std::string(name) + "'";
  ASSIGN_OR_RETURN(OptionValues values,
                   config_.declared_options(known->section, {description, record->options()}));
  return registry_.create(*record, values, this);
}

}  // namespace tessera
