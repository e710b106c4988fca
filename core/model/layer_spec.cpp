#include "core/model/layer_spec.h"

#include <algorithm>

#include "core/model/model.h"

namespace tessera {

LayerSpec llama_layer(float rope_theta) {
  LayerSpec spec;
  spec.rope.theta = rope_theta;
  return spec;
}

std::vector<LayerSpec> layer_specs(const ModelConfig& config) {
  if (config.layers.size() == static_cast<std::size_t>(config.n_layers)) return config.layers;
  return std::vector<LayerSpec>(static_cast<std::size_t>(config.n_layers),
                                llama_layer(config.rope_theta));
}

WindowRule layer_window_rule(const WindowRule& store, int sliding_window) {
  if (sliding_window <= 0) return store;
  WindowRule rule;
  rule.window = store.limits() ? std::min<int64_t>(store.window, sliding_window) : sliding_window;
  return rule;
}

}  // namespace tessera
