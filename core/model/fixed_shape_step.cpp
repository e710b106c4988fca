#include "core/model/fixed_shape_step.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/model/host_scratch.h"
#include "core/model/layer_blocks.h"

namespace tessera {
namespace {

Tensor f32(float* data, std::initializer_list<int64_t> shape) {
  return Tensor::contiguous(data, DType::kF32, shape);
}

}  // namespace

FixedShapeStep::FixedShapeStep(const LoadedModel& model, Backend& backend)
    : model_(model), backend_(backend), specs_(layer_specs(model.config)) {}

Result<std::unique_ptr<FixedShapeStep>> FixedShapeStep::create(const LoadedModel& model,
                                                               Backend& backend, int block,
                                                               int64_t slots) {
  if (block < 1 || slots < 1)
    return invalid_argument("a fixed-shape step needs a block and a cache of at least one token");
  // The step's mask is the batch's and the cache's; a sliding window and
  // the logit soft cap are not in it yet.
  for (const LayerSpec& spec : layer_specs(model.config))
    if (spec.sliding_window > 0)
      return unimplemented("the fixed-shape step has no sliding-window layers (" +
                           model.config.architecture + "); run the model without it");
  if (model.config.final_logit_softcap > 0.0f)
    return unimplemented("the fixed-shape step has no final logit soft cap (" +
                         model.config.architecture + "); run the model without it");
  std::unique_ptr<FixedShapeStep> step(new FixedShapeStep(model, backend));
  RETURN_IF_ERROR(step->allocate(block, slots));
  return step;
}

Status FixedShapeStep::allocate(int block, int64_t slots) {
  const ModelConfig& c = model_.config;
  const auto n = static_cast<std::size_t>(block);
  const auto take = [&](std::size_t floats, float*& out) -> Status {
    ASSIGN_OR_RETURN(std::unique_ptr<Buffer> buffer,
                     backend_.allocate(floats * sizeof(float), BufferUsage::kActivations));
    ASSIGN_OR_RETURN(out, host_floats(*buffer, backend_));
    buffers_.push_back(std::move(buffer));
    return ok_status();
  };
  const auto q_width = static_cast<std::size_t>(c.n_heads) * static_cast<std::size_t>(c.head_dim);
  const auto kv_width =
      static_cast<std::size_t>(c.n_kv_heads) * static_cast<std::size_t>(c.head_dim);
  RETURN_IF_ERROR(take(n * static_cast<std::size_t>(c.dim), x_));
  RETURN_IF_ERROR(take(n * static_cast<std::size_t>(c.dim), xb_));
  RETURN_IF_ERROR(take(n * q_width, q_));
  RETURN_IF_ERROR(take(n * kv_width, k_));
  RETURN_IF_ERROR(take(n * kv_width, v_));
  RETURN_IF_ERROR(take(n * q_width, attn_));
  RETURN_IF_ERROR(take(n * static_cast<std::size_t>(c.hidden_dim), gate_));
  RETURN_IF_ERROR(take(n * static_cast<std::size_t>(c.hidden_dim), up_));
  RETURN_IF_ERROR(take(n * static_cast<std::size_t>(c.vocab_size), logits_));
  inputs_.reserve(block, slots);
  // Attention once over an all-hidden mask (zeros out, nothing read): the
  // backend sizes its scratch for these shapes now, so run() allocates nothing.
  std::fill(inputs_.mask.begin(), inputs_.mask.end(), -std::numeric_limits<float>::infinity());
  ASSIGN_OR_RETURN(std::unique_ptr<Buffer> dummy_cache,
                   backend_.allocate(static_cast<std::size_t>(slots) * kv_width * sizeof(float)));
  const auto blk = static_cast<int64_t>(block);
  ASSIGN_OR_RETURN(float* dummy, host_floats(*dummy_cache, backend_));
  const Tensor cache = f32(dummy, {c.n_kv_heads, slots, c.head_dim});
  MaskedAttentionParams warm;
  warm.q = f32(q_, {blk, c.n_heads, c.head_dim});
  warm.cache_k = cache;
  warm.cache_v = cache;
  warm.batch_k = f32(k_, {blk, c.n_kv_heads, c.head_dim});
  warm.batch_v = f32(v_, {blk, c.n_kv_heads, c.head_dim});
  warm.mask = f32(inputs_.mask.data(), {blk, slots + blk});
  warm.out = f32(attn_, {blk, c.n_heads, c.head_dim});
  backend_.masked_attention(warm);
  // Likewise RoPE's table for this head size (zeros rotated at position 0).
  std::fill_n(q_, static_cast<std::size_t>(blk) * q_width, 0.0f);
  for (const LayerSpec& spec : specs_)
    backend_.rope(warm.q, inputs_.positions, layer_rope(c, model_.weights, spec));
  return ok_status();
}

Status FixedShapeStep::attend(CheckedCacheStore& cache, SequenceId seq, int layer) {
  const ModelConfig& c = model_.config;
  const int64_t n = inputs_.block;
  ASSIGN_OR_RETURN(const DenseLayerKV dense, cache.dense_layer(seq, layer));
  MaskedAttentionParams params;
  params.q = f32(q_, {n, c.n_heads, c.head_dim});
  params.cache_k = dense.k;
  params.cache_v = dense.v;
  params.batch_k = f32(k_, {n, c.n_kv_heads, c.head_dim});
  params.batch_v = f32(v_, {n, c.n_kv_heads, c.head_dim});
  params.mask = f32(inputs_.mask.data(), {n, inputs_.slots + n});
  params.out = f32(attn_, {n, c.n_heads, c.head_dim});
  backend_.masked_attention(params);
  const Tensor keep = f32(inputs_.keep.data(), {inputs_.slots});
  const Tensor insert = f32(inputs_.insert.data(), {inputs_.slots, n});
  backend_.cache_update(dense.k, keep, insert, params.batch_k);
  backend_.cache_update(dense.v, keep, insert, params.batch_v);
  return ok_status();
}

Result<std::span<const float>> FixedShapeStep::run(CheckedCacheStore& cache, const Batch& batch) {
  const ModelConfig& c = model_.config;
  const ModelWeights& w = model_.weights;
  if (cache.stored_keys() != StoredKeys::kRotated)
    return failed_precondition(
        "the fixed-shape step writes keys rotated; set cache.codec_stage = \"post_rope\"");
  if (batch.empty()) return invalid_argument("a fixed-shape step needs at least one token");
  const SequenceId seq = batch.seqs()[0];
  if (auto probe = cache.dense_layer(seq, 0); !probe.ok())
    return probe.status().with_context(
        "the fixed-shape step reads and writes the cache in place: it needs cache.plugin = "
        "\"static\" with cache.codec.plugin = \"identity\"");
  ASSIGN_OR_RETURN(const SequenceInfo info, cache.info(seq));
  if (info.capacity != inputs_.slots)
    return invalid_argument("the fixed-shape step was built for " + std::to_string(inputs_.slots) +
                            " cache slots, the sequence has " + std::to_string(info.capacity));
  RETURN_IF_ERROR(build_fixed_step_inputs(batch, info.stored,
                                          c.mask_token_id >= 0 ? c.mask_token_id : 0, inputs_));

  const int64_t n = inputs_.block;
  const Tensor x = f32(x_, {n, c.dim});
  const Tensor xb = f32(xb_, {n, c.dim});
  const int64_t q_width = static_cast<int64_t>(c.n_heads) * c.head_dim;
  LayerActivations act;
  act.x = x;
  act.xb = xb;
  act.q = f32(q_, {n, c.n_heads, c.head_dim});
  act.k = f32(k_, {n, c.n_kv_heads, c.head_dim});
  act.v = f32(v_, {n, c.n_kv_heads, c.head_dim});
  act.gate = f32(gate_, {n, c.hidden_dim});
  act.up = f32(up_, {n, c.hidden_dim});
  backend_.embedding(w.token_embedding, inputs_.tokens, x);
  if (c.embedding_scale != 1.0f) backend_.scale(x, c.embedding_scale, x);
  for (int l = 0; l < c.n_layers; ++l) {
    const auto layer = static_cast<std::size_t>(l);
    const LayerWeights& lw = w.layers[layer];
    attention_inputs(backend_, c, specs_[layer], layer_rope(c, w, specs_[layer]), lw, act,
                     inputs_.positions, true);
    RETURN_IF_ERROR(attend(cache, seq, l));
    attention_output(backend_, c, specs_[layer], lw, f32(attn_, {n, q_width}), act);
    feed_forward_block(backend_, c, specs_[layer], lw, act);
  }
  backend_.rms_norm(x, w.output_norm, c.rms_eps, xb);
  backend_.matmul(xb, w.output, f32(logits_, {n, c.vocab_size}));
  const std::size_t real =
      static_cast<std::size_t>(inputs_.real_tokens) * static_cast<std::size_t>(c.vocab_size);
  for (std::size_t i = 0; i < real; ++i)
    if (!std::isfinite(logits_[i]))
      return data_loss("the fixed-shape step of " + model_.path + " produced a non-finite logit");
  // The slots written in place become the sequence's entries.
  if (!inputs_.written_positions.empty())
    RETURN_IF_ERROR(cache.append_in_place(seq, inputs_.written_positions));
  return std::span<const float>(
      logits_, static_cast<std::size_t>(n) * static_cast<std::size_t>(c.vocab_size));
}

}  // namespace tessera
