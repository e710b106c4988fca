// What one transformer layer does beyond llama's: the description the one
// forward (core/model/transformer.h) reads, so qwen2, qwen3, llama 3 and
// gemma3 are data, not copies of the forward. The GGUF loader fills one per
// layer from the architecture's keys (core/model/architecture.h); a config
// without them is llama's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/backend/rope_spec.h"
#include "core/cache/kv_view.h"

namespace tessera {

struct ModelConfig;

// The feed-forward's gate: silu(gate) * up (llama, qwen) or gelu_tanh(gate) * up (gemma3).
enum class GateActivation : uint8_t { kSilu, kGeluTanh };

struct LayerSpec {
  // q/k/v biases added after the projections (attn_{q,k,v}.bias; qwen2).
  bool qkv_bias = false;
  // RMSNorm of every q and k head before RoPE (attn_q_norm / attn_k_norm; qwen3, gemma3).
  bool qk_norm = false;
  // RMSNorm of the attention output before the residual add (post_attention_norm; gemma3).
  bool post_attention_norm = false;
  // RMSNorm of the feed-forward output before the residual add (post_ffw_norm; gemma3).
  bool post_ffn_norm = false;
  GateActivation activation = GateActivation::kSilu;
  // RoPE of this layer, without the factors (theta, position scale, pairs).
  RopeSpec rope;
  // Divide each pair's frequency by rope_freqs.weight (Llama 3).
  bool rope_freq_factors = false;
  // Keys further than this many positions back are hidden (t - p >= window);
  // 0 for a global layer.
  int sliding_window = 0;
};

// llama's layer: no biases or extra norms, SiLU gate, adjacent-pair RoPE at `theta`.
LayerSpec llama_layer(float rope_theta);

// One spec per layer: the config's, or llama's when it has none (the llama2.c
// loader, hand-made configs).
std::vector<LayerSpec> layer_specs(const ModelConfig& config);

// What the layers do beyond llama's, for `tessera inspect`: "rope pairs
// adjacent, theta 10000" for llama; e.g. "q/k norm, post norms, gelu-tanh
// gate, rope halves, theta 1e+06 x 0.125; sliding window 512 on 15 of 18
// layers (theta 10000)" for gemma3.
std::string describe_layers(const ModelConfig& config);

// The keys a query may see in a layer: the store's rule on a global layer; on
// a sliding layer the narrower of the two windows, without the store's sinks
// (a sliding layer attends to recent keys only, so no sink is kept or moved).
WindowRule layer_window_rule(const WindowRule& store, int sliding_window);

}  // namespace tessera
