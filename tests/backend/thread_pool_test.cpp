#include "backends/cpu/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <vector>

namespace tessera::cpu {
namespace {

// Every index is visited exactly once, by one contiguous chunk per thread.
TEST(ThreadPool, CoversTheRangeOnceInContiguousChunks) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (int64_t len : {0, 1, 2, 3, 7, 64, 1001}) {
      std::vector<int> hits(static_cast<std::size_t>(len), 0);
      std::vector<int> owner(static_cast<std::size_t>(len), -1);
      std::atomic<int> calls{0};
      pool.parallel_for(10, 10 + len, [&](int64_t b, int64_t e, int thread) {
        ++calls;
        EXPECT_LT(b, e);
        EXPECT_GE(thread, 0);
        EXPECT_LT(thread, threads);
        for (int64_t i = b; i < e; ++i) {
          ++hits[static_cast<std::size_t>(i - 10)];
          owner[static_cast<std::size_t>(i - 10)] = thread;
        }
      });
      for (int h : hits) EXPECT_EQ(h, 1) << threads << " threads, length " << len;
      EXPECT_LE(calls.load(), threads);
      // Chunks are contiguous and ordered by thread index.
      for (std::size_t i = 1; i < owner.size(); ++i) EXPECT_LE(owner[i - 1], owner[i]);
    }
  }
}

TEST(ThreadPool, SmallRangesStayOnTheCallingThread) {
  ThreadPool pool(4);
  int calls = 0;  // not atomic: only the caller may touch it
  pool.parallel_for(
      0, 100,
      [&](int64_t b, int64_t e, int thread) {
        ++calls;
        EXPECT_EQ(thread, 0);
        EXPECT_EQ(b, 0);
        EXPECT_EQ(e, 100);
      },
      1000);
  EXPECT_EQ(calls, 1);
}

TEST(ThreadPool, ManyDispatchesInARow) {
  ThreadPool pool(3);
  std::vector<int64_t> sums(3, 0);
  int64_t total = 0;
  for (int round = 0; round < 2000; ++round) {
    pool.parallel_for(0, 30, [&](int64_t b, int64_t e, int thread) {
      for (int64_t i = b; i < e; ++i) sums[static_cast<std::size_t>(thread)] += i;
    });
    total += 435;
  }
  EXPECT_EQ(sums[0] + sums[1] + sums[2], total);
}

TEST(ThreadPool, ScratchGrowsOnlyWhenAskedForMore) {
  ThreadPool pool(2);
  ASSERT_TRUE(pool.reserve_scratch(100));
  EXPECT_GE(pool.scratch_size(), 100u);
  float* before = pool.scratch(1);
  ASSERT_TRUE(pool.reserve_scratch(50));
  EXPECT_EQ(pool.scratch(1), before);
  ASSERT_TRUE(pool.reserve_scratch(pool.scratch_size()));
  EXPECT_EQ(pool.scratch(1), before);
  ASSERT_TRUE(pool.reserve_scratch(1000));
  EXPECT_GE(pool.scratch_size(), 1000u);
  // Each thread writes its own scratch without disturbing the other.
  pool.parallel_for(0, 2, [&](int64_t, int64_t, int thread) {
    for (int i = 0; i < 1000; ++i) pool.scratch(thread)[i] = static_cast<float>(thread);
  });
  EXPECT_EQ(pool.scratch(0)[999], 0.0f);
  EXPECT_EQ(pool.scratch(1)[999], 1.0f);
}

// A size past what size_t can count in bytes is refused, and the old scratch
// stays usable.
TEST(ThreadPool, ScratchTooLargeIsRefusedNotThrown) {
  ThreadPool pool(2);
  ASSERT_TRUE(pool.reserve_scratch(64));
  float* before = pool.scratch(0);
  EXPECT_FALSE(pool.reserve_scratch(SIZE_MAX / 2));
  EXPECT_EQ(pool.scratch(0), before);
  EXPECT_EQ(pool.scratch_size(), 64u);
}

}  // namespace
}  // namespace tessera::cpu
