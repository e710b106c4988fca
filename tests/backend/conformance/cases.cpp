#include "tests/backend/conformance/cases.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/sampling/rng.h"
#include "core/tensor/block_quant.h"

namespace tessera::conformance {
namespace {

std::string dims(std::initializer_list<int64_t> values, const char* names) {
  // names: one letter per value ("nkm")
  std::string s;
  int i = 0;
  for (int64_t v : values) {
    if (i) s += ' ';
    s += names[i++];
    s += '=';
    s += std::to_string(v);
  }
  return s;
}

}  // namespace

std::vector<float> random_values(std::size_t count, uint64_t seed, float scale) {
  Rng rng(seed);
  std::vector<float> v(count);
  for (float& x : v) x = static_cast<float>((rng.uniform() * 2.0 - 1.0) * scale);
  return v;
}

std::vector<std::byte> encode_rows(DType dtype, std::span<const float> values, int64_t rows,
                                   int64_t cols) {
  const std::size_t row_bytes = dtype_row_bytes(dtype, cols);
  TESSERA_CHECK(row_bytes > 0, "conformance: rows are not whole blocks");
  std::vector<std::byte> bytes(row_bytes * static_cast<std::size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    quantize_row(dtype, values.data() + r * cols, cols,
                 bytes.data() + static_cast<std::size_t>(r) * row_bytes);
  return bytes;
}

std::string MatmulCase::label() const {
  return dims({n, k, m}, "nkm");
}

std::vector<MatmulCase> matmul_cases(DType dtype) {
  const int64_t block = dtype_layout(dtype).block_elements;
  // Unblocked: odd k, so every vector width leaves a tail. Blocked: 1, 3 or 5
  // and 7 blocks.
  const std::vector<int64_t> ks = block == 1 ? std::vector<int64_t>{31, 257}
                                             : (block == 32 ? std::vector<int64_t>{3 * 32, 7 * 32}
                                                            : std::vector<int64_t>{256, 3 * 256});
  std::vector<MatmulCase> cases;
  for (const int64_t k : ks)
    for (const int64_t m : {7, 33})
      for (const int64_t n : {1, 3, 17}) cases.push_back({n, k, m});
  return cases;
}

std::string EmbeddingCase::label() const {
  return dims({vocab, dim, static_cast<int64_t>(tokens.size())}, "vdn");
}

std::vector<EmbeddingCase> embedding_cases(DType dtype) {
  const int64_t block = dtype_layout(dtype).block_elements;
  const int64_t vocab = 37;
  std::vector<int32_t> many;
  Rng rng(99);
  for (int i = 0; i < 17; ++i) many.push_back(static_cast<int32_t>(rng.uniform() * vocab));
  std::vector<EmbeddingCase> cases;
  for (const int64_t dim :
       block == 1 ? std::vector<int64_t>{33, 255} : std::vector<int64_t>{block, 3 * block}) {
    cases.push_back({vocab, dim, {36}});
    cases.push_back({vocab, dim, {0, 36, 0}});
    cases.push_back({vocab, dim, many});
  }
  return cases;
}

std::string RowsCase::label() const {
  return dims({rows, width}, "nd");
}

std::vector<RowsCase> rows_cases() {
  return {{1, 1}, {1, 7}, {1, 33}, {1, 255}, {1, 4097}, {3, 17}, {5, 129}};
}

RopeSpec RopeCase::spec() const {
  RopeSpec spec;
  spec.theta = theta;
  spec.position_scale = position_scale;
  spec.pairs = pairs;
  spec.freq_factors = freq_factors;
  return spec;
}

std::string RopeCase::label() const {
  return form + " " + dims({n, heads, head_dim}, "nhd") + " positions " +
         std::to_string(positions.front()) + ".." + std::to_string(positions.back());
}

std::vector<RopeCase> rope_cases() {
  std::vector<RopeCase> cases;
  for (const int64_t head_dim : {64, 128, 256}) {
    std::vector<float> factors = random_values(static_cast<std::size_t>(head_dim / 2), 7, 1.0f);
    for (float& f : factors) f = 4.5f + 3.5f * f;  // in [1, 8), as Llama 3's rope_freqs
    const std::vector<int32_t> positions = {1, 7, 4097};
    cases.push_back(
        {"adjacent", 3, 3, head_dim, 10000.0f, 1.0f, RopePairs::kAdjacent, {}, positions});
    cases.push_back(
        {"halves", 3, 3, head_dim, 1000000.0f, 1.0f, RopePairs::kHalves, {}, positions});
    cases.push_back({"adjacent+factors", 3, 3, head_dim, 500000.0f, 1.0f, RopePairs::kAdjacent,
                     factors, positions});
    cases.push_back(
        {"halves+factors", 1, 5, head_dim, 500000.0f, 1.0f, RopePairs::kHalves, factors, {33}});
    cases.push_back(
        {"halves+scaled", 3, 3, head_dim, 1000000.0f, 0.125f, RopePairs::kHalves, {}, positions});
  }
  return cases;
}

std::string MaskedAttentionCase::label() const {
  std::string s = dims({n, heads, kv_heads, head_dim, slots}, "nhkds");
  if (!hidden_rows.empty()) s += " hidden rows";
  if (nan_in_unseen_slots) s += " NaN in unseen slots";
  return s;
}

std::vector<float> MaskedAttentionCase::mask() const {
  const int64_t cols = slots + n;
  const float hidden = -std::numeric_limits<float>::infinity();
  std::vector<float> m(static_cast<std::size_t>(n * cols), hidden);
  Rng rng(seed + 17);
  for (int64_t i = 0; i < n; ++i) {
    if (std::find(hidden_rows.begin(), hidden_rows.end(), i) != hidden_rows.end()) continue;
    bool any = false;
    for (int64_t c = 0; c < cols; ++c) {
      // Slots 0 and slots - 1 are seen by no query when they hold NaN.
      if (nan_in_unseen_slots && (c == 0 || c == slots - 1)) continue;
      if (rng.uniform() < 0.6) {
        m[static_cast<std::size_t>(i * cols + c)] = 0.0f;
        any = true;
      }
    }
    if (!any) m[static_cast<std::size_t>(i * cols + slots + i)] = 0.0f;  // its own key
  }
  return m;
}

std::vector<MaskedAttentionCase> masked_attention_cases() {
  return {
      {3, 4, 4, 64, 7, {1}, false, 1},      // GQA 1
      {5, 4, 2, 128, 13, {0, 4}, true, 2},  // GQA 2
      {2, 8, 2, 256, 5, {}, false, 3},      // GQA 4
      {1, 4, 1, 64, 33, {}, true, 4},       // GQA 4, one query
      {2, 2, 2, 256, 3, {0, 1}, false, 5},  // nothing seen at all
  };
}

std::string CacheUpdateCase::label() const {
  return dims({kv_heads, slots, n, head_dim}, "ksnd");
}

std::vector<CacheUpdateCase> cache_update_cases() {
  return {{2, 9, 3, 64, 1}, {1, 5, 1, 128, 2}, {4, 17, 4, 256, 3}};
}

std::string AttentionCase::label() const {
  std::string s = dims({heads, kv_heads, head_dim}, "hkd") + " stored";
  for (int64_t m : stored) s += " " + std::to_string(m);
  s += " batch";
  for (int64_t b : batch) s += " " + std::to_string(b);
  s += " segments " + std::to_string(segments);
  if (stored_keys == StoredKeys::kBeforeRope) s += " keys before rope";
  if (rule.limits())
    s += " sink " + std::to_string(rule.sink) + " window " + std::to_string(rule.window);
  return s;
}

std::vector<AttentionCase> attention_cases() {
  return {
      {2, 2, 64, {5}, {3}, 1, StoredKeys::kRotated, {}, 1},
      {4, 2, 128, {17, 4}, {1, 2}, 2, StoredKeys::kBeforeRope, {}, 2},
      {4, 1, 256, {0}, {2}, 1, StoredKeys::kRotated, {}, 3},
      {8, 2, 64, {9}, {3}, 3, StoredKeys::kRotated, {2, 4, false}, 4},
  };
}

}  // namespace tessera::conformance
