#include "plugins/cache_paged/paged_store.h"

#include <algorithm>
#include <new>
#include <string>

namespace tessera {
namespace {

std::string seq_name(SequenceId seq) {
  return "sequence " + std::to_string(seq);
}

}  // namespace

PagedCacheStore::PagedCacheStore(const OptionValues& options)
    : PagedCacheStore(options.get_int("block_size")) {}

PagedCacheStore::PagedCacheStore(int64_t block_size) : block_size_(block_size) {}

Status PagedCacheStore::init(const CacheGeometry& geometry,
                             std::span<const Compressor* const> layer_codecs) {
  if (block_size_ < 1)
    return invalid_argument("paged cache: block_size must be at least 1, got " +
                            std::to_string(block_size_));
  return layout_.init(geometry, layer_codecs, "paged cache");
}

Status PagedCacheStore::ensure_free(int64_t count) {
  while (static_cast<int64_t>(free_.size()) - promised_ < count) {
    ASSIGN_OR_RETURN(SlotArena arena,
                     SlotArena::create(layout_, block_size_, "paged cache: block",
                                       /*keep_branches=*/true, placement_.device()));
    bytes_.capacity += arena.reserved_bytes();
    blocks_.push_back(Block{std::move(arena), 0, 0});
    free_.push_back(static_cast<int32_t>(blocks_.size() - 1));
  }
  return ok_status();
}

Result<PagedCacheStore::Sequence> PagedCacheStore::make_sequence(SequenceId seq, int64_t capacity,
                                                                 int64_t promised) {
  const CacheGeometry& g = layout_.geometry();
  Sequence s;
  s.capacity = capacity;
  s.promised = promised;
  const auto blocks = static_cast<std::size_t>(blocks_for(capacity));
  std::size_t scratch_floats = 0;
  try {
    s.table.reserve(blocks);
    s.segments.reserve(blocks);
    s.ordered.reserve(static_cast<std::size_t>(capacity));
    s.branch_of.reserve(static_cast<std::size_t>(capacity));
    // Host records decode into this scratch; a device decodes its own.
    if (layout_.any_encoded() && placement_.device() == nullptr) {
      scratch_floats = 2 * static_cast<std::size_t>(g.kv_heads) *
                       static_cast<std::size_t>(capacity) * static_cast<std::size_t>(g.head_dim);
      s.scratch = std::make_unique<float[]>(scratch_floats);
    }
  } catch (const std::bad_alloc&) {
    return resource_exhausted("paged cache: out of memory for the tables of " + seq_name(seq));
  }
  s.reserved_bytes = blocks * (sizeof(int32_t) + sizeof(KVSegment)) +
                     static_cast<std::size_t>(capacity) * sizeof(int32_t) +
                     scratch_floats * sizeof(float);
  return s;
}

Status PagedCacheStore::allocate(SequenceId seq, int64_t capacity) {
  if (!layout_.ready()) return failed_precondition("paged cache: allocate() before init()");
  if (capacity <= 0)
    return invalid_argument("paged cache: capacity of " + seq_name(seq) +
                            " must be positive, got " + std::to_string(capacity));
  if (sequences_.count(seq) != 0)
    return failed_precondition("paged cache: " + seq_name(seq) +
                               " is already allocated; release it first");
  const int64_t blocks = blocks_for(capacity);
  RETURN_IF_ERROR(ensure_free(blocks));
  ASSIGN_OR_RETURN(Sequence s, make_sequence(seq, capacity, blocks));
  promised_ += blocks;
  bytes_.capacity += s.reserved_bytes;
  sequences_.emplace(seq, std::move(s));
  return ok_status();
}

int32_t PagedCacheStore::take_block(Sequence& s) {
  // The caller made sure a free block exists for this sequence (ensure_free).
  if (s.promised > 0) {
    --s.promised;
    --promised_;
  }
  const int32_t id = free_.back();
  free_.pop_back();
  Block& block = blocks_[static_cast<std::size_t>(id)];
  block.references = 1;
  block.written = 0;
  return id;
}

void PagedCacheStore::set_written(int32_t id, int64_t written) {
  Block& block = blocks_[static_cast<std::size_t>(id)];
  bytes_.live = bytes_.live - static_cast<std::size_t>(block.written) * entry_bytes() +
                static_cast<std::size_t>(written) * entry_bytes();
  block.written = written;
  bytes_.peak = std::max(bytes_.peak, bytes_.live);
}

void PagedCacheStore::drop_reference(int32_t id) {
  Block& block = blocks_[static_cast<std::size_t>(id)];
  if (--block.references > 0) return;
  set_written(id, 0);
  free_.push_back(id);
}

Status PagedCacheStore::own_block(Sequence& s, int64_t b) {
  const int32_t shared = s.table[static_cast<std::size_t>(b)];
  if (blocks_[static_cast<std::size_t>(shared)].references == 1) return ok_status();
  const int32_t own = take_block(s);
  const Block& from = blocks_[static_cast<std::size_t>(shared)];
  ASSIGN_OR_RETURN(
      const std::size_t copied,
      from.arena.copy_first(layout_, from.written, blocks_[static_cast<std::size_t>(own)].arena));
  bytes_.copied += copied;
  set_written(own, from.written);
  drop_reference(shared);
  s.table[static_cast<std::size_t>(b)] = own;
  return ok_status();
}

Status PagedCacheStore::release(SequenceId seq) {
  auto it = sequences_.find(seq);
  if (it == sequences_.end()) return not_found("paged cache: no " + seq_name(seq));
  for (const int32_t id : it->second.table) drop_reference(id);
  promised_ -= it->second.promised;
  bytes_.capacity -= it->second.reserved_bytes;
  sequences_.erase(it);
  return ok_status();
}

Status PagedCacheStore::fork(SequenceId src, SequenceId dst) {
  const Sequence* from = find(src);
  if (from == nullptr) return not_found("paged cache: no " + seq_name(src));
  if (sequences_.count(dst) != 0)
    return failed_precondition("paged cache: " + seq_name(dst) + " is already allocated");
  // Nothing reserved: the copy shares every block and takes (or adds) blocks
  // only when it writes.
  ASSIGN_OR_RETURN(Sequence s, make_sequence(dst, from->capacity, 0));
  s.table = from->table;
  s.ordered = from->ordered;
  s.branch_of = from->branch_of;
  s.any_branch = from->any_branch;
  s.length = from->length;
  for (const int32_t id : s.table) ++blocks_[static_cast<std::size_t>(id)].references;
  bytes_.capacity += s.reserved_bytes;
  sequences_.emplace(dst, std::move(s));
  return ok_status();
}

Result<SharedBlock> PagedCacheStore::hold_block(SequenceId seq, int64_t index) {
  const Sequence* s = find(seq);
  if (s == nullptr) return not_found("paged cache: no " + seq_name(seq));
  if (index < 0 || (index + 1) * block_size_ > s->length)
    return out_of_range("paged cache: block " + std::to_string(index) + " of " + seq_name(seq) +
                        " is not full (it holds " + std::to_string(s->length) +
                        " entries in blocks of " + std::to_string(block_size_) + ")");
  const int32_t id = s->table[static_cast<std::size_t>(index)];
  ++blocks_[static_cast<std::size_t>(id)].references;
  return SharedBlock{id};
}

void PagedCacheStore::drop_block(SharedBlock block) {
  TESSERA_CHECK(block >= 0 && block < static_cast<SharedBlock>(blocks_.size()) &&
                    blocks_[static_cast<std::size_t>(block)].references > 0,
                "paged cache: drop_block of a block nothing holds");
  drop_reference(static_cast<int32_t>(block));
}

Status PagedCacheStore::adopt_blocks(SequenceId seq, std::span<const SharedBlock> blocks) {
  Sequence* s = find(seq);
  if (s == nullptr) return not_found("paged cache: no " + seq_name(seq));
  if (s->length != 0)
    return failed_precondition("paged cache: " + seq_name(seq) + " holds " +
                               std::to_string(s->length) +
                               " entries; only an empty sequence adopts blocks");
  const auto n = static_cast<int64_t>(blocks.size());
  if (n * block_size_ > s->capacity)
    return resource_exhausted("paged cache: " + std::to_string(n) + " blocks of " +
                              std::to_string(block_size_) + " entries exceed " + seq_name(seq) +
                              "'s capacity of " + std::to_string(s->capacity));
  for (const SharedBlock block : blocks)
    if (block < 0 || block >= static_cast<SharedBlock>(blocks_.size()) ||
        blocks_[static_cast<std::size_t>(block)].references == 0 ||
        blocks_[static_cast<std::size_t>(block)].written != block_size_)
      return invalid_argument("paged cache: block " + std::to_string(block) +
                              " is not a held full block");
  for (const SharedBlock block : blocks) {
    ++blocks_[static_cast<std::size_t>(block)].references;
    s->table.push_back(static_cast<int32_t>(block));
  }
  // The blocks it no longer needs to take go back to the pool's free ones.
  const int64_t returned = std::min(s->promised, n);
  s->promised -= returned;
  promised_ -= returned;
  for (int64_t i = 0; i < n * block_size_; ++i) s->ordered.push_back(static_cast<int32_t>(i));
  s->branch_of.resize(static_cast<std::size_t>(n * block_size_), BranchId{0});
  s->length = n * block_size_;
  return ok_status();
}

Status PagedCacheStore::append(SequenceId seq, std::span<const int32_t> positions,
                               std::span<const BranchId> branches, const Tensor& k,
                               const Tensor& v) {
  Sequence* s = find(seq);
  if (s == nullptr) return not_found("paged cache: no " + seq_name(seq));
  const auto n = static_cast<int64_t>(positions.size());
  if (s->length + n > s->capacity)
    return resource_exhausted("paged cache: " + seq_name(seq) + " holds " +
                              std::to_string(s->length) + " of " + std::to_string(s->capacity) +
                              " entries, cannot append " + std::to_string(n));
  if (n == 0) return ok_status();
  // Every block this needs, made available before anything changes.
  const bool partial = s->length % block_size_ != 0;
  const int64_t copies =
      partial && blocks_[static_cast<std::size_t>(s->table.back())].references > 1 ? 1 : 0;
  const int64_t fresh = blocks_for(s->length + n) - static_cast<int64_t>(s->table.size());
  const int64_t beyond_promise = std::max<int64_t>(0, copies + fresh - s->promised);
  RETURN_IF_ERROR(ensure_free(beyond_promise));
  if (copies) RETURN_IF_ERROR(own_block(*s, static_cast<int64_t>(s->table.size()) - 1));
  for (int64_t b = 0; b < fresh; ++b) s->table.push_back(take_block(*s));
  // Block by block: the rows that land in one block are one write_rows.
  for (int64_t i = 0; i < n;) {
    const int32_t id = s->table[static_cast<std::size_t>(s->length / block_size_)];
    const int64_t slot = s->length % block_size_;
    const int64_t run = std::min(n - i, block_size_ - slot);
    const auto at = static_cast<std::size_t>(i);
    const auto length = static_cast<std::size_t>(run);
    RETURN_IF_ERROR(blocks_[static_cast<std::size_t>(id)].arena.write_rows(
        layout_, k, v, i, run, slot, positions.subspan(at, length),
        branches.empty() ? branches : branches.subspan(at, length)));
    set_written(id, std::max(blocks_[static_cast<std::size_t>(id)].written, slot + run));
    for (int64_t r = i; r < i + run; ++r) {
      const BranchId branch =
          branches.empty() ? BranchId{0} : branches[static_cast<std::size_t>(r)];
      s->ordered.push_back(positions[static_cast<std::size_t>(r)]);
      s->branch_of.push_back(branch);
      s->any_branch = s->any_branch || branch != 0;
      ++s->length;
    }
    i += run;
  }
  return ok_status();
}

Status PagedCacheStore::truncate(SequenceId seq, int64_t logical_length) {
  Sequence* s = find(seq);
  if (s == nullptr) return not_found("paged cache: no " + seq_name(seq));
  if (logical_length < 0 || logical_length > s->length)
    return out_of_range("paged cache: cannot truncate " + seq_name(seq) + " of " +
                        std::to_string(s->length) + " entries to " +
                        std::to_string(logical_length));
  const auto keep = static_cast<std::size_t>(blocks_for(logical_length));
  for (std::size_t b = keep; b < s->table.size(); ++b) {
    const int32_t id = s->table[b];
    const bool frees = blocks_[static_cast<std::size_t>(id)].references == 1;
    drop_reference(id);
    if (frees) {  // the block is free again: it stays this sequence's to take back
      ++s->promised;
      ++promised_;
    }
  }
  s->table.resize(keep);
  // The last block, when this sequence alone holds it, is written up to the new end.
  if (keep > 0 && blocks_[static_cast<std::size_t>(s->table.back())].references == 1)
    set_written(s->table.back(), logical_length - static_cast<int64_t>(keep - 1) * block_size_);
  s->length = logical_length;
  s->ordered.resize(static_cast<std::size_t>(logical_length));
  s->branch_of.resize(static_cast<std::size_t>(logical_length));
  return ok_status();
}

Status PagedCacheStore::copy(SequenceId seq, std::span<const int64_t> src, int64_t dst_start) {
  Sequence* s = find(seq);
  if (s == nullptr) return not_found("paged cache: no " + seq_name(seq));
  const auto n = static_cast<int64_t>(src.size());
  // The blocks written to must be this sequence's own first.
  const int64_t first_block = dst_start / block_size_;
  const int64_t last_block = n > 0 ? (dst_start + n - 1) / block_size_ : first_block - 1;
  int64_t copies = 0;
  for (int64_t b = first_block; b <= last_block; ++b)
    copies +=
        blocks_[static_cast<std::size_t>(s->table[static_cast<std::size_t>(b)])].references > 1;
  RETURN_IF_ERROR(ensure_free(std::max<int64_t>(0, copies - s->promised)));
  for (int64_t b = first_block; b <= last_block; ++b) RETURN_IF_ERROR(own_block(*s, b));
  // In order is safe in place (src[j] >= dst_start + j, strictly increasing;
  // see the static store).
  for (int64_t j = 0; j < n; ++j) {
    const int64_t from = src[j];
    const int64_t to = dst_start + j;
    const Block& a =
        blocks_[static_cast<std::size_t>(s->table[static_cast<std::size_t>(from / block_size_)])];
    Block& b =
        blocks_[static_cast<std::size_t>(s->table[static_cast<std::size_t>(to / block_size_)])];
    ASSIGN_OR_RETURN(const std::size_t copied,
                     a.arena.copy_slot(layout_, from % block_size_, b.arena, to % block_size_));
    bytes_.copied += copied;
    s->ordered[static_cast<std::size_t>(to)] = s->ordered[static_cast<std::size_t>(from)];
    s->branch_of[static_cast<std::size_t>(to)] = s->branch_of[static_cast<std::size_t>(from)];
  }
  return truncate(seq, dst_start + n);
}

Result<KVView> PagedCacheStore::view(SequenceId seq, int layer) {
  return make_view(seq, layer, false);
}

Result<KVView> PagedCacheStore::encoded_view(SequenceId seq, int layer) {
  return make_view(seq, layer, true);
}

Result<KVView> PagedCacheStore::make_view(SequenceId seq, int layer, bool encoded) {
  Sequence* s = find(seq);
  if (s == nullptr) return not_found("paged cache: no " + seq_name(seq));
  if (layer < 0 || layer >= layout_.geometry().layers)
    return out_of_range("paged cache: layer " + std::to_string(layer) + " of " +
                        std::to_string(layout_.geometry().layers));
  s->segments.clear();
  for (std::size_t b = 0; b < s->table.size(); ++b) {
    const int64_t first = static_cast<int64_t>(b) * block_size_;
    const int64_t count = std::min(block_size_, s->length - first);
    const Block& block = blocks_[static_cast<std::size_t>(s->table[b])];
    s->segments.push_back(encoded ? block.arena.encoded_segment(layout_, layer, 0, count)
                                  : block.arena.segment(layout_, layer, 0, count, s->scratch.get(),
                                                        s->capacity, first));
  }
  return KVView{s->segments};
}

SequenceInfo PagedCacheStore::info(SequenceId seq) const {
  const Sequence& s = get(seq);
  return {s.length, s.length, s.capacity, 0};
}

int64_t PagedCacheStore::stored_length(SequenceId seq, int /*layer*/, int /*kv*/) const {
  return get(seq).length;  // every layer lives in the same blocks
}

std::span<const int32_t> PagedCacheStore::positions(SequenceId seq) const {
  return get(seq).ordered;
}

std::span<const BranchId> PagedCacheStore::branches(SequenceId seq) const {
  const Sequence& s = get(seq);
  if (!s.any_branch) return {};
  return s.branch_of;
}

PagedCacheStore::Sequence* PagedCacheStore::find(SequenceId seq) {
  auto it = sequences_.find(seq);
  return it == sequences_.end() ? nullptr : &it->second;
}

const PagedCacheStore::Sequence& PagedCacheStore::get(SequenceId seq) const {
  auto it = sequences_.find(seq);
  TESSERA_CHECK(it != sequences_.end(), "paged cache: query for an unallocated sequence");
  return it->second;
}

SequenceBytes PagedCacheStore::sequence_bytes(SequenceId seq) const {
  SequenceBytes out;
  for (const int32_t id : get(seq).table) {
    const Block& block = blocks_[static_cast<std::size_t>(id)];
    const std::size_t bytes = static_cast<std::size_t>(block.written) * entry_bytes();
    out.held += bytes;
    if (block.references > 1) out.shared += bytes;
  }
  return out;
}

}  // namespace tessera
