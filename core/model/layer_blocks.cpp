#include "core/model/layer_blocks.h"

#include <cmath>

namespace tessera {
namespace {

// The same memory as rows of `width` (host or device alike).
Tensor rows_of(const Tensor& t, int64_t rows, int64_t width) {
  return t.reshaped({rows, width});
}

}  // namespace

void attention_inputs(Backend& backend, const ModelConfig& c, const LayerSpec& spec,
                      const RopeSpec& rope, const LayerWeights& lw, const LayerActivations& a,
                      std::span<const int32_t> positions, bool rotate_keys) {
  const int64_t n = a.x.dim(0);
  const int64_t q_width = static_cast<int64_t>(c.n_heads) * c.head_dim;
  const int64_t kv_width = static_cast<int64_t>(c.n_kv_heads) * c.head_dim;
  const Tensor xb = rows_of(a.xb, n, c.dim);
  const Tensor q_flat = rows_of(a.q, n, q_width);
  const Tensor k_flat = rows_of(a.k, n, kv_width);
  const Tensor v_flat = rows_of(a.v, n, kv_width);
  backend.rms_norm(a.x, lw.attn_norm, c.rms_eps, xb);
  backend.matmul(xb, lw.wq, q_flat);
  backend.matmul(xb, lw.wk, k_flat);
  backend.matmul(xb, lw.wv, v_flat);
  if (spec.qkv_bias) {
    backend.add_bias(q_flat, lw.bq, q_flat);
    backend.add_bias(k_flat, lw.bk, k_flat);
    backend.add_bias(v_flat, lw.bv, v_flat);
  }
  if (spec.qk_norm) {
    // Every head normalised on its own: the rows of [n * heads, head_dim].
    const Tensor q_heads = rows_of(a.q, n * c.n_heads, c.head_dim);
    const Tensor k_heads = rows_of(a.k, n * c.n_kv_heads, c.head_dim);
    backend.rms_norm(q_heads, lw.q_norm, c.rms_eps, q_heads);
    backend.rms_norm(k_heads, lw.k_norm, c.rms_eps, k_heads);
  }
  backend.rope(a.q, positions, rope);
  if (rotate_keys) backend.rope(a.k, positions, rope);
  // Attention scales scores by 1/sqrt(head_dim); another scale goes into q.
  if (c.attention_scale > 0.0f) {
    const float factor = c.attention_scale * std::sqrt(static_cast<float>(c.head_dim));
    if (factor != 1.0f) backend.scale(q_flat, factor, q_flat);
  }
}

void attention_output(Backend& backend, const ModelConfig& c, const LayerSpec& spec,
                      const LayerWeights& lw, const Tensor& attention, const LayerActivations& a) {
  const Tensor xb = rows_of(a.xb, a.x.dim(0), c.dim);
  backend.matmul(attention, lw.wo, xb);
  if (spec.post_attention_norm) backend.rms_norm(xb, lw.post_attn_norm, c.rms_eps, xb);
  backend.add(a.x, xb, a.x);
}

void feed_forward_block(Backend& backend, const ModelConfig& c, const LayerSpec& spec,
                        const LayerWeights& lw, const LayerActivations& a) {
  const Tensor xb = rows_of(a.xb, a.x.dim(0), c.dim);
  backend.rms_norm(a.x, lw.ffn_norm, c.rms_eps, xb);
  backend.matmul(xb, lw.w1, a.gate);
  backend.matmul(xb, lw.w3, a.up);
  if (spec.activation == GateActivation::kGeluTanh) {
    backend.geglu(a.gate, a.up, a.gate);
  } else {
    backend.swiglu(a.gate, a.up, a.gate);
  }
  backend.matmul(a.gate, lw.w2, xb);
  if (spec.post_ffn_norm) backend.rms_norm(xb, lw.post_ffn_norm, c.rms_eps, xb);
  backend.add(a.x, xb, a.x);
}

RopeSpec layer_rope(const ModelConfig& c, const ModelWeights& w, const LayerSpec& spec) {
  if (w.rope_freqs.data == nullptr) return layer_rope(std::span<const float>(), spec);
  return layer_rope({w.rope_freqs.f32(), static_cast<std::size_t>(c.head_dim / 2)}, spec);
}

RopeSpec layer_rope(std::span<const float> freq_factors, const LayerSpec& spec) {
  RopeSpec rope = spec.rope;
  if (spec.rope_freq_factors && !freq_factors.empty()) rope.freq_factors = freq_factors;
  return rope;
}

}  // namespace tessera
