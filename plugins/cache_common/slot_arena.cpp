#include "plugins/cache_common/slot_arena.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <vector>

#include "core/backend/backend.h"

namespace tessera {

bool KVPlacement::offer(Backend& backend, const CodecLayout& layout) {
  device_ = nullptr;
  const CacheGeometry& g = layout.geometry();
  for (int l = 0; l < g.layers; ++l)
    if (!backend_keeps_kv(backend, layout.codec(l), g.heads_per_vector, g.head_dim)) return false;
  device_ = &backend;
  return true;
}

namespace {

// Zeroes a device arena's K/V, a chunk at a time (the host's arena is
// value-initialised; this keeps a device's as deterministic).
Status zero_device(Backend& device, Buffer& buffer, std::size_t bytes) {
  static constexpr std::size_t kChunk = std::size_t{1} << 20;
  const std::vector<std::byte> zeros(std::min(bytes, kChunk));
  for (std::size_t done = 0; done < bytes; done += kChunk) {
    const std::size_t chunk = std::min(kChunk, bytes - done);
    RETURN_IF_ERROR(
        device.write(Tensor::in_buffer(buffer, done, DType::kU8, {static_cast<int64_t>(chunk)}),
                     std::span(zeros.data(), chunk)));
  }
  return ok_status();
}

}  // namespace

Result<SlotArena> SlotArena::create(const CodecLayout& layout, int64_t slots,
                                    const std::string& what, bool keep_branches, Backend* device) {
  SlotArena arena;
  std::size_t bytes = 0;
  if (slots <= 0 ||
      __builtin_mul_overflow(static_cast<std::size_t>(slots), layout.token_bytes(), &bytes))
    return resource_exhausted(what + ": " + std::to_string(slots) + " slots do not fit in memory");
  try {
    if (device != nullptr) {
      auto buffer = device->allocate(bytes, BufferUsage::kKV);
      if (!buffer.ok())
        return Status(buffer.status().code(),
                      what + ": reserving " + std::to_string(slots) + " slots (" +
                          std::to_string(bytes) +
                          " bytes) in device memory: " + buffer.status().message());
      arena.buffer_ = std::move(buffer).value();
      arena.device_ = device;
      RETURN_IF_ERROR(zero_device(*device, *arena.buffer_, bytes).with_context(what));
    } else {
      // Value-initialised (zeroed): touches every page now, so no later step
      // faults memory in, and the contents are deterministic.
      arena.data_ = std::make_unique<uint8_t[]>(bytes);
    }
    arena.positions_ = std::make_unique<int32_t[]>(static_cast<std::size_t>(slots));
    if (keep_branches)
      arena.branches_ = std::make_unique<BranchId[]>(static_cast<std::size_t>(slots));
  } catch (const std::bad_alloc&) {
    return resource_exhausted(what + ": out of memory reserving " + std::to_string(slots) +
                              " slots (" + std::to_string(bytes) + " bytes)");
  }
  arena.slots_ = slots;
  arena.bytes_ = bytes;
  return arena;
}

std::size_t SlotArena::vector_offset(const CodecLayout& layout, int layer, int kv, int vector_index,
                                     int64_t slot) const {
  const auto vectors = static_cast<std::size_t>(layout.vectors_per_token());
  const std::size_t row =
      (static_cast<std::size_t>(kv) * vectors + static_cast<std::size_t>(vector_index)) *
          static_cast<std::size_t>(slots_) +
      static_cast<std::size_t>(slot);
  return layout.layer_start(layer) * static_cast<std::size_t>(slots_) +
         row * layout.vector_bytes(layer);
}

Tensor SlotArena::elements(DType dtype, std::size_t byte_offset,
                           std::initializer_list<int64_t> shape,
                           std::initializer_list<int64_t> strides) const {
  Tensor base;
  if (buffer_) {
    base = Tensor::in_buffer(*buffer_, byte_offset, dtype, {1});
  } else {
    base = Tensor::contiguous(data_.get() + byte_offset, dtype, {1});
  }
  return base.view(0, shape, strides);
}

bool SlotArena::uniform_vectors(const CodecLayout& layout) {
  for (int l = 1; l < layout.geometry().layers; ++l)
    if (layout.vector_bytes(l) != layout.vector_bytes(0)) return false;
  return true;
}

uint8_t* SlotArena::vector(const CodecLayout& layout, int layer, int kv, int vector_index,
                           int64_t slot) const {
  TESSERA_CHECK(data_ != nullptr, "SlotArena::vector: the K/V are in device memory");
  return data_.get() + vector_offset(layout, layer, kv, vector_index, slot);
}

void SlotArena::set_meta(int64_t slot, int32_t position, BranchId branch) {
  positions_[static_cast<std::size_t>(slot)] = position;
  TESSERA_CHECK(branch == 0 || branches_, "SlotArena: a branch for an arena without branches");
  if (branches_) {
    branches_[static_cast<std::size_t>(slot)] = branch;
    any_branch_ = any_branch_ || branch != 0;
  }
}

void SlotArena::copy_meta(int64_t from, SlotArena& destination, int64_t to) const {
  destination.positions_[static_cast<std::size_t>(to)] = positions_[static_cast<std::size_t>(from)];
  const BranchId branch = branches_ ? branches_[static_cast<std::size_t>(from)] : BranchId{0};
  TESSERA_CHECK(branch == 0 || destination.branches_,
                "SlotArena: copying a branch into an arena without branches");
  if (destination.branches_) {
    destination.branches_[static_cast<std::size_t>(to)] = branch;
    destination.any_branch_ = destination.any_branch_ || branch != 0;
  }
}

Status SlotArena::write(const CodecLayout& layout, const Tensor& k, const Tensor& v, int64_t row,
                        int64_t slot, int32_t position, BranchId branch) {
  const CacheGeometry& g = layout.geometry();
  const Tensor* kv_in[2] = {&k, &v};
  // A device arena copies (write_rows does it for one row as for many).
  if (device_ != nullptr)
    return write_rows(layout, k, v, row, 1, slot, std::span(&position, 1), std::span(&branch, 1));
  for (int l = 0; l < g.layers; ++l)
    for (int kv = 0; kv < 2; ++kv) {
      const Tensor& t = *kv_in[kv];
      // A vector of several heads reads them as one run (append's contract:
      // an entry's heads are contiguous when heads_per_vector > 1).
      for (int i = 0; i < layout.vectors_per_token(); ++i) {
        const float* src = t.f32() + l * t.stride[0] + row * t.stride[1] +
                           static_cast<int64_t>(i) * g.heads_per_vector * t.stride[2];
        layout.codec(l).encode(src, 1, g.vector_width(), vector(layout, l, kv, i, slot));
      }
    }
  set_meta(slot, position, branch);
  return ok_status();
}

Status SlotArena::write_rows(const CodecLayout& layout, const Tensor& k, const Tensor& v,
                             int64_t first_row, int64_t count, int64_t first_slot,
                             std::span<const int32_t> positions,
                             std::span<const BranchId> branches) {
  const auto branch = [&](int64_t i) {
    return branches.empty() ? BranchId{0} : branches[static_cast<std::size_t>(i)];
  };
  if (device_ == nullptr) {
    for (int64_t i = 0; i < count; ++i)
      RETURN_IF_ERROR(write(layout, k, v, first_row + i, first_slot + i,
                            positions[static_cast<std::size_t>(i)], branch(i)));
    return ok_status();
  }
  RETURN_IF_ERROR(write_device_rows(layout, k, v, first_row, count, first_slot));
  for (int64_t i = 0; i < count; ++i)
    set_meta(first_slot + i, positions[static_cast<std::size_t>(i)], branch(i));
  return ok_status();
}

Status SlotArena::write_device_rows(const CodecLayout& layout, const Tensor& k, const Tensor& v,
                                    int64_t first_row, int64_t count, int64_t first_slot) {
  const CacheGeometry& g = layout.geometry();
  const int64_t width = g.vector_width();
  const int64_t head_stride = g.heads_per_vector == 1 ? slots_ * g.head_dim : g.head_dim;
  const Tensor* kv_in[2] = {&k, &v};
  // Runs of layers alike (raw, or one record layout): one copy or one encode
  // per K and V for each run (every layer in one, as a rule).
  for (int first = 0; first < g.layers;) {
    const KVRecordLayout records = layout.codec(first).record_layout(width);
    const bool raw = layout.raw(first);
    int end = first + 1;
    while (end < g.layers && layout.raw(end) == raw &&
           layout.vector_bytes(end) == layout.vector_bytes(first) &&
           (raw || layout.codec(end).record_layout(width).format == records.format))
      ++end;
    const int64_t layers = end - first;
    const auto bytes = static_cast<int64_t>(layout.vector_bytes(first));
    // Consecutive layers alike lie one layer's rows apart.
    const int64_t layer_stride = 2 * layout.vectors_per_token() * slots_ * bytes;
    for (int kv = 0; kv < 2; ++kv) {
      const Tensor& t = *kv_in[kv];
      // [layers, count, kv_heads, head_dim]: the run's rows -> its slots.
      const Tensor src = t.view(first * t.stride[0] + first_row * t.stride[1],
                                {layers, count, g.kv_heads, g.head_dim},
                                {t.stride[0], t.stride[1], t.stride[2], 1});
      const std::size_t at = vector_offset(layout, first, kv, 0, first_slot);
      if (raw) {
        RETURN_IF_ERROR(
            device_->copy(src, elements(DType::kF32, at, {layers, count, g.kv_heads, g.head_dim},
                                        {layer_stride / 4, width, head_stride, 1})));
      } else {
        RETURN_IF_ERROR(
            device_->encode_kv(src,
                               elements(DType::kU8, at, {layers, count, g.kv_heads, bytes},
                                        {layer_stride, bytes, slots_ * bytes, 1}),
                               records));
      }
    }
    first = end;
  }
  return ok_status();
}

Status SlotArena::copy_device_slots(const CodecLayout& layout, int64_t from, int64_t count,
                                    SlotArena& destination, int64_t to) const {
  const CacheGeometry& g = layout.geometry();
  // Each vector's run of `count` slots (layers x K/V x vectors rows of
  // count vectors' bytes): one strided copy when the layers' vectors are
  // alike, else one a layer.
  const bool uniform = uniform_vectors(layout);
  const int64_t rows_per_layer = int64_t{2} * layout.vectors_per_token();
  for (int l = 0; l < (uniform ? 1 : g.layers); ++l) {
    const int64_t rows = uniform ? rows_per_layer * g.layers : rows_per_layer;
    const auto bytes = static_cast<int64_t>(layout.vector_bytes(l));
    RETURN_IF_ERROR(device_->copy(
        elements(DType::kU8, vector_offset(layout, l, 0, 0, from), {rows, count * bytes},
                 {slots_ * bytes, 1}),
        destination.elements(DType::kU8, destination.vector_offset(layout, l, 0, 0, to),
                             {rows, count * bytes}, {destination.slots_ * bytes, 1})));
  }
  return ok_status();
}

Result<std::size_t> SlotArena::copy_slot(const CodecLayout& layout, int64_t from,
                                         SlotArena& destination, int64_t to) const {
  const CacheGeometry& g = layout.geometry();
  if (this == &destination && from == to) return std::size_t{0};
  TESSERA_CHECK(device_ == destination.device_, "SlotArena: a copy between host and device arenas");
  if (device_ != nullptr) {
    RETURN_IF_ERROR(copy_device_slots(layout, from, 1, destination, to));
  } else {
    for (int l = 0; l < g.layers; ++l)
      for (int kv = 0; kv < 2; ++kv)
        for (int i = 0; i < layout.vectors_per_token(); ++i)
          std::memcpy(destination.vector(layout, l, kv, i, to), vector(layout, l, kv, i, from),
                      layout.vector_bytes(l));
  }
  copy_meta(from, destination, to);
  return layout.token_bytes() + destination.meta_bytes_per_slot();
}

Result<std::size_t> SlotArena::copy_first(const CodecLayout& layout, int64_t count,
                                          SlotArena& destination) const {
  if (device_ == nullptr || count == 0) {
    std::size_t copied = 0;
    for (int64_t s = 0; s < count; ++s) {
      ASSIGN_OR_RETURN(const std::size_t bytes, copy_slot(layout, s, destination, s));
      copied += bytes;
    }
    return copied;
  }
  TESSERA_CHECK(device_ == destination.device_, "SlotArena: a copy between host and device arenas");
  RETURN_IF_ERROR(copy_device_slots(layout, 0, count, destination, 0));
  for (int64_t s = 0; s < count; ++s) copy_meta(s, destination, s);
  return static_cast<std::size_t>(count) *
         (layout.token_bytes() + destination.meta_bytes_per_slot());
}

KVSegment SlotArena::segment(const CodecLayout& layout, int layer, int64_t first, int64_t count,
                             float* scratch, int64_t scratch_slots, int64_t scratch_first) const {
  const CacheGeometry& g = layout.geometry();
  const int64_t hd = g.head_dim;
  const int64_t width = g.vector_width();
  // Where head h + 1 starts after head h, given `slots` entries per vector
  // run: the next run for one vector per head, the next head_dim floats of
  // the entry for one vector per token.
  const auto head_stride = [&](int64_t slots) { return g.heads_per_vector == 1 ? slots * hd : hd; };
  KVSegment segment;
  segment.count = count;
  segment.positions = positions_.get() + first;
  if (any_branch_) segment.branches = branches_.get() + first;
  Tensor* views[2] = {&segment.k, &segment.v};
  for (int kv = 0; kv < 2; ++kv) {
    Tensor& t = *views[kv];
    t.dtype = DType::kF32;
    t.rank = 3;
    t.shape = {g.kv_heads, count, hd, 0};
    if (layout.raw(layer)) {
      // The arena holds the floats themselves (host or device memory).
      t = elements(DType::kF32, vector_offset(layout, layer, kv, 0, first), {g.kv_heads, count, hd},
                   {head_stride(slots_), width, 1});
    } else if (device_ != nullptr) {
      // Records in the device's memory, which its attention decodes.
      const auto bytes = static_cast<int64_t>(layout.vector_bytes(layer));
      t = elements(DType::kU8, vector_offset(layout, layer, kv, 0, first),
                   {g.kv_heads, count, bytes}, {slots_ * bytes, bytes, 1});
      segment.codec = &layout.codec(layer);
    } else {
      // Vector i's run decodes to scratch_slots * width floats of its own.
      float* base = scratch + kv * g.kv_heads * scratch_slots * hd;
      for (int i = 0; i < layout.vectors_per_token(); ++i)
        layout.codec(layer).decode(vector(layout, layer, kv, i, first), count, g.vector_width(),
                                   base + (i * scratch_slots + scratch_first) * width);
      t.data = base + scratch_first * width;
      t.stride = {head_stride(scratch_slots), width, 1, 0};
    }
  }
  return segment;
}

KVSegment SlotArena::encoded_segment(const CodecLayout& layout, int layer, int64_t first,
                                     int64_t count) const {
  if (layout.raw(layer) || device_ != nullptr)
    return segment(layout, layer, first, count, nullptr, 0, 0);
  const CacheGeometry& g = layout.geometry();
  KVSegment segment;
  segment.count = count;
  segment.positions = positions_.get() + first;
  if (any_branch_) segment.branches = branches_.get() + first;
  for (Tensor* t : {&segment.k, &segment.v}) {
    t->dtype = DType::kF32;
    t->rank = 3;
    t->shape = {g.kv_heads, count, g.head_dim, 0};
  }
  segment.codec = &layout.codec(layer);
  segment.k_records = vector(layout, layer, 0, 0, first);
  segment.v_records = vector(layout, layer, 1, 0, first);
  segment.record_head_stride = static_cast<std::size_t>(slots_) * layout.vector_bytes(layer);
  segment.heads_per_record = g.heads_per_vector;
  return segment;
}

}  // namespace tessera
