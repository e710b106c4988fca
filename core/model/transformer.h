// The one forward of the llama family (RMSNorm, RoPE, grouped-query attention,
// SwiGLU), run through Backend ops. It reads earlier K/V from the cache and
// appends the K/V of the tokens it is fed, so prefill, one-token decode and
// full recomputation are the same call.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/backend/backend.h"
#include "core/cache/cache_store.h"
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
  // Scratch for max_batch tokens is allocated here, once; forward() never
  // allocates. `model` and `backend` must outlive the Transformer.
  static Result<std::unique_ptr<Transformer>> create(const LoadedModel& model, Backend& backend,
                                                     int max_batch = 128);

  // Feeds `tokens` at `positions` to the model for sequence `seq`: attends to
  // the K/V already in `cache` plus the tokens themselves (causally), appends
  // their K/V to the cache, and returns logits f32 [rows, vocab] (row-major),
  // valid until the next call. Longer inputs are fed in chunks of max_batch.
  // The logits returned are finite: a NaN or infinity is DataLoss naming the
  // model and, when the weights hold them, the tensor. On any error the
  // cache holds what it held before the call.
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
  // The error for a non-finite logit: scans the weights to name the cause.
  Status non_finite_logit(float value, int32_t position) const;
  // One chunk of at most max_batch tokens. Logits of the chunk's rows
  // [first_logit_row, n) land in logits_ from row 0.
  Status forward_chunk(CheckedCacheStore& cache, SequenceId seq, std::span<const int32_t> tokens,
                       std::span<const int32_t> positions, int first_logit_row);

  const LoadedModel& model_;
  Backend& backend_;
  int max_batch_;
  std::vector<std::unique_ptr<Buffer>> buffers_;
  // Scratch, each sized for max_batch tokens.
  float* x_ = nullptr;       // residual stream [n, dim]
  float* xb_ = nullptr;      // normed input / projection output [n, dim]
  float* q_ = nullptr;       // [n, heads, head_dim]
  float* attn_ = nullptr;    // attention output [n, heads, head_dim]
  float* k_new_ = nullptr;   // K of the fed tokens, all layers [layers, n, kv_heads, head_dim]
  float* v_new_ = nullptr;   // V likewise
  float* gate_ = nullptr;    // [n, hidden]
  float* up_ = nullptr;      // [n, hidden]
  float* logits_ = nullptr;  // [n, vocab]
};

}  // namespace tessera
