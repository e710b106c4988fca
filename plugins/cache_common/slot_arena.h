// Encoded K/V for a fixed number of slots of one sequence (or one block of a
// paged store): [layer][K, V][vector][slot][vector_bytes(layer)], `vector`
// being the kv head (or 0 alone when a codec vector spans a token's heads),
// each vector at a slot of its own, plus the position of each slot and, for a
// store that keeps branches (BIM), its branch. Reserved and zeroed when
// created; nothing after that allocates.
//
// The K/V lie in host memory, or in a device's (a backend's BufferUsage::kKV
// buffer) when the store's KVPlacement says so: then every layer stores raw
// f32 or records of a layout the backend reads, the host never touches the
// bytes, and write / copy_slot / copy_first are Backend::copy and
// Backend::encode_kv calls (strided views, two or one per call) the device
// records with the forward. Positions and branches stay on the host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "core/backend/buffer.h"
#include "core/cache/kv_view.h"
#include "core/status/status.h"
#include "core/tensor/tensor.h"
#include "plugins/cache_common/codec_layout.h"

namespace tessera {

class Backend;

// Where a store's arenas keep their K/V (docs/backends.md, step 2): in the
// memory of the backend the engine offers (CacheStore::use_backend) when that
// memory is a device's and every layer stores raw f32 or records the backend
// reads (Backend::supports_kv_records, one vector per kv head), else on the
// host (a codec without device kernels: its layers are split at the codec
// point).
class KVPlacement {
 public:
  // The store's use_backend(), after init(): whether its K/V go to `backend`.
  bool offer(Backend& backend, const CodecLayout& layout);
  // The backend arenas allocate in, or null for host memory.
  Backend* device() const { return device_; }

 private:
  Backend* device_ = nullptr;
};

class SlotArena {
 public:
  SlotArena() = default;
  // Bytes of a slot's position, and of its branch when kept.
  static constexpr std::size_t kPositionBytes = sizeof(int32_t);
  static constexpr std::size_t kBranchBytes = sizeof(BranchId);

  // ResourceExhausted when the memory cannot be had; `what` names the owner.
  // With `keep_branches` each slot also holds a branch id. With `device`
  // (KVPlacement::device()) the K/V lie in its memory.
  static Result<SlotArena> create(const CodecLayout& layout, int64_t slots, const std::string& what,
                                  bool keep_branches = false, Backend* device = nullptr);

  int64_t slots() const { return slots_; }
  // Bytes of the slots' metadata: the position, and the branch when kept.
  std::size_t meta_bytes_per_slot() const {
    return kPositionBytes + (branches_ ? kBranchBytes : 0);
  }
  std::size_t reserved_bytes() const {
    return bytes_ + static_cast<std::size_t>(slots_) * meta_bytes_per_slot();
  }
  int32_t* positions() const { return positions_.get(); }
  // Each slot's branch, or null when branches are not kept.
  BranchId* branches() const { return branches_.get(); }
  // Whether a slot was ever written or copied with a nonzero branch (views
  // hand out the branches only then, so unbranched attention tests nothing).
  bool any_branch() const { return any_branch_; }

  bool on_device() const { return device_ != nullptr; }
  // A vector's bytes (host memory only).
  uint8_t* vector(const CodecLayout& layout, int layer, int kv, int vector_index,
                  int64_t slot) const;
  // Encodes row `row` of k and v (f32 [layers, n, kv_heads, head_dim]; on a
  // device arena, in the device's memory or the host's) into `slot`. A branch
  // other than 0 needs an arena that keeps branches. A device that refuses
  // the copy is an error (nothing is written then).
  Status write(const CodecLayout& layout, const Tensor& k, const Tensor& v, int64_t row,
               int64_t slot, int32_t position, BranchId branch = 0);
  // Rows [first_row, first_row + count) of k and v into slots [first_slot,
  // first_slot + count), at `positions` (count of them) and `branches`
  // (count, or empty: all 0). One strided copy for K and one for V on a
  // device arena (a run of rows costs what one row does); write() per row
  // on the host.
  Status write_rows(const CodecLayout& layout, const Tensor& k, const Tensor& v, int64_t first_row,
                    int64_t count, int64_t first_slot, std::span<const int32_t> positions,
                    std::span<const BranchId> branches);
  // Slot `to` of `destination` (in the same memory: host, or the same
  // device) becomes a copy of slot `from` of this arena (K, V of every layer,
  // the position and the branch). The two may be the same arena. Returns the
  // entry bytes copied.
  Result<std::size_t> copy_slot(const CodecLayout& layout, int64_t from, SlotArena& destination,
                                int64_t to) const;
  // Copies slots [0, count) into the same slots of `destination`, which has
  // at least as many (and keeps branches if needed). Returns the entry bytes
  // copied.
  Result<std::size_t> copy_first(const CodecLayout& layout, int64_t count,
                                 SlotArena& destination) const;

  // Slots [first, first + count) of a layer as a segment: a view into the
  // arena for a raw-f32 layer (a device tensor on a device arena), the
  // device records (KVSegment::device_records) of an encoded layer on a
  // device arena, else decoded into `scratch` (2 *
  // kv_heads * scratch_slots * head_dim floats: per K/V, a run of scratch_slots decoded vectors per
  // codec vector of a token) at slot offset `scratch_first`.
  KVSegment segment(const CodecLayout& layout, int layer, int64_t first, int64_t count,
                    float* scratch, int64_t scratch_slots, int64_t scratch_first) const;
  // The same slots as records for the layer's codec (no decoding); a raw-f32
  // layer is the plain view.
  KVSegment encoded_segment(const CodecLayout& layout, int layer, int64_t first,
                            int64_t count) const;

 private:
  // Where a vector starts, in bytes from the arena's first.
  std::size_t vector_offset(const CodecLayout& layout, int layer, int kv, int vector_index,
                            int64_t slot) const;
  // Elements of the arena from `byte_offset` on (f32 floats or u8 bytes),
  // as a view of `shape` with `strides` (host or device memory).
  Tensor elements(DType dtype, std::size_t byte_offset, std::initializer_list<int64_t> shape,
                  std::initializer_list<int64_t> strides) const;
  // Whether every layer's vectors have the same bytes (then a slot's vectors
  // of all layers lie a vector run apart, as one strided view).
  static bool uniform_vectors(const CodecLayout& layout);
  // Slots [from, from + count) -> destination's [to, to + count) on a device
  // arena: the K/V bytes only.
  Status copy_device_slots(const CodecLayout& layout, int64_t from, int64_t count,
                           SlotArena& destination, int64_t to) const;
  // write_rows on a device arena: copies for raw layers, encode_kv for the others.
  Status write_device_rows(const CodecLayout& layout, const Tensor& k, const Tensor& v,
                           int64_t first_row, int64_t count, int64_t first_slot);
  void set_meta(int64_t slot, int32_t position, BranchId branch);
  void copy_meta(int64_t from, SlotArena& destination, int64_t to) const;

  int64_t slots_ = 0;
  std::size_t bytes_ = 0;
  std::unique_ptr<uint8_t[]> data_;
  Backend* device_ = nullptr;
  std::unique_ptr<Buffer> buffer_;  // the K/V on a device
  std::unique_ptr<int32_t[]> positions_;
  std::unique_ptr<BranchId[]> branches_;
  bool any_branch_ = false;
};

}  // namespace tessera
