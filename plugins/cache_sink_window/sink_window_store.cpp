#include "plugins/cache_sink_window/sink_window_store.h"

#include <algorithm>
#include <new>
#include <string>

namespace tessera {
namespace {

std::string seq_name(SequenceId seq) {
  return "sequence " + std::to_string(seq);
}

}  // namespace

SinkWindowCacheStore::SinkWindowCacheStore(const OptionValues& options)
    : SinkWindowCacheStore(options.get_int("sink"), options.get_int("window"),
                           options.get_string("positions") == "reassign",
                           options.get_int("slack")) {}

SinkWindowCacheStore::SinkWindowCacheStore(int64_t sink, int64_t window, bool reassign,
                                           int64_t slack)
    : sink_(sink), window_(window), slack_(slack), ring_(window + slack), reassign_(reassign) {}

Status SinkWindowCacheStore::init(const CacheGeometry& geometry,
                                  std::span<const Compressor* const> layer_codecs) {
  if (sink_ < 0 || window_ < 1 || slack_ < 0)
    return invalid_argument(
        "sink_window cache: needs sink >= 0, window >= 1 and slack >= 0, got sink " +
        std::to_string(sink_) + ", window " + std::to_string(window_) + " and slack " +
        std::to_string(slack_));
  return layout_.init(geometry, layer_codecs, "sink_window cache");
}

CachePolicy SinkWindowCacheStore::policy() const {
  CachePolicy p;
  p.rule = {sink_, window_, reassign_};
  p.evicts = true;
  p.max_entries = sink_ + ring_;
  return p;
}

Result<SinkWindowCacheStore::Sequence> SinkWindowCacheStore::make_sequence(SequenceId seq) const {
  const CacheGeometry& g = layout_.geometry();
  const int64_t slots = sink_ + ring_;
  Sequence s;
  ASSIGN_OR_RETURN(s.arena, SlotArena::create(layout_, slots, "sink_window cache: " + seq_name(seq),
                                              /*keep_branches=*/false, placement_.device()));
  std::size_t scratch_floats = 0;
  // Host records decode into this scratch; a device decodes its own.
  if (layout_.any_encoded() && placement_.device() == nullptr) {
    scratch_floats = 2 * static_cast<std::size_t>(g.kv_heads) * static_cast<std::size_t>(slots) *
                     static_cast<std::size_t>(g.head_dim);
    s.scratch.reset(new (std::nothrow) float[scratch_floats]());
    if (!s.scratch)
      return resource_exhausted("sink_window cache: out of memory for the decode buffer of " +
                                seq_name(seq));
  }
  try {
    s.logical.assign(static_cast<std::size_t>(slots), 0);
    s.ordered.reserve(static_cast<std::size_t>(slots));
  } catch (const std::bad_alloc&) {
    return resource_exhausted("sink_window cache: out of memory for " + seq_name(seq));
  }
  s.reserved_bytes = s.arena.reserved_bytes() + scratch_floats * sizeof(float) +
                     static_cast<std::size_t>(slots) * sizeof(int64_t);
  return s;
}

Status SinkWindowCacheStore::allocate(SequenceId seq, int64_t capacity) {
  if (!layout_.ready()) return failed_precondition("sink_window cache: allocate() before init()");
  if (sequences_.count(seq) != 0)
    return failed_precondition("sink_window cache: " + seq_name(seq) +
                               " is already allocated; release it first");
  if (capacity < sink_ + ring_)
    return invalid_argument(
        "sink_window cache: sink + window" + std::string(slack_ > 0 ? " + slack" : "") + " = " +
        std::to_string(sink_ + ring_) + " entries, but the capacity " + "(cache.max_tokens) is " +
        std::to_string(capacity) + "; raise cache.max_tokens or lower cache.window");
  ASSIGN_OR_RETURN(Sequence s, make_sequence(seq));
  bytes_.capacity += s.reserved_bytes;
  sequences_.emplace(seq, std::move(s));
  return ok_status();
}

Status SinkWindowCacheStore::release(SequenceId seq) {
  auto it = sequences_.find(seq);
  if (it == sequences_.end()) return not_found("sink_window cache: no " + seq_name(seq));
  set_live(bytes_.live - live_bytes(it->second.stored()));
  bytes_.capacity -= it->second.reserved_bytes;
  sequences_.erase(it);
  return ok_status();
}

Status SinkWindowCacheStore::fork(SequenceId src, SequenceId dst) {
  const Sequence* from = find(src);
  if (from == nullptr) return not_found("sink_window cache: no " + seq_name(src));
  if (sequences_.count(dst) != 0)
    return failed_precondition("sink_window cache: " + seq_name(dst) + " is already allocated");
  ASSIGN_OR_RETURN(Sequence s, make_sequence(dst));
  for (int64_t i = 0; i < from->stored(); ++i) {
    ASSIGN_OR_RETURN(const std::size_t copied,
                     from->arena.copy_slot(layout_, slot_of(*from, i), s.arena, slot_of(*from, i)));
    bytes_.copied += copied;
  }
  s.logical = from->logical;
  s.ordered = from->ordered;
  s.sinks = from->sinks;
  s.ring_start = from->ring_start;
  s.ring_count = from->ring_count;
  s.logical_length = from->logical_length;
  s.min_truncatable = from->min_truncatable;
  bytes_.capacity += s.reserved_bytes;
  set_live(bytes_.live + live_bytes(s.stored()));
  sequences_.emplace(dst, std::move(s));
  return ok_status();
}

int64_t SinkWindowCacheStore::slot_of(const Sequence& s, int64_t i) const {
  if (i < s.sinks) return i;
  return sink_ + (s.ring_start + (i - s.sinks)) % ring_;
}

void SinkWindowCacheStore::drop_oldest(Sequence& s) {
  const int64_t slot = sink_ + s.ring_start;
  // Truncating to any length a query there would need this entry for is no
  // longer exact.
  s.min_truncatable =
      std::max(s.min_truncatable, s.logical[static_cast<std::size_t>(slot)] + window_);
  s.ring_start = (s.ring_start + 1) % ring_;
  --s.ring_count;
}

void SinkWindowCacheStore::refresh_order(Sequence& s) const {
  s.ordered.clear();
  for (int64_t i = 0; i < s.stored(); ++i)
    s.ordered.push_back(s.arena.positions()[static_cast<std::size_t>(slot_of(s, i))]);
}

Status SinkWindowCacheStore::append(SequenceId seq, std::span<const int32_t> positions,
                                    std::span<const BranchId> branches, const Tensor& k,
                                    const Tensor& v) {
  Sequence* s = find(seq);
  if (s == nullptr) return not_found("sink_window cache: no " + seq_name(seq));
  for (const BranchId b : branches)
    if (b != 0)
      return unimplemented(
          "sink_window cache: keeps one window per sequence, not per branch; "
          "decode branches with decode.branch_layout = \"batched\"");
  // Checked before anything is written, so a failure changes nothing.
  int64_t sinks = s->sinks;
  for (const int32_t p : positions) {
    if (p >= sink_) break;
    if (sinks == sink_)
      return invalid_argument("sink_window cache: " + seq_name(seq) + " already keeps " +
                              std::to_string(sink_) + " sinks; position " + std::to_string(p) +
                              " below sink = " + std::to_string(sink_) +
                              " repeats one (this store is for chains)");
    ++sinks;
  }
  const std::size_t before = live_bytes(s->stored());
  for (std::size_t i = 0; i < positions.size(); ++i) {
    const int32_t p = positions[i];
    int64_t slot = 0;
    if (p < sink_) {
      slot = s->sinks++;
    } else {
      if (s->ring_count == ring_) drop_oldest(*s);
      slot = sink_ + (s->ring_start + s->ring_count) % ring_;
      ++s->ring_count;
    }
    RETURN_IF_ERROR(s->arena.write(layout_, k, v, static_cast<int64_t>(i), slot, p));
    s->logical[static_cast<std::size_t>(slot)] = s->logical_length++;
    // Entries no later query can see (gaps in the positions), even after
    // taking back `slack` tokens, go too.
    while (s->ring_count > 1 &&
           s->arena.positions()[static_cast<std::size_t>(sink_ + s->ring_start)] <= p - ring_)
      drop_oldest(*s);
  }
  s->min_truncatable = std::min(s->min_truncatable, s->logical_length);
  refresh_order(*s);
  set_live(bytes_.live - before + live_bytes(s->stored()));
  return ok_status();
}

Status SinkWindowCacheStore::truncate(SequenceId seq, int64_t logical_length) {
  Sequence* s = find(seq);
  if (s == nullptr) return not_found("sink_window cache: no " + seq_name(seq));
  if (logical_length < s->min_truncatable || logical_length > s->logical_length)
    return out_of_range("sink_window cache: cannot truncate " + seq_name(seq) + " to " +
                        std::to_string(logical_length) + " tokens (it can go back to " +
                        std::to_string(s->min_truncatable) + ")");
  const std::size_t before = live_bytes(s->stored());
  const auto newest = [&] { return sink_ + (s->ring_start + s->ring_count - 1) % ring_; };
  while (s->ring_count > 0 && s->logical[static_cast<std::size_t>(newest())] >= logical_length)
    --s->ring_count;
  while (s->sinks > 0 && s->logical[static_cast<std::size_t>(s->sinks - 1)] >= logical_length)
    --s->sinks;
  s->logical_length = logical_length;
  refresh_order(*s);
  set_live(bytes_.live - before + live_bytes(s->stored()));
  return ok_status();
}

Status SinkWindowCacheStore::copy(SequenceId seq, std::span<const int64_t> src, int64_t dst_start) {
  Sequence* s = find(seq);
  if (s == nullptr) return not_found("sink_window cache: no " + seq_name(seq));
  if (dst_start < s->sinks)
    return unimplemented("sink_window cache: copies only within the window; entry " +
                         std::to_string(dst_start) + " is one of the " + std::to_string(s->sinks) +
                         " sinks");
  const auto n = static_cast<int64_t>(src.size());
  const std::size_t before = live_bytes(s->stored());
  // In order is safe in place (src[j] >= dst_start + j, strictly increasing;
  // see the static store), and slot_of maps stored indices one to one.
  const int64_t base = dst_start < s->stored()
                           ? s->logical[static_cast<std::size_t>(slot_of(*s, dst_start))]
                           : s->logical_length;
  for (int64_t j = 0; j < n; ++j) {
    const int64_t to = slot_of(*s, dst_start + j);
    ASSIGN_OR_RETURN(const std::size_t copied,
                     s->arena.copy_slot(layout_, slot_of(*s, src[j]), s->arena, to));
    bytes_.copied += copied;
    s->logical[static_cast<std::size_t>(to)] = base + j;
  }
  const int64_t kept = dst_start + n;
  s->logical_length -= s->stored() - kept;
  s->min_truncatable = std::min(s->min_truncatable, s->logical_length);
  s->ring_count = kept - s->sinks;
  refresh_order(*s);
  set_live(bytes_.live - before + live_bytes(s->stored()));
  return ok_status();
}

Result<KVView> SinkWindowCacheStore::view(SequenceId seq, int layer) {
  return make_view(seq, layer, false);
}

Result<KVView> SinkWindowCacheStore::encoded_view(SequenceId seq, int layer) {
  return make_view(seq, layer, true);
}

Result<KVView> SinkWindowCacheStore::make_view(SequenceId seq, int layer, bool encoded) {
  Sequence* s = find(seq);
  if (s == nullptr) return not_found("sink_window cache: no " + seq_name(seq));
  if (layer < 0 || layer >= layout_.geometry().layers)
    return out_of_range("sink_window cache: layer " + std::to_string(layer) + " of " +
                        std::to_string(layout_.geometry().layers));
  const int64_t slots = sink_ + ring_;
  std::size_t count = 0;
  const auto add = [&](int64_t first, int64_t n) {
    if (n > 0)
      s->segments[count++] =
          encoded ? s->arena.encoded_segment(layout_, layer, first, n)
                  : s->arena.segment(layout_, layer, first, n, s->scratch.get(), slots, first);
  };
  add(0, s->sinks);
  const int64_t head = std::min(s->ring_count, ring_ - s->ring_start);
  add(sink_ + s->ring_start, head);
  add(sink_, s->ring_count - head);
  return KVView{std::span<const KVSegment>(s->segments.data(), count)};
}

SequenceInfo SinkWindowCacheStore::info(SequenceId seq) const {
  const Sequence& s = get(seq);
  return {s.logical_length, s.stored(), sink_ + ring_, s.min_truncatable};
}

int64_t SinkWindowCacheStore::stored_length(SequenceId seq, int /*layer*/, int /*kv*/) const {
  return get(seq).stored();  // one arena, one count for every layer
}

std::span<const int32_t> SinkWindowCacheStore::positions(SequenceId seq) const {
  return get(seq).ordered;
}

SinkWindowCacheStore::Sequence* SinkWindowCacheStore::find(SequenceId seq) {
  auto it = sequences_.find(seq);
  return it == sequences_.end() ? nullptr : &it->second;
}

const SinkWindowCacheStore::Sequence& SinkWindowCacheStore::get(SequenceId seq) const {
  auto it = sequences_.find(seq);
  TESSERA_CHECK(it != sequences_.end(), "sink_window cache: query for an unallocated sequence");
  return it->second;
}

void SinkWindowCacheStore::set_live(std::size_t live) {
  bytes_.live = live;
  bytes_.peak = std::max(bytes_.peak, live);
}

SequenceBytes SinkWindowCacheStore::sequence_bytes(SequenceId seq) const {
  return {live_bytes(get(seq).stored()), 0};
}

}  // namespace tessera
