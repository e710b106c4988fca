// The cases of every op: odd shapes (tails, single rows, odd block counts),
// head sizes 64/128/256, GQA ratios 1/2/4, and their seeded inputs. Small, so
// the whole suite runs in seconds on a software Vulkan device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/tensor/dtype.h"

namespace tessera::conformance {

// count values uniform in [-scale, scale), reproducible from `seed`.
std::vector<float> random_values(std::size_t count, uint64_t seed, float scale = 1.0f);

// rows x cols values stored as `dtype` (core/tensor/block_quant.h's
// quantize_row, the one `tessera quantize` uses), cols whole blocks.
std::vector<std::byte> encode_rows(DType dtype, std::span<const float> values, int64_t rows,
                                   int64_t cols);

struct MatmulCase {
  int64_t n, k, m;  // x [n, k], w [m, k]
  std::string label() const;
};
// k whole blocks of `dtype` in odd counts, m odd, n = 1, 3, 17.
std::vector<MatmulCase> matmul_cases(DType dtype);

struct EmbeddingCase {
  int64_t vocab, dim;
  std::vector<int32_t> tokens;  // first and last rows, repeats
  std::string label() const;
};
std::vector<EmbeddingCase> embedding_cases(DType dtype);

struct RowsCase {
  int64_t rows, width;  // odd widths (vector tails), single rows
  std::string label() const;
};
// For rms_norm, add, add_bias, scale, swiglu, geglu.
std::vector<RowsCase> rows_cases();

struct RopeCase {
  std::string form;  // "adjacent", "halves+factors", ...
  int64_t n, heads, head_dim;
  float theta, position_scale;
  RopePairs pairs;
  std::vector<float> freq_factors;  // [head_dim / 2] or empty
  std::vector<int32_t> positions;   // [n], odd and far apart
  // The spec, its factors pointing into this case.
  RopeSpec spec() const;
  std::string label() const;
};
// Every RopeSpec form the CPU supports (adjacent and halves, frequency
// factors, linear position scaling, another theta) at head sizes 64/128/256.
std::vector<RopeCase> rope_cases();

struct MaskedAttentionCase {
  int64_t n, heads, kv_heads, head_dim, slots;
  std::vector<int64_t> hidden_rows;  // queries that see nothing (their rows must be zeros)
  bool nan_in_unseen_slots;          // slots no query sees hold NaN (never read)
  uint64_t seed;
  std::string label() const;
  // [n, slots + n]: 0 seen, -inf hidden; every row outside hidden_rows sees
  // something.
  std::vector<float> mask() const;
};
std::vector<MaskedAttentionCase> masked_attention_cases();

struct CacheUpdateCase {
  int64_t kv_heads, slots, n, head_dim;
  uint64_t seed;
  std::string label() const;
};
std::vector<CacheUpdateCase> cache_update_cases();

struct AttentionCase {
  int64_t heads, kv_heads, head_dim;
  // Per sequence: its stored entries (split into `segments` segments) and its
  // batch tokens; the batch lists the sequences' tokens one after another.
  std::vector<int64_t> stored;
  std::vector<int64_t> batch;
  int segments;
  StoredKeys stored_keys;
  WindowRule rule;
  uint64_t seed;
  std::string label() const;
};
std::vector<AttentionCase> attention_cases();

}  // namespace tessera::conformance
