// Owns the K/V memory of every sequence. The core reaches a store only through
// CheckedCacheStore, which validates arguments and checks the invariants after
// every mutation, so each plugin gets those checks for free:
//   INV-1  for every layer, the K length and the V length equal the token count;
//   INV-2  stored positions never decrease.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "core/compressor/compressor.h"
#include "core/plugin/plugin_object.h"
#include "core/status/status.h"
#include "core/tensor/tensor.h"

namespace tessera {

using SequenceId = int32_t;

struct CacheGeometry {
  int layers = 0;
  int kv_heads = 0;
  int head_dim = 0;
};

struct CacheBytes {
  std::size_t live = 0;      // bytes holding tokens now
  std::size_t capacity = 0;  // bytes reserved
  std::size_t peak = 0;      // most bytes ever live
};

// K and V of one layer, f32 [kv_heads, length, head_dim]. Valid until the next
// mutation of the sequence; a store that decodes into one scratch buffer per
// sequence (see its header) also reuses it at the next view() of that sequence.
struct KVView {
  Tensor k;
  Tensor v;
};

class CacheStore : public PluginObject {
 public:
  // Called once, before anything else. The store owns the codec from then on.
  virtual Status init(const CacheGeometry& geometry, std::unique_ptr<Compressor> codec) = 0;
  // Reserves room for `capacity` tokens. All memory a sequence will use is taken here.
  virtual Status allocate(SequenceId seq, int64_t capacity) = 0;
  virtual Status release(SequenceId seq) = 0;

  // Appends n tokens. k and v are f32 [layers, n, kv_heads, head_dim].
  virtual Status append(SequenceId seq, std::span<const int32_t> positions, const Tensor& k,
                        const Tensor& v) = 0;
  // Keeps the first n_tokens.
  virtual Status truncate(SequenceId seq, int64_t n_tokens) = 0;
  // Moves token src[j] to slot dst_start + j for every layer (K, V and position),
  // then keeps dst_start + src.size() tokens. src must be strictly increasing
  // with src[j] >= dst_start + j (an accepted path).
  virtual Status copy(SequenceId seq, std::span<const int64_t> src, int64_t dst_start) = 0;

  virtual Result<KVView> view(SequenceId seq, int layer) = 0;
  virtual int64_t token_count(SequenceId seq) const = 0;
  virtual int64_t capacity(SequenceId seq) const = 0;
  // Stored K (kv = 0) or V (kv = 1) length of one layer; INV-1 compares it.
  virtual int64_t stored_length(SequenceId seq, int layer, int kv) const = 0;
  virtual std::span<const int32_t> positions(SequenceId seq) const = 0;
  virtual CacheBytes bytes() const = 0;
};

}  // namespace tessera
