#include "core/model/transformer.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "core/cache/checked_cache_store.h"
#include "core/model/batch_visibility.h"
#include "core/model/layer_blocks.h"
#include "core/model/weight_check.h"
#include "core/util/strings.h"

namespace tessera {
namespace {

Tensor f32_view(float* data, std::initializer_list<int64_t> shape) {
  return Tensor::contiguous(data, DType::kF32, shape);
}

std::span<std::byte> bytes_of(float* data, std::size_t floats) {
  return {reinterpret_cast<std::byte*>(data), floats * sizeof(float)};
}

}  // namespace

Tensor Transformer::at(const Scratch& area, int64_t first, std::initializer_list<int64_t> shape) {
  return Tensor::in_buffer(*area.buffer, static_cast<std::size_t>(first) * sizeof(float),
                           DType::kF32, shape);
}

Transformer::Transformer(const LoadedModel& model, Backend& backend, int max_batch)
    : model_(model), backend_(backend), max_batch_(max_batch), specs_(layer_specs(model.config)) {}

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
  const std::vector<LayerSpec> specs = layer_specs(model.config);
  for (std::size_t i = 0; i < w.layers.size(); ++i) {
    const LayerWeights& l = w.layers[i];
    const LayerSpec& spec = specs[i];
    const std::string layer = "layer " + std::to_string(i) + " ";
    RETURN_IF_ERROR(norm(l.attn_norm, layer + "attention norm"));
    RETURN_IF_ERROR(norm(l.ffn_norm, layer + "ffn norm"));
    // What the layer's description asks for (the GGUF loader checked the
    // shapes; a hand-made model may still lack one).
    std::vector<std::pair<const Tensor*, const char*>> extras;
    if (spec.qkv_bias)
      extras.insert(extras.end(), {{&l.bq, "q bias"}, {&l.bk, "k bias"}, {&l.bv, "v bias"}});
    if (spec.qk_norm) extras.insert(extras.end(), {{&l.q_norm, "q norm"}, {&l.k_norm, "k norm"}});
    if (spec.post_attention_norm) extras.emplace_back(&l.post_attn_norm, "post-attention norm");
    if (spec.post_ffn_norm) extras.emplace_back(&l.post_ffn_norm, "post-ffn norm");
    if (spec.rope_freq_factors) extras.emplace_back(&w.rope_freqs, "rope_freqs");
    for (const auto& [tensor, name] : extras) {
      if (tensor->data == nullptr && tensor->buffer == nullptr)
        return invalid_argument("model " + model.path + ": " + layer + "needs its " + name +
                                " (the layer's description has it) but the weights do not");
      RETURN_IF_ERROR(norm(*tensor, layer + name));
    }
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
  const auto take = [&](std::size_t floats, Scratch& out) -> Status {
    ASSIGN_OR_RETURN(auto buffer,
                     backend_.allocate(floats * sizeof(float), BufferUsage::kActivations));
    out.buffer = buffer.get();
    out.host = static_cast<float*>(buffer->host_data());
    device_ = out.host == nullptr;
    buffers_.push_back(std::move(buffer));
    scratch_bytes_ += floats * sizeof(float);
    return ok_status();
  };
  const std::size_t q_width = static_cast<std::size_t>(c.n_heads * c.head_dim);
  RETURN_IF_ERROR(take(n * static_cast<std::size_t>(c.dim), x_));
  RETURN_IF_ERROR(take(n * std::max<std::size_t>(static_cast<std::size_t>(c.dim), q_width), xb_));
  RETURN_IF_ERROR(take(n * q_width, q_));
  RETURN_IF_ERROR(take(n * q_width, attn_));
  RETURN_IF_ERROR(take(layers * n * kv, k_new_));
  RETURN_IF_ERROR(take(layers * n * kv, v_new_));
  RETURN_IF_ERROR(take(n * kv, k_seen_));
  RETURN_IF_ERROR(take(n * kv, v_seen_));
  RETURN_IF_ERROR(take(n * static_cast<std::size_t>(c.hidden_dim), gate_));
  RETURN_IF_ERROR(take(n * static_cast<std::size_t>(c.hidden_dim), up_));
  RETURN_IF_ERROR(take(n * static_cast<std::size_t>(c.vocab_size), logits_));
  RETURN_IF_ERROR(take(n * static_cast<std::size_t>(c.dim), hidden_));
  if (device_) {
    logits_host_.resize(n * static_cast<std::size_t>(c.vocab_size));
    hidden_host_.resize(n * static_cast<std::size_t>(c.dim));
    k_host_.resize(layers * n * kv);
    v_host_.resize(layers * n * kv);
    codec_in_.resize(n * kv);
    codec_out_.resize(n * kv);
  }
  // RoPE's frequency factors are host floats in every RopeSpec: read back
  // once where a backend moved them to its device.
  const Tensor& freqs = model_.weights.rope_freqs;
  if (freqs.data != nullptr) {
    rope_freqs_ = {freqs.f32(), static_cast<std::size_t>(c.head_dim / 2)};
  } else if (freqs.buffer != nullptr) {
    rope_freqs_host_.resize(static_cast<std::size_t>(freqs.elements()));
    RETURN_IF_ERROR(backend_.read(freqs, std::as_writable_bytes(std::span(rope_freqs_host_))));
    rope_freqs_ = {rope_freqs_host_.data(), static_cast<std::size_t>(c.head_dim / 2)};
  }
  const std::size_t words = (n + 63) / 64;
  in_batch_.resize(n * words);
  view_of_.resize(n);
  chunk_seqs_.reserve(n);
  views_.reserve(n);
  output_rows_.reserve(n);
  write_rows_.reserve(n);
  appended_.reserve(n);
  gather_rows_.reserve(n);
  gather_branches_.reserve(n);
  // A batch's written tokens gathered per sequence: at most all of them.
  gather_k_.resize(layers * n * kv);
  gather_v_.resize(layers * n * kv);
  gather_positions_.reserve(n);
  // Transient K/V views, one per chunk sequence: a few segments each (sinks,
  // a ring's two runs and the transient one), so their first use allocates
  // nothing; the decoded transient runs grow with their length (non-raw codecs).
  merged_.resize(n);
  for (std::vector<KVSegment>& segments : merged_) segments.reserve(4);
  transient_k_seen_.resize(n);
  transient_v_seen_.resize(n);
  chain_.reserve(n);
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
  if (positions.size() != tokens.size())
    return invalid_argument("forward: " + std::to_string(tokens.size()) + " tokens but " +
                            std::to_string(positions.size()) + " positions");
  chain_.clear();
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const bool logits = wanted == LogitsWanted::kAll || i + 1 == tokens.size();
    chain_.add(tokens[i], seq, positions[i], i == 0 ? -1 : static_cast<int32_t>(i) - 1,
               static_cast<uint8_t>(kWriteKv | (logits ? kOutputLogits : 0)));
  }
  return forward(cache, chain_);
}

int Transformer::end_layer(const ForwardOptions& options) const {
  return options.layer_end < 0 ? model_.config.n_layers : options.layer_end;
}

bool Transformer::runs_every_layer(const ForwardOptions& options) const {
  return options.layer_begin == 0 && end_layer(options) == model_.config.n_layers;
}

Status Transformer::check_batch(const CheckedCacheStore& cache, const Batch& batch,
                                const ForwardOptions& options) const {
  const int32_t n = batch.size();
  if (n == 0) return invalid_argument("forward needs at least one token");
  const int layers = model_.config.n_layers;
  const int layer_end = end_layer(options);
  if (options.layer_begin < 0 || options.layer_begin >= layer_end || layer_end > layers)
    return invalid_argument("forward: layers [" + std::to_string(options.layer_begin) + ", " +
                            std::to_string(layer_end) + ") are not a range of the model's " +
                            std::to_string(layers));
  const bool all_layers = runs_every_layer(options);
  if (!options.read_store) {
    for (uint8_t flags : batch.flags())
      if (flags & kWriteKv)
        return invalid_argument(
            "forward: a cache-free forward (read_store = false) cannot write K/V (its tokens "
            "attended to no stored entry); feed them without kWriteKv and take pending_k/v");
  }
  RETURN_IF_ERROR(check_transient(cache, options));
  if (!all_layers) {
    for (uint8_t flags : batch.flags())
      if (flags & kWriteKv)
        return invalid_argument("forward: a batch that runs layers [" +
                                std::to_string(options.layer_begin) + ", " +
                                std::to_string(layer_end) +
                                ") cannot write K/V (the cache holds every layer); feed its tokens "
                                "without kWriteKv");
  }
  const auto hidden_floats =
      static_cast<std::size_t>(n) * static_cast<std::size_t>(model_.config.dim);
  if (options.layer_begin > 0 && options.hidden_in.size() != hidden_floats)
    return invalid_argument("forward: starting at layer " + std::to_string(options.layer_begin) +
                            " needs the residual streams of the " + std::to_string(n) +
                            " tokens (" + std::to_string(hidden_floats) + " floats), got " +
                            std::to_string(options.hidden_in.size()));
  if (options.layer_begin == 0 && !options.hidden_in.empty())
    return invalid_argument("forward: hidden_in is for a forward that starts after layer 0");
  const int vocab = model_.config.vocab_size;
  for (int32_t i = 0; i < n; ++i) {
    const auto index = static_cast<std::size_t>(i);
    const int32_t token = batch.tokens()[index];
    // Built only on failure: a successful check allocates nothing.
    const auto where = [i] { return "forward: batch token " + std::to_string(i); };
    if (token < 0 || token >= vocab)
      return invalid_argument(where() + ": token id " + std::to_string(token) +
                              " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
    if (!cache.contains(batch.seqs()[index]))
      return not_found(where() + ": sequence " + std::to_string(batch.seqs()[index]) +
                       " is not allocated in the cache");
    if (batch.positions()[index] < 0)
      return invalid_argument(where() + ": position " + std::to_string(batch.positions()[index]) +
                              " is negative");
    const int32_t parent = batch.parents()[index];
    if (parent >= i || parent < -1 ||
        (parent >= 0 && batch.seqs()[static_cast<std::size_t>(parent)] != batch.seqs()[index]))
      return invalid_argument(where() + ": parent " + std::to_string(parent) +
                              " is not an earlier token of the same sequence");
    const BranchId branch = batch.branches()[index];
    if (branch < 0)
      return invalid_argument(where() + ": branch " + std::to_string(branch) +
                              " is negative (0: the shared prefix)");
    if (parent >= 0 && !branch_sees(branch, batch.branches()[static_cast<std::size_t>(parent)]))
      return invalid_argument(where() + " of branch " + std::to_string(branch) + ": its parent " +
                              std::to_string(parent) + " is of branch " +
                              std::to_string(batch.branches()[static_cast<std::size_t>(parent)]) +
                              "; a branch continues the shared prefix or itself");
  }
  if (batch.output_rows() > max_batch_)
    return invalid_argument("forward: logits of " + std::to_string(batch.output_rows()) +
                            " tokens requested, but at most " + std::to_string(max_batch_) +
                            " fit; feed fewer tokens per call");
  if (n > max_batch_) {
    bool all_written = true;
    for (uint8_t flags : batch.flags()) all_written = all_written && (flags & kWriteKv);
    if (!batch.chains_only() || !all_written || !all_layers)
      return invalid_argument("forward: a batch of " + std::to_string(n) +
                              " tokens is longer than max_batch " + std::to_string(max_batch_) +
                              ", and only a chain whose tokens all write their K/V can be fed in "
                              "chunks; split trees and blocks into batches that fit");
  }
  return ok_status();
}

Status Transformer::check_transient(const CheckedCacheStore& cache,
                                    const ForwardOptions& options) const {
  const CacheGeometry& g = cache.geometry();
  const int64_t kv_width = static_cast<int64_t>(g.kv_heads) * g.head_dim;
  for (std::size_t i = 0; i < options.transient.size(); ++i) {
    const TransientKV& t = options.transient[i];
    const auto where = [&] {
      return "forward: transient K/V " + std::to_string(i) + " (sequence " + std::to_string(t.seq) +
             ")";
    };
    for (std::size_t j = 0; j < i; ++j)
      if (options.transient[j].seq == t.seq)
        return invalid_argument(where() + " is the second for its sequence; pass one");
    if (t.count() == 0) continue;
    if (t.k == nullptr || t.v == nullptr || t.layer_stride < t.count() * kv_width)
      return invalid_argument(where() + ": no data, or a layer stride of " +
                              std::to_string(t.layer_stride) + " floats for " +
                              std::to_string(t.count()) + " entries of " +
                              std::to_string(kv_width) + " floats");
    for (std::size_t e = 1; e < t.positions.size(); ++e)
      if (t.positions[e] <= t.positions[e - 1])
        return invalid_argument(where() + ": positions are not strictly increasing at entry " +
                                std::to_string(e));
  }
  return ok_status();
}

Tensor Transformer::pending_k() const {
  const ModelConfig& c = model_.config;
  if (pending_tokens_ == 0 || (device_ && !fed_kv_to_host(pending_tokens_).ok())) return Tensor{};
  return f32_view(const_cast<float*>(fed_k()),
                  {c.n_layers, pending_tokens_, c.n_kv_heads, c.head_dim});
}

Tensor Transformer::pending_v() const {
  const ModelConfig& c = model_.config;
  if (pending_tokens_ == 0 || (device_ && !fed_kv_to_host(pending_tokens_).ok())) return Tensor{};
  return f32_view(const_cast<float*>(fed_v()),
                  {c.n_layers, pending_tokens_, c.n_kv_heads, c.head_dim});
}

Result<std::span<const float>> Transformer::forward(CheckedCacheStore& cache, const Batch& batch,
                                                    const ForwardOptions& options) {
  pending_tokens_ = 0;
  hidden_rows_ = {};
  RETURN_IF_ERROR(check_batch(cache, batch, options));
  const int32_t n = batch.size();
  // Logical lengths before the call, to take every appended chunk back on error.
  std::vector<std::pair<SequenceId, int64_t>> before;
  if (n > max_batch_) {
    for (SequenceId seq : batch.seqs()) {
      bool known = false;
      for (const auto& [s, length] : before) known = known || s == seq;
      if (!known) before.emplace_back(seq, cache.info(seq)->logical_length);
    }
  }
  int32_t rows = 0;
  for (int32_t begin = 0; begin < n; begin += max_batch_) {
    const int32_t count = std::min(max_batch_, n - begin);
    Status status = forward_chunk(cache, batch, begin, count, rows, options);
    if (!status.ok()) {
      for (const auto& [seq, length] : before) {
        const Status undone = cache.truncate(seq, length);
        if (!undone.ok())
          return Status(status.code(),
                        status.message() + " (and sequence " + std::to_string(seq) +
                            " keeps the chunks before the failure: " + undone.message() + ")");
      }
      return status;
    }
    for (int32_t i = begin; i < begin + count; ++i)
      if (batch.flags()[static_cast<std::size_t>(i)] & kOutputLogits) ++rows;
  }
  const ModelConfig& c = model_.config;
  if (n <= max_batch_ && runs_every_layer(options)) pending_tokens_ = n;
  if (options.output_hidden)
    hidden_rows_ = {hidden_rows(),
                    static_cast<std::size_t>(rows) * static_cast<std::size_t>(c.dim)};
  if (!options.output_logits) return std::span<const float>();
  return std::span<const float>(
      logits_rows(), static_cast<std::size_t>(rows) * static_cast<std::size_t>(c.vocab_size));
}

Status Transformer::commit_pending(CheckedCacheStore& cache, const Batch& batch,
                                   std::span<const int32_t> rows) {
  if (pending_tokens_ == 0 || batch.size() != pending_tokens_)
    return failed_precondition(
        "commit_pending: the last forward holds no pending K/V for this batch (commit right "
        "after a forward over every layer in one chunk, with the same batch)");
  for (const int32_t row : rows) {
    if (row < 0 || row >= pending_tokens_)
      return invalid_argument("commit_pending: row " + std::to_string(row) +
                              " is outside the batch of " + std::to_string(pending_tokens_));
    if (batch.flags()[static_cast<std::size_t>(row)] & kWriteKv)
      return invalid_argument("commit_pending: batch token " + std::to_string(row) +
                              " had kWriteKv and is stored already");
  }
  return append_rows(cache, batch, 0, pending_tokens_, rows);
}

const float* Transformer::through_codec(const Compressor& codec, const float* src, int64_t vectors,
                                        int width, float* dst) {
  if (codec.stores_raw_f32()) return src;
  const std::size_t bytes = codec.encoded_bytes(vectors, width);
  if (codec_bytes_.size() < bytes) codec_bytes_.resize(bytes);
  codec.encode(src, vectors, width, codec_bytes_.data());
  codec.decode(codec_bytes_.data(), vectors, width, dst);
  return dst;
}

bool Transformer::device_codec(const Compressor& codec, int width) const {
  const int head_dim = model_.config.head_dim;
  return backend_reads_records(backend_, codec, width / head_dim, head_dim);
}

Result<Tensor> Transformer::batch_through_codec(const Compressor& codec, const Tensor& src,
                                                const Scratch& dst, int64_t vectors, int width) {
  if (codec.stores_raw_f32()) return src;
  const Tensor seen = at(dst, 0, {src.dim(0), src.dim(1), src.dim(2)});
  if (!device_) {
    through_codec(codec, src.f32(), vectors, width, seen.f32());
    return seen;
  }
  // A layout the device reads: the round trip is its kernel.
  if (device_codec(codec, width)) {
    const KVRecordLayout records = codec.record_layout(width);
    const std::initializer_list<int64_t> shape = {1, src.dim(0), src.dim(1), src.dim(2)};
    RETURN_IF_ERROR(backend_.round_trip_kv(
        src.view(0, shape, {0, src.stride[0], src.stride[1], 1}),
        seen.view(0, shape, {0, seen.stride[0], seen.stride[1], 1}), records));
    return seen;
  }
  // A codec without device kernels (docs/backends.md, step 5): the layer is
  // split at the codec point, its K or V read back, encoded and decoded on
  // the host, and written again.
  const auto floats = static_cast<std::size_t>(src.elements());
  RETURN_IF_ERROR(backend_.read(src, bytes_of(codec_in_.data(), floats)));
  through_codec(codec, codec_in_.data(), vectors, width, codec_out_.data());
  RETURN_IF_ERROR(backend_.write(seen, std::as_bytes(std::span(codec_out_.data(), floats))));
  return seen;
}

Status Transformer::fed_kv_to_host(int64_t n) const {
  if (fed_on_host_ == n) return ok_status();
  const ModelConfig& c = model_.config;
  const int64_t floats = c.n_layers * n * c.n_kv_heads * c.head_dim;
  const auto size = static_cast<std::size_t>(floats);
  RETURN_IF_ERROR(backend_.read(at(k_new_, 0, {floats}), bytes_of(k_host_.data(), size)));
  RETURN_IF_ERROR(backend_.read(at(v_new_, 0, {floats}), bytes_of(v_host_.data(), size)));
  fed_on_host_ = n;
  return ok_status();
}

// One chunk's activations and attention call, set up once and reused by each
// layer (which repoints the layer's K/V, RoPE, rule and batch K/V).
struct Transformer::ChunkState {
  int64_t n = 0;
  std::span<const int32_t> positions;
  LayerActivations act;
  Tensor attn_flat;  // the attention output as [n, heads * head_dim]
  AttentionParams params;
  WindowRule store_rule;  // the store's, or none for an unwindowed forward
};

void Transformer::index_chunk(const Batch& batch, int32_t begin, int32_t count) {
  chunk_seqs_.clear();
  output_rows_.clear();
  write_rows_.clear();
  for (int32_t i = 0; i < count; ++i) {
    const auto index = static_cast<std::size_t>(begin + i);
    const SequenceId seq = batch.seqs()[index];
    auto found = std::find(chunk_seqs_.begin(), chunk_seqs_.end(), seq);
    if (found == chunk_seqs_.end()) found = chunk_seqs_.insert(chunk_seqs_.end(), seq);
    view_of_[static_cast<std::size_t>(i)] = static_cast<int32_t>(found - chunk_seqs_.begin());
    if (batch.flags()[index] & kOutputLogits) output_rows_.push_back(i);
    if (batch.flags()[index] & kWriteKv) write_rows_.push_back(i);
  }
  build_in_batch_visibility(batch, begin, count, in_batch_);
  views_.resize(chunk_seqs_.size());
}

void Transformer::set_up_chunk(const CheckedCacheStore& cache, const Batch& batch, int32_t begin,
                               int32_t count, const ForwardOptions& options, ChunkState& chunk) {
  const ModelConfig& c = model_.config;
  const auto range = [&](auto span) {
    return span.subspan(static_cast<std::size_t>(begin), static_cast<std::size_t>(count));
  };
  const int64_t n = count;
  chunk.n = n;
  chunk.positions = range(batch.positions());
  LayerActivations& act = chunk.act;
  act.x = at(x_, 0, {n, c.dim});
  act.xb = at(xb_, 0, {n, c.dim});
  act.q = at(q_, 0, {n, c.n_heads, c.head_dim});
  act.gate = at(gate_, 0, {n, c.hidden_dim});
  act.up = at(up_, 0, {n, c.hidden_dim});
  chunk.attn_flat = at(attn_, 0, {n, static_cast<int64_t>(c.n_heads) * c.head_dim});

  AttentionParams& params = chunk.params;
  params.q = act.q;
  params.positions = chunk.positions;
  params.views = views_;
  params.view_of = std::span<const int32_t>(view_of_.data(), static_cast<std::size_t>(count));
  // Always one branch per token (all 0 without branches): a prefix token
  // must not see a branch's stored entries.
  params.branches = range(batch.branches());
  params.in_batch = {std::span<const uint64_t>(in_batch_.data(),
                                               static_cast<std::size_t>((count + 63) / 64 * count)),
                     (count + 63) / 64};
  // Unwindowed: WindowRule{} hides nothing and moves no sink.
  chunk.store_rule = options.unwindowed ? WindowRule{} : cache.policy().rule;
  params.stored_keys = cache.stored_keys();
  params.out = at(attn_, 0, {n, c.n_heads, c.head_dim});
  // The layers below store nothing until the chunk is done: one visibility
  // for all of them (a device builds and uploads its mask once).
  params.visibility_id = next_visibility_id();
}

// The residual stream's first rows: the tokens' embeddings, or hidden_in's
// rows for a forward that starts past layer 0.
Status Transformer::embed_chunk(const Batch& batch, int32_t begin, const ForwardOptions& options,
                                const ChunkState& chunk) {
  const ModelConfig& c = model_.config;
  const Tensor& x = chunk.act.x;
  if (options.layer_begin == 0) {
    const auto tokens =
        batch.tokens().subspan(static_cast<std::size_t>(begin), static_cast<std::size_t>(chunk.n));
    backend_.embedding(model_.weights.token_embedding, tokens, x);
    if (c.embedding_scale != 1.0f) backend_.scale(x, c.embedding_scale, x);
    return ok_status();
  }
  const std::span<const float> rows = options.hidden_in.subspan(
      static_cast<std::size_t>(begin) * static_cast<std::size_t>(c.dim),
      static_cast<std::size_t>(chunk.n) * static_cast<std::size_t>(c.dim));
  if (device_) return backend_.write(x, std::as_bytes(rows));
  std::copy(rows.begin(), rows.end(), x_.host);
  return ok_status();
}

// Layer l over the chunk: x += wo * attention(q, k, v) of norm(x) as the
// layer describes them, with the batch's K/V through the layer's codec, as
// the cache will hold them; then the feed-forward block.
Status Transformer::run_layer(CheckedCacheStore& cache, int l, const ForwardOptions& options,
                              ChunkState& chunk) {
  const ModelConfig& c = model_.config;
  const LayerWeights& lw = model_.weights.layers[static_cast<std::size_t>(l)];
  const LayerSpec& spec = specs_[static_cast<std::size_t>(l)];
  const Compressor& codec = cache.codec(l);
  const CacheGeometry& geometry = cache.geometry();
  LayerActivations& act = chunk.act;
  AttentionParams& params = chunk.params;
  const int64_t n = chunk.n;
  // k_new_/v_new_ are packed for this n, an entry's heads contiguous; the
  // codec's vectors are one per head, or one per token (cache.codec_span).
  const int64_t layer_stride = n * c.n_kv_heads * c.head_dim;
  const int64_t vectors = n * geometry.vectors_per_token();
  act.k = at(k_new_, l * layer_stride, {n, c.n_kv_heads, c.head_dim});
  act.v = at(v_new_, l * layer_stride, {n, c.n_kv_heads, c.head_dim});

  // Attention reads the batch's keys as the cache holds them: rotated, or
  // before RoPE (then rotated as they are read, like the stored ones).
  const bool keys_before_rope = cache.stored_keys() == StoredKeys::kBeforeRope;
  const RopeSpec rope = layer_rope(rope_freqs_, spec);
  attention_inputs(backend_, c, spec, rope, lw, act, chunk.positions, !keys_before_rope);
  if (device_ && !codec.stores_raw_f32() && !device_codec(codec, geometry.vector_width()))
    ++codec_split_layers_;
  ASSIGN_OR_RETURN(params.batch_k,
                   batch_through_codec(codec, act.k, k_seen_, vectors, geometry.vector_width()));
  ASSIGN_OR_RETURN(params.batch_v,
                   batch_through_codec(codec, act.v, v_seen_, vectors, geometry.vector_width()));
  params.rope = rope;
  params.rule = layer_window_rule(chunk.store_rule, spec.sliding_window);
  // A codec that attends encoded is read without decoding, unless keys must
  // be rotated at read time (before RoPE, or sinks moved by reassign), or
  // the backend is a device's (its attention reads decoded host views until
  // K/V move to the device: docs/backends.md, step 2).
  const bool encoded = codec.attends_encoded() && !codec.stores_raw_f32() && !keys_before_rope &&
                       !params.rule.reassign && !device_;
  RETURN_IF_ERROR(build_views(cache, l, encoded, options));
  backend_.attention(params);
  attention_output(backend_, c, spec, lw, chunk.attn_flat, act);
  feed_forward_block(backend_, c, spec, lw, act);
  return ok_status();
}

Status Transformer::forward_chunk(CheckedCacheStore& cache, const Batch& batch, int32_t begin,
                                  int32_t count, int32_t first_row, const ForwardOptions& options) {
  index_chunk(batch, begin, count);
  fed_on_host_ = -1;  // this chunk overwrites k_new_ / v_new_
  ChunkState chunk;
  set_up_chunk(cache, batch, begin, count, options, chunk);
  RETURN_IF_ERROR(embed_chunk(batch, begin, options, chunk));
  for (int l = options.layer_begin; l < end_layer(options); ++l)
    RETURN_IF_ERROR(run_layer(cache, l, options, chunk));
  // What a device met while running the layers (the CPU: always ok); with
  // logits to read, output_logits waits once, after the head, instead.
  if (output_rows_.empty()) RETURN_IF_ERROR(backend_.synchronize());
  if (!output_rows_.empty()) RETURN_IF_ERROR(output_logits(first_row, chunk.positions, options));
  return append_rows(cache, batch, begin, count, write_rows_);
}

Status Transformer::build_views(CheckedCacheStore& cache, int layer, bool encoded,
                                const ForwardOptions& options) {
  const CacheGeometry& g = cache.geometry();
  const Compressor& codec = cache.codec(layer);
  const int64_t kv_width = static_cast<int64_t>(g.kv_heads) * g.head_dim;
  for (std::size_t s = 0; s < chunk_seqs_.size(); ++s) {
    const SequenceId seq = chunk_seqs_[s];
    KVView stored;
    if (options.read_store) {
      ASSIGN_OR_RETURN(stored, encoded ? cache.encoded_view(seq, layer) : cache.view(seq, layer));
    }
    const TransientKV* transient = nullptr;
    for (const TransientKV& t : options.transient)
      if (t.seq == seq && t.count() > 0) transient = &t;
    if (transient == nullptr) {
      views_[s] = stored;
      continue;
    }
    // The transient entries as a stored segment of this layer: through the
    // codec like the batch's own K/V, token-major like k_new_.
    const int64_t count = transient->count();
    const auto floats = static_cast<std::size_t>(count * kv_width);
    // A raw-f32 codec reads them in place; another grows this scratch to the
    // longest transient run (doubling), then reuses it.
    if (!codec.stores_raw_f32() && transient_k_seen_[s].size() < floats) {
      transient_k_seen_[s].resize(floats);
      transient_v_seen_[s].resize(floats);
    }
    const int64_t vectors = count * g.vectors_per_token();
    const float* k = through_codec(codec, transient->k + layer * transient->layer_stride, vectors,
                                   g.vector_width(), transient_k_seen_[s].data());
    const float* v = through_codec(codec, transient->v + layer * transient->layer_stride, vectors,
                                   g.vector_width(), transient_v_seen_[s].data());
    KVSegment segment;
    for (auto [tensor, data] : {std::pair{&segment.k, k}, std::pair{&segment.v, v}}) {
      *tensor = f32_view(const_cast<float*>(data), {g.kv_heads, count, g.head_dim});
      tensor->stride = {g.head_dim, kv_width, 1, 0};
    }
    segment.positions = transient->positions.data();
    segment.count = count;
    // Segments stay in position order: the transient run goes before the
    // first stored segment that starts after it.
    std::vector<KVSegment>& merged = merged_[s];
    merged.clear();
    bool placed = false;
    for (const KVSegment& part : stored.segments) {
      if (!placed && part.count > 0 && part.positions[0] > transient->positions.front()) {
        merged.push_back(segment);
        placed = true;
      }
      merged.push_back(part);
    }
    if (!placed) merged.push_back(segment);
    views_[s] = KVView{merged};
  }
  return ok_status();
}

Status Transformer::output_logits(int32_t first_row, std::span<const int32_t> positions,
                                  const ForwardOptions& options) {
  const ModelConfig& c = model_.config;
  const ModelWeights& w = model_.weights;
  // The output rows' residual streams, gathered contiguous (rows [0, m) of xb_).
  const auto rows = static_cast<int64_t>(output_rows_.size());
  bool contiguous = true;
  for (int64_t r = 0; r < rows; ++r)
    contiguous = contiguous && output_rows_[static_cast<std::size_t>(r)] == output_rows_[0] + r;
  Tensor source = at(x_, static_cast<int64_t>(output_rows_[0]) * c.dim, {rows, c.dim});
  if (!contiguous) {
    // xb_ is free now: gather there, then normalise in place.
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t row = output_rows_[static_cast<std::size_t>(r)];
      if (device_) {
        RETURN_IF_ERROR(backend_.copy(at(x_, row * c.dim, {c.dim}), at(xb_, r * c.dim, {c.dim})));
      } else {
        std::copy_n(x_.host + row * c.dim, c.dim, xb_.host + r * c.dim);
      }
    }
    source = at(xb_, 0, {rows, c.dim});
  }
  const auto row_floats = static_cast<std::size_t>(rows) * static_cast<std::size_t>(c.dim);
  if (options.output_hidden) {
    float* kept = hidden_rows() + static_cast<int64_t>(first_row) * c.dim;
    if (device_) {
      RETURN_IF_ERROR(backend_.read(source, bytes_of(kept, row_floats)));
    } else {
      std::copy_n(source.f32(), row_floats, kept);
    }
  }
  if (!options.output_logits) return ok_status();
  const Tensor xb_rows = at(xb_, 0, {rows, c.dim});
  backend_.rms_norm(source, w.output_norm, c.rms_eps, xb_rows);
  const Tensor logits =
      at(logits_, static_cast<int64_t>(first_row) * c.vocab_size, {rows, c.vocab_size});
  backend_.matmul(xb_rows, w.output, logits);
  const std::size_t total = static_cast<std::size_t>(rows) * static_cast<std::size_t>(c.vocab_size);
  float* out = logits_rows() + static_cast<int64_t>(first_row) * c.vocab_size;
  if (device_) {
    // The host waits here, for the logits it asked for.
    RETURN_IF_ERROR(backend_.synchronize());
    RETURN_IF_ERROR(backend_.read(logits, bytes_of(out, total)));
  }
  if (c.final_logit_softcap > 0.0f) {
    const float cap = c.final_logit_softcap;
    for (std::size_t i = 0; i < total; ++i) out[i] = cap * std::tanh(out[i] / cap);
  }
  // NaN or inf weights (or an overflow) end here; the sampler and the
  // scorer may rely on finite logits.
  for (std::size_t i = 0; i < total; ++i)
    if (!std::isfinite(out[i]))
      return non_finite_logit(out[i],
                              positions[static_cast<std::size_t>(
                                  output_rows_[i / static_cast<std::size_t>(c.vocab_size)])]);
  return ok_status();
}

Status Transformer::append_rows(CheckedCacheStore& cache, const Batch& batch, int32_t begin,
                                int32_t count, std::span<const int32_t> rows) {
  if (rows.empty()) return ok_status();
  if (device_ && cache.kv_in_backend()) return append_device_rows(cache, batch, begin, count, rows);
  // A store in host memory appends from the host's copy.
  if (device_) RETURN_IF_ERROR(fed_kv_to_host(count));
  const ModelConfig& c = model_.config;
  const int64_t n = count;
  const int64_t kv_width = static_cast<int64_t>(c.n_kv_heads) * c.head_dim;
  const auto chunk = [&](auto span) {
    return span.subspan(static_cast<std::size_t>(begin), static_cast<std::size_t>(count));
  };
  // One sequence writing every token in order (prefill, decode): straight from k_new_.
  bool simple = chunk_seqs_.size() == 1 && static_cast<int32_t>(rows.size()) == count;
  for (int32_t i = 0; i < count && simple; ++i) simple = rows[static_cast<std::size_t>(i)] == i;
  if (simple) {
    const Tensor k_all =
        f32_view(const_cast<float*>(fed_k()), {c.n_layers, n, c.n_kv_heads, c.head_dim});
    const Tensor v_all =
        f32_view(const_cast<float*>(fed_v()), {c.n_layers, n, c.n_kv_heads, c.head_dim});
    return cache.append(chunk_seqs_[0], chunk(batch.positions()),
                        batch.any_branch() ? chunk(batch.branches()) : std::span<const BranchId>(),
                        k_all, v_all);
  }
  // Otherwise each sequence's rows, gathered in the order given.
  appended_.clear();
  for (const SequenceId seq : chunk_seqs_) {
    gather_rows_.clear();
    gather_positions_.clear();
    gather_branches_.clear();
    for (const int32_t i : rows) {
      const auto index = static_cast<std::size_t>(begin + i);
      if (batch.seqs()[index] != seq) continue;
      gather_rows_.push_back(i);
      gather_positions_.push_back(batch.positions()[index]);
      gather_branches_.push_back(batch.branches()[index]);
    }
    if (gather_rows_.empty()) continue;
    const auto m = static_cast<int64_t>(gather_rows_.size());
    const auto floats = static_cast<std::size_t>(c.n_layers * m * kv_width);
    if (gather_k_.size() < floats) {
      gather_k_.resize(floats);
      gather_v_.resize(floats);
    }
    for (int l = 0; l < c.n_layers; ++l)
      for (int64_t r = 0; r < m; ++r) {
        const int64_t from = (l * n + gather_rows_[static_cast<std::size_t>(r)]) * kv_width;
        const int64_t to = (l * m + r) * kv_width;
        std::copy_n(fed_k() + from, kv_width, gather_k_.data() + to);
        std::copy_n(fed_v() + from, kv_width, gather_v_.data() + to);
      }
    ASSIGN_OR_RETURN(const SequenceInfo info, cache.info(seq));
    const Status status =
        cache.append(seq, gather_positions_,
                     batch.any_branch() ? std::span<const BranchId>(gather_branches_)
                                        : std::span<const BranchId>(),
                     f32_view(gather_k_.data(), {c.n_layers, m, c.n_kv_heads, c.head_dim}),
                     f32_view(gather_v_.data(), {c.n_layers, m, c.n_kv_heads, c.head_dim}));
    if (!status.ok()) {
      for (const auto& [done, length] : appended_) (void)cache.truncate(done, length);
      return status;
    }
    appended_.emplace_back(seq, info.logical_length);
  }
  return ok_status();
}

Status Transformer::append_device_rows(CheckedCacheStore& cache, const Batch& batch, int32_t begin,
                                       int32_t count, std::span<const int32_t> rows) {
  const ModelConfig& c = model_.config;
  const int64_t n = count;
  const int64_t kv_width = static_cast<int64_t>(c.n_kv_heads) * c.head_dim;
  const Tensor k_all = at(k_new_, 0, {c.n_layers, n, c.n_kv_heads, c.head_dim});
  const Tensor v_all = at(v_new_, 0, {c.n_layers, n, c.n_kv_heads, c.head_dim});
  const auto undo = [&](const Status& status) {
    for (const auto& [done, length] : appended_) (void)cache.truncate(done, length);
    return status;
  };
  appended_.clear();
  for (const SequenceId seq : chunk_seqs_) {
    bool started = false;
    for (std::size_t i = 0; i < rows.size();) {
      const auto index = [&](std::size_t r) { return static_cast<std::size_t>(begin + rows[r]); };
      if (batch.seqs()[index(i)] != seq) {
        ++i;
        continue;
      }
      // The run of consecutive chunk rows of this sequence from rows[i].
      std::size_t end = i + 1;
      while (end < rows.size() && rows[end] == rows[end - 1] + 1 && batch.seqs()[index(end)] == seq)
        ++end;
      gather_positions_.clear();
      gather_branches_.clear();
      for (std::size_t r = i; r < end; ++r) {
        gather_positions_.push_back(batch.positions()[index(r)]);
        gather_branches_.push_back(batch.branches()[index(r)]);
      }
      if (!started) {
        ASSIGN_OR_RETURN(const SequenceInfo info, cache.info(seq));
        appended_.emplace_back(seq, info.logical_length);
        started = true;
      }
      const auto m = static_cast<int64_t>(end - i);
      const int64_t first = rows[i] * kv_width;
      const std::initializer_list<int64_t> strides = {n * kv_width, kv_width, c.head_dim, 1};
      const Status status =
          cache.append(seq, gather_positions_,
                       batch.any_branch() ? std::span<const BranchId>(gather_branches_)
                                          : std::span<const BranchId>(),
                       k_all.view(first, {c.n_layers, m, c.n_kv_heads, c.head_dim}, strides),
                       v_all.view(first, {c.n_layers, m, c.n_kv_heads, c.head_dim}, strides));
      if (!status.ok()) return undo(status);
      i = end;
    }
  }
  return ok_status();
}

}  // namespace tessera
