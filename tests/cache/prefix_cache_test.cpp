// The prefix cache over the paged store's shared blocks: a sequence begins
// with the longest cached prefix of its tokens in whole blocks, bit for bit
// the K/V that were written; a held block outlives its sequence and is
// copied, never changed, when a sequence writes into it; a miss is a miss
// whatever the hash; eviction is least recently used, deepest block first,
// within the budget; and every block goes back when the cache goes.
#include "core/cache/prefix_cache.h"

#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <vector>

#include "plugins/cache_paged/paged_store.h"
#include "plugins/cache_static/static_cache_store.h"
#include "plugins/compressor_identity/identity_codec.h"
#include "tests/cache/cache_test_util.h"

namespace tessera {
namespace {

const CacheGeometry kGeometry{2, 2, 4, 1};
constexpr int64_t kBlock = 4;

std::unique_ptr<test::CodecOwningStore> paged_store() {
  auto store = std::make_unique<test::CodecOwningStore>(std::make_unique<PagedCacheStore>(kBlock),
                                                        "paged", std::make_unique<IdentityCodec>());
  EXPECT_TRUE(store->init(kGeometry).ok());
  return store;
}

// Token ids 100 + i for i in [first, first + n).
std::vector<int32_t> tokens(int32_t first, int32_t n) {
  std::vector<int32_t> out(static_cast<std::size_t>(n));
  std::iota(out.begin(), out.end(), 100 + first);
  return out;
}

// Sequence `seq` of `n` entries whose K/V are test::make_batch's for ids
// [first_id, first_id + n) at positions 0..n-1; the reference gets them too.
void fill(CheckedCacheStore& store, SequenceId seq, int64_t first_id, int64_t n,
          test::RefCache& ref) {
  ASSERT_TRUE(store.allocate(seq, 64).ok());
  const test::KVBatch batch = test::make_batch(kGeometry, first_id, n, 0);
  ASSERT_TRUE(store.append(seq, batch.positions, batch.kt, batch.vt).ok());
  ref.append(batch);
}

test::RefCache first_entries(const test::RefCache& ref, int64_t n) {
  test::RefCache out{ref.g, {}};
  out.tokens.assign(ref.tokens.begin(), ref.tokens.begin() + n);
  return out;
}

TEST(PrefixCache, ASequenceBeginsWithTheLongestCachedPrefixBitForBit) {
  auto store = paged_store();
  test::RefCache ref{kGeometry, {}};
  fill(*store, 0, 0, 10, ref);
  PrefixCache cache(*store, "model a", 1 << 20);
  ASSERT_TRUE(cache.publish(0, tokens(0, 10)).ok());
  EXPECT_EQ(cache.stats().blocks, 2) << "two full blocks of 4; the last 2 tokens are no block";
  ASSERT_TRUE(store->release(0).ok());

  // The same 10 tokens and more: both blocks, bit for bit what was written.
  ASSERT_TRUE(store->allocate(1, 64).ok());
  auto reused = cache.adopt(1, tokens(0, 14), /*keep_uncached=*/1);
  ASSERT_TRUE(reused.ok()) << reused.status().to_string();
  EXPECT_EQ(*reused, 8);
  EXPECT_EQ(store->info(1)->logical_length, 8);
  EXPECT_TRUE(test::views_match(*store, 1, first_entries(ref, 8)));
  EXPECT_TRUE(test::positions_match(*store, 1, first_entries(ref, 8)));
  const PrefixCacheStats stats = cache.stats();
  EXPECT_EQ(stats.lookups, 1);
  EXPECT_EQ(stats.hits, 1);
  EXPECT_EQ(stats.tokens_reused, 8);
}

TEST(PrefixCache, OnlyWholeMatchingBlocksAndAlwaysOneTokenLeftToCompute) {
  auto store = paged_store();
  test::RefCache ref{kGeometry, {}};
  fill(*store, 0, 0, 8, ref);
  PrefixCache cache(*store, "model a", 1 << 20);
  ASSERT_TRUE(cache.publish(0, tokens(0, 8)).ok());

  std::vector<int32_t> differs_in_block_two = tokens(0, 12);
  differs_in_block_two[5] = 7;
  ASSERT_TRUE(store->allocate(1, 64).ok());
  EXPECT_EQ(*cache.adopt(1, differs_in_block_two, 1), 4);

  // Exactly the cached 8 tokens: the last must be fed to get its logits.
  ASSERT_TRUE(store->allocate(2, 64).ok());
  EXPECT_EQ(*cache.adopt(2, tokens(0, 8), 1), 4);

  std::vector<int32_t> differs_first = tokens(0, 12);
  differs_first[0] = 1;
  ASSERT_TRUE(store->allocate(3, 64).ok());
  EXPECT_EQ(*cache.adopt(3, differs_first, 1), 0);
  EXPECT_EQ(store->info(3)->logical_length, 0);
  EXPECT_EQ(cache.stats().hits, 2);
  EXPECT_EQ(cache.stats().lookups, 3);
}

TEST(PrefixCache, AnotherIdentityNeverMatches) {
  auto store = paged_store();
  test::RefCache ref{kGeometry, {}};
  fill(*store, 0, 0, 8, ref);
  PrefixCache a(*store, "model a", 1 << 20);
  PrefixCache b(*store, "model b", 1 << 20);
  ASSERT_TRUE(a.publish(0, tokens(0, 8)).ok());
  ASSERT_TRUE(store->allocate(1, 64).ok());
  EXPECT_EQ(*b.adopt(1, tokens(0, 12), 1), 0) << "K/V of another model or codec are not these";
  EXPECT_EQ(*a.adopt(1, tokens(0, 12), 1), 8);
}

TEST(PrefixCache, AHeldBlockIsCopiedNeverChangedWhenASequenceWritesIntoIt) {
  auto store = paged_store();
  test::RefCache ref{kGeometry, {}};
  fill(*store, 0, 0, 8, ref);
  PrefixCache cache(*store, "model a", 1 << 20);
  ASSERT_TRUE(cache.publish(0, tokens(0, 8)).ok());
  // The writer itself goes back into its second block and writes other K/V.
  ASSERT_TRUE(store->truncate(0, 6).ok());
  const test::KVBatch other = test::make_batch(kGeometry, 50, 2, 6);
  ASSERT_TRUE(store->append(0, other.positions, other.kt, other.vt).ok());
  EXPECT_GT(store->bytes().copied, 0u) << "copy-on-write of the held block";
  // A later sequence still gets the original bits.
  ASSERT_TRUE(store->allocate(1, 64).ok());
  EXPECT_EQ(*cache.adopt(1, tokens(0, 9), 1), 8);
  EXPECT_TRUE(test::views_match(*store, 1, first_entries(ref, 8)));
  // And a sequence that adopted writes past the blocks, then into them.
  const test::KVBatch more = test::make_batch(kGeometry, 60, 3, 8);
  ASSERT_TRUE(store->append(1, more.positions, more.kt, more.vt).ok());
  ASSERT_TRUE(store->truncate(1, 2).ok());
  const test::KVBatch again = test::make_batch(kGeometry, 70, 3, 2);
  ASSERT_TRUE(store->append(1, again.positions, again.kt, again.vt).ok());
  ASSERT_TRUE(store->allocate(2, 64).ok());
  EXPECT_EQ(*cache.adopt(2, tokens(0, 9), 1), 8);
  EXPECT_TRUE(test::views_match(*store, 2, first_entries(ref, 8)));
}

TEST(PrefixCache, EvictsTheLeastRecentlyUsedDeepestBlockFirstWithinTheBudget) {
  auto store = paged_store();
  const std::size_t block = store->shared_block_bytes();
  ASSERT_GT(block, 0u);
  PrefixCache cache(*store, "model a", 3 * block);
  test::RefCache ref_a{kGeometry, {}}, ref_b{kGeometry, {}};
  fill(*store, 0, 0, 8, ref_a);
  ASSERT_TRUE(cache.publish(0, tokens(0, 8)).ok());  // chain A: 2 blocks
  std::vector<int32_t> b_tokens = tokens(40, 8);
  fill(*store, 1, 40, 8, ref_b);
  ASSERT_TRUE(cache.publish(1, b_tokens).ok());  // chain B: 2 more, over budget by one
  PrefixCacheStats stats = cache.stats();
  EXPECT_EQ(stats.blocks, 3);
  EXPECT_EQ(stats.evicted, 1);
  EXPECT_LE(stats.bytes, 3 * block);
  // A was used least recently: its second block went, its first stays.
  ASSERT_TRUE(store->allocate(2, 64).ok());
  EXPECT_EQ(*cache.adopt(2, tokens(0, 9), 1), 4);
  ASSERT_TRUE(store->allocate(3, 64).ok());
  EXPECT_EQ(*cache.adopt(3, tokens(40, 9), 1), 8);
}

TEST(PrefixCache, EveryBlockGoesBackWhenTheCacheGoes) {
  auto store = paged_store();
  test::RefCache ref{kGeometry, {}};
  fill(*store, 0, 0, 8, ref);
  {
    PrefixCache cache(*store, "model a", 1 << 20);
    ASSERT_TRUE(cache.publish(0, tokens(0, 8)).ok());
    ASSERT_TRUE(store->release(0).ok());
    EXPECT_GT(store->bytes().live, 0u) << "the cache holds the blocks";
  }
  EXPECT_EQ(store->bytes().live, 0u);
}

TEST(PrefixCache, ABlockOfBranchesEndsTheChain) {
  auto store = paged_store();
  ASSERT_TRUE(store->allocate(0, 64).ok());
  const test::KVBatch prefix = test::make_batch(kGeometry, 0, 4, 0);
  ASSERT_TRUE(store->append(0, prefix.positions, prefix.kt, prefix.vt).ok());
  test::KVBatch branched = test::make_batch(kGeometry, 4, 4, 4);
  const std::vector<BranchId> branches = {1, 1, 2, 2};
  branched.positions = {4, 5, 4, 5};
  ASSERT_TRUE(store->append(0, branched.positions, branches, branched.kt, branched.vt).ok());
  PrefixCache cache(*store, "model a", 1 << 20);
  ASSERT_TRUE(cache.publish(0, tokens(0, 8)).ok());
  EXPECT_EQ(cache.stats().blocks, 1) << "the plain first block only";
}

TEST(PrefixCache, AStoreOfOneBufferPerSequenceSharesNoBlocks) {
  test::CodecOwningStore store(std::make_unique<StaticCacheStore>(), "static",
                               std::make_unique<IdentityCodec>());
  ASSERT_TRUE(store.init(kGeometry).ok());
  EXPECT_EQ(store.shared_block_size(), 0);
  ASSERT_TRUE(store.allocate(0, 16).ok());
  EXPECT_FALSE(store.hold_block(0, 0).ok());
}

}  // namespace
}  // namespace tessera
