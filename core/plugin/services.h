// What the core offers a plugin beyond its options: the backend, models and
// their forward, cache stores, and other plugins. A plugin whose constructor
// takes (const OptionValues&, PluginServices&) receives it (core/plugin/sdk.h);
// plugins reach nothing around the core. The engine implements it
// (core/engine/engine_services.h) and keeps it alive as long as the plugins.
//
// When each part is ready: backend(), load_model(), make_transformer(),
// make_cache() and create_plugin() from the moment proposers, verifiers and
// schedulers are created (backends, codecs and stores are created before the
// backend exists and get FailedPrecondition there); target() and
// target_model() likewise.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/plugin/plugin_object.h"
#include "core/status/status.h"

namespace tessera {

class Backend;
class CheckedCacheStore;
class Transformer;
struct LoadedModel;
struct SamplingParams;

class PluginServices {
 public:
  virtual ~PluginServices() = default;

  // The engine's backend, initialised, the target's weights handed over.
  virtual Result<Backend*> backend() = 0;
  // The target model and its forward (the one the verifier runs).
  virtual Result<const LoadedModel*> target_model() = 0;
  virtual Result<Transformer*> target() = 0;
  // [sampling] as configured (every lane's sampler starts from it).
  virtual const SamplingParams& sampling() const = 0;
  // Tokens one forward may carry (decode.max_batch).
  virtual int max_batch() const = 0;
  // Entries one sequence may hold (cache.max_tokens).
  virtual int64_t max_tokens() const = 0;

  // A model named in a plugin option (`option_key`, e.g. "decode.draft_model",
  // names it in messages), found exactly like model.path (core/io/file_lookup.h:
  // the config's directory, or the current one for a --set on the command
  // line, then TESSERA_MODEL_PATH, models/ and ../shared/models/). Loaded once
  // (the same name twice gives the same model), its weights handed to the
  // backend, kept as long as the engine. A llama2.c checkpoint needs its
  // tokenizer file in `tokenizer`.
  virtual Result<const LoadedModel*> load_model(std::string_view name, std::string_view option_key,
                                                std::string_view tokenizer = {}) = 0;
  // A forward of its own for a loaded model (its own scratch for max_batch()
  // tokens; the weights are shared).
  virtual Result<std::unique_ptr<Transformer>> make_transformer(const LoadedModel& model) = 0;
  // A checked cache store of the model's geometry: the configured store
  // plugin with its [cache] options, and the identity codec (a drafter's own
  // cache). Sequences are the caller's to allocate.
  virtual Result<std::unique_ptr<CheckedCacheStore>> make_cache(const LoadedModel& model) = 0;
  // Another plugin by kind and name, with its options from its kind's config
  // section (defaults for what is not set). An option whose choices are
  // "@<kind>" names a plugin of that kind, and the engine checks that
  // plugin's options in the same section: how `tree` wraps any drafter.
  virtual Result<std::unique_ptr<PluginObject>> create_plugin(std::string_view kind,
                                                              std::string_view name) = 0;
  // make_transformer with scratch for `max_batch` tokens (1..max_batch())
  // instead of max_batch(): a forward that never carries more (a restorer
  // fed in chunks) takes only what it needs (ABI 3.2).
  virtual Result<std::unique_ptr<Transformer>> make_sized_transformer(const LoadedModel& model,
                                                                      int max_batch) = 0;
  // The path of a file named in a plugin option (`option_key` names it in
  // messages; `what` says what it is: "projection file"), found like
  // model.path, for the plugin to read (ABI 6.2).
  virtual Result<std::string> find_file(std::string_view name, std::string_view option_key,
                                        std::string_view what) = 0;
};

// create_plugin, checked to be an `Interface` (the kind's class).
template <typename Interface>
Result<std::unique_ptr<Interface>> create_plugin_as(PluginServices& services, std::string_view kind,
                                                    std::string_view name) {
  ASSIGN_OR_RETURN(std::unique_ptr<PluginObject> object, services.create_plugin(kind, name));
  auto* typed = dynamic_cast<Interface*>(object.get());
  if (typed == nullptr)
    return failed_precondition(std::string(kind) + " plugin '" + std::string(name) +
                               "' made an object that is not of its kind's interface");
  object.release();
  return std::unique_ptr<Interface>(typed);
}

}  // namespace tessera
