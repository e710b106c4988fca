// The store conformance suite: every cache store, with every test codec, used
// the way the core uses it (through CheckedCacheStore, so the invariants are
// checked after every mutation) against a plain reference: append, eviction,
// views, truncate, copy with overlapping ranges, fork (then each side on its
// own), release, and byte accounting.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "core/cache/checked_cache_store.h"
#include "plugins/cache_paged/paged_store.h"
#include "plugins/cache_sink_window/sink_window_store.h"
#include "plugins/cache_static/static_cache_store.h"
#include "plugins/compressor_identity/identity_codec.h"
#include "plugins/compressor_int4/int4_codec.h"
#include "plugins/compressor_int8/int8_codec.h"
#include "plugins/compressor_lattice/lattice_codec.h"
#include "tests/cache/cache_test_util.h"

namespace tessera {
namespace {

using test::CodecOwningStore;
using test::HalfCodec;
using test::KVBatch;
using test::make_batch;
using test::positions_match;
using test::RefCache;
using test::views_match;

constexpr CacheGeometry kGeometry{3, 2, 8};

struct StoreCase {
  std::string name;
  std::function<std::unique_ptr<CacheStore>()> make;
  bool evicts = false;
  int64_t sink = 0, window = 0;
};

struct CodecCase {
  std::string name;
  std::function<std::unique_ptr<Compressor>()> make;
  std::size_t vector_bytes = 0;  // at head_dim 8
};

struct Case {
  StoreCase store;
  CodecCase codec;
  // 1: a codec vector per kv head; kGeometry.kv_heads: one per token
  // (cache.codec_span = "token").
  int heads_per_vector = 1;

  std::string name() const {
    return store.name + "_" + codec.name + (heads_per_vector > 1 ? "_token" : "");
  }
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name();
}

std::vector<Case> cases() {
  const std::vector<StoreCase> stores = {
      {"static", [] { return std::make_unique<StaticCacheStore>(); }},
      {"paged_b4", [] { return std::make_unique<PagedCacheStore>(4); }},
      {"paged_b1", [] { return std::make_unique<PagedCacheStore>(1); }},
      // A window wider than most tests append: the static store's views.
      {"sink_window_wide", [] { return std::make_unique<SinkWindowCacheStore>(2, 22, false); },
       true, 2, 22},
      {"sink_window", [] { return std::make_unique<SinkWindowCacheStore>(2, 4, false); }, true, 2,
       4},
      {"sink_window_reassign", [] { return std::make_unique<SinkWindowCacheStore>(3, 5, true); },
       true, 3, 5},
      // Window 3 and slack 3: six entries kept after the sinks.
      {"sink_window_slack", [] { return std::make_unique<SinkWindowCacheStore>(2, 3, false, 3); },
       true, 2, 6},
  };
  const std::vector<CodecCase> codecs = {
      {"identity", [] { return std::make_unique<IdentityCodec>(); }, 4 * 8},
      {"half", [] { return std::make_unique<HalfCodec>(); }, 2 * 8},
      {"int8", [] { return std::make_unique<Int8Codec>(); }, 8 + 2},
      {"int4", [] { return std::make_unique<Int4Codec>(8); }, 4 + 2},
      // D4 at Q = 38 over head_dim 8: two 25-bit block codes, then fp16 norm and qmax.
      {"lattice_d4",
       [] {
         return std::make_unique<LatticeCodec>(
             lattice::LatticeConfig{lattice::LatticeKind::kD4, 38, lattice::ClampMode::kBox});
       },
       7 + 4},
  };
  std::vector<Case> out;
  for (const auto& s : stores)
    for (const auto& c : codecs)
      for (const int heads : {1, kGeometry.kv_heads}) out.push_back({s, c, heads});
  return out;
}

class StoreConformance : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    const Case& c = GetParam();
    store_ = std::make_unique<CodecOwningStore>(c.store.make(), c.store.name, c.codec.make());
    reference_codec_ = c.codec.make();
    geometry_ = kGeometry;
    geometry_.heads_per_vector = c.heads_per_vector;
    ASSERT_TRUE(store_->init(geometry_).ok());
    ASSERT_EQ(reference_codec_->encoded_bytes(1, kGeometry.head_dim), c.codec.vector_bytes);
  }
  // Bytes of one stored codec vector (head_dim or a token's kv heads wide).
  std::size_t vector_bytes() const {
    return reference_codec_->encoded_bytes(1, geometry_.vector_width());
  }

  // Appends n tokens continuing `seq` (ids and positions from its logical length).
  void append(SequenceId seq, RefCache& ref, int64_t n) {
    const int64_t first = store_->info(seq)->logical_length;
    KVBatch b = make_batch(geometry_, first + 100 * seq, n, static_cast<int32_t>(first));
    const Status st = store_->append(seq, b.positions, b.kt, b.vt);
    ASSERT_TRUE(st.ok()) << st.to_string();
    ref.append_through(b, *reference_codec_);
    if (GetParam().store.evicts)
      ref.evict(GetParam().store.sink, GetParam().store.window, b.positions.back());
  }

  ::testing::AssertionResult matches(SequenceId seq, const RefCache& ref) {
    if (auto r = views_match(*store_, seq, ref); !r) return r;
    return positions_match(*store_, seq, ref);
  }

  std::size_t entry_bytes() const {
    return static_cast<std::size_t>(geometry_.layers) * 2 * geometry_.vectors_per_token() *
               vector_bytes() +
           sizeof(int32_t) + (store_->policy().keeps_branches ? sizeof(BranchId) : 0);
  }

  std::unique_ptr<CodecOwningStore> store_;
  std::unique_ptr<Compressor> reference_codec_;  // to compute what the store should give back
  CacheGeometry geometry_;
};

TEST_P(StoreConformance, AppendsAndViews) {
  RefCache ref{geometry_, {}};
  ASSERT_TRUE(store_->allocate(0, 24).ok());
  EXPECT_TRUE(matches(0, ref));
  for (int64_t n : {5, 3, 1, 1, 1}) {
    append(0, ref, n);
    ASSERT_TRUE(matches(0, ref));
  }
  const SequenceInfo info = *store_->info(0);
  EXPECT_EQ(info.logical_length, 11);
  EXPECT_EQ(info.stored, static_cast<int64_t>(ref.tokens.size()));
  // Bytes are what is stored: the codec's bytes and a position per entry.
  EXPECT_EQ(store_->bytes().live, ref.tokens.size() * entry_bytes());
  EXPECT_GE(store_->bytes().peak, store_->bytes().live);
  // The one sequence holds all of them (ABI 6.1), sharing none.
  EXPECT_EQ(store_->sequence_bytes(0)->held, store_->bytes().live);
  EXPECT_EQ(store_->sequence_bytes(0)->shared, 0u);
}

TEST_P(StoreConformance, TruncatesAsFarAsItCan) {
  RefCache ref{geometry_, {}};
  ASSERT_TRUE(store_->allocate(0, 24).ok());
  append(0, ref, 9);
  const SequenceInfo info = *store_->info(0);
  const int64_t target = std::max<int64_t>(info.min_truncatable, 7);
  ASSERT_TRUE(store_->truncate(0, target).ok());
  std::erase_if(ref.tokens, [&](const test::RefToken& t) { return t.position >= target; });
  EXPECT_TRUE(matches(0, ref));
  EXPECT_EQ(store_->info(0)->logical_length, target);
  if (info.min_truncatable > 0) {
    // Below that, the store refuses instead of giving a wrong cache.
    EXPECT_EQ(store_->truncate(0, info.min_truncatable - 1).code(),
              StatusCode::kFailedPrecondition);
  }
  // And the sequence goes on from there.
  append(0, ref, 2);
  EXPECT_TRUE(matches(0, ref));
  EXPECT_EQ(store_->bytes().live, ref.tokens.size() * entry_bytes());
}

TEST_P(StoreConformance, CopiesOverlappingRanges) {
  RefCache ref{geometry_, {}};
  ASSERT_TRUE(store_->allocate(0, 24).ok());
  append(0, ref, 9);
  const int64_t stored = store_->info(0)->stored;
  // An accepted path compacted down onto itself: sources overlap destinations.
  const int64_t dst = GetParam().store.evicts ? GetParam().store.sink : 1;
  std::vector<int64_t> src = {dst + 1, dst + 2, stored - 1};
  const int64_t logical = store_->info(0)->logical_length;
  const Status st = store_->copy(0, src, dst);
  ASSERT_TRUE(st.ok()) << st.to_string();
  ref.copy(src, dst);
  EXPECT_TRUE(matches(0, ref));
  EXPECT_EQ(store_->info(0)->logical_length, logical - (stored - dst - 3));
  EXPECT_EQ(store_->bytes().live, ref.tokens.size() * entry_bytes());
}

TEST_P(StoreConformance, ForksAndTheTwoGoTheirOwnWays) {
  RefCache a{geometry_, {}};
  ASSERT_TRUE(store_->allocate(0, 24).ok());
  append(0, a, 6);  // a partial block for paged_b4: the fork shares it
  ASSERT_TRUE(store_->fork(0, 1).ok());
  RefCache b = a;
  EXPECT_TRUE(matches(1, b));
  EXPECT_EQ(store_->info(1)->logical_length, 6);
  append(1, b, 3);
  append(0, a, 1);
  EXPECT_TRUE(matches(0, a));
  EXPECT_TRUE(matches(1, b));
  ASSERT_TRUE(store_->truncate(1, std::max<int64_t>(store_->info(1)->min_truncatable, 8)).ok());
  std::erase_if(b.tokens, [&](const test::RefToken& t) {
    return t.position >= store_->info(1)->logical_length;
  });
  EXPECT_TRUE(matches(0, a));
  EXPECT_TRUE(matches(1, b));
  // Each holds its own entries; what the two share is live once.
  const SequenceBytes first = *store_->sequence_bytes(0), second = *store_->sequence_bytes(1);
  EXPECT_EQ(first.held, a.tokens.size() * entry_bytes());
  EXPECT_EQ(second.held, b.tokens.size() * entry_bytes());
  EXPECT_EQ(first.shared, second.shared);
  EXPECT_EQ(first.held + second.held - first.shared, store_->bytes().live);
  ASSERT_TRUE(store_->release(0).ok());
  EXPECT_TRUE(matches(1, b));
  EXPECT_EQ(store_->sequence_bytes(1)->shared, 0u);
  ASSERT_TRUE(store_->release(1).ok());
  EXPECT_EQ(store_->bytes().live, 0u);
}

TEST_P(StoreConformance, ReleaseGivesEverythingBack) {
  RefCache ref{geometry_, {}};
  ASSERT_TRUE(store_->allocate(0, 24).ok());
  append(0, ref, 7);
  ASSERT_TRUE(store_->release(0).ok());
  EXPECT_EQ(store_->bytes().live, 0u);
  EXPECT_FALSE(store_->contains(0));
  // The same id can start again, empty.
  ASSERT_TRUE(store_->allocate(0, 24).ok());
  RefCache fresh{geometry_, {}};
  EXPECT_TRUE(matches(0, fresh));
}

// Memory stays flat however long an evicting store's sequence runs; the
// others stop at their capacity.
TEST_P(StoreConformance, LongSequences) {
  RefCache ref{geometry_, {}};
  ASSERT_TRUE(store_->allocate(0, 24).ok());
  if (!GetParam().store.evicts) {
    append(0, ref, 24);
    KVBatch more = make_batch(geometry_, 24, 1, 24);
    EXPECT_EQ(store_->append(0, more.positions, more.kt, more.vt).code(),
              StatusCode::kResourceExhausted);
    return;
  }
  const std::size_t bound =
      static_cast<std::size_t>(GetParam().store.sink + GetParam().store.window) * entry_bytes();
  for (int i = 0; i < 60; ++i) {
    append(0, ref, i % 7 == 0 ? 3 : 1);
    ASSERT_LE(store_->bytes().live, bound);
  }
  EXPECT_TRUE(matches(0, ref));
  EXPECT_GT(store_->info(0)->logical_length, 60);
}

INSTANTIATE_TEST_SUITE_P(Stores, StoreConformance, ::testing::ValuesIn(cases()),
                         [](const auto& param_info) { return param_info.param.name(); });

// A fork shares the source's blocks until one of them writes.
TEST(PagedStore, ForkSharesBlocksAndCopiesOnWrite) {
  CodecOwningStore store(std::make_unique<PagedCacheStore>(4), "paged",
                         std::make_unique<IdentityCodec>());
  ASSERT_TRUE(store.init(kGeometry).ok());
  auto& paged = static_cast<PagedCacheStore&>(store.unchecked());
  ASSERT_TRUE(store.allocate(0, 16).ok());
  KVBatch b = make_batch(kGeometry, 0, 6, 0);
  ASSERT_TRUE(store.append(0, b.positions, b.kt, b.vt).ok());
  const std::size_t live = store.bytes().live;
  ASSERT_TRUE(store.fork(0, 1).ok());
  EXPECT_EQ(store.bytes().live, live) << "a fork stores nothing new";
  for (const SequenceId seq : {0, 1}) {
    EXPECT_EQ(store.sequence_bytes(seq)->held, live);
    EXPECT_EQ(store.sequence_bytes(seq)->shared, live);
  }
  const std::vector<int32_t> before(paged.block_table(1).begin(), paged.block_table(1).end());
  EXPECT_EQ(before, std::vector<int32_t>(paged.block_table(0).begin(), paged.block_table(0).end()));
  EXPECT_EQ(paged.block_references(before[0]), 2);
  KVBatch more = make_batch(kGeometry, 6, 1, 6);
  ASSERT_TRUE(store.append(1, more.positions, more.kt, more.vt).ok());
  // The full first block is still shared; the partial second one was copied.
  EXPECT_EQ(paged.block_table(1)[0], before[0]);
  EXPECT_NE(paged.block_table(1)[1], before[1]);
  EXPECT_EQ(paged.block_references(before[0]), 2);
  EXPECT_EQ(paged.block_references(before[1]), 1);
  EXPECT_EQ(store.sequence_bytes(0)->shared, live * 4 / 6) << "the full first block";
  EXPECT_EQ(store.sequence_bytes(1)->held, live * 7 / 6);
  ASSERT_TRUE(store.release(0).ok());
  ASSERT_TRUE(store.release(1).ok());
  EXPECT_EQ(store.bytes().live, 0u);
}

// Released blocks go back to the pool: allocating again adds none.
TEST(PagedStore, ReleasedBlocksAreReused) {
  CodecOwningStore store(std::make_unique<PagedCacheStore>(4), "paged",
                         std::make_unique<IdentityCodec>());
  ASSERT_TRUE(store.init(kGeometry).ok());
  auto& paged = static_cast<PagedCacheStore&>(store.unchecked());
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(store.allocate(round, 16).ok());
    KVBatch b = make_batch(kGeometry, 0, 10, 0);
    ASSERT_TRUE(store.append(round, b.positions, b.kt, b.vt).ok());
    ASSERT_TRUE(store.release(round).ok());
  }
  EXPECT_EQ(paged.pool_blocks(), 4);
}

TEST(SinkWindowStore, TooSmallACapacityIsRefused) {
  CodecOwningStore store(std::make_unique<SinkWindowCacheStore>(4, 64, false), "sink_window",
                         std::make_unique<IdentityCodec>());
  ASSERT_TRUE(store.init(kGeometry).ok());
  const Status st = store.allocate(0, 32);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("sink + window = 68 entries"), std::string::npos) << st.message();
}

// Slack keeps entries no query sees (the rule's window stays 3) so that
// truncate() can take back slack + 1 tokens instead of one.
TEST(SinkWindowStore, SlackTakesBackThatManyMoreTokens) {
  for (const int64_t slack : {0, 3}) {
    SCOPED_TRACE(slack);
    CodecOwningStore store(std::make_unique<SinkWindowCacheStore>(2, 3, false, slack),
                           "sink_window", std::make_unique<IdentityCodec>());
    ASSERT_TRUE(store.init(kGeometry).ok());
    EXPECT_EQ(store.policy().rule.window, 3);
    EXPECT_EQ(store.policy().max_entries, 2 + 3 + slack);
    ASSERT_TRUE(store.allocate(0, 16).ok());
    KVBatch b = make_batch(kGeometry, 0, 20, 0);
    ASSERT_TRUE(store.append(0, b.positions, b.kt, b.vt).ok());
    const SequenceInfo info = *store.info(0);
    EXPECT_EQ(info.stored, 2 + 3 + slack);
    EXPECT_EQ(info.min_truncatable, 20 - (slack + 1));
    ASSERT_TRUE(store.truncate(0, 20 - (slack + 1)).ok());
    EXPECT_EQ(store.info(0)->stored, 2 + 2);  // what a query at the new end sees
    EXPECT_FALSE(store.truncate(0, 20 - (slack + 2)).ok());
  }
}

}  // namespace
}  // namespace tessera
