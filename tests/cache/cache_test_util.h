// Helpers shared by the cache tests: K/V batches with distinct values, a plain
// reference cache (vectors, copy through a temporary), a lossy f16 codec and
// view comparison.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/cache/cache_store.h"
#include "core/cache/checked_cache_store.h"
#include "core/compressor/compressor.h"
#include "core/tensor/dtype.h"
#include "core/tensor/tensor.h"

namespace tessera::test {

// A value unique to (kv, layer, token id, head, d); K and V differ in sign and
// offset, so swapping them or mixing layers or heads shows.
inline float kv_value(int kv, int layer, int64_t token, int head, int d) {
  const float base = 1.0f + static_cast<float>(layer) * 1000.0f + static_cast<float>(token) * 7.0f +
                     static_cast<float>(head) * 0.5f + static_cast<float>(d) * 0.03125f;
  return kv == 0 ? base : -base - 0.25f;
}

// f32 [layers, n, kv_heads, head_dim] for K and V of tokens first_id .. first_id + n - 1.
struct KVBatch {
  std::vector<float> k, v;
  std::vector<int32_t> positions;
  Tensor kt, vt;
};

inline KVBatch make_batch(const CacheGeometry& g, int64_t first_id, int64_t n,
                          int32_t first_position) {
  KVBatch b;
  const auto count = static_cast<std::size_t>(g.layers * n * g.kv_heads * g.head_dim);
  b.k.resize(count);
  b.v.resize(count);
  std::size_t i = 0;
  for (int l = 0; l < g.layers; ++l)
    for (int64_t t = 0; t < n; ++t)
      for (int h = 0; h < g.kv_heads; ++h)
        for (int d = 0; d < g.head_dim; ++d, ++i) {
          b.k[i] = kv_value(0, l, first_id + t, h, d);
          b.v[i] = kv_value(1, l, first_id + t, h, d);
        }
  for (int64_t t = 0; t < n; ++t) b.positions.push_back(first_position + static_cast<int32_t>(t));
  b.kt = Tensor::contiguous(b.k.data(), DType::kF32, {g.layers, n, g.kv_heads, g.head_dim});
  b.vt = Tensor::contiguous(b.v.data(), DType::kF32, {g.layers, n, g.kv_heads, g.head_dim});
  return b;
}

// The reference: per token, K and V [layers][kv_heads][head_dim] and a position.
struct RefToken {
  std::vector<float> k, v;
  int32_t position = 0;
};

struct RefCache {
  CacheGeometry g;
  std::vector<RefToken> tokens;

  // `round` maps each value to what a lossy codec gives back (identity by default).
  void append(const KVBatch& b, float (*round)(float) = nullptr) {
    const int64_t n = static_cast<int64_t>(b.positions.size());
    for (int64_t t = 0; t < n; ++t) {
      RefToken tok;
      tok.position = b.positions[static_cast<std::size_t>(t)];
      for (int l = 0; l < g.layers; ++l)
        for (int h = 0; h < g.kv_heads; ++h)
          for (int d = 0; d < g.head_dim; ++d) {
            const auto i =
                static_cast<std::size_t>(((l * n + t) * g.kv_heads + h) * g.head_dim + d);
            tok.k.push_back(round ? round(b.k[i]) : b.k[i]);
            tok.v.push_back(round ? round(b.v[i]) : b.v[i]);
          }
      tokens.push_back(std::move(tok));
    }
  }
  // As append, each codec vector (a head, or a token's heads when
  // g.heads_per_vector says so) through a codec: decode(encode(x)).
  void append_through(const KVBatch& b, const Compressor& codec) {
    const int64_t n = static_cast<int64_t>(b.positions.size());
    const int width = g.vector_width();
    std::vector<uint8_t> bytes(codec.encoded_bytes(1, width));
    std::vector<float> back(static_cast<std::size_t>(width));
    for (int64_t t = 0; t < n; ++t) {
      RefToken tok;
      tok.position = b.positions[static_cast<std::size_t>(t)];
      for (int l = 0; l < g.layers; ++l)
        for (int i = 0; i < g.vectors_per_token(); ++i) {
          const auto at = static_cast<std::size_t>(
              ((l * n + t) * g.kv_heads + i * g.heads_per_vector) * g.head_dim);
          for (const auto& [src, dst] : {std::pair{&b.k, &tok.k}, std::pair{&b.v, &tok.v}}) {
            codec.encode(src->data() + at, 1, width, bytes.data());
            codec.decode(bytes.data(), 1, width, back.data());
            dst->insert(dst->end(), back.begin(), back.end());
          }
        }
      tokens.push_back(std::move(tok));
    }
  }
  void truncate(int64_t n) { tokens.resize(static_cast<std::size_t>(n)); }
  // What a sink + window store keeps once a token at `last_position` was
  // appended: positions below `sink`, and above last_position - window.
  void evict(int64_t sink, int64_t window, int64_t last_position) {
    std::erase_if(tokens, [&](const RefToken& t) {
      return t.position >= sink && t.position <= last_position - window;
    });
  }
  // Through a temporary, so aliasing cannot matter.
  void copy(std::span<const int64_t> src, int64_t dst_start) {
    std::vector<RefToken> moved;
    for (int64_t s : src) moved.push_back(tokens[static_cast<std::size_t>(s)]);
    tokens.resize(static_cast<std::size_t>(dst_start));
    for (auto& t : moved) tokens.push_back(std::move(t));
  }
  float at(int kv, int layer, int64_t token, int head, int d) const {
    const RefToken& t = tokens[static_cast<std::size_t>(token)];
    const auto i = static_cast<std::size_t>((layer * g.kv_heads + head) * g.head_dim + d);
    return kv == 0 ? t.k[i] : t.v[i];
  }
};

// Every element of the view of every layer equals the reference (bit for bit),
// the segments read one after another.
template <typename Store>
::testing::AssertionResult views_match(Store& store, SequenceId seq, const RefCache& ref) {
  const auto n = static_cast<int64_t>(ref.tokens.size());
  for (int l = 0; l < ref.g.layers; ++l) {
    auto view = store.view(seq, l);
    if (!view.ok()) return ::testing::AssertionFailure() << view.status().to_string();
    if (view->entries() != n)
      return ::testing::AssertionFailure()
             << "layer " << l << " view has " << view->entries() << " entries, reference has " << n;
    int64_t tok = 0;
    for (const KVSegment& seg : view->segments) {
      const Tensor* ts[2] = {&seg.k, &seg.v};
      for (int64_t j = 0; j < seg.count; ++j, ++tok) {
        if (seg.positions[j] != ref.tokens[static_cast<std::size_t>(tok)].position)
          return ::testing::AssertionFailure()
                 << "layer " << l << " entry " << tok << " has position " << seg.positions[j]
                 << ", want " << ref.tokens[static_cast<std::size_t>(tok)].position;
        for (int kv = 0; kv < 2; ++kv) {
          const Tensor& t = *ts[kv];
          for (int h = 0; h < ref.g.kv_heads; ++h)
            for (int d = 0; d < ref.g.head_dim; ++d) {
              const float got = t.f32()[h * t.stride[0] + j * t.stride[1] + d * t.stride[2]];
              const float want = ref.at(kv, l, tok, h, d);
              if (std::memcmp(&got, &want, sizeof(float)) != 0)
                return ::testing::AssertionFailure()
                       << "layer " << l << (kv ? " V" : " K") << " head " << h << " entry " << tok
                       << " d " << d << ": got " << got << ", want " << want;
            }
        }
      }
    }
  }
  return ::testing::AssertionSuccess();
}

template <typename Store>
::testing::AssertionResult positions_match(Store& store, SequenceId seq, const RefCache& ref) {
  std::span<const int32_t> pos;
  if constexpr (requires { store.positions(seq).value(); }) {
    auto r = store.positions(seq);
    if (!r.ok()) return ::testing::AssertionFailure() << r.status().to_string();
    pos = *r;
  } else {
    pos = store.positions(seq);
  }
  if (pos.size() != ref.tokens.size())
    return ::testing::AssertionFailure()
           << pos.size() << " positions, reference has " << ref.tokens.size();
  for (std::size_t i = 0; i < pos.size(); ++i)
    if (pos[i] != ref.tokens[i].position)
      return ::testing::AssertionFailure()
             << "position[" << i << "] = " << pos[i] << ", want " << ref.tokens[i].position;
  return ::testing::AssertionSuccess();
}

// A CheckedCacheStore that owns its codec (one for every layer), for tests. The
// codec outlives the store: the holder is the first base, destroyed last.
struct CodecHolder {
  std::unique_ptr<Compressor> codec;
  std::vector<const Compressor*> layer_codecs;
};
class CodecOwningStore : private CodecHolder, public CheckedCacheStore {
 public:
  CodecOwningStore(std::unique_ptr<CacheStore> store, std::string name,
                   std::unique_ptr<Compressor> codec)
      : CodecHolder{std::move(codec), {}}, CheckedCacheStore(std::move(store), std::move(name)) {}
  Status init(const CacheGeometry& g, StoredKeys keys = StoredKeys::kRotated) {
    layer_codecs.assign(static_cast<std::size_t>(g.layers), CodecHolder::codec.get());
    return CheckedCacheStore::init(g, layer_codecs, keys);
  }
};

// A lossy test codec: rounds each float to IEEE half and stores 2 bytes per element.
class HalfCodec final : public Compressor {
 public:
  static float round(float x) { return half_to_float(float_to_half(x)); }
  std::size_t encoded_bytes(int64_t n, int head_dim) const override {
    return static_cast<std::size_t>(n) * static_cast<std::size_t>(head_dim) * 2;
  }
  double bits_per_vector(int head_dim) const override { return 16.0 * head_dim; }
  void encode(const float* src, int64_t n, int head_dim, uint8_t* dst) const override {
    for (int64_t i = 0; i < n * head_dim; ++i) {
      const uint16_t h = float_to_half(src[i]);
      std::memcpy(dst + 2 * i, &h, 2);
    }
  }
  void decode(const uint8_t* src, int64_t n, int head_dim, float* dst) const override {
    for (int64_t i = 0; i < n * head_dim; ++i) {
      uint16_t h = 0;
      std::memcpy(&h, src + 2 * i, 2);
      dst[i] = half_to_float(h);
    }
  }
};

}  // namespace tessera::test
