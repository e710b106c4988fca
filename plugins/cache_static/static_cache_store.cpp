#include "plugins/cache_static/static_cache_store.h"

#include <algorithm>
#include <new>
#include <string>

namespace tessera {
namespace {

std::string seq_name(SequenceId seq) {
  return "sequence " + std::to_string(seq);
}

}  // namespace

StaticCacheStore::StaticCacheStore(const OptionValues& /*options*/) {}

Status StaticCacheStore::init(const CacheGeometry& geometry,
                              std::span<const Compressor* const> layer_codecs) {
  Status st = layout_.init(geometry, layer_codecs, "static cache");
  if (!st.ok() && st.message().find("per-vector") != std::string::npos)
    return Status(st.code(), st.message() + "; use a cache store that keeps runs with this codec");
  return st;
}

Result<StaticCacheStore::Sequence> StaticCacheStore::make_sequence(SequenceId seq,
                                                                   int64_t capacity) const {
  const CacheGeometry& g = layout_.geometry();
  Sequence s;
  ASSIGN_OR_RETURN(s.arena, SlotArena::create(layout_, capacity, "static cache: " + seq_name(seq),
                                              /*keep_branches=*/true, placement_.device()));
  std::size_t scratch_floats = 0;
  // Host records decode into this scratch; a device decodes its own.
  if (layout_.any_encoded() && placement_.device() == nullptr) {
    const std::size_t per_token = 2 * static_cast<std::size_t>(g.kv_heads) * g.head_dim;
    if (__builtin_mul_overflow(static_cast<std::size_t>(capacity), per_token, &scratch_floats))
      return resource_exhausted("static cache: " + std::to_string(capacity) +
                                " tokens do not fit in memory; lower max_tokens");
    s.scratch.reset(new (std::nothrow) float[scratch_floats]());
    if (!s.scratch)
      return resource_exhausted("static cache: out of memory reserving the decode buffer of " +
                                seq_name(seq) + "; lower max_tokens");
  }
  s.reserved_bytes = s.arena.reserved_bytes() + scratch_floats * sizeof(float);
  return s;
}

Status StaticCacheStore::allocate(SequenceId seq, int64_t capacity) {
  if (!layout_.ready()) return failed_precondition("static cache: allocate() before init()");
  if (capacity <= 0) {
    return invalid_argument("static cache: capacity of " + seq_name(seq) +
                            " must be positive, got " + std::to_string(capacity));
  }
  if (sequences_.count(seq) != 0) {
    return failed_precondition("static cache: " + seq_name(seq) +
                               " is already allocated; release it first");
  }
  ASSIGN_OR_RETURN(Sequence s, make_sequence(seq, capacity));
  bytes_.capacity += s.reserved_bytes;
  sequences_.emplace(seq, std::move(s));
  return ok_status();
}

Status StaticCacheStore::release(SequenceId seq) {
  auto it = sequences_.find(seq);
  if (it == sequences_.end()) return not_found("static cache: no " + seq_name(seq));
  set_live(bytes_.live - live_bytes(it->second.length));
  bytes_.capacity -= it->second.reserved_bytes;
  sequences_.erase(it);
  return ok_status();
}

Status StaticCacheStore::fork(SequenceId src, SequenceId dst) {
  const Sequence* from = find(src);
  if (from == nullptr) return not_found("static cache: no " + seq_name(src));
  if (sequences_.count(dst) != 0)
    return failed_precondition("static cache: " + seq_name(dst) + " is already allocated");
  ASSIGN_OR_RETURN(Sequence s, make_sequence(dst, from->arena.slots()));
  ASSIGN_OR_RETURN(const std::size_t copied,
                   from->arena.copy_first(layout_, from->length, s.arena));
  bytes_.copied += copied;
  s.length = from->length;
  bytes_.capacity += s.reserved_bytes;
  set_live(bytes_.live + live_bytes(s.length));
  sequences_.emplace(dst, std::move(s));
  return ok_status();
}

Status StaticCacheStore::append(SequenceId seq, std::span<const int32_t> positions,
                                std::span<const BranchId> branches, const Tensor& k,
                                const Tensor& v) {
  Sequence* s = find(seq);
  if (s == nullptr) return not_found("static cache: no " + seq_name(seq));
  const auto n = static_cast<int64_t>(positions.size());
  if (s->length + n > s->arena.slots()) {
    return resource_exhausted(
        "static cache: " + seq_name(seq) + " holds " + std::to_string(s->length) + " of " +
        std::to_string(s->arena.slots()) + " tokens, cannot append " + std::to_string(n));
  }
  // k, v: f32 [layers, n, kv_heads, head_dim], head_dim contiguous (checked by
  // CheckedCacheStore); other strides are honoured.
  RETURN_IF_ERROR(s->arena.write_rows(layout_, k, v, 0, n, s->length, positions, branches));
  s->length += n;
  set_live(bytes_.live + live_bytes(n));
  return ok_status();
}

Status StaticCacheStore::truncate(SequenceId seq, int64_t logical_length) {
  Sequence* s = find(seq);
  if (s == nullptr) return not_found("static cache: no " + seq_name(seq));
  if (logical_length < 0 || logical_length > s->length) {
    return out_of_range("static cache: cannot truncate " + seq_name(seq) + " of " +
                        std::to_string(s->length) + " tokens to " + std::to_string(logical_length));
  }
  set_live(bytes_.live - live_bytes(s->length - logical_length));
  s->length = logical_length;
  return ok_status();
}

Status StaticCacheStore::copy(SequenceId seq, std::span<const int64_t> src, int64_t dst_start) {
  Sequence* s = find(seq);
  if (s == nullptr) return not_found("static cache: no " + seq_name(seq));
  const auto n = static_cast<int64_t>(src.size());
  // The contract (checked by CheckedCacheStore): src strictly increasing, in
  // range, src[j] >= dst_start + j. Copying in order j = 0, 1, ... is safe in
  // place: slot dst_start + j is overwritten only after every src[i] (i <= j)
  // was read, and a later source src[i] (i > j) satisfies src[i] > src[j] >=
  // dst_start + j, so it was not the slot just written. Copying all j in
  // parallel would race: with src = [1, 3] and dst_start = 0, writing slot 1
  // (j = 1) may happen before reading slot 1 (j = 0 reads src[0] = 1).
  for (int64_t j = 0; j < n; ++j) {
    ASSIGN_OR_RETURN(const std::size_t copied,
                     s->arena.copy_slot(layout_, src[j], s->arena, dst_start + j));
    bytes_.copied += copied;
  }
  const int64_t new_length = dst_start + n;
  set_live(bytes_.live - live_bytes(s->length - new_length));
  s->length = new_length;
  return ok_status();
}

Result<KVView> StaticCacheStore::view(SequenceId seq, int layer) {
  Sequence* s = find(seq);
  if (s == nullptr) return not_found("static cache: no " + seq_name(seq));
  if (layer < 0 || layer >= layout_.geometry().layers) {
    return out_of_range("static cache: layer " + std::to_string(layer) + " of " +
                        std::to_string(layout_.geometry().layers));
  }
  s->segment =
      s->arena.segment(layout_, layer, 0, s->length, s->scratch.get(), s->arena.slots(), 0);
  return KVView{std::span<const KVSegment>(&s->segment, 1)};
}

Result<KVView> StaticCacheStore::encoded_view(SequenceId seq, int layer) {
  Sequence* s = find(seq);
  if (s == nullptr) return not_found("static cache: no " + seq_name(seq));
  if (layer < 0 || layer >= layout_.geometry().layers) {
    return out_of_range("static cache: layer " + std::to_string(layer) + " of " +
                        std::to_string(layout_.geometry().layers));
  }
  s->segment = s->arena.encoded_segment(layout_, layer, 0, s->length);
  return KVView{std::span<const KVSegment>(&s->segment, 1)};
}

Result<DenseLayerKV> StaticCacheStore::dense_layer(SequenceId seq, int layer) {
  Sequence* s = find(seq);
  if (s == nullptr) return not_found("static cache: no " + seq_name(seq));
  if (layer < 0 || layer >= layout_.geometry().layers)
    return out_of_range("static cache: layer " + std::to_string(layer) + " of " +
                        std::to_string(layout_.geometry().layers));
  if (!layout_.raw(layer))
    return failed_precondition("static cache: layer " + std::to_string(layer) +
                               " is encoded by its codec; a dense f32 tensor needs a codec that "
                               "stores raw f32 (cache.codec.plugin = \"identity\")");
  const KVSegment all = s->arena.segment(layout_, layer, 0, s->arena.slots(), nullptr, 0, 0);
  return DenseLayerKV{all.k, all.v};
}

Status StaticCacheStore::append_in_place(SequenceId seq, std::span<const int32_t> positions) {
  Sequence* s = find(seq);
  if (s == nullptr) return not_found("static cache: no " + seq_name(seq));
  const auto n = static_cast<int64_t>(positions.size());
  if (s->length + n > s->arena.slots())
    return resource_exhausted(
        "static cache: " + seq_name(seq) + " holds " + std::to_string(s->length) + " of " +
        std::to_string(s->arena.slots()) + " tokens, cannot take " + std::to_string(n) + " more");
  for (int64_t i = 0; i < n; ++i) {
    s->arena.positions()[s->length + i] = positions[static_cast<std::size_t>(i)];
    if (s->arena.branches() != nullptr) s->arena.branches()[s->length + i] = 0;
  }
  s->length += n;
  set_live(bytes_.live + live_bytes(n));
  return ok_status();
}

SequenceInfo StaticCacheStore::info(SequenceId seq) const {
  const Sequence& s = get(seq);
  return {s.length, s.length, s.arena.slots(), 0};
}

int64_t StaticCacheStore::stored_length(SequenceId seq, int /*layer*/, int /*kv*/) const {
  // Every layer's K and V share one length by construction (one arena, one counter).
  return get(seq).length;
}

std::span<const int32_t> StaticCacheStore::positions(SequenceId seq) const {
  const Sequence& s = get(seq);
  return {s.arena.positions(), static_cast<std::size_t>(s.length)};
}

std::span<const BranchId> StaticCacheStore::branches(SequenceId seq) const {
  const Sequence& s = get(seq);
  if (!s.arena.any_branch()) return {};
  return {s.arena.branches(), static_cast<std::size_t>(s.length)};
}

StaticCacheStore::Sequence* StaticCacheStore::find(SequenceId seq) {
  auto it = sequences_.find(seq);
  return it == sequences_.end() ? nullptr : &it->second;
}

const StaticCacheStore::Sequence& StaticCacheStore::get(SequenceId seq) const {
  auto it = sequences_.find(seq);
  TESSERA_CHECK(it != sequences_.end(), "static cache: query for an unallocated sequence");
  return it->second;
}

void StaticCacheStore::set_live(std::size_t live) {
  bytes_.live = live;
  bytes_.peak = std::max(bytes_.peak, live);
}

SequenceBytes StaticCacheStore::sequence_bytes(SequenceId seq) const {
  return {live_bytes(get(seq).length), 0};
}

}  // namespace tessera
