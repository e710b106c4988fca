#include "core/engine/engine.h"

#include <algorithm>
#include <chrono>

#include "core/engine/engine_services.h"
#include "core/engine/memory_budget.h"
#include "core/engine/model_cache.h"
#include "core/engine/plugin_references.h"
#include "core/engine/request_run.h"
#include "core/engine/weight_handover.h"
#include "core/io/file_lookup.h"
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

Engine::Engine() = default;

Engine::~Engine() {
  // Plugin objects go before the models they point into (the services own
  // the ones plugins loaded); the cache before its codecs and its backend.
  scheduler_.reset();
  verifier_.reset();
  alternates_.clear();
  proposer_.reset();
  services_.reset();
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
  // [decode] holds the proposer's and the verifier's options, and those of
  // every plugin they name ("@kind" options: `tree`'s drafter); a key there
  // must belong to one of them.
  // decode.alternate_proposers: proposers a lane may draft with instead (a
  // tessera serve session picks one); their options are in [decode] too.
  std::vector<const PluginRecord*> alternate_recs;
  for (const std::string& name : config.get_list("decode.alternate_proposers")) {
    auto found = registry.find(kProposerRole.name, name);
    if (!found.ok()) return found.status().with_context("decode.alternate_proposers");
    if (*found == proposer_rec ||
        std::find(alternate_recs.begin(), alternate_recs.end(), *found) != alternate_recs.end())
      return invalid_argument(
          "decode.alternate_proposers: '" + name +
          "' is decode.proposer or listed twice; list each other proposer once");
    alternate_recs.push_back(*found);
  }
  std::vector<const PluginRecord*> decode_roots = {proposer_rec, verifier_rec};
  decode_roots.insert(decode_roots.end(), alternate_recs.begin(), alternate_recs.end());
  ASSIGN_OR_RETURN(std::vector<const PluginRecord*> decode_plugins,
                   plugins_named_in(config, registry, "decode", decode_roots));
  std::vector<std::string> decode_descriptions;
  for (const PluginRecord* rec : decode_plugins)
    decode_descriptions.push_back(rec->kind() + " plugin '" + rec->name() + "'");
  std::vector<PluginSchema> decode_schemas;
  for (std::size_t i = 0; i < decode_plugins.size(); ++i)
    decode_schemas.push_back({decode_descriptions[i], decode_plugins[i]->options()});
  ASSIGN_OR_RETURN(std::vector<OptionValues> decode_opts,
                   config.plugin_options("decode", decode_schemas));

  // The model.
  ASSIGN_OR_RETURN(std::string model_path,
                   find_file(config.get_string("model.path"), FileKind::kModel,
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
  engine->model_ = std::make_unique<LoadedModel>(std::move(model));
  ASSIGN_OR_RETURN(Tokenizer tokenizer, make_tokenizer(engine->model_->vocab));
  engine->tokenizer_ = std::make_unique<Tokenizer>(std::move(tokenizer));

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
  const auto max_batch = static_cast<int>(config.get_int("decode.max_batch"));
  ModelCacheRequest cache_request;
  cache_request.registry = &registry;
  cache_request.store = cache_rec;
  cache_request.store_options = &cache_opts;
  cache_request.geometry = geometry;
  cache_request.layer_codecs = engine->layer_codecs_;
  cache_request.stored_keys = stage == "pre_rope" ? StoredKeys::kBeforeRope : StoredKeys::kRotated;
  cache_request.max_tokens = config.get_int("cache.max_tokens");
  cache_request.slack = max_batch;
  cache_request.swa_full = config.get_bool("cache.swa_full");
  ASSIGN_OR_RETURN(engine->cache_, make_model_cache(mc, cache_request));
  const CachePolicy& policy = engine->cache_->policy();

  // The memory the config asks for, checked before anything is allocated.
  MemoryRequest memory;
  memory.max_tokens = config.get_int("cache.max_tokens");
  if (policy.max_entries > 0) memory.max_tokens = std::min(memory.max_tokens, policy.max_entries);
  memory.geometry = geometry;
  if (engine->cache_->group_count() > 1) {
    const SlidingLayers sliding = sliding_layers_of(mc, max_batch);
    memory.sliding_layers = static_cast<int>(sliding.layers.size());
    memory.sliding_entries = sliding.entries;
  }
  for (const Compressor* codec : engine->layer_codecs_)
    memory.bytes_per_vector +=
        codec_bytes_per_vector(*codec, width) / (geometry.heads_per_vector * mc.n_layers);
  memory.weight_bytes = engine->model_->file ? engine->model_->file->size() : 0;
  memory.cap_bytes = static_cast<uint64_t>(config.get_int("cache.max_memory_mib")) << 20;
  memory.codec_name = codec_rec->name();
  RETURN_IF_ERROR(check_memory_budget(memory, available_memory()));
  engine->memory_ = memory;
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
  backend_options.max_context = memory.max_tokens + max_batch;
  backend_options.weights = config.get_string("backend.weights");
  RETURN_IF_ERROR(engine->backend_->init(backend_options)
                      .with_context("backend plugin '" + backend_rec->name() + "'"));
  RETURN_IF_ERROR(hand_weights_to(*engine->backend_, *engine->model_)
                      .with_context("backend plugin '" + backend_rec->name() + "'"));
  ASSIGN_OR_RETURN(engine->transformer_,
                   Transformer::create(*engine->model_, *engine->backend_, max_batch));
  engine->default_new_tokens_ = config.get_int("decode.max_tokens");
  engine->branch_layout_ = config.get_string("decode.branch_layout") == "batched"
                               ? BranchLayout::kBatched
                               : BranchLayout::kBim;

  SamplingParams sampling;
  sampling.temperature = static_cast<float>(config.get_float("sampling.temperature"));
  sampling.top_k = static_cast<int>(config.get_int("sampling.top_k"));
  sampling.top_p = static_cast<float>(config.get_float("sampling.top_p"));
  sampling.seed = static_cast<uint64_t>(config.get_int("sampling.seed"));
  sampling.presence_penalty = static_cast<float>(config.get_float("sampling.presence_penalty"));
  sampling.frequency_penalty = static_cast<float>(config.get_float("sampling.frequency_penalty"));
  engine->sampling_ = sampling;

  // The services the decoding plugins reach the core through.
  engine->services_ =
      std::make_unique<EngineServices>(config, registry, sampling, max_batch, engine->max_tokens_);
  EngineServices& services = *engine->services_;
  services.set_backend(engine->backend_.get());
  services.set_target(engine->model_.get(), engine->transformer_.get());
  services.set_cache_plugin(cache_rec, cache_opts);
  for (std::size_t i = 0; i < decode_plugins.size(); ++i)
    services.set_options(decode_plugins[i]->kind(), decode_plugins[i]->name(), decode_opts[i]);
  ASSIGN_OR_RETURN(engine->proposer_,
                   create_plugin<Proposer>(registry, *proposer_rec, decode_opts[0], &services));
  ASSIGN_OR_RETURN(engine->verifier_,
                   create_plugin<Verifier>(registry, *verifier_rec, decode_opts[1], &services));
  if (!engine->verifier_->takes_drafts() && proposer_rec->name() != "none")
    return invalid_argument("decode.verifier = \"" + verifier_rec->name() +
                            "\" decodes without drafts, but decode.proposer = \"" +
                            proposer_rec->name() +
                            "\"; set decode.proposer = \"none\" (a block-diffusion model "
                            "drafting for an autoregressive target is decode.proposer = \"dlm\" "
                            "under decode.verifier = \"ar\")");
  for (std::size_t k = 0; k < alternate_recs.size(); ++k) {
    if (!engine->verifier_->takes_drafts() && alternate_recs[k]->name() != "none")
      return invalid_argument("decode.verifier = \"" + verifier_rec->name() +
                              "\" decodes without drafts, so decode.alternate_proposers may "
                              "list \"none\" only, not \"" +
                              alternate_recs[k]->name() + "\"");
    ASSIGN_OR_RETURN(auto alternate, create_plugin<Proposer>(registry, *alternate_recs[k],
                                                             decode_opts[2 + k], &services));
    engine->alternates_.emplace_back(alternate_recs[k]->name(), std::move(alternate));
  }
  if (mc.block_diffusion() && engine->verifier_->takes_drafts())
    engine->warnings_.push_back(
        model_path + " is a block-diffusion model (blocks of " +
        std::to_string(mc.diffusion_block_size) + ", mask token " +
        std::to_string(mc.mask_token_id) + "); decode.verifier = \"" + verifier_rec->name() +
        "\" decodes it one token at a time, causally, which it was not trained for: use "
        "decode.verifier = \"block_diffusion\" (configs/tok512-sdar-1m.toml)");
  ASSIGN_OR_RETURN(engine->scheduler_,
                   create_plugin<Scheduler>(registry, *scheduler_rec, scheduler_opts, &services));

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

PluginServices& Engine::services() {
  return *services_;
}

DecodeContext Engine::context() {
  return {*transformer_, *cache_, *services_, counters_};
}

std::vector<std::string> Engine::proposer_choices() const {
  std::vector<std::string> names = {description_.proposer};
  for (const auto& [name, proposer] : alternates_) names.push_back(name);
  return names;
}

Status Engine::choose_proposer(SequenceState& lane, std::string_view name) const {
  if (lane.proposer_begun)
    return failed_precondition("a lane's proposer is chosen before its first step");
  const std::vector<std::string> names = proposer_choices();
  for (std::size_t k = 0; k < names.size(); ++k)
    if (names[k] == name) {
      lane.proposer = static_cast<int>(k);
      return ok_status();
    }
  std::string listed;
  for (const std::string& n : names) listed += (listed.empty() ? "" : ", ") + n;
  return invalid_argument("proposer '" + std::string(name) + "' is not one this server runs (" +
                          listed + "; decode.proposer and decode.alternate_proposers)");
}

const std::string& Engine::proposer_name(const SequenceState& lane) const {
  return lane.proposer == 0 ? description_.proposer
                            : alternates_[static_cast<std::size_t>(lane.proposer - 1)].first;
}

Status Engine::begin_sequence(SequenceState& lane, std::optional<uint64_t> seed) {
  SamplingParams params = sampling_;
  if (seed) params.seed = *seed;
  lane.id = next_sequence_++;
  lane.branch = 0;
  lane.cached = 0;
  lane.capacity = max_tokens_;
  lane.sampler = Sampler(params);
  lane.proposer_state.reset();
  lane.proposer_begun = false;
  lane.proposer = 0;
  lane.owns_sequence = true;
  return cache_->allocate(lane.id, max_tokens_);
}

Status Engine::fork_sequence(const SequenceState& source, SequenceState& lane) {
  if (!source.owns_sequence)
    return invalid_argument("a branch kept in its prefix's sequence cannot be forked");
  const SequenceId id = next_sequence_++;
  RETURN_IF_ERROR(cache_->fork(source.id, id));
  lane.id = id;
  lane.branch = 0;
  lane.tokens = source.tokens;
  lane.cached = source.cached;
  lane.capacity = source.capacity;
  lane.sampler = source.sampler;
  lane.proposer_state.reset();
  lane.proposer_begun = false;
  lane.proposer = source.proposer;
  lane.owns_sequence = true;
  lane.last_draft = 0;
  return ok_status();
}

Status Engine::begin_branch(const SequenceState& prefix, BranchId branch, SequenceState& lane,
                            std::optional<uint64_t> seed) {
  if (branch < 1)
    return invalid_argument("branch ids start at 1 (0 is the shared prefix), got " +
                            std::to_string(branch));
  if (prefix.branch != 0)
    return invalid_argument("a branch continues a prefix lane, not another branch");
  SamplingParams params = sampling_;
  // Each branch draws its own numbers, the same in both layouts.
  params.seed =
      seed ? *seed
           : prefix.sampler.params().seed + 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(branch);
  lane.tokens.assign(prefix.tokens.begin(),
                     prefix.tokens.begin() + static_cast<std::ptrdiff_t>(prefix.cached));
  lane.cached = prefix.cached;
  lane.capacity = prefix.capacity;
  lane.sampler = Sampler(params);
  lane.proposer_state.reset();
  lane.proposer_begun = false;
  lane.proposer = prefix.proposer;
  if (branch_layout_ == BranchLayout::kBim) {
    if (!cache_->policy().keeps_branches && cache_->group_count() > 1)
      return failed_precondition(
          "decode.branch_layout = \"bim\" keeps every branch in one sequence, but this model's "
          "sliding-window layers are kept apart in a store without branch ids (" +
          cache_->describe_groups() +
          "); use decode.branch_layout = \"batched\", or cache.swa_full = true to keep them "
          "with the others");
    if (!cache_->policy().keeps_branches)
      return failed_precondition(
          "decode.branch_layout = \"bim\" keeps every branch in one sequence, but cache plugin '" +
          cache_->plugin_name() +
          "' keeps no branch ids; use a store that does (cache.plugin = \"static\" or "
          "\"paged\") or decode.branch_layout = \"batched\"");
    lane.id = prefix.id;
    lane.branch = branch;
    lane.owns_sequence = false;
    return ok_status();
  }
  lane.id = next_sequence_++;
  lane.branch = 0;
  lane.owns_sequence = true;
  return cache_->fork(prefix.id, lane.id);
}

Status Engine::prefill(SequenceState& lane) {
  DecodeContext ctx = context();
  return verifier_->prefill(ctx, lane).with_context("verifier");
}

Status Engine::end_sequence(SequenceState& lane) {
  if (lane.proposer_begun) {
    DecodeContext ctx = context();
    proposer_of(lane).end(ctx, lane);
    lane.proposer_begun = false;
  }
  lane.proposer_state.reset();
  if (!lane.owns_sequence) return ok_status();
  return cache_->release(lane.id);
}

Status Engine::check_memory_for(int64_t sequences) const {
  MemoryRequest memory = memory_;
  memory.sequences = sequences;
  // The weights are loaded already (what is available counts them as used).
  memory.weight_bytes = 0;
  return check_memory_budget(memory, available_memory());
}

Result<GenerationStats> Engine::generate(const GenerationRequest& request, const TokenSink& sink) {
  return run_request(*this, request, sink);
}

}  // namespace tessera
