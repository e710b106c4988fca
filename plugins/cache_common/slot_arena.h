// Encoded K/V for a fixed number of slots of one sequence (or one block of a
// paged store): [layer][K, V][vector][slot][vector_bytes(layer)], `vector`
// being the kv head (or 0 alone when a codec vector spans a token's heads),
// each vector at a slot of its own, plus the position of each slot. Reserved and
// zeroed when created; nothing after that allocates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/cache/kv_view.h"
#include "core/status/status.h"
#include "core/tensor/tensor.h"
#include "plugins/cache_common/codec_layout.h"

namespace tessera {

class SlotArena {
 public:
  SlotArena() = default;
  // ResourceExhausted when the memory cannot be had; `what` names the owner.
  static Result<SlotArena> create(const CodecLayout& layout, int64_t slots,
                                  const std::string& what);

  int64_t slots() const { return slots_; }
  std::size_t reserved_bytes() const { return bytes_ + static_cast<std::size_t>(slots_) * 4; }
  int32_t* positions() const { return positions_.get(); }

  uint8_t* vector(const CodecLayout& layout, int layer, int kv, int vector_index,
                  int64_t slot) const;
  // Encodes row `row` of k and v (f32 [layers, n, kv_heads, head_dim]) into `slot`.
  void write(const CodecLayout& layout, const Tensor& k, const Tensor& v, int64_t row, int64_t slot,
             int32_t position);
  // Slot `to` of `destination` becomes a copy of slot `from` of this arena (K,
  // V of every layer, and the position). The two may be the same arena.
  void copy_slot(const CodecLayout& layout, int64_t from, const SlotArena& destination,
                 int64_t to) const;
  // Copies every slot into `destination`, which has at least as many.
  void copy_all(const CodecLayout& layout, const SlotArena& destination) const;

  // Slots [first, first + count) of a layer as a segment: a view into the
  // arena for a raw-f32 layer, else decoded into `scratch` (2 * kv_heads *
  // scratch_slots * head_dim floats: per K/V, a run of scratch_slots decoded
  // vectors per codec vector of a token) at slot offset `scratch_first`.
  KVSegment segment(const CodecLayout& layout, int layer, int64_t first, int64_t count,
                    float* scratch, int64_t scratch_slots, int64_t scratch_first) const;
  // The same slots as records for the layer's codec (no decoding); a raw-f32
  // layer is the plain view.
  KVSegment encoded_segment(const CodecLayout& layout, int layer, int64_t first,
                            int64_t count) const;

 private:
  int64_t slots_ = 0;
  std::size_t bytes_ = 0;
  std::unique_ptr<uint8_t[]> data_;
  std::unique_ptr<int32_t[]> positions_;
};

}  // namespace tessera
