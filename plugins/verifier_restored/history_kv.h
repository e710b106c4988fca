// The K/V of a sequence's first tokens, computed by a forward that reads no
// stored entry (a restorer's forward over the history). Exactness needs every
// earlier position's K/V at every layer, so the history is chunked by
// positions: each chunk of at most `chunk` tokens attends to itself and to
// the earlier chunks' K/V, which stay here (as transient K/V) until the step
// ends. The transient peak is therefore the K/V of the whole history plus one
// chunk's activations (the model's forward scratch); `chunk` bounds only the
// latter. docs/kv-restoration.md, "Memory".
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/cache/checked_cache_store.h"
#include "core/cache/transient_kv.h"
#include "core/model/batch.h"
#include "core/model/transformer.h"

namespace tessera {

class HistoryKV {
 public:
  // Sized once for histories of up to `max_tokens` positions of `geometry`,
  // so a lengthening decode does not grow it.
  void reserve(const CacheGeometry& geometry, int64_t max_tokens);

  // Runs `model` over `tokens` (positions 0, 1, ...) of sequence `seq`, which
  // `cache` has allocated (its entries are not read: it gives the codecs and
  // how keys are kept), in chunks of `chunk` tokens. Adds its forwards to
  // `forwards`. The K/V are those CacheStore::append would take.
  Status compute(Transformer& model, CheckedCacheStore& cache, SequenceId seq,
                 std::span<const int32_t> tokens, int chunk, int64_t& forwards);

  int64_t count() const { return count_; }
  int64_t layer_stride() const { return count_ * kv_width_; }
  // f32 [layers, count, kv_heads, head_dim]: modifiable (a projection maps
  // them in place).
  float* k() { return k_.data(); }
  float* v() { return v_.data(); }
  Tensor k_tensor() { return tensor(k_); }
  Tensor v_tensor() { return tensor(v_); }
  // Positions [begin, end) as transient K/V of `seq` (begin <= end <= count).
  TransientKV transient(SequenceId seq, int64_t begin, int64_t end) const;
  // Appends entries [begin, count) to `cache` for `seq` (positions begin..),
  // consuming them: with begin > 0 they are packed in place first.
  Status append_to(CheckedCacheStore& cache, SequenceId seq, int64_t begin);
  // Bytes the computed K/V occupy.
  std::size_t bytes() const {
    return 2 * static_cast<std::size_t>(layers_ * count_ * kv_width_) * sizeof(float);
  }

 private:
  void resize(int64_t count);
  Tensor tensor(std::vector<float>& data) const;

  int layers_ = 0;
  int kv_heads_ = 0;
  int head_dim_ = 0;
  int64_t kv_width_ = 0;
  int64_t count_ = 0;
  std::vector<float> k_, v_;
  std::vector<int32_t> positions_;  // 0, 1, 2, ...
  Batch batch_;
};

}  // namespace tessera
