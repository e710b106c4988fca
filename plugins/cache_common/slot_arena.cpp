#include "plugins/cache_common/slot_arena.h"

#include <cstring>
#include <new>

namespace tessera {

Result<SlotArena> SlotArena::create(const CodecLayout& layout, int64_t slots,
                                    const std::string& what) {
  SlotArena arena;
  std::size_t bytes = 0;
  if (slots <= 0 ||
      __builtin_mul_overflow(static_cast<std::size_t>(slots), layout.token_bytes(), &bytes))
    return resource_exhausted(what + ": " + std::to_string(slots) + " slots do not fit in memory");
  try {
    // Value-initialised (zeroed): touches every page now, so no later step
    // faults memory in, and the contents are deterministic.
    arena.data_ = std::make_unique<uint8_t[]>(bytes);
    arena.positions_ = std::make_unique<int32_t[]>(static_cast<std::size_t>(slots));
  } catch (const std::bad_alloc&) {
    return resource_exhausted(what + ": out of memory reserving " + std::to_string(slots) +
                              " slots (" + std::to_string(bytes) + " bytes)");
  }
  arena.slots_ = slots;
  arena.bytes_ = bytes;
  return arena;
}

uint8_t* SlotArena::vector(const CodecLayout& layout, int layer, int kv, int head,
                           int64_t slot) const {
  const auto heads = static_cast<std::size_t>(layout.geometry().kv_heads);
  const std::size_t row = (static_cast<std::size_t>(kv) * heads + static_cast<std::size_t>(head)) *
                              static_cast<std::size_t>(slots_) +
                          static_cast<std::size_t>(slot);
  return data_.get() + layout.layer_start(layer) * static_cast<std::size_t>(slots_) +
         row * layout.vector_bytes(layer);
}

void SlotArena::write(const CodecLayout& layout, const Tensor& k, const Tensor& v, int64_t row,
                      int64_t slot, int32_t position) {
  const CacheGeometry& g = layout.geometry();
  const Tensor* kv_in[2] = {&k, &v};
  for (int l = 0; l < g.layers; ++l)
    for (int kv = 0; kv < 2; ++kv) {
      const Tensor& t = *kv_in[kv];
      for (int h = 0; h < g.kv_heads; ++h) {
        const float* src = t.f32() + l * t.stride[0] + row * t.stride[1] + h * t.stride[2];
        layout.codec(l).encode(src, 1, g.head_dim, vector(layout, l, kv, h, slot));
      }
    }
  positions_[static_cast<std::size_t>(slot)] = position;
}

void SlotArena::copy_slot(const CodecLayout& layout, int64_t from, const SlotArena& destination,
                          int64_t to) const {
  const CacheGeometry& g = layout.geometry();
  if (this == &destination && from == to) return;
  for (int l = 0; l < g.layers; ++l)
    for (int kv = 0; kv < 2; ++kv)
      for (int h = 0; h < g.kv_heads; ++h)
        std::memcpy(destination.vector(layout, l, kv, h, to), vector(layout, l, kv, h, from),
                    layout.vector_bytes(l));
  destination.positions_[static_cast<std::size_t>(to)] = positions_[static_cast<std::size_t>(from)];
}

void SlotArena::copy_all(const CodecLayout& layout, const SlotArena& destination) const {
  if (destination.slots_ == slots_) {
    std::memcpy(destination.data_.get(), data_.get(), bytes_);
    std::memcpy(destination.positions_.get(), positions_.get(),
                static_cast<std::size_t>(slots_) * sizeof(int32_t));
    return;
  }
  for (int64_t s = 0; s < slots_; ++s) copy_slot(layout, s, destination, s);
}

KVSegment SlotArena::segment(const CodecLayout& layout, int layer, int64_t first, int64_t count,
                             float* scratch, int64_t scratch_slots, int64_t scratch_first) const {
  const CacheGeometry& g = layout.geometry();
  const int64_t hd = g.head_dim;
  KVSegment segment;
  segment.count = count;
  segment.positions = positions_.get() + first;
  Tensor* views[2] = {&segment.k, &segment.v};
  for (int kv = 0; kv < 2; ++kv) {
    Tensor& t = *views[kv];
    t.dtype = DType::kF32;
    t.rank = 3;
    t.shape = {g.kv_heads, count, hd, 0};
    if (layout.raw(layer)) {
      // The arena holds the floats themselves: [kv_heads, slots, head_dim].
      t.data = vector(layout, layer, kv, 0, first);
      t.stride = {slots_ * hd, hd, 1, 0};
    } else {
      float* base = scratch + (kv * g.kv_heads * scratch_slots + scratch_first) * hd;
      for (int h = 0; h < g.kv_heads; ++h)
        layout.codec(layer).decode(vector(layout, layer, kv, h, first), count, g.head_dim,
                                   base + h * scratch_slots * hd);
      t.data = base;
      t.stride = {scratch_slots * hd, hd, 1, 0};
    }
  }
  return segment;
}

KVSegment SlotArena::encoded_segment(const CodecLayout& layout, int layer, int64_t first,
                                     int64_t count) const {
  if (layout.raw(layer)) return segment(layout, layer, first, count, nullptr, 0, 0);
  const CacheGeometry& g = layout.geometry();
  KVSegment segment;
  segment.count = count;
  segment.positions = positions_.get() + first;
  for (Tensor* t : {&segment.k, &segment.v}) {
    t->dtype = DType::kF32;
    t->rank = 3;
    t->shape = {g.kv_heads, count, g.head_dim, 0};
  }
  segment.codec = &layout.codec(layer);
  segment.k_records = vector(layout, layer, 0, 0, first);
  segment.v_records = vector(layout, layer, 1, 0, first);
  segment.record_head_stride = static_cast<std::size_t>(slots_) * layout.vector_bytes(layer);
  return segment;
}

}  // namespace tessera
