// Branch ids on stored entries (BIM): stores that keep them hand them back in
// order and in views, through copy and fork; a store that does not refuses
// them; and the checked store holds positions per branch (INV-2: a branch's
// positions, the shared prefix's included, never decrease; each branch may
// restart at the prefix length).
#include <gtest/gtest.h>

#include <gmock/gmock.h>

#include <memory>
#include <vector>

#include "plugins/cache_paged/paged_store.h"
#include "plugins/cache_sink_window/sink_window_store.h"
#include "plugins/cache_static/static_cache_store.h"
#include "plugins/compressor_identity/identity_codec.h"
#include "tests/cache/cache_test_util.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const CacheGeometry kGeometry{2, 2, 4, 1};

std::unique_ptr<test::CodecOwningStore> make(std::unique_ptr<CacheStore> store, const char* name) {
  auto checked = std::make_unique<test::CodecOwningStore>(std::move(store), name,
                                                          std::make_unique<IdentityCodec>());
  EXPECT_TRUE(checked->init(kGeometry).ok());
  EXPECT_TRUE(checked->allocate(0, 64).ok());
  return checked;
}

Status append(CheckedCacheStore& store, int64_t first_id, std::vector<int32_t> positions,
              std::vector<BranchId> branches) {
  test::KVBatch b =
      test::make_batch(kGeometry, first_id, static_cast<int64_t>(positions.size()), 0);
  b.positions = std::move(positions);
  return store.append(0, b.positions, branches, b.kt, b.vt);
}

std::vector<BranchId> view_branches(CheckedCacheStore& store) {
  std::vector<BranchId> out;
  auto view = store.view(0, 1);
  EXPECT_TRUE(view.ok());
  for (const KVSegment& seg : view->segments)
    for (int64_t j = 0; j < seg.count; ++j) out.push_back(seg.branches ? seg.branches[j] : 0);
  return out;
}

class BranchStores : public ::testing::TestWithParam<const char*> {
 protected:
  std::unique_ptr<test::CodecOwningStore> store() {
    if (std::string(GetParam()) == "paged")
      return make(std::make_unique<PagedCacheStore>(int64_t{3}), "paged");
    return make(std::make_unique<StaticCacheStore>(), "static");
  }
};

TEST_P(BranchStores, KeepBranchesInOrderThroughViewsCopyAndFork) {
  auto s = store();
  ASSERT_TRUE(s->policy().keeps_branches);
  // A prefix of 3, then branches 1 and 2 interleaved, each restarting at 3.
  ASSERT_TRUE(append(*s, 0, {0, 1, 2}, {}).ok());
  EXPECT_TRUE(s->branches(0)->empty()) << "no branch yet: nothing to filter";
  ASSERT_TRUE(append(*s, 3, {3, 3, 4, 4, 5}, {1, 2, 1, 2, 2}).ok());
  EXPECT_THAT(*s->branches(0), ElementsAre(0, 0, 0, 1, 2, 1, 2, 2));
  EXPECT_THAT(view_branches(*s), ElementsAre(0, 0, 0, 1, 2, 1, 2, 2));
  // Fork keeps them.
  ASSERT_TRUE(s->fork(0, 1).ok());
  EXPECT_THAT(*s->branches(1), ElementsAre(0, 0, 0, 1, 2, 1, 2, 2));
  // Copy moves them with the entry: keep entries 3 and 5 (branch 1) after the prefix.
  const int64_t src[] = {3, 5};
  ASSERT_TRUE(s->copy(0, src, 3).ok());
  EXPECT_THAT(*s->branches(0), ElementsAre(0, 0, 0, 1, 1));
  EXPECT_THAT(*s->positions(0), ElementsAre(0, 1, 2, 3, 4));
  EXPECT_GT(s->bytes().copied, 0u);
}

TEST_P(BranchStores, PositionsNeverDecreaseWithinABranch) {
  auto s = store();
  ASSERT_TRUE(append(*s, 0, {0, 1, 2}, {}).ok());
  ASSERT_TRUE(append(*s, 3, {3, 4}, {1, 1}).ok());
  // Branch 2 restarts at the prefix length: allowed.
  ASSERT_TRUE(append(*s, 5, {3}, {2}).ok());
  // Branch 1 going back is not.
  Status st = append(*s, 6, {4}, {1});
  ASSERT_TRUE(st.ok()) << "equal positions are allowed";
  st = append(*s, 7, {2}, {1});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("below the previous position 4 of branch 1"));
  // Nor below the prefix in a new branch.
  st = append(*s, 8, {1}, {3});
  EXPECT_THAT(st.message(), HasSubstr("below the previous position 2 of branch 3"));
  // A prefix entry after branches must not precede any of them.
  st = append(*s, 9, {3}, {});
  EXPECT_THAT(st.message(), HasSubstr("below the previous position 4"));
  // A refused append changed nothing, and the checks still see the truth.
  EXPECT_EQ(s->info(0)->stored, 7);
  ASSERT_TRUE(append(*s, 10, {5, 6}, {0, 0}).ok());
  st = append(*s, 11, {-1}, {1});
  EXPECT_THAT(st.message(), HasSubstr("negative"));
}

INSTANTIATE_TEST_SUITE_P(Stores, BranchStores, ::testing::Values("static", "paged"));

TEST(BranchEntries, SinkWindowKeepsOneWindowAndRefusesBranches) {
  auto s =
      make(std::make_unique<SinkWindowCacheStore>(int64_t{2}, int64_t{8}, false), "sink_window");
  EXPECT_FALSE(s->policy().keeps_branches);
  ASSERT_TRUE(append(*s, 0, {0, 1, 2}, {0, 0, 0}).ok());
  const Status st = append(*s, 3, {3}, {1});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("does not keep branches"));
  EXPECT_THAT(st.message(), HasSubstr("branch_layout = \"batched\""));
  EXPECT_EQ(s->info(0)->stored, 3);
}

TEST(BranchEntries, BranchIdsMustMatchTheEntries) {
  auto s = make(std::make_unique<StaticCacheStore>(), "static");
  const Status st = append(*s, 0, {0, 1}, {1});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("1 branch ids for 2 entries"));
}

}  // namespace
}  // namespace tessera
