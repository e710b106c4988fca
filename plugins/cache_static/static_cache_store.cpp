#include "plugins/cache_static/static_cache_store.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <new>
#include <string>

namespace tessera {
namespace {

std::string seq_name(SequenceId seq) {
  return "sequence " + std::to_string(seq);
}

// a * b, or false when it does not fit in size_t.
bool mul_fits(std::size_t a, std::size_t b, std::size_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}

}  // namespace

StaticCacheStore::StaticCacheStore(const OptionValues& /*options*/) {}

Status StaticCacheStore::init(const CacheGeometry& geometry,
                              std::span<const Compressor* const> layer_codecs) {
  if (!codecs_.empty()) return failed_precondition("static cache: init() called twice");
  if (geometry.layers <= 0 || geometry.kv_heads <= 0 || geometry.head_dim <= 0) {
    return invalid_argument(
        "static cache: geometry needs positive layers, kv_heads and head_dim, got " +
        std::to_string(geometry.layers) + ", " + std::to_string(geometry.kv_heads) + ", " +
        std::to_string(geometry.head_dim));
  }
  if (layer_codecs.size() != static_cast<std::size_t>(geometry.layers))
    return invalid_argument("static cache: one codec per layer needed");

  std::size_t token_bytes = sizeof(int32_t);
  for (const Compressor* codec : layer_codecs) {
    if (codec == nullptr) return invalid_argument("static cache: no codec given");
    // Each vector lives at its own fixed slot, so the codec's size must be per
    // vector: encoded_bytes(n) == n * encoded_bytes(1). We check a few n.
    const std::size_t one = codec->encoded_bytes(1, geometry.head_dim);
    if (one == 0) return invalid_argument("static cache: the codec encodes a vector in 0 bytes");
    for (int64_t n : {2, 3, 7, 64, 1000}) {
      if (codec->encoded_bytes(n, geometry.head_dim) != static_cast<std::size_t>(n) * one) {
        return invalid_argument(
            "static cache: needs a per-vector codec (encoded_bytes(n) == n * encoded_bytes(1)), "
            "but encoded_bytes(" +
            std::to_string(n) + ", " + std::to_string(geometry.head_dim) +
            ") = " + std::to_string(codec->encoded_bytes(n, geometry.head_dim)) +
            " != " + std::to_string(n) + " * " + std::to_string(one) +
            "; use a cache store that keeps runs (e.g. paged) with this codec");
      }
    }
    const bool raw = codec->stores_raw_f32();
    if (raw && one != sizeof(float) * static_cast<std::size_t>(geometry.head_dim)) {
      return invalid_argument("static cache: the codec says it stores raw f32 but encodes " +
                              std::to_string(geometry.head_dim) + " floats in " +
                              std::to_string(one) + " bytes");
    }
    codecs_.push_back(codec);
    layer_start_.push_back(token_bytes - sizeof(int32_t));
    vector_bytes_.push_back(one);
    raw_f32_.push_back(raw);
    needs_scratch_ = needs_scratch_ || !raw;
    token_bytes += 2 * static_cast<std::size_t>(geometry.kv_heads) * one;
  }
  geometry_ = geometry;
  token_bytes_ = token_bytes;
  return ok_status();
}

Result<StaticCacheStore::Sequence> StaticCacheStore::make_sequence(SequenceId seq,
                                                                   int64_t capacity) const {
  const auto tokens = static_cast<std::size_t>(capacity);
  const std::size_t scratch_floats_per_token =
      needs_scratch_ ? 2 * static_cast<std::size_t>(geometry_.kv_heads) * geometry_.head_dim : 0;
  std::size_t arena_bytes = 0;
  std::size_t scratch_floats = 0;
  if (!mul_fits(tokens, token_bytes_ - sizeof(int32_t), &arena_bytes) ||
      !mul_fits(tokens, scratch_floats_per_token, &scratch_floats)) {
    return resource_exhausted("static cache: " + std::to_string(capacity) +
                              " tokens do not fit in memory; lower max_tokens");
  }
  Sequence s;
  s.max_tokens = capacity;
  try {
    // Value-initialised (zeroed): touches every page now, so no later step
    // faults memory in, and the contents are deterministic.
    s.arena = std::make_unique<uint8_t[]>(arena_bytes);
    s.positions = std::make_unique<int32_t[]>(tokens);
    if (scratch_floats > 0) s.scratch = std::make_unique<float[]>(scratch_floats);
    s.reserved_bytes = arena_bytes + tokens * sizeof(int32_t) + scratch_floats * sizeof(float);
  } catch (const std::bad_alloc&) {
    return resource_exhausted("static cache: out of memory reserving " + std::to_string(capacity) +
                              " tokens for " + seq_name(seq) + " (" + std::to_string(arena_bytes) +
                              " arena bytes); lower max_tokens");
  }
  return s;
}

Status StaticCacheStore::allocate(SequenceId seq, int64_t capacity) {
  if (codecs_.empty()) return failed_precondition("static cache: allocate() before init()");
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

Status StaticCacheStore::fork(SequenceId src, SequenceId dst) {
  const Sequence* from = find(src);
  if (from == nullptr) return not_found("static cache: no " + seq_name(src));
  if (sequences_.count(dst) != 0)
    return failed_precondition("static cache: " + seq_name(dst) + " is already allocated");
  ASSIGN_OR_RETURN(Sequence s, make_sequence(dst, from->max_tokens));
  // Same capacity, same layout: the used prefix of every (layer, kv, head) row.
  for (int l = 0; l < geometry_.layers; ++l)
    for (int kv = 0; kv < 2; ++kv)
      for (int h = 0; h < geometry_.kv_heads; ++h)
        if (from->length > 0)
          std::memcpy(
              slot(s, l, kv, h, 0), slot(*from, l, kv, h, 0),
              static_cast<std::size_t>(from->length) * vector_bytes_[static_cast<std::size_t>(l)]);
  std::copy_n(from->positions.get(), from->length, s.positions.get());
  s.length = from->length;
  bytes_.capacity += s.reserved_bytes;
  set_live(bytes_.live + live_bytes(s.length));
  sequences_.emplace(dst, std::move(s));
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

Status StaticCacheStore::append(SequenceId seq, std::span<const int32_t> positions, const Tensor& k,
                                const Tensor& v) {
  Sequence* s = find(seq);
  if (s == nullptr) return not_found("static cache: no " + seq_name(seq));
  const auto n = static_cast<int64_t>(positions.size());
  if (s->length + n > s->max_tokens) {
    return resource_exhausted("static cache: " + seq_name(seq) + " holds " +
                              std::to_string(s->length) + " of " + std::to_string(s->max_tokens) +
                              " tokens, cannot append " + std::to_string(n));
  }
  // k, v: f32 [layers, n, kv_heads, head_dim], head_dim contiguous (checked by
  // CheckedCacheStore); other strides are honoured.
  const Tensor* kv_in[2] = {&k, &v};
  for (int l = 0; l < geometry_.layers; ++l) {
    for (int kv = 0; kv < 2; ++kv) {
      const Tensor& t = *kv_in[kv];
      for (int64_t i = 0; i < n; ++i) {
        for (int h = 0; h < geometry_.kv_heads; ++h) {
          const float* src = t.f32() + l * t.stride[0] + i * t.stride[1] + h * t.stride[2];
          codecs_[static_cast<std::size_t>(l)]->encode(src, 1, geometry_.head_dim,
                                                       slot(*s, l, kv, h, s->length + i));
        }
      }
    }
  }
  std::copy(positions.begin(), positions.end(), s->positions.get() + s->length);
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
  // range, src[j] >= dst_start + j.
  //
  // Copying in order j = 0, 1, ... is safe in place: slot dst_start + j is
  // overwritten only after every src[i] (i <= j) was read, and a later source
  // src[i] (i > j) satisfies src[i] > src[j] >= dst_start + j, so it was not the
  // slot just written. Copying all j in parallel would race: with src = [1, 3]
  // and dst_start = 0, writing slot 1 (j = 1) may happen before reading slot 1
  // (j = 0 reads src[0] = 1).
  for (int l = 0; l < geometry_.layers; ++l) {
    for (int kv = 0; kv < 2; ++kv) {
      for (int h = 0; h < geometry_.kv_heads; ++h) {
        for (int64_t j = 0; j < n; ++j) {
          if (src[j] == dst_start + j) continue;  // already in place (a chain)
          std::memcpy(slot(*s, l, kv, h, dst_start + j), slot(*s, l, kv, h, src[j]),
                      vector_bytes_[static_cast<std::size_t>(l)]);
        }
      }
    }
  }
  for (int64_t j = 0; j < n; ++j) s->positions[dst_start + j] = s->positions[src[j]];
  const int64_t new_length = dst_start + n;
  set_live(bytes_.live - live_bytes(s->length - new_length));
  s->length = new_length;
  return ok_status();
}

Result<KVView> StaticCacheStore::view(SequenceId seq, int layer) {
  Sequence* s = find(seq);
  if (s == nullptr) return not_found("static cache: no " + seq_name(seq));
  if (layer < 0 || layer >= geometry_.layers) {
    return out_of_range("static cache: layer " + std::to_string(layer) + " of " +
                        std::to_string(geometry_.layers));
  }
  const auto l = static_cast<std::size_t>(layer);
  const int64_t hd = geometry_.head_dim;
  KVView out;
  out.segment_count = 1;
  KVSegment& segment = out.segments[0];
  segment.count = s->length;
  segment.positions = s->positions.get();
  Tensor* views[2] = {&segment.k, &segment.v};
  for (int kv = 0; kv < 2; ++kv) {
    Tensor& t = *views[kv];
    t.dtype = DType::kF32;
    t.rank = 3;
    t.shape = {geometry_.kv_heads, s->length, hd, 0};
    if (raw_f32_[l]) {
      // The arena holds the floats themselves: [kv_heads, max_tokens, head_dim]
      // per (layer, kv), of which the first `length` tokens are used.
      t.data = slot(*s, layer, kv, 0, 0);
      t.stride = {s->max_tokens * hd, hd, 1, 0};
    } else {
      // Decode the used prefix into the scratch, contiguous [kv_heads, length, head_dim].
      float* base = s->scratch.get() + kv * geometry_.kv_heads * s->max_tokens * hd;
      for (int h = 0; h < geometry_.kv_heads; ++h) {
        codecs_[l]->decode(slot(*s, layer, kv, h, 0), s->length, geometry_.head_dim,
                           base + h * s->length * hd);
      }
      t.data = base;
      t.stride = {s->length * hd, hd, 1, 0};
    }
  }
  return out;
}

SequenceInfo StaticCacheStore::info(SequenceId seq) const {
  const Sequence& s = get(seq);
  return {s.length, s.length, s.max_tokens, 0};
}

int64_t StaticCacheStore::stored_length(SequenceId seq, int /*layer*/, int /*kv*/) const {
  // Every layer's K and V share one length by construction (one arena, one counter).
  return get(seq).length;
}

std::span<const int32_t> StaticCacheStore::positions(SequenceId seq) const {
  const Sequence& s = get(seq);
  return {s.positions.get(), static_cast<std::size_t>(s.length)};
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

uint8_t* StaticCacheStore::slot(const Sequence& s, int layer, int kv, int head,
                                int64_t token) const {
  // Layers one after another; within layer l: [2, kv_heads, max_tokens, vector_bytes(l)].
  const std::size_t offset =
      layer_start_[static_cast<std::size_t>(layer)] * static_cast<std::size_t>(s.max_tokens);
  const auto row =
      (static_cast<std::size_t>(kv) * geometry_.kv_heads + static_cast<std::size_t>(head)) *
          static_cast<std::size_t>(s.max_tokens) +
      static_cast<std::size_t>(token);
  return s.arena.get() + offset + row * vector_bytes_[static_cast<std::size_t>(layer)];
}

void StaticCacheStore::set_live(std::size_t live) {
  bytes_.live = live;
  bytes_.peak = std::max(bytes_.peak, live);
}

}  // namespace tessera
