// The static store allocates nothing after allocate() (counted by the
// replacement operator new of tests/support/counting_allocator.cpp).
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/cache/checked_cache_store.h"
#include "plugins/cache_static/static_cache_store.h"
#include "plugins/compressor_identity/identity_codec.h"
#include "tests/cache/cache_test_util.h"
#include "tests/support/counting_allocator.h"

namespace tessera {
namespace {

using test::CountAllocations;
using test::HalfCodec;
using test::KVBatch;
using test::make_batch;

// One decode step after another: append, view every layer, accept a path, truncate.
long allocations_in_steps(std::unique_ptr<Compressor> codec) {
  const CacheGeometry g{4, 2, 16};
  test::CodecOwningStore store(std::make_unique<StaticCacheStore>(), "static", std::move(codec));
  EXPECT_TRUE(store.init(g).ok());
  EXPECT_TRUE(store.allocate(0, 64).ok());
  // Inputs prepared before counting: the caller's buffers are not the store's business.
  std::vector<KVBatch> steps;
  for (int s = 0; s < 8; ++s) steps.push_back(make_batch(g, s * 4, 4, s * 4));
  const std::vector<int64_t> path = {0, 2};  // relative to the step's first token

  CountAllocations counter;
  float sink = 0.0f;
  int64_t len = 0;
  for (const KVBatch& b : steps) {
    EXPECT_TRUE(store.append(0, b.positions, b.kt, b.vt).ok());
    for (int l = 0; l < g.layers; ++l) {
      auto view = store.view(0, l);
      EXPECT_TRUE(view.ok());
      sink += view->segments[0].k.f32()[0] + view->segments[0].v.f32()[0];
    }
    const int64_t src[2] = {len + path[0], len + path[1]};
    EXPECT_TRUE(store.copy(0, src, len).ok());
    len += 2;
    EXPECT_TRUE(store.truncate(0, len).ok());
    EXPECT_EQ(store.info(0)->stored, len);
    EXPECT_EQ(store.positions(0)->size(), static_cast<std::size_t>(len));
    (void)store.bytes();
  }
  EXPECT_NE(sink, 0.0f);
  return counter.count();
}

TEST(StaticCacheStoreNoAlloc, CounterSeesAllocations) {
  // The counter works (else the tests below prove nothing).
  CountAllocations counter;
  auto p = std::make_unique<int>(3);
  EXPECT_GE(counter.count(), 1);
}

TEST(StaticCacheStoreNoAlloc, IdentityStepsAllocateNothing) {
  EXPECT_EQ(allocations_in_steps(std::make_unique<IdentityCodec>()), 0);
}

TEST(StaticCacheStoreNoAlloc, DecodingStepsAllocateNothing) {
  EXPECT_EQ(allocations_in_steps(std::make_unique<HalfCodec>()), 0);
}

}  // namespace
}  // namespace tessera
