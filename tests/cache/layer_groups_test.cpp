// CheckedCacheStore with two layer groups (core/cache/checked_cache_store.h):
// layers 0 and 2 in a window store, 1 and 3 in a static one. Each layer's
// view holds its own layer's K/V (the gather is right), the window layers
// the newest entries only; a refused append leaves both groups as they were;
// copy() is translated to the window group's indices or refused before
// anything moves; branches and in-place entries are refused with the reason.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/cache/checked_cache_store.h"
#include "plugins/cache_sink_window/sink_window_store.h"
#include "plugins/cache_static/static_cache_store.h"
#include "plugins/compressor_identity/identity_codec.h"
#include "tests/cache/cache_test_util.h"

namespace tessera {
namespace {

using test::kv_value;
using test::KVBatch;
using test::make_batch;

constexpr CacheGeometry kGeometry{4, 2, 8};

class LayerGroups : public ::testing::Test {
 protected:
  void SetUp() override {
    cache_ = std::make_unique<CheckedCacheStore>(std::make_unique<StaticCacheStore>(), "static");
    ASSERT_TRUE(cache_
                    ->give_layers_to(std::make_unique<SinkWindowCacheStore>(0, 3, false, 2),
                                     "sink_window", {2, 0}, "sliding-window layers")
                    .ok());
    codecs_.assign(4, &codec_);
    ASSERT_TRUE(cache_->init(kGeometry, codecs_).ok());
    ASSERT_TRUE(cache_->allocate(0, 32).ok());
  }

  // The first value of entry `index` of a layer's view: which token and
  // layer it came from (kv_value's layout).
  float first_k(int layer, int64_t index, SequenceId seq = 0) {
    auto view = cache_->view(seq, layer);
    EXPECT_TRUE(view.ok()) << view.status().to_string();
    for (const KVSegment& s : view->segments) {
      if (index < s.count) return s.k.f32()[index * s.k.stride[1]];
      index -= s.count;
    }
    return 0;
  }

  IdentityCodec codec_;
  std::vector<const Compressor*> codecs_;
  std::unique_ptr<CheckedCacheStore> cache_;
};

TEST_F(LayerGroups, EachLayerHoldsItsOwnKVAndTheWindowLayersTheNewest) {
  EXPECT_EQ(cache_->describe_groups(),
            "static: layers 1, 3; sink_window (sliding-window layers): layers 0, 2");
  KVBatch b = make_batch(kGeometry, 0, 12, 0);
  ASSERT_TRUE(cache_->append(0, b.positions, b.kt, b.vt).ok());
  for (const int layer : {1, 3}) {
    EXPECT_EQ(*cache_->stored_length(0, layer, 0), 12);
    EXPECT_EQ(first_k(layer, 0), kv_value(0, layer, 0, 0, 0));
    EXPECT_EQ(first_k(layer, 11), kv_value(0, layer, 11, 0, 0));
  }
  for (const int layer : {0, 2}) {
    EXPECT_EQ(*cache_->stored_length(0, layer, 1), 5);  // window 3 + slack 2
    EXPECT_EQ(first_k(layer, 0), kv_value(0, layer, 7, 0, 0));
    EXPECT_EQ(first_k(layer, 4), kv_value(0, layer, 11, 0, 0));
  }
  const SequenceInfo info = *cache_->info(0);
  EXPECT_EQ(info.stored, 12);
  EXPECT_EQ(info.logical_length, 12);
  EXPECT_EQ(info.min_truncatable, 9);  // the window group's: 12 - (slack + 1)
  EXPECT_EQ(cache_->positions(0)->size(), 12u);
}

TEST_F(LayerGroups, CopyIsTranslatedOrRefusedBeforeAnythingMoves) {
  KVBatch b = make_batch(kGeometry, 0, 12, 0);
  ASSERT_TRUE(cache_->append(0, b.positions, b.kt, b.vt).ok());
  // Entry 5 of the static layers is one the window layers no longer hold.
  const std::vector<int64_t> far = {6, 8};
  EXPECT_EQ(cache_->copy(0, far, 5).code(), StatusCode::kUnimplemented);
  EXPECT_EQ(cache_->info(0)->stored, 12);
  // Keep entries 0..8, then 10: entry 9 becomes token 10 in every layer.
  const std::vector<int64_t> path = {10};
  ASSERT_TRUE(cache_->copy(0, path, 9).ok());
  EXPECT_EQ(cache_->info(0)->stored, 10);
  EXPECT_EQ(first_k(1, 9), kv_value(0, 1, 10, 0, 0));
  EXPECT_EQ(*cache_->stored_length(0, 0, 0), 3);
  EXPECT_EQ(first_k(0, 2), kv_value(0, 0, 10, 0, 0));
  EXPECT_EQ(first_k(0, 1), kv_value(0, 0, 8, 0, 0));
}

TEST_F(LayerGroups, RefusalsLeaveEveryGroupAsItWas) {
  KVBatch b = make_batch(kGeometry, 0, 4, 0);
  ASSERT_TRUE(cache_->append(0, b.positions, b.kt, b.vt).ok());
  // Branches: the window store keeps none, so the cache keeps none.
  EXPECT_FALSE(cache_->policy().keeps_branches);
  const std::vector<BranchId> branches(4, 1);
  KVBatch more = make_batch(kGeometry, 4, 4, 4);
  const Status branched = cache_->append(0, more.positions, branches, more.kt, more.vt);
  EXPECT_EQ(branched.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(branched.message().find("branch_layout = \"batched\""), std::string::npos);
  // Past the static group's capacity: refused there, nothing appended anywhere.
  KVBatch too_many = make_batch(kGeometry, 4, 40, 4);
  EXPECT_EQ(cache_->append(0, too_many.positions, too_many.kt, too_many.vt).code(),
            StatusCode::kResourceExhausted);
  for (const int layer : {0, 1, 2, 3}) EXPECT_EQ(*cache_->stored_length(0, layer, 0), 4);
  EXPECT_EQ(cache_->info(0)->logical_length, 4);
  EXPECT_EQ(cache_->append_in_place(0, more.positions).code(), StatusCode::kFailedPrecondition);
  // Too far back for the window layers.
  KVBatch rest = make_batch(kGeometry, 4, 8, 4);
  ASSERT_TRUE(cache_->append(0, rest.positions, rest.kt, rest.vt).ok());
  EXPECT_EQ(cache_->truncate(0, 2).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(cache_->truncate(0, 9).ok());
  for (const int layer : {0, 2}) EXPECT_EQ(*cache_->stored_length(0, layer, 0), 2);
  for (const int layer : {1, 3}) EXPECT_EQ(*cache_->stored_length(0, layer, 0), 9);
  // A fork holds the same in every group; releasing frees both.
  ASSERT_TRUE(cache_->fork(0, 1).ok());
  EXPECT_EQ(*cache_->stored_length(1, 0, 0), 2);
  EXPECT_EQ(*cache_->stored_length(1, 1, 0), 9);
  EXPECT_EQ(first_k(0, 1, 1), kv_value(0, 0, 8, 0, 0));
  EXPECT_EQ(first_k(1, 8, 1), kv_value(0, 1, 8, 0, 0));
  ASSERT_TRUE(cache_->release(0).ok());
  ASSERT_TRUE(cache_->release(1).ok());
  EXPECT_EQ(cache_->bytes().live, 0u);
  EXPECT_GT(cache_->bytes().peak, 0u);
}

TEST(LayerGroupsSetUp, BadGroupsAreRefused) {
  CheckedCacheStore cache(std::make_unique<StaticCacheStore>(), "static");
  ASSERT_TRUE(cache
                  .give_layers_to(std::make_unique<SinkWindowCacheStore>(0, 3, false),
                                  "sink_window", {0}, "sliding-window layers")
                  .ok());
  EXPECT_EQ(cache
                .give_layers_to(std::make_unique<SinkWindowCacheStore>(0, 3, false), "sink_window",
                                {0, 1}, "more")
                .code(),
            StatusCode::kInvalidArgument);
  IdentityCodec codec;
  const std::vector<const Compressor*> one(1, &codec);
  // Every layer given away leaves the first group none.
  EXPECT_EQ(cache.init({1, 2, 8}, one).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera
