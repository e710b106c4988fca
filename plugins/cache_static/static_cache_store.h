// The `static` cache store: one preallocated arena per sequence, written in
// place, for edge use (fixed memory, no allocation after allocate()). It keeps
// every token: no window, no eviction, logical length == stored entries.
//
// Per sequence, allocate(seq, max_tokens) reserves, for each layer l,
//   arena      [2 (K, V), kv_heads, max_tokens, vector_bytes(l)]  encoded vectors
// where vector_bytes(l) = layer l's codec's encoded_bytes(1, head_dim) (layers
// kept uncompressed store raw floats), plus
//   positions  [max_tokens]                                        int32
//   scratch    [2, kv_heads, max_tokens, head_dim] f32, only when some layer's
//              codec does not store raw f32 (view() decodes one layer into it)
// append/truncate/copy write into that memory and view() reads it; none of them
// allocates. fork() allocates the new sequence like allocate() and copies the
// entries.
//
// Byte accounting (bytes()), summed over sequences:
//   capacity  everything allocate() reserved: arena + positions + scratch
//   live      bytes holding entries: entries * (sum over layers of 2 * kv_heads *
//             vector_bytes(l) + 4); the scratch is a decode buffer, never live,
//             so `live` shows what the codec saves
//   peak      the most `live` ever was
//
// Views: one segment. For a raw-f32 layer it points straight into the arena
// (stride[0] = max_tokens * head_dim) and stays valid until the next mutation of
// the sequence. Otherwise it points into the sequence's one decode scratch, so it
// is valid until the next mutation or the next view() of the same sequence.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/cache/cache_store.h"
#include "core/compressor/compressor.h"
#include "core/plugin/options.h"

namespace tessera {

class StaticCacheStore final : public CacheStore {
 public:
  StaticCacheStore() = default;
  // The plugin factory's constructor; the store has no options.
  explicit StaticCacheStore(const OptionValues& options);

  // Requires per-vector codecs: encoded_bytes(n, d) == n * encoded_bytes(1, d)
  // and the encoding of a run is the encodings of its vectors one after another,
  // since the arena keeps each vector at its own fixed slot and decodes runs.
  Status init(const CacheGeometry& geometry,
              std::span<const Compressor* const> layer_codecs) override;
  CachePolicy policy() const override { return {}; }
  Status allocate(SequenceId seq, int64_t capacity) override;
  Status release(SequenceId seq) override;
  Status fork(SequenceId src, SequenceId dst) override;

  Status append(SequenceId seq, std::span<const int32_t> positions, const Tensor& k,
                const Tensor& v) override;
  Status truncate(SequenceId seq, int64_t logical_length) override;
  Status copy(SequenceId seq, std::span<const int64_t> src, int64_t dst_start) override;

  Result<KVView> view(SequenceId seq, int layer) override;
  SequenceInfo info(SequenceId seq) const override;
  int64_t stored_length(SequenceId seq, int layer, int kv) const override;
  std::span<const int32_t> positions(SequenceId seq) const override;
  CacheBytes bytes() const override { return bytes_; }

 private:
  struct Sequence {
    int64_t max_tokens = 0;
    int64_t length = 0;
    std::unique_ptr<uint8_t[]> arena;      // per layer: [2, kv_heads, max_tokens, vector_bytes(l)]
    std::unique_ptr<int32_t[]> positions;  // [max_tokens]
    std::unique_ptr<float[]> scratch;      // [2, kv_heads, max_tokens, head_dim] or null
    std::size_t reserved_bytes = 0;        // what this sequence adds to capacity
  };

  Sequence* find(SequenceId seq);
  const Sequence& get(SequenceId seq) const;
  // Start of the vector of (layer, kv, head, token) in the arena.
  uint8_t* slot(const Sequence& s, int layer, int kv, int head, int64_t token) const;
  std::size_t live_bytes(int64_t tokens) const {
    return static_cast<std::size_t>(tokens) * token_bytes_;
  }
  void set_live(std::size_t live);
  Result<Sequence> make_sequence(SequenceId seq, int64_t capacity) const;

  CacheGeometry geometry_;
  std::vector<const Compressor*> codecs_;  // per layer, owned by the engine
  std::vector<std::size_t> vector_bytes_;  // per layer: one encoded head_dim vector
  // Per layer: where it starts in the arena, in bytes per token of capacity.
  std::vector<std::size_t> layer_start_;
  std::vector<bool> raw_f32_;  // per layer
  bool needs_scratch_ = false;
  std::size_t token_bytes_ = 0;  // one token: all layers' K and V plus its position
  std::unordered_map<SequenceId, Sequence> sequences_;
  CacheBytes bytes_;
};

}  // namespace tessera
