// The one forward of the llama family and its relatives (RMSNorm, RoPE,
// grouped-query attention, gated feed-forward; what qwen2, qwen3, llama 3 and
// gemma3 do differently per layer is their LayerSpec), run through Backend ops. It reads what the
// cache store holds for each sequence of the batch, attends to it and to the batch tokens each
// token may see (core/model/batch.h), and appends the K/V of the tokens marked kWriteKv once every
// layer has run, so prefill, one-token decode, several sequences at once and full recomputation are
// the same call.
//
// Codec semantics: every key and value a query reads has been through the
// layer's codec, its own token's included: the batch's K/V are encoded and
// decoded before attention, as the cache will hold them.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "core/backend/backend.h"
#include "core/cache/cache_store.h"
#include "core/cache/transient_kv.h"
#include "core/model/batch.h"
#include "core/model/model.h"
#include "core/status/status.h"

namespace tessera {

class CheckedCacheStore;

enum class LogitsWanted : uint8_t {
  kLast,  // logits of the last token only
  kAll,   // logits of every token fed (at most max_batch tokens then)
};

// What one forward runs and returns beyond the default (every layer, logits
// of the kOutputLogits tokens).
struct ForwardOptions {
  // Layers [layer_begin, layer_end) run; layer_end = -1: to the last. A range
  // that stops early writes no K/V (no token may carry kWriteKv) and leaves
  // nothing to commit: self-drafting runs the first layers, then the final
  // norm and head.
  int layer_begin = 0;
  int layer_end = -1;
  // With layer_begin > 0: the residual stream entering layer_begin, f32 [n,
  // dim] for the n batch tokens (instead of the embedding).
  std::span<const float> hidden_in;
  // Keep the residual stream of the kOutputLogits tokens after the last layer
  // run, before the final norm (hidden_states()): for drafters conditioned on
  // the target's hidden states.
  bool output_hidden = false;
  // Skip the final norm and head (returns no logits).
  bool output_logits = true;
  // K/V held by the caller for this forward only (a restorer's), at most one
  // per sequence: merged into every layer's view by position, through the
  // layer's codec like stored entries (core/cache/transient_kv.h). (ABI 3.2)
  std::span<const TransientKV> transient;
  // false: a cache-free forward. Attention reads no stored entry, only the
  // batch and `transient`, and no token may carry kWriteKv; the K/V stay
  // pending (pending_k/pending_v) for the caller to keep. (ABI 3.2)
  bool read_store = true;
  // Lift the store's window (WindowRule) for this forward: every stored,
  // transient and in-batch key a token may see causally is visible, at its
  // own position (so `reassign` moves nothing). How restored keys stay
  // visible past the window. (ABI 3.2)
  bool unwindowed = false;
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
  Result<std::span<const float>> forward(CheckedCacheStore& cache, const Batch& batch,
                                         const ForwardOptions& options = {});

  // Appends to the cache the K/V the last forward computed for tokens `rows`
  // of its batch (indices into it, each token without kWriteKv: held
  // pending), sequence by sequence in the order given, with the batch's
  // positions and branches. How a verifier keeps only an accepted draft path:
  // the draft's K/V wait here and never touch the store until accepted. Valid
  // after a forward over every layer in one chunk (at most max_batch tokens),
  // until the next forward; `batch` must be the one that forward ran.
  Status commit_pending(CheckedCacheStore& cache, const Batch& batch,
                        std::span<const int32_t> rows);
  // The residual streams the last forward kept (ForwardOptions::output_hidden),
  // f32 [rows, dim] in the order of its logits.
  std::span<const float> hidden_states() const { return hidden_rows_; }
  // The K/V the last forward computed for its batch, as CacheStore::append
  // takes them: f32 [layers, n, kv_heads, head_dim] for its n tokens (before
  // the codec). Valid when commit_pending is (a forward over every layer in
  // one chunk), until the next forward; empty tensors otherwise. (ABI 3.2)
  // Host tensors: on a device backend they are read back on the first call
  // (empty too when that read fails; synchronize() says why).
  Tensor pending_k() const;
  Tensor pending_v() const;

  // A chain of `tokens` continuing `seq` at `positions` (the common case).
  Result<std::span<const float>> forward(CheckedCacheStore& cache, SequenceId seq,
                                         std::span<const int32_t> tokens,
                                         std::span<const int32_t> positions,
                                         LogitsWanted wanted = LogitsWanted::kLast);

  const ModelConfig& config() const { return model_.config; }
  CacheGeometry cache_geometry() const;
  int max_batch() const { return max_batch_; }
  // Bytes of the activation scratch taken at create() (ABI 3.2).
  std::size_t scratch_bytes() const { return scratch_bytes_; }
  // Layer passes split at the codec point since creation: on a device
  // backend, a codec without device kernels has each layer's batch K/V read
  // back, encoded and decoded on the host, and written again (docs/backends.md).
  int64_t codec_split_layers() const { return codec_split_layers_; }

 private:
  Transformer(const LoadedModel& model, Backend& backend, int max_batch);
  Status allocate_scratch();
  // The layer a forward stops before, and whether it runs them all.
  int end_layer(const ForwardOptions& options) const;
  bool runs_every_layer(const ForwardOptions& options) const;
  Status check_batch(const CheckedCacheStore& cache, const Batch& batch,
                     const ForwardOptions& options) const;
  // Tokens [begin, begin + count) of `batch`, which holds no reference outside
  // that range except to tokens already written. Logit rows go to logits_ from
  // row `first_row`.
  Status forward_chunk(CheckedCacheStore& cache, const Batch& batch, int32_t begin, int32_t count,
                       int32_t first_row, const ForwardOptions& options);
  // forward_chunk's steps: the chunk's sequences, views, output and written
  // rows and visibility; its activations and attention call; its first
  // residual rows; one layer.
  struct ChunkState;
  void index_chunk(const Batch& batch, int32_t begin, int32_t count);
  void set_up_chunk(const CheckedCacheStore& cache, const Batch& batch, int32_t begin,
                    int32_t count, const ForwardOptions& options, ChunkState& chunk);
  Status embed_chunk(const Batch& batch, int32_t begin, const ForwardOptions& options,
                     const ChunkState& chunk);
  Status run_layer(CheckedCacheStore& cache, int layer, const ForwardOptions& options,
                   ChunkState& chunk);
  // Final norm and head over the chunk's output rows (output_rows_), logits
  // to logits_ from row `first_row`; the residual rows to hidden_ if asked.
  Status output_logits(int32_t first_row, std::span<const int32_t> positions,
                       const ForwardOptions& options);
  // dst = decode(encode(src)) through layer l's codec, `vectors` vectors of
  // `width` floats; a raw-f32 codec copies nothing and returns src.
  const float* through_codec(const Compressor& codec, const float* src, int64_t vectors, int width,
                             float* dst);
  // Appends the K/V of chunk tokens `rows` (indices into the chunk that
  // starts at `begin` and holds `count` tokens), sequence by sequence.
  Status append_rows(CheckedCacheStore& cache, const Batch& batch, int32_t begin, int32_t count,
                     std::span<const int32_t> rows);
  // The same for a store whose K/V lie in the device's memory: each
  // sequence's rows in runs of consecutive chunk rows, each run a strided
  // view of k_new_ / v_new_ (nothing gathered, nothing read back).
  Status append_device_rows(CheckedCacheStore& cache, const Batch& batch, int32_t begin,
                            int32_t count, std::span<const int32_t> rows);
  // The error for a non-finite logit: scans the weights to name the cause.
  Status non_finite_logit(float value, int32_t position) const;
  Status check_transient(const CheckedCacheStore& cache, const ForwardOptions& options) const;
  // views_[s] for layer l, with the chunk sequence's transient K/V (through
  // the codec) merged in by position.
  Status build_views(CheckedCacheStore& cache, int layer, bool encoded,
                     const ForwardOptions& options);

  const LoadedModel& model_;
  Backend& backend_;
  int max_batch_;
  std::vector<LayerSpec> specs_;  // what each layer does (layer_specs())
  std::vector<std::unique_ptr<Buffer>> buffers_;
  std::size_t scratch_bytes_ = 0;
  int64_t codec_split_layers_ = 0;
  // Scratch, each sized for max_batch tokens, in the backend's activation
  // memory: `host` is null when that is device memory (device_).
  struct Scratch {
    Buffer* buffer = nullptr;
    float* host = nullptr;
  };
  // f32 [shape] at `first` floats into `area` (host address, buffer, offset).
  static Tensor at(const Scratch& area, int64_t first, std::initializer_list<int64_t> shape);
  Scratch x_;       // residual stream [n, dim]
  Scratch xb_;      // normed input / projection output [n, dim]
  Scratch q_;       // [n, heads, head_dim]
  Scratch attn_;    // attention output [n, heads, head_dim]
  Scratch k_new_;   // K of the fed tokens as stored, all layers [layers, n, kv_heads, head_dim]
  Scratch v_new_;   // V likewise
  Scratch k_seen_;  // one layer's batch K as attention sees it [n, kv_heads, head_dim]
  Scratch v_seen_;  // likewise V
  Scratch gate_;    // [n, hidden]
  Scratch up_;      // [n, hidden]
  Scratch logits_;  // [max_batch, vocab]
  Scratch hidden_;  // [max_batch, dim]: output rows' residual streams
  // Device memory only: the host's copies of what the host reads (the
  // logits, the kept residual rows, the fed K/V the store appends) and of a
  // layer's batch K/V on its way through a codec that has no device kernel.
  bool device_ = false;
  std::vector<float> logits_host_, hidden_host_, codec_in_, codec_out_;
  mutable std::vector<float> k_host_, v_host_;
  // Tokens of the last chunk whose fed K/V k_host_/v_host_ hold (-1: none yet).
  mutable int64_t fed_on_host_ = -1;
  std::vector<float> rope_freqs_host_;  // the model's RoPE factors, read back once
  std::span<const float> rope_freqs_;   // those factors on the host (empty: none)
  float* logits_rows() { return device_ ? logits_host_.data() : logits_.host; }
  float* hidden_rows() { return device_ ? hidden_host_.data() : hidden_.host; }
  const float* fed_k() const { return device_ ? k_host_.data() : k_new_.host; }
  const float* fed_v() const { return device_ ? v_host_.data() : v_new_.host; }
  // The last chunk's fed K/V (n tokens) read back to k_host_/v_host_, once,
  // when the host needs them: a store in host memory, pending_k/v (device
  // memory only).
  Status fed_kv_to_host(int64_t n) const;
  // Whether the device backend runs `codec`'s vectors of `width` floats
  // itself (a named record layout it supports, one vector per head).
  bool device_codec(const Compressor& codec, int width) const;
  // The layer's batch K or V as attention sees it: src itself (a raw-f32
  // codec), else through the codec into dst's memory (the device's kernel,
  // or the host's codec).
  Result<Tensor> batch_through_codec(const Compressor& codec, const Tensor& src, const Scratch& dst,
                                     int64_t vectors, int width);
  std::span<const float> hidden_rows_;
  // What commit_pending may take: the batch size of the last forward, if it
  // ran every layer in one chunk (else 0).
  int32_t pending_tokens_ = 0;
  // Per chunk, sized once for max_batch tokens.
  std::vector<uint64_t> in_batch_;      // visibility bits [n, words]
  std::vector<int32_t> view_of_;        // [n]
  std::vector<SequenceId> chunk_seqs_;  // the distinct sequences of the chunk
  std::vector<KVView> views_;           // one per chunk sequence, the layer at hand
  std::vector<int32_t> output_rows_;    // chunk indices with kOutputLogits
  std::vector<int32_t> write_rows_;     // chunk indices with kWriteKv
  std::vector<int32_t> gather_rows_;    // chunk indices appended to one sequence
  std::vector<BranchId> gather_branches_;
  std::vector<std::pair<SequenceId, int64_t>> appended_;  // sequences appended, lengths before
  std::vector<int32_t> gather_positions_;
  std::vector<float> gather_k_, gather_v_;  // [layers, m, kv_heads, head_dim], m <= max_batch
  std::vector<uint8_t> codec_bytes_;        // one layer's encoded batch K or V, grown once
  // Transient K/V: per chunk sequence the merged segments, and the layer's
  // transient entries through the codec (grown to the longest seen).
  std::vector<std::vector<KVSegment>> merged_;
  std::vector<std::vector<float>> transient_k_seen_, transient_v_seen_;
  Batch chain_;  // for the chain overload
};

}  // namespace tessera
