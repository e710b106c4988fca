// The one forward of the llama family (RMSNorm, RoPE, grouped-query attention,
// SwiGLU), run through Backend ops. It reads what the cache store holds for
// each sequence of the batch, attends to it and to the batch tokens each token
// may see (core/model/batch.h), and appends the K/V of the tokens marked
// kWriteKv once every layer has run, so prefill, one-token decode, several
// sequences at once and full recomputation are the same call.
//
// Codec semantics: every key and value a query reads has been through the
// layer's codec, its own token's included: the batch's K/V are encoded and
// decoded before attention, as the cache will hold them.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/backend/backend.h"
#include "core/cache/cache_store.h"
#include "core/model/batch.h"
#include "core/model/model.h"
#include "core/status/status.h"

namespace tessera {

class CheckedCacheStore;

enum class LogitsWanted : uint8_t {
  kLast,  // logits of the last token only
  kAll,   // logits of every token fed (at most max_batch tokens then)
};

class Transformer {
 public:
  static constexpr int kDefaultMaxBatch = 128;

  // Scratch for max_batch tokens is allocated here, once. `model` and
  // `backend` must outlive the Transformer.
  static Result<std::unique_ptr<Transformer>> create(const LoadedModel& model, Backend& backend,
                                                     int max_batch = kDefaultMaxBatch);

  // Runs `batch` and returns the logits of its kOutputLogits tokens, f32
  // [rows, vocab] in batch order, valid until the next call. A batch longer
  // than max_batch is fed in chunks, which needs every token to be a chain
  // link that writes its K/V (a prefill); at most max_batch rows of logits.
  // The logits are finite: a NaN or infinity is DataLoss naming the model and,
  // when the weights hold them, the tensor. On any error the cache holds what
  // it held before the call, unless an evicting store already dropped entries
  // (the error then says so).
  Result<std::span<const float>> forward(CheckedCacheStore& cache, const Batch& batch);

  // A chain of `tokens` continuing `seq` at `positions` (the common case).
  Result<std::span<const float>> forward(CheckedCacheStore& cache, SequenceId seq,
                                         std::span<const int32_t> tokens,
                                         std::span<const int32_t> positions,
                                         LogitsWanted wanted = LogitsWanted::kLast);

  const ModelConfig& config() const { return model_.config; }
  CacheGeometry cache_geometry() const;
  int max_batch() const { return max_batch_; }

 private:
  Transformer(const LoadedModel& model, Backend& backend, int max_batch);
  Status allocate_scratch();
  Status check_batch(const CheckedCacheStore& cache, const Batch& batch) const;
  // Tokens [begin, begin + count) of `batch`, which holds no reference outside
  // that range except to tokens already written. Logit rows go to logits_ from
  // row `first_row`.
  Status forward_chunk(CheckedCacheStore& cache, const Batch& batch, int32_t begin, int32_t count,
                       int32_t first_row);
  // in_batch_ rows for the chunk: parents (ancestors) and block mates.
  void build_visibility(const Batch& batch, int32_t begin, int32_t count);
  // dst = decode(encode(src)) through layer l's codec, `vectors` vectors of
  // `width` floats; a raw-f32 codec copies nothing and returns src.
  const float* through_codec(const Compressor& codec, const float* src, int64_t vectors, int width,
                             float* dst);
  // Appends the chunk's kWriteKv tokens, sequence by sequence.
  Status append_chunk(CheckedCacheStore& cache, const Batch& batch, int32_t begin, int32_t count);
  // The error for a non-finite logit: scans the weights to name the cause.
  Status non_finite_logit(float value, int32_t position) const;

  const LoadedModel& model_;
  Backend& backend_;
  int max_batch_;
  std::vector<std::unique_ptr<Buffer>> buffers_;
  // Scratch, each sized for max_batch tokens.
  float* x_ = nullptr;     // residual stream [n, dim]
  float* xb_ = nullptr;    // normed input / projection output [n, dim]
  float* q_ = nullptr;     // [n, heads, head_dim]
  float* attn_ = nullptr;  // attention output [n, heads, head_dim]
  float* k_new_ =
      nullptr;  // K of the fed tokens as stored, all layers [layers, n, kv_heads, head_dim]
  float* v_new_ = nullptr;   // V likewise
  float* k_seen_ = nullptr;  // one layer's batch K as attention sees it [n, kv_heads, head_dim]
  float* v_seen_ = nullptr;  // likewise V
  float* gate_ = nullptr;    // [n, hidden]
  float* up_ = nullptr;      // [n, hidden]
  float* logits_ = nullptr;  // [max_batch, vocab]
  // Per chunk, sized once for max_batch tokens.
  std::vector<uint64_t> in_batch_;      // visibility bits [n, words]
  std::vector<int32_t> view_of_;        // [n]
  std::vector<SequenceId> chunk_seqs_;  // the distinct sequences of the chunk
  std::vector<KVView> views_;           // one per chunk sequence, the layer at hand
  std::vector<int32_t> output_rows_;    // chunk indices with kOutputLogits
  std::vector<int32_t> gather_rows_;    // chunk indices appended to one sequence
  std::vector<int32_t> gather_positions_;
  std::vector<float> gather_k_, gather_v_;  // [layers, m, kv_heads, head_dim], grown once
  std::vector<uint8_t> codec_bytes_;        // one layer's encoded batch K or V, grown once
  Batch chain_;                             // for the chain overload
};

}  // namespace tessera
