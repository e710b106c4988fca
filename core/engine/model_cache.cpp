#include "core/engine/model_cache.h"

#include <algorithm>
#include <utility>

namespace tessera {

SlidingLayers sliding_layers_of(const ModelConfig& model, int64_t slack) {
  SlidingLayers out;
  int64_t widest = 0;
  for (std::size_t l = 0; l < model.layers.size(); ++l)
    if (model.layers[l].sliding_window > 0) {
      out.layers.push_back(static_cast<int>(l));
      widest = std::max<int64_t>(widest, model.layers[l].sliding_window);
    }
  if (!out.layers.empty()) out.entries = widest + slack;
  return out;
}

Result<std::unique_ptr<CheckedCacheStore>> make_model_cache(const ModelConfig& model,
                                                            const ModelCacheRequest& request) {
  const auto make_store = [&]() -> Result<std::unique_ptr<CacheStore>> {
    return create_plugin<CacheStore>(*request.registry, *request.store, *request.store_options);
  };
  ASSIGN_OR_RETURN(auto store, make_store());
  auto cache = std::make_unique<CheckedCacheStore>(std::move(store), request.store->name());
  RETURN_IF_ERROR(
      cache->init(request.geometry, request.layer_codecs, request.stored_keys, request.kv_backend));
  const SlidingLayers sliding = sliding_layers_of(model, request.slack);
  if (sliding.layers.empty() || request.swa_full || cache->policy().evicts ||
      request.max_tokens <= sliding.entries ||
      sliding.layers.size() == static_cast<std::size_t>(request.geometry.layers))
    return cache;

  // Again, with the sliding layers in a window store of their own. The
  // policy is known only after init(), so the first store is made anew.
  auto found = request.registry->find("cache", "sink_window");
  if (!found.ok())
    return found.status().with_context(
        "keeping the sliding-window layers of the model apart (cache.swa_full = false) needs the "
        "sink_window cache plugin; set cache.swa_full = true to keep every token in them");
  const PluginRecord* window_record = *found;
  OptionValues window_options;
  window_options.set("sink", int64_t{0});
  window_options.set("window", sliding.entries - request.slack);
  window_options.set("slack", request.slack);
  window_options.set("positions", std::string("keep"));
  ASSIGN_OR_RETURN(auto window_store,
                   create_plugin<CacheStore>(*request.registry, *window_record, window_options));
  ASSIGN_OR_RETURN(store, make_store());
  cache = std::make_unique<CheckedCacheStore>(std::move(store), request.store->name());
  RETURN_IF_ERROR(cache->give_layers_to(std::move(window_store), window_record->name(),
                                        sliding.layers, "sliding-window layers"));
  RETURN_IF_ERROR(
      cache->init(request.geometry, request.layer_codecs, request.stored_keys, request.kv_backend));
  return cache;
}

}  // namespace tessera
