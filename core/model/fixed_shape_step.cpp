#include "core/model/fixed_shape_step.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

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
  const int64_t n = block;
  const auto take = [&](Tensor& out, std::initializer_list<int64_t> shape) -> Status {
    int64_t floats = 1;
    for (int64_t d : shape) floats *= d;
    ASSIGN_OR_RETURN(std::unique_ptr<Buffer> buffer,
                     backend_.allocate(static_cast<std::size_t>(floats) * sizeof(float),
                                       BufferUsage::kActivations));
    out = Tensor::in_buffer(*buffer, 0, DType::kF32, shape);
    device_ = out.data == nullptr;
    buffers_.push_back(std::move(buffer));
    return ok_status();
  };
  RETURN_IF_ERROR(take(x_, {n, c.dim}));
  RETURN_IF_ERROR(take(xb_, {n, c.dim}));
  RETURN_IF_ERROR(take(q_, {n, c.n_heads, c.head_dim}));
  RETURN_IF_ERROR(take(k_, {n, c.n_kv_heads, c.head_dim}));
  RETURN_IF_ERROR(take(v_, {n, c.n_kv_heads, c.head_dim}));
  RETURN_IF_ERROR(take(attn_, {n, c.n_heads, c.head_dim}));
  RETURN_IF_ERROR(take(gate_, {n, c.hidden_dim}));
  RETURN_IF_ERROR(take(up_, {n, c.hidden_dim}));
  RETURN_IF_ERROR(take(logits_, {n, c.vocab_size}));
  inputs_.reserve(block, slots);
  if (device_) {
    // The step's mask and cache update live in the device's memory too,
    // written once per run; the logits come back into a host copy.
    RETURN_IF_ERROR(take(mask_, {n, slots + n}));
    RETURN_IF_ERROR(take(keep_, {slots}));
    RETURN_IF_ERROR(take(insert_, {slots, n}));
    logits_host_.resize(static_cast<std::size_t>(n * c.vocab_size));
  } else {
    mask_ = f32(inputs_.mask.data(), {n, slots + n});
    keep_ = f32(inputs_.keep.data(), {slots});
    insert_ = f32(inputs_.insert.data(), {slots, n});
  }
  // Attention once over an all-hidden mask (zeros out, nothing read): the
  // backend sizes its scratch for these shapes now, so run() allocates nothing.
  std::fill(inputs_.mask.begin(), inputs_.mask.end(), -std::numeric_limits<float>::infinity());
  RETURN_IF_ERROR(upload_inputs());
  Tensor cache;
  RETURN_IF_ERROR(take(cache, {c.n_kv_heads, slots, c.head_dim}));
  const MaskedAttentionParams warm = attention_over(cache, cache);
  backend_.masked_attention(warm);
  // Likewise RoPE's table for this head size (zeros rotated at position 0).
  const std::vector<float> zeros(static_cast<std::size_t>(q_.elements()), 0.0f);
  RETURN_IF_ERROR(backend_.write(q_, std::as_bytes(std::span(zeros))));
  for (const LayerSpec& spec : specs_)
    backend_.rope(warm.q, inputs_.positions, layer_rope(c, model_.weights, spec));
  RETURN_IF_ERROR(backend_.synchronize());
  buffers_.pop_back();  // the warm-up cache
  return ok_status();
}

Status FixedShapeStep::upload_inputs() {
  if (!device_) return ok_status();
  RETURN_IF_ERROR(backend_.write(mask_, std::as_bytes(std::span(inputs_.mask))));
  RETURN_IF_ERROR(backend_.write(keep_, std::as_bytes(std::span(inputs_.keep))));
  return backend_.write(insert_, std::as_bytes(std::span(inputs_.insert)));
}

MaskedAttentionParams FixedShapeStep::attention_over(const Tensor& cache_k,
                                                     const Tensor& cache_v) const {
  MaskedAttentionParams params;
  params.q = q_;
  params.cache_k = cache_k;
  params.cache_v = cache_v;
  params.batch_k = k_;
  params.batch_v = v_;
  params.mask = mask_;
  params.out = attn_;
  return params;
}

Status FixedShapeStep::attend(CheckedCacheStore& cache, SequenceId seq, int layer) {
  ASSIGN_OR_RETURN(const DenseLayerKV dense, cache.dense_layer(seq, layer));
  const MaskedAttentionParams params = attention_over(dense.k, dense.v);
  backend_.masked_attention(params);
  backend_.cache_update(dense.k, keep_, insert_, params.batch_k);
  backend_.cache_update(dense.v, keep_, insert_, params.batch_v);
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

  RETURN_IF_ERROR(upload_inputs());

  const int64_t n = inputs_.block;
  const int64_t q_width = static_cast<int64_t>(c.n_heads) * c.head_dim;
  LayerActivations act;
  act.x = x_;
  act.xb = xb_;
  act.q = q_;
  act.k = k_;
  act.v = v_;
  act.gate = gate_;
  act.up = up_;
  backend_.embedding(w.token_embedding, inputs_.tokens, x_);
  if (c.embedding_scale != 1.0f) backend_.scale(x_, c.embedding_scale, x_);
  for (int l = 0; l < c.n_layers; ++l) {
    const auto layer = static_cast<std::size_t>(l);
    const LayerWeights& lw = w.layers[layer];
    attention_inputs(backend_, c, specs_[layer], layer_rope(c, w, specs_[layer]), lw, act,
                     inputs_.positions, true);
    RETURN_IF_ERROR(attend(cache, seq, l));
    attention_output(backend_, c, specs_[layer], lw, attn_.reshaped({n, q_width}), act);
    feed_forward_block(backend_, c, specs_[layer], lw, act);
  }
  backend_.rms_norm(x_, w.output_norm, c.rms_eps, xb_);
  backend_.matmul(xb_, w.output, logits_);
  const float* logits = logits_.f32();
  if (device_) {
    // The host waits here, once, for the step's logits.
    RETURN_IF_ERROR(backend_.synchronize());
    RETURN_IF_ERROR(backend_.read(logits_, std::as_writable_bytes(std::span(logits_host_))));
    logits = logits_host_.data();
  }
  const std::size_t real =
      static_cast<std::size_t>(inputs_.real_tokens) * static_cast<std::size_t>(c.vocab_size);
  for (std::size_t i = 0; i < real; ++i)
    if (!std::isfinite(logits[i]))
      return data_loss("the fixed-shape step of " + model_.path + " produced a non-finite logit");
  // The slots written in place become the sequence's entries.
  if (!inputs_.written_positions.empty())
    RETURN_IF_ERROR(cache.append_in_place(seq, inputs_.written_positions));
  return std::span<const float>(
      logits, static_cast<std::size_t>(n) * static_cast<std::size_t>(c.vocab_size));
}

}  // namespace tessera
