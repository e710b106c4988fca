// Engine::create, as the steps a reader can hold one at a time: choose the
// plugins, load the target model, make the codecs, construct the backend,
// make the cache, check the memory, start the backend, then the decoding
// plugins. The backend exists before the cache (docs/backends.md, "Order of
// creation") so a store can be handed it; it is initialised once the memory
// check has passed, before anything allocates K/V.
#include <algorithm>
#include <filesystem>
#include <string>

#include "core/engine/engine.h"
#include "core/engine/engine_plugins.h"
#include "core/engine/engine_services.h"
#include "core/engine/memory_budget.h"
#include "core/engine/model_cache.h"
#include "core/engine/weight_handover.h"
#include "core/io/file_lookup.h"
#include "core/io/mapped_file.h"

namespace tessera {

namespace {

// What decides a token's K/V besides the tokens before it: the model file
// (its path, size and time), and every setting of the model, cache (codec
// included) and backend sections; the prefix cache's root key.
std::string kv_identity(const Config& config, const std::string& model_path) {
  std::error_code error;
  const auto size = std::filesystem::file_size(model_path, error);
  const auto time = std::filesystem::last_write_time(model_path, error);
  std::string text = model_path + " " + std::to_string(error ? 0 : size) + " " +
                     std::to_string(time.time_since_epoch().count()) + ";";
  for (const ConfigEntry& entry : config.entries()) {
    const std::string_view section = entry.section;
    if (section.starts_with("model") || section.starts_with("cache") ||
        section.starts_with("backend"))
      text += entry.key() + "=" + entry.display() + ";";
  }
  return text;
}

}  // namespace

struct EngineBuilder {
  const Config& config;
  const PluginRegistry& registry;
  const EnginePlugins& plugins;
  Engine& engine;
  std::string model_path;
  CacheGeometry geometry;
  int max_batch = 1;

  Status load_target();
  Status make_codecs();
  Status construct_backend();
  Status make_cache();
  Status check_memory();
  Status start_backend();
  void read_decode_settings();
  Status make_decoding_plugins();
  Status check_decoding_plugins() const;
};

Status EngineBuilder::load_target() {
  ASSIGN_OR_RETURN(model_path, find_file(config.get_string("model.path"), FileKind::kModel,
                                         config.base_directory("model.path"), "model file"));
  std::optional<std::string> tokenizer_path;
  if (const std::string t = config.get_string("model.tokenizer"); !t.empty()) {
    ASSIGN_OR_RETURN(
        tokenizer_path,
        find_file(t, FileKind::kModel, config.base_directory("model.tokenizer"), "tokenizer file"));
  }
  ASSIGN_OR_RETURN(LoadedModel model, load_model(model_path, tokenizer_path));
  if (tokenizer_path && model.format != "llama2c") {
    ASSIGN_OR_RETURN(model.vocab,
                     load_vocabulary_for_rows(*tokenizer_path, model.config.vocab_size));
  }
  engine.model_ = std::make_unique<LoadedModel>(std::move(model));
  ASSIGN_OR_RETURN(Tokenizer tokenizer, make_tokenizer(engine.model_->vocab));
  engine.tokenizer_ = std::make_unique<Tokenizer>(std::move(tokenizer));

  const ModelConfig& mc = engine.model_->config;
  // A codec vector is one head's K (or V), or a token's across its KV heads.
  const bool token_span = config.get_string("cache.codec_span") == "token";
  geometry = {mc.n_layers, mc.n_kv_heads, mc.head_dim, token_span ? mc.n_kv_heads : 1};
  return ok_status();
}

// The configured codec, and identity for the layers kept uncompressed.
Status EngineBuilder::make_codecs() {
  const ModelConfig& mc = engine.model_->config;
  const int width = geometry.vector_width();
  const std::string& codec_name = plugins.codec->name();
  ASSIGN_OR_RETURN(engine.codec_,
                   create_plugin<Compressor>(registry, *plugins.codec, plugins.codec_options));
  RETURN_IF_ERROR(engine.codec_->supports(width).with_context(
      "compressor plugin '" + codec_name + "' with model " + model_path +
      (geometry.heads_per_vector > 1
           ? " and cache.codec_span = \"token\" (vectors of " + std::to_string(mc.n_kv_heads) +
                 " KV heads x head_dim " + std::to_string(mc.head_dim) + ")"
           : std::string())));
  if (const std::string note = engine.codec_->notes(width); !note.empty())
    engine.warnings_.push_back("compressor plugin '" + codec_name + "': " + note);
  const int64_t skip = config.get_int("cache.codec_skip_layers");
  if (skip > 0 && !engine.codec_->stores_raw_f32()) {
    auto identity = registry.find("compressor", "identity");
    if (!identity.ok())
      return identity.status().with_context("cache.codec_skip_layers needs the identity codec");
    ASSIGN_OR_RETURN(engine.identity_codec_,
                     create_plugin<Compressor>(registry, **identity, OptionValues{}));
  }
  for (int l = 0; l < mc.n_layers; ++l) {
    const bool kept = l < skip || l >= mc.n_layers - skip;
    engine.layer_codecs_.push_back(kept && engine.identity_codec_ ? engine.identity_codec_.get()
                                                                  : engine.codec_.get());
  }
  return ok_status();
}

Status EngineBuilder::construct_backend() {
  ASSIGN_OR_RETURN(engine.backend_,
                   create_plugin<Backend>(registry, *plugins.backend, plugins.backend_options));
  // A codec whose record layout the device does not read (docs/backends.md,
  // step 5) has its layers split at the codec point. Said once, here.
  const DeviceInfo device = engine.backend_->device_info();
  if (device.host_memory) return ok_status();
  int split = 0;
  for (const Compressor* codec : engine.layer_codecs_) {
    const bool on_device = backend_reads_records(*engine.backend_, *codec,
                                                 geometry.heads_per_vector, geometry.head_dim);
    split += codec->stores_raw_f32() || on_device ? 0 : 1;
  }
  if (split > 0)
    engine.warnings_.push_back(
        "compressor plugin '" + plugins.codec->name() + "' has no kernels for backend '" +
        plugins.backend->name() + "': its " + std::to_string(split) +
        " layers are split at the codec point (each step's K/V read back to the host, encoded "
        "and decoded there, written again), which costs a round trip per layer");
  return ok_status();
}

// The cache store: created and told its geometry (it allocates nothing yet).
Status EngineBuilder::make_cache() {
  ModelCacheRequest request;
  request.registry = &registry;
  request.store = plugins.cache;
  request.store_options = &plugins.cache_options;
  request.geometry = geometry;
  request.layer_codecs = engine.layer_codecs_;
  request.stored_keys = config.get_string("cache.codec_stage") == "pre_rope"
                            ? StoredKeys::kBeforeRope
                            : StoredKeys::kRotated;
  request.max_tokens = config.get_int("cache.max_tokens");
  request.slack = max_batch;
  request.swa_full = config.get_bool("cache.swa_full");
  request.kv_backend = engine.backend_.get();
  ASSIGN_OR_RETURN(engine.cache_, make_model_cache(engine.model_->config, request));
  engine.kv_identity_ = kv_identity(config, model_path);
  return ok_status();
}

// The memory the config asks for, checked before anything is allocated.
Status EngineBuilder::check_memory() {
  const ModelConfig& mc = engine.model_->config;
  const CachePolicy& policy = engine.cache_->policy();
  MemoryRequest memory;
  memory.max_tokens = config.get_int("cache.max_tokens");
  if (policy.max_entries > 0) memory.max_tokens = std::min(memory.max_tokens, policy.max_entries);
  memory.geometry = geometry;
  if (engine.cache_->group_count() > 1) {
    const SlidingLayers sliding = sliding_layers_of(mc, max_batch);
    memory.sliding_layers = static_cast<int>(sliding.layers.size());
    memory.sliding_entries = sliding.entries;
  }
  for (const Compressor* codec : engine.layer_codecs_)
    memory.bytes_per_vector += codec_bytes_per_vector(*codec, geometry.vector_width()) /
                               (geometry.heads_per_vector * mc.n_layers);
  memory.weight_bytes = engine.model_->file ? engine.model_->file->size() : 0;
  memory.cap_bytes = static_cast<uint64_t>(config.get_int("cache.max_memory_mib")) << 20;
  memory.codec_name = plugins.codec->name();
  if (const DeviceInfo device = engine.backend_->device_info(); !device.host_memory) {
    memory.weights_on_device = true;
    memory.kv_on_device = engine.cache_->kv_in_backend();
    memory.device_free_bytes = device.memory_free_bytes;
    memory.device_name = device.name;
  }
  RETURN_IF_ERROR(check_memory_budget(memory, available_memory()));
  engine.memory_ = memory;
  engine.max_tokens_ = config.get_int("cache.max_tokens");
  if (!policy.evicts && engine.max_tokens_ > mc.context_length)
    engine.warnings_.push_back("cache.max_tokens = " + std::to_string(engine.max_tokens_) +
                               " is beyond the model's context of " +
                               std::to_string(mc.context_length) +
                               " tokens; positions past it were never trained and quality "
                               "usually drops there");
  return ok_status();
}

// init, the weights handed over, and the forward's scratch.
Status EngineBuilder::start_backend() {
  const std::string context = "backend plugin '" + plugins.backend->name() + "'";
  BackendOptions options;
  options.threads = static_cast<int>(config.get_int("backend.threads"));
  options.max_context = engine.memory_.max_tokens + max_batch;
  options.weights = config.get_string("backend.weights");
  RETURN_IF_ERROR(engine.backend_->init(options).with_context(context));
  RETURN_IF_ERROR(hand_weights_to(*engine.backend_, *engine.model_).with_context(context));
  ASSIGN_OR_RETURN(engine.transformer_,
                   Transformer::create(*engine.model_, *engine.backend_, max_batch));
  return ok_status();
}

void EngineBuilder::read_decode_settings() {
  engine.default_new_tokens_ = config.get_int("decode.max_tokens");
  engine.branch_layout_ = config.get_string("decode.branch_layout") == "batched"
                              ? BranchLayout::kBatched
                              : BranchLayout::kBim;
  SamplingParams& sampling = engine.sampling_;
  sampling.temperature = static_cast<float>(config.get_float("sampling.temperature"));
  sampling.top_k = static_cast<int>(config.get_int("sampling.top_k"));
  sampling.top_p = static_cast<float>(config.get_float("sampling.top_p"));
  sampling.seed = static_cast<uint64_t>(config.get_int("sampling.seed"));
  sampling.presence_penalty = static_cast<float>(config.get_float("sampling.presence_penalty"));
  sampling.frequency_penalty = static_cast<float>(config.get_float("sampling.frequency_penalty"));
}

// A verifier that decodes without drafts takes proposer "none" only.
Status EngineBuilder::check_decoding_plugins() const {
  const std::string& verifier = plugins.verifier->name();
  if (engine.verifier_->takes_drafts()) return ok_status();
  if (plugins.proposer->name() != "none")
    return invalid_argument("decode.verifier = \"" + verifier +
                            "\" decodes without drafts, but decode.proposer = \"" +
                            plugins.proposer->name() +
                            "\"; set decode.proposer = \"none\" (a block-diffusion model "
                            "drafting for an autoregressive target is decode.proposer = \"dlm\" "
                            "under decode.verifier = \"ar\")");
  for (const PluginRecord* alternate : plugins.alternates)
    if (alternate->name() != "none")
      return invalid_argument("decode.verifier = \"" + verifier +
                              "\" decodes without drafts, so decode.alternate_proposers may "
                              "list \"none\" only, not \"" +
                              alternate->name() + "\"");
  return ok_status();
}

// The services the decoding plugins reach the core through, then the
// proposers, the verifier and the scheduler.
Status EngineBuilder::make_decoding_plugins() {
  engine.services_ = std::make_unique<EngineServices>(config, registry, engine.sampling_, max_batch,
                                                      engine.max_tokens_);
  EngineServices& services = *engine.services_;
  services.set_backend(engine.backend_.get());
  services.set_target(engine.model_.get(), engine.transformer_.get());
  services.set_cache_plugin(plugins.cache, plugins.cache_options);
  for (std::size_t i = 0; i < plugins.decode_plugins.size(); ++i)
    services.set_options(plugins.decode_plugins[i]->kind(), plugins.decode_plugins[i]->name(),
                         plugins.decode_options[i]);
  ASSIGN_OR_RETURN(engine.proposer_, create_plugin<Proposer>(registry, *plugins.proposer,
                                                             plugins.decode_options[0], &services));
  ASSIGN_OR_RETURN(engine.verifier_, create_plugin<Verifier>(registry, *plugins.verifier,
                                                             plugins.decode_options[1], &services));
  RETURN_IF_ERROR(check_decoding_plugins());
  for (std::size_t k = 0; k < plugins.alternates.size(); ++k) {
    ASSIGN_OR_RETURN(auto alternate,
                     create_plugin<Proposer>(registry, *plugins.alternates[k],
                                             plugins.decode_options[2 + k], &services));
    engine.alternates_.emplace_back(plugins.alternates[k]->name(), std::move(alternate));
  }
  const ModelConfig& mc = engine.model_->config;
  if (mc.block_diffusion() && engine.verifier_->takes_drafts())
    engine.warnings_.push_back(
        model_path + " is a block-diffusion model (blocks of " +
        std::to_string(mc.diffusion_block_size) + ", mask token " +
        std::to_string(mc.mask_token_id) + "); decode.verifier = \"" + plugins.verifier->name() +
        "\" decodes it one token at a time, causally, which it was not trained for: use "
        "decode.verifier = \"block_diffusion\" (configs/tok512-sdar-1m.toml)");
  ASSIGN_OR_RETURN(
      engine.scheduler_,
      create_plugin<Scheduler>(registry, *plugins.scheduler, plugins.scheduler_options, &services));
  return ok_status();
}

Result<std::unique_ptr<Engine>> Engine::create(const Config& config,
                                               const PluginRegistry& registry) {
  RETURN_IF_ERROR(config.validate_core());
  // Plugins first: a typo in a plugin name should not wait for a model load.
  ASSIGN_OR_RETURN(const EnginePlugins plugins, choose_engine_plugins(config, registry));
  std::unique_ptr<Engine> engine(new Engine());
  EngineBuilder build{config, registry, plugins, *engine, {}, {}, 1};
  build.max_batch = static_cast<int>(config.get_int("decode.max_batch"));
  RETURN_IF_ERROR(build.load_target());
  RETURN_IF_ERROR(build.make_codecs());
  RETURN_IF_ERROR(build.construct_backend());
  RETURN_IF_ERROR(build.make_cache());
  RETURN_IF_ERROR(build.check_memory());
  RETURN_IF_ERROR(build.start_backend());
  build.read_decode_settings();
  RETURN_IF_ERROR(build.make_decoding_plugins());
  engine->description_ = {build.model_path,          plugins.backend->name(),
                          plugins.cache->name(),     plugins.codec->name(),
                          plugins.proposer->name(),  plugins.verifier->name(),
                          plugins.scheduler->name(), engine->backend_->device_info()};
  return engine;
}

}  // namespace tessera
