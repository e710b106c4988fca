// CheckedCacheStore catches plugins that break the invariants: a fake store
// wraps the static store and breaks one thing on purpose.
#include "core/cache/checked_cache_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "plugins/cache_static/static_cache_store.h"
#include "plugins/compressor_identity/identity_codec.h"
#include "tests/cache/cache_test_util.h"

namespace tessera {
namespace {

using test::KVBatch;
using test::make_batch;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr CacheGeometry kGeometry{3, 2, 4};

enum class Bug {
  kNone,
  kForgetsOneVLength,     // layer 1's V length lags one append behind
  kSwapsLastPositions,    // positions() returns the last two swapped
  kDropsATokenOnCopy,     // copy keeps one token too few
  kLiveOverCapacity,      // bytes() reports more live than reserved
  kPeakFalls,             // bytes() forgets the peak after a truncate
  kPositionsTooShort,     // positions() one entry short
  kHalfAppendsThenFails,  // append fails after storing the tokens
  kCapacityTooSmall,      // capacity() below what allocate() asked for
  kForkLosesAToken,       // fork gives the copy one entry less (reported as fewer)
  kMixesUpBranches,       // branches() reports the last two entries' branches swapped
};

// Forwards to a real StaticCacheStore and breaks one rule.
class BrokenStore final : public CacheStore {
 public:
  explicit BrokenStore(Bug bug) : bug_(bug) {}

  Status init(const CacheGeometry& g, std::span<const Compressor* const> codecs) override {
    return inner_.init(g, codecs);
  }
  CachePolicy policy() const override { return inner_.policy(); }
  Status fork(SequenceId src, SequenceId dst) override {
    RETURN_IF_ERROR(inner_.fork(src, dst));
    if (bug_ == Bug::kForkLosesAToken) return inner_.truncate(dst, inner_.info(dst).stored - 1);
    return ok_status();
  }
  Status allocate(SequenceId seq, int64_t capacity) override {
    return inner_.allocate(seq, capacity);
  }
  Status release(SequenceId seq) override { return inner_.release(seq); }
  Status append(SequenceId seq, std::span<const int32_t> positions,
                std::span<const BranchId> branches, const Tensor& k, const Tensor& v) override {
    lagging_v_length_ = inner_.info(seq).stored;
    RETURN_IF_ERROR(inner_.append(seq, positions, branches, k, v));
    if (bug_ == Bug::kHalfAppendsThenFails) return internal_error("disk on fire");
    return ok_status();
  }
  Status truncate(SequenceId seq, int64_t n) override {
    lagging_v_length_ = n;
    truncated_ = true;
    return inner_.truncate(seq, n);
  }
  Status copy(SequenceId seq, std::span<const int64_t> src, int64_t dst_start) override {
    if (bug_ == Bug::kDropsATokenOnCopy && !src.empty()) src = src.first(src.size() - 1);
    lagging_v_length_ = dst_start + static_cast<int64_t>(src.size());
    return inner_.copy(seq, src, dst_start);
  }
  Result<KVView> view(SequenceId seq, int layer) override { return inner_.view(seq, layer); }
  SequenceInfo info(SequenceId seq) const override {
    SequenceInfo i = inner_.info(seq);
    if (bug_ == Bug::kCapacityTooSmall) i.capacity -= 1;
    return i;
  }
  int64_t stored_length(SequenceId seq, int layer, int kv) const override {
    if (bug_ == Bug::kForgetsOneVLength && layer == 1 && kv == 1) return lagging_v_length_;
    return inner_.stored_length(seq, layer, kv);
  }
  std::span<const int32_t> positions(SequenceId seq) const override {
    std::span<const int32_t> p = inner_.positions(seq);
    if (bug_ == Bug::kPositionsTooShort && !p.empty()) return p.first(p.size() - 1);
    if (bug_ != Bug::kSwapsLastPositions || p.size() < 2) return p;
    swapped_.assign(p.begin(), p.end());
    std::swap(swapped_[swapped_.size() - 1], swapped_[swapped_.size() - 2]);
    return swapped_;
  }
  std::span<const BranchId> branches(SequenceId seq) const override {
    std::span<const BranchId> b = inner_.branches(seq);
    if (bug_ != Bug::kMixesUpBranches || b.size() < 2) return b;
    mixed_.assign(b.begin(), b.end());
    std::swap(mixed_[mixed_.size() - 1], mixed_[mixed_.size() - 2]);
    return mixed_;
  }
  CacheBytes bytes() const override {
    CacheBytes b = inner_.bytes();
    if (bug_ == Bug::kLiveOverCapacity && b.live > 0) b.live = b.capacity + 1;
    if (bug_ == Bug::kPeakFalls && truncated_) b.peak = b.live;
    return b;
  }
  SequenceBytes sequence_bytes(SequenceId seq) const override { return inner_.sequence_bytes(seq); }

 private:
  Bug bug_;
  StaticCacheStore inner_;
  int64_t lagging_v_length_ = 0;
  bool truncated_ = false;
  mutable std::vector<int32_t> swapped_;
  mutable std::vector<BranchId> mixed_;
};

std::unique_ptr<test::CodecOwningStore> make_checked(Bug bug) {
  auto store = std::make_unique<test::CodecOwningStore>(
      std::make_unique<BrokenStore>(bug), "broken", std::make_unique<IdentityCodec>());
  EXPECT_TRUE(store->init(kGeometry).ok());
  return store;
}

Status append_tokens(CheckedCacheStore& store, SequenceId seq, int64_t first, int64_t n) {
  KVBatch b = make_batch(kGeometry, first, n, static_cast<int32_t>(first));
  return store.append(seq, b.positions, b.kt, b.vt);
}

TEST(CheckedCacheStore, ACorrectStorePassesEveryCheck) {
  auto store = make_checked(Bug::kNone);
  ASSERT_TRUE(store->allocate(0, 16).ok());
  ASSERT_TRUE(append_tokens(*store, 0, 0, 5).ok());
  ASSERT_TRUE(append_tokens(*store, 0, 5, 3).ok());
  std::vector<int64_t> path = {0, 2, 3, 7};
  ASSERT_TRUE(store->copy(0, path, 0).ok());
  ASSERT_TRUE(store->truncate(0, 2).ok());
  EXPECT_EQ(*store->stored_length(0, 2, 1), 2);
  ASSERT_TRUE(store->release(0).ok());
}

TEST(CheckedCacheStore, ForgottenVLengthIsAnInv1Error) {
  auto store = make_checked(Bug::kForgetsOneVLength);
  ASSERT_TRUE(store->allocate(0, 16).ok());
  Status st = append_tokens(*store, 0, 0, 4);
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_THAT(st.message(), AllOf(HasSubstr("INV-1"), HasSubstr("'broken'"), HasSubstr("append"),
                                  HasSubstr("layer 1"), HasSubstr("V length 0")));
}

TEST(CheckedCacheStore, ReorderedPositionsAreAnInv2Error) {
  auto store = make_checked(Bug::kSwapsLastPositions);
  ASSERT_TRUE(store->allocate(0, 16).ok());
  Status st = append_tokens(*store, 0, 0, 3);
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_THAT(st.message(), AllOf(HasSubstr("INV-2"), HasSubstr("'broken'"),
                                  HasSubstr("position[2] = 1 < position[1] = 2")));
}

TEST(CheckedCacheStore, ReorderingAcrossTheOldTailIsSeen) {
  // The incremental check compares the first new position with the last old one.
  auto store = make_checked(Bug::kSwapsLastPositions);
  ASSERT_TRUE(store->allocate(0, 16).ok());
  Status first = append_tokens(*store, 0, 0, 1);  // one position: nothing to swap
  ASSERT_TRUE(first.ok()) << first.to_string();
  Status st = append_tokens(*store, 0, 1, 1);
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_THAT(st.message(), HasSubstr("INV-2"));
}

TEST(CheckedCacheStore, ShortPositionsAreAnInv2Error) {
  auto store = make_checked(Bug::kPositionsTooShort);
  ASSERT_TRUE(store->allocate(0, 16).ok());
  Status st = append_tokens(*store, 0, 0, 3);
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_THAT(st.message(), AllOf(HasSubstr("INV-2"), HasSubstr("2 entries")));
}

TEST(CheckedCacheStore, WrongCountAfterCopyIsInternal) {
  auto store = make_checked(Bug::kDropsATokenOnCopy);
  ASSERT_TRUE(store->allocate(0, 16).ok());
  ASSERT_TRUE(append_tokens(*store, 0, 0, 6).ok());
  std::vector<int64_t> path = {1, 3, 4};
  Status st = store->copy(0, path, 1);
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_THAT(st.message(), AllOf(HasSubstr("'broken'"), HasSubstr("copy"),
                                  HasSubstr("logical length 3, expected 4")));
}

TEST(CheckedCacheStore, FailedMutationMustLeaveTheSequenceUnchanged) {
  auto store = make_checked(Bug::kHalfAppendsThenFails);
  ASSERT_TRUE(store->allocate(0, 16).ok());
  Status st = append_tokens(*store, 0, 0, 2);
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_THAT(st.message(), AllOf(HasSubstr("failed append"), HasSubstr("expected 0")));
}

TEST(CheckedCacheStore, BrokenByteAccountingIsInternal) {
  {
    auto store = make_checked(Bug::kLiveOverCapacity);
    ASSERT_TRUE(store->allocate(0, 16).ok());
    Status st = append_tokens(*store, 0, 0, 2);
    EXPECT_EQ(st.code(), StatusCode::kInternal);
    EXPECT_THAT(st.message(), AllOf(HasSubstr("byte accounting"), HasSubstr("> capacity")));
  }
  {
    auto store = make_checked(Bug::kPeakFalls);
    ASSERT_TRUE(store->allocate(0, 16).ok());
    ASSERT_TRUE(append_tokens(*store, 0, 0, 4).ok());
    Status st = store->truncate(0, 1);
    EXPECT_EQ(st.code(), StatusCode::kInternal);
    EXPECT_THAT(st.message(), HasSubstr("peak fell"));
  }
}

TEST(CheckedCacheStore, CapacityBelowTheRequestIsInternal) {
  auto store = make_checked(Bug::kCapacityTooSmall);
  Status st = store->allocate(0, 16);
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_THAT(st.message(), HasSubstr("capacity 15 entries, expected 16"));
}

TEST(CheckedCacheStore, AForkThatDiffersFromItsSourceIsInternal) {
  auto store = make_checked(Bug::kForkLosesAToken);
  ASSERT_TRUE(store->allocate(0, 16).ok());
  ASSERT_TRUE(append_tokens(*store, 0, 0, 4).ok());
  Status st = store->fork(0, 1);
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_THAT(st.message(), AllOf(HasSubstr("'broken'"), HasSubstr("fork")));
}

TEST(CheckedCacheStore, ForkChecksItsArguments) {
  auto store = make_checked(Bug::kNone);
  ASSERT_TRUE(store->allocate(0, 16).ok());
  ASSERT_TRUE(store->allocate(1, 16).ok());
  EXPECT_EQ(store->fork(0, 1).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(store->fork(5, 2).code(), StatusCode::kNotFound);
  ASSERT_TRUE(append_tokens(*store, 0, 0, 3).ok());
  ASSERT_TRUE(store->fork(0, 2).ok());
  EXPECT_EQ(store->info(2)->logical_length, 3);
}

TEST(CheckedCacheStore, TruncateBelowWhatTheStoreCanRestoreIsRefused) {
  auto store = make_checked(Bug::kNone);
  ASSERT_TRUE(store->allocate(0, 16).ok());
  ASSERT_TRUE(append_tokens(*store, 0, 0, 3).ok());
  EXPECT_EQ(store->truncate(0, 4).code(), StatusCode::kOutOfRange);
  EXPECT_TRUE(store->truncate(0, 0).ok());
}

TEST(CheckedCacheStore, UseBeforeInitIsFailedPrecondition) {
  CheckedCacheStore store(std::make_unique<StaticCacheStore>(), "static");
  EXPECT_EQ(store.allocate(0, 4).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(store.view(0, 0).status().code(), StatusCode::kFailedPrecondition);
}

TEST(CheckedCacheStore, InitChecksGeometryAndCodecs) {
  const IdentityCodec identity;
  const std::vector<const Compressor*> three(3, &identity);
  {
    CheckedCacheStore store(std::make_unique<StaticCacheStore>(), "static");
    Status st = store.init(CacheGeometry{0, 2, 4}, three);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(st.message(), HasSubstr("'static'"));
  }
  {
    // A codec vector spans one KV head or all of a token's, nothing between.
    CheckedCacheStore store(std::make_unique<StaticCacheStore>(), "static");
    Status st = store.init(CacheGeometry{3, 4, 4, 2}, three);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(st.message(), HasSubstr("one KV head or all 4 of a token"));
  }
  {
    CheckedCacheStore store(std::make_unique<StaticCacheStore>(), "static");
    const std::vector<const Compressor*> missing = {&identity, nullptr, &identity};
    EXPECT_EQ(store.init(kGeometry, missing).code(), StatusCode::kInvalidArgument);
    const std::vector<const Compressor*> two(2, &identity);
    EXPECT_THAT(store.init(kGeometry, two).message(), HasSubstr("2 codecs for 3 layers"));
    ASSERT_TRUE(store.init(kGeometry, three).ok());
    EXPECT_EQ(store.init(kGeometry, three).code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ(store.geometry().head_dim, 4);
    EXPECT_EQ(store.plugin_name(), "static");
  }
}

TEST(CheckedCacheStore, StoredLengthChecksItsArguments) {
  auto store = make_checked(Bug::kNone);
  ASSERT_TRUE(store->allocate(0, 4).ok());
  EXPECT_EQ(store->stored_length(0, 3, 0).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(store->stored_length(0, 0, 2).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->stored_length(1, 0, 0).status().code(), StatusCode::kNotFound);
}

// A store that reports a branch for the wrong entry breaks INV-2 per branch:
// branches 1 and 2 interleave, and the swap sends branch 2 from 6 back to 4.
TEST(CheckedCacheStore, BranchesOutOfOrderAreAnInv2Error) {
  auto store = make_checked(Bug::kMixesUpBranches);
  ASSERT_TRUE(store->allocate(0, 16).ok());
  ASSERT_TRUE(append_tokens(*store, 0, 0, 3).ok());
  KVBatch b = make_batch(kGeometry, 3, 4, 3);
  b.positions = {3, 6, 4, 7};
  const BranchId branches[] = {1, 2, 1, 2};
  const Status st = store->append(0, b.positions, branches, b.kt, b.vt);
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_THAT(st.message(),
              AllOf(HasSubstr("INV-2"), HasSubstr("'broken'"),
                    HasSubstr("entry 5 of branch 2 at position 4 follows position 6")));
}

}  // namespace
}  // namespace tessera
