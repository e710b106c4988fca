#include "core/engine/engine.h"

#include "core/engine/memory_budget.h"
#include "core/engine/model_locator.h"
#include "core/engine/weight_handover.h"
#include "core/io/mapped_file.h"
#include "core/plugin/plugin_kinds.h"

namespace tessera {
namespace {

// Each role's kind, its name key and options section (core/plugin/plugin_kinds.h).
using Role = PluginKind;
const Role& role(std::string_view kind) {
  return *find_plugin_kind(kind);
}
const Role& kBackendRole = role("backend");
const Role& kCacheRole = role("cache");
const Role& kCodecRole = role("compressor");
const Role& kProposerRole = role("proposer");
const Role& kVerifierRole = role("verifier");
const Role& kSchedulerRole = role("scheduler");

Result<const PluginRecord*> find_role(const Config& config, const PluginRegistry& registry,
                                      const Role& role) {
  const std::string name = config.get_string(role.name_key);
  auto found = registry.find(role.name, name);
  if (!found.ok()) return found.status().with_context(std::string(role.name_key));
  return found;
}

}  // namespace

Engine::~Engine() {
  // Plugin objects go before the model they point into; the cache before its
  // codecs and its backend.
  scheduler_.reset();
  verifier_.reset();
  proposer_.reset();
  cache_.reset();
  codec_.reset();
  identity_codec_.reset();
  transformer_.reset();
  backend_.reset();
}

Result<std::unique_ptr<Engine>> Engine::create(const Config& config,
                                               const PluginRegistry& registry) {
  RETURN_IF_ERROR(config.validate_core());
  std::unique_ptr<Engine> engine(new Engine());

  // Plugins first: a typo in a plugin name should not wait for a model load.
  ASSIGN_OR_RETURN(const PluginRecord* backend_rec, find_role(config, registry, kBackendRole));
  ASSIGN_OR_RETURN(const PluginRecord* cache_rec, find_role(config, registry, kCacheRole));
  ASSIGN_OR_RETURN(const PluginRecord* codec_rec, find_role(config, registry, kCodecRole));
  ASSIGN_OR_RETURN(const PluginRecord* proposer_rec, find_role(config, registry, kProposerRole));
  ASSIGN_OR_RETURN(const PluginRecord* verifier_rec, find_role(config, registry, kVerifierRole));
  ASSIGN_OR_RETURN(const PluginRecord* scheduler_rec, find_role(config, registry, kSchedulerRole));

  const auto options_for = [&](const Role& role, const PluginRecord* rec) {
    return config.plugin_options(role.section, rec->options(),
                                 std::string(role.name) + " plugin '" + rec->name() + "'");
  };
  ASSIGN_OR_RETURN(OptionValues backend_opts, options_for(kBackendRole, backend_rec));
  ASSIGN_OR_RETURN(OptionValues cache_opts, options_for(kCacheRole, cache_rec));
  ASSIGN_OR_RETURN(OptionValues codec_opts, options_for(kCodecRole, codec_rec));
  ASSIGN_OR_RETURN(OptionValues scheduler_opts, options_for(kSchedulerRole, scheduler_rec));
  // Proposer and verifier share [decode]: a key there must belong to one of them.
  const std::string proposer_desc = "proposer plugin '" + proposer_rec->name() + "'";
  const std::string verifier_desc = "verifier plugin '" + verifier_rec->name() + "'";
  const PluginSchema decode_schemas[] = {{proposer_desc, proposer_rec->options()},
                                         {verifier_desc, verifier_rec->options()}};
  ASSIGN_OR_RETURN(std::vector<OptionValues> decode_opts,
                   config.plugin_options("decode", decode_schemas));
  OptionValues& proposer_opts = decode_opts[0];
  OptionValues& verifier_opts = decode_opts[1];

  // The model.
  ASSIGN_OR_RETURN(std::string model_path,
                   locate_model_file(config.get_string("model.path"), config.directory()));
  std::optional<std::string> tokenizer_path;
  if (const std::string t = config.get_string("model.tokenizer"); !t.empty()) {
    ASSIGN_OR_RETURN(tokenizer_path, locate_model_file(t, config.directory()));
  }
  ASSIGN_OR_RETURN(LoadedModel model, load_model(model_path, tokenizer_path));
  engine->model_ = std::make_unique<LoadedModel>(std::move(model));
  engine->tokenizer_ = std::make_unique<Tokenizer>(engine->model_->vocab);

  // Codecs: the configured one, and identity for the layers kept uncompressed.
  const ModelConfig& mc = engine->model_->config;
  // A codec vector is one head's K (or V), or a token's across its KV heads.
  const bool token_span = config.get_string("cache.codec_span") == "token";
  const CacheGeometry geometry{mc.n_layers, mc.n_kv_heads, mc.head_dim,
                               token_span ? mc.n_kv_heads : 1};
  const int width = geometry.vector_width();
  ASSIGN_OR_RETURN(engine->codec_, create_plugin<Compressor>(registry, *codec_rec, codec_opts));
  RETURN_IF_ERROR(engine->codec_->supports(width).with_context(
      "compressor plugin '" + codec_rec->name() + "' with model " + model_path +
      (token_span
           ? " and cache.codec_span = \"token\" (vectors of " + std::to_string(mc.n_kv_heads) +
                 " KV heads x head_dim " + std::to_string(mc.head_dim) + ")"
           : std::string())));
  if (const std::string note = engine->codec_->notes(width); !note.empty())
    engine->warnings_.push_back("compressor plugin '" + codec_rec->name() + "': " + note);
  const int64_t skip = config.get_int("cache.codec_skip_layers");
  if (skip > 0 && !engine->codec_->stores_raw_f32()) {
    auto identity = registry.find("compressor", "identity");
    if (!identity.ok())
      return identity.status().with_context("cache.codec_skip_layers needs the identity codec");
    ASSIGN_OR_RETURN(engine->identity_codec_,
                     create_plugin<Compressor>(registry, **identity, OptionValues{}));
  }
  for (int l = 0; l < mc.n_layers; ++l) {
    const bool kept = l < skip || l >= mc.n_layers - skip;
    engine->layer_codecs_.push_back(kept && engine->identity_codec_ ? engine->identity_codec_.get()
                                                                    : engine->codec_.get());
  }

  // The cache store: created and told its geometry (it allocates nothing yet).
  const std::string stage = config.get_string("cache.codec_stage");
  ASSIGN_OR_RETURN(auto store, create_plugin<CacheStore>(registry, *cache_rec, cache_opts));
  engine->cache_ = std::make_unique<CheckedCacheStore>(std::move(store), cache_rec->name());
  RETURN_IF_ERROR(
      engine->cache_->init(geometry, engine->layer_codecs_,
                           stage == "pre_rope" ? StoredKeys::kBeforeRope : StoredKeys::kRotated));
  const CachePolicy& policy = engine->cache_->policy();

  // The memory the config asks for, checked before anything is allocated.
  MemoryRequest memory;
  memory.max_tokens = config.get_int("cache.max_tokens");
  if (policy.max_entries > 0) memory.max_tokens = std::min(memory.max_tokens, policy.max_entries);
  memory.geometry = geometry;
  for (const Compressor* codec : engine->layer_codecs_)
    memory.bytes_per_vector +=
        codec_bytes_per_vector(*codec, width) / (geometry.heads_per_vector * mc.n_layers);
  memory.weight_bytes = engine->model_->file ? engine->model_->file->size() : 0;
  memory.cap_bytes = static_cast<uint64_t>(config.get_int("cache.max_memory_mib")) << 20;
  memory.codec_name = codec_rec->name();
  RETURN_IF_ERROR(check_memory_budget(memory, available_memory()));
  engine->max_tokens_ = config.get_int("cache.max_tokens");
  if (!policy.evicts && engine->max_tokens_ > mc.context_length)
    engine->warnings_.push_back("cache.max_tokens = " + std::to_string(engine->max_tokens_) +
                                " is beyond the model's context of " +
                                std::to_string(mc.context_length) +
                                " tokens; positions past it were never trained and quality "
                                "usually drops there");

  // Backend and the forward's scratch.
  ASSIGN_OR_RETURN(engine->backend_, create_plugin<Backend>(registry, *backend_rec, backend_opts));
  BackendOptions backend_options;
  backend_options.threads = static_cast<int>(config.get_int("backend.threads"));
  backend_options.max_context = memory.max_tokens + Transformer::kDefaultMaxBatch;
  backend_options.weights = config.get_string("backend.weights");
  RETURN_IF_ERROR(engine->backend_->init(backend_options)
                      .with_context("backend plugin '" + backend_rec->name() + "'"));
  RETURN_IF_ERROR(hand_weights_to(*engine->backend_, *engine->model_)
                      .with_context("backend plugin '" + backend_rec->name() + "'"));
  ASSIGN_OR_RETURN(engine->transformer_, Transformer::create(*engine->model_, *engine->backend_));
  engine->default_new_tokens_ = config.get_int("decode.max_tokens");

  SamplingParams sampling;
  sampling.temperature = static_cast<float>(config.get_float("sampling.temperature"));
  sampling.top_k = static_cast<int>(config.get_int("sampling.top_k"));
  sampling.top_p = static_cast<float>(config.get_float("sampling.top_p"));
  sampling.seed = static_cast<uint64_t>(config.get_int("sampling.seed"));
  engine->sampler_ = std::make_unique<Sampler>(sampling);

  ASSIGN_OR_RETURN(engine->proposer_,
                   create_plugin<Proposer>(registry, *proposer_rec, proposer_opts));
  ASSIGN_OR_RETURN(engine->verifier_,
                   create_plugin<Verifier>(registry, *verifier_rec, verifier_opts));
  ASSIGN_OR_RETURN(engine->scheduler_,
                   create_plugin<Scheduler>(registry, *scheduler_rec, scheduler_opts));

  engine->description_ = {model_path,
                          backend_rec->name(),
                          cache_rec->name(),
                          codec_rec->name(),
                          proposer_rec->name(),
                          verifier_rec->name(),
                          scheduler_rec->name(),
                          engine->backend_->device_info()};
  return engine;
}

double Engine::codec_bits_per_head_vector() const {
  const CacheGeometry& geometry = cache_->geometry();
  return codec_->bits_per_vector(geometry.vector_width()) / geometry.heads_per_vector;
}

Status Engine::begin_sequence(SequenceState& sequence) {
  sequence.id = next_sequence_++;
  sequence.cached = 0;
  sequence.capacity = max_tokens_;
  return cache_->allocate(sequence.id, max_tokens_);
}

Status Engine::step(SequenceState& sequence, std::vector<int32_t>& emitted) {
  DecodeContext context{*transformer_, *cache_, *sampler_, sequence};
  draft_.clear();
  RETURN_IF_ERROR(proposer_->propose(context, draft_).with_context("proposer"));
  const std::size_t before = emitted.size();
  RETURN_IF_ERROR(verifier_->verify(context, draft_, emitted).with_context("verifier"));
  if (emitted.size() == before) return internal_error("the verifier emitted no token");
  const std::span<const int32_t> fresh(emitted.data() + before, emitted.size() - before);
  sequence.tokens.insert(sequence.tokens.end(), fresh.begin(), fresh.end());
  proposer_->observe(fresh);
  return ok_status();
}

Status Engine::end_sequence(SequenceState& sequence) {
  return cache_->release(sequence.id);
}

Result<GenerationStats> Engine::generate(const GenerationRequest& request, const TokenSink& sink) {
  return scheduler_->run(*this, request, sink);
}

}  // namespace tessera
