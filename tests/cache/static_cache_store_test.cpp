// The static cache store, used the way the core uses it: through
// CheckedCacheStore, compared with a plain reference cache.
#include "plugins/cache_static/static_cache_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <random>
#include <vector>

#include "core/cache/checked_cache_store.h"
#include "plugins/compressor_identity/identity_codec.h"
#include "tests/cache/cache_test_util.h"

namespace tessera {
namespace {

using test::HalfCodec;
using test::KVBatch;
using test::make_batch;
using test::positions_match;
using test::RefCache;
using test::views_match;
using ::testing::HasSubstr;

constexpr CacheGeometry kGeometry{3, 2, 4};  // layers, kv_heads, head_dim

std::unique_ptr<test::CodecOwningStore> make_store(const CacheGeometry& g,
                                                   std::unique_ptr<Compressor> codec) {
  auto store = std::make_unique<test::CodecOwningStore>(std::make_unique<StaticCacheStore>(),
                                                        "static", std::move(codec));
  Status st = store->init(g);
  EXPECT_TRUE(st.ok()) << st.to_string();
  return store;
}

std::unique_ptr<test::CodecOwningStore> make_identity_store(const CacheGeometry& g = kGeometry) {
  return make_store(g, std::make_unique<IdentityCodec>());
}

// Appends tokens next_id .. next_id + n - 1 (positions = ids) to the store and the reference.
void append(CheckedCacheStore& store, SequenceId seq, RefCache& ref, int64_t n,
            float (*round)(float) = nullptr) {
  const auto first = static_cast<int64_t>(ref.tokens.empty() ? 0 : ref.tokens.back().position + 1);
  KVBatch b = make_batch(ref.g, first, n, static_cast<int32_t>(first));
  Status st = store.append(seq, b.positions, b.kt, b.vt);
  ASSERT_TRUE(st.ok()) << st.to_string();
  ref.append(b, round);
}

std::size_t identity_token_bytes(const CacheGeometry& g) {
  return static_cast<std::size_t>(g.layers) * 2 * g.kv_heads * g.head_dim * sizeof(float) +
         sizeof(int32_t) + sizeof(BranchId);
}

TEST(StaticCacheStore, AppendThenViewReturnsWhatWasAppended) {
  auto store = make_identity_store();
  ASSERT_TRUE(store->allocate(0, 16).ok());
  RefCache ref{kGeometry, {}};
  append(*store, 0, ref, 5);
  EXPECT_TRUE(views_match(*store, 0, ref));
  append(*store, 0, ref, 3);
  append(*store, 0, ref, 1);
  EXPECT_EQ(store->info(0)->stored, 9);
  EXPECT_TRUE(views_match(*store, 0, ref));
  EXPECT_TRUE(positions_match(*store, 0, ref));
}

TEST(StaticCacheStore, IdentityViewPointsIntoTheArenaWithMaxTokensStride) {
  auto store = make_identity_store();
  ASSERT_TRUE(store->allocate(0, 16).ok());
  RefCache ref{kGeometry, {}};
  append(*store, 0, ref, 3);
  auto v0 = store->view(0, 1);
  ASSERT_TRUE(v0.ok());
  EXPECT_EQ(v0->segments[0].k.stride[0], 16 * kGeometry.head_dim);
  EXPECT_EQ(v0->segments[0].k.stride[1], kGeometry.head_dim);
  EXPECT_EQ(v0->segments[0].k.stride[2], 1);
  // A later append writes in place: the old view's memory now holds the new token too.
  append(*store, 0, ref, 1);
  auto v1 = store->view(0, 1);
  ASSERT_TRUE(v1.ok());
  EXPECT_EQ(v1->segments[0].k.data, v0->segments[0].k.data);
  EXPECT_EQ(v1->segments[0].v.data, v0->segments[0].v.data);
  EXPECT_EQ(v1->segments[0].k.dim(1), 4);
}

TEST(StaticCacheStore, EmptySequenceHasEmptyViews) {
  auto store = make_identity_store();
  ASSERT_TRUE(store->allocate(0, 4).ok());
  auto v = store->view(0, 0);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->segments[0].k.dim(1), 0);
  EXPECT_EQ(v->segments[0].v.dim(1), 0);
  EXPECT_TRUE(store->positions(0)->empty());
}

TEST(StaticCacheStore, StridedInputIsHonoured) {
  // K/V stored as [n, layers, kv_heads, head_dim] and handed over as a
  // permuted (non-contiguous) [layers, n, kv_heads, head_dim] view.
  const CacheGeometry g = kGeometry;
  auto store = make_identity_store(g);
  ASSERT_TRUE(store->allocate(0, 8).ok());
  const int64_t n = 3;
  KVBatch b = make_batch(g, 0, n, 0);
  std::vector<float> k_perm(b.k.size()), v_perm(b.v.size());
  const int64_t row = g.kv_heads * g.head_dim;
  for (int l = 0; l < g.layers; ++l)
    for (int64_t t = 0; t < n; ++t)
      for (int64_t e = 0; e < row; ++e) {
        k_perm[static_cast<std::size_t>((t * g.layers + l) * row + e)] =
            b.k[static_cast<std::size_t>((l * n + t) * row + e)];
        v_perm[static_cast<std::size_t>((t * g.layers + l) * row + e)] =
            b.v[static_cast<std::size_t>((l * n + t) * row + e)];
      }
  Tensor k = Tensor::contiguous(k_perm.data(), DType::kF32, {g.layers, n, g.kv_heads, g.head_dim});
  Tensor v = Tensor::contiguous(v_perm.data(), DType::kF32, {g.layers, n, g.kv_heads, g.head_dim});
  k.stride[0] = v.stride[0] = row;
  k.stride[1] = v.stride[1] = g.layers * row;
  ASSERT_TRUE(store->append(0, b.positions, k, v).ok());
  RefCache ref{g, {}};
  ref.append(b);
  EXPECT_TRUE(views_match(*store, 0, ref));
}

TEST(StaticCacheStore, TruncateKeepsThePrefix) {
  auto store = make_identity_store();
  ASSERT_TRUE(store->allocate(0, 16).ok());
  RefCache ref{kGeometry, {}};
  append(*store, 0, ref, 6);
  ASSERT_TRUE(store->truncate(0, 3).ok());
  ref.truncate(3);
  EXPECT_EQ(store->info(0)->stored, 3);
  EXPECT_TRUE(views_match(*store, 0, ref));
  EXPECT_TRUE(positions_match(*store, 0, ref));
  append(*store, 0, ref, 2);  // overwrites the dropped slots
  EXPECT_TRUE(views_match(*store, 0, ref));
  ASSERT_TRUE(store->truncate(0, 5).ok());  // to the current length: no change
  ASSERT_TRUE(store->truncate(0, 0).ok());
  ref.truncate(0);
  EXPECT_TRUE(views_match(*store, 0, ref));
}

TEST(StaticCacheStore, TruncatePastTheLengthIsOutOfRange) {
  auto store = make_identity_store();
  ASSERT_TRUE(store->allocate(0, 16).ok());
  RefCache ref{kGeometry, {}};
  append(*store, 0, ref, 4);
  Status st = store->truncate(0, 5);
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange) << st.to_string();
  EXPECT_EQ(store->truncate(0, -1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->info(0)->stored, 4);
}

struct CopyCase {
  const char* name;
  int64_t tokens;  // appended before the copy
  std::vector<int64_t> src;
  int64_t dst_start;
};

void PrintTo(const CopyCase& c, std::ostream* os) {
  *os << c.name;
}

class StaticCacheStoreCopy : public ::testing::TestWithParam<CopyCase> {};

TEST_P(StaticCacheStoreCopy, MatchesACopyThroughATemporary) {
  const CopyCase& c = GetParam();
  auto store = make_identity_store();
  ASSERT_TRUE(store->allocate(0, 16).ok());
  RefCache ref{kGeometry, {}};
  append(*store, 0, ref, c.tokens);
  Status st = store->copy(0, c.src, c.dst_start);
  ASSERT_TRUE(st.ok()) << st.to_string();
  ref.copy(c.src, c.dst_start);
  EXPECT_EQ(store->info(0)->stored, c.dst_start + static_cast<int64_t>(c.src.size()));
  EXPECT_TRUE(views_match(*store, 0, ref));
  EXPECT_TRUE(positions_match(*store, 0, ref));
  // The sequence keeps working after the copy.
  append(*store, 0, ref, 2);
  EXPECT_TRUE(views_match(*store, 0, ref));
}

INSTANTIATE_TEST_SUITE_P(
    Paths, StaticCacheStoreCopy,
    ::testing::Values(
        // Slot 2 is both a source (src[1]) and a destination (j = 2): aliasing.
        CopyCase{"AliasingPath", 5, {0, 2, 3}, 0},
        // Every token already in place: a no-op.
        CopyCase{"Chain", 6, {0, 1, 2, 3}, 0}, CopyCase{"ChainTail", 6, {2, 3, 4, 5}, 2},
        // EAGLE-like: 4 committed tokens, 5 drafts at 4..8; accept a path of drafts.
        CopyCase{"EagleDstAtCacheLen", 9, {5, 7, 8}, 4},
        CopyCase{"EagleFirstDraftAccepted", 9, {4, 6}, 4},
        CopyCase{"EagleNothingAccepted", 9, {}, 4},
        // Sources far from their destinations and adjacent moves.
        CopyCase{"Gather", 10, {1, 4, 5, 9}, 1}, CopyCase{"ShiftByOne", 8, {3, 4, 5, 6, 7}, 2}),
    [](const ::testing::TestParamInfo<CopyCase>& param_info) { return param_info.param.name; });

TEST(StaticCacheStore, RandomCopiesMatchTheReference) {
  std::mt19937 rng(1234);
  auto store = make_identity_store();
  ASSERT_TRUE(store->allocate(0, 40).ok());
  RefCache ref{kGeometry, {}};
  for (int round = 0; round < 60; ++round) {
    const auto len = static_cast<int64_t>(ref.tokens.size());
    const int64_t room = 40 - len;
    if (room > 0)
      append(*store, 0, ref, 1 + static_cast<int64_t>(rng() % std::min<int64_t>(room, 6)));
    const auto now = static_cast<int64_t>(ref.tokens.size());
    const int64_t dst = static_cast<int64_t>(rng() % static_cast<uint64_t>(now + 1));
    std::vector<int64_t> src;
    for (int64_t s = dst; s < now; ++s)
      if (rng() % 2) src.push_back(s);
    // src[j] >= dst + j holds since src is an increasing subset of [dst, now).
    Status st = store->copy(0, src, dst);
    ASSERT_TRUE(st.ok()) << st.to_string();
    ref.copy(src, dst);
    ASSERT_TRUE(views_match(*store, 0, ref)) << "round " << round;
    ASSERT_TRUE(positions_match(*store, 0, ref)) << "round " << round;
  }
}

TEST(StaticCacheStore, CopyRejectsBadIndices) {
  auto store = make_identity_store();
  ASSERT_TRUE(store->allocate(0, 16).ok());
  RefCache ref{kGeometry, {}};
  append(*store, 0, ref, 6);
  const std::vector<std::vector<int64_t>> bad_src = {
      {0, 6},  // out of range
      {-1},    // negative
      {2, 2},  // not strictly increasing
      {3, 1},  // decreasing
  };
  for (const auto& src : bad_src) {
    Status st = store->copy(0, src, 0);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
  }
  // src[j] < dst_start + j.
  std::vector<int64_t> below = {2, 3};
  Status st = store->copy(0, below, 3);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
  EXPECT_THAT(st.message(), HasSubstr("below its destination"));
  // (With src strictly increasing, src[0] >= dst_start implies src[j] >= dst_start + j.)
  // dst_start past the length.
  std::vector<int64_t> none;
  EXPECT_EQ(store->copy(0, none, 7).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->copy(0, none, -1).code(), StatusCode::kInvalidArgument);
  // Nothing changed.
  EXPECT_TRUE(views_match(*store, 0, ref));
  EXPECT_TRUE(positions_match(*store, 0, ref));
}

TEST(StaticCacheStore, ByteAccountingIsExact) {
  const CacheGeometry g = kGeometry;
  auto store = make_identity_store(g);
  const std::size_t per_token = identity_token_bytes(g);  // K+V, a position and a branch
  // Expected capacity from the layout: arena [layers, 2, kv_heads, max_tokens, head_dim] f32
  // plus positions [max_tokens] int32 and branches [max_tokens] int16; the identity codec
  // needs no decode scratch.
  const std::size_t cap0 =
      10 * (static_cast<std::size_t>(g.layers) * 2 * g.kv_heads * g.head_dim * 4 + 4 + 2);
  EXPECT_EQ(store->bytes().capacity, 0u);
  ASSERT_TRUE(store->allocate(0, 10).ok());
  EXPECT_EQ(store->bytes().capacity, cap0);
  EXPECT_EQ(store->bytes().live, 0u);

  RefCache ref{g, {}};
  std::size_t last_peak = 0;
  auto expect_live = [&](std::size_t tokens) {
    const CacheBytes b = store->bytes();
    EXPECT_EQ(b.live, tokens * per_token);
    EXPECT_GE(b.peak, b.live);
    EXPECT_GE(b.peak, last_peak);
    last_peak = b.peak;
  };
  append(*store, 0, ref, 4);
  expect_live(4);
  append(*store, 0, ref, 3);
  expect_live(7);
  EXPECT_EQ(store->bytes().peak, 7 * per_token);
  ASSERT_TRUE(store->truncate(0, 5).ok());
  ref.truncate(5);
  expect_live(5);
  EXPECT_EQ(store->bytes().peak, 7 * per_token);  // the peak stays
  std::vector<int64_t> path = {1, 3};
  ASSERT_TRUE(store->copy(0, path, 1).ok());
  expect_live(3);

  ASSERT_TRUE(store->allocate(1, 6).ok());
  EXPECT_EQ(store->bytes().capacity, cap0 + 6 * per_token);
  RefCache ref1{g, {}};
  append(*store, 1, ref1, 6);
  expect_live(9);
  EXPECT_EQ(store->bytes().peak, 9 * per_token);

  ASSERT_TRUE(store->release(0).ok());
  EXPECT_EQ(store->bytes().capacity, 6 * per_token);
  expect_live(6);
  EXPECT_EQ(store->bytes().peak, 9 * per_token);
  ASSERT_TRUE(store->release(1).ok());
  EXPECT_EQ(store->bytes().capacity, 0u);
  EXPECT_EQ(store->bytes().live, 0u);
  EXPECT_EQ(store->bytes().peak, 9 * per_token);
}

TEST(StaticCacheStore, AppendPastCapacityIsResourceExhaustedAndChangesNothing) {
  auto store = make_identity_store();
  ASSERT_TRUE(store->allocate(0, 8).ok());
  RefCache ref{kGeometry, {}};
  append(*store, 0, ref, 6);
  const CacheBytes before = store->bytes();
  KVBatch b = make_batch(kGeometry, 6, 3, 6);
  Status st = store->append(0, b.positions, b.kt, b.vt);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.to_string();
  EXPECT_THAT(st.message(), HasSubstr("capacity is 8"));
  EXPECT_THAT(st.message(), HasSubstr("needs 9"));
  EXPECT_EQ(store->info(0)->stored, 6);
  EXPECT_TRUE(views_match(*store, 0, ref));
  EXPECT_TRUE(positions_match(*store, 0, ref));
  EXPECT_EQ(store->bytes().live, before.live);
  EXPECT_EQ(store->bytes().peak, before.peak);
  // Filling up exactly is fine.
  append(*store, 0, ref, 2);
  EXPECT_TRUE(views_match(*store, 0, ref));
  // The store refuses on its own too (called without the wrapper).
  KVBatch one = make_batch(kGeometry, 8, 1, 8);
  EXPECT_EQ(store->unchecked().append(0, one.positions, {}, one.kt, one.vt).code(),
            StatusCode::kResourceExhausted);
}

TEST(StaticCacheStore, BadShapesAreInvalidArgument) {
  const CacheGeometry g = kGeometry;
  auto store = make_identity_store(g);
  ASSERT_TRUE(store->allocate(0, 8).ok());
  KVBatch b = make_batch(g, 0, 2, 0);
  std::vector<float> buf(1000);
  auto with_shape = [&](std::initializer_list<int64_t> shape) {
    return Tensor::contiguous(buf.data(), DType::kF32, shape);
  };
  const Tensor bad[] = {
      with_shape({g.layers + 1, 2, g.kv_heads, g.head_dim}),  // layers
      with_shape({g.layers, 3, g.kv_heads, g.head_dim}),      // n != positions.size()
      with_shape({g.layers, 2, g.kv_heads + 1, g.head_dim}),  // kv_heads
      with_shape({g.layers, 2, g.kv_heads, g.head_dim * 2}),  // head_dim
      with_shape({g.layers, 2, g.kv_heads * g.head_dim}),     // rank 3
  };
  for (const Tensor& t : bad) {
    Status k_bad = store->append(0, b.positions, t, b.vt);
    EXPECT_EQ(k_bad.code(), StatusCode::kInvalidArgument) << t.describe();
    EXPECT_THAT(k_bad.message(), HasSubstr("expected f32[3, 2, 2, 4]"));
    EXPECT_EQ(store->append(0, b.positions, b.kt, t).code(), StatusCode::kInvalidArgument)
        << t.describe();
  }
  Tensor f16 = b.kt;
  f16.dtype = DType::kF16;
  EXPECT_EQ(store->append(0, b.positions, f16, b.vt).code(), StatusCode::kInvalidArgument);
  Tensor strided = b.kt;
  strided.stride[3] = 2;
  EXPECT_EQ(store->append(0, b.positions, strided, b.vt).code(), StatusCode::kInvalidArgument);
  Tensor null_data = b.kt;
  null_data.data = nullptr;
  EXPECT_EQ(store->append(0, b.positions, null_data, b.vt).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->info(0)->stored, 0);
}

TEST(StaticCacheStore, DecreasingPositionsAreInvalidArgument) {
  auto store = make_identity_store();
  ASSERT_TRUE(store->allocate(0, 8).ok());
  KVBatch b = make_batch(kGeometry, 0, 3, 10);
  b.positions = {10, 12, 11};
  EXPECT_EQ(store->append(0, b.positions, b.kt, b.vt).code(), StatusCode::kInvalidArgument);
  b.positions = {10, 11, 11};  // equal positions are allowed (never decrease)
  ASSERT_TRUE(store->append(0, b.positions, b.kt, b.vt).ok());
  KVBatch c = make_batch(kGeometry, 3, 1, 9);  // below the last stored position
  EXPECT_EQ(store->append(0, c.positions, c.kt, c.vt).code(), StatusCode::kInvalidArgument);
  c.positions = {-1};
  EXPECT_EQ(store->append(0, c.positions, c.kt, c.vt).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->info(0)->stored, 3);
}

TEST(StaticCacheStore, UnknownSequenceIsNotFound) {
  auto store = make_identity_store();
  ASSERT_TRUE(store->allocate(0, 8).ok());
  KVBatch b = make_batch(kGeometry, 0, 1, 0);
  std::vector<int64_t> src = {0};
  EXPECT_EQ(store->append(7, b.positions, b.kt, b.vt).code(), StatusCode::kNotFound);
  EXPECT_EQ(store->truncate(7, 0).code(), StatusCode::kNotFound);
  EXPECT_EQ(store->copy(7, src, 0).code(), StatusCode::kNotFound);
  EXPECT_EQ(store->view(7, 0).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store->release(7).code(), StatusCode::kNotFound);
  EXPECT_EQ(store->info(7).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store->info(7).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store->positions(7).status().code(), StatusCode::kNotFound);
  EXPECT_THAT(store->truncate(7, 0).message(), HasSubstr("sequence 7"));
  EXPECT_FALSE(store->contains(7));
  // A released sequence is gone too.
  ASSERT_TRUE(store->release(0).ok());
  EXPECT_EQ(store->view(0, 0).status().code(), StatusCode::kNotFound);
}

TEST(StaticCacheStore, LayerOutOfRangeAndDoubleAllocateAreRefused) {
  auto store = make_identity_store();
  ASSERT_TRUE(store->allocate(0, 8).ok());
  EXPECT_EQ(store->view(0, kGeometry.layers).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(store->view(0, -1).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(store->allocate(0, 8).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(store->allocate(1, 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->info(0)->capacity, 8);
}

TEST(StaticCacheStore, TwoSequencesAreIndependent) {
  auto store = make_identity_store();
  ASSERT_TRUE(store->allocate(3, 12).ok());
  ASSERT_TRUE(store->allocate(9, 12).ok());
  RefCache a{kGeometry, {}}, b{kGeometry, {}};
  append(*store, 3, a, 5);
  // b's tokens start at id 100 so the values differ from a's.
  KVBatch batch = make_batch(kGeometry, 100, 7, 0);
  ASSERT_TRUE(store->append(9, batch.positions, batch.kt, batch.vt).ok());
  b.append(batch);
  std::vector<int64_t> path = {1, 4};
  ASSERT_TRUE(store->copy(3, path, 1).ok());
  a.copy(path, 1);
  ASSERT_TRUE(store->truncate(9, 6).ok());
  b.truncate(6);
  EXPECT_TRUE(views_match(*store, 3, a));
  EXPECT_TRUE(views_match(*store, 9, b));
  EXPECT_TRUE(positions_match(*store, 3, a));
  EXPECT_TRUE(positions_match(*store, 9, b));
  ASSERT_TRUE(store->release(3).ok());
  EXPECT_TRUE(views_match(*store, 9, b));
}

TEST(StaticCacheStore, LossyCodecViewsAreTheDecodedValues) {
  const CacheGeometry g{2, 3, 8};
  auto store = make_store(g, std::make_unique<HalfCodec>());
  ASSERT_TRUE(store->allocate(0, 12).ok());
  RefCache ref{g, {}};
  // Values that f16 cannot hold exactly, so rounding shows.
  append(*store, 0, ref, 5, &HalfCodec::round);
  const float unrounded = test::kv_value(0, 1, 2, 1, 1);  // 1015.53125: not a half
  ASSERT_NE(HalfCodec::round(unrounded), unrounded);
  EXPECT_EQ(ref.at(0, 1, 2, 1, 1), HalfCodec::round(unrounded));
  EXPECT_TRUE(views_match(*store, 0, ref));
  // Decoded views lie in the decode scratch [2, kv_heads, max_tokens, head_dim].
  auto v = store->view(0, 1);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->segments[0].k.stride[0], 12 * g.head_dim);
  EXPECT_EQ(v->segments[0].v.stride[1], g.head_dim);

  std::vector<int64_t> path = {0, 2, 3};
  ASSERT_TRUE(store->copy(0, path, 0).ok());
  ref.copy(path, 0);
  EXPECT_TRUE(views_match(*store, 0, ref));
  append(*store, 0, ref, 4, &HalfCodec::round);
  EXPECT_TRUE(views_match(*store, 0, ref));
  EXPECT_TRUE(positions_match(*store, 0, ref));

  // Bytes: 2 bytes per element stored, a position and a branch per entry; the f32
  // decode scratch [2, kv_heads, max_tokens, head_dim] is reserved (capacity) but never live.
  const std::size_t token_bytes =
      static_cast<std::size_t>(g.layers) * 2 * g.kv_heads * g.head_dim * 2 + 4 + 2;
  const std::size_t scratch = 2 * static_cast<std::size_t>(g.kv_heads) * 12 * g.head_dim * 4;
  EXPECT_EQ(store->bytes().capacity, 12 * token_bytes + scratch);
  EXPECT_EQ(store->bytes().live, 7 * token_bytes);
  EXPECT_EQ(store->bytes().peak, 7 * token_bytes);
}

TEST(StaticCacheStore, LossyCodecExactValuesSurviveUnchanged) {
  // Values f16 holds exactly come back bit for bit: the codec is applied, not bypassed.
  const CacheGeometry g{1, 1, 4};
  auto store = make_store(g, std::make_unique<HalfCodec>());
  ASSERT_TRUE(store->allocate(0, 2).ok());
  std::vector<float> k = {0.5f, -2.0f, 1024.0f, 0.0f}, v = {1.0f / 3, 3.0f, -0.25f, 65504.0f};
  std::vector<int32_t> pos = {0};
  ASSERT_TRUE(store
                  ->append(0, pos, Tensor::contiguous(k.data(), DType::kF32, {1, 1, 1, 4}),
                           Tensor::contiguous(v.data(), DType::kF32, {1, 1, 1, 4}))
                  .ok());
  auto view = store->view(0, 0);
  ASSERT_TRUE(view.ok());
  for (int d = 0; d < 4; ++d)
    EXPECT_EQ(view->segments[0].k.f32()[d], k[static_cast<std::size_t>(d)]);
  EXPECT_NE(view->segments[0].v.f32()[0], 1.0f / 3);  // 1/3 is not a half
  EXPECT_EQ(view->segments[0].v.f32()[0], HalfCodec::round(1.0f / 3));
  EXPECT_EQ(view->segments[0].v.f32()[3], 65504.0f);
}

// A codec whose size is not per vector (a 16-byte header per run).
class RunHeaderCodec final : public Compressor {
 public:
  std::size_t encoded_bytes(int64_t n, int head_dim) const override {
    return 16 + static_cast<std::size_t>(n) * static_cast<std::size_t>(head_dim);
  }
  double bits_per_vector(int head_dim) const override { return 8.0 * head_dim; }
  void encode(const float*, int64_t, int, uint8_t*) const override {}
  void decode(const uint8_t*, int64_t, int, float*) const override {}
};

TEST(StaticCacheStore, InitRefusesACodecThatIsNotPerVector) {
  StaticCacheStore store;
  const RunHeaderCodec codec;
  const std::vector<const Compressor*> codecs(3, &codec);
  Status st = store.init(kGeometry, codecs);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
  EXPECT_THAT(st.message(), HasSubstr("per-vector"));
}

TEST(StaticCacheStore, HugeCapacityIsResourceExhausted) {
  auto store = make_identity_store();
  Status st = store->allocate(0, int64_t{1} << 60);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.to_string();
  EXPECT_FALSE(store->contains(0));
  EXPECT_EQ(store->bytes().capacity, 0u);
}

}  // namespace
}  // namespace tessera
