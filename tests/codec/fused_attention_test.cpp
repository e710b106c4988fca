// The CPU attention kernel reading encoded segments through their codec, or
// as stored rows (f16, bf16, int8, int4), with no decoding, equals the same
// attention over the decoded values, within float rounding (as stored: bit
// for bit), for every codec that attends encoded: stored segments mixed with
// in-batch keys, a window rule, several segments, GQA, and records that hold
// one kv head or a token's kv heads (cache.codec_span = "token"). And
// branches (BIM): the bits of the store without the other branches' records.
#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "plugins/compressor_common/half_codec.h"
#include "plugins/compressor_int4/int4_codec.h"
#include "plugins/compressor_int8/int8_codec.h"
#include "plugins/compressor_lattice/lattice_codec.h"
#include "tests/backend/kernel_test_util.h"
#include "tests/codec/gaussian_vectors.h"

namespace tessera {
namespace {

struct CodecCase {
  std::string name;
  std::shared_ptr<const Compressor> codec;
  // Read as stored by the CPU (visible_keys.h): the bits of attention over
  // the decoded floats, not only within rounding.
  bool as_stored = false;
};

std::vector<CodecCase> codecs() {
  lattice::LatticeConfig d4{lattice::LatticeKind::kD4, 38, lattice::ClampMode::kBox};
  lattice::LatticeConfig e8{lattice::LatticeKind::kE8, 37, lattice::ClampMode::kBox};
  lattice::LatticeConfig e8_coarse{lattice::LatticeKind::kE8, 4, lattice::ClampMode::kBox};
  return {{"lattice_d4_q38", std::make_shared<LatticeCodec>(d4)},
          {"lattice_e8_q37", std::make_shared<LatticeCodec>(e8)},
          {"lattice_e8_q4", std::make_shared<LatticeCodec>(e8_coarse)},
          {"int8", std::make_shared<Int8Codec>(), true},
          {"int4_g16", std::make_shared<Int4Codec>(16), true},
          {"int4_g8", std::make_shared<Int4Codec>(8), true},
          {"f16", std::make_shared<F16Codec>(), true},
          {"bf16", std::make_shared<Bf16Codec>(), true}};
}

class FusedAttention : public ::testing::TestWithParam<CodecCase> {};

constexpr int64_t kHeads = 4, kKvHeads = 2, kHd = 32;

// Batch tokens after the stored entries, each seeing itself and the earlier.
struct Batch {
  std::vector<float> q, k, v;  // [n, kHeads, kHd]; [n, kKvHeads, kHd] each
  std::vector<int32_t> positions;
  std::vector<BranchId> branches;  // [n], or empty
};

Batch draw_batch(test::GaussianSource& gauss, int64_t first_position, int64_t n) {
  Batch b;
  b.q = gauss.vectors(n * kHeads, kHd);
  b.k = gauss.vectors(n * kKvHeads, kHd);
  b.v = gauss.vectors(n * kKvHeads, kHd);
  for (int64_t i = 0; i < n; ++i) b.positions.push_back(static_cast<int32_t>(first_position + i));
  return b;
}

// The CPU kernel on `threads` threads, over one view of `parts`.
std::vector<float> attend(Batch& b, const std::vector<KVSegment>& parts, WindowRule rule,
                          int threads = 2) {
  const auto n = static_cast<int64_t>(b.positions.size());
  const KVView view{parts};
  const std::vector<int32_t> view_of(static_cast<std::size_t>(n), 0);
  std::vector<uint64_t> mask;  // causal
  for (int64_t i = 0; i < n; ++i) mask.push_back((uint64_t{2} << i) - 1);
  std::vector<float> out(b.q.size());
  AttentionParams a;
  a.q = Tensor::contiguous(b.q.data(), DType::kF32, {n, kHeads, kHd});
  a.batch_k = Tensor::contiguous(b.k.data(), DType::kF32, {n, kKvHeads, kHd});
  a.batch_v = Tensor::contiguous(b.v.data(), DType::kF32, {n, kKvHeads, kHd});
  a.positions = b.positions;
  a.views = std::span<const KVView>(&view, 1);
  a.view_of = view_of;
  a.branches = b.branches;
  a.in_batch = {mask, 1};
  a.rule = rule;
  a.out = Tensor::contiguous(out.data(), DType::kF32, {n, kHeads, kHd});
  cpu::ThreadPool pool(threads);
  cpu::RopeTable rope;
  cpu::attention(a, rope, &pool);
  return out;
}

// `count` entries as a store keeps them encoded: per run of heads_per_record
// kv heads, record_head_stride bytes apart, the entries' records in a row.
KVSegment encoded_segment(const Compressor& codec, const uint8_t* k_records,
                          const uint8_t* v_records, std::size_t record_head_stride,
                          int64_t heads_per_record, const int32_t* positions, int64_t count) {
  KVSegment s;
  s.count = count;
  s.positions = positions;
  s.codec = &codec;
  s.k_records = k_records;
  s.v_records = v_records;
  s.record_head_stride = record_head_stride;
  s.heads_per_record = static_cast<int>(heads_per_record);
  return s;
}

void check_fused_equals_decoded(const Compressor& codec, int64_t heads_per_record, bool as_stored) {
  constexpr int64_t kStored = 37, kN = 3;
  // A record is `width` floats; run r holds kv heads r * heads_per_record...
  const int64_t width = heads_per_record * kHd;
  const int64_t runs = kKvHeads / heads_per_record;
  const int64_t head_stride = heads_per_record == 1 ? kStored * kHd : kHd;
  test::GaussianSource gauss(7);
  // Stored K/V as a store keeps them: per run of heads, kStored records in a row.
  const std::size_t record = codec.encoded_bytes(1, static_cast<int>(width));
  std::vector<float> k_raw = gauss.vectors(kKvHeads * kStored, kHd),
                     v_raw = gauss.vectors(kKvHeads * kStored, kHd);
  std::vector<uint8_t> k_rec(runs * kStored * record), v_rec(k_rec.size());
  codec.encode(k_raw.data(), runs * kStored, static_cast<int>(width), k_rec.data());
  codec.encode(v_raw.data(), runs * kStored, static_cast<int>(width), v_rec.data());
  std::vector<float> k_dec(k_raw.size()), v_dec(v_raw.size());
  codec.decode(k_rec.data(), runs * kStored, static_cast<int>(width), k_dec.data());
  codec.decode(v_rec.data(), runs * kStored, static_cast<int>(width), v_dec.data());
  std::vector<int32_t> stored_positions(kStored);
  for (int64_t j = 0; j < kStored; ++j)
    stored_positions[static_cast<std::size_t>(j)] = static_cast<int32_t>(j);

  // Two segments each way: [0, 20) and [20, kStored).
  const auto segments = [&](bool encoded) {
    std::vector<KVSegment> out;
    for (const auto& [first, count] : {std::pair<int64_t, int64_t>{0, 20}, {20, kStored - 20}}) {
      if (encoded) {
        out.push_back(encoded_segment(codec, k_rec.data() + first * record,
                                      v_rec.data() + first * record, kStored * record,
                                      heads_per_record, stored_positions.data() + first, count));
        continue;
      }
      KVSegment s;
      s.count = count;
      s.positions = stored_positions.data() + first;
      s.k = Tensor::contiguous(k_dec.data() + first * width, DType::kF32, {kKvHeads, count, kHd});
      s.k.stride = {head_stride, width, 1, 0};
      s.v = Tensor::contiguous(v_dec.data() + first * width, DType::kF32, {kKvHeads, count, kHd});
      s.v.stride = {head_stride, width, 1, 0};
      out.push_back(s);
    }
    return out;
  };

  Batch batch = draw_batch(gauss, kStored, kN);
  // Sinks and a window that cuts the stored entries; then no window, where
  // every stored entry is seen.
  for (const WindowRule rule : {WindowRule{3, 30, false}, WindowRule{}}) {
    const std::vector<float> fused = attend(batch, segments(true), rule);
    const std::vector<float> decoded = attend(batch, segments(false), rule);
    double worst = 0;
    for (std::size_t i = 0; i < fused.size(); ++i)
      worst = std::max(worst, std::abs(static_cast<double>(fused[i]) - decoded[i]) /
                                  (1.0 + std::abs(static_cast<double>(decoded[i]))));
    EXPECT_LE(worst, 1e-5) << "window " << rule.window << ", " << heads_per_record
                           << " heads per record";
    if (as_stored) {
      EXPECT_TRUE(test::bitwise_equal(fused, decoded))
          << "window " << rule.window << ", " << heads_per_record << " heads per record";
    }
  }
}

// Branches (BIM) over an encoded segment: a shared prefix (branch 0), then
// at each later position one entry of branch 1 and one of branch 2. A query
// of branch b gets the bits of the same store with the records of the other
// branch taken out, its codec scoring and summing only the records it sees.
void check_branches_equal_removing_records(const Compressor& codec, int64_t heads_per_record) {
  // Past kChunkKeys (256) stored entries: encoded segments stay one chunk.
  constexpr int64_t kPrefix = 10, kSteps = 150, kStored = kPrefix + 2 * kSteps, kN = 3;
  const int64_t width = heads_per_record * kHd, runs = kKvHeads / heads_per_record;
  const std::size_t record = codec.encoded_bytes(1, static_cast<int>(width));
  test::GaussianSource gauss(11);
  const std::vector<float> k_raw = gauss.vectors(runs * kStored, static_cast<int>(width)),
                           v_raw = gauss.vectors(runs * kStored, static_cast<int>(width));
  // The records of every entry, per run of heads; each entry's position and branch.
  struct Store {
    std::vector<uint8_t> k, v;
    std::vector<int32_t> positions;
    std::vector<BranchId> branches;
  };
  Store all;
  all.k.resize(runs * kStored * record);
  all.v.resize(all.k.size());
  codec.encode(k_raw.data(), runs * kStored, static_cast<int>(width), all.k.data());
  codec.encode(v_raw.data(), runs * kStored, static_cast<int>(width), all.v.data());
  for (int64_t j = 0; j < kStored; ++j) {
    const bool prefix = j < kPrefix;
    all.positions.push_back(static_cast<int32_t>(prefix ? j : kPrefix + (j - kPrefix) / 2));
    all.branches.push_back(static_cast<BranchId>(prefix ? 0 : 1 + (j - kPrefix) % 2));
  }
  // The entries of branch 0 and `branch`, their records copied.
  const auto seen_by = [&](BranchId branch) {
    Store kept;
    std::vector<int64_t> entries;
    for (int64_t j = 0; j < kStored; ++j)
      if (branch_sees(branch, all.branches[j])) entries.push_back(j);
    for (int64_t run = 0; run < runs; ++run)
      for (int64_t j : entries) {
        const auto from = static_cast<std::ptrdiff_t>((run * kStored + j) * record);
        const auto bytes = static_cast<std::ptrdiff_t>(record);
        kept.k.insert(kept.k.end(), all.k.begin() + from, all.k.begin() + from + bytes);
        kept.v.insert(kept.v.end(), all.v.begin() + from, all.v.begin() + from + bytes);
      }
    for (int64_t j : entries) kept.positions.push_back(all.positions[j]);
    return kept;
  };
  const auto segment = [&](const Store& s) {
    const auto count = static_cast<int64_t>(s.positions.size());
    KVSegment seg = encoded_segment(codec, s.k.data(), s.v.data(), count * record, heads_per_record,
                                    s.positions.data(), count);
    if (!s.branches.empty()) seg.branches = s.branches.data();
    return std::vector<KVSegment>{seg};
  };

  Batch batch = draw_batch(gauss, kPrefix + kSteps, kN);
  for (const WindowRule rule : {WindowRule{}, WindowRule{3, 100, false}})
    for (BranchId query : {1, 2, 0}) {
      batch.branches.assign(kN, query);
      const std::vector<float> filtered = attend(batch, segment(all), rule);
      batch.branches.clear();
      const std::vector<float> removed = attend(batch, segment(seen_by(query)), rule);
      EXPECT_TRUE(test::bitwise_equal(filtered, removed))
          << "branch " << query << ", window " << rule.window << ", " << heads_per_record
          << " heads per record";
    }
  // Branches that remove nothing (only the prefix's and the query's): the
  // bits of no filter.
  Store two = all;
  for (BranchId& b : two.branches) b = b == 2 ? 0 : b;
  for (const WindowRule rule : {WindowRule{}, WindowRule{3, 100, false}}) {
    batch.branches.assign(kN, 1);
    const std::vector<float> filtered = attend(batch, segment(two), rule);
    batch.branches.clear();
    EXPECT_TRUE(test::bitwise_equal(filtered, attend(batch, segment(two), rule)))
        << "window " << rule.window;
  }
}

TEST_P(FusedAttention, EqualsDecodeThenAttend) {
  check_fused_equals_decoded(*GetParam().codec, 1, GetParam().as_stored);
}

TEST_P(FusedAttention, RecordsSpanningATokensHeadsEqualDecodeThenAttend) {
  check_fused_equals_decoded(*GetParam().codec, 2, GetParam().as_stored);
}

TEST_P(FusedAttention, BranchesEqualRemovingTheOtherBranchesRecords) {
  check_branches_equal_removing_records(*GetParam().codec, 1);
  check_branches_equal_removing_records(*GetParam().codec, 2);
}

// Records the CPU reads as stored (f16, bf16, int8, int4) are rows in the chunks
// of f32 ones: a long context decoded one token at a time is split across
// threads by chunk (one token and 2 kv heads, fewer items than 4 threads)
// and gives the bits of one thread, which does not split.
TEST(FusedAttentionStoredRows, SplitByChunkGivesTheBitsOfOneThread) {
  constexpr int64_t kStored = 700;  // three chunks of 256
  const F16Codec f16;
  const Bf16Codec bf16;
  const Int8Codec int8;
  const Int4Codec int4(32);
  for (const Compressor* codec :
       std::initializer_list<const Compressor*>{&f16, &bf16, &int8, &int4}) {
    test::GaussianSource gauss(5);
    const std::size_t record = codec->encoded_bytes(1, kHd);
    const std::vector<float> k_raw = gauss.vectors(kKvHeads * kStored, kHd),
                             v_raw = gauss.vectors(kKvHeads * kStored, kHd);
    std::vector<uint8_t> k_rec(kKvHeads * kStored * record), v_rec(k_rec.size());
    codec->encode(k_raw.data(), kKvHeads * kStored, kHd, k_rec.data());
    codec->encode(v_raw.data(), kKvHeads * kStored, kHd, v_rec.data());
    std::vector<int32_t> positions(kStored);
    for (int64_t j = 0; j < kStored; ++j)
      positions[static_cast<std::size_t>(j)] = static_cast<int32_t>(j);
    const std::vector<KVSegment> parts = {encoded_segment(
        *codec, k_rec.data(), v_rec.data(), kStored * record, 1, positions.data(), kStored)};
    Batch batch = draw_batch(gauss, kStored, 1);
    for (const WindowRule rule : {WindowRule{}, WindowRule{4, 500, false}})
      EXPECT_TRUE(test::bitwise_equal(attend(batch, parts, rule, 4), attend(batch, parts, rule, 1)))
          << "window " << rule.window;
  }
}

INSTANTIATE_TEST_SUITE_P(Codecs, FusedAttention, ::testing::ValuesIn(codecs()),
                         [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace tessera
