#include "core/model/transformer.h"

#include <cmath>
#include <string>

#include "core/cache/checked_cache_store.h"
#include "core/model/weight_check.h"
#include "core/util/strings.h"

namespace tessera {
namespace {

Tensor f32_view(float* data, std::initializer_list<int64_t> shape) {
  return Tensor::contiguous(data, DType::kF32, shape);
}

}  // namespace

Transformer::Transformer(const LoadedModel& model, Backend& backend, int max_batch)
    : model_(model), backend_(backend), max_batch_(max_batch) {}

namespace {

// What the forward needs of the weights, whichever loader produced them: norm
// weights in f32 (Backend::rms_norm reads f32), the embedding and every matmul
// weight in a dtype the backend multiplies with.
Status check_weight_dtypes(const LoadedModel& model, const Backend& backend) {
  const ModelWeights& w = model.weights;
  const auto norm = [&](const Tensor& t, const std::string& name) {
    if (t.dtype == DType::kF32) return ok_status();
    return unimplemented("model " + model.path + ": norm weight " + name + " is " +
                         std::string(dtype_name(t.dtype)) +
                         "; the forward needs f32 norm weights (converters keep them f32)");
  };
  const auto matrix = [&](const Tensor& t, const std::string& name) {
    if (backend.supports_weight_dtype(t.dtype)) return ok_status();
    return unimplemented("model " + model.path + ": the backend has no " +
                         std::string(dtype_name(t.dtype)) + " weights (" + name +
                         "); convert the model to f32 or pick another backend");
  };
  RETURN_IF_ERROR(matrix(w.token_embedding, "token embedding"));
  RETURN_IF_ERROR(matrix(w.output, "output"));
  RETURN_IF_ERROR(norm(w.output_norm, "output norm"));
  for (std::size_t i = 0; i < w.layers.size(); ++i) {
    const LayerWeights& l = w.layers[i];
    const std::string layer = "layer " + std::to_string(i) + " ";
    RETURN_IF_ERROR(norm(l.attn_norm, layer + "attention norm"));
    RETURN_IF_ERROR(norm(l.ffn_norm, layer + "ffn norm"));
    for (const Tensor* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w1, &l.w2, &l.w3})
      RETURN_IF_ERROR(matrix(*m, layer + "projection"));
  }
  return ok_status();
}

}  // namespace

Result<std::unique_ptr<Transformer>> Transformer::create(const LoadedModel& model, Backend& backend,
                                                         int max_batch) {
  const ModelConfig& c = model.config;
  if (max_batch < 1) return invalid_argument("max_batch must be at least 1");
  if (c.n_heads <= 0 || c.n_kv_heads <= 0 || c.n_heads % c.n_kv_heads != 0)
    return invalid_argument("model " + model.path + ": heads " + std::to_string(c.n_heads) +
                            " is not a multiple of kv heads " + std::to_string(c.n_kv_heads));
  // RoPE rotates pairs within a head; an odd head would spill into the next.
  if (c.head_dim <= 0 || c.head_dim % 2 != 0)
    return invalid_argument("model " + model.path + ": head size " + std::to_string(c.head_dim) +
                            " is not a positive even number (RoPE rotates pairs)");
  RETURN_IF_ERROR(check_weight_dtypes(model, backend));
  std::unique_ptr<Transformer> t(new Transformer(model, backend, max_batch));
  RETURN_IF_ERROR(t->allocate_scratch());
  return t;
}

CacheGeometry Transformer::cache_geometry() const {
  const ModelConfig& c = model_.config;
  return {c.n_layers, c.n_kv_heads, c.head_dim};
}

Status Transformer::allocate_scratch() {
  const ModelConfig& c = model_.config;
  const std::size_t n = static_cast<std::size_t>(max_batch_);
  const std::size_t kv = static_cast<std::size_t>(c.n_kv_heads * c.head_dim);
  const std::size_t layers = static_cast<std::size_t>(c.n_layers);
  const auto take = [&](std::size_t floats, float*& out) -> Status {
    ASSIGN_OR_RETURN(auto buffer, backend_.allocate(floats * sizeof(float)));
    out = static_cast<float*>(buffer->data());
    buffers_.push_back(std::move(buffer));
    return ok_status();
  };
  const std::size_t q_width = static_cast<std::size_t>(c.n_heads * c.head_dim);
  RETURN_IF_ERROR(take(n * static_cast<std::size_t>(c.dim), x_));
  RETURN_IF_ERROR(take(n * std::max<std::size_t>(static_cast<std::size_t>(c.dim), q_width), xb_));
  RETURN_IF_ERROR(take(n * q_width, q_));
  RETURN_IF_ERROR(take(n * q_width, attn_));
  RETURN_IF_ERROR(take(layers * n * kv, k_new_));
  RETURN_IF_ERROR(take(layers * n * kv, v_new_));
  RETURN_IF_ERROR(take(n * static_cast<std::size_t>(c.hidden_dim), gate_));
  RETURN_IF_ERROR(take(n * static_cast<std::size_t>(c.hidden_dim), up_));
  RETURN_IF_ERROR(take(n * static_cast<std::size_t>(c.vocab_size), logits_));
  return ok_status();
}

Status Transformer::non_finite_logit(float value, int32_t position) const {
  std::string cause = describe_non_finite(find_non_finite_weights(model_));
  if (cause.empty())
    cause =
        "every weight is finite, so an activation overflowed f32 (weights of extreme "
        "magnitude?)";
  return data_loss("model " + model_.path + " computed a non-finite logit (" +
                   shortest_decimal(value) + ") for the token at position " +
                   std::to_string(position) + ": " + cause +
                   "; the model file is damaged or was converted wrongly");
}

Result<std::span<const float>> Transformer::forward(CheckedCacheStore& cache, SequenceId seq,
                                                    std::span<const int32_t> tokens,
                                                    std::span<const int32_t> positions,
                                                    LogitsWanted wanted) {
  const std::size_t n = tokens.size();
  if (n == 0) return invalid_argument("forward needs at least one token");
  if (positions.size() != n)
    return invalid_argument("forward: " + std::to_string(n) + " tokens but " +
                            std::to_string(positions.size()) + " positions");
  const int vocab = model_.config.vocab_size;
  for (int32_t token : tokens) {
    if (token < 0 || token >= vocab)
      return invalid_argument("token id " + std::to_string(token) +
                              " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
  }
  if (wanted == LogitsWanted::kAll && n > static_cast<std::size_t>(max_batch_))
    return invalid_argument("all logits of " + std::to_string(n) +
                            " tokens requested, but at most " + std::to_string(max_batch_) +
                            " fit; feed fewer tokens per call");
  ASSIGN_OR_RETURN(const int64_t capacity, cache.capacity(seq));
  ASSIGN_OR_RETURN(const int64_t cached, cache.token_count(seq));
  const int64_t room = capacity - cached;
  if (static_cast<int64_t>(n) > room)
    return resource_exhausted("sequence " + std::to_string(seq) + " has room for " +
                              std::to_string(room) + " more tokens in the cache but " +
                              std::to_string(n) + " were fed; raise cache.max_tokens");

  const std::size_t batch = static_cast<std::size_t>(max_batch_);
  for (std::size_t start = 0; start < n; start += batch) {
    const std::size_t count = std::min(batch, n - start);
    const bool last_chunk = start + count == n;
    // Logit rows are computed only where they are returned.
    const int first_logit_row = wanted == LogitsWanted::kAll ? 0
                                : last_chunk                 ? static_cast<int>(count) - 1
                                                             : static_cast<int>(count);
    const Status status = forward_chunk(cache, seq, tokens.subspan(start, count),
                                        positions.subspan(start, count), first_logit_row);
    if (!status.ok()) {
      // All or nothing: earlier chunks of this call leave the cache again.
      if (start > 0) RETURN_IF_ERROR(cache.truncate(seq, cached));
      return status;
    }
  }
  const std::size_t rows = wanted == LogitsWanted::kAll ? n : 1;
  return std::span<const float>(logits_, rows * static_cast<std::size_t>(vocab));
}

Status Transformer::forward_chunk(CheckedCacheStore& cache, SequenceId seq,
                                  std::span<const int32_t> tokens,
                                  std::span<const int32_t> positions, int first_logit_row) {
  const ModelConfig& c = model_.config;
  const ModelWeights& w = model_.weights;
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int64_t kv_width = static_cast<int64_t>(c.n_kv_heads) * c.head_dim;
  const int64_t layer_stride = n * kv_width;  // k_new_/v_new_ are packed for this n

  const Tensor x = f32_view(x_, {n, c.dim});
  const Tensor xb = f32_view(xb_, {n, c.dim});
  const Tensor q = f32_view(q_, {n, c.n_heads, c.head_dim});
  const Tensor q_flat = f32_view(q_, {n, static_cast<int64_t>(c.n_heads) * c.head_dim});
  const Tensor attn = f32_view(attn_, {n, c.n_heads, c.head_dim});
  const Tensor attn_flat = f32_view(attn_, {n, static_cast<int64_t>(c.n_heads) * c.head_dim});
  const Tensor gate = f32_view(gate_, {n, c.hidden_dim});
  const Tensor up = f32_view(up_, {n, c.hidden_dim});

  backend_.embedding(w.token_embedding, tokens, x);
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& lw = w.layers[static_cast<std::size_t>(l)];
    float* k_layer = k_new_ + l * layer_stride;
    float* v_layer = v_new_ + l * layer_stride;
    const Tensor k = f32_view(k_layer, {n, c.n_kv_heads, c.head_dim});
    const Tensor v = f32_view(v_layer, {n, c.n_kv_heads, c.head_dim});

    // Attention block: x += wo * attention(rope(wq * norm(x)), rope(wk * norm(x)), wv * norm(x)).
    backend_.rms_norm(x, lw.attn_norm, c.rms_eps, xb);
    backend_.matmul(xb, lw.wq, q_flat);
    backend_.matmul(xb, lw.wk, f32_view(k_layer, {n, kv_width}));
    backend_.matmul(xb, lw.wv, f32_view(v_layer, {n, kv_width}));
    backend_.rope(q, positions, c.rope_theta);
    backend_.rope(k, positions, c.rope_theta);
    ASSIGN_OR_RETURN(const KVView cached, cache.view(seq, l));
    backend_.attention(q, cached.k, cached.v, k, v, BatchVisibility::kCausal, attn);
    backend_.matmul(attn_flat, lw.wo, xb);
    backend_.add(x, xb, x);

    // Feed-forward block: x += w2 * (silu(w1 * norm(x)) * (w3 * norm(x))).
    backend_.rms_norm(x, lw.ffn_norm, c.rms_eps, xb);
    backend_.matmul(xb, lw.w1, gate);
    backend_.matmul(xb, lw.w3, up);
    backend_.swiglu(gate, up, gate);
    backend_.matmul(gate, lw.w2, xb);
    backend_.add(x, xb, x);
  }

  const int64_t rows = n - first_logit_row;
  if (rows > 0) {
    const Tensor x_rows = f32_view(x_ + first_logit_row * c.dim, {rows, c.dim});
    const Tensor xb_rows = f32_view(xb_, {rows, c.dim});
    backend_.rms_norm(x_rows, w.output_norm, c.rms_eps, xb_rows);
    backend_.matmul(xb_rows, w.output, f32_view(logits_, {rows, c.vocab_size}));
    // NaN or inf weights (or an overflow) end here; the sampler and the
    // scorer may rely on finite logits.
    const std::size_t count =
        static_cast<std::size_t>(rows) * static_cast<std::size_t>(c.vocab_size);
    for (std::size_t i = 0; i < count; ++i)
      if (!std::isfinite(logits_[i]))
        return non_finite_logit(logits_[i], positions[static_cast<std::size_t>(first_logit_row) +
                                                      i / static_cast<std::size_t>(c.vocab_size)]);
  }

  const Tensor k_all = f32_view(k_new_, {c.n_layers, n, c.n_kv_heads, c.head_dim});
  const Tensor v_all = f32_view(v_new_, {c.n_layers, n, c.n_kv_heads, c.head_dim});
  return cache.append(seq, positions, k_all, v_all);
}

}  // namespace tessera
