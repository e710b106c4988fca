#include "core/model/layer_spec.h"

#include <algorithm>
#include <cstdio>

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

namespace {

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

std::string describe_rope(const RopeSpec& rope) {
  std::string out = "theta " + number(rope.theta);
  if (rope.position_scale != 1.0f) out += " x " + number(rope.position_scale);
  return out;
}

}  // namespace

std::string describe_layers(const ModelConfig& config) {
  const std::vector<LayerSpec> specs = layer_specs(config);
  if (specs.empty()) return "none";
  // The global layers' traits (the first layer without a window, else the first).
  const LayerSpec* global = &specs[0];
  for (const LayerSpec& spec : specs)
    if (spec.sliding_window == 0) {
      global = &spec;
      break;
    }
  std::string out;
  const auto add = [&](bool present, const std::string& what) {
    if (present) out += what + ", ";
  };
  add(global->qkv_bias, "q/k/v bias");
  add(global->qk_norm, "q/k norm");
  add(global->post_attention_norm || global->post_ffn_norm, "post norms");
  add(global->activation == GateActivation::kGeluTanh, "gelu-tanh gate");
  add(config.embedding_scale != 1.0f, "embedding x " + number(config.embedding_scale));
  add(config.final_logit_softcap > 0.0f, "logit soft cap " + number(config.final_logit_softcap));
  out += std::string("rope pairs ") +
         (global->rope.pairs == RopePairs::kAdjacent ? "adjacent" : "halves") + ", " +
         describe_rope(global->rope);
  if (global->rope_freq_factors) out += ", rope_freqs factors";
  int sliding = 0;
  const LayerSpec* local = nullptr;
  for (const LayerSpec& spec : specs)
    if (spec.sliding_window > 0) ++sliding, local = &spec;
  if (local != nullptr)
    out += "; sliding window " + std::to_string(local->sliding_window) + " on " +
           std::to_string(sliding) + " of " + std::to_string(specs.size()) + " layers (" +
           describe_rope(local->rope) + ")";
  return out;
}

WindowRule layer_window_rule(const WindowRule& store, int sliding_window) {
  if (sliding_window <= 0) return store;
  WindowRule rule;
  rule.window = store.limits() ? std::min<int64_t>(store.window, sliding_window) : sliding_window;
  return rule;
}

}  // namespace tessera
