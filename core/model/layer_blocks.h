// The pieces of one transformer layer as Backend ops, each following the
// layer's LayerSpec: shared by the transformer's forward and the fixed-shape
// step so the two run the same math.
#pragma once

#include <span>

#include "core/backend/backend.h"
#include "core/model/model.h"

namespace tessera {

// Scratch views of one layer's activations for n tokens, all f32 and contiguous.
struct LayerActivations {
  Tensor x;     // residual stream [n, dim], updated in place
  Tensor xb;    // [n, max(dim, heads * head_dim)] scratch
  Tensor q;     // [n, heads, head_dim]
  Tensor k;     // [n, kv_heads, head_dim]
  Tensor v;     // [n, kv_heads, head_dim]
  Tensor gate;  // [n, hidden]
  Tensor up;    // [n, hidden]
};

// q, k and v from norm(x): the projections, their biases, the per-head q/k
// norms, RoPE of q (and of k when rotate_keys) and the query scale.
void attention_inputs(Backend& backend, const ModelConfig& config, const LayerSpec& spec,
                      const RopeSpec& rope, const LayerWeights& layer, const LayerActivations& a,
                      std::span<const int32_t> positions, bool rotate_keys);

// x += post_norm(wo * attention), attention f32 [n, heads * head_dim].
void attention_output(Backend& backend, const ModelConfig& config, const LayerSpec& spec,
                      const LayerWeights& layer, const Tensor& attention,
                      const LayerActivations& a);

// x += post_norm(w2 * (act(w1 * norm(x)) * (w3 * norm(x)))).
void feed_forward_block(Backend& backend, const ModelConfig& config, const LayerSpec& spec,
                        const LayerWeights& layer, const LayerActivations& a);

// The layer's RoPE with the model's frequency factors attached (read where
// the weights are now: a backend may have moved them).
RopeSpec layer_rope(const ModelConfig& config, const ModelWeights& weights, const LayerSpec& spec);
// The same with the factors given as host floats (head_dim / 2 of them): a
// forward whose weights live on a device reads them back once.
RopeSpec layer_rope(std::span<const float> freq_factors, const LayerSpec& spec);

}  // namespace tessera
